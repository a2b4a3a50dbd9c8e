// The fault-matrix runner of the fetch adapter (conformance/faults/README.md): Node's own fetch
// (undici) with `retryingFetch` from the module generated from conformance/faults/spec.yaml,
// against the fault server. One JSON line per scenario; with RETRYGEN_FAULT_BENCH=N, the
// overhead mode instead.

import { readFileSync } from "node:fs";
import { RETRY_TABLES, retryingFetch } from "./index.js";
import type { FinishEvent, RetryEvent } from "./index.js";

interface Scenario {
  readonly id: string;
  readonly method: string;
  readonly path: string;
  readonly target?: "server" | "closed_port" | "unresolvable";
  readonly headers?: Record<string, string>;
  readonly body?: { readonly kind: "bytes" | "stream"; readonly text: string };
  readonly attempt_timeout_ms?: number;
  readonly mint_keys?: boolean;
  readonly abort_after_ms?: number;
  readonly warm?: boolean;
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
const targets = {
  server: env("RETRYGEN_FAULT_URL"),
  closed_port: env("RETRYGEN_FAULT_CLOSED_URL"),
  unresolvable: env("RETRYGEN_FAULT_UNRESOLVABLE_URL"),
};

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
    method: e.method,
    path_template: e.pathTemplate,
    operation_id: e.operationId,
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

async function scenario(s: Scenario, basePath: string): Promise<void> {
  const base = `${targets[s.target ?? "server"]}${basePath}`;
  const events: RetryEvent[] = [];
  let finish: FinishEvent | null = null;
  let finishes = 0;
  const client = retryingFetch(fetch, {
    tables: RETRY_TABLES,
    baseUrl: base,
    onRetry: (event) => events.push(event),
    onFinish: (event) => {
      finish = event;
      finishes += 1;
    },
    attemptTimeoutMs: s.attempt_timeout_ms,
    mintIdempotencyKeys: s.mint_keys ?? true,
  });
  const faultHeaders = { "x-fault-run": run, "x-fault-scenario": s.id };
  if (s.warm === true) {
    const warm = await client(`${base}/health`, {
      headers: { ...faultHeaders, "x-fault-warmup": "1" },
    });
    await warm.text();
    events.length = 0;
    finish = null;
    finishes = 0;
  }

  const init: RequestInit & { duplex?: "half" } = {
    method: s.method,
    headers: { ...s.headers, ...faultHeaders },
  };
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
  try {
    const response = await client(`${base}${s.path}`, init);
    status = response.status;
    try {
      body = await response.text();
    } catch {
      bodyError = true;
    }
  } catch (error) {
    failed = true;
    errorType = typeName(error);
  }
  const elapsedMs = Math.round(performance.now() - started);
  clearTimeout(abort);

  const last = finish as FinishEvent | null;
  const finishFailed = last !== null && last.outcome !== "status";
  let error: string | null = null;
  if (failed !== finishFailed || finishes !== 1) {
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
    error_type: errorType,
    elapsed_ms: elapsedMs,
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] ?? 0)
    : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/** The overhead mode: the adapter against the bare client, one request of each per round. */
async function bench(rounds: number, basePath: string): Promise<void> {
  const bare = fetch;
  const adapter = retryingFetch(fetch, { tables: RETRY_TABLES });
  const url = `${targets.server}${basePath}/health`;
  const init = {
    headers: {
      "x-fault-run": run,
      "x-fault-scenario": "bench",
      "x-fault-warmup": "1",
    },
  };
  const time = async (client: typeof fetch): Promise<number> => {
    const started = performance.now();
    const response = await client(url, init);
    await response.text();
    return (performance.now() - started) * 1000;
  };
  for (let i = 0; i < 200; i++) {
    await time(bare);
    await time(adapter);
  }
  const bareUs: number[] = [];
  const adapterUs: number[] = [];
  for (let i = 0; i < rounds; i++) {
    if (i % 2 === 0) {
      bareUs.push(await time(bare));
      adapterUs.push(await time(adapter));
    } else {
      adapterUs.push(await time(adapter));
      bareUs.push(await time(bare));
    }
  }
  const round = (x: number): number => Math.round(x * 100) / 100;
  const b = median(bareUs);
  const a = median(adapterUs);
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
    },
  });
}

async function main(): Promise<void> {
  const path = process.argv[2];
  if (path === undefined) {
    throw new Error("usage: node runner.js <scenarios.json>");
  }
  const file = JSON.parse(readFileSync(path, "utf8")) as ScenarioFile;
  const basePath = process.env["RETRYGEN_FAULT_BASE_PATH"] ?? file.base_path;
  const rounds = process.env["RETRYGEN_FAULT_BENCH"];
  if (rounds !== undefined && rounds !== "") {
    await bench(Number.parseInt(rounds, 10), basePath);
    return;
  }
  for (const s of file.scenarios) {
    await scenario(s, basePath);
  }
}

main().then(
  // Idle keep-alive connections must not hold the process open: exit once stdout is flushed.
  () => process.stdout.write("", () => process.exit(0)),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
