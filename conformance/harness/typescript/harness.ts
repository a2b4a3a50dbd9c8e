// Conformance harness for the TypeScript module: reads a case file (conformance/README.md) and
// prints one result line per case. Compiled by `cargo xtask` next to the generated index.ts and
// runtime.ts. It reads the contract v2 lines (D, C, I, D2, K, C2, L, H, E, T2, O) and N, answered
// from the safe list's entries without an idempotency header (v1's non_replayable list), and the
// contract v3's lines (D3, K3, HP, Q, SE, F: conformance/README.md, "Contract v3 lines");
// the v1 table dump T is retired (its v2 form is T2). A RetryInputError prints `X name key`.

import { readFileSync } from "node:fs";
import {
  BASE_PATH,
  DEFAULT_RETRY_POLICY,
  EventStreamScanner,
  NON_REPLAYABLE_OPERATIONS,
  OPERATIONS,
  RetryBudget,
  RetryInputError,
  SOURCE_SPEC,
  classifier,
  classify,
  decide,
  hasIdempotencyKey,
  hasPrecondition,
  idempotencyKeyValue,
  inScope,
  operationById,
  parseBudgetKind,
  problemTypeOf,
  retryEvent,
} from "./index.js";
import type {
  BudgetKind,
  Classification,
  DecisionInput,
  DecisionReason,
  IdempotencyKeyFormat,
  Jitter,
  Outcome,
  OverCapMode,
  ReplayClass,
  RetryPolicy,
  UnknownOperationClass,
} from "./index.js";

class Malformed extends Error {}

const CLASSES: readonly string[] = [
  "idempotent",
  "keyed",
  "non_replayable",
  "no_retry",
];
const JITTERS: readonly string[] = ["full", "equal", "decorrelated", "none"];
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function field(fields: readonly string[], index: number): string {
  const value = fields[index];
  if (value === undefined) {
    throw new Malformed(`missing field ${index}`);
  }
  return value;
}

function unhex(text: string): string {
  if (!/^(?:[0-9a-f]{2})*$/.test(text)) {
    throw new Malformed(`bad hex field ${JSON.stringify(text)}`);
  }
  try {
    return UTF8.decode(Buffer.from(text, "hex"));
  } catch {
    throw new Malformed(`hex field is not UTF-8: ${text}`);
  }
}

function hex(text: string): string {
  return Buffer.from(text, "utf8").toString("hex");
}

function optionalHex(text: string): string | null {
  return text === "-" ? null : unhex(text);
}

function integer(text: string): number {
  if (!/^-?[0-9]+$/.test(text)) {
    throw new Malformed(`bad integer ${JSON.stringify(text)}`);
  }
  return Number(text);
}

function optionalInteger(text: string): number | null {
  return text === "-" ? null : integer(text);
}

function double(bits: string): number {
  if (!/^[0-9a-f]{16}$/.test(bits)) {
    throw new Malformed(`bad double bits ${JSON.stringify(bits)}`);
  }
  return Buffer.from(bits, "hex").readDoubleBE(0);
}

function doubleBits(value: number): string {
  const buffer = Buffer.alloc(8);
  buffer.writeDoubleBE(value, 0);
  return buffer.toString("hex");
}

function statuses(text: string): number[] {
  return text === "" ? [] : text.split(",").map(integer);
}

function oneOf<T extends string>(text: string, allowed: readonly string[]): T {
  if (!allowed.includes(text)) {
    throw new Malformed(`unexpected value ${JSON.stringify(text)}`);
  }
  return text as T;
}

function flag(text: string): boolean {
  if (text !== "0" && text !== "1") {
    throw new Malformed(`bad flag ${JSON.stringify(text)}`);
  }
  return text === "1";
}

/** The contract's default policy (K lines change its four budget values). */
const DEFAULT_POLICY_V2: RetryPolicy = {
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

/** Neutral v2 keys: what a v1 `D` line means under contract v2. */
const NEUTRAL_V2 = {
  retryOnlyWithServerDelay: [],
  keyInFlightStatuses: [],
  keyReusedStatuses: [],
  serverDirectiveHeaders: [],
  retryAfterOverCap: "refuse",
  unknownOperationClass: "method_default",
  budgetCapacity: 500,
  budgetRetryCost: 5,
  budgetTimeoutCost: 10,
  budgetSuccessRefund: 1,
} as const;

function optionalToHex(text: string | null | undefined): string {
  return text === null || text === undefined ? "-" : hex(text);
}

/**
 * A hex field that may hold WTF-8 (lone surrogates as three bytes): the UTF-16
 * string built by hand, surrogates allowed.
 */
function wtf8(text: string): string {
  if (!/^(?:[0-9a-f]{2})*$/.test(text)) {
    throw new Malformed(`bad hex field ${JSON.stringify(text)}`);
  }
  const bytes = Buffer.from(text, "hex");
  let out = "";
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i] as number;
    let code: number;
    let n: number;
    if (b < 0x80) {
      code = b;
      n = 1;
    } else if (b >= 0xc2 && b < 0xe0) {
      code = b & 0x1f;
      n = 2;
    } else if (b >= 0xe0 && b < 0xf0) {
      code = b & 0x0f;
      n = 3;
    } else if (b >= 0xf0 && b < 0xf5) {
      code = b & 0x07;
      n = 4;
    } else {
      throw new Malformed(`hex field is not WTF-8: ${text}`);
    }
    if (i + n > bytes.length) {
      throw new Malformed(`hex field is not WTF-8: ${text}`);
    }
    for (let k = 1; k < n; k++) {
      const c = bytes[i + k] as number;
      if ((c & 0xc0) !== 0x80) {
        throw new Malformed(`hex field is not WTF-8: ${text}`);
      }
      code = (code << 6) | (c & 0x3f);
    }
    const least = [0, 0, 0x80, 0x800, 0x10000][n] as number;
    if (code < least || code > 0x10ffff) {
      throw new Malformed(`hex field is not WTF-8: ${text}`);
    }
    out += String.fromCodePoint(code);
    i += n;
  }
  return out;
}

function policyFields(policy: RetryPolicy): string[] {
  return [
    String(policy.maxRetries),
    String(policy.initialBackoffMs),
    String(policy.maxBackoffMs),
    doubleBits(policy.multiplier),
    policy.jitter,
    policy.retryableStatuses.join(","),
    policy.rejectedStatuses.join(","),
    String(policy.retryAfterCapMs),
    policy.deadlineMs === null ? "-" : String(policy.deadlineMs),
  ];
}

/**
 * The pattern text the module compiled: undoes what `RegExp#source` escapes
 * (`/` as `\/`, line terminators as `\n`, `\r`, `\u2028`, `\u2029`).
 */
function patternText(pattern: RegExp): string {
  const source = pattern.source;
  let out = "";
  for (let i = 0; i < source.length; i++) {
    const c = source[i] ?? "";
    const next = source[i + 1] ?? "";
    if (c !== "\\") {
      out += c;
    } else if (next === "/") {
      out += "/";
      i += 1;
    } else if (next === "n") {
      out += "\n";
      i += 1;
    } else if (next === "r") {
      out += "\r";
      i += 1;
    } else if (
      next === "u" &&
      /^[0-9A-Fa-f]{4}$/.test(source.slice(i + 2, i + 6))
    ) {
      out += String.fromCharCode(parseInt(source.slice(i + 2, i + 6), 16));
      i += 5;
    } else {
      out += c + next;
      i += 1;
    }
  }
  return out;
}

/** The 19 P2 fields; names go to the runtime unchecked, so that it rejects them. */
function policy2(f: readonly string[]): RetryPolicy {
  if (f.length !== 19) {
    throw new Malformed(`P2 has ${f.length} fields, expected 19`);
  }
  const headers = field(f, 12);
  return {
    maxRetries: integer(field(f, 0)),
    initialBackoffMs: integer(field(f, 1)),
    maxBackoffMs: integer(field(f, 2)),
    multiplier: double(field(f, 3)),
    jitter: field(f, 4) as Jitter,
    retryableStatuses: statuses(field(f, 5)),
    rejectedStatuses: statuses(field(f, 6)),
    retryAfterCapMs: integer(field(f, 7)),
    deadlineMs: optionalInteger(field(f, 8)),
    retryOnlyWithServerDelay: statuses(field(f, 9)),
    keyInFlightStatuses: statuses(field(f, 10)),
    keyReusedStatuses: statuses(field(f, 11)),
    serverDirectiveHeaders:
      headers === "-" ? [] : headers.split(",").map(unhex),
    retryAfterOverCap: field(f, 13) as OverCapMode,
    unknownOperationClass: field(f, 14) as UnknownOperationClass,
    budgetCapacity: integer(field(f, 15)),
    budgetRetryCost: integer(field(f, 16)),
    budgetTimeoutCost: integer(field(f, 17)),
    budgetSuccessRefund: integer(field(f, 18)),
  };
}

function policy2Fields(p: RetryPolicy): string[] {
  return [
    ...policyFields(p),
    p.retryOnlyWithServerDelay.join(","),
    p.keyInFlightStatuses.join(","),
    p.keyReusedStatuses.join(","),
    p.serverDirectiveHeaders.length === 0
      ? "-"
      : p.serverDirectiveHeaders.map(hex).join(","),
    p.retryAfterOverCap,
    p.unknownOperationClass,
    String(p.budgetCapacity),
    String(p.budgetRetryCost),
    String(p.budgetTimeoutCost),
    String(p.budgetSuccessRefund),
  ];
}

function decide2Line(f: readonly string[]): string {
  expectFields(f, 35);
  const policy = policy2(f.slice(2, 21));
  const kind = field(f, 23);
  const outcome: Outcome =
    kind === "status"
      ? {
          kind,
          status: integer(field(f, 24)),
          retryAfter: optionalHex(field(f, 25)),
          retryAfterMs: optionalHex(field(f, 26)),
          directive: optionalHex(field(f, 27)),
        }
      : ({ kind } as Outcome);
  const input: DecisionInput = {
    replayClass: field(f, 21) as ReplayClass,
    hasIdempotencyKey: flag(field(f, 22)),
    outcome,
    retriesUsed: integer(field(f, 28)),
    elapsedMs: integer(field(f, 29)),
    previousDelayMs: integer(field(f, 30)),
    nowMs: integer(field(f, 31)),
    random: double(field(f, 32)),
    budgetTokens: optionalInteger(field(f, 33)),
    timedOut: flag(field(f, 34)),
  };
  const d = decide(policy, input);
  return [
    "D2",
    field(f, 1),
    d.retry ? "1" : "0",
    String(d.delayMs),
    d.reason,
    d.budgetTokens === null ? "-" : String(d.budgetTokens),
  ].join("\t");
}

/**
 * The 25 P3 fields: P2's, then contract v3's six keys; strings go to the
 * runtime as they are (lone surrogates included), for it to check.
 */
function policy3(f: readonly string[]): RetryPolicy {
  if (f.length !== 25) {
    throw new Malformed(`P3 has ${f.length} fields, expected 25`);
  }
  const list = (text: string): string[] =>
    text === "-" ? [] : text.split(",").map(wtf8);
  return {
    ...policy2(f.slice(0, 19)),
    throttlingStatuses: statuses(field(f, 19)),
    throttlingInitialBackoffMs: optionalInteger(field(f, 20)),
    budgetThrottlingCost: optionalInteger(field(f, 21)),
    stopProblemTypes: list(field(f, 22)),
    retryProblemTypes: list(field(f, 23)),
    idempotencyKeyFormat: field(f, 24) as IdempotencyKeyFormat,
  };
}

function optionalWtf8(text: string): string | null {
  return text === "-" ? null : wtf8(text);
}

/**
 * A D3 line: P3, then class has_key has_precondition resumable
 * has_last_event_id stream_retry problem_type and D2's outcome fields.
 */
function decide3Line(f: readonly string[]): string {
  expectFields(f, 46);
  const policy = policy3(f.slice(2, 27));
  const kind = field(f, 34);
  const outcome: Outcome =
    kind === "status"
      ? {
          kind,
          status: integer(field(f, 35)),
          retryAfter: optionalHex(field(f, 36)),
          retryAfterMs: optionalHex(field(f, 37)),
          directive: optionalHex(field(f, 38)),
        }
      : ({ kind } as Outcome);
  const input: DecisionInput = {
    replayClass: field(f, 27) as ReplayClass,
    hasIdempotencyKey: flag(field(f, 28)),
    hasPrecondition: flag(field(f, 29)),
    resumable: flag(field(f, 30)),
    hasLastEventId: flag(field(f, 31)),
    streamRetry: optionalWtf8(field(f, 32)),
    problemType: optionalWtf8(field(f, 33)),
    outcome,
    retriesUsed: integer(field(f, 39)),
    elapsedMs: integer(field(f, 40)),
    previousDelayMs: integer(field(f, 41)),
    nowMs: integer(field(f, 42)),
    random: double(field(f, 43)),
    budgetTokens: optionalInteger(field(f, 44)),
    timedOut: flag(field(f, 45)),
  };
  const d = decide(policy, input);
  return [
    "D3",
    field(f, 1),
    d.retry ? "1" : "0",
    String(d.delayMs),
    d.reason,
    d.budgetTokens === null ? "-" : String(d.budgetTokens),
    d.throttled ? "1" : "0",
    d.serverDelayMs === null ? "-" : String(d.serverDelayMs),
  ].join("\t");
}

/** The bytes of a hex field, as they are (not necessarily UTF-8). */
function bytes(text: string): Uint8Array {
  if (!/^(?:[0-9a-f]{2})*$/.test(text)) {
    throw new Malformed(`bad hex field ${JSON.stringify(text)}`);
  }
  return new Uint8Array(Buffer.from(text, "hex"));
}

function budgetLine(f: readonly string[]): string {
  expectFields(f, 7);
  const budget = new RetryBudget({
    ...DEFAULT_POLICY_V2,
    budgetCapacity: integer(field(f, 2)),
    budgetRetryCost: integer(field(f, 3)),
    budgetTimeoutCost: integer(field(f, 4)),
    budgetSuccessRefund: integer(field(f, 5)),
  });
  return runBudget("K", field(f, 1), budget, field(f, 6));
}

/** A K3 line: the whole policy, and the event `h`, a throttled retry. */
function budget3Line(f: readonly string[]): string {
  expectFields(f, 28);
  const budget = new RetryBudget(policy3(f.slice(2, 27)));
  return runBudget("K3", field(f, 1), budget, field(f, 27));
}

function runBudget(
  line: "K" | "K3",
  name: string,
  budget: RetryBudget,
  events: string,
): string {
  const initial = budget.tokens;
  const results: string[] = [];
  for (const event of events === "" ? [] : events.split(",")) {
    if (
      event === "r" ||
      event === "t" ||
      (event === "h" && line === "K3") ||
      event.startsWith("a")
    ) {
      let kind: BudgetKind;
      if (event === "r") {
        kind = "retry";
      } else if (event === "t") {
        kind = "timeout";
      } else if (event === "h") {
        kind = "throttling";
      } else {
        kind = parseBudgetKind(unhex(event.slice(1)));
      }
      const allowed = budget.tryAcquire(kind);
      results.push((allowed ? "y" : "n") + String(budget.tokens));
    } else if (event.startsWith("s")) {
      budget.recordSuccess(integer(event.slice(1)));
      results.push("s" + String(budget.tokens));
    } else {
      throw new Malformed(`bad budget event ${JSON.stringify(event)}`);
    }
  }
  return [line, name, String(initial), results.join(",")].join("\t");
}

function classifierOf(base: string, unknown: string) {
  return classifier(
    base === "-" ? null : wtf8(base),
    unknown as UnknownOperationClass,
  );
}

function classification(c: Classification): string[] {
  return [c.replayClass, optionalToHex(c.operation?.operationId)];
}

function decideLine(f: readonly string[]): string {
  if (f.length !== 22) {
    throw new Malformed(`D line has ${f.length} fields, expected 22`);
  }
  const policy: RetryPolicy = {
    maxRetries: integer(field(f, 2)),
    initialBackoffMs: integer(field(f, 3)),
    maxBackoffMs: integer(field(f, 4)),
    multiplier: double(field(f, 5)),
    jitter: oneOf<Jitter>(field(f, 6), JITTERS),
    retryableStatuses: statuses(field(f, 7)),
    rejectedStatuses: statuses(field(f, 8)),
    retryAfterCapMs: integer(field(f, 9)),
    deadlineMs: optionalInteger(field(f, 10)),
    ...NEUTRAL_V2,
  };
  const kind = field(f, 13);
  let outcome: Outcome;
  if (kind === "status") {
    outcome = {
      kind,
      status: integer(field(f, 14)),
      retryAfter: optionalHex(field(f, 15)),
      retryAfterMs: optionalHex(field(f, 16)),
    };
  } else if (kind === "connect" || kind === "transport" || kind === "aborted") {
    outcome = { kind };
  } else {
    throw new Malformed(`unknown outcome ${JSON.stringify(kind)}`);
  }
  const input: DecisionInput = {
    replayClass: oneOf<ReplayClass>(field(f, 11), CLASSES),
    hasIdempotencyKey: flag(field(f, 12)),
    outcome,
    retriesUsed: integer(field(f, 17)),
    elapsedMs: integer(field(f, 18)),
    previousDelayMs: integer(field(f, 19)),
    nowMs: integer(field(f, 20)),
    random: double(field(f, 21)),
  };
  const decision = decide(policy, input);
  return [
    "D",
    field(f, 1),
    decision.retry ? "1" : "0",
    String(decision.delayMs),
    decision.reason,
  ].join("\t");
}

function expectFields(f: readonly string[], count: number): void {
  if (f.length !== count) {
    throw new Malformed(
      `${field(f, 0)} line has ${f.length} fields, expected ${count}`,
    );
  }
}

function run(lines: readonly string[]): string[] {
  const out: string[] = [];
  for (const line of lines) {
    if (line === "") {
      continue;
    }
    const f = line.split("\t");
    try {
      out.push(...runCase(f));
    } catch (e) {
      if (!(e instanceof RetryInputError)) {
        throw e;
      }
      out.push(["X", field(f, 1), e.key].join("\t"));
    }
  }
  return out;
}

function runCase(f: readonly string[]): string[] {
  switch (f[0]) {
    case "D":
      return [decideLine(f)];
    case "D2":
      return [decide2Line(f)];
    case "K":
      return [budgetLine(f)];
    case "D3":
      return [decide3Line(f)];
    case "K3":
      return [budget3Line(f)];
    case "HP": {
      if (f.length < 2 || f.length % 2 !== 0) {
        throw new Malformed("HP line needs name/value pairs");
      }
      const headers: [string, string][] = [];
      for (let i = 2; i < f.length; i += 2) {
        headers.push([wtf8(field(f, i)), wtf8(field(f, i + 1))]);
      }
      const hit = hasPrecondition(headers);
      return [["HP", field(f, 1), hit ? "1" : "0"].join("\t")];
    }
    case "Q": {
      expectFields(f, 5);
      const type = problemTypeOf(
        optionalWtf8(field(f, 2)),
        bytes(field(f, 4)),
        flag(field(f, 3)),
      );
      return [["Q", field(f, 1), optionalToHex(type)].join("\t")];
    }
    case "SE": {
      // Fed in two pieces, so that a line or a CRLF cut between reads counts.
      expectFields(f, 3);
      const data = bytes(field(f, 2));
      const scanner = new EventStreamScanner();
      const half = Math.floor(data.length / 2);
      scanner.feed(data.subarray(0, half));
      scanner.feed(data.subarray(half));
      return [
        [
          "SE",
          field(f, 1),
          String(scanner.completeBytes),
          hex(scanner.lastEventId),
          optionalToHex(scanner.retry),
        ].join("\t"),
      ];
    }
    case "F": {
      expectFields(f, 4);
      const value = idempotencyKeyValue(
        field(f, 2) as IdempotencyKeyFormat,
        unhex(field(f, 3)),
      );
      return [["F", field(f, 1), hex(value)].join("\t")];
    }
    case "C": {
      expectFields(f, 4);
      const result = classify(unhex(field(f, 2)), unhex(field(f, 3)));
      return [["C", field(f, 1), ...classification(result)].join("\t")];
    }
    case "C2": {
      expectFields(f, 6);
      const c = classifierOf(field(f, 2), field(f, 3));
      const result = c.classify(wtf8(field(f, 4)), wtf8(field(f, 5)));
      return [["C2", field(f, 1), ...classification(result)].join("\t")];
    }
    case "O": {
      expectFields(f, 4);
      const hit = inScope(wtf8(field(f, 2)), wtf8(field(f, 3)));
      return [["O", field(f, 1), hit ? "1" : "0"].join("\t")];
    }
    case "I": {
      expectFields(f, 3);
      const op = operationById(unhex(field(f, 2)));
      return [
        op === undefined
          ? ["I", field(f, 1), "-", "-"].join("\t")
          : ["I", field(f, 1), hex(op.method), hex(op.path)].join("\t"),
      ];
    }
    case "L": {
      expectFields(f, 4);
      const method = unhex(field(f, 2));
      const path = unhex(field(f, 3));
      const entry = NON_REPLAYABLE_OPERATIONS.find(
        ([m, pattern]) => m === method && pattern.test(path),
      );
      return [
        entry === undefined
          ? ["L", field(f, 1), "0", "-"].join("\t")
          : ["L", field(f, 1), "1", optionalToHex(entry[2])].join("\t"),
      ];
    }
    case "H": {
      if (f.length < 3 || f.length % 2 !== 1) {
        throw new Malformed("H line needs an operation and name/value pairs");
      }
      const op = operationById(unhex(field(f, 2)));
      const headers: [string, string][] = [];
      for (let i = 3; i < f.length; i += 2) {
        headers.push([unhex(field(f, i)), unhex(field(f, i + 1))]);
      }
      const hit = hasIdempotencyKey(op, headers);
      return [["H", field(f, 1), hit ? "1" : "0"].join("\t")];
    }
    case "E": {
      expectFields(f, 8);
      const method = unhex(field(f, 3));
      const c = classifierOf(field(f, 2), "method_default").classify(
        method,
        unhex(field(f, 4)),
      );
      const event = retryEvent(method, c.operation, integer(field(f, 5)), {
        retry: true,
        delayMs: integer(field(f, 6)),
        reason: field(f, 7) as DecisionReason,
        budgetTokens: null,
        throttled: false,
        serverDelayMs: null,
      });
      return [
        [
          "E",
          field(f, 1),
          String(event.attempt),
          event.reason,
          String(event.delayMs),
          hex(event.method),
          optionalToHex(event.pathTemplate),
          optionalToHex(event.operationId),
        ].join("\t"),
      ];
    }
    case "T2": {
      expectFields(f, 1);
      const out = [
        ["B2", hex(BASE_PATH), hex(SOURCE_SPEC)].join("\t"),
        ["P2", ...policy2Fields(DEFAULT_RETRY_POLICY)].join("\t"),
      ];
      const listed: number[] = [];
      OPERATIONS.forEach((op, index) => {
        out.push(
          [
            "O2",
            String(index),
            hex(op.method),
            hex(op.path),
            optionalToHex(op.operationId),
            op.replayClass,
            optionalToHex(op.idempotencyHeader),
          ].join("\t"),
        );
        if (op.replayClass === "non_replayable" || op.replayClass === "keyed") {
          listed.push(index);
        }
      });
      if (listed.length !== NON_REPLAYABLE_OPERATIONS.length) {
        throw new Malformed("the safe list and the operations disagree");
      }
      NON_REPLAYABLE_OPERATIONS.forEach(([method, pattern, header], i) => {
        out.push(
          [
            "L2",
            String(listed[i]),
            hex(method),
            hex(patternText(pattern)),
            optionalToHex(header),
          ].join("\t"),
        );
      });
      return out;
    }
    default:
      throw new Malformed(`unknown line kind ${JSON.stringify(f[0])}`);
  }
}

function main(): number {
  const file = process.argv[2];
  if (file === undefined) {
    process.stderr.write("usage: node harness.js CASEFILE\n");
    return 2;
  }
  const lines = readFileSync(file, "utf8").split("\n");
  let out: string[];
  try {
    out = run(lines);
  } catch (e) {
    if (e instanceof Malformed) {
      process.stderr.write(`harness: malformed case file: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
  process.stdout.write(out.map((l) => l + "\n").join(""));
  return 0;
}

process.exitCode = main();
