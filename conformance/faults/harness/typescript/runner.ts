// The fault-matrix runner of the fetch adapter (conformance/faults/README.md): Node's own fetch
// (undici) with `retryingFetch` from the module generated from conformance/faults/spec.yaml,
// against the fault server. One JSON line per scenario; with RETRYGEN_FAULT_SOAK set, the soak
// (one client, the plan's requests); with RETRYGEN_FAULT_BENCH=N, the overhead mode instead.
//
// Protocols: `http1` with Node's default dispatcher; the others with a dispatcher of the npm
// undici package (7.x, scripts/bootstrap.d/typescript.sh) passed as fetch's `dispatcher`:
// `http1-tls` and `h2` an `Agent` trusting exactly the test CA (`connect: {ca}`; verification
// stays on), with `allowH2` for `h2` (ALPN offers `http/1.1` and `h2`, the server picks); `h2c` an
// `Agent` whose clients are undici 7's `H2CClient` (HTTP/2 with prior knowledge). Node's bundled
// undici 6 has no h2c at all.

import { readdirSync, readFileSync } from "node:fs";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { Agent, H2CClient } from "undici";
import fetchRetry from "fetch-retry";
import {
  DEFAULT_RETRY_POLICY,
  RETRY_TABLES,
  finishOf,
  retryingFetch,
} from "./index.js";
import type {
  FinishEvent,
  RetryEvent,
  RetryingFetch,
  RetryOverrides,
  RetryPolicy,
} from "./index.js";

interface Scenario {
  readonly id: string;
  readonly method: string;
  readonly path: string;
  readonly target?:
    | "server"
    | "closed_port"
    | "unresolvable"
    | "other_origin"
    | "untrusted_tls"
    | "tls_mismatch";
  readonly headers?: Record<string, string>;
  readonly body?: {
    readonly kind: "bytes" | "stream";
    readonly text: string;
  } | null;
  readonly attempt_timeout_ms?: number;
  readonly mint_keys?: boolean;
  readonly abort_after_ms?: number;
  readonly warm?: boolean;
  readonly warm_close?: boolean;
  readonly warm_pause_ms?: number;
  /** Retry overrides the request carries (`init.retry`, docs/adapters.md P1). */
  readonly overrides?: {
    readonly max_retries?: number;
    readonly attempt_timeout_ms?: number;
    readonly read_body_max_bytes?: number;
  };
  /** The client's attempt header (P3) and body read bound (P6). */
  readonly attempt_header?: string;
  readonly read_body_max_bytes?: number;
  /** Contract v3: policy keys replaced in the module's default policy for this client. */
  readonly policy?: { readonly idempotency_key_format?: "uuid" | "sf-string" };
  /** Read this many complete events of the body, then close it (contract X4). */
  readonly close_after_events?: number;
}

interface SoakPlan {
  readonly attempt_timeout_ms: number;
  readonly requests: readonly Scenario[];
}

interface ScenarioFile {
  readonly base_path: string;
  readonly scenarios: readonly Scenario[];
}

function env(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === "") {
    throw new Error(`${name} is not set`);
  }
  return value;
}

const run = env("RETRYGEN_FAULT_RUN");
const protocol = process.env["RETRYGEN_FAULT_PROTOCOL"] ?? "http1";
if (!["http1", "h2c", "http1-tls", "h2"].includes(protocol)) {
  throw new Error(`protocol ${protocol}: unknown`);
}
/** The dispatcher of every request but over `http1`. */
const dispatcher =
  protocol === "http1"
    ? undefined
    : protocol === "h2c"
      ? new Agent({
          factory: (origin, options) => new H2CClient(origin, options),
        })
      : new Agent({
          connect: { ca: readFileSync(env("RETRYGEN_FAULT_CA_FILE"), "utf8") },
          allowH2: protocol === "h2",
        });

/** `init` with the protocol's dispatcher (the adapter wraps it, see fetch.ts's guard). */
function withDispatcher(init: RequestInit): RequestInit {
  return dispatcher === undefined
    ? init
    : ({ ...init, dispatcher } as unknown as RequestInit);
}
const targets: Record<string, string | undefined> = {
  server: env("RETRYGEN_FAULT_URL"),
  closed_port: env("RETRYGEN_FAULT_CLOSED_URL"),
  unresolvable: env("RETRYGEN_FAULT_UNRESOLVABLE_URL"),
  other_origin: process.env["RETRYGEN_FAULT_OTHER_ORIGIN_URL"],
  untrusted_tls: process.env["RETRYGEN_FAULT_UNTRUSTED_URL"],
  tls_mismatch: process.env["RETRYGEN_FAULT_TLS_MISMATCH_URL"],
};

function target(name: string): string {
  const url = targets[name];
  if (url === undefined || url === "") {
    throw new Error(`target ${name}: its variable is not set`);
  }
  return url;
}

function print(line: unknown): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

function retryLine(e: RetryEvent): Record<string, unknown> {
  return {
    attempt: e.attempt,
    reason: e.reason,
    delay_ms: e.delayMs,
    method: e.method,
    path_template: e.pathTemplate,
    operation_id: e.operationId,
  };
}

function finishLine(e: FinishEvent): Record<string, unknown> {
  return {
    attempts: e.attempts,
    reason: e.reason,
    outcome: e.outcome,
    status: e.status,
    timed_out: e.timedOut,
    redirects: e.redirects,
    method: e.method,
    path_template: e.pathTemplate,
    operation_id: e.operationId,
    total_delay_ms: e.totalDelayMs,
    server_delay_ms: e.serverDelayMs,
  };
}

/** A body fetch can send only once: a stream, sent chunked (no declared length). */
function streamOf(text: string): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(text));
      controller.close();
    },
  });
}

function typeName(error: unknown): string {
  if (error instanceof Error) {
    return error.name === error.constructor.name
      ? error.name
      : `${error.constructor.name}(${error.name})`;
  }
  return typeof error;
}

/** A client with the adapter, recording the events of the request in flight. */
function recording(
  base: string,
  attemptTimeoutMs: number | undefined,
  mintKeys: boolean,
  attemptHeader?: string,
  readBodyMaxBytes?: number,
  policy?: RetryPolicy,
): {
  client: RetryingFetch<typeof fetch>;
  events: RetryEvent[];
  finishes: FinishEvent[];
} {
  const events: RetryEvent[] = [];
  const finishes: FinishEvent[] = [];
  const client = retryingFetch(fetch, {
    tables: RETRY_TABLES,
    policy,
    baseUrl: base,
    onRetry: (event) => events.push(event),
    onFinish: (event) => finishes.push(event),
    attemptTimeoutMs,
    mintIdempotencyKeys: mintKeys,
    attemptHeader,
    readBodyMaxBytes,
  });
  return { client, events, finishes };
}

async function warmUp(
  client: typeof fetch,
  url: string,
  close: boolean,
  id: string,
): Promise<void> {
  const warm = await client(
    url,
    withDispatcher({
      headers: {
        "x-fault-run": run,
        "x-fault-scenario": id,
        "x-fault-warmup": close ? "close" : "1",
      },
    }),
  );
  await warm.text();
}

/**
 * Reads the body until the text read holds `count` complete events (each ends with a blank
 * line), then closes it the fetch way, cancelling the reader; returns exactly the text read.
 */
async function readEvents(response: Response, count: number): Promise<string> {
  if (response.body === null) {
    return "";
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (text.split("\n\n").length - 1 < count) {
    const { done, value } = await reader.read();
    if (done) {
      break;
    }
    text += decoder.decode(value, { stream: true });
  }
  await reader.cancel();
  return text + decoder.decode();
}

/** Sends one request of a scenario or the soak and prints its line. */
async function request(
  s: Scenario,
  url: string,
  recorder: ReturnType<typeof recording>,
): Promise<void> {
  const { client, events, finishes } = recorder;
  events.length = 0;
  finishes.length = 0;
  const faultHeaders = { "x-fault-run": run, "x-fault-scenario": s.id };
  const init: RequestInit & { duplex?: "half"; retry?: RetryOverrides } = {
    method: s.method,
    headers: { ...s.headers, ...faultHeaders },
  };
  if (s.overrides !== undefined) {
    const o = s.overrides;
    init.retry = {
      ...(o.max_retries !== undefined && { maxRetries: o.max_retries }),
      ...(o.attempt_timeout_ms !== undefined && {
        attemptTimeoutMs: o.attempt_timeout_ms,
      }),
      ...(o.read_body_max_bytes !== undefined && {
        readBodyMaxBytes: o.read_body_max_bytes,
      }),
    };
  }
  if (s.body?.kind === "bytes") {
    init.body = s.body.text;
  } else if (s.body?.kind === "stream") {
    init.body = streamOf(s.body.text);
    init.duplex = "half";
  }
  let abort: ReturnType<typeof setTimeout> | undefined;
  if (s.abort_after_ms !== undefined) {
    const controller = new AbortController();
    init.signal = controller.signal;
    abort = setTimeout(() => controller.abort(), s.abort_after_ms);
  }

  const started = performance.now();
  let status: number | null = null;
  let body: string | null = null;
  let bodyError = false;
  let failed = false;
  let errorType: string | null = null;
  let fromResult: FinishEvent | undefined;
  try {
    const response = await client(url, withDispatcher(init));
    status = response.status;
    try {
      body =
        s.close_after_events === undefined
          ? await response.text()
          : await readEvents(response, s.close_after_events);
    } catch (error) {
      bodyError = true;
      // A resumable stream's failure carries its finish (contract v3 X4).
      fromResult = finishOf(error);
    }
    // Read after the body: a resumable stream's finish comes when it ends (contract v3 X4).
    fromResult ??= finishOf(response);
  } catch (error) {
    failed = true;
    errorType = typeName(error);
    fromResult = finishOf(error);
  }
  const elapsedMs = Math.round(performance.now() - started);
  clearTimeout(abort);

  const last = finishes.at(-1) ?? null;
  const finishFailed = last !== null && last.outcome !== "status";
  let error: string | null = null;
  if (failed !== finishFailed || finishes.length === 0) {
    error = "mismatch";
  } else if (failed && last !== null) {
    error = last.outcome;
  }
  print({
    id: s.id,
    status,
    error,
    body,
    body_error: bodyError,
    events: events.map(retryLine),
    finish: last === null ? null : finishLine(last),
    ...(fromResult !== undefined && {
      finish_from_result: finishLine(fromResult),
    }),
    finishes: finishes.length,
    reported_arrivals: finishes.reduce(
      (sum, f) => sum + f.attempts + f.redirects,
      0,
    ),
    error_type: errorType,
    elapsed_ms: elapsedMs,
  });
}

async function scenario(s: Scenario, basePath: string): Promise<void> {
  if (Object.keys(s.headers ?? {}).some((h) => h.toLowerCase() === "expect")) {
    // undici refuses it when dispatching: fetch rejects (cause NotSupportedError), nothing is sent.
    print({
      id: s.id,
      unsupported:
        "undici's fetch refuses an Expect request header (NotSupportedError)",
    });
    return;
  }
  const kind = s.target ?? "server";
  const base = `${target(kind === "other_origin" ? "server" : kind)}${basePath}`;
  const url =
    kind === "other_origin"
      ? `${target("other_origin")}${basePath}${s.path}`
      : `${base}${s.path}`;
  const recorder = recording(
    base,
    s.attempt_timeout_ms,
    s.mint_keys ?? true,
    s.attempt_header,
    s.read_body_max_bytes,
    s.policy === undefined
      ? undefined
      : {
          ...DEFAULT_RETRY_POLICY,
          ...(s.policy.idempotency_key_format !== undefined && {
            idempotencyKeyFormat: s.policy.idempotency_key_format,
          }),
        },
  );
  if (s.warm === true) {
    await warmUp(
      recorder.client,
      `${base}/health`,
      s.warm_close === true,
      s.id,
    );
    if (s.warm_pause_ms !== undefined) {
      await new Promise((resolve) => setTimeout(resolve, s.warm_pause_ms));
    }
  }
  await request(s, url, recorder);
}

/** Open descriptors and resident memory, from /proc/self. */
function resources(): { fds: number; rss_kb: number } {
  const status = readFileSync("/proc/self/status", "utf8");
  const rss = /^VmRSS:\s+(\d+)/m.exec(status);
  return {
    fds: readdirSync("/proc/self/fd").length,
    rss_kb: rss === null ? 0 : Number.parseInt(rss[1] ?? "0", 10),
  };
}

/** The soak: one client for every request of the plan (conformance/faults/README.md). */
async function soak(plan: SoakPlan, basePath: string): Promise<void> {
  const base = `${target("server")}${basePath}`;
  const recorder = recording(base, plan.attempt_timeout_ms, true);
  await warmUp(recorder.client, `${base}/health`, false, "soak-warmup");
  print({ soak_start: resources() });
  for (const s of plan.requests) {
    await request(s, `${base}${s.path}`, recorder);
  }
  // A full collection first, so that memory counts what is kept, not what is garbage.
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
  print({ soak_end: resources() });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] ?? 0)
    : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/** fetch-retry's version (scripts/bootstrap.d/typescript.sh pins it). */
const FETCH_RETRY_VERSION = "6.0.0";

/**
 * The overhead mode: the bare fetch, the adapter (every option at its default) and the peer,
 * fetch-retry (the most used retry wrapper of `fetch`, its defaults), on the same request, one
 * request of each per round in rotating order.
 */
async function bench(rounds: number, basePath: string): Promise<void> {
  const bare = fetch;
  const adapter = retryingFetch(fetch, { tables: RETRY_TABLES });
  const peer = fetchRetry(fetch) as typeof fetch;
  const url = `${target("server")}${basePath}/health`;
  const init = {
    headers: {
      "x-fault-run": run,
      "x-fault-scenario": "bench",
      "x-fault-warmup": "1",
    },
  };
  const time = async (client: typeof fetch): Promise<number> => {
    const started = performance.now();
    const response = await client(url, withDispatcher(init));
    await response.text();
    return (performance.now() - started) * 1000;
  };
  const clients = [bare, adapter, peer];
  for (let i = 0; i < 200; i++) {
    for (const client of clients) {
      await time(client);
    }
  }
  const times: number[][] = clients.map(() => []);
  for (let i = 0; i < rounds; i++) {
    for (let k = 0; k < clients.length; k++) {
      // Each client first, second and third in turn.
      const n = (i + k) % clients.length;
      times[n]?.push(await time(clients[n] ?? bare));
    }
  }
  const round = (x: number): number => Math.round(x * 100) / 100;
  const [b, a, p] = times.map(median) as [number, number, number];
  print({
    bench: {
      requests: rounds,
      bare_us: round(b),
      adapter_us: round(a),
      overhead_us: round(a - b),
      overhead_pct: round(((a - b) / b) * 100),
      // Node exposes no per-request allocation counter.
      allocated_bytes_per_request: null,
      allocation_counter: "none",
      peers: [
        {
          name: `fetch-retry ${FETCH_RETRY_VERSION}`,
          us: round(p),
          overhead_us: round(p - b),
          overhead_pct: round(((p - b) / b) * 100),
          allocated_bytes_per_request: null,
        },
      ],
    },
  });
}

async function main(): Promise<void> {
  const path = process.argv[2];
  if (path === undefined) {
    throw new Error("usage: node runner.js <scenarios.json>");
  }
  const basePathVar = process.env["RETRYGEN_FAULT_BASE_PATH"];
  const soakPlan = process.env["RETRYGEN_FAULT_SOAK"];
  if (soakPlan !== undefined && soakPlan !== "") {
    const plan = JSON.parse(readFileSync(path, "utf8")) as SoakPlan;
    await soak(plan, basePathVar ?? "/v1");
    return;
  }
  const file = JSON.parse(readFileSync(path, "utf8")) as ScenarioFile;
  const basePath = basePathVar ?? file.base_path;
  const rounds = process.env["RETRYGEN_FAULT_BENCH"];
  if (rounds !== undefined && rounds !== "") {
    await bench(Number.parseInt(rounds, 10), basePath);
    return;
  }
  for (const s of file.scenarios) {
    current = s.id;
    await scenario(s, basePath);
  }
}

let current = "(none)";
// undici's HTTP/2 sessions do not hold the event loop: a request that never settles would end
// the process quietly, as if every scenario had been run.
process.on("beforeExit", () => {
  console.error(`the event loop drained with scenario ${current} in flight`);
  process.exit(1);
});

main().then(
  // Idle keep-alive connections must not hold the process open: exit once stdout is flushed.
  () => process.stdout.write("", () => process.exit(0)),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
