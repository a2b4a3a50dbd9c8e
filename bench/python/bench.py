"""Matching bench for the generated Python module (see bench/README.md).

`cargo xtask bench` copies it next to the generated package, the folder
retry_policy/.
"""

import sys
import time
import tracemalloc
from collections.abc import Callable

import retry_policy as rp

_LETTERS = {
    rp.ReplayClass.IDEMPOTENT: "i",
    rp.ReplayClass.KEYED: "k",
    rp.ReplayClass.NON_REPLAYABLE: "n",
    rp.ReplayClass.NO_RETRY: "r",
}

# The baseline: [method, anchored regex] pairs of every operation, in table order.
_TABLE = [(op.method, op.pattern) for op in rp.OPERATIONS]
_BASE = rp.BASE_PATH


def scan(method: str, path: str) -> int:
    path = path.partition("?")[0].partition("#")[0]
    if _BASE and path.startswith(_BASE) and (len(path) == len(_BASE) or path[len(_BASE)] == "/"):
        path = path[len(_BASE):]
    for index, (m, pattern) in enumerate(_TABLE):
        if m == method and pattern.match(path):
            return index
    return -1


def calibrate(warm_ms: int, min_ms: int, run: Callable[[], None]) -> int:
    """Warm up, then double the passes until one measurement lasts ``min_ms``."""
    start = time.perf_counter_ns()
    run()
    while time.perf_counter_ns() - start < warm_ms * 1_000_000:
        run()
    rounds = 1
    while True:
        t = time.perf_counter_ns()
        for _ in range(rounds):
            run()
        if time.perf_counter_ns() - t >= min_ms * 1_000_000 or rounds >= 1 << 24:
            return rounds
        rounds *= 2


def sample(requests: int, rounds: int, run: Callable[[], None]) -> float:
    t = time.perf_counter_ns()
    for _ in range(rounds):
        run()
    return (time.perf_counter_ns() - t) / (rounds * requests)


def median(values: list[float]) -> float:
    values = sorted(values)
    return values[len(values) // 2]


def alloc_bytes(mix: list[tuple[str, str]], passes: int) -> float:
    """Bytes ``classify`` allocates per call, as ``tracemalloc`` traces them.

    For each call, the peak of traced memory during the call above the traced
    memory before it (what the call holds at its busiest, freed or not on
    return), averaged over ``passes`` passes of the whole mix. CPython allocates
    for most string operations (the path's segments, the list of them), so this
    is not zero; it must not grow with the table.
    """
    classify = rp.classify
    total = 0
    tracemalloc.start()
    for _ in range(passes):
        for m, p in mix:
            before = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            classify(m, p)
            total += tracemalloc.get_traced_memory()[1] - before
    tracemalloc.stop()
    return total / (passes * len(mix))


def main() -> int:
    if len(sys.argv) != 5:
        print("usage: bench.py MIXFILE WARM_MS MIN_MS SAMPLES", file=sys.stderr)
        return 2
    mix: list[tuple[str, str]] = []
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f.read().split("\n"):
            if line:
                m, p = line.split("\t", 1)
                mix.append((m, p))
    warm_ms, min_ms, samples = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    sink = [0]
    classify = rp.classify

    def classify_pass() -> None:
        n = 0
        for m, p in mix:
            if classify(m, p).operation is not None:
                n += 1
        sink[0] += n

    def scan_pass() -> None:
        n = 0
        for m, p in mix:
            n += scan(m, p)
        sink[0] += n

    classify_rounds = calibrate(warm_ms, min_ms, classify_pass)
    scan_rounds = calibrate(warm_ms, min_ms, scan_pass)
    # Samples alternate between the two, so that both see the same machine.
    classify_samples, scan_samples = [], []
    for _ in range(samples):
        classify_samples.append(sample(len(mix), classify_rounds, classify_pass))
        scan_samples.append(sample(len(mix), scan_rounds, scan_pass))
    classify_ns = median(classify_samples)
    scan_ns = median(scan_samples)
    # After the timing: tracing slows every allocation down.
    classify_alloc = alloc_bytes(mix, 3)
    index = {id(op): i for i, op in enumerate(rp.OPERATIONS)}
    ops, classes, scanned = [], [], []
    for m, p in mix:
        c = rp.classify(m, p)
        ops.append(str(-1 if c.operation is None else index[id(c.operation)]))
        classes.append(_LETTERS[c.replay_class])
        scanned.append(str(scan(m, p)))
    print(f"classify_ns {classify_ns:.2f}")
    print(f"scan_ns {scan_ns:.2f}")
    print(f"classify_alloc_bytes {classify_alloc:.2f}")
    print("classify_ops " + ",".join(ops))
    print("classify_classes " + "".join(classes))
    print("scan_ops " + ",".join(scanned))
    print(f"sink {sink[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
