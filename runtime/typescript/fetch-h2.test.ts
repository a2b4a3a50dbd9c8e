// Unit tests of fetch.ts over HTTP/2 (node:test): Node's own fetch with a dispatcher of the npm
// undici package (7.x: `H2CClient`, HTTP/2 with prior knowledge, the way an SDK turns HTTP/2 on)
// against Node's own HTTP/2 server on 127.0.0.1, unmocked. Each stream gets the next step of the
// test's script.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { constants, createServer } from "node:http2";
import type { Http2Server, ServerHttp2Stream } from "node:http2";
import type { AddressInfo } from "node:net";
import { Agent, H2CClient } from "undici";
import { retryingFetch } from "./fetch.js";
import type { FinishEvent } from "./fetch.js";
import { retryTables } from "./runtime.js";
import type { RetryEvent, RetryPolicy } from "./runtime.js";

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
  serverDirectiveHeaders: [],
  retryAfterOverCap: "refuse",
  unknownOperationClass: "method_default",
  budgetCapacity: 500,
  budgetRetryCost: 5,
  budgetTimeoutCost: 10,
  budgetSuccessRefund: 1,
};

const TABLES = retryTables({
  sourceSpec: "fetch-h2-unit.yaml",
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
    ["POST", "/items", "createItem", "non_replayable", null, null],
  ],
  policy: POLICY,
});

/**
 * A status, the RST_STREAM code the stream is closed with before any response, or a 200
 * `text/event-stream` of `events`, then the end, or a drop: the connection closed (`socket`,
 * as the fault server drops a stream) or RST_STREAM(INTERNAL_ERROR) (`rst`).
 */
type Step =
  | number
  | { readonly reset: number }
  | {
      readonly events: readonly string[];
      readonly drop: "socket" | "rst" | null;
    };

/** The `last-event-id` of each stream, in order. */
let lastEventIds: (string | undefined)[] = [];

let script: Step[] = [];
let streams = 0;
let server: Http2Server;
let origin = "";
const dispatcher = new Agent({
  factory: (url, options) => new H2CClient(url, options),
});

before(async () => {
  server = createServer();
  server.on("stream", (stream: ServerHttp2Stream, headers) => {
    stream.on("error", () => {});
    const step = script[Math.min(streams, script.length - 1)] ?? 500;
    streams += 1;
    const id = headers["last-event-id"];
    lastEventIds.push(typeof id === "string" ? id : undefined);
    stream.resume();
    if (typeof step === "object" && "events" in step) {
      stream.respond({ ":status": 200, "content-type": "text/event-stream" });
      stream.write(step.events.join(""), () => {
        if (step.drop === "socket") {
          stream.session?.destroy();
        } else if (step.drop === "rst") {
          stream.close(constants.NGHTTP2_INTERNAL_ERROR);
        } else {
          stream.end();
        }
      });
    } else if (typeof step === "number") {
      stream.respond({ ":status": step });
      stream.end(`status ${step}`);
    } else {
      stream.close(step.reset);
    }
  });
  await new Promise<void>((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve()),
  );
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  await dispatcher.close();
  server.close();
});

/** Sends a create through the adapter after `steps`; what it returned and reported. */
async function create(...steps: Step[]): Promise<{
  response: Response | null;
  error: unknown;
  streams: number;
  retries: RetryEvent[];
  finishes: FinishEvent[];
}> {
  script = steps;
  streams = 0;
  const retries: RetryEvent[] = [];
  const finishes: FinishEvent[] = [];
  const client = retryingFetch(fetch, {
    tables: TABLES,
    baseUrl: `${origin}/v1`,
    onRetry: (event) => retries.push(event),
    onFinish: (event) => finishes.push(event),
  });
  const init = { method: "POST", body: "{}", dispatcher };
  try {
    const response = await client(
      `${origin}/v1/items`,
      init as unknown as RequestInit,
    );
    return { response, error: null, streams, retries, finishes };
  } catch (error) {
    return { response: null, error, streams, retries, finishes };
  }
}

test("over HTTP/2 a stream the server refused unprocessed is a connect failure: retried", async () => {
  const got = await create({ reset: constants.NGHTTP2_REFUSED_STREAM }, 201);
  assert.equal(got.response?.status, 201);
  assert.equal(got.streams, 2);
  assert.deepEqual(
    got.retries.map((e) => e.reason),
    ["connect_failure"],
  );
  assert.equal(got.finishes[0]?.attempts, 2);
});

test("over HTTP/2 a stream reset after the request was read is not replayed", async () => {
  const got = await create({ reset: constants.NGHTTP2_PROTOCOL_ERROR }, 201);
  assert.ok(got.error instanceof TypeError);
  assert.equal(got.streams, 1);
  assert.deepEqual(got.retries, []);
  assert.equal(got.finishes[0]?.outcome, "transport");
  assert.equal(got.finishes[0]?.attempts, 1);
});

test("over HTTP/2 fetch's own resend of a 421 is answered from memory: one stream", async () => {
  const got = await create(421, 201);
  assert.equal(got.response?.status, 421);
  assert.equal(await got.response?.text(), "status 421");
  assert.equal(got.streams, 1);
  assert.equal(got.finishes[0]?.attempts, 1);
});

/** GETs the resumable stream through the adapter after `steps`; what it read and reported. */
async function events(...steps: Step[]): Promise<{
  text: string | null;
  retries: RetryEvent[];
  finishes: FinishEvent[];
}> {
  script = steps;
  streams = 0;
  lastEventIds = [];
  const retries: RetryEvent[] = [];
  const finishes: FinishEvent[] = [];
  const client = retryingFetch(fetch, {
    tables: TABLES,
    baseUrl: `${origin}/v1`,
    onRetry: (event) => retries.push(event),
    onFinish: (event) => finishes.push(event),
  });
  const response = await client(`${origin}/v1/items/1/events`, {
    dispatcher,
  } as unknown as RequestInit);
  let text: string | null = null;
  try {
    text = await response.text();
  } catch {
    text = null;
  }
  return { text, retries, finishes };
}

test("over HTTP/2 a stream dropped after two events is resumed with Last-Event-ID (contract v3 X3)", async () => {
  const got = await events(
    {
      events: ["id: 1\ndata: a\n\n", "id: 2\ndata: b\n\nid: 3\nda"],
      drop: "socket",
    },
    { events: ["id: 3\ndata: c\n\n"], drop: null },
  );
  assert.equal(
    got.text,
    "id: 1\ndata: a\n\nid: 2\ndata: b\n\nid: 3\ndata: c\n\n",
  );
  assert.equal(streams, 2);
  assert.deepEqual(lastEventIds, [undefined, "2"]);
  assert.deepEqual(
    got.retries.map((e) => e.reason),
    ["stream_resume"],
  );
  assert.equal(got.finishes.length, 1);
  assert.equal(got.finishes[0]?.attempts, 2);
  assert.equal(got.finishes[0]?.outcome, "status");
});

test("over HTTP/2 undici ends a body cleanly at a stream's RST_STREAM: no drop to resume, one arrival", async () => {
  // undici 7's HTTP/2 client completes the request at the stream's 'end', which Node emits
  // for an RST_STREAM after the head too: the adapter sees the body's clean end (README).
  const got = await events(
    { events: ["id: 1\ndata: a\n\nid: 2\nda"], drop: "rst" },
    { events: ["id: 2\ndata: b\n\n"], drop: null },
  );
  assert.equal(got.text, "id: 1\ndata: a\n\nid: 2\nda");
  assert.equal(streams, 1);
  assert.deepEqual(got.retries, []);
  assert.equal(got.finishes[0]?.attempts, 1);
  assert.equal(got.finishes[0]?.outcome, "status");
});
