// Matching bench for the generated TypeScript module (see bench/README.md). Compiled by
// `cargo xtask bench` next to the generated index.ts and runtime.ts, and run by node.

import { readFileSync } from "node:fs";
import * as v8 from "node:v8";
import { BASE_PATH, OPERATIONS, classify } from "./index.js";
import type { Operation, ReplayClass } from "./index.js";

const LETTERS: Record<ReplayClass, string> = {
  idempotent: "i",
  keyed: "k",
  non_replayable: "n",
  no_retry: "r",
};

// The baseline: [method, anchored regex] pairs of every operation, in table order, as SDKs kept
// them by hand (contract v1's expressions: literals as written, regex syntax escaped, `[^/]+`
// per parameter, one optional trailing slash). `Operation.pattern` is the safe-list expression
// now, which also accepts percent-encoded literals.
const REGEX_SYNTAX = "\\.+*?()|[]{}^$";

function handWritten(path: string): RegExp {
  let route = path;
  for (const stop of ["?", "#"]) {
    const at = route.indexOf(stop);
    if (at >= 0) {
      route = route.slice(0, at);
    }
  }
  let rest = route.startsWith("/") ? route.slice(1) : route;
  if (rest.endsWith("/")) {
    rest = rest.slice(0, -1);
  }
  if (rest === "") {
    return new RegExp("^/$");
  }
  let out = "^";
  for (const segment of rest.split("/")) {
    out += "/";
    let at = 0;
    while (at < segment.length) {
      const open = segment.indexOf("{", at);
      const literal = segment.slice(at, open < 0 ? segment.length : open);
      for (const c of literal) {
        out += REGEX_SYNTAX.includes(c) ? "\\" + c : c;
      }
      if (open < 0) {
        break;
      }
      out += "[^/]+";
      const close = segment.indexOf("}", open);
      at = close < 0 ? segment.length : close + 1;
    }
  }
  return new RegExp(out + "/?$");
}

const METHODS: string[] = OPERATIONS.map((op) => op.method);
const PATTERNS: RegExp[] = OPERATIONS.map((op) => handWritten(op.path));

function scan(method: string, path: string): number {
  const cut = path.search(/[?#]/);
  if (cut >= 0) {
    path = path.slice(0, cut);
  }
  if (
    BASE_PATH !== "" &&
    path.startsWith(BASE_PATH) &&
    (path.length === BASE_PATH.length || path[BASE_PATH.length] === "/")
  ) {
    path = path.slice(BASE_PATH.length);
  }
  for (let i = 0; i < METHODS.length; i++) {
    if (METHODS[i] === method && (PATTERNS[i] as RegExp).test(path)) {
      return i;
    }
  }
  return -1;
}

function now(): bigint {
  return process.hrtime.bigint();
}

/** Warms up, then doubles the passes until one measurement lasts `minMs`. */
function calibrate(warmMs: number, minMs: number, run: () => void): number {
  const start = now();
  run();
  while (now() - start < BigInt(warmMs) * 1000000n) {
    run();
  }
  let rounds = 1;
  for (;;) {
    const t = now();
    for (let r = 0; r < rounds; r++) {
      run();
    }
    if (now() - t >= BigInt(minMs) * 1000000n || rounds >= 1 << 24) {
      return rounds;
    }
    rounds *= 2;
  }
}

function sample(requests: number, rounds: number, run: () => void): number {
  const t = now();
  for (let r = 0; r < rounds; r++) {
    run();
  }
  return Number(now() - t) / (rounds * requests);
}

function median(values: number[]): number {
  values.sort((a, b) => a - b);
  return values[Math.floor(values.length / 2)] as number;
}

/**
 * The V8 heap bytes `pass` allocates, from `used_heap_size` before and after
 * `passes` passes, or `null` when a garbage collection ran in between (the
 * difference would then be meaningless); `v8.GCProfiler` lists every
 * collection of the window.
 */
function heapGrowth(passes: number, pass: () => void): number | null {
  const profiler = new v8.GCProfiler();
  profiler.start();
  const before = v8.getHeapStatistics().used_heap_size;
  for (let r = 0; r < passes; r++) {
    pass();
  }
  const after = v8.getHeapStatistics().used_heap_size;
  return profiler.stop().statistics.length === 0 ? after - before : null;
}

/**
 * Bytes `classify` allocates per call on the V8 heap, averaged over passes of
 * the mix, or `-`. V8 has no per-call allocation counter, but without a
 * garbage collection the heap only grows, by exactly what was allocated: so
 * the growth over windows in which `v8.GCProfiler` saw no collection, less the
 * growth of an empty window (the measuring's own objects), is what the calls
 * allocated. A window with a collection is measured again (with fewer passes
 * after the first few); `-` when there is no `GCProfiler` (Node < 18.15) or no
 * window stayed free of collections. Off-heap memory (array buffers' backing
 * stores) is not counted; `classify` creates none.
 */
function allocBytesPerCall(requests: number, pass: () => void): string {
  if (typeof v8.GCProfiler !== "function") {
    return "-";
  }
  const median5 = (passes: number): number | null => {
    const growths: number[] = [];
    for (let attempt = 0; attempt < 50 && growths.length < 5; attempt++) {
      const growth = heapGrowth(passes, pass);
      if (growth !== null) {
        growths.push(growth);
      }
    }
    return growths.length < 5 ? null : median(growths);
  };
  const empty = median5(0);
  let passes = Math.max(1, Math.floor(20000 / requests));
  for (;;) {
    const full = median5(passes);
    if (empty !== null && full !== null) {
      return ((full - empty) / (passes * requests)).toFixed(1);
    }
    if (passes === 1 || empty === null) {
      return "-";
    }
    passes = Math.floor(passes / 2);
  }
}

function main(): number {
  const args = process.argv.slice(2);
  if (args.length !== 4) {
    process.stderr.write("usage: bench MIXFILE WARM_MS MIN_MS SAMPLES\n");
    return 2;
  }
  const methods: string[] = [];
  const paths: string[] = [];
  for (const line of readFileSync(args[0] as string, "utf8").split("\n")) {
    if (line === "") continue;
    const tab = line.indexOf("\t");
    methods.push(line.slice(0, tab));
    paths.push(line.slice(tab + 1));
  }
  const [warmMs, minMs, samples] = args.slice(1).map(Number) as [
    number,
    number,
    number,
  ];
  const n = methods.length;
  let sink = 0;
  const classifyPass = (): void => {
    for (let i = 0; i < n; i++) {
      if (classify(methods[i] as string, paths[i] as string).operation !== null) {
        sink++;
      }
    }
  };
  const scanPass = (): void => {
    for (let i = 0; i < n; i++) {
      sink += scan(methods[i] as string, paths[i] as string);
    }
  };
  const classifyRounds = calibrate(warmMs, minMs, classifyPass);
  const scanRounds = calibrate(warmMs, minMs, scanPass);
  // Samples alternate between the two, so that both see the same machine.
  const classifySamples: number[] = [];
  const scanSamples: number[] = [];
  for (let s = 0; s < samples; s++) {
    classifySamples.push(sample(n, classifyRounds, classifyPass));
    scanSamples.push(sample(n, scanRounds, scanPass));
  }
  const classifyNs = median(classifySamples);
  const scanNs = median(scanSamples);
  // After the timing, as in the other languages (bench/README.md).
  const allocBytes = allocBytesPerCall(n, classifyPass);
  const index = new Map<Operation, number>();
  OPERATIONS.forEach((op, i) => index.set(op, i));
  const ops: number[] = [];
  let classes = "";
  const scanned: number[] = [];
  for (let i = 0; i < n; i++) {
    const c = classify(methods[i] as string, paths[i] as string);
    ops.push(c.operation === null ? -1 : (index.get(c.operation) as number));
    classes += LETTERS[c.replayClass];
    scanned.push(scan(methods[i] as string, paths[i] as string));
  }
  process.stdout.write(
    `classify_ns ${classifyNs.toFixed(2)}\nscan_ns ${scanNs.toFixed(2)}\n` +
      `classify_alloc_bytes ${allocBytes}\n` +
      `classify_ops ${ops.join(",")}\nclassify_classes ${classes}\n` +
      `scan_ops ${scanned.join(",")}\nsink ${sink}\n`,
  );
  return 0;
}

process.exitCode = main();
