// Unit tests of fetch.ts (node:test): Node's own fetch (undici), unmocked, against a tiny
// HTTP/1.1 server of this file's on 127.0.0.1 that answers each request with the next step of a
// script, as conformance/faults/ does for every language.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { createServer } from "node:http";
import type { IncomingHttpHeaders, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  budgetTokensOf,
  finishOf,
  isCertificateError,
  isConnectError,
  retryingFetch,
  StreamResumeError,
} from "./fetch.js";
import type {
  FetchRetryEvent,
  FinishEvent,
  RetryingFetch,
  RetryingFetchOptions,
} from "./fetch.js";
import { RetryInputError, retryTables } from "./runtime.js";
import type { OperationRow, RetryEvent, RetryPolicy } from "./runtime.js";

const POLICY: RetryPolicy = {
  maxRetries: 3,
  initialBackoffMs: 1,
  maxBackoffMs: 4,
  multiplier: 2,
  jitter: "none",
  retryableStatuses: [500, 502, 503, 504],
  rejectedStatuses: [429],
  retryAfterCapMs: 10000,
  deadlineMs: null,
  retryOnlyWithServerDelay: [],
  keyInFlightStatuses: [409],
  keyReusedStatuses: [422],
  serverDirectiveHeaders: ["x-should-retry"],
  retryAfterOverCap: "refuse",
  unknownOperationClass: "method_default",
  budgetCapacity: 500,
  budgetRetryCost: 5,
  budgetTimeoutCost: 10,
  budgetSuccessRefund: 1,
};

const ROWS: readonly OperationRow[] = [
  ["POST", "/items", "createItem", "non_replayable", null, null],
  ["DELETE", "/items/{id}", "deleteItem", "idempotent", null, null],
  ["GET", "/items/{id}", "getItem", "idempotent", null, null],
  ["PUT", "/items/{id}", "putItem", "idempotent", null, null],
  ["POST", "/items/{id}/copies", "copyItem", "keyed", "Idempotency-Key", null],
  ["POST", "/items/{id}/run", "runItem", "no_retry", null, null],
];

const TABLES = retryTables({
  sourceSpec: "fetch-unit.yaml",
  basePath: "/v1",
  operations: ROWS,
  policy: POLICY,
});

const UUID_V4 =
  /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

// The server. Each test names its case in `x-case`; arrival n of a case gets step
// min(n, last) of its script.

type Step =
  | {
      readonly status: number;
      readonly headers?: Record<string, string>;
      readonly body?: string;
      /** Announces 1000 body bytes, sends 10 of them, then nothing. */
      readonly partial?: boolean;
      /** Announces 1000 body bytes, sends 10 of them, then closes the connection. */
      readonly cut?: boolean;
      /** Waits this long before answering. */
      readonly delayMs?: number;
      /** Answers once this settles. */
      readonly gate?: Promise<unknown>;
    }
  /**
   * A 200 `text/event-stream`: each chunk written `tickMs` apart (default 1), then the end or,
   * with `drop`, the connection closed before the body's last chunk (a drop; with `reset`, reset),
   * or with `hold` nothing more until the client goes away.
   */
  | {
      readonly events: readonly string[];
      readonly drop?: boolean;
      /** A drop by a connection reset (TCP RST) rather than a close. */
      readonly reset?: boolean;
      readonly hold?: boolean;
      readonly tickMs?: number;
      /** Answers once this settles. */
      readonly gate?: Promise<unknown>;
      /** After the events, ends, drops or holds once this settles. */
      readonly until?: Promise<unknown>;
    }
  /** Resets the connection without a byte of response. */
  | "reset"
  /** Answers nothing until the client goes away. */
  | "stall";

interface Arrival {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** Settles when the response's connection is gone (the client closed it, say). */
  readonly gone: Promise<void>;
}

const cases = new Map<string, { script: Step[]; arrivals: Arrival[] }>();
let server: Server;
let origin = "";
let closedOrigin = "";

function answer(res: ServerResponse, step: Step): void {
  if (typeof step === "object" && step.gate !== undefined) {
    const { gate, ...now } = step;
    void gate.then(() => answer(res, now));
    return;
  }
  if (typeof step === "object" && "events" in step) {
    res.writeHead(200, { "content-type": "text/event-stream" });
    writeEvents(
      res,
      step.events,
      step.hold === true
        ? "hold"
        : step.reset === true
          ? "reset"
          : step.drop === true
            ? "drop"
            : "end",
      step.tickMs ?? 1,
      step.until,
    );
    return;
  }
  if (typeof step === "object" && step.delayMs !== undefined) {
    const { delayMs, ...now } = step;
    setTimeout(() => answer(res, now), delayMs);
    return;
  }
  if (typeof step === "object" && step.cut === true) {
    res.writeHead(step.status, { ...step.headers, "content-length": "1000" });
    res.write("x".repeat(10), () => res.socket?.destroy());
    return;
  }
  if (step === "reset") {
    res.socket?.resetAndDestroy();
  } else if (step !== "stall" && step.partial === true) {
    res.writeHead(step.status, { ...step.headers, "content-length": "1000" });
    res.write("x".repeat(10));
  } else if (step !== "stall") {
    res.writeHead(step.status, step.headers);
    res.end(step.body ?? "");
  }
}

/**
 * Writes `chunks` `tickMs` apart, then (once `until` settles) ends the body, closes the
 * connection or holds it.
 */
function writeEvents(
  res: ServerResponse,
  chunks: readonly string[],
  then: "end" | "drop" | "reset" | "hold",
  tickMs: number,
  until?: Promise<unknown>,
): void {
  const [next, ...rest] = chunks;
  if (next === undefined) {
    if (until !== undefined) {
      void until.then(() => writeEvents(res, [], then, tickMs));
    } else if (then === "drop") {
      res.socket?.destroy();
    } else if (then === "reset") {
      res.socket?.resetAndDestroy();
    } else if (then === "end") {
      res.end();
    }
    return;
  }
  res.write(next, () => {
    setTimeout(() => writeEvents(res, rest, then, tickMs, until), tickMs);
  });
}

before(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const name = req.headers["x-case"];
      const found = typeof name === "string" ? cases.get(name) : undefined;
      if (found === undefined) {
        res.writeHead(500).end("no such case");
        return;
      }
      const { script, arrivals } = found;
      const step = script[Math.min(arrivals.length, script.length - 1)];
      arrivals.push({
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
        gone: new Promise((resolve) => res.on("close", () => resolve())),
      });
      answer(res, step ?? "reset");
    });
  });
  await new Promise<void>((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve()),
  );
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // A port nothing listens on: bound, then closed.
  const closed = createServer();
  await new Promise<void>((resolve) =>
    closed.listen(0, "127.0.0.1", () => resolve()),
  );
  closedOrigin = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
  await new Promise((resolve) => closed.close(resolve));
});

after(() => {
  server.closeAllConnections();
  server.close();
});

let caseCount = 0;

/** Registers a script; returns the case's name and its arrivals. */
function serve(...script: Step[]): { name: string; arrivals: Arrival[] } {
  caseCount += 1;
  const name = `case-${caseCount}`;
  const arrivals: Arrival[] = [];
  cases.set(name, { script, arrivals });
  return { name, arrivals };
}

/** An adapter over Node's fetch that records its events. */
function client(options: Partial<RetryingFetchOptions> = {}): {
  fetch: RetryingFetch<typeof fetch>;
  retries: FetchRetryEvent[];
  finishes: FinishEvent[];
} {
  const retries: FetchRetryEvent[] = [];
  const finishes: FinishEvent[] = [];
  const wrapped = retryingFetch(fetch, {
    tables: TABLES,
    baseUrl: `${origin}/v1`,
    onRetry: (event) => retries.push(event),
    onFinish: (event) => finishes.push(event),
    ...options,
  });
  return { fetch: wrapped, retries, finishes };
}

function reasons(events: readonly RetryEvent[]): [string, number][] {
  return events.map((e) => [e.reason, e.delayMs]);
}

/** What `promise` rejected with. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail("expected a rejection");
}

function codeOf(error: unknown): unknown {
  return (error as { cause?: { code?: unknown } }).cause?.code;
}

test("a retryable status is retried; the last response is returned unread", async () => {
  const { name, arrivals } = serve(
    { status: 503 },
    { status: 503 },
    { status: 200, body: "ok" },
  );
  const c = client();
  const response = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": name },
  });
  assert.equal(response.status, 200);
  assert.equal(response.bodyUsed, false);
  assert.equal(await response.text(), "ok");
  assert.equal(arrivals.length, 3);
  assert.deepEqual(reasons(c.retries), [
    ["retryable_status", 1],
    ["retryable_status", 2],
  ]);
  // [docs/adapters.md P4] The attempt's status, no failure, and how long it took.
  const duration = c.retries[0]?.attemptDurationMs;
  assert.ok(typeof duration === "number" && duration >= 0);
  assert.deepEqual(c.retries[0], {
    attempt: 1,
    reason: "retryable_status",
    delayMs: 1,
    method: "GET",
    pathTemplate: "/items/{id}",
    operationId: "getItem",
    status: 503,
    failure: null,
    attemptDurationMs: duration,
  });
  assert.ok(Object.isFrozen(c.retries[0]));
  assert.deepEqual(c.finishes, [
    {
      attempts: 3,
      reason: "status_not_retryable",
      outcome: "status",
      status: 200,
      timedOut: false,
      redirects: 0,
      method: "GET",
      pathTemplate: "/items/{id}",
      operationId: "getItem",
      totalDelayMs: 3,
      serverDelayMs: null,
    },
  ]);
  assert.ok(Object.isFrozen(c.finishes[0]));
});

test("retries exhausted: the last response is returned", async () => {
  const { name, arrivals } = serve({ status: 503, body: "busy" });
  const c = client();
  const response = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": name },
  });
  assert.equal(response.status, 503);
  assert.equal(await response.text(), "busy");
  assert.equal(arrivals.length, 4);
  assert.deepEqual(reasons(c.retries), [
    ["retryable_status", 1],
    ["retryable_status", 2],
    ["retryable_status", 4],
  ]);
  assert.equal(c.finishes[0]?.reason, "exhausted");
  assert.equal(c.finishes[0]?.attempts, 4);
});

test("a non-replayable request is not replayed after a retryable status", async () => {
  const { name, arrivals } = serve({ status: 503 }, { status: 201 });
  const c = client();
  const response = await c.fetch(`${origin}/v1/items`, {
    method: "POST",
    headers: { "x-case": name },
    body: '{"a":1}',
  });
  assert.equal(response.status, 503);
  assert.deepEqual(
    arrivals.map((a) => [a.method, a.url, a.body]),
    [["POST", "/v1/items", '{"a":1}']],
  );
  assert.deepEqual(c.retries, []);
  assert.equal(c.finishes[0]?.reason, "not_replayable");
});

test("no_retry operations get one attempt", async () => {
  const { name, arrivals } = serve({ status: 503 }, { status: 200 });
  const c = client();
  const response = await c.fetch(`${origin}/v1/items/1/run`, {
    method: "POST",
    headers: { "x-case": name },
    body: "ls",
  });
  assert.equal(response.status, 503);
  assert.equal(arrivals.length, 1);
  assert.equal(c.finishes[0]?.reason, "no_retry_operation");
});

test("a rejected status waits for Retry-After, and the directive is obeyed", async () => {
  const waited = serve(
    { status: 429, headers: { "retry-after-ms": "40" } },
    { status: 201 },
  );
  const c = client();
  const started = performance.now();
  const response = await c.fetch(`${origin}/v1/items`, {
    method: "POST",
    headers: { "x-case": waited.name },
    body: "{}",
  });
  assert.equal(response.status, 201);
  assert.ok(performance.now() - started >= 35);
  assert.deepEqual(reasons(c.retries), [["rejected_status", 40]]);

  const refused = serve(
    { status: 503, headers: { "X-Should-Retry": " False " } },
    { status: 200 },
  );
  const response2 = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": refused.name },
  });
  assert.equal(response2.status, 503);
  assert.equal(refused.arrivals.length, 1);
  assert.equal(c.finishes[1]?.reason, "server_said_no");
});

test("connect failures are retried for any class and rethrown as fetch threw them", async () => {
  const c = client({ baseUrl: `${closedOrigin}/v1` });
  const error = await rejection(
    c.fetch(`${closedOrigin}/v1/items`, { method: "POST", body: "{}" }),
  );
  assert.ok(error instanceof TypeError);
  assert.equal(codeOf(error), "ECONNREFUSED");
  assert.ok(isConnectError(error));
  assert.deepEqual(reasons(c.retries), [
    ["connect_failure", 1],
    ["connect_failure", 2],
    ["connect_failure", 4],
  ]);
  assert.deepEqual(c.finishes[0], {
    attempts: 4,
    reason: "exhausted",
    outcome: "connect",
    status: null,
    timedOut: false,
    redirects: 0,
    method: "POST",
    pathTemplate: "/items",
    operationId: "createItem",
    totalDelayMs: 7,
    serverDelayMs: null,
  });
});

test("a reset is replayed for an idempotent request, never for a non-replayable one", async () => {
  const kill = serve("reset", { status: 204 });
  const c = client();
  const response = await c.fetch(`${origin}/v1/items/1`, {
    method: "DELETE",
    headers: { "x-case": kill.name },
  });
  assert.equal(response.status, 204);
  assert.equal(kill.arrivals.length, 2);
  assert.deepEqual(reasons(c.retries), [["transport_failure", 1]]);

  const create = serve("reset", { status: 201 });
  const error = await rejection(
    c.fetch(`${origin}/v1/items`, {
      method: "POST",
      headers: { "x-case": create.name },
      body: "{}",
    }),
  );
  assert.ok(error instanceof TypeError);
  assert.equal(codeOf(error), "ECONNRESET");
  assert.equal(create.arrivals.length, 1);
  assert.deepEqual(c.finishes[1], {
    attempts: 1,
    reason: "not_replayable",
    outcome: "transport",
    status: null,
    timedOut: false,
    redirects: 0,
    method: "POST",
    pathTemplate: "/items",
    operationId: "createItem",
    totalDelayMs: 0,
    serverDelayMs: null,
  });
});

test("a keyed request gets one minted key, sent with every attempt", async () => {
  const { name, arrivals } = serve("reset", { status: 201 });
  const c = client();
  const headers = { "x-case": name };
  const response = await c.fetch(`${origin}/v1/items/1/copies`, {
    method: "POST",
    headers,
    body: "{}",
  });
  assert.equal(response.status, 201);
  assert.equal(arrivals.length, 2);
  const key = arrivals[0]?.headers["idempotency-key"];
  assert.match(String(key), UUID_V4);
  assert.equal(arrivals[1]?.headers["idempotency-key"], key);
  assert.deepEqual(
    headers,
    { "x-case": name },
    "the caller's headers untouched",
  );
  assert.deepEqual(
    arrivals.map((a) => a.body),
    ["{}", "{}"],
  );
});

test("a key the caller set is kept, whatever the header name's case", async () => {
  const c = client();
  for (const headers of [
    { "idempotency-key": "mine-1" },
    new Headers({ "IDEMPOTENCY-KEY": "mine-1" }),
    [["Idempotency-Key", "mine-1"]] as [string, string][],
  ]) {
    const { name, arrivals } = serve("reset", { status: 201 });
    const request = new Headers(headers);
    request.set("x-case", name);
    const response = await c.fetch(`${origin}/v1/items/1/copies`, {
      method: "POST",
      headers: request,
      body: "{}",
    });
    assert.equal(response.status, 201);
    assert.deepEqual(
      arrivals.map((a) => a.headers["idempotency-key"]),
      ["mine-1", "mine-1"],
    );
  }
});

test("a blank key is replaced; with minting off none is added", async () => {
  const blank = serve({ status: 201 });
  const c = client();
  await c.fetch(`${origin}/v1/items/1/copies`, {
    method: "POST",
    headers: { "x-case": blank.name, "Idempotency-Key": " \t" },
    body: "{}",
  });
  assert.match(String(blank.arrivals[0]?.headers["idempotency-key"]), UUID_V4);

  const off = serve("reset", { status: 201 });
  const plain = client({ mintIdempotencyKeys: false });
  const error = await rejection(
    plain.fetch(`${origin}/v1/items/1/copies`, {
      method: "POST",
      headers: { "x-case": off.name },
      body: "{}",
    }),
  );
  assert.equal(codeOf(error), "ECONNRESET");
  assert.equal(off.arrivals.length, 1);
  assert.equal(off.arrivals[0]?.headers["idempotency-key"], undefined);
  assert.equal(plain.finishes[0]?.reason, "not_replayable");
});

test("keys come from getRandomValues where randomUUID is missing", async () => {
  const { name, arrivals } = serve({ status: 201 });
  const c = client();
  Object.defineProperty(globalThis.crypto, "randomUUID", {
    value: undefined,
    configurable: true,
  });
  try {
    await c.fetch(`${origin}/v1/items/1/copies`, {
      method: "POST",
      headers: { "x-case": name },
      body: "{}",
    });
  } finally {
    delete (globalThis.crypto as { randomUUID?: unknown }).randomUUID;
  }
  assert.equal(typeof globalThis.crypto.randomUUID, "function");
  assert.match(String(arrivals[0]?.headers["idempotency-key"]), UUID_V4);
});

test("a stream body gets one attempt and takes nothing from the budget", async () => {
  // A budget with room for exactly one retry.
  const c = client({
    policy: { ...POLICY, budgetCapacity: 5, budgetSuccessRefund: 0 },
  });
  const { name, arrivals } = serve({ status: 503 }, { status: 200 });
  const text = '{"cpu":4}';
  const response = await c.fetch(`${origin}/v1/items/1`, {
    method: "PUT",
    headers: { "x-case": name },
    body: new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(text));
        controller.close();
      },
    }),
    duplex: "half",
  } as RequestInit);
  assert.equal(response.status, 503);
  assert.deepEqual(
    arrivals.map((a) => [a.body, a.headers["transfer-encoding"]]),
    [[text, "chunked"]],
  );
  assert.deepEqual(c.retries, []);
  assert.equal(c.finishes[0]?.reason, "body_not_replayable");

  // The retry refused for the body took no token: the next request still gets its retry.
  const next = serve({ status: 503 }, { status: 200 });
  const ok = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": next.name },
  });
  assert.equal(ok.status, 200);
  assert.equal(next.arrivals.length, 2);
});

test("a Request's body is replayed through clone(); its headers and signal count", async () => {
  const { name, arrivals } = serve("reset", { status: 200 });
  const c = client();
  const request = new Request(`${origin}/v1/items/1`, {
    method: "PUT",
    headers: { "x-case": name },
    body: "abc",
  });
  const response = await c.fetch(request);
  assert.equal(response.status, 200);
  assert.deepEqual(
    arrivals.map((a) => [a.method, a.body]),
    [
      ["PUT", "abc"],
      ["PUT", "abc"],
    ],
  );
  assert.equal(request.bodyUsed, false);
  assert.equal(c.finishes[0]?.operationId, "putItem");

  const keyed = serve({ status: 201 });
  await c.fetch(
    new Request(`${origin}/v1/items/1/copies`, {
      method: "POST",
      headers: { "x-case": keyed.name, "Idempotency-Key": "from-request" },
      body: "{}",
    }),
  );
  assert.equal(keyed.arrivals[0]?.headers["idempotency-key"], "from-request");

  const stalled = serve("stall");
  const controller = new AbortController();
  const aborted = c.fetch(
    new Request(`${origin}/v1/items/1`, {
      headers: { "x-case": stalled.name },
      signal: controller.signal,
    }),
  );
  setTimeout(() => controller.abort(), 50);
  const error = await rejection(aborted);
  assert.equal((error as Error).name, "AbortError");
  assert.equal(c.finishes[2]?.outcome, "aborted");
});

test("URL inputs and the SDK's base URL classify the request", async () => {
  const { name, arrivals } = serve({ status: 503 }, { status: 200 });
  const c = client({ baseUrl: `${origin}/proxy/v1/` });
  const response = await c.fetch(new URL(`${origin}/proxy/v1/items/7?x=1`), {
    headers: { "x-case": name },
  });
  assert.equal(response.status, 200);
  assert.equal(arrivals[0]?.url, "/proxy/v1/items/7?x=1");
  assert.equal(c.retries[0]?.operationId, "getItem");

  const unknown = serve({ status: 503 }, { status: 201 });
  const other = await c.fetch(`${origin}/proxy/v1/jobs`, {
    method: "post",
    headers: { "x-case": unknown.name },
    body: "{}",
  });
  assert.equal(other.status, 503);
  assert.deepEqual(c.finishes[1], {
    attempts: 1,
    reason: "not_replayable",
    outcome: "status",
    status: 503,
    timedOut: false,
    redirects: 0,
    method: "POST",
    pathTemplate: null,
    operationId: null,
    totalDelayMs: 0,
    serverDelayMs: null,
  });
});

test("the attempt timeout is a transport failure that timed out", async () => {
  const get = serve("stall", { status: 200 });
  const c = client({ attemptTimeoutMs: 100 });
  const response = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": get.name },
  });
  assert.equal(response.status, 200);
  assert.equal(get.arrivals.length, 2);
  assert.deepEqual(reasons(c.retries), [["transport_failure", 1]]);
  assert.equal(c.finishes[0]?.timedOut, false);

  const post = serve("stall", { status: 201 });
  const error = await rejection(
    c.fetch(`${origin}/v1/items`, {
      method: "POST",
      headers: { "x-case": post.name },
      body: "{}",
    }),
  );
  assert.equal((error as Error).name, "TimeoutError");
  assert.equal(post.arrivals.length, 1);
  assert.deepEqual(
    [c.finishes[1]?.outcome, c.finishes[1]?.timedOut, c.finishes[1]?.reason],
    ["transport", true, "not_replayable"],
  );
});

test("a timed-out retry costs the timeout cost", async () => {
  const { name, arrivals } = serve("stall");
  const c = client({
    attemptTimeoutMs: 50,
    policy: { ...POLICY, budgetCapacity: 15, budgetTimeoutCost: 10 },
  });
  const error = await rejection(
    c.fetch(`${origin}/v1/items/1`, { headers: { "x-case": name } }),
  );
  assert.equal((error as Error).name, "TimeoutError");
  assert.equal(arrivals.length, 2);
  assert.equal(c.finishes[0]?.reason, "budget_exhausted");
  assert.equal(c.finishes[0]?.timedOut, true);
});

test("the caller's abort ends the request with the caller's reason", async () => {
  for (const attemptTimeoutMs of [undefined, 5000]) {
    const { name, arrivals } = serve("stall", { status: 200 });
    const c = client({ attemptTimeoutMs });
    const controller = new AbortController();
    const reason = new Error("the caller gave up");
    setTimeout(() => controller.abort(reason), 50);
    const error = await rejection(
      c.fetch(`${origin}/v1/items/1`, {
        headers: { "x-case": name },
        signal: controller.signal,
      }),
    );
    assert.equal(error, reason);
    assert.equal(arrivals.length, 1);
    assert.deepEqual(c.retries, []);
    assert.deepEqual(
      [c.finishes[0]?.outcome, c.finishes[0]?.reason, c.finishes[0]?.attempts],
      ["aborted", "aborted", 1],
    );
  }
});

/** A full collection, then a turn for the finalizers (Node's `gc`, without --expose-gc). */
async function collect(): Promise<void> {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

test("with the attempt timeout, a long-lived caller signal does not grow per request", async () => {
  // AbortSignal.any keeps every combined signal in the caller's dependants on Node 20
  // (nodejs/node#55351); the listener the adapter adds instead is gone once the response is.
  const c = client({ attemptTimeoutMs: 5000 });
  const controller = new AbortController();
  for (let i = 0; i < 200; i++) {
    const { name } = serve({ status: 503 }, { status: 200, body: "ok" });
    const response = await c.fetch(`${origin}/v1/items/1`, {
      headers: { "x-case": name },
      signal: controller.signal,
    });
    assert.equal(await response.text(), "ok");
  }
  await collect();
  assert.ok(getEventListeners(controller.signal, "abort").length <= 2);
  const dependants = Object.getOwnPropertySymbols(controller.signal).length;
  assert.equal(
    dependants,
    Object.getOwnPropertySymbols(new AbortController().signal).length,
  );

  // The response returned still follows the caller's signal: aborting it cancels the body.
  const { name } = serve({ status: 503 }, { status: 200, partial: true });
  const fresh = new AbortController();
  const response = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": name },
    signal: fresh.signal,
  });
  const reading = response.text();
  fresh.abort();
  assert.equal(((await rejection(reading)) as Error).name, "AbortError");

  const stalled = serve("stall");
  const late = new AbortController();
  setTimeout(() => late.abort(), 50);
  const error = await rejection(
    c.fetch(`${origin}/v1/items/1`, {
      headers: { "x-case": stalled.name },
      signal: late.signal,
    }),
  );
  assert.equal((error as Error).name, "AbortError");
  assert.equal(c.finishes.at(-1)?.outcome, "aborted");
});

test("an abort during the wait ends it at once", async () => {
  const { name, arrivals } = serve(
    { status: 503, headers: { "retry-after-ms": "5000" } },
    { status: 200 },
  );
  const c = client();
  const controller = new AbortController();
  const started = performance.now();
  setTimeout(() => controller.abort(), 100);
  const error = await rejection(
    c.fetch(`${origin}/v1/items/1`, {
      headers: { "x-case": name },
      signal: controller.signal,
    }),
  );
  assert.ok(performance.now() - started < 2000);
  assert.equal(error, controller.signal.reason);
  assert.equal(arrivals.length, 1);
  assert.deepEqual(reasons(c.retries), [["retryable_status", 5000]]);
  assert.deepEqual(
    [c.finishes[0]?.outcome, c.finishes[0]?.reason, c.finishes[0]?.status],
    ["aborted", "aborted", null],
  );

  const early = serve({ status: 200 });
  const error2 = await rejection(
    c.fetch(`${origin}/v1/items/1`, {
      headers: { "x-case": early.name },
      signal: AbortSignal.abort("already"),
    }),
  );
  assert.equal(error2, "already");
  assert.equal(early.arrivals.length, 0);
  assert.equal(c.finishes[1]?.attempts, 1);
});

test("a discarded response is released without waiting for its body", async () => {
  const { name, arrivals } = serve(
    { status: 503, partial: true },
    { status: 200, body: "ok" },
  );
  const c = client();
  const started = performance.now();
  const response = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": name },
  });
  assert.equal(await response.text(), "ok");
  assert.ok(performance.now() - started < 2000);
  assert.equal(arrivals.length, 2);
});

test("the budget: a granted retry's cost comes back on success, else the refund", async () => {
  const c = client({
    policy: {
      ...POLICY,
      budgetCapacity: 10,
      budgetRetryCost: 5,
      budgetSuccessRefund: 1,
    },
  });
  const get = async (...script: Step[]): Promise<number> => {
    const { name, arrivals } = serve(...script);
    await c.fetch(`${origin}/v1/items/1`, { headers: { "x-case": name } });
    return arrivals.length;
  };
  // 10 -> 5, then 5 comes back with the success.
  assert.equal(await get({ status: 503 }, { status: 200 }), 2);
  // Two retries need all 10 tokens: the 5 came back (a refund alone would give 6).
  assert.equal(await get({ status: 503 }, { status: 503 }, { status: 200 }), 3);
  // 0 + 5 back = 5; one retry, then the budget is empty.
  assert.equal(await get({ status: 503 }), 2);
  assert.equal(c.finishes.at(-1)?.reason, "budget_exhausted");
  // A success without retries gives 1: not enough for a retry.
  assert.equal(await get({ status: 200 }), 1);
  assert.equal(await get({ status: 503 }, { status: 200 }), 1);
  assert.equal(c.finishes.at(-1)?.reason, "budget_exhausted");
});

test("a throwing onRetry ends the request with one finish event", async () => {
  const { name, arrivals } = serve(
    { status: 503, partial: true },
    { status: 200 },
  );
  const c = client({
    onRetry: () => {
      throw new Error("callback failed");
    },
  });
  const error = await rejection(
    c.fetch(`${origin}/v1/items/1`, { headers: { "x-case": name } }),
  );
  assert.equal((error as Error).message, "callback failed");
  assert.equal(arrivals.length, 1);
  assert.deepEqual(c.finishes, [
    {
      attempts: 1,
      reason: "retryable_status",
      outcome: "status",
      status: 503,
      timedOut: false,
      redirects: 0,
      method: "GET",
      pathTemplate: "/items/{id}",
      operationId: "getItem",
      totalDelayMs: 0,
      serverDelayMs: null,
    },
  ]);
});

test("a request to another origin passes through once: no key, no budget, foreign_origin", async () => {
  const { name, arrivals } = serve({ status: 503 }, { status: 201 });
  const c = client({
    policy: { ...POLICY, budgetCapacity: 10, budgetRetryCost: 10 },
  });
  // localhost is the same server but another origin than the base URL's 127.0.0.1.
  const port = new URL(origin).port;
  const response = await c.fetch(`http://localhost:${port}/v1/items/1/copies`, {
    method: "POST",
    headers: { "x-case": name },
    body: "{}",
  });
  assert.equal(response.status, 503);
  assert.equal(arrivals.length, 1);
  assert.equal(arrivals[0]?.headers["idempotency-key"], undefined);
  assert.deepEqual(c.retries, []);
  assert.deepEqual(c.finishes, [
    {
      attempts: 1,
      reason: "foreign_origin",
      outcome: "status",
      status: 503,
      timedOut: false,
      redirects: 0,
      method: "POST",
      pathTemplate: null,
      operationId: null,
      totalDelayMs: 0,
      serverDelayMs: null,
    },
  ]);
  // The budget was not touched: the one retry it can pay for is still there.
  const own = serve({ status: 503 }, { status: 200 });
  const retried = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": own.name },
  });
  assert.equal(retried.status, 200);
  assert.equal(own.arrivals.length, 2);
});

test("a URL fetch cannot parse propagates after one attempt", async () => {
  let calls = 0;
  const counting = ((input: never, init?: never) => {
    calls += 1;
    return fetch(input, init);
  }) as typeof fetch;
  const finishes: FinishEvent[] = [];
  const c = retryingFetch(counting, {
    tables: TABLES,
    onFinish: (e) => finishes.push(e),
  });
  const error = await rejection(c("http://[bad/v1/items/1"));
  assert.ok(error instanceof TypeError);
  assert.equal(calls, 1);
  assert.equal(finishes.length, 1);
  assert.equal(finishes[0]?.attempts, 1);
});

test("a lone surrogate in the URL is sent as fetch sends it, unclassified", async () => {
  const { name, arrivals } = serve({ status: 503 }, { status: 200 });
  const c = client();
  const response = await c.fetch(`${origin}/v1/items/\ud800`, {
    headers: { "x-case": name },
  });
  // Not replayable: no retry on a status, one arrival.
  assert.equal(response.status, 503);
  assert.equal(arrivals.length, 1);
  assert.equal(c.finishes[0]?.reason, "not_replayable");
  assert.equal(c.finishes[0]?.operationId, null);
});

test("a redirect fetch followed is counted in the finish event", async () => {
  const { name, arrivals } = serve(
    { status: 307, headers: { location: "/v1/items" } },
    { status: 201 },
  );
  const c = client();
  const response = await c.fetch(`${origin}/v1/items`, {
    method: "POST",
    headers: { "x-case": name },
    body: "{}",
  });
  assert.equal(response.status, 201);
  assert.equal(arrivals.length, 2);
  assert.equal(c.finishes[0]?.attempts, 1);
  assert.equal(c.finishes[0]?.redirects, 1);
});

test("fetch's own resend of a 421 is answered from memory: one arrival, the server's 421", async () => {
  // undici resends a 421 on a new connection by itself (the Fetch standard): without the guard
  // the server saw this create twice for one reported attempt.
  for (const [method, path, body] of [
    ["POST", "/v1/items", "{}"],
    ["GET", "/v1/items/1", undefined],
  ] as const) {
    const { name, arrivals } = serve(
      { status: 421, body: "misdirected" },
      { status: 201, body: "created" },
    );
    const c = client();
    const response = await c.fetch(`${origin}${path}`, {
      method,
      headers: { "x-case": name },
      ...(body === undefined ? {} : { body }),
    });
    assert.equal(response.status, 421, method);
    assert.equal(await response.text(), "misdirected");
    assert.equal(response.url, `${origin}${path}`);
    assert.equal(arrivals.length, 1, method);
    assert.equal(c.finishes.length, 1);
    assert.equal(c.finishes[0]?.attempts, 1);
    assert.equal(c.finishes[0]?.status, 421);
    assert.equal(c.finishes[0]?.redirects, 0);
  }
});

test("the 421 guard wraps the caller's dispatcher and holds back only what it can", async () => {
  // The caller's dispatcher still sends the request (once).
  const global = (globalThis as unknown as Record<symbol, unknown>)[
    Symbol.for("undici.globalDispatcher.1")
  ] as { dispatch(options: unknown, handler: unknown): boolean };
  let dispatches = 0;
  const own = {
    dispatch(options: unknown, handler: unknown): boolean {
      dispatches += 1;
      return global.dispatch(options, handler);
    },
  };
  const first = serve({ status: 421 }, { status: 201 });
  const c = client();
  const response = await c.fetch(`${origin}/v1/items`, {
    method: "POST",
    headers: { "x-case": first.name },
    body: "{}",
    dispatcher: own,
  } as unknown as RequestInit);
  assert.equal(response.status, 421);
  assert.equal(dispatches, 1);
  assert.equal(first.arrivals.length, 1);

  // A 421 too long to hold: fetch's resend fails without reaching the server.
  const long = serve(
    { status: 421, body: "x".repeat(100000) },
    { status: 201 },
  );
  const error = await rejection(
    c.fetch(`${origin}/v1/items`, {
      method: "POST",
      headers: { "x-case": long.name },
      body: "{}",
    }),
  );
  assert.ok(error instanceof TypeError);
  assert.equal(long.arrivals.length, 1);
  assert.equal(c.finishes.at(-1)?.attempts, 1);

  // A request to another origin (localhost: the same server) gets one arrival too.
  const foreign = serve({ status: 421 }, { status: 201 });
  const port = new URL(origin).port;
  const misdirected = await c.fetch(`http://localhost:${port}/v1/items`, {
    method: "POST",
    headers: { "x-case": foreign.name },
    body: "{}",
  });
  assert.equal(misdirected.status, 421);
  assert.equal(foreign.arrivals.length, 1);
  assert.equal(c.finishes.at(-1)?.reason, "foreign_origin");

  // Other statuses pass through as they come: a 503 is retried, a 200 returned.
  const plain = serve({ status: 503 }, { status: 200, body: "ok" });
  const ok = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": plain.name },
  });
  assert.equal(await ok.text(), "ok");
  assert.equal(plain.arrivals.length, 2);
});

test("a refused certificate is a certificate failure, never a connect one", () => {
  const error = Object.assign(new TypeError("fetch failed"), {
    cause: systemError("unable to verify", "UNABLE_TO_VERIFY_LEAF_SIGNATURE"),
  });
  assert.equal(isCertificateError(error), true);
  assert.equal(isConnectError(error), false);
  assert.equal(isCertificateError(new TypeError("fetch failed")), false);
});

test("invalid options throw when the adapter is built", () => {
  for (const attemptTimeoutMs of [0, -1, Number.NaN, 2 ** 31]) {
    assert.throws(
      () => retryingFetch(fetch, { tables: TABLES, attemptTimeoutMs }),
      RangeError,
    );
  }
  assert.throws(
    () =>
      retryingFetch(fetch, {
        tables: TABLES,
        policy: { ...POLICY, maxRetries: -1 },
      }),
    (error: unknown) =>
      error instanceof RetryInputError && error.key === "policy.max_retries",
  );
  // The result has fetch's own type.
  const typed: typeof fetch = retryingFetch(fetch, { tables: TABLES });
  assert.equal(typeof typed, "function");
});

/** An error with Node's `code` and `syscall` fields. */
function systemError(message: string, code: string, syscall?: string): Error {
  return Object.assign(new Error(message), { code, syscall });
}

test("connect errors of every platform, and what may have been sent", () => {
  const fetchFailed = (cause: unknown): TypeError =>
    Object.assign(new TypeError("fetch failed"), { cause });
  // ES2021, beyond the runtime's lib.
  const { AggregateError } = globalThis as unknown as {
    AggregateError: new (errors: unknown[]) => Error;
  };
  const connect = [
    // Node (undici): refused, DNS, unreachable, connect timeout, TLS certificate checks.
    fetchFailed(systemError("connect ECONNREFUSED", "ECONNREFUSED", "connect")),
    fetchFailed(
      systemError("getaddrinfo ENOTFOUND x", "ENOTFOUND", "getaddrinfo"),
    ),
    fetchFailed(
      systemError("getaddrinfo EAI_AGAIN x", "EAI_AGAIN", "getaddrinfo"),
    ),
    fetchFailed(systemError("connect EHOSTUNREACH", "EHOSTUNREACH", "connect")),
    // A TLS handshake that failed for another reason than the certificate.
    fetchFailed(
      systemError(
        "sslv3 alert handshake failure",
        "ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE",
      ),
    ),
    fetchFailed(systemError("connect ETIMEDOUT", "ETIMEDOUT", "connect")),
    fetchFailed(
      systemError("Connect Timeout Error", "UND_ERR_CONNECT_TIMEOUT"),
    ),
    // HTTP/2 (undici's allowH2): a stream the server refused unprocessed (RFC 9113, 8.7), as
    // Node 20 and undici 6.24 reject it.
    fetchFailed(
      systemError(
        "Stream closed with error code NGHTTP2_REFUSED_STREAM",
        "ERR_HTTP2_STREAM_ERROR",
      ),
    ),
    // Happy eyeballs: one error per address.
    fetchFailed(
      new AggregateError([
        systemError("connect ECONNREFUSED ::1:1", "ECONNREFUSED", "connect"),
        systemError("connect ENETUNREACH", "ENETUNREACH", "connect"),
      ]),
    ),
    // Bun.
    Object.assign(new TypeError("Unable to connect."), {
      code: "ConnectionRefused",
    }),
    Object.assign(new TypeError("getaddrinfo ENOTFOUND"), {
      code: "ENOTFOUND",
      syscall: "getaddrinfo",
    }),
    // Deno.
    new TypeError(
      "error sending request for url (http://127.0.0.1:1/): client error (Connect): tcp connect error: Connection refused (os error 111)",
    ),
  ];
  for (const error of connect) {
    assert.equal(isConnectError(error), true, String(error));
  }
  const cyclic = new Error("cyclic");
  (cyclic as { cause?: unknown }).cause = cyclic;
  const maybeSent = [
    fetchFailed(systemError("read ECONNRESET", "ECONNRESET", "read")),
    // The errno of an unreachable host or network from a socket that was already sending: the
    // request may have been written (issue 19: these were taken for connect failures).
    fetchFailed(systemError("read EHOSTUNREACH", "EHOSTUNREACH", "read")),
    fetchFailed(systemError("write ENETUNREACH", "ENETUNREACH", "write")),
    fetchFailed(systemError("EHOSTUNREACH", "EHOSTUNREACH")),
    // A refused certificate is a failure of its own.
    fetchFailed(
      systemError("self-signed certificate", "DEPTH_ZERO_SELF_SIGNED_CERT"),
    ),
    fetchFailed(systemError("other side closed", "UND_ERR_SOCKET")),
    // HTTP/2: a stream reset after the request was read, and a GOAWAY (undici does not tell its
    // last stream id, so the request may have been processed).
    fetchFailed(
      systemError(
        "Stream closed with error code NGHTTP2_PROTOCOL_ERROR",
        "ERR_HTTP2_STREAM_ERROR",
      ),
    ),
    fetchFailed(
      systemError(
        'HTTP/2: "GOAWAY" frame received with code 0',
        "UND_ERR_SOCKET",
      ),
    ),
    new TypeError("terminated"),
    // Browsers and workers say the same for every network failure.
    new TypeError("Failed to fetch"),
    Object.assign(new Error("Network connection lost."), {
      remote: true,
      retryable: true,
    }),
    new DOMException("This operation was aborted", "AbortError"),
    cyclic,
    "not an error",
    null,
    undefined,
  ];
  for (const error of maybeSent) {
    assert.equal(isConnectError(error), false, String(error));
  }
});

// Issue 20: per-request control, the attempt below and above, the finish on the result, the body
// read inside the loop (docs/adapters.md P1-P6), and the result's type.

/** Node's fetch, recording the `init` of every call the adapter makes. */
function recordingFetch(): {
  fetch: typeof fetch;
  inits: (RequestInit & { retryAttempt?: number; retry?: unknown })[];
} {
  const inits: (RequestInit & { retryAttempt?: number })[] = [];
  const recording = (
    input: Parameters<typeof fetch>[0],
    init?: RequestInit,
  ): Promise<Response> => {
    inits.push({ ...init });
    return fetch(input, init);
  };
  return { fetch: recording, inits };
}

test("P1: init.retry.maxRetries overrides the policy for one request", async () => {
  const c = client();
  const once = serve({ status: 503 }, { status: 200 });
  const response = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": once.name },
    retry: { maxRetries: 0 },
  });
  assert.equal(response.status, 503);
  assert.equal(once.arrivals.length, 1);
  assert.equal(c.finishes[0]?.reason, "exhausted");
  // A status no rule retries is `exhausted` too when no retry is left (R3 before R12).
  const ok = serve({ status: 200 });
  await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": ok.name },
    retry: { maxRetries: 0 },
  });
  assert.equal(c.finishes[1]?.reason, "exhausted");
  // The next request has the policy's retries again.
  const again = serve({ status: 503 }, { status: 200 });
  const retried = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": again.name },
  });
  assert.equal(retried.status, 200);
  assert.equal(again.arrivals.length, 2);
  // More than the policy's 3.
  const many = serve({ status: 503 });
  await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": many.name },
    retry: { maxRetries: 5 },
  });
  assert.equal(many.arrivals.length, 6);
});

test("P1: a Request carrying retry as a member of its own is overridden (openapi-fetch)", async () => {
  const { name, arrivals } = serve({ status: 503 }, { status: 200 });
  const c = client();
  // openapi-fetch copies the call's options a Request lacks onto the Request it builds.
  const request = Object.assign(
    new Request(`${origin}/v1/items/1`, { headers: { "x-case": name } }),
    { retry: { maxRetries: 0 } },
  );
  const response = await c.fetch(request);
  assert.equal(response.status, 503);
  assert.equal(arrivals.length, 1);
  assert.equal(c.finishes[0]?.reason, "exhausted");
});

test("P1: an override out of range rejects before anything is sent", async () => {
  const { name, arrivals } = serve({ status: 200 });
  const c = client();
  for (const retry of [
    { maxRetries: -1 },
    { maxRetries: 101 },
    { maxRetries: 1.5 },
    { attemptTimeoutMs: 0 },
    { attemptTimeoutMs: 2 ** 31 },
    { readBodyMaxBytes: -1 },
  ]) {
    const error = await rejection(
      c.fetch(`${origin}/v1/items/1`, { headers: { "x-case": name }, retry }),
    );
    assert.ok(error instanceof RangeError, JSON.stringify(retry));
  }
  assert.equal(arrivals.length, 0);
  assert.deepEqual(c.finishes, []);
});

test("P1: the overrides are not passed to the wrapped fetch; a foreign origin ignores them", async () => {
  const { name, arrivals } = serve({ status: 503 });
  const below = recordingFetch();
  const c = retryingFetch(below.fetch, {
    tables: TABLES,
    baseUrl: `${origin}/v1`,
    policy: { ...POLICY, maxRetries: 1 },
  });
  await c(`${origin}/v1/items/1`, {
    headers: { "x-case": name },
    retry: { maxRetries: 2 },
  });
  assert.equal(arrivals.length, 3);
  assert.ok(below.inits.every((init) => !("retry" in init)));
  const port = new URL(origin).port;
  const foreign = serve({ status: 503 });
  await c(`http://localhost:${port}/v1/items/1`, {
    headers: { "x-case": foreign.name },
    retry: { maxRetries: -1 },
  });
  assert.equal(foreign.arrivals.length, 1);
});

test("P1: init.retry.attemptTimeoutMs limits the attempts of one request, null lifts it", async () => {
  const c = client();
  const stalled = serve("stall", { status: 200, body: "ok" });
  const response = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": stalled.name },
    retry: { attemptTimeoutMs: 100 },
    // Without the override the stall would last: fail instead of hanging.
    signal: AbortSignal.timeout(3000),
  });
  assert.equal(await response.text(), "ok");
  assert.equal(stalled.arrivals.length, 2);
  assert.deepEqual(reasons(c.retries), [["transport_failure", 1]]);
  assert.equal(c.retries[0]?.failure, "transport");
  assert.equal(c.retries[0]?.status, null);
  assert.ok((c.retries[0]?.attemptDurationMs ?? 0) >= 99);

  const limited = client({ attemptTimeoutMs: 50 });
  const slow = serve({ status: 200, body: "slow", delayMs: 150 });
  const lifted = await limited.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": slow.name },
    retry: { attemptTimeoutMs: null },
  });
  assert.equal(await lifted.text(), "slow");
  assert.equal(slow.arrivals.length, 1);
});

test("P2: every attempt's init carries its number for the fetch below", async () => {
  const { name } = serve({ status: 503 }, { status: 503 }, { status: 200 });
  const below = recordingFetch();
  const c = retryingFetch(below.fetch, {
    tables: TABLES,
    baseUrl: `${origin}/v1`,
  });
  const response = await c(`${origin}/v1/items/1`, {
    headers: { "x-case": name },
  });
  assert.equal(response.status, 200);
  assert.deepEqual(
    below.inits.map((init) => init.retryAttempt),
    [1, 2, 3],
  );
  // A Request input without init gets it too.
  const request = serve({ status: 200 });
  await c(
    new Request(`${origin}/v1/items/1`, {
      headers: { "x-case": request.name },
    }),
  );
  assert.equal(below.inits.at(-1)?.retryAttempt, 1);
});

test("P3: the attempt header counts the earlier attempts, replaces the caller's, never leaves the origin", async () => {
  const c = client({ attemptHeader: "X-Retry-Attempt" });
  const { name, arrivals } = serve(
    { status: 503 },
    { status: 503 },
    { status: 200 },
  );
  await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": name, "x-retry-attempt": "7" },
  });
  assert.deepEqual(
    arrivals.map((a) => a.headers["x-retry-attempt"]),
    ["0", "1", "2"],
  );
  // With a Request input, beside its own headers.
  const request = serve({ status: 503 }, { status: 200 });
  await c.fetch(
    new Request(`${origin}/v1/items/1`, {
      headers: { "x-case": request.name, "x-other": "1" },
    }),
  );
  assert.deepEqual(
    request.arrivals.map((a) => [
      a.headers["x-retry-attempt"],
      a.headers["x-other"],
    ]),
    [
      ["0", "1"],
      ["1", "1"],
    ],
  );
  const port = new URL(origin).port;
  const foreign = serve({ status: 200 });
  await c.fetch(`http://localhost:${port}/v1/items/1`, {
    headers: { "x-case": foreign.name },
  });
  assert.equal(foreign.arrivals[0]?.headers["x-retry-attempt"], undefined);
  // Off by default.
  const plain = serve({ status: 200 });
  await client().fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": plain.name },
  });
  assert.equal(plain.arrivals[0]?.headers["x-retry-attempt"], undefined);
  for (const attemptHeader of ["", "x retry", "x-retry:", "é"]) {
    assert.throws(
      () => retryingFetch(fetch, { tables: TABLES, attemptHeader }),
      RangeError,
    );
  }
});

test("P4: retry events carry the failure; the finish event the delays slept", async () => {
  const { name } = serve("reset", { status: 503 }, { status: 200 });
  const c = client();
  await c.fetch(`${origin}/v1/items/1`, { headers: { "x-case": name } });
  assert.deepEqual(
    c.retries.map((e) => [e.status, e.failure]),
    [
      [null, "transport"],
      [503, null],
    ],
  );
  assert.equal(c.finishes[0]?.totalDelayMs, 1 + 2);
  const refused = client({ baseUrl: `${closedOrigin}/v1` });
  await rejection(refused.fetch(`${closedOrigin}/v1/items/1`));
  assert.deepEqual(
    refused.retries.map((e) => e.failure),
    ["connect", "connect", "connect"],
  );
  assert.equal(refused.finishes[0]?.totalDelayMs, 1 + 2 + 4);
});

test("budgetTokensOf reads the client's budget cell: full when created, lower after a granted retry", async () => {
  const c = client({
    policy: { ...POLICY, budgetCapacity: 20, budgetRetryCost: 5 },
  });
  assert.equal(budgetTokensOf(c.fetch), 20);
  // One retry granted (20 -> 15); the last answer, a 503, is no success: nothing comes back.
  const { name, arrivals } = serve({ status: 503 }, { status: 503 });
  const response = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": name },
    retry: { maxRetries: 1 },
  });
  await response.arrayBuffer();
  assert.equal(arrivals.length, 2);
  assert.equal(budgetTokensOf(c.fetch), 15);
  // Each client has its own cell; nothing is added to the function.
  assert.equal(budgetTokensOf(client().fetch), POLICY.budgetCapacity);
  assert.deepEqual(Object.keys(c.fetch), []);
  assert.equal(budgetTokensOf(fetch), undefined);
  assert.equal(
    budgetTokensOf(() => undefined),
    undefined,
  );
  assert.equal(budgetTokensOf({}), undefined);
  assert.equal(budgetTokensOf(undefined), undefined);
});

test("P5: finishOf gives the finish event from the response and from the error", async () => {
  const c = client();
  const { name } = serve({ status: 503 }, { status: 200 });
  const response = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": name },
  });
  assert.equal(finishOf(response), c.finishes[0]);
  assert.equal(finishOf(response)?.attempts, 2);
  // Nothing is added to the response itself.
  assert.deepEqual(Object.keys(response), []);

  const refused = client({ baseUrl: `${closedOrigin}/v1` });
  const error = await rejection(refused.fetch(`${closedOrigin}/v1/items/1`));
  assert.ok(error instanceof TypeError);
  assert.equal(codeOf(error), "ECONNREFUSED");
  assert.equal(finishOf(error), refused.finishes[0]);
  assert.equal(finishOf(error)?.outcome, "connect");

  const port = new URL(origin).port;
  const foreign = serve({ status: 200 });
  const passed = await c.fetch(`http://localhost:${port}/v1/items/1`, {
    headers: { "x-case": foreign.name },
  });
  assert.equal(finishOf(passed)?.reason, "foreign_origin");
  assert.equal(finishOf(await fetch(`${origin}/v1/none`)), undefined);
  assert.equal(finishOf("text"), undefined);
});

test("P6: with readBodyMaxBytes a body cut on a replayable request is retried", async () => {
  const c = client({ readBodyMaxBytes: 65536 });
  const { name, arrivals } = serve(
    { status: 200, cut: true },
    { status: 200, body: "ok" },
  );
  const response = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": name },
  });
  assert.equal(arrivals.length, 2);
  assert.equal(response.status, 200);
  assert.equal(await response.text(), "ok");
  assert.deepEqual(reasons(c.retries), [["transport_failure", 1]]);
  assert.deepEqual(
    c.retries.map((e) => [e.status, e.failure]),
    [[null, "transport"]],
  );
  assert.equal(finishOf(response), c.finishes[0]);

  // Off (the default), the cut is the caller's.
  const plain = client();
  const off = serve({ status: 200, cut: true }, { status: 200, body: "ok" });
  const cut = await plain.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": off.name },
  });
  await rejection(cut.text());
  assert.equal(off.arrivals.length, 1);

  // The per-request override turns it on.
  const over = serve({ status: 200, cut: true }, { status: 200, body: "ok" });
  const overridden = await plain.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": over.name },
    retry: { readBodyMaxBytes: 1024 },
  });
  assert.equal(await overridden.text(), "ok");
  assert.equal(over.arrivals.length, 2);
  // ...and 0 turns it off again.
  const zero = serve({ status: 200, cut: true }, { status: 200, body: "ok" });
  const unread = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": zero.name },
    retry: { readBodyMaxBytes: 0 },
  });
  await rejection(unread.text());
  assert.equal(zero.arrivals.length, 1);
});

test("P6: a body cut on a non-replayable request surfaces as the transport failure", async () => {
  const c = client({ readBodyMaxBytes: 65536 });
  const { name, arrivals } = serve({ status: 201, cut: true }, { status: 201 });
  const error = await rejection(
    c.fetch(`${origin}/v1/items`, {
      method: "POST",
      headers: { "x-case": name },
      body: "{}",
    }),
  );
  assert.ok(error instanceof TypeError);
  assert.equal(arrivals.length, 1);
  assert.deepEqual(c.finishes[0], {
    attempts: 1,
    reason: "not_replayable",
    outcome: "transport",
    status: null,
    timedOut: false,
    redirects: 0,
    method: "POST",
    pathTemplate: "/items",
    operationId: "createItem",
    totalDelayMs: 0,
    serverDelayMs: null,
  });
  assert.equal(finishOf(error), c.finishes[0]);
});

test("P6: a body longer than the bound is handed over whole; event streams are not read", async () => {
  const c = client({ readBodyMaxBytes: 10 });
  const long = "0123456789".repeat(100);
  const big = serve({ status: 200, body: long });
  const response = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": big.name },
  });
  assert.equal(await response.text(), long);
  const small = serve({
    status: 200,
    body: "0123456789",
    headers: { "content-length": "10" },
  });
  const exact = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": small.name },
  });
  assert.equal(exact.headers.get("content-length"), "10");
  assert.equal(await exact.text(), "0123456789");
  // An event stream is never read inside the loop: its cut is the caller's.
  const events = serve(
    {
      status: 200,
      cut: true,
      headers: { "content-type": "text/event-stream" },
    },
    { status: 200, body: "ok" },
  );
  const stream = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": events.name },
  });
  await rejection(stream.text());
  assert.equal(events.arrivals.length, 1);
  // Nor is a discarded response: the 503 is released unread and retried.
  const discarded = serve({ status: 503, partial: true }, { status: 200 });
  const after = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": discarded.name },
  });
  assert.equal(after.status, 200);
});

test("P6: the attempt timeout covers the body read", async () => {
  const c = client({ readBodyMaxBytes: 65536, attemptTimeoutMs: 100 });
  const { name, arrivals } = serve(
    { status: 200, partial: true },
    { status: 200, body: "ok" },
  );
  const response = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": name },
    // Were the read not timed, the stalled body would last: fail instead of hanging.
    signal: AbortSignal.timeout(3000),
  });
  assert.equal(await response.text(), "ok");
  assert.equal(arrivals.length, 2);
  assert.deepEqual(reasons(c.retries), [["transport_failure", 1]]);
  assert.equal(c.finishes[0]?.attempts, 2);
  // The timer stops once the body is read: a slow caller is not cut off.
  const fast = serve({ status: 200, body: "fast" });
  const read = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": fast.name },
  });
  await new Promise((resolve) => setTimeout(resolve, 150));
  assert.equal(await read.text(), "fast");
});

test("invalid readBodyMaxBytes throws when the adapter is built", () => {
  for (const readBodyMaxBytes of [-1, 1.5, Number.NaN]) {
    assert.throws(
      () => retryingFetch(fetch, { tables: TABLES, readBodyMaxBytes }),
      RangeError,
    );
  }
});

/** Bun's `typeof fetch`: the call signature and members of its own. */
interface BunLikeFetch {
  (input: string | URL | Request, init?: RequestInit): Promise<Response>;
  preconnect(url: string | URL): void;
}

test("the result is an F: assignable to a fetch type with extra members, which it keeps", async () => {
  const preconnected: string[] = [];
  const bunFetch: BunLikeFetch = Object.assign(
    (input: string | URL | Request, init?: RequestInit) => fetch(input, init),
    { preconnect: (url: string | URL) => void preconnected.push(String(url)) },
  );
  // Compiled by tsc --strict: this assignment is the type test.
  const wrapped: BunLikeFetch = retryingFetch(bunFetch, { tables: TABLES });
  const node: typeof fetch = retryingFetch(fetch, { tables: TABLES });
  wrapped.preconnect(origin);
  assert.deepEqual(preconnected, [origin]);
  const { name } = serve({ status: 200, body: "ok" });
  const response = await wrapped(`${origin}/v1/items/1`, {
    headers: { "x-case": name },
  });
  assert.equal(await response.text(), "ok");
  assert.equal(typeof node, "function");
});

// Contract v3 (docs/contract.md section 12, X5-X8).

test("v3 X5: a precondition makes a non-replayable request replayable; a 412 after a replay stops", async () => {
  const c = client();
  const { name, arrivals } = serve("reset", { status: 412 });
  const response = await c.fetch(`${origin}/v1/items`, {
    method: "POST",
    headers: { "x-case": name, "If-Match": '"v1"' },
    body: "{}",
  });
  assert.equal(response.status, 412);
  assert.equal(arrivals.length, 2);
  assert.deepEqual(reasons(c.retries), [["transport_failure", 1]]);
  assert.equal(c.finishes[0]?.reason, "precondition_failed_after_replay");
  assert.equal(c.finishes[0]?.attempts, 2);
  // A 412 on the first attempt is an ordinary status.
  const first = serve({ status: 412 });
  const once = await c.fetch(`${origin}/v1/items`, {
    method: "POST",
    headers: { "x-case": first.name, "if-none-match": "*" },
    body: "{}",
  });
  assert.equal(once.status, 412);
  assert.equal(c.finishes[1]?.reason, "status_not_retryable");
  // `If-Match: *` and no precondition at all: one attempt after a reset.
  for (const headers of [{ "If-Match": " * " }, {}]) {
    const plain = serve("reset", { status: 201 });
    await rejection(
      c.fetch(`${origin}/v1/items`, {
        method: "POST",
        headers: { "x-case": plain.name, ...headers },
        body: "{}",
      }),
    );
    assert.equal(plain.arrivals.length, 1);
    assert.equal(c.finishes.at(-1)?.reason, "not_replayable");
  }
});

const QUOTA = JSON.stringify({
  type: "https://iana.org/assignments/http-problem-types#quota-exceeded",
  title: "Quota exceeded",
});

test("v3 X6: a quota problem stops; the response keeps its whole body", async () => {
  const c = client();
  const { name, arrivals } = serve(
    {
      status: 429,
      headers: { "content-type": "Application/Problem+JSON; charset=utf-8" },
      body: QUOTA,
    },
    { status: 200 },
  );
  const response = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": name },
  });
  assert.equal(response.status, 429);
  assert.equal(arrivals.length, 1);
  assert.equal(c.finishes[0]?.reason, "problem_type_stop");
  assert.equal(response.bodyUsed, false);
  assert.equal(await response.text(), QUOTA);
  // The same body as another media type is a plain 429, retried.
  const plain = serve(
    {
      status: 429,
      headers: { "content-type": "application/json" },
      body: QUOTA,
    },
    { status: 200 },
  );
  const retried = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": plain.name },
  });
  assert.equal(retried.status, 200);
  assert.equal(plain.arrivals.length, 2);
  // A problem body longer than 64 KiB gives no type: retried by its status, handed over whole.
  const long = JSON.stringify({
    type: "https://iana.org/assignments/http-problem-types#quota-exceeded",
    detail: "x".repeat(70000),
  });
  const big = serve({
    status: 429,
    headers: { "content-type": "application/problem+json" },
    body: long,
  });
  const last = await client({
    policy: { ...POLICY, maxRetries: 1 },
  }).fetch(`${origin}/v1/items/1`, { headers: { "x-case": big.name } });
  assert.equal(big.arrivals.length, 2);
  assert.equal(await last.text(), long);
});

test("v3 X6: retry problem types retry a replayable request; a cut problem body is a transport failure", async () => {
  const type = "https://example.test/problems/busy";
  const c = client({ policy: { ...POLICY, retryProblemTypes: [type] } });
  const problem = {
    status: 400,
    headers: { "content-type": "application/problem+json" },
    body: JSON.stringify({ type }),
  };
  const { name, arrivals } = serve(problem, { status: 200, body: "ok" });
  const response = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": name },
  });
  assert.equal(await response.text(), "ok");
  assert.equal(arrivals.length, 2);
  assert.deepEqual(reasons(c.retries), [["problem_type_retry", 1]]);
  // Not on a non-replayable request.
  const post = serve(problem, { status: 201 });
  const refused = await c.fetch(`${origin}/v1/items`, {
    method: "POST",
    headers: { "x-case": post.name },
    body: "{}",
  });
  assert.equal(refused.status, 400);
  assert.equal(post.arrivals.length, 1);
  // A problem body cut before its end: the attempt's transport failure, retried for a GET...
  const cut = serve(
    {
      status: 503,
      cut: true,
      headers: { "content-type": "application/problem+json" },
    },
    { status: 200, body: "ok" },
  );
  const after = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": cut.name },
  });
  assert.equal(await after.text(), "ok");
  assert.deepEqual(reasons(c.retries.slice(1)), [["transport_failure", 1]]);
  // ...surfacing for a POST.
  const cutPost = serve(
    {
      status: 503,
      cut: true,
      headers: { "content-type": "application/problem+json" },
    },
    { status: 201 },
  );
  const error = await rejection(
    c.fetch(`${origin}/v1/items`, {
      method: "POST",
      headers: { "x-case": cutPost.name },
      body: "{}",
    }),
  );
  assert.equal(cutPost.arrivals.length, 1);
  assert.equal(finishOf(error)?.outcome, "transport");
  assert.equal(finishOf(error)?.reason, "not_replayable");
  // With no problem type in either list, nothing is read: the cut body is the caller's.
  const none = client({ policy: { ...POLICY, stopProblemTypes: [] } });
  const unread = serve(
    {
      status: 404,
      cut: true,
      headers: { "content-type": "application/problem+json" },
    },
    { status: 200 },
  );
  const notFound = await none.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": unread.name },
  });
  assert.equal(notFound.status, 404);
  await rejection(notFound.text());
});

test("v3 X6: the attempt timeout covers the problem body's read", async () => {
  const c = client({ attemptTimeoutMs: 100 });
  const { name, arrivals } = serve(
    {
      status: 429,
      partial: true,
      headers: { "content-type": "application/problem+json" },
    },
    { status: 200, body: "ok" },
  );
  const response = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": name },
    signal: AbortSignal.timeout(3000),
  });
  assert.equal(await response.text(), "ok");
  assert.equal(arrivals.length, 2);
  assert.deepEqual(reasons(c.retries), [["transport_failure", 1]]);
  assert.equal(c.retries[0]?.failure, "transport");
});

test("v3 X7: a minted key is written as idempotencyKeyFormat says", async () => {
  const c = client({
    policy: { ...POLICY, idempotencyKeyFormat: "sf-string" },
  });
  const { name, arrivals } = serve({ status: 503 }, { status: 201 });
  await c.fetch(`${origin}/v1/items/1/copies`, {
    method: "POST",
    headers: { "x-case": name },
    body: "{}",
  });
  assert.equal(arrivals.length, 2);
  const key = arrivals[0]?.headers["idempotency-key"];
  assert.ok(
    typeof key === "string" && key.startsWith('"') && key.endsWith('"'),
  );
  assert.match(key.slice(1, -1), UUID_V4);
  assert.equal(arrivals[1]?.headers["idempotency-key"], key);
  // A caller's key is kept as written.
  const own = serve({ status: 201 });
  await c.fetch(`${origin}/v1/items/1/copies`, {
    method: "POST",
    headers: { "x-case": own.name, "Idempotency-Key": "mine" },
    body: "{}",
  });
  assert.equal(own.arrivals[0]?.headers["idempotency-key"], "mine");
});

test("v3 X8: the finish event carries a refused over-cap server delay", async () => {
  const c = client();
  const { name, arrivals } = serve(
    { status: 503, headers: { "retry-after": "120" } },
    { status: 200 },
  );
  const response = await c.fetch(`${origin}/v1/items/1`, {
    headers: { "x-case": name },
  });
  assert.equal(response.status, 503);
  assert.equal(arrivals.length, 1);
  assert.equal(c.finishes[0]?.reason, "retry_after_over_cap");
  assert.equal(c.finishes[0]?.serverDelayMs, 120000);
  assert.equal(finishOf(response)?.serverDelayMs, 120000);
  // From the last decision only: a retried request that ends otherwise reports none.
  const later = serve(
    { status: 503, headers: { "retry-after": "0" } },
    { status: 200 },
  );
  await c.fetch(`${origin}/v1/items/1`, { headers: { "x-case": later.name } });
  assert.equal(c.finishes[1]?.serverDelayMs, null);
});

// Contract v3 streams (X1-X4): a resumable GET, a resumable non-replayable POST, and a GET that
// streams without declaring resumption.

const STREAM_TABLES = retryTables({
  sourceSpec: "fetch-streams.yaml",
  basePath: "/v1",
  operations: [
    [
      "GET",
      "/items/{id}/events",
      "itemEvents",
      "idempotent",
      null,
      "resumable",
    ],
    [
      "GET",
      "/items/{id}/metrics",
      "itemMetrics",
      "idempotent",
      null,
      "streaming",
    ],
    [
      "POST",
      "/items/{id}/runs",
      "runItem",
      "non_replayable",
      null,
      "resumable",
    ],
  ],
  policy: POLICY,
});

function streams(
  options: Partial<RetryingFetchOptions> = {},
): ReturnType<typeof client> {
  return client({ tables: STREAM_TABLES, ...options });
}

function event(id: number, extra = ""): string {
  return `${extra}id: ${id}\ndata: line ${id}\n\n`;
}

test("v3 X2-X4: a dropped stream resumes with Last-Event-ID; the caller reads complete events once", async () => {
  const c = streams({ attemptHeader: "x-attempt" });
  const { name, arrivals } = serve(
    // Two events, then half of the third: the half is never handed over.
    { events: [event(1), event(2), "id: 3\ndata: li"], drop: true },
    { events: [event(3), event(4)] },
  );
  const response = await c.fetch(`${origin}/v1/items/1/events`, {
    headers: { "x-case": name },
  });
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("content-type"), "text/event-stream");
  assert.equal(response.url, `${origin}/v1/items/1/events`);
  // [X4] No finish before the stream ends.
  assert.equal(c.finishes.length, 0);
  assert.equal(finishOf(response), undefined);
  assert.equal(
    await response.text(),
    event(1) + event(2) + event(3) + event(4),
  );
  assert.equal(arrivals.length, 2);
  assert.deepEqual(
    arrivals.map((a) => a.headers["last-event-id"]),
    [undefined, "2"],
  );
  assert.deepEqual(
    arrivals.map((a) => a.headers["x-attempt"]),
    ["0", "1"],
  );
  assert.deepEqual(reasons(c.retries), [["stream_resume", 1]]);
  assert.equal(c.retries[0]?.failure, "dropped");
  assert.deepEqual(c.finishes, [
    {
      attempts: 2,
      reason: "status_not_retryable",
      outcome: "status",
      status: 200,
      timedOut: false,
      redirects: 0,
      method: "GET",
      pathTemplate: "/items/{id}/events",
      operationId: "itemEvents",
      totalDelayMs: 1,
      serverDelayMs: null,
    },
  ]);
  assert.equal(finishOf(response), c.finishes[0]);
});

test("v3 X3: the retry field sets the resume's wait", async () => {
  const c = streams();
  const { name, arrivals } = serve(
    { events: [event(1, "retry: 120\n")], drop: true },
    { events: [event(2)] },
  );
  const started = performance.now();
  const response = await c.fetch(`${origin}/v1/items/1/events`, {
    headers: { "x-case": name },
  });
  assert.equal(await response.text(), event(1, "retry: 120\n") + event(2));
  assert.ok(performance.now() - started >= 120);
  assert.equal(arrivals.length, 2);
  assert.deepEqual(reasons(c.retries), [["stream_resume", 120]]);
});

test("v3 X3: a non-replayable stream resumes only after an event id; else the drop surfaces", async () => {
  const c = streams();
  const withId = serve(
    { events: [event(1)], drop: true },
    { events: [event(2)] },
  );
  const resumed = await c.fetch(`${origin}/v1/items/1/runs`, {
    method: "POST",
    headers: { "x-case": withId.name },
    body: '{"cmd":"build"}',
  });
  assert.equal(await resumed.text(), event(1) + event(2));
  assert.deepEqual(
    withId.arrivals.map((a) => [a.body, a.headers["last-event-id"]]),
    [
      ['{"cmd":"build"}', undefined],
      ['{"cmd":"build"}', "1"],
    ],
  );
  // No id: a resume would replay the command.
  const noId = serve(
    { events: ["data: one\n\n"], drop: true },
    { events: ["data: two\n\n"] },
  );
  const dropped = await c.fetch(`${origin}/v1/items/1/runs`, {
    method: "POST",
    headers: { "x-case": noId.name },
    body: "{}",
  });
  const error = await rejection(dropped.text());
  assert.ok(error instanceof TypeError);
  assert.equal(noId.arrivals.length, 1);
  assert.equal(c.finishes[1]?.reason, "stream_not_resumable");
  // [X4] The call returned a response: outcome status, the reason tells the drop.
  assert.equal(c.finishes[1]?.outcome, "status");
  assert.equal(c.finishes[1]?.status, 200);
  assert.equal(c.finishes[1]?.attempts, 1);
  assert.equal(finishOf(error), c.finishes[1]);
  assert.equal(finishOf(dropped), c.finishes[1]);
});

test("v3 X3: a resume answered otherwise ends the stream with its status", async () => {
  const c = streams();
  const { name, arrivals } = serve(
    { events: [event(1)], drop: true },
    { status: 503 },
  );
  const response = await c.fetch(`${origin}/v1/items/1/events`, {
    headers: { "x-case": name },
  });
  const reader = response.body!.getReader();
  const first = await reader.read();
  assert.equal(new TextDecoder().decode(first.value), event(1));
  const error = await rejection(reader.read());
  assert.ok(error instanceof StreamResumeError);
  assert.ok(error instanceof TypeError);
  assert.equal(error.status, 503);
  assert.equal(arrivals.length, 2);
  assert.equal(c.finishes.length, 1);
  assert.equal(c.finishes[0]?.reason, "stream_not_resumable");
  // The call returned the committed 200; the error carries the resume's status.
  assert.equal(c.finishes[0]?.status, 200);
  assert.equal(c.finishes[0]?.attempts, 2);
});

test("v3 A7: drops without progress stop after maxRetries; progress resets the count", async () => {
  const c = streams();
  // A comment line is no event: each resume commits, then drops without progress.
  const stuck = serve(
    { events: [event(1)], drop: true },
    { events: [": hi\n"], drop: true },
  );
  const response = await c.fetch(`${origin}/v1/items/1/events`, {
    headers: { "x-case": stuck.name },
  });
  await rejection(response.text());
  // The first response delivered event 1; then three resumes without an event.
  assert.equal(stuck.arrivals.length, 4);
  assert.deepEqual(reasons(c.retries), [
    ["stream_resume", 1],
    ["stream_resume", 2],
    ["stream_resume", 4],
  ]);
  assert.equal(c.finishes[0]?.reason, "exhausted");
  assert.equal(c.finishes[0]?.outcome, "status");
  // Each of five resumes delivers an event: five resumes, more than maxRetries.
  const steady = streams();
  const moving = serve(
    { events: [event(1)], drop: true },
    { events: [event(2)], drop: true },
    { events: [event(3)], drop: true },
    { events: [event(4)], drop: true },
    { events: [event(5)], drop: true },
    { events: [event(6)] },
  );
  const long = await steady.fetch(`${origin}/v1/items/1/events`, {
    headers: { "x-case": moving.name },
  });
  assert.equal(
    await long.text(),
    [1, 2, 3, 4, 5, 6].map((i) => event(i)).join(""),
  );
  assert.equal(moving.arrivals.length, 6);
  assert.deepEqual(
    moving.arrivals.map((a) => a.headers["last-event-id"]),
    [undefined, "1", "2", "3", "4", "5"],
  );
  assert.deepEqual(
    steady.retries.map((e) => e.attempt),
    [1, 1, 1, 1, 1],
  );
  assert.equal(steady.finishes[0]?.attempts, 6);
});

test("v3 X4: closing the body finishes the call; a close during the wait sends nothing more", async () => {
  const c = streams();
  const open = serve({ events: [event(1), event(2)], tickMs: 200 });
  const response = await c.fetch(`${origin}/v1/items/1/events`, {
    headers: { "x-case": open.name },
  });
  const reader = response.body!.getReader();
  await reader.read();
  await reader.cancel();
  assert.equal(c.finishes.length, 1);
  assert.equal(c.finishes[0]?.reason, "aborted");
  assert.equal(c.finishes[0]?.outcome, "status");
  assert.equal(c.finishes[0]?.status, 200);
  // The resume waits 5 s (retry: 5000): the close ends the wait, no second arrival.
  const waiting = serve(
    { events: [event(1, "retry: 5000\n")], drop: true },
    { events: [event(2)] },
  );
  const resumable = await c.fetch(`${origin}/v1/items/1/events`, {
    headers: { "x-case": waiting.name },
  });
  const body = resumable.body!.getReader();
  await body.read();
  const pending = body.read();
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(c.retries.length, 1);
  const started = performance.now();
  await body.cancel();
  await pending;
  assert.ok(performance.now() - started < 1000);
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(waiting.arrivals.length, 1);
  assert.equal(c.finishes.length, 2);
  assert.equal(c.finishes[1]?.attempts, 1);
  assert.equal(c.finishes[1]?.reason, "aborted");
  // Ended while a resume waited: aborted, as a cancellation between attempts.
  assert.equal(c.finishes[1]?.outcome, "aborted");
  assert.equal(c.finishes[1]?.status, null);
});

/** Reads `reader` until the text read holds `count` complete events. */
async function readEvents(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  count: number,
): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  while (text.split("\n\n").length - 1 < count) {
    const { done, value } = await reader.read();
    if (done) {
      break;
    }
    text += decoder.decode(value, { stream: true });
  }
  return text;
}

test("v3 X4: closing a resumable stream while reading it finishes with its status, reason aborted; nothing more is sent", async () => {
  const c = streams();
  // A drop after event 1, resumed; the resume's answer holds the stream open after event 2.
  const { name, arrivals } = serve(
    { events: [event(1)], drop: true },
    { events: [event(2)], hold: true },
  );
  const response = await c.fetch(`${origin}/v1/items/1/events`, {
    headers: { "x-case": name },
  });
  const reader = response.body!.getReader();
  assert.equal(await readEvents(reader, 2), event(1) + event(2));
  assert.equal(c.finishes.length, 0);
  await reader.cancel();
  const finish = {
    attempts: 2,
    reason: "aborted",
    outcome: "status",
    status: 200,
    timedOut: false,
    redirects: 0,
    method: "GET",
    pathTemplate: "/items/{id}/events",
    operationId: "itemEvents",
    totalDelayMs: 1,
    serverDelayMs: null,
  };
  assert.deepEqual(c.finishes, [finish]);
  assert.equal(finishOf(response), c.finishes[0]);
  // The close reaches the server: the held response's connection goes away, no resume follows.
  await arrivals[1]?.gone;
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(arrivals.length, 2);
  assert.equal(c.retries.length, 1);
  assert.equal(c.finishes.length, 1);
  // After the end: closing the body or aborting gives no second finish.
  const controller = new AbortController();
  const clean = serve({ events: [event(1)] });
  const ended = await c.fetch(`${origin}/v1/items/1/events`, {
    headers: { "x-case": clean.name },
    signal: controller.signal,
  });
  const done = ended.body!.getReader();
  assert.equal(await readEvents(done, 2), event(1));
  await done.cancel();
  controller.abort();
  assert.equal(c.finishes.length, 2);
  assert.equal(c.finishes[1]?.reason, "status_not_retryable");
  assert.equal(c.finishes[1]?.outcome, "status");
});

test("v3 X4: the caller's abort between reads finishes the stream at once with its status, reason aborted", async () => {
  const c = streams();
  const controller = new AbortController();
  const { name, arrivals } = serve({ events: [event(1)], hold: true });
  const response = await c.fetch(`${origin}/v1/items/1/events`, {
    headers: { "x-case": name },
    signal: controller.signal,
  });
  const reader = response.body!.getReader();
  assert.equal(await readEvents(reader, 1), event(1));
  const why = new Error("the caller stops");
  // No read waits: the finish comes with the abort, not with a later read.
  controller.abort(why);
  assert.deepEqual(c.finishes, [
    {
      attempts: 1,
      reason: "aborted",
      outcome: "status",
      status: 200,
      timedOut: false,
      redirects: 0,
      method: "GET",
      pathTemplate: "/items/{id}/events",
      operationId: "itemEvents",
      totalDelayMs: 0,
      serverDelayMs: null,
    },
  ]);
  assert.equal(finishOf(response), c.finishes[0]);
  assert.equal(await rejection(reader.read()), why);
  await arrivals[0]?.gone;
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(arrivals.length, 1);
  assert.equal(c.finishes.length, 1);
});

test("v3 X4: the caller's abort while a resume waits or is sent ends the call aborted, no status", async () => {
  const c = streams();
  const cases = [
    // The resume waits 5 s (retry: 5000).
    serve(
      { events: [event(1, "retry: 5000\n")], drop: true },
      { events: [event(2)] },
    ),
    // The resume is sent and never answered.
    serve({ events: [event(1)], drop: true }, "stall"),
  ];
  const first = [event(1, "retry: 5000\n"), event(1)];
  for (const [i, { name, arrivals }] of cases.entries()) {
    const controller = new AbortController();
    const response = await c.fetch(`${origin}/v1/items/1/events`, {
      headers: { "x-case": name },
      signal: controller.signal,
    });
    const reader = response.body!.getReader();
    assert.equal(await readEvents(reader, 1), first[i]);
    const pending = reader.read();
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(c.retries.length, i + 1);
    assert.equal(arrivals.length, i + 1);
    const why = new Error("the caller stops");
    controller.abort(why);
    assert.equal(await rejection(pending), why);
    assert.equal(c.finishes.length, i + 1);
    assert.equal(c.finishes[i]?.outcome, "aborted");
    assert.equal(c.finishes[i]?.reason, "aborted");
    assert.equal(c.finishes[i]?.status, null);
    assert.equal(c.finishes[i]?.attempts, i + 1);
    assert.equal(finishOf(response), c.finishes[i]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(arrivals.length, i + 1);
  }
});

test("v3 X4: the caller's abort ends a stream as aborted", async () => {
  const c = streams();
  const controller = new AbortController();
  const { name, arrivals } = serve({
    events: [event(1), event(2)],
    tickMs: 300,
  });
  const response = await c.fetch(`${origin}/v1/items/1/events`, {
    headers: { "x-case": name },
    signal: controller.signal,
  });
  const reader = response.body!.getReader();
  await reader.read();
  // A read waits when the abort comes: it fails, the call finishes with its status.
  const pending = reader.read();
  controller.abort();
  await rejection(pending);
  assert.equal(arrivals.length, 1);
  assert.equal(c.finishes.length, 1);
  assert.equal(c.finishes[0]?.outcome, "status");
  assert.equal(c.finishes[0]?.status, 200);
  assert.equal(c.finishes[0]?.reason, "aborted");
  assert.equal(c.finishes[0]?.attempts, 1);
  assert.equal(c.finishes[0]?.timedOut, false);
  assert.equal(finishOf(response), c.finishes[0]);
});

test("v3 X1: a stream outlives the attempt timeout; a stream that is not resumable keeps v2's body and finish", async () => {
  const c = streams({ attemptTimeoutMs: 100 });
  const slow = serve({ events: [event(1), event(2), event(3)], tickMs: 80 });
  const response = await c.fetch(`${origin}/v1/items/1/events`, {
    headers: { "x-case": slow.name },
  });
  assert.equal(await response.text(), event(1) + event(2) + event(3));
  assert.equal(slow.arrivals.length, 1);
  // Not resumable: finished at the commit, the drop is the caller's.
  const metrics = serve(
    { events: ["data: 1\n\n", "data: 2"], drop: true, tickMs: 80 },
    { events: ["data: again\n\n"] },
  );
  const plain = await c.fetch(`${origin}/v1/items/1/metrics`, {
    headers: { "x-case": metrics.name },
  });
  assert.equal(c.finishes.length, 2);
  assert.equal(c.finishes[1]?.reason, "status_not_retryable");
  assert.equal(finishOf(plain), c.finishes[1]);
  await rejection(plain.text());
  assert.equal(metrics.arrivals.length, 1);
  // Before the commit a stream is retried as its class allows.
  const early = serve({ status: 503 }, { events: [event(1)] });
  const retried = await c.fetch(`${origin}/v1/items/1/metrics`, {
    headers: { "x-case": early.name },
  });
  assert.equal(await retried.text(), event(1));
  assert.equal(early.arrivals.length, 2);
});

test("v3 X2: an event longer than 1 MiB ends resumability; its later drop surfaces", async () => {
  const c = streams();
  const big = "data: " + "x".repeat(2200000);
  const { name, arrivals } = serve(
    { events: [event(1), big, "\n\n", "id: 3\ndata: cut"], drop: true },
    { events: [event(4)] },
  );
  const response = await c.fetch(`${origin}/v1/items/1/events`, {
    headers: { "x-case": name },
  });
  const reader = response.body!.getReader();
  let received = "";
  const decoder = new TextDecoder();
  let error: unknown;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        break;
      }
      received += decoder.decode(value, { stream: true });
    }
  } catch (e) {
    error = e;
  }
  assert.ok(error instanceof TypeError, String(error));
  assert.equal(arrivals.length, 1);
  // Past the limit the bytes pass as they come, the cut event's too.
  assert.equal(received, event(1) + big + "\n\n" + "id: 3\ndata: cut");
  assert.equal(c.finishes[0]?.reason, "stream_not_resumable");
});

test("v3 X4: callbacks that throw during a stream end it with their error, one finish, no resend", async () => {
  const boom = new Error("onRetry");
  const finishes: FinishEvent[] = [];
  const c = streams({
    onRetry: () => {
      throw boom;
    },
    onFinish: (event) => finishes.push(event),
  });
  const { name, arrivals } = serve(
    { events: [event(1)], drop: true },
    { events: [event(2)] },
  );
  const response = await c.fetch(`${origin}/v1/items/1/events`, {
    headers: { "x-case": name },
  });
  assert.equal(await rejection(response.text()), boom);
  assert.equal(arrivals.length, 1);
  assert.equal(finishes.length, 1);
  assert.equal(finishes[0]?.reason, "stream_resume");
  assert.equal(finishes[0]?.outcome, "status");
  const late = new Error("onFinish");
  const d = streams({
    onFinish: () => {
      throw late;
    },
  });
  const clean = serve({ events: [event(1)] });
  const ended = await d.fetch(`${origin}/v1/items/1/events`, {
    headers: { "x-case": clean.name },
  });
  assert.equal(await rejection(ended.text()), late);
});

test("v3 X3: the scanner starts from the caller's own Last-Event-ID; an emptied id is left out", async () => {
  const c = streams();
  // A drop before the first event of a non-replayable stream resumes from the caller's id.
  const own = serve({ events: [": hi\n"], drop: true }, { events: [event(8)] });
  const response = await c.fetch(`${origin}/v1/items/1/runs`, {
    method: "POST",
    headers: { "x-case": own.name, "Last-Event-ID": "7" },
    body: "{}",
  });
  assert.equal(await response.text(), event(8));
  assert.deepEqual(
    own.arrivals.map((a) => a.headers["last-event-id"]),
    ["7", "7"],
  );
  assert.deepEqual(reasons(c.retries), [["stream_resume", 1]]);
  // An event with an empty id empties it: the resume (a GET) goes without the header.
  const emptied = serve(
    { events: ["id\ndata: reset\n\n"], drop: true },
    { events: [event(1)] },
  );
  const again = await c.fetch(`${origin}/v1/items/1/events`, {
    headers: { "x-case": emptied.name, "last-event-id": "7" },
  });
  assert.equal(await again.text(), "id\ndata: reset\n\n" + event(1));
  assert.deepEqual(
    emptied.arrivals.map((a) => a.headers["last-event-id"]),
    ["7", undefined],
  );
});

/** A promise and the function that settles it. */
function gate(): {
  readonly promise: Promise<void>;
  readonly open: () => void;
} {
  let open = (): void => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

test("v3 X3: a resumable stream's budget counts each 2xx event-stream answer when it arrives, its end nothing", async () => {
  for (const ending of ["end", "close"] as const) {
    const c = streams({
      policy: {
        ...POLICY,
        maxRetries: 3,
        initialBackoffMs: 1,
        maxBackoffMs: 1,
        budgetCapacity: 20,
        budgetRetryCost: 5,
        budgetTimeoutCost: 10,
        budgetSuccessRefund: 1,
      },
    });
    // Three retries granted (20 -> 15 -> 10 -> 5), then a 503: not a success (no K3).
    const failing = serve({ status: 503 });
    const failed = await c.fetch(`${origin}/v1/items/1`, {
      headers: { "x-case": failing.name },
    });
    assert.equal(failed.status, 503);
    await failed.arrayBuffer();
    assert.equal(failing.arrivals.length, 4);
    assert.equal(budgetTokensOf(c.fetch), 5);
    // Event 1, a drop (reset) once `dropped` opens; the resume is answered once `answered`
    // opens, with event 2, then the end once `ended` opens (or nothing more until the close).
    const dropped = gate();
    const answered = gate();
    const ended = gate();
    const { name, arrivals } = serve(
      { events: [event(1)], reset: true, until: dropped.promise },
      ending === "end"
        ? { events: [event(2)], gate: answered.promise, until: ended.promise }
        : { events: [event(2)], gate: answered.promise, hold: true },
    );
    const response = await c.fetch(`${origin}/v1/items/1/events`, {
      headers: { "x-case": name },
    });
    const reader = response.body!.getReader();
    assert.equal(await readEvents(reader, 1), event(1));
    // The commit's answer, a success without a retry: the refund (5 + 1).
    assert.equal(budgetTokensOf(c.fetch), 6);
    const second = readEvents(reader, 1);
    dropped.open();
    while (arrivals.length < 2) {
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    // The resume, granted: it costs 5 (6 - 5).
    assert.equal(arrivals[1]?.headers["last-event-id"], "1");
    assert.deepEqual(reasons(c.retries.slice(-1)), [["stream_resume", 1]]);
    assert.equal(budgetTokensOf(c.fetch), 1);
    answered.open();
    assert.equal(await second, event(2));
    // The resume's answer: its cost comes back (1 + 5).
    assert.equal(budgetTokensOf(c.fetch), 6);
    assert.equal(finishOf(response), undefined);
    if (ending === "end") {
      ended.open();
      assert.equal(await readEvents(reader, 1), "");
      assert.equal(finishOf(response)?.reason, "status_not_retryable");
    } else {
      await reader.cancel();
      assert.equal(finishOf(response)?.reason, "aborted");
    }
    assert.equal(finishOf(response)?.attempts, 2);
    // The stream's end, whatever ends it, records nothing more.
    assert.equal(budgetTokensOf(c.fetch), 6);
    assert.equal(arrivals.length, 2);
  }
});
