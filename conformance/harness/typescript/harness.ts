// Conformance harness for the TypeScript module: reads a case file (conformance/README.md) and
// prints one result line per case. Compiled by `cargo xtask` next to the generated index.ts and
// runtime.ts.

import { readFileSync } from "node:fs";
import {
  BASE_PATH,
  DEFAULT_RETRY_POLICY,
  NON_REPLAYABLE_OPERATIONS,
  OPERATIONS,
  SOURCE_SPEC,
  classify,
  decide,
  operationById,
} from "./index.js";
import type {
  DecisionInput,
  Jitter,
  Outcome,
  ReplayClass,
  RetryPolicy,
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
    switch (f[0]) {
      case "D":
        out.push(decideLine(f));
        break;
      case "C": {
        expectFields(f, 4);
        const result = classify(unhex(field(f, 2)), unhex(field(f, 3)));
        const id = result.operation?.operationId ?? null;
        out.push(
          [
            "C",
            field(f, 1),
            result.replayClass,
            id === null ? "-" : hex(id),
          ].join("\t"),
        );
        break;
      }
      case "I": {
        expectFields(f, 3);
        const op = operationById(unhex(field(f, 2)));
        out.push(
          op === undefined
            ? ["I", field(f, 1), "-", "-"].join("\t")
            : ["I", field(f, 1), hex(op.method), hex(op.path)].join("\t"),
        );
        break;
      }
      case "N": {
        expectFields(f, 4);
        const method = unhex(field(f, 2));
        const path = unhex(field(f, 3));
        const hit = NON_REPLAYABLE_OPERATIONS.some(
          ([m, pattern]) => m === method && pattern.test(path),
        );
        out.push(["N", field(f, 1), hit ? "1" : "0"].join("\t"));
        break;
      }
      case "T": {
        expectFields(f, 1);
        out.push(["B", hex(BASE_PATH), hex(SOURCE_SPEC)].join("\t"));
        out.push(["P", ...policyFields(DEFAULT_RETRY_POLICY)].join("\t"));
        OPERATIONS.forEach((op, index) => {
          out.push(
            [
              "O",
              String(index),
              hex(op.method),
              hex(op.path),
              op.operationId === null ? "-" : hex(op.operationId),
              op.replayClass,
              hex(patternText(op.pattern)),
            ].join("\t"),
          );
        });
        break;
      }
      default:
        throw new Malformed(`unknown line kind ${JSON.stringify(f[0])}`);
    }
  }
  return out;
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
