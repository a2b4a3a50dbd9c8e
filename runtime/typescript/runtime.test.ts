// Unit tests of runtime.ts (node:test), on hand-written tables: no spec, nothing rendered.

import { test } from "node:test";
import assert from "node:assert/strict";
import {
  RetryBudget,
  RetryInputError,
  budgetNew,
  budgetRecordSuccess,
  budgetTryAcquire,
  decide,
  hasIdempotencyKey,
  parseBudgetKind,
  parseFailure,
  parseJitter,
  parseOverCapMode,
  parseReplayClass,
  parseUnknownOperationClass,
  retryEvent,
  retryTables,
  serverDelayMs,
} from "./runtime.js";
import type {
  DecisionInput,
  Jitter,
  Operation,
  OperationRow,
  Outcome,
  RetryPolicy,
} from "./runtime.js";

const POLICY: RetryPolicy = {
  maxRetries: 3,
  initialBackoffMs: 500,
  maxBackoffMs: 30000,
  multiplier: 2,
  jitter: "full",
  retryableStatuses: [408, 425, 429, 500, 502, 503, 504],
  rejectedStatuses: [429],
  retryAfterCapMs: 60000,
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
  ["GET", "/", "root", "idempotent", null, null],
  ["GET", "/a/b/c", "abc", "idempotent", null, null],
  ["GET", "/a/{x}/d", "axd", "idempotent", null, null],
  ["GET", "/files/{name}.{ext}", "anyFile", "idempotent", null, null],
  ["GET", "/files/{name}.json", "jsonFile", "idempotent", null, null],
  ["GET", "/files/v{version}", "version", "idempotent", null, null],
  ["GET", "/files/{a}\uFF61x{b}", "halfwidthStop", "idempotent", null, null],
  ["GET", "/files/{a}\u{1F600}{b}", "emoji", "idempotent", null, null],
  ["GET", "/sandboxes/templates", "templates", "idempotent", null, null],
  ["DELETE", "/sandboxes/{id}", "kill", "idempotent", null, null],
  ["GET", "/sandboxes/{id}", "get", "idempotent", null, null],
  ["POST", "/sandboxes/{id}/fork", "fork", "non_replayable", null, null],
  ["GET", "/sandboxes/{other}", "shadowed", "no_retry", null, null],
  ["GET", "/space%20d/caf%C3%A9", "encoded", "idempotent", null, null],
  ["GET", "/bad%FF/x", "undecodable", "idempotent", null, null],
  [
    "POST",
    "/tokens#refresh",
    "refresh",
    "keyed",
    "Idempotency-Key",
    null,
    "/tokens",
  ],
  ["POST", "/tokens?grant=x", "grant", "non_replayable", null, null, "/tokens"],
  ["GET", "/trailing/", null, "idempotent", null, null],
  ["POST", "/escape/a.b+c*(d)|[e]^$\\", "escape", "non_replayable", null, null],
];

const tables = retryTables({
  sourceSpec: "unit.yaml",
  basePath: "/v1",
  operations: ROWS,
  policy: POLICY,
});

function id(method: string, path: string): string | null {
  return tables.classify(method, path).operation?.operationId ?? null;
}

test("literal segments beat parameters", () => {
  assert.equal(id("GET", "/sandboxes/templates"), "templates");
  assert.equal(id("GET", "/sandboxes/other"), "get");
  // The path matched is the literal one, which has no DELETE: no fallback (step 9).
  assert.equal(id("DELETE", "/sandboxes/templates"), null);
});

test("classify walks the target in place: chains, wide nodes, encoded keys", () => {
  // More literal children than classify compares one by one (a hash table),
  // chained single-literal edges, keys holding a decoded `/`, an empty segment.
  const wide: OperationRow[] = [];
  for (let i = 0; i < 40; i++) {
    wide.push(["GET", `/w${i}/items`, `w${i}`, "idempotent", null, null]);
  }
  // The same length, first, middle and last unit: told apart by the full hash.
  for (const key of ["xaab", "xbab"]) {
    wide.push(["GET", `/${key}/items`, key, "idempotent", null, null]);
  }
  const own = retryTables({
    sourceSpec: "",
    basePath: "/api",
    operations: [
      ...wide,
      ["GET", "/one/two/three", "chain", "idempotent", null, null],
      ["GET", "/one/two", "prefix", "idempotent", null, null],
      ["GET", "/one/{x}/three", "param", "idempotent", null, null],
      ["GET", "/a%2Fb/c", "slash", "idempotent", null, null],
      ["GET", "/a/b/c", "plain", "idempotent", null, null],
      ["GET", "/e//f", "empty", "idempotent", null, null],
      ["POST", "/q/{id}:run", "run", "non_replayable", null, null],
    ],
    policy: POLICY,
  });
  const found = (method: string, target: string): string | null =>
    own.classify(method, target).operation?.operationId ?? null;
  const cases: [string, string, string | null][] = [
    ["GET", "/w0/items", "w0"],
    ["GET", "/w39/items/", "w39"],
    ["GET", "/api/w17/items?x=/w18", "w17"],
    ["GET", "https://h.example/api/w7/items#f", "w7"],
    ["GET", "w8/items", "w8"],
    ["GET", "/w40/items", null],
    ["GET", "/w1/item", null],
    ["GET", "/xaab/items", "xaab"],
    ["GET", "/xbab/items", "xbab"],
    ["GET", "/xcab/items", null],
    ["GET", "/xaa/items", null],
    ["GET", "/w%31/items", "w1"],
    ["GET", "/one/two/three", "chain"],
    ["GET", "/one/two", "prefix"],
    ["GET", "/one/twx/three", "param"],
    ["GET", "/one/two/thre", null],
    ["GET", "/one/two/threee", null],
    ["GET", "/one/tw%6F/three", "chain"],
    ["GET", "/a/b/c", "plain"],
    ["GET", "/a%2Fb/c", "slash"],
    ["GET", "/a%2fb/c", "slash"],
    ["GET", "/e//f", "empty"],
    ["GET", "/e/f", null],
    ["post", "/q/x:run", "run"],
    ["POST", "/q/:run", null],
    ["POST", "/q/x:ru", null],
    ["GET", "/api", null],
    ["GET", "", null],
  ];
  for (const [method, target, operationId] of cases) {
    assert.equal(found(method, target), operationId, `${method} ${target}`);
  }
});

test("classify returns the tables' own results, never a new object", () => {
  const first = tables.classify("GET", "/v1/sandboxes/x?y=1");
  assert.equal(tables.classify("get", "/sandboxes/x"), first);
  assert.equal(
    tables.classify("GET", "/nowhere"),
    tables.classify("PUT", "/x"),
  );
  assert.ok(Object.isFrozen(first));
});

test("the first operation claiming a node and method wins", () => {
  assert.equal(id("GET", "/sandboxes/x"), "get");
});

test("a dead-end literal branch backtracks to the parameter", () => {
  assert.equal(id("GET", "/a/b/c"), "abc");
  assert.equal(id("GET", "/a/b/d"), "axd");
  assert.equal(id("GET", "/a/b"), null);
});

test("mixed segments: more literal bytes first, every split tried", () => {
  assert.equal(id("GET", "/files/x.json"), "jsonFile");
  assert.equal(id("GET", "/files/x.json.json"), "jsonFile");
  assert.equal(id("GET", "/files/x.tar"), "anyFile");
  assert.equal(id("GET", "/files/v2"), "version");
  assert.equal(id("GET", "/files/xv2"), null);
  assert.equal(id("GET", "/files/.json"), null);
});

test("mixed ties sort by code point, not UTF-16 unit", () => {
  // Both match; U+FF61 < U+1F600 by code point (UTF-16 would put the emoji first).
  assert.equal(id("GET", "/files/1\uFF61x2\u{1F600}3"), "halfwidthStop");
});

test("request segments are percent-decoded, literals too", () => {
  assert.equal(id("GET", "/space d/caf\u00E9"), "encoded");
  assert.equal(id("GET", "/space%20d/caf%c3%a9"), "encoded");
  assert.equal(id("GET", "/bad%FF/x"), "undecodable");
  assert.equal(id("GET", "/sandboxes/a%2Fb"), "get");
  assert.equal(id("GET", "/sandboxes/%"), "get");
  assert.equal(id("GET", "/sandbox%65s/templates"), "templates");
});

test("query, fragment, base path, trailing slash, empty segments", () => {
  assert.equal(id("GET", "/v1/sandboxes/templates?x=1#y"), "templates");
  assert.equal(id("GET", "/v1"), "root");
  assert.equal(id("GET", ""), "root");
  assert.equal(id("GET", "/v1/"), "root");
  assert.equal(id("GET", "/v1x/sandboxes/templates"), null);
  assert.equal(id("GET", "/sandboxes/templates/"), "templates");
  assert.equal(id("GET", "/trailing"), null);
  assert.equal(tables.classify("GET", "/trailing/").replayClass, "idempotent");
  assert.equal(id("GET", "/a//d"), null);
  assert.equal(id("POST", "/tokens"), "refresh");
});

test("methods are ASCII upper-cased; unknown ones get the method default", () => {
  assert.equal(id("get", "/sandboxes/x"), "get");
  assert.equal(id("dElEtE", "/sandboxes/x"), "kill");
  assert.deepEqual(tables.classify("put", "/nowhere"), {
    operation: null,
    replayClass: "idempotent",
    streaming: false,
    resumable: false,
  });
  assert.equal(
    tables.classify("POST", "/nowhere").replayClass,
    "non_replayable",
  );
  assert.equal(tables.classify("PATCH", "/sandboxes/x").operation, null);
  // Not Unicode upper case: `ſ` (U+017F) upper-cases to `S`.
  assert.equal(
    tables.classify("po\u017Ft", "/nowhere").replayClass,
    "non_replayable",
  );
  assert.equal(tables.classify("\u017Fet", "/sandboxes/x").operation, null);
});

test("operationById", () => {
  assert.equal(tables.operationById("fork")?.path, "/sandboxes/{id}/fork");
  assert.equal(tables.operationById("nope"), undefined);
  assert.equal(
    tables.operationById("refresh")?.idempotencyHeader,
    "Idempotency-Key",
  );
});

test("patterns (L1): literals itself or percent-encoded, parameters [^/]+", () => {
  const pattern = (operationId: string): RegExp => {
    const p = tables.operationById(operationId)?.pattern;
    assert.ok(p !== undefined);
    return p;
  };
  assert.equal(pattern("root").source, "^\\/\\/?$");
  assert.equal(
    pattern("anyFile").source,
    "^\\/(?:f|%66)(?:i|%69)(?:l|%6[Cc])(?:e|%65)(?:s|%73)\\/[^/]+(?:\\.|%2[Ee])[^/]+\\/?$",
  );
  for (const path of [
    "/space d/caf\u00E9",
    "/space%20d/caf%C3%A9",
    "/sp%61ce%20d/caf%c3%a9/",
  ]) {
    assert.ok(pattern("encoded").test(path), path);
  }
  assert.ok(!pattern("encoded").test("/space%20d/caf%C3%A9\n"));
  assert.ok(pattern("refresh").test("/tokens"));
  assert.ok(!pattern("refresh").test("/tokens#refresh"));
  const escape = pattern("escape");
  assert.ok(escape.test("/escape/a.b+c*(d)|[e]^$\\/"));
  assert.ok(escape.test("/escape/a%2Eb+c*(d)|[e]^$%5c"));
  assert.ok(!escape.test("/escape/aXb+c*(d)|[e]^$\\"));
  // The safe list: non_replayable and keyed operations in table order.
  assert.deepEqual(
    tables.nonReplayableOperations.map(([method, p, header]) => [
      method,
      p.source,
      header,
    ]),
    [
      ["POST", pattern("fork").source, null],
      ["POST", pattern("refresh").source, "Idempotency-Key"],
      ["POST", pattern("grant").source, null],
      ["POST", pattern("escape").source, null],
    ],
  );
});

test("tables are frozen: mutating them throws (strict mode)", () => {
  const operations = tables.operations as Operation[];
  const first = operations[0] as { method: string; pattern: RegExp };
  const policy = tables.defaultPolicy as { maxRetries: number };
  const statuses = tables.defaultPolicy.retryableStatuses as number[];
  const entry = tables.nonReplayableOperations[0] as unknown as unknown[];
  const found = tables.classify("GET", "/sandboxes/x") as {
    replayClass: string;
  };
  const unmatched = tables.classify("GET", "/nowhere") as {
    replayClass: string;
  };
  const mutations: (() => unknown)[] = [
    () => operations.push(first as Operation),
    () => (operations[0] = first as Operation),
    () => (first.method = "POST"),
    () => (first.pattern = /x/),
    () => (policy.maxRetries = 100),
    () => statuses.push(404),
    () => (entry[1] = /x/),
    () => (entry[0] = "GET"),
    () => (found.replayClass = "no_retry"),
    () => (unmatched.replayClass = "no_retry"),
    () => ((tables as { basePath: string }).basePath = ""),
    () => (first.pattern.lastIndex = 3),
  ];
  for (const mutate of mutations) {
    assert.throws(mutate, TypeError, String(mutate));
  }
  assert.equal(id("GET", "/sandboxes/x"), "get");
  assert.equal(tables.defaultPolicy.maxRetries, 3);
  assert.equal(tables.operations.length, ROWS.length);
});

test("the policy handed in is copied, not frozen in place", () => {
  const statuses = [503];
  const own = retryTables({
    sourceSpec: "",
    basePath: "",
    operations: [],
    policy: { ...POLICY, retryableStatuses: statuses },
  });
  statuses.push(500);
  assert.deepEqual(own.defaultPolicy.retryableStatuses, [503]);
  assert.equal(own.classify("GET", "/").operation, null);
});

// Decisions.

const NOW = 784111777000; // Sun, 06 Nov 1994 08:49:37 GMT

function input(
  outcome: Outcome,
  extra: Partial<DecisionInput> = {},
): DecisionInput {
  return {
    replayClass: "idempotent",
    hasIdempotencyKey: false,
    outcome,
    retriesUsed: 0,
    elapsedMs: 0,
    previousDelayMs: 0,
    nowMs: NOW,
    random: 0.5,
    ...extra,
  };
}

function status(
  code: number,
  retryAfter: string | null = null,
  retryAfterMs: string | null = null,
): Outcome {
  return { kind: "status", status: code, retryAfter, retryAfterMs };
}

function decision(
  policy: RetryPolicy,
  i: DecisionInput,
): [boolean, number, string] {
  const d = decide(policy, i);
  return [d.retry, d.delayMs, d.reason];
}

test("the contract's examples (section 4)", () => {
  const cases: [DecisionInput, [boolean, number, string]][] = [
    [
      input(status(503), { replayClass: "non_replayable" }),
      [false, 0, "not_replayable"],
    ],
    [
      input(status(429), { replayClass: "non_replayable" }),
      [true, 250, "rejected_status"],
    ],
    [
      input(
        { kind: "connect" },
        { replayClass: "non_replayable", retriesUsed: 2 },
      ),
      [true, 1000, "connect_failure"],
    ],
    [
      input({ kind: "transport" }, { replayClass: "non_replayable" }),
      [false, 0, "not_replayable"],
    ],
    [
      input(
        { kind: "transport" },
        { replayClass: "keyed", hasIdempotencyKey: true },
      ),
      [true, 250, "transport_failure"],
    ],
    [
      input(status(502), { replayClass: "keyed" }),
      [false, 0, "not_replayable"],
    ],
    [
      input(status(503, "7"), { retriesUsed: 1 }),
      [true, 7000, "retryable_status"],
    ],
    [
      input(status(503, "Sun, 06 Nov 1994 08:49:47 GMT")),
      [true, 10000, "retryable_status"],
    ],
    [
      input(status(503, "Sun, 06 Nov 1994 08:49:27 GMT")),
      [true, 0, "retryable_status"],
    ],
    [input(status(503, "120")), [false, 0, "retry_after_over_cap"]],
    [input(status(503, "soon")), [true, 250, "retryable_status"]],
    [input(status(503, "9", "1500.9")), [true, 1500, "retryable_status"]],
    [input(status(500), { retriesUsed: 3 }), [false, 0, "exhausted"]],
    [input(status(404)), [false, 0, "status_not_retryable"]],
    [
      input({ kind: "connect" }, { replayClass: "no_retry" }),
      [false, 0, "no_retry_operation"],
    ],
    [
      input({ kind: "aborted" }, { replayClass: "no_retry" }),
      [false, 0, "aborted"],
    ],
  ];
  for (const [i, expected] of cases) {
    assert.deepEqual(decision(POLICY, i), expected, JSON.stringify(i));
  }
  assert.deepEqual(
    decision(
      { ...POLICY, deadlineMs: 1000 },
      input(status(503), { elapsedMs: 900 }),
    ),
    [false, 0, "deadline"],
  );
  assert.deepEqual(
    decision(
      { ...POLICY, deadlineMs: 1000 },
      input(status(503), { elapsedMs: 750 }),
    ),
    [true, 250, "retryable_status"],
  );
});

test("backoff for each jitter (contract section 4)", () => {
  const delays = (jitter: Jitter, random = 0.5): number[] =>
    [0, 1, 2, 3, 4, 5, 6, 7].map(
      (retriesUsed) =>
        decide(
          { ...POLICY, jitter, maxRetries: 10 },
          input({ kind: "connect" }, { retriesUsed, random }),
        ).delayMs,
    );
  assert.deepEqual(
    delays("full"),
    [250, 500, 1000, 2000, 4000, 8000, 15000, 15000],
  );
  assert.deepEqual(
    delays("equal"),
    [375, 750, 1500, 3000, 6000, 12000, 22500, 22500],
  );
  assert.deepEqual(
    delays("none"),
    [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000],
  );
  // Equal jitter can reach its bound: 250 + 0.9999999999999999 * 250 rounds to 500.
  assert.equal(delays("equal", 0.9999999999999999)[0], 500);
  const decorrelated = (previousDelayMs: number, random: number): number =>
    decide(
      { ...POLICY, jitter: "decorrelated" },
      input({ kind: "connect" }, { previousDelayMs, random }),
    ).delayMs;
  assert.equal(decorrelated(0, 0.5), 1000); // 500 + 0.5 * (1500 - 500)
  assert.equal(decorrelated(2000, 0.5), 3250); // 500 + 0.5 * (6000 - 500)
  assert.equal(decorrelated(20000, 0.9), 30000); // capped
  assert.equal(decorrelated(1000, 0), 500);
  // A multiplier that never reaches the cap in double precision.
  assert.equal(
    decide(
      {
        ...POLICY,
        initialBackoffMs: 1,
        multiplier: 1.1,
        jitter: "none",
        maxRetries: 10,
      },
      input({ kind: "connect" }, { retriesUsed: 3 }),
    ).delayMs,
    1,
  );
});

test("retry-after-ms and delta-seconds", () => {
  const ms = (value: string): number | null => serverDelayMs(null, value, NOW);
  const seconds = (value: string): number | null =>
    serverDelayMs(value, null, NOW);
  assert.equal(ms("1500.9"), 1500);
  assert.equal(ms(" \t1500\t "), 1500);
  assert.equal(ms("-20.5"), 0);
  assert.equal(ms("1."), null);
  assert.equal(ms(".5"), null);
  assert.equal(ms("1e3"), null);
  assert.equal(ms("+1"), null);
  assert.equal(ms("\u00A01"), null);
  assert.equal(ms("999999999999999"), 999999999999999);
  assert.equal(ms("0000000000000001"), Infinity);
  assert.equal(ms("1234567890123456.5"), Infinity);
  assert.equal(ms("-1234567890123456"), 0);
  assert.equal(seconds("7"), 7000);
  assert.equal(seconds("-7"), 0);
  assert.equal(seconds("7.5"), null);
  assert.equal(seconds("1234567890123456"), Infinity);
  assert.equal(seconds("999999999999999"), 999999999999999000);
  assert.equal(serverDelayMs("7", "junk", NOW), 7000);
  assert.equal(serverDelayMs("7", "3", NOW), 3);
  assert.equal(serverDelayMs(undefined, undefined, NOW), null);
  assert.equal(seconds(""), null);
});

test("HTTP-dates: the three forms, exact spacing and names", () => {
  const at = (value: string, now = NOW): number | null =>
    serverDelayMs(value, null, now);
  assert.equal(at("Sun, 06 Nov 1994 08:49:47 GMT"), 10000);
  assert.equal(at("Sunday, 06-Nov-94 08:49:47 GMT"), 10000);
  assert.equal(at("Sun Nov  6 08:49:47 1994"), 10000);
  assert.equal(at("Sun Nov 06 08:49:47 1994"), 10000);
  assert.equal(at("Sun Nov 6 08:49:47 1994"), null);
  assert.equal(at("Mon, 06 Nov 1994 08:49:47 GMT"), 10000); // day name not checked
  assert.equal(at("Sun, 06 nov 1994 08:49:47 GMT"), null);
  assert.equal(at("sun, 06 Nov 1994 08:49:47 GMT"), null);
  assert.equal(at("Sun, 06 Nov 1994 08:49:47 UTC"), null);
  assert.equal(at("Sun,  06 Nov 1994 08:49:47 GMT"), null);
  assert.equal(at("Sun, 6 Nov 1994 08:49:47 GMT"), null);
  assert.equal(at("Sunday, 06-Nov-1994 08:49:47 GMT"), null);
  assert.equal(at("Sun, 06-Nov-94 08:49:47 GMT"), null);
  assert.equal(at("Sunday 06-Nov-94 08:49:47 GMT"), null);
  assert.equal(at(" Sun, 06 Nov 1994 08:49:47 GMT\t"), 10000);
  assert.equal(at("Sun, 06 Nov 1994 08:49:27 GMT"), 0);
  // Validation.
  assert.equal(at("Tue, 29 Feb 2000 00:00:00 GMT", 0), 951782400000);
  assert.equal(at("Tue, 29 Feb 1900 00:00:00 GMT", 0), null);
  assert.equal(at("Tue, 31 Apr 2000 00:00:00 GMT", 0), null);
  assert.equal(at("Tue, 00 Jan 2000 00:00:00 GMT", 0), null);
  assert.equal(at("Sat, 01 Jan 2000 24:00:00 GMT", 0), null);
  assert.equal(at("Sat, 01 Jan 2000 00:60:00 GMT", 0), null);
  assert.equal(at("Sat, 01 Jan 2000 23:59:60 GMT", 0), 946771200000);
  assert.equal(at("Sat, 01 Jan 2000 23:59:61 GMT", 0), null);
  assert.equal(at("Sat, 01 Jan 0000 00:00:00 GMT", -1e15), null);
  assert.equal(at("Fri, 31 Dec 9999 23:59:59 GMT", 0), 253402300799000);
});

test("RFC 850 two-digit years resolve around now's calendar year", () => {
  const at = (yy: string, now: number): number | null =>
    serverDelayMs(`Monday, 01-Jan-${yy} 00:00:00 GMT`, null, now);
  // Y = 2049: 2000 + yy, never more than Y + 50.
  const year2049 = Date.UTC(2049, 5, 1);
  assert.equal(at("99", year2049), Date.UTC(2099, 0, 1) - year2049);
  assert.equal(at("00", year2049), 0); // 2000 is in the past
  // Y = 2048: 2099 is more than Y + 50, so 1999.
  assert.equal(at("99", Date.UTC(2048, 5, 1)), 0);
  assert.equal(
    at("98", Date.UTC(2048, 0, 1)),
    Date.UTC(2098, 0, 1) - Date.UTC(2048, 0, 1),
  );
  // Before 1970 (floor division): Y = 1969, so 1970 is ahead.
  const year1969 = Date.UTC(1969, 6, 1);
  assert.equal(at("70", year1969), Date.UTC(1970, 0, 1) - year1969);
  assert.equal(at("68", year1969), 0);
});

// Contract v2.

test("invalid input throws RetryInputError with the message key", () => {
  const key = (f: () => unknown): string => {
    try {
      f();
    } catch (e) {
      assert.ok(e instanceof RetryInputError);
      assert.ok(e instanceof Error);
      return e.key;
    }
    return "no error";
  };
  const ok = input(status(503));
  const cases: [Partial<RetryPolicy>, Partial<DecisionInput>, string][] = [
    [{ maxRetries: 101 }, {}, "policy.max_retries"],
    [{ maxRetries: 1.5 }, {}, "policy.max_retries"],
    [{ multiplier: NaN }, {}, "policy.multiplier"],
    [{ multiplier: Infinity }, {}, "policy.multiplier"],
    [{ jitter: "Full" as Jitter }, {}, "policy.jitter"],
    [
      { serverDirectiveHeaders: ["x should"] },
      {},
      "policy.server_directive_headers",
    ],
    [{ serverDirectiveHeaders: [""] }, {}, "policy.server_directive_headers"],
    [{ budgetCapacity: 1000001 }, {}, "policy.budget_capacity"],
    [
      { initialBackoffMs: 2000, maxBackoffMs: 1000 },
      {},
      "policy.max_backoff_ms",
    ],
    [{ maxRetries: -1, jitter: "x" as Jitter }, {}, "policy.max_retries"],
    [{}, { replayClass: "Keyed" as never }, "input.class"],
    [{}, { outcome: { kind: "timeout" } as never }, "input.outcome"],
    [{}, { outcome: status(600) }, "input.status"],
    [{}, { retriesUsed: 2 ** 53 }, "input.retries_used"],
    [{}, { elapsedMs: -1 }, "input.elapsed_ms"],
    [{}, { random: NaN }, "input.random"],
    [{}, { random: 1 }, "input.random"],
    [{}, { random: -1e-300 }, "input.random"],
    [{}, { random: NaN, outcome: { kind: "aborted" } }, "input.random"],
    [{}, { budgetTokens: 501 }, "input.budget_tokens"],
    [{ budgetCapacity: 0 }, { budgetTokens: 1 }, "input.budget_tokens"],
  ];
  for (const [p, i, want] of cases) {
    assert.equal(
      key(() => decide({ ...POLICY, ...p }, { ...ok, ...i })),
      want,
      JSON.stringify([p, i]),
    );
  }
  assert.equal(
    key(() => parseReplayClass("keyed ")),
    "input.class",
  );
  assert.equal(
    key(() => parseFailure("Connect")),
    "input.outcome",
  );
  assert.equal(
    key(() => parseJitter("")),
    "policy.jitter",
  );
  assert.equal(
    key(() => parseOverCapMode("Clamp")),
    "policy.retry_after_over_cap",
  );
  assert.equal(
    key(() => parseUnknownOperationClass("idempotent")),
    "policy.unknown_operation_class",
  );
  assert.equal(
    key(() => parseBudgetKind("slow")),
    "input.budget_kind",
  );
  assert.equal(parseReplayClass("no_retry"), "no_retry");
  assert.equal(
    key(() => budgetRecordSuccess(POLICY, 0, -1)),
    "input.budget_release",
  );
  assert.equal(
    key(() => budgetTryAcquire(POLICY, 0, "slow" as never)),
    "input.budget_kind",
  );
});

test("directives, key statuses, over-cap mode, budget in decide (section 4)", () => {
  const withDirective = (code: number, directive: string): Outcome => ({
    kind: "status",
    status: code,
    directive,
  });
  const cases: [RetryPolicy, DecisionInput, [boolean, number, string]][] = [
    [POLICY, input(withDirective(503, "false")), [false, 0, "server_said_no"]],
    [
      POLICY,
      input(withDirective(404, " TRUE\t")),
      [true, 250, "server_said_yes"],
    ],
    [
      POLICY,
      input(withDirective(404, "true"), { replayClass: "non_replayable" }),
      [false, 0, "status_not_retryable"],
    ],
    [
      POLICY,
      input(withDirective(429, "false"), { replayClass: "non_replayable" }),
      [false, 0, "server_said_no"],
    ],
    [
      { ...POLICY, serverDirectiveHeaders: [] },
      input(withDirective(503, "false")),
      [true, 250, "retryable_status"],
    ],
    [POLICY, input(withDirective(503, "yes")), [true, 250, "retryable_status"]],
    [
      POLICY,
      input(status(409), { replayClass: "keyed", hasIdempotencyKey: true }),
      [true, 250, "key_in_flight"],
    ],
    [
      POLICY,
      input(withDirective(422, "true"), {
        replayClass: "keyed",
        hasIdempotencyKey: true,
      }),
      [false, 0, "key_reused"],
    ],
    [
      POLICY,
      input(status(409), { replayClass: "keyed" }),
      [false, 0, "status_not_retryable"],
    ],
    [
      { ...POLICY, retryAfterOverCap: "clamp" },
      input(status(503, "120")),
      [true, 60000, "retryable_status"],
    ],
    [
      { ...POLICY, retryAfterOverCap: "clamp" },
      input(status(503, "9999999999999999")),
      [true, 60000, "retryable_status"],
    ],
    [
      { ...POLICY, retryOnlyWithServerDelay: [429] },
      input(status(429)),
      [false, 0, "no_server_delay"],
    ],
    [
      { ...POLICY, retryOnlyWithServerDelay: [429] },
      input(status(429, "2")),
      [true, 2000, "rejected_status"],
    ],
  ];
  for (const [p, i, expected] of cases) {
    assert.deepEqual(decision(p, i), expected, JSON.stringify(i));
  }
  const budget = (
    i: DecisionInput,
  ): [boolean, number, string, number | null] => {
    const d = decide(POLICY, i);
    return [d.retry, d.delayMs, d.reason, d.budgetTokens];
  };
  assert.deepEqual(budget(input({ kind: "connect" }, { budgetTokens: 500 })), [
    true,
    250,
    "connect_failure",
    495,
  ]);
  assert.deepEqual(
    budget(input({ kind: "transport" }, { budgetTokens: 10, timedOut: true })),
    [true, 250, "transport_failure", 0],
  );
  assert.deepEqual(budget(input(status(503), { budgetTokens: 4 })), [
    false,
    0,
    "budget_exhausted",
    4,
  ]);
  assert.deepEqual(budget(input(status(404), { budgetTokens: 4 })), [
    false,
    0,
    "status_not_retryable",
    4,
  ]);
  assert.equal(decide(POLICY, input(status(503))).budgetTokens, null);
});

test("budget functions and the per-client cell (K1-K4)", () => {
  assert.equal(budgetNew(POLICY), 500);
  assert.deepEqual(budgetTryAcquire(POLICY, 5, "retry"), [true, 0]);
  assert.deepEqual(budgetTryAcquire(POLICY, 9, "timeout"), [false, 9]);
  const off = { ...POLICY, budgetCapacity: 0 };
  assert.deepEqual(budgetTryAcquire(off, 0, "timeout"), [true, 0]);
  assert.equal(budgetRecordSuccess(off, 0, 5), 0);
  assert.equal(budgetRecordSuccess(POLICY, 499, 5), 500);
  assert.equal(budgetRecordSuccess(POLICY, 100, 0), 101);
  const cell = new RetryBudget(POLICY);
  let granted = 0;
  while (cell.tryAcquire("retry")) {
    granted++;
  }
  assert.equal(granted, 100);
  assert.equal(cell.tokens, 0);
  cell.recordSuccess(5);
  cell.recordSuccess();
  assert.equal(cell.tokens, 6);
  const d = cell.decide(input(status(503), { budgetTokens: 1 }));
  assert.deepEqual([d.retry, d.budgetTokens, cell.tokens], [true, 1, 1]);
  assert.equal(new RetryBudget(POLICY, 7).tokens, 7);
  assert.throws(() => new RetryBudget(POLICY, 501), RetryInputError);
});

test("the budget cell stays consistent across interleaved async tasks", async () => {
  const cell = new RetryBudget({ ...POLICY, budgetCapacity: 1000 });
  const task = async (n: number): Promise<number> => {
    let granted = 0;
    for (let i = 0; i < n; i++) {
      await Promise.resolve();
      if (cell.decide(input({ kind: "connect" })).retry) {
        granted++;
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    return granted;
  };
  const granted = await Promise.all([task(60), task(60), task(60), task(60)]);
  const total = granted.reduce((a, b) => a + b, 0);
  assert.equal(total, 200, "1000 tokens pay for exactly 200 retries");
  assert.equal(cell.tokens, 0);
});

test("a classifier from a base path or URL (C1-C3), full URLs, strings (C4)", () => {
  const c = (base: string | null, method: string, target: string) => {
    const found = tables.classifier(base).classify(method, target);
    return [found.replayClass, found.operation?.operationId ?? null];
  };
  assert.deepEqual(c("/proxy/v1", "GET", "/proxy/v1/sandboxes/x"), [
    "idempotent",
    "get",
  ]);
  assert.deepEqual(
    c("https://gw.example/proxy/v1//", "POST", "/proxy/v1/sandboxes/x/fork?a"),
    ["non_replayable", "fork"],
  );
  assert.deepEqual(c(null, "GET", "HTTPS://h:8/v1/sandboxes/templates#f"), [
    "idempotent",
    "templates",
  ]);
  assert.deepEqual(c(null, "GET", "sandboxes/templates"), [
    "idempotent",
    "templates",
  ]);
  assert.deepEqual(c(null, "GET", "http://h"), ["idempotent", "root"]);
  // The authority ends at `?`: no base path, so `/v1` stays in the path.
  assert.deepEqual(c("http://h?x=/v1", "GET", "/v1/sandboxes/templates"), [
    "idempotent",
    null,
  ]);
  assert.equal(tables.classifier("https://gw.example/p/").basePath, "/p");
  assert.equal(tables.classifier("/").basePath, "");
  assert.equal(tables.classifier().basePath, "/v1");
  const noRetry = tables.classifier(null, "no_retry");
  assert.equal(noRetry.classify("GET", "/nowhere").replayClass, "no_retry");
  assert.equal(
    noRetry.classify("GET", "/sandboxes/x").replayClass,
    "idempotent",
  );
  assert.equal(
    tables.classifier(null, "non_replayable").classify("GET", "/x/y/z")
      .replayClass,
    "non_replayable",
  );
  const key = (f: () => unknown): string => {
    try {
      f();
    } catch (e) {
      assert.ok(e instanceof RetryInputError);
      return e.key;
    }
    return "no error";
  };
  assert.equal(
    key(() => tables.classify("GET", "/\uD800")),
    "input.path",
  );
  assert.equal(
    key(() => tables.classify("GET", "/a\uDC00b")),
    "input.path",
  );
  assert.equal(
    key(() => tables.classify("G\uDC00", "/\uD800")),
    "input.method",
  );
  assert.equal(
    key(() => tables.classifier("\uD800", "x" as never)),
    "input.base",
  );
  assert.equal(
    key(() => tables.classifier(null, "idempotent" as never)),
    "policy.unknown_operation_class",
  );
  assert.equal(id("GET", "/space d/caf\u{1F600}"), null);
  // Strict UTF-8: overlong, encoded surrogate, above U+10FFFF, truncated stay undecoded.
  for (const bad of ["%C0%AE", "%ED%A0%80", "%F4%90%80%80", "%C3"]) {
    assert.equal(id("GET", `/sandboxes/${bad}`), "get");
    assert.equal(id("GET", `/bad${bad}/x`), null);
  }
  assert.equal(id("GET", "/bad%FF/x"), "undecodable");
});

test("hasIdempotencyKey (H1) and the retry event (E1)", () => {
  const keyed = tables.operationById("refresh");
  const headers = (...pairs: [string, string][]) => pairs;
  assert.ok(hasIdempotencyKey(keyed, headers(["idempotency-KEY", "k"])));
  assert.ok(
    hasIdempotencyKey(keyed, headers(["a", ""], ["Idempotency-Key", " x "])),
  );
  assert.ok(!hasIdempotencyKey(keyed, headers(["Idempotency-Key", " \t"])));
  assert.ok(!hasIdempotencyKey(keyed, headers(["Idempotency-\u212Aey", "k"])));
  assert.ok(
    !hasIdempotencyKey(
      tables.operationById("fork"),
      headers(["Idempotency-Key", "k"]),
    ),
  );
  assert.ok(!hasIdempotencyKey(null, headers(["Idempotency-Key", "k"])));
  assert.ok(hasIdempotencyKey(keyed, new Map([["idempotency-key", "k"]])));
  const granted = decide(
    POLICY,
    input({ kind: "connect" }, { retriesUsed: 1 }),
  );
  const found = tables.classify("post", "/v1/sandboxes/x/fork?secret=1");
  assert.deepEqual(retryEvent("post", found.operation, 1, granted), {
    attempt: 2,
    reason: "connect_failure",
    delayMs: 500,
    method: "POST",
    pathTemplate: "/sandboxes/{id}/fork",
    operationId: "fork",
  });
  const none = tables.classify("patch", "/nowhere/secret");
  assert.deepEqual(retryEvent("patch", none.operation, 0, granted), {
    attempt: 1,
    reason: "connect_failure",
    delayMs: 500,
    method: "PATCH",
    pathTemplate: null,
    operationId: null,
  });
  assert.throws(
    () => retryEvent("GET", null, 0, decide(POLICY, input(status(404)))),
    RangeError,
  );
});
