// No regex at import, none for `classify` or `decide`: the only one the runtime builds is an
// operation's pattern, compiled when first read. Runs in its own process (node --test), so the
// runtime is imported after the counting constructor is in place.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import ts from "typescript";

let built = 0;
const original = RegExp;
globalThis.RegExp = new Proxy(original, {
  construct(target, args: [string]) {
    built += 1;
    return Reflect.construct(target, args) as object;
  },
  apply(target, _this, args: [string]) {
    built += 1;
    return Reflect.apply(target, undefined, args) as unknown;
  },
});

test("runtime.ts has no regular expression literal", () => {
  const text = readFileSync(new URL("../runtime.ts", import.meta.url), "utf8");
  const file = ts.createSourceFile("runtime.ts", text, ts.ScriptTarget.ES2020);
  const literals: string[] = [];
  const visit = (node: ts.Node): void => {
    if (node.kind === ts.SyntaxKind.RegularExpressionLiteral) {
      literals.push(node.getText(file));
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  assert.deepEqual(literals, []);
  assert.equal(text.split("new RegExp(").length - 1, 1);
});

test("patterns are compiled when first read, once", async () => {
  const { decide, retryTables } = await import("./runtime.js");
  const tables = retryTables({
    sourceSpec: "lazy.yaml",
    basePath: "",
    operations: [
      ["POST", "/things", "create", "non_replayable", null, null],
      ["GET", "/things/{id}.{ext}", "get", "idempotent", null, null],
    ],
    policy: {
      maxRetries: 3,
      initialBackoffMs: 500,
      maxBackoffMs: 30000,
      multiplier: 2,
      jitter: "full",
      retryableStatuses: [503],
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
    },
  });
  assert.equal(
    tables.classify("get", "/things/a.json?q").replayClass,
    "idempotent",
  );
  for (const retryAfter of [
    "7",
    "Sun, 06 Nov 1994 08:49:47 GMT",
    "Sunday, 06-Nov-94 08:49:47 GMT",
    "Sun Nov  6 08:49:47 1994",
    "junk",
  ]) {
    decide(tables.defaultPolicy, {
      replayClass: "idempotent",
      hasIdempotencyKey: false,
      outcome: { kind: "status", status: 503, retryAfter, retryAfterMs: "1.5" },
      retriesUsed: 0,
      elapsedMs: 0,
      previousDelayMs: 0,
      nowMs: 784111777000,
      random: 0.5,
    });
  }
  assert.equal(tables.nonReplayableOperations.length, 1);
  assert.equal(tables.operations.length, 2);
  assert.equal(built, 0, "nothing compiled before a pattern is read");
  const entry = tables.nonReplayableOperations[0];
  assert.ok(entry !== undefined);
  const [method, pattern] = entry;
  assert.equal(method, "POST");
  assert.equal(built, 1);
  assert.ok(pattern.test("/things/"));
  assert.equal(pattern, tables.operations[0]?.pattern);
  assert.equal(tables.operationById("create")?.pattern, pattern);
  assert.equal(built, 1, "compiled once, then cached");
});
