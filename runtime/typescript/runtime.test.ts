// Unit tests of runtime.ts (node:test), on hand-written tables: no spec, nothing rendered.

import { test } from "node:test";
import assert from "node:assert/strict";
import { decide, retryTables, serverDelayMs } from "./runtime.js";
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
};

const ROWS: readonly OperationRow[] = [
  ["GET", "/", "root", "idempotent", null],
  ["GET", "/a/b/c", "abc", "idempotent", null],
  ["GET", "/a/{x}/d", "axd", "idempotent", null],
  ["GET", "/files/{name}.{ext}", "anyFile", "idempotent", null],
  ["GET", "/files/{name}.json", "jsonFile", "idempotent", null],
  ["GET", "/files/v{version}", "version", "idempotent", null],
  ["GET", "/files/{a}\uFF61x{b}", "halfwidthStop", "idempotent", null],
  ["GET", "/files/{a}\u{1F600}{b}", "emoji", "idempotent", null],
  ["GET", "/sandboxes/templates", "templates", "idempotent", null],
  ["DELETE", "/sandboxes/{id}", "kill", "idempotent", null],
  ["GET", "/sandboxes/{id}", "get", "idempotent", null],
  ["POST", "/sandboxes/{id}/fork", "fork", "non_replayable", null],
  ["GET", "/sandboxes/{other}", "shadowed", "no_retry", null],
  ["GET", "/space%20d/caf%C3%A9", "encoded", "idempotent", null],
  ["GET", "/bad%FF/x", "undecodable", "idempotent", null],
  ["POST", "/tokens#refresh", "refresh", "keyed", "Idempotency-Key", "/tokens"],
  ["POST", "/tokens?grant=x", "grant", "non_replayable", null, "/tokens"],
  ["GET", "/trailing/", null, "idempotent", null],
  ["POST", "/escape/a.b+c*(d)|[e]^$\\", "escape", "non_replayable", null],
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

test("patterns: literals as written and escaped, parameters [^/]+", () => {
  const pattern = (operationId: string): string =>
    tables.operationById(operationId)?.pattern.source ?? "";
  assert.equal(pattern("root"), "^\\/$");
  assert.equal(pattern("anyFile"), "^\\/files\\/[^/]+\\.[^/]+\\/?$");
  assert.equal(pattern("encoded"), "^\\/space%20d\\/caf%C3%A9\\/?$");
  assert.equal(pattern("refresh"), "^\\/tokens\\/?$");
  assert.equal(
    pattern("escape"),
    "^\\/escape\\/a\\.b\\+c\\*\\(d\\)\\|\\[e\\]\\^\\$\\\\\\/?$",
  );
  const escape = tables.operationById("escape")?.pattern;
  assert.ok(escape?.test("/escape/a.b+c*(d)|[e]^$\\/"));
  assert.ok(!escape?.test("/escape/aXb+c*(d)|[e]^$\\"));
  assert.deepEqual(
    tables.nonReplayableOperations.map(([method, p]) => [method, p.source]),
    [
      ["POST", "^\\/sandboxes\\/[^/]+\\/fork\\/?$"],
      ["POST", "^\\/tokens\\/?$"],
      ["POST", pattern("escape")],
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
