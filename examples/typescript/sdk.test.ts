// The scenarios of conformance/faults/scenarios.json named in RETRYGEN_EXAMPLE_SCENARIOS, each
// made through the SDK's own calls against the fault server at RETRYGEN_FAULT_URL (cargo xtask
// runtime-tests --lang typescript sets both); xtask then compares the arrivals the server
// counted with the scenario's.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createSandboxClient } from "./sdk.js";
import type { RetryOptions } from "./sdk.js";
import { finishOf } from "./retry/index.js";
import type { FinishEvent } from "./retry/index.js";

type Client = ReturnType<typeof createSandboxClient>;
/** The fault server's two headers, for every call. */
type Headers = Record<string, string>;
/** What a call gives back: openapi-fetch's result, or what it threw. */
type Result = { readonly response: Response; readonly data?: unknown };

interface Call {
  readonly options?: RetryOptions;
  readonly send: (client: Client, headers: Headers) => Promise<Result>;
  /** The status the call returns, or `null` when it throws with `failure`. */
  readonly status: number | null;
  readonly failure?: string;
  readonly attempts: number;
  readonly body?: string;
}

const path = { sandboxID: "sb-1" };

const get = (client: Client, headers: Headers): Promise<Result> =>
  client.GET("/sandboxes/{sandboxID}", {
    params: { path },
    headers,
    parseAs: "text",
  });

const create = (client: Client, headers: Headers): Promise<Result> =>
  client.POST("/sandboxes", { headers, parseAs: "text" });

const calls: Record<string, Call> = {
  "get-503-503-200": { send: get, status: 200, attempts: 3, body: "ok" },
  "create-503-not-replayable": { send: create, status: 503, attempts: 1 },
  "create-reset-arrives-once": {
    send: create,
    status: null,
    failure: "transport",
    attempts: 1,
  },
  "kill-reset-arrives-twice": {
    send: (client, headers) =>
      client.DELETE("/sandboxes/{sandboxID}", { params: { path }, headers }),
    status: 204,
    attempts: 2,
  },
  // The keyed operation: the adapter mints the key the SDK did not set (xtask checks it).
  "snapshot-minted-key-reset": {
    send: (client, headers) =>
      client.POST("/sandboxes/{sandboxID}/snapshots", {
        params: { path },
        headers,
        parseAs: "text",
      }),
    status: 201,
    attempts: 2,
  },
  // openapi-fetch reads the body after fetch returns: cut, it is retried only when the adapter
  // reads it inside the loop.
  "get-body-cut-read-in-loop-retried": {
    options: { readBodyMaxBytes: 64 * 1024 },
    send: get,
    status: 200,
    attempts: 2,
    body: "ok",
  },
  // A per-request override among the call's options: openapi-fetch puts it on its Request.
  "get-override-max-retries-0-once": {
    send: (client, headers) =>
      client.GET("/sandboxes/{sandboxID}", {
        params: { path },
        headers,
        parseAs: "text",
        retry: { maxRetries: 0 },
      }),
    status: 503,
    attempts: 1,
  },
  "get-attempt-header-counts-earlier-attempts": {
    options: { attemptHeader: "X-Retry-Attempt" },
    send: get,
    status: 200,
    attempts: 3,
    body: "ok",
  },
};

const server = process.env["RETRYGEN_FAULT_URL"] ?? "";
const ids = (process.env["RETRYGEN_EXAMPLE_SCENARIOS"] ?? "")
  .split(",")
  .filter((id) => id !== "");

test("the environment names the server and the scenarios", () => {
  assert.notEqual(server, "", "RETRYGEN_FAULT_URL is not set");
  assert.notEqual(ids.length, 0, "RETRYGEN_EXAMPLE_SCENARIOS is not set");
});

for (const id of ids) {
  test(`${id} through the SDK`, async () => {
    const call = calls[id];
    assert.ok(call !== undefined, `${id}: no call for this scenario`);
    const finishes: FinishEvent[] = [];
    const client = createSandboxClient(`${server}/v1`, {
      ...call.options,
      onFinish: (event) => finishes.push(event),
    });
    const headers = {
      "x-fault-run": process.env["RETRYGEN_FAULT_RUN"] ?? "",
      "x-fault-scenario": id,
    };
    let result: Result | undefined;
    let thrown: unknown;
    try {
      result = await call.send(client, headers);
    } catch (error) {
      thrown = error;
    }
    const finish = finishOf(result === undefined ? thrown : result.response);
    assert.equal(finishes.length, 1);
    assert.equal(finish, finishes[0], "the finish from the result");
    assert.equal(finish?.attempts, call.attempts);
    if (call.status === null) {
      assert.ok(thrown instanceof Error, String(thrown));
      assert.equal(finish?.outcome, call.failure);
      return;
    }
    assert.equal(thrown, undefined);
    assert.equal(result?.response.status, call.status);
    if (call.body !== undefined) {
      assert.equal(result?.data, call.body);
    }
  });
}
