"""The reference implementation as a harness of the contract v3 lines (conformance/README.md,
"Contract v3 lines"): `python3 harness_v3.py CASEFILE` answers each `D3`, `K3`, `HP`, `Q`, `SE`
and `F` line with contract_v3.py, exactly as a language's harness answers them with its runtime.

`cargo xtask conformance-v3` runs it on every v3 vector. The expected lines come from the same
reference, so what this proves is the line format: every input travels through the xtask's
writer and this parser intact (hex, bits of doubles, absent fields, lists), and a harness written
from conformance/README.md can answer every case.
"""

import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import contract  # noqa: E402
import contract_v3 as v3  # noqa: E402

KEYS = ["max_retries", "initial_backoff_ms", "max_backoff_ms", "multiplier", "jitter", "retryable_statuses",
        "rejected_statuses", "retry_after_cap_ms", "deadline_ms", "retry_only_with_server_delay",
        "key_in_flight_statuses", "key_reused_statuses", "server_directive_headers", "retry_after_over_cap",
        "unknown_operation_class", "budget_capacity", "budget_retry_cost", "budget_timeout_cost",
        "budget_success_refund", "throttling_statuses", "throttling_initial_backoff_ms", "budget_throttling_cost",
        "stop_problem_types", "retry_problem_types", "idempotency_key_format"]
WORDS = ("jitter", "retry_after_over_cap", "unknown_operation_class", "idempotency_key_format")
HEX_LISTS = ("server_directive_headers", "stop_problem_types", "retry_problem_types")
OPTIONAL_INTS = ("deadline_ms", "throttling_initial_backoff_ms", "budget_throttling_cost")


def text(field):
    """A hex field as a string (WTF-8: lone surrogates allowed), or None for `-`."""
    if field == "-":
        return None
    return bytes.fromhex(field).decode("utf-8", "surrogatepass")


def double(field):
    return struct.unpack(">d", bytes.fromhex(field))[0]


def policy(fields):
    p = {}
    for key, field in zip(KEYS, fields):
        if key == "multiplier":
            p[key] = double(field)
        elif key in WORDS:
            p[key] = field
        elif key in HEX_LISTS:
            p[key] = [] if field == "-" else [text(h) for h in field.split(",")]
        elif key.endswith("statuses") or key == "retry_only_with_server_delay":
            p[key] = [] if field == "" else [int(s) for s in field.split(",")]
        elif key in OPTIONAL_INTS:
            p[key] = None if field == "-" else int(field)
        else:
            p[key] = int(field)
    return p


def opt_int(field):
    return None if field == "-" else int(field)


def flag(field):
    return field == "1"


def decide(name, f):
    p = policy(f[:25])
    (cls, key, pre, resumable, last_id, stream_retry, problem, kind, status, retry_after, retry_after_ms,
     directive, used, elapsed, previous, now, random, tokens, timed_out) = f[25:]
    outcome = {"failure": kind} if kind != "status" else {
        "status": int(status), "retry_after": text(retry_after), "retry_after_ms": text(retry_after_ms),
        "directive": text(directive)}
    inp = {"class": cls, "has_idempotency_key": flag(key), "has_precondition": flag(pre),
           "resumable": flag(resumable), "has_last_event_id": flag(last_id), "stream_retry": text(stream_retry),
           "problem_type": text(problem), "outcome": outcome, "retries_used": int(used), "elapsed_ms": int(elapsed),
           "previous_delay_ms": int(previous), "now_ms": int(now), "random": double(random),
           "budget_tokens": opt_int(tokens), "timed_out": flag(timed_out)}
    d = v3.decide_v3(p, inp)

    def dash(v):
        return "-" if v is None else str(v)

    return "D3\t%s\t%d\t%d\t%s\t%s\t%d\t%s" % (name, d["retry"], d["delay_ms"], d["reason"], dash(d["budget_tokens"]),
                                            d["throttled"], dash(d["server_delay_ms"]))


def budget(name, f):
    p = v3.policy_v3(policy(f[:25]))
    tokens = contract.budget_new(p)
    results = []
    for ev in (f[25].split(",") if f[25] else []):
        if ev[0] == "s":
            tokens = contract.budget_record_success(p, tokens, int(ev[1:]))
            results.append("s%d" % tokens)
            continue
        kind = {"r": "retry", "t": "timeout", "h": "throttling"}.get(ev) or text(ev[1:])
        allowed, tokens = v3.budget_try_acquire_v3(p, tokens, kind)
        results.append("%s%d" % ("y" if allowed else "n", tokens))
    return "K3\t%s\t%d\t%s" % (name, contract.budget_new(p), ",".join(results))


def answer(line):
    f = line.split("\t")
    tag, name = f[0], f[1]
    try:
        if tag == "D3":
            return decide(name, f[2:])
        if tag == "K3":
            return budget(name, f[2:])
        if tag == "HP":
            pairs = [(text(f[i]), text(f[i + 1])) for i in range(2, len(f), 2)]
            return "HP\t%s\t%d" % (name, v3.has_precondition(pairs))
        if tag == "Q":
            body = bytes.fromhex(f[4])
            t = v3.problem_type_read(text(f[2]), body, flag(f[3]))
            return "Q\t%s\t%s" % (name, "-" if t is None else t.encode("utf-8", "surrogatepass").hex())
        if tag == "SE":
            length, last_id, retry = v3.sse_scan(bytes.fromhex(f[2]))
            return "SE\t%s\t%d\t%s\t%s" % (name, length, last_id.encode("utf-8").hex(),
                                          "-" if retry is None else retry.encode("ascii").hex())
        if tag == "F":
            return "F\t%s\t%s" % (name, v3.idempotency_key_value(f[2], text(f[3])).encode("utf-8").hex())
    except contract.Invalid as e:
        return "X\t%s\t%s" % (name, e.key)
    raise SystemExit("harness_v3.py: unknown line %r" % tag)


def main(path):
    with open(path, "r", encoding="utf-8", newline="") as cases:
        for line in cases:
            line = line.rstrip("\n")
            if line:
                sys.stdout.write(answer(line) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
