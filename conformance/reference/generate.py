#!/usr/bin/env python3
"""Writes conformance/vectors/decide.json and conformance/vectors/classify.json.

    python3 conformance/reference/generate.py              # write both files
    python3 conformance/reference/generate.py --check      # fail if a written file is stale
    python3 conformance/reference/generate.py --check-cli  # also compare the operation tables
                                                           # below with `retrygen list`

decide.json: cases enumerated systematically below, their expected values computed by
contract.py, plus HAND_DECIDE: cases whose expected values were written by hand (every example of
docs/contract.md section 4 and more); the script fails unless contract.py agrees with each.

classify.json: every case is written by hand with its expected value (CLASSIFY_CASES,
LOOKUP_CASES); the script fails unless contract.py's reading of section 2, run over
the operation tables below (themselves checked against `retrygen list` by --check-cli), agrees.

Deterministic: no clock, no randomness (every `random` input is a value written here), output
in a fixed order, one case per line.
"""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.dont_write_bytecode = True  # no __pycache__ beside the sources
sys.path.insert(0, HERE)

import contract  # noqa: E402
import generate_v2  # noqa: E402
import generate_v3  # noqa: E402

DECIDE_JSON = os.path.join(ROOT, "conformance", "vectors", "decide.json")
CLASSIFY_JSON = os.path.join(ROOT, "conformance", "vectors", "classify.json")

# Sun, 06 Nov 1994 08:49:37 GMT, the contract's example clock.
NOW = 784111777000
# The largest double below 1.0 (1 - 2**-53).
ALMOST_ONE = 0.9999999999999999
assert ALMOST_ONE == 1.0 - 2.0**-53

POLICY_KEYS = list(contract.DEFAULT_POLICY)


class Failure(Exception):
    pass


# =============================================================================================
# decide
# =============================================================================================


def status(code, retry_after=None, retry_after_ms=None):
    return {"status": code, "retry_after": retry_after, "retry_after_ms": retry_after_ms}


def failure(kind, **headers):
    out = {"failure": kind}
    out.update(headers)  # only for the "failures have no server delay" cases
    return out


def decide_case(name, outcome, policy=None, cls="idempotent", key=False, retries_used=0, elapsed_ms=0,
                previous_delay_ms=0, now_ms=NOW, random=0.5):
    policy = dict(policy or {})
    for k in policy:
        if k not in contract.DEFAULT_POLICY:
            raise Failure("%s: unknown policy key %s" % (name, k))
    # Only the keys that differ from the defaults, in the contract's order.
    compact = {k: policy[k] for k in POLICY_KEYS if k in policy and policy[k] != contract.DEFAULT_POLICY[k]}
    if "multiplier" in compact:
        compact["multiplier"] = float(compact["multiplier"])
    return {
        "name": name,
        "kind": "decide",
        "policy": compact,
        "input": {
            "class": cls,
            "has_idempotency_key": key,
            "outcome": outcome,
            "retries_used": retries_used,
            "elapsed_ms": elapsed_ms,
            "previous_delay_ms": previous_delay_ms,
            "now_ms": now_ms,
            "random": random,
        },
    }


def expect(retry, delay_ms, reason):
    return {"retry": retry, "delay_ms": delay_ms, "reason": reason}


def retry(delay_ms, reason):
    return expect(True, delay_ms, reason)


def stop(reason):
    return expect(False, 0, reason)


# ---------------------------------------------------------------------------------------------
# Hand-written decide cases: inputs and expectations both written here, checked against
# contract.py. Section 4 first, verbatim.
# ---------------------------------------------------------------------------------------------

HAND_DECIDE = [
    # docs/contract.md section 4: default policy, random 0.5, now_ms 784111777000.
    (decide_case("example: non_replayable 503", status(503), cls="non_replayable"), stop("not_replayable")),
    (decide_case("example: non_replayable 429 (full jitter 0.5 * 500)", status(429), cls="non_replayable"),
     retry(250, "rejected_status")),
    (decide_case("example: non_replayable connect after 2 retries (0.5 * 500 * 2 * 2)", failure("connect"),
                 cls="non_replayable", retries_used=2), retry(1000, "connect_failure")),
    (decide_case("example: non_replayable transport", failure("transport"), cls="non_replayable"),
     stop("not_replayable")),
    (decide_case("example: keyed with key transport", failure("transport"), cls="keyed", key=True),
     retry(250, "transport_failure")),
    (decide_case("example: keyed without key 502", status(502), cls="keyed"), stop("not_replayable")),
    (decide_case("example: idempotent 503 Retry-After 7", status(503, "7"), retries_used=1),
     retry(7000, "retryable_status")),
    (decide_case("example: idempotent 503 Retry-After date 10 s ahead",
                 status(503, "Sun, 06 Nov 1994 08:49:47 GMT")), retry(10000, "retryable_status")),
    (decide_case("example: idempotent 503 Retry-After past date", status(503, "Sun, 06 Nov 1994 08:49:27 GMT")),
     retry(0, "retryable_status")),
    (decide_case("example: idempotent 503 Retry-After 120 over the cap", status(503, "120")),
     stop("retry_after_over_cap")),
    (decide_case("example: idempotent 503 Retry-After soon (ignored)", status(503, "soon")),
     retry(250, "retryable_status")),
    (decide_case("example: idempotent 503 retry-after-ms 1500.9 wins over Retry-After 9",
                 status(503, "9", "1500.9")), retry(1500, "retryable_status")),
    (decide_case("example: idempotent 500 exhausted", status(500), retries_used=3), stop("exhausted")),
    (decide_case("example: idempotent 404", status(404)), stop("status_not_retryable")),
    (decide_case("example: no_retry connect", failure("connect"), cls="no_retry"), stop("no_retry_operation")),
    (decide_case("example: aborted (idempotent)", failure("aborted")), stop("aborted")),
    (decide_case("example: aborted (no_retry)", failure("aborted"), cls="no_retry"), stop("aborted")),
    (decide_case("example: aborted (keyed with key)", failure("aborted"), cls="keyed", key=True), stop("aborted")),
    (decide_case("example: aborted (non_replayable)", failure("aborted"), cls="non_replayable"), stop("aborted")),
    (decide_case("example: deadline 1000, elapsed 900 (900 + 250 > 1000)", status(503),
                 policy={"deadline_ms": 1000}, elapsed_ms=900), stop("deadline")),
    # Section 4's backoff line: random 0.5, initial 500, max 30000, multiplier 2 (max_retries
    # raised so that retries_used 6 and 7 are not exhausted).
    (decide_case("example: backoff full r0", failure("connect"), policy={"max_retries": 10}), retry(250, "connect_failure")),
    (decide_case("example: backoff full r1", failure("connect"), policy={"max_retries": 10}, retries_used=1),
     retry(500, "connect_failure")),
    (decide_case("example: backoff full r2", failure("connect"), policy={"max_retries": 10}, retries_used=2),
     retry(1000, "connect_failure")),
    (decide_case("example: backoff full r3", failure("connect"), policy={"max_retries": 10}, retries_used=3),
     retry(2000, "connect_failure")),
    (decide_case("example: backoff equal r0", failure("connect"), policy={"max_retries": 10, "jitter": "equal"}),
     retry(375, "connect_failure")),
    (decide_case("example: backoff equal r1", failure("connect"), policy={"max_retries": 10, "jitter": "equal"},
                 retries_used=1), retry(750, "connect_failure")),
    (decide_case("example: backoff equal r2", failure("connect"), policy={"max_retries": 10, "jitter": "equal"},
                 retries_used=2), retry(1500, "connect_failure")),
    (decide_case("example: backoff none r0", failure("connect"), policy={"max_retries": 10, "jitter": "none"}),
     retry(500, "connect_failure")),
    (decide_case("example: backoff none r1", failure("connect"), policy={"max_retries": 10, "jitter": "none"},
                 retries_used=1), retry(1000, "connect_failure")),
    (decide_case("example: backoff none r2", failure("connect"), policy={"max_retries": 10, "jitter": "none"},
                 retries_used=2), retry(2000, "connect_failure")),
    (decide_case("example: backoff full r6 capped (0.5 * 30000)", failure("connect"), policy={"max_retries": 10},
                 retries_used=6), retry(15000, "connect_failure")),
    (decide_case("example: backoff full r7 capped", failure("connect"), policy={"max_retries": 10}, retries_used=7),
     retry(15000, "connect_failure")),
    (decide_case("example: backoff full r5 not yet capped (0.5 * 16000)", failure("connect"),
                 policy={"max_retries": 10}, retries_used=5), retry(8000, "connect_failure")),

    # --- more, computed by hand ---
    # floor, not round: 0.9999999999999999 * 500 = 499.99999999999994
    (decide_case("hand: full jitter almost-one floors to 499", failure("connect"), random=ALMOST_ONE),
     retry(499, "connect_failure")),
    # 0.9999999999999999 * 250 = 249.99999999999997, but 250 + 249.99999999999997 is exactly
    # halfway between two doubles and rounds (to even) to 500.0: equal jitter can reach the base.
    (decide_case("hand: equal jitter almost-one rounds up to the base", failure("connect"), policy={"jitter": "equal"},
                 random=ALMOST_ONE), retry(500, "connect_failure")),
    (decide_case("hand: full jitter random 0 gives 0", failure("connect"), random=0.0), retry(0, "connect_failure")),
    (decide_case("hand: equal jitter random 0 gives base/2", failure("connect"), policy={"jitter": "equal"},
                 random=0.0), retry(250, "connect_failure")),
    # 333 * 1.5 = 499.5 -> 499
    (decide_case("hand: multiplier 1.5 on 333 floors 499.5", failure("connect"),
                 policy={"jitter": "none", "initial_backoff_ms": 333, "multiplier": 1.5}, retries_used=1),
     retry(499, "connect_failure")),
    # 333 * 1.5 * 1.5 = 749.25 -> equal: 374.625 + 0.5 * 374.625 = 561.9375 -> 561
    (decide_case("hand: equal jitter on 749.25", failure("connect"),
                 policy={"jitter": "equal", "initial_backoff_ms": 333, "multiplier": 1.5}, retries_used=2),
     retry(561, "connect_failure")),
    # Repeated multiplication, not pow: 100 * 1.7 * 1.7 = 289.0 exactly in doubles, while
    # 100 * 1.7**2 = 288.99999999999994.
    (decide_case("hand: multiplier 1.7 by repeated multiplication (289, not 288)", failure("connect"),
                 policy={"jitter": "none", "initial_backoff_ms": 100, "multiplier": 1.7}, retries_used=2),
     retry(289, "connect_failure")),
    # 500 * 1.2 * 1.2 * 1.2 = 864.0 in doubles; 500 * 1.2**3 = 863.9999999999999
    (decide_case("hand: multiplier 1.2 by repeated multiplication (864, not 863)", failure("connect"),
                 policy={"jitter": "none", "multiplier": 1.2, "max_retries": 5}, retries_used=3), retry(864, "connect_failure")),
    # 1000 * 3.3 * 3.3 = 10890.0; 1000 * 3.3**2 = 10889.999999999998
    (decide_case("hand: multiplier 3.3 by repeated multiplication (10890)", failure("connect"),
                 policy={"jitter": "none", "initial_backoff_ms": 1000, "multiplier": 3.3}, retries_used=2),
     retry(10890, "connect_failure")),
    # decorrelated: 500 + 0.5 * (1000 * 3 - 500) = 1750
    (decide_case("hand: decorrelated from previous 1000", failure("connect"), policy={"jitter": "decorrelated"},
                 previous_delay_ms=1000), retry(1750, "connect_failure")),
    # previous 0 means initial: 500 + 0.5 * (1500 - 500) = 1000
    (decide_case("hand: decorrelated first retry uses initial", failure("connect"),
                 policy={"jitter": "decorrelated"}), retry(1000, "connect_failure")),
    # 500 + 0.5 * (30000 * 3 - 500) = 45250 -> capped at 30000
    (decide_case("hand: decorrelated capped at max", failure("connect"), policy={"jitter": "decorrelated"},
                 previous_delay_ms=30000), retry(30000, "connect_failure")),
    # previous below initial/3: 500 + 0.5 * (300 - 500) = 400
    (decide_case("hand: decorrelated below initial", failure("connect"), policy={"jitter": "decorrelated"},
                 previous_delay_ms=100), retry(400, "connect_failure")),
    # 100 + 0.9999999999999999 * (300 - 100): 199.99999999999997 + 100 rounds to 300.0 in doubles
    # (the order initial + random * (...) matters: initial * (1 - random) + ... gives 299).
    (decide_case("hand: decorrelated operation order (300)", failure("connect"),
                 policy={"jitter": "decorrelated", "initial_backoff_ms": 100}, previous_delay_ms=100,
                 random=ALMOST_ONE), retry(300, "connect_failure")),
    # decorrelated ignores retries_used and base
    (decide_case("hand: decorrelated ignores retries_used", failure("connect"),
                 policy={"jitter": "decorrelated", "max_retries": 10}, retries_used=9, previous_delay_ms=1000),
     retry(1750, "connect_failure")),
    # Server delays are not jittered.
    (decide_case("hand: Retry-After is used as is, no jitter", status(503, "3"), random=ALMOST_ONE),
     retry(3000, "retryable_status")),
    (decide_case("hand: Retry-After 0", status(503, "0")), retry(0, "retryable_status")),
    (decide_case("hand: Retry-After -5 means 0", status(503, "-5")), retry(0, "retryable_status")),
    (decide_case("hand: Retry-After 60 equals the cap (allowed)", status(503, "60")), retry(60000, "retryable_status")),
    (decide_case("hand: Retry-After 61 over the cap", status(503, "61")), stop("retry_after_over_cap")),
    (decide_case("hand: retry-after-ms 60001 over the cap", status(503, None, "60001")), stop("retry_after_over_cap")),
    (decide_case("hand: retry-after-ms 60000 equals the cap", status(503, None, "60000")),
     retry(60000, "retryable_status")),
    (decide_case("hand: Retry-After 7.5 (fraction) ignored", status(503, "7.5")), retry(250, "retryable_status")),
    (decide_case("hand: Retry-After with spaces and tabs", status(503, " \t7\t ")), retry(7000, "retryable_status")),
    (decide_case("hand: Retry-After 16 digits over any cap", status(503, "1000000000000000"),
                 policy={"retry_after_cap_ms": 86400000}), stop("retry_after_over_cap")),
    (decide_case("hand: Retry-After 0000000000000007 (16 digits with leading zeros)", status(503, "0000000000000007")),
     stop("retry_after_over_cap")),
    (decide_case("hand: Retry-After 000000000000007 (15 digits) is 7 s", status(503, "000000000000007")),
     retry(7000, "retryable_status")),
    (decide_case("hand: Retry-After -0000000000000001 (negative huge) means 0", status(503, "-0000000000000001")),
     retry(0, "retryable_status")),
    (decide_case("hand: retry-after-ms -5 wins over Retry-After 9", status(503, "9", "-5")),
     retry(0, "retryable_status")),
    (decide_case("hand: invalid retry-after-ms falls back to Retry-After", status(503, "2", "soon")),
     retry(2000, "retryable_status")),
    # IMF-fixdate at the cap: 08:50:37 is 60 s after now.
    (decide_case("hand: HTTP-date exactly at the cap", status(503, "Sun, 06 Nov 1994 08:50:37 GMT")),
     retry(60000, "retryable_status")),
    (decide_case("hand: HTTP-date 1 ms over the cap", status(503, "Sun, 06 Nov 1994 08:50:37 GMT"),
                 now_ms=NOW - 1), stop("retry_after_over_cap")),
    # Second 60 counts as 60 s: 08:49:60 = 08:50:00, 23 s after now.
    (decide_case("hand: second 60 accepted", status(503, "Sun, 06 Nov 1994 08:49:60 GMT")),
     retry(23000, "retryable_status")),
    (decide_case("hand: RFC 850 date", status(503, "Sunday, 06-Nov-94 08:49:47 GMT")), retry(10000, "retryable_status")),
    (decide_case("hand: asctime single-digit day", status(503, "Sun Nov  6 08:49:47 1994")),
     retry(10000, "retryable_status")),
    # Weekday not checked against the date (6 Nov 1994 was a Sunday).
    (decide_case("hand: wrong weekday for the date still accepted", status(503, "Wed, 06 Nov 1994 08:49:47 GMT")),
     retry(10000, "retryable_status")),
    (decide_case("hand: lower-case gmt is invalid (ignored)", status(503, "Sun, 06 Nov 1994 08:49:47 gmt")),
     retry(250, "retryable_status")),
    (decide_case("hand: Feb 29 1995 is invalid (ignored)", status(503, "Wed, 29 Feb 1995 00:00:00 GMT")),
     retry(250, "retryable_status")),
    (decide_case("hand: Feb 29 1992 is valid (past, 0)", status(503, "Sat, 29 Feb 1992 00:00:00 GMT")),
     retry(0, "retryable_status")),
    # Leap day arithmetic: now = 2000-02-29 23:59:30 (951868770000); Mar 1 2000 is 30 s later.
    (decide_case("hand: across the 2000 leap day", status(503, "Wed, 01 Mar 2000 00:00:00 GMT"), now_ms=951868770000),
     retry(30000, "retryable_status")),
    # 2100 is not a leap year: now = 2100-02-28 23:59:30 (4107542370000).
    (decide_case("hand: across Feb 28 2100 (not a leap year)", status(503, "Mon, 01 Mar 2100 00:00:00 GMT"),
                 now_ms=4107542370000), retry(30000, "retryable_status")),
    # RFC 850 50-year rule with now = 2024-06-01 (1717200000000): 74 -> 2074 (not more than 50
    # years after 2024, stays, far future), 75 -> 2075 > 2074 -> 1975 (past).
    (decide_case("hand: RFC 850 year 74 seen from 2024 is 2074", status(503, "Tuesday, 31-Dec-74 00:00:00 GMT"),
                 now_ms=1717200000000), stop("retry_after_over_cap")),
    (decide_case("hand: RFC 850 year 75 seen from 2024 is 1975", status(503, "Wednesday, 01-Jan-75 00:00:00 GMT"),
                 now_ms=1717200000000), retry(0, "retryable_status")),
    # now = 1994: 30 -> 1930 (the century of now; not 2030 as strptime's pivot would say).
    (decide_case("hand: RFC 850 year 30 seen from 1994 is 1930", status(503, "Thursday, 01-Jan-30 00:00:00 GMT")),
     retry(0, "retryable_status")),
    # now = 2090-01-01 (3786912000000): 10 -> 2010, never moved forward to 2110.
    (decide_case("hand: RFC 850 year 10 seen from 2090 is 2010", status(503, "Friday, 01-Jan-10 00:00:00 GMT"),
                 now_ms=3786912000000), retry(0, "retryable_status")),
    # now = 1899-12-31 23:59:59 (-2208988801000, before the epoch): its year is 1899, so 00 is
    # 1800 (past). Truncating division would take 1900 and answer 1000.
    (decide_case("hand: RFC 850 year 00 seen from 1899-12-31 (negative now_ms)",
                 status(503, "Monday, 01-Jan-00 00:00:00 GMT"), now_ms=-2208988801000), retry(0, "retryable_status")),
    (decide_case("hand: IMF-fixdate with negative now_ms", status(503, "Thu, 01 Jan 1970 00:00:00 GMT"), now_ms=-1000),
     retry(1000, "retryable_status")),
    # Order of rules.
    (decide_case("hand: aborted beats no_retry and exhausted", failure("aborted"), cls="no_retry",
                 policy={"max_retries": 0}), stop("aborted")),
    (decide_case("hand: no_retry beats exhausted", status(503), cls="no_retry", policy={"max_retries": 0}),
     stop("no_retry_operation")),
    (decide_case("hand: exhausted beats status_not_retryable", status(404), retries_used=3), stop("exhausted")),
    (decide_case("hand: max_retries 0 disables retries", failure("connect"), policy={"max_retries": 0}),
     stop("exhausted")),
    (decide_case("hand: over the cap beats the deadline", status(503, "120"), policy={"deadline_ms": 1000},
                 elapsed_ms=5000), stop("retry_after_over_cap")),
    (decide_case("hand: server delay reaching the deadline exactly", status(503, "2"), policy={"deadline_ms": 5000},
                 elapsed_ms=3000), retry(2000, "retryable_status")),
    (decide_case("hand: server delay 1 ms past the deadline", status(503, "2"), policy={"deadline_ms": 5000},
                 elapsed_ms=3001), stop("deadline")),
    (decide_case("hand: elapsed past the deadline stops even with delay 0", status(503, "0"),
                 policy={"deadline_ms": 5000}, elapsed_ms=5001), stop("deadline")),
    (decide_case("hand: status in both lists is rejected first", status(503), cls="non_replayable",
                 policy={"rejected_statuses": [503]}), retry(250, "rejected_status")),
    (decide_case("hand: empty retryable list", status(503), policy={"retryable_statuses": []}),
     stop("status_not_retryable")),
    (decide_case("hand: empty rejected list makes 429 not replayable", status(429), cls="non_replayable",
                 policy={"rejected_statuses": []}), stop("not_replayable")),
    (decide_case("hand: Retry-After on a status that is not retried", status(404, "1")), stop("status_not_retryable")),
    (decide_case("hand: huge Retry-After on a status that is not retried", status(404, "99999999999999999")),
     stop("status_not_retryable")),
    (decide_case("hand: Retry-After on a 429 rejected for non_replayable", status(429, "3"), cls="non_replayable"),
     retry(3000, "rejected_status")),
    (decide_case("hand: keyed without key on 429 (rejected) retries", status(429), cls="keyed"),
     retry(250, "rejected_status")),
    (decide_case("hand: connect failure ignores a Retry-After the adapter passed", failure("connect", retry_after="120"),
                 cls="non_replayable"), retry(250, "connect_failure")),
]


# ---------------------------------------------------------------------------------------------
# Systematically enumerated decide cases (expected values from contract.py)
# ---------------------------------------------------------------------------------------------


def key_label(cls, key):
    return "%s %s key" % (cls, "with" if key else "without")


OUTCOMES = [
    ("connect", failure("connect")),
    ("transport", failure("transport")),
    ("aborted", failure("aborted")),
    ("503 (retryable)", status(503)),
    ("429 (rejected and retryable)", status(429)),
    ("408 (retryable)", status(408)),
    ("404 (neither)", status(404)),
    ("599 (neither)", status(599)),
]


def gen_matrix():
    """Every class x has_key x outcome kind, fresh (retries_used 0) and exhausted (3 of 3)."""
    out = []
    for cls in contract.CLASSES:
        for key in (False, True):
            for label, outcome in OUTCOMES:
                for retries_used in (0, 3):
                    name = "matrix: %s, %s, retries_used %d" % (key_label(cls, key), label, retries_used)
                    out.append(decide_case(name, outcome, cls=cls, key=key, retries_used=retries_used))
    return out


def gen_exhaustion():
    out = []
    for max_retries in (0, 1, 2, 5, 100):
        for used in (max_retries - 1, max_retries, max_retries + 1):
            if used < 0:
                continue
            for label, outcome in (("connect", failure("connect")), ("503", status(503)), ("aborted", failure("aborted"))):
                name = "exhaustion: max_retries %d, retries_used %d, %s" % (max_retries, used, label)
                out.append(decide_case(name, outcome, policy={"max_retries": max_retries, "max_backoff_ms": 86400000},
                                       retries_used=used))
    return out


def gen_backoff_table():
    """Every jitter but decorrelated x multipliers 1.0/1.5/2.0/3.0 x retries_used 0..12 x random.
    initial 333 makes halves and multiples non-integers; max 20000 is reached mid-table."""
    out = []
    for jitter in ("full", "equal", "none"):
        for multiplier in (1.0, 1.5, 2.0, 3.0):
            if jitter == "none":
                randoms = (0.5,)  # unused by this jitter
            else:
                randoms = {1.0: (ALMOST_ONE,), 1.5: (0.0, 0.5, ALMOST_ONE), 2.0: (0.5, ALMOST_ONE),
                           3.0: (ALMOST_ONE,)}[multiplier]
            for used in range(13):
                for r in randoms:
                    policy = {"max_retries": 20, "initial_backoff_ms": 333, "max_backoff_ms": 20000,
                              "multiplier": multiplier, "jitter": jitter}
                    name = "backoff: %s, multiplier %s, retries_used %d, random %r" % (jitter, multiplier, used, r)
                    # Alternate the eligible outcomes so backoff is exercised for each of them.
                    outcome, cls = [
                        (failure("connect"), "non_replayable"),
                        (failure("transport"), "idempotent"),
                        (status(503), "idempotent"),
                        (status(429), "non_replayable"),
                    ][used % 4]
                    out.append(decide_case(name, outcome, policy=policy, cls=cls, retries_used=used, random=r))
    return out


def gen_decorrelated():
    out = []
    for initial, maximum in ((333, 20000), (500, 30000)):
        for prev in (0, 1, 100, 111, 333, 500, 1000, 6666, 6667, 6778, 20000, 86400000):
            for r in (0.0, 0.5, ALMOST_ONE):
                policy = {"initial_backoff_ms": initial, "max_backoff_ms": maximum, "jitter": "decorrelated"}
                name = "decorrelated: initial %d, max %d, previous_delay_ms %d, random %r" % (initial, maximum, prev, r)
                out.append(decide_case(name, failure("connect"), policy=policy, cls="keyed", previous_delay_ms=prev,
                                       random=r))
    return out


def gen_float_details():
    """Inputs where the exact order of double operations decides the integer delay."""
    out = []
    # (initial, multiplier, retries_used): repeated multiplication differs from pow here.
    for initial, multiplier, used in ((100, 1.7, 2), (100, 3.3, 2), (500, 1.2, 3), (500, 1.7, 2), (500, 3.3, 2),
                                      (1000, 1.2, 3), (1000, 1.7, 2), (1000, 1.7, 3), (1000, 1.9, 3),
                                      (1000, 3.3, 2), (100, 1.1, 1), (100, 1.1, 5), (777, 9.99, 3), (1, 10.0, 7)):
        policy = {"max_retries": 10, "initial_backoff_ms": initial, "max_backoff_ms": 86400000,
                  "multiplier": multiplier, "jitter": "none"}
        name = "float: none, initial %d, multiplier %r, retries_used %d" % (initial, multiplier, used)
        out.append(decide_case(name, failure("connect"), policy=policy, retries_used=used))
    # decorrelated: initial + random * (prev * 3 - initial), in that order.
    for initial, prev, r in ((1, 1, ALMOST_ONE), (1, 1, 0.49999999999999994), (1, 7, 0.65), (100, 100, ALMOST_ONE),
                             (100, 100, 0.49999999999999994), (333, 1, 0.9), (333, 333, 0.49999999999999994),
                             (500, 333, ALMOST_ONE), (500, 1234, 0.49999999999999994)):
        policy = {"initial_backoff_ms": initial, "max_backoff_ms": 86400000, "jitter": "decorrelated"}
        name = "float: decorrelated, initial %d, previous_delay_ms %d, random %r" % (initial, prev, r)
        out.append(decide_case(name, failure("connect"), policy=policy, previous_delay_ms=prev, random=r))
    # Other randoms through full and equal jitter on odd bases.
    for jitter in ("full", "equal"):
        for r in (0.1, 0.3, 0.7, 0.123, 0.5000000000000001, 0.49999999999999994):
            for initial in (333, 1001):
                policy = {"initial_backoff_ms": initial, "multiplier": 1.5, "jitter": jitter, "max_retries": 5}
                name = "float: %s, initial %d, multiplier 1.5, retries_used 3, random %r" % (jitter, initial, r)
                out.append(decide_case(name, failure("connect"), policy=policy, retries_used=3, random=r))
    return out


def gen_deadlines():
    out = []
    # Backoff delay 500 (jitter none): deadline 1000.
    for elapsed in (0, 499, 500, 501, 1000, 1001):
        name = "deadline: backoff 500, deadline 1000, elapsed %d" % elapsed
        out.append(decide_case(name, failure("connect"), policy={"jitter": "none", "deadline_ms": 1000},
                               elapsed_ms=elapsed))
    # Server delay 2000: deadline 5000.
    for elapsed in (2999, 3000, 3001):
        name = "deadline: Retry-After 2, deadline 5000, elapsed %d" % elapsed
        out.append(decide_case(name, status(503, "2"), policy={"deadline_ms": 5000}, elapsed_ms=elapsed))
    # HTTP-date server delay 10000: deadline 20000.
    for elapsed in (9999, 10000, 10001):
        name = "deadline: HTTP-date 10 s ahead, deadline 20000, elapsed %d" % elapsed
        out.append(decide_case(name, status(503, "Sun, 06 Nov 1994 08:49:47 GMT"), policy={"deadline_ms": 20000},
                               elapsed_ms=elapsed))
    # retry-after-ms 0 / past date: the delay is 0, the deadline still counts.
    for elapsed in (1, 2):
        out.append(decide_case("deadline: retry-after-ms 0, deadline 1, elapsed %d" % elapsed,
                               status(429, None, "0"), cls="non_replayable", policy={"deadline_ms": 1},
                               elapsed_ms=elapsed))
    # The deadline applies only to eligible outcomes.
    for label, outcome, cls in (("404", status(404), "idempotent"), ("aborted", failure("aborted"), "idempotent"),
                                ("transport non_replayable", failure("transport"), "non_replayable"),
                                ("no_retry connect", failure("connect"), "no_retry")):
        out.append(decide_case("deadline: passed but %s decides first" % label, outcome, cls=cls,
                               policy={"deadline_ms": 100}, elapsed_ms=200))
    out.append(decide_case("deadline: passed but exhausted decides first", status(503), retries_used=3,
                           policy={"deadline_ms": 100}, elapsed_ms=200))
    # Over the cap decides before the deadline.
    out.append(decide_case("deadline: passed and retry-after-ms over the cap", status(503, None, "70000"),
                           policy={"deadline_ms": 100}, elapsed_ms=200))
    # Decorrelated and the maximum deadline.
    out.append(decide_case("deadline: decorrelated 30000 with deadline 86400000, elapsed 86370000",
                           failure("connect"), policy={"jitter": "decorrelated", "deadline_ms": 86400000},
                           previous_delay_ms=30000, elapsed_ms=86370000))
    out.append(decide_case("deadline: decorrelated 30000 with deadline 86400000, elapsed 86370001",
                           failure("connect"), policy={"jitter": "decorrelated", "deadline_ms": 86400000},
                           previous_delay_ms=30000, elapsed_ms=86370001))
    return out


def gen_status_lists():
    out = []
    lists = [
        ("defaults", {}),
        ("empty retryable", {"retryable_statuses": []}),
        ("empty rejected", {"rejected_statuses": []}),
        ("both empty", {"retryable_statuses": [], "rejected_statuses": []}),
        ("503 in both", {"retryable_statuses": [500, 503], "rejected_statuses": [503]}),
        ("rejected only 500,503", {"retryable_statuses": [], "rejected_statuses": [500, 503]}),
        ("retryable 200 and 404", {"retryable_statuses": [200, 404], "rejected_statuses": [599]}),
        ("edges 100 and 599", {"retryable_statuses": [100], "rejected_statuses": [599]}),
    ]
    for label, policy in lists:
        listed = set(policy.get("retryable_statuses", [])) | set(policy.get("rejected_statuses", []))
        for code in sorted({404, 429, 503} | listed):
            for cls, key in (("idempotent", False), ("keyed", False), ("non_replayable", False)):
                name = "statuses: %s, status %d, %s" % (label, code, key_label(cls, key))
                out.append(decide_case(name, status(code), policy=policy, cls=cls, key=key))
    return out


# Server delay table: (label, Retry-After, retry-after-ms, now_ms). Run as status 503 on an
# idempotent request with the default policy and random 0.5, so an ignored header shows as the
# backoff delay 250.
SERVER_DELAYS = [
    # retry-after-ms
    ("ms: 1500", None, "1500", NOW),
    ("ms: 1500.9 (fraction dropped)", None, "1500.9", NOW),
    ("ms: 0", None, "0", NOW),
    ("ms: 0.999", None, "0.999", NOW),
    ("ms: -1", None, "-1", NOW),
    ("ms: -1.5", None, "-1.5", NOW),
    ("ms: -0", None, "-0", NOW),
    ("ms: spaces around", None, "  1500  ", NOW),
    ("ms: tabs around", None, "\t1500\t", NOW),
    ("ms: newline after (not trimmed)", None, "1500\n", NOW),
    ("ms: no-break space before (not trimmed)", None, "\u00a01500", NOW),
    ("ms: garbage", None, "soon", NOW),
    ("ms: empty", None, "", NOW),
    ("ms: only spaces", None, "   ", NOW),
    ("ms: plus sign", None, "+1500", NOW),
    ("ms: exponent", None, "1.5e3", NOW),
    ("ms: leading dot", None, ".5", NOW),
    ("ms: trailing dot", None, "5.", NOW),
    ("ms: lone minus", None, "-", NOW),
    ("ms: double minus", None, "--5", NOW),
    ("ms: minus space", None, "- 5", NOW),
    ("ms: unit suffix", None, "1500ms", NOW),
    ("ms: thousands separator", None, "1,500", NOW),
    ("ms: inner space", None, "15 00", NOW),
    ("ms: hex", None, "0x10", NOW),
    ("ms: fullwidth digits", None, "\uff11\uff15\uff10\uff10", NOW),
    ("ms: Arabic-Indic digits", None, "\u0661\u0665", NOW),
    ("ms: 59999", None, "59999", NOW),
    ("ms: 60000 (the cap)", None, "60000", NOW),
    ("ms: 60000.999 (the cap, fraction dropped)", None, "60000.999", NOW),
    ("ms: 60001", None, "60001", NOW),
    ("ms: 15 digits", None, "999999999999999", NOW),
    ("ms: 16 digits", None, "1000000000000000", NOW),
    ("ms: 15 digits of zeros and 1500", None, "000000000001500", NOW),
    ("ms: 16 digits with leading zeros", None, "0000000000001500", NOW),
    ("ms: 16 digits, fraction", None, "0000000000001500.5", NOW),
    ("ms: 20 digits", None, "12345678901234567890", NOW),
    ("ms: negative 16 digits", None, "-1000000000000000", NOW),
    ("ms: negative 30 digits", None, "-" + "9" * 30, NOW),
    ("ms: 1 with a 20-digit fraction", None, "1.00000000000000000001", NOW),
    ("ms: wins over Retry-After", "9", "1500", NOW),
    ("ms: 0 wins over Retry-After", "9", "0", NOW),
    ("ms: negative wins over Retry-After", "9", "-5", NOW),
    ("ms: huge wins over Retry-After", "1", "10000000000000000", NOW),
    ("ms: over the cap wins over Retry-After", "1", "60001", NOW),
    ("ms: wins over an HTTP-date", "Sun, 06 Nov 1994 08:49:47 GMT", "5", NOW),
    ("ms: garbage falls back to Retry-After", "2", "soon", NOW),
    ("ms: empty falls back to Retry-After", "2", "", NOW),
    ("ms: garbage falls back to an HTTP-date", "Sun, 06 Nov 1994 08:49:47 GMT", "x", NOW),
    ("ms: garbage and garbage", "later", "soon", NOW),
    ("ms: invalid falls back to a huge Retry-After", "9999999999999999", "1e3", NOW),
    # Retry-After delta-seconds
    ("delta: 7", "7", None, NOW),
    ("delta: 0", "0", None, NOW),
    ("delta: -1", "-1", None, NOW),
    ("delta: -0", "-0", None, NOW),
    ("delta: 1", "1", None, NOW),
    ("delta: 59", "59", None, NOW),
    ("delta: 60 (the cap)", "60", None, NOW),
    ("delta: 61", "61", None, NOW),
    ("delta: 120", "120", None, NOW),
    ("delta: leading space", " 7", None, NOW),
    ("delta: trailing space", "7 ", None, NOW),
    ("delta: tabs", "\t7\t", None, NOW),
    ("delta: spaces and tabs mixed", " \t \t7 \t", None, NOW),
    ("delta: newline after (not trimmed)", "7\n", None, NOW),
    ("delta: carriage return after (not trimmed)", "7\r", None, NOW),
    ("delta: no-break space (not trimmed)", "7\u00a0", None, NOW),
    ("delta: fraction 7.5", "7.5", None, NOW),
    ("delta: fraction 7.0", "7.0", None, NOW),
    ("delta: fraction 0.5", "0.5", None, NOW),
    ("delta: negative fraction", "-1.5", None, NOW),
    ("delta: plus sign", "+7", None, NOW),
    ("delta: unit suffix", "7s", None, NOW),
    ("delta: word", "seven", None, NOW),
    ("delta: empty", "", None, NOW),
    ("delta: only spaces", "  ", None, NOW),
    ("delta: inner space", "1 2", None, NOW),
    ("delta: lone minus", "-", None, NOW),
    ("delta: Arabic-Indic digit", "\u0667", None, NOW),
    ("delta: leading zeros, 15 digits", "000000000000007", None, NOW),
    ("delta: leading zeros, 16 digits", "0000000000000007", None, NOW),
    ("delta: 15 digits", "999999999999999", None, NOW),
    ("delta: 16 digits", "9999999999999999", None, NOW),
    ("delta: 19 digits (would overflow after * 1000)", "9223372036854775", None, NOW),
    ("delta: 25 digits", "1234567890123456789012345", None, NOW),
    ("delta: negative 16 digits", "-9999999999999999", None, NOW),
    ("delta: negative 16 digits of zeros", "-0000000000000000", None, NOW),
    # IMF-fixdate
    ("imf: 10 s ahead", "Sun, 06 Nov 1994 08:49:47 GMT", None, NOW),
    ("imf: now", "Sun, 06 Nov 1994 08:49:37 GMT", None, NOW),
    ("imf: 1 s ago", "Sun, 06 Nov 1994 08:49:36 GMT", None, NOW),
    ("imf: 10 s ahead, now 1 ms earlier", "Sun, 06 Nov 1994 08:49:47 GMT", None, NOW - 1),
    ("imf: 10 s ahead, now 999 ms later", "Sun, 06 Nov 1994 08:49:47 GMT", None, NOW + 999),
    ("imf: at the cap", "Sun, 06 Nov 1994 08:50:37 GMT", None, NOW),
    ("imf: 1 ms over the cap", "Sun, 06 Nov 1994 08:50:37 GMT", None, NOW - 1),
    ("imf: 1 s over the cap", "Sun, 06 Nov 1994 08:50:38 GMT", None, NOW),
    ("imf: a day ahead", "Mon, 07 Nov 1994 08:49:37 GMT", None, NOW),
    ("imf: surrounded by spaces and tabs", " \tSun, 06 Nov 1994 08:49:47 GMT\t ", None, NOW),
    ("imf: wrong weekday accepted", "Fri, 06 Nov 1994 08:49:47 GMT", None, NOW),
    ("imf: second 60", "Sun, 06 Nov 1994 08:49:60 GMT", None, NOW),
    ("imf: second 60 at the end of the day", "Sun, 06 Nov 1994 23:59:60 GMT", None, 784166380000),
    ("imf: second 61", "Sun, 06 Nov 1994 08:49:61 GMT", None, NOW),
    ("imf: minute 60", "Sun, 06 Nov 1994 08:60:00 GMT", None, NOW),
    ("imf: hour 24", "Sun, 06 Nov 1994 24:00:00 GMT", None, NOW),
    ("imf: hour 23 (past, valid)", "Sat, 05 Nov 1994 23:00:00 GMT", None, NOW),
    ("imf: day 00", "Sun, 00 Nov 1994 08:49:47 GMT", None, NOW),
    ("imf: day 31 of November", "Sun, 31 Nov 1994 08:49:47 GMT", None, NOW),
    ("imf: day 30 of November (valid)", "Wed, 30 Nov 1994 08:49:47 GMT", None, 786185377000),
    ("imf: day 32", "Sun, 32 Dec 1993 08:49:47 GMT", None, NOW),
    ("imf: Apr 31", "Sun, 31 Apr 1994 00:00:00 GMT", None, NOW),
    ("imf: Feb 30", "Sun, 30 Feb 1992 00:00:00 GMT", None, NOW),
    ("imf: Feb 29 1993 (not leap)", "Mon, 29 Feb 1993 00:00:00 GMT", None, NOW),
    ("imf: Feb 29 1992 (leap)", "Sat, 29 Feb 1992 00:00:00 GMT", None, NOW),
    ("imf: Feb 29 1900 (not leap)", "Thu, 29 Feb 1900 00:00:00 GMT", None, NOW),
    ("imf: Feb 29 1600 (leap)", "Tue, 29 Feb 1600 00:00:00 GMT", None, NOW),
    ("imf: year 0000", "Sat, 01 Jan 0000 00:00:00 GMT", None, NOW),
    ("imf: year 0001", "Mon, 01 Jan 0001 00:00:00 GMT", None, NOW),
    ("imf: year 9999", "Fri, 31 Dec 9999 23:59:59 GMT", None, NOW),
    ("imf: five-digit year", "Sun, 06 Nov 01994 08:49:47 GMT", None, NOW),
    ("imf: two-digit year", "Sun, 06 Nov 94 08:49:47 GMT", None, NOW),
    ("imf: single-digit day", "Sun, 6 Nov 1994 08:49:47 GMT", None, NOW),
    ("imf: space-padded day", "Sun,  6 Nov 1994 08:49:47 GMT", None, NOW),
    ("imf: single-digit hour", "Sun, 06 Nov 1994 8:49:47 GMT", None, NOW),
    ("imf: double space", "Sun, 06 Nov  1994 08:49:47 GMT", None, NOW),
    ("imf: no comma", "Sun 06 Nov 1994 08:49:47 GMT", None, NOW),
    ("imf: tab inside", "Sun,\t06 Nov 1994 08:49:47 GMT", None, NOW),
    ("imf: lower-case gmt", "Sun, 06 Nov 1994 08:49:47 gmt", None, NOW),
    ("imf: Gmt", "Sun, 06 Nov 1994 08:49:47 Gmt", None, NOW),
    ("imf: UTC", "Sun, 06 Nov 1994 08:49:47 UTC", None, NOW),
    ("imf: +0000", "Sun, 06 Nov 1994 08:49:47 +0000", None, NOW),
    ("imf: missing GMT", "Sun, 06 Nov 1994 08:49:47", None, NOW),
    ("imf: missing GMT, trailing space", "Sun, 06 Nov 1994 08:49:47 ", None, NOW),
    ("imf: lower-case weekday", "sun, 06 Nov 1994 08:49:47 GMT", None, NOW),
    ("imf: upper-case weekday", "SUN, 06 Nov 1994 08:49:47 GMT", None, NOW),
    ("imf: bad weekday name", "Sum, 06 Nov 1994 08:49:47 GMT", None, NOW),
    ("imf: long weekday name", "Sunday, 06 Nov 1994 08:49:47 GMT", None, NOW),
    ("imf: lower-case month", "Sun, 06 nov 1994 08:49:47 GMT", None, NOW),
    ("imf: upper-case month", "Sun, 06 NOV 1994 08:49:47 GMT", None, NOW),
    ("imf: long month", "Sun, 06 November 1994 08:49:47 GMT", None, NOW),
    ("imf: fractional seconds", "Sun, 06 Nov 1994 08:49:47.5 GMT", None, NOW),
    ("imf: ISO 8601 instead", "1994-11-06T08:49:47Z", None, NOW),
    # RFC 850
    ("rfc850: 10 s ahead", "Sunday, 06-Nov-94 08:49:47 GMT", None, NOW),
    ("rfc850: past", "Sunday, 06-Nov-94 08:49:27 GMT", None, NOW),
    ("rfc850: wrong weekday accepted", "Monday, 06-Nov-94 08:49:47 GMT", None, NOW),
    ("rfc850: short weekday name", "Sun, 06-Nov-94 08:49:47 GMT", None, NOW),
    ("rfc850: bad weekday name", "Sundy, 06-Nov-94 08:49:47 GMT", None, NOW),
    ("rfc850: four-digit year", "Sunday, 06-Nov-1994 08:49:47 GMT", None, NOW),
    ("rfc850: lower-case gmt", "Sunday, 06-Nov-94 08:49:47 gmt", None, NOW),
    ("rfc850: missing GMT", "Sunday, 06-Nov-94 08:49:47", None, NOW),
    ("rfc850: Feb 29 96 seen from 1996 (leap)", "Thursday, 29-Feb-96 00:00:10 GMT", None, 825552000000),
    ("rfc850: Feb 29 95 (not leap)", "Wednesday, 29-Feb-95 00:00:00 GMT", None, NOW),
    ("rfc850: hour 24", "Sunday, 06-Nov-94 24:00:00 GMT", None, NOW),
    ("rfc850: second 60", "Sunday, 06-Nov-94 08:49:60 GMT", None, NOW),
    ("rfc850: 44 seen from 1994 is 1944", "Thursday, 01-Jan-44 00:00:00 GMT", None, NOW),
    ("rfc850: 95 seen from 1994 is 1995 (future)", "Sunday, 01-Jan-95 00:00:00 GMT", None, NOW),
    ("rfc850: 00 seen from 1994 is 1900", "Monday, 01-Jan-00 00:00:00 GMT", None, NOW),
    ("rfc850: 24 seen from 2024, 5 s ahead", "Saturday, 01-Jun-24 00:00:05 GMT", None, 1717200000000),
    ("rfc850: 74 seen from 2024 is 2074 (exactly 50 years after)", "Monday, 01-Jan-74 00:00:00 GMT", None,
     1717200000000),
    ("rfc850: 75 seen from 2024 is 1975 (51 years after)", "Wednesday, 01-Jan-75 00:00:00 GMT", None,
     1717200000000),
    ("rfc850: 99 seen from 2024 is 1999 (past century)", "Friday, 31-Dec-99 23:59:59 GMT", None, 1717200000000),
    ("rfc850: 31-Dec-74 seen from 2024-06-01 is 2074 (the rule counts years)", "Tuesday, 31-Dec-74 00:00:00 GMT",
     None, 1717200000000),
    ("rfc850: 49 seen from 1999 is 1949 (century of now)", "Saturday, 01-Jan-49 00:00:00 GMT", None,
     915148800000),
    ("rfc850: 10 seen from 2090 is 2010", "Friday, 01-Jan-10 00:00:00 GMT", None, 3786912000000),
    ("rfc850: 90 seen from 2090, 5 s ahead", "Sunday, 01-Jan-90 00:00:05 GMT", None, 3786912000000),
    ("rfc850: 40 seen from 2090 is 2040 (never moved forward)", "Sunday, 01-Jan-40 00:00:00 GMT", None,
     3786912000000),
    # now = 2099-12-31 23:59:50 (4102444790000): 00 is 2000 (the century of now), not 2100,
    # although 2100-01-01 would be 10 s ahead.
    ("rfc850: 00 seen from 2099-12-31 23:59:50 is 2000", "Friday, 01-Jan-00 00:00:00 GMT", None, 4102444790000),
    ("rfc850: 99 seen from 2099-12-31 23:59:50, 9 s ahead", "Thursday, 31-Dec-99 23:59:59 GMT", None,
     4102444790000),
    ("rfc850: 41 seen from 2090 is 2041 (past)", "Monday, 01-Jan-41 00:00:00 GMT", None, 3786912000000),
    ("rfc850: 00 seen from 1899-12-31 (before the epoch) is 1800", "Monday, 01-Jan-00 00:00:00 GMT", None,
     -2208988801000),
    ("rfc850: 99 seen from 1899-12-31, 0 s ahead", "Sunday, 31-Dec-99 23:59:59 GMT", None, -2208988801000),
    ("rfc850: 00 seen from 1900-01-01, 1 s ahead", "Monday, 01-Jan-00 00:00:01 GMT", None, -2208988800000),
    # asctime
    ("asctime: single-digit day, 10 s ahead", "Sun Nov  6 08:49:47 1994", None, NOW),
    ("asctime: single-digit day, past", "Sun Nov  6 08:49:27 1994", None, NOW),
    ("asctime: two-digit day", "Wed Nov 16 08:49:37 1994", None, 784975767000),
    ("asctime: single-digit day with one space", "Sun Nov 6 08:49:47 1994", None, NOW),
    ("asctime: two-digit day with two spaces", "Wed Nov  16 08:49:37 1994", None, 784975767000),
    ("asctime: surrounded by tabs", "\tSun Nov  6 08:49:47 1994\t", None, NOW),
    ("asctime: trailing GMT", "Sun Nov  6 08:49:47 1994 GMT", None, NOW),
    ("asctime: lower-case month", "Sun nov  6 08:49:47 1994", None, NOW),
    ("asctime: long weekday name", "Sunday Nov  6 08:49:47 1994", None, NOW),
    ("asctime: wrong weekday accepted", "Thu Nov  6 08:49:47 1994", None, NOW),
    ("asctime: two-digit year", "Sun Nov  6 08:49:47 94", None, NOW),
    ("asctime: Feb 29 1992 (leap, past)", "Sat Feb 29 00:00:00 1992", None, NOW),
    ("asctime: Feb 29 1994 (not leap)", "Tue Feb 29 00:00:00 1994", None, NOW),
    ("asctime: minute 60", "Sun Nov  6 08:60:00 1994", None, NOW),
    ("asctime: second 60", "Sun Nov  6 08:49:60 1994", None, NOW),
    ("asctime: year 0000", "Sat Jan  1 00:00:00 0000", None, NOW),
    ("asctime: day 0", "Sun Nov  0 08:49:47 1994", None, NOW),
]


def gen_server_delays():
    out = []
    for label, ra, ram, now in SERVER_DELAYS:
        out.append(decide_case("server delay: " + label, status(503, ra, ram), now_ms=now))
    return out


def gen_server_delay_interactions():
    out = []
    headers = [("Retry-After 1", "1", None), ("Retry-After 120", "120", None),
               ("retry-after-ms 20 digits", None, "12345678901234567890"), ("Retry-After date", "Sun, 06 Nov 1994 08:49:47 GMT", None)]
    for hlabel, ra, ram in headers:
        # On statuses that are not retried, and on requests that are not replayable.
        for code, cls in ((404, "idempotent"), (200, "idempotent"), (503, "non_replayable"), (502, "keyed"),
                          (429, "non_replayable"), (429, "keyed")):
            out.append(decide_case("server delay on %d for %s: %s" % (code, cls, hlabel), status(code, ra, ram),
                                   cls=cls))
        # Exhausted and no_retry stop first.
        out.append(decide_case("server delay when exhausted: " + hlabel, status(503, ra, ram), retries_used=3))
        out.append(decide_case("server delay on no_retry: " + hlabel, status(503, ra, ram), cls="no_retry"))
        # Failures carry no server delay (the headers below are ignored; see README).
        for kind, cls in (("connect", "non_replayable"), ("transport", "idempotent")):
            h = {}
            if ra is not None:
                h["retry_after"] = ra
            if ram is not None:
                h["retry_after_ms"] = ram
            out.append(decide_case("server delay ignored on %s failure: %s" % (kind, hlabel), failure(kind, **h),
                                   cls=cls))
    # Custom caps.
    for cap in (0, 1000, 86400000):
        for label, ra, ram in (("Retry-After 0", "0", None), ("Retry-After 1", "1", None),
                               ("retry-after-ms 1000", None, "1000"), ("retry-after-ms 1001", None, "1001"),
                               ("Retry-After 86400", "86400", None), ("Retry-After 86401", "86401", None),
                               ("retry-after-ms 15 digits", None, "100000000000000"),
                               ("Retry-After 16 digits", "1000000000000000", None),
                               ("Retry-After date 1 s ahead", "Sun, 06 Nov 1994 08:49:38 GMT", None),
                               ("Retry-After past date", "Sun, 06 Nov 1994 08:49:36 GMT", None)):
            out.append(decide_case("cap %d: %s" % (cap, label), status(503, ra, ram),
                                   policy={"retry_after_cap_ms": cap}))
    # A server delay also replaces backoff for rejected statuses and any jitter.
    for jitter in contract.JITTERS:
        out.append(decide_case("server delay replaces %s jitter" % jitter, status(429, "4"), cls="non_replayable",
                               policy={"jitter": jitter}, previous_delay_ms=1000, retries_used=2))
    return out


# ---------------------------------------------------------------------------------------------


def build_decide():
    cases = []
    for case, expected in HAND_DECIDE:
        got = contract.decide(case["policy"], case["input"])
        if got != expected:
            raise Failure("hand case %r: written %r, contract.py says %r" % (case["name"], expected, got))
        case = dict(case)
        case["expect"] = expected
        cases.append(case)
    for gen in (gen_matrix, gen_exhaustion, gen_backoff_table, gen_decorrelated, gen_float_details, gen_deadlines,
                gen_status_lists, gen_server_delays, gen_server_delay_interactions):
        for case in gen():
            case["expect"] = contract.decide(case["policy"], case["input"])
            cases.append(case)
    check_names(cases)
    return {
        "description": "Decision cases for docs/contract.md section 3. Generated by "
                       "conformance/reference/generate.py (expected values from conformance/reference/contract.py; "
                       "cases named 'example:' and 'hand:' carry hand-written expectations); do not edit by hand.",
        "cases": cases,
    }


def check_names(cases):
    seen = set()
    for c in cases:
        if c["name"] in seen:
            raise Failure("duplicate case name %r" % c["name"])
        seen.add(c["name"])


# =============================================================================================
# classify
# =============================================================================================

SANDBOX = "specs/sandbox.yaml"
MATCHING = "specs/matching.yaml"

# (method, path as written, operationId, class): what `retrygen list` must print for each spec,
# worked out from the contract's classification rules and the spec (checked by --check-cli).
TABLES = {
    SANDBOX: ("/v1", [
        ("POST", "/admin/teams/{teamID}/api-keys", "createTeamApiKey", "non_replayable"),
        ("POST", "/api-keys", "createApiKey", "non_replayable"),
        ("POST", "/events/webhooks", "createWebhook", "non_replayable"),
        ("GET", "/health", None, "idempotent"),
        ("GET", "/sandboxes", "listSandboxes", "idempotent"),
        ("POST", "/sandboxes", "createSandbox", "non_replayable"),
        ("GET", "/sandboxes/templates", "listSandboxTemplates", "idempotent"),
        ("DELETE", "/sandboxes/{sandboxID}", "killSandbox", "idempotent"),
        ("GET", "/sandboxes/{sandboxID}", "getSandbox", "idempotent"),
        ("POST", "/sandboxes/{sandboxID}/fork", "forkSandbox", "non_replayable"),
        ("GET", "/sandboxes/{sandboxID}/logs", "streamSandboxLogs", "idempotent"),  # a stream: v3 A1
        ("POST", "/sandboxes/{sandboxID}/pause", "pauseSandbox", "idempotent"),
        ("POST", "/sandboxes/{sandboxID}/resume", "resumeSandbox", "idempotent"),
        ("POST", "/sandboxes/{sandboxID}/snapshots", "snapshotSandbox", "non_replayable"),
        ("POST", "/sandboxes/{sandboxID}/timeout", "setSandboxTimeout", "idempotent"),
        ("POST", "/secrets", "createSecret", "non_replayable"),
        ("PATCH", "/secrets/{secretID}", "updateSecret", "keyed"),
        ("DELETE", "/templates/{templateID}", "deleteTemplate", "idempotent"),
        ("GET", "/templates/{templateID}", "getTemplate", "idempotent"),
        ("GET", "/templates/{templateID}/builds/{buildID}/logs", "getTemplateBuildLogs", "no_retry"),
        ("POST", "/v2/sandboxes", "createSandboxV2", "keyed"),
        ("POST", "/v3/templates", "createTemplate", "idempotent"),
        ("POST", "/volumes", "createVolume", "non_replayable"),
        ("DELETE", "/volumes/{volumeID}", "deleteVolume", "idempotent"),
        ("GET", "/volumes/{volumeID}/files/archive.tar", "downloadVolumeArchive", "idempotent"),
        ("PUT", "/volumes/{volumeID}/files/{name}.{ext}", "uploadVolumeFile", "idempotent"),
    ]),
    MATCHING: ("/base/v2", [
        ("GET", "/", "getRoot", "idempotent"),
        ("POST", "/", "postRoot", "non_replayable"),
        ("GET", "/a/b/c", "getABC", "idempotent"),
        ("GET", "/a/{x}", "getAX", "idempotent"),
        ("GET", "/a/{x}/d", "getAXD", "idempotent"),
        ("POST", "/a/{x}/d", "postAXD", "idempotent"),
        ("GET", "/abc", "getAbc", "idempotent"),
        ("GET", "/api/v1/status", "getV1Status", "idempotent"),
        ("GET", "/api/v{version}/status", "getVersionStatus", "idempotent"),
        ("GET", "/api/{anything}/health", "getAnyHealth", "idempotent"),
        ("GET", "/api/{anything}/status", "getAnyStatus", "idempotent"),
        ("POST", "/api/{anything}/status", "postAnyStatus", "idempotent"),
        ("GET", "/base/v2/nested", "getNested", "idempotent"),
        ("GET", "/caf%C3%A9/menu", "getCafeMenu", "idempotent"),
        ("GET", "/caf\u00e9", "getCafe", "idempotent"),
        ("POST", "/caf\u00e9/orders/{name}.{ext}", "createCafeOrder", "non_replayable"),
        ("POST", "/calc/1+1", "postCalc", "non_replayable"),
        ("GET", "/deep/l1/l2/l3", "getDeepLiteral", "idempotent"),
        ("GET", "/deep/l1/{p2}/tail", "getDeepTail", "idempotent"),
        ("GET", "/deep/{p1}/l2/l3/more", "getDeepMore", "idempotent"),
        ("GET", "/events", "streamEvents", "idempotent"),  # a stream keeps its class: v3 A1
        ("DELETE", "/events/{eventID}", "deleteEvent", "no_retry"),
        ("GET", "/events/{eventID}", "getEvent", "no_retry"),
        ("GET", "/files", "listFiles", "idempotent"),
        ("POST", "/files", "createFile", "keyed"),
        ("GET", "/files/a%20b", "getSpaced", "idempotent"),
        ("POST", "/files/a%20b", "postSpaced", "non_replayable"),
        ("GET", "/files/report.json", "getReport", "idempotent"),
        ("DELETE", "/files/{id}", "deleteFile", "non_replayable"),
        ("GET", "/files/{id}", "getFile", "idempotent"),
        ("PATCH", "/files/{id}", "patchFile", "keyed"),
        ("GET", "/files/{id}.json", "getFileJson", "idempotent"),
        ("GET", "/files/{name}-{rev}", "getFileRev", "idempotent"),
        ("GET", "/files/{name}.{ext}", "getFileExt", "idempotent"),
        ("POST", "/files/{name}.{ext}", "uploadFile", "idempotent"),
        ("GET", "/health", None, "idempotent"),
        ("GET", "/jobs/{jobID}", "getJob", "non_replayable"),
        ("POST", "/jobs/{jobID}", "runJob", "non_replayable"),
        ("PUT", "/jobs/{jobID}", "replaceJob", "idempotent"),
        ("GET", "/jobs/{jobID}/watch", "watchJob", "idempotent"),  # v3 A1
        ("POST", "/orders", "createOrder", "keyed"),
        ("GET", "/reports/quarterly/financial-statements/consolidated/balance-sheets/{year}/summary",
         "getBalanceSheetSummary", "idempotent"),
        ("GET", "/reports/quarterly/financial-statements/consolidated/balance-sheets/{year}/summary.pdf",
         "getBalanceSheetSummaryPdf", "idempotent"),
        ("POST", "/x/files", "postXFiles", "idempotent"),
    ]),
}

I, K, NR, NO = "idempotent", "keyed", "non_replayable", "no_retry"

# (spec, name, method, path, expected class, expected operationId or None)
CLASSIFY_CASES = [
    # ---- specs/matching.yaml: root, empty path, base path ----
    (MATCHING, "root", "GET", "/", I, "getRoot"),
    (MATCHING, "empty path is the root", "GET", "", I, "getRoot"),
    (MATCHING, "base path alone is the root", "GET", "/base/v2", I, "getRoot"),
    (MATCHING, "base path with a trailing slash is the root", "GET", "/base/v2/", I, "getRoot"),
    (MATCHING, "base path with two trailing slashes is the root", "GET", "/base/v2//", I, "getRoot"),
    (MATCHING, "// loses one trailing slash and is the root", "GET", "//", I, "getRoot"),
    (MATCHING, "/// has two empty segments", "GET", "///", I, None),
    (MATCHING, "query only is the root", "GET", "?a=1", I, "getRoot"),
    (MATCHING, "fragment only is the root", "GET", "#top", I, "getRoot"),
    (MATCHING, "base path and a query holding slashes", "GET", "/base/v2?next=/files", I, "getRoot"),
    (MATCHING, "POST on the root", "POST", "/", NR, "postRoot"),
    (MATCHING, "POST on the base path alone", "POST", "/base/v2", NR, "postRoot"),
    (MATCHING, "PUT on the root has no operation", "PUT", "/", I, None),
    (MATCHING, "PATCH on the root has no operation", "PATCH", "/", NR, None),
    (MATCHING, "with base path", "GET", "/base/v2/files", I, "listFiles"),
    (MATCHING, "without base path", "GET", "/files", I, "listFiles"),
    (MATCHING, "trailing slash", "GET", "/files/", I, "listFiles"),
    (MATCHING, "base path and trailing slash", "GET", "/base/v2/files/", I, "listFiles"),
    (MATCHING, "two trailing slashes leave an empty segment", "GET", "/files//", I, None),
    (MATCHING, "base path as a mere prefix is not removed", "POST", "/base/v2x/files", NR, None),
    (MATCHING, "what the mere prefix would have reached", "POST", "/x/files", I, "postXFiles"),
    (MATCHING, "base path prefix without a segment boundary, alone", "GET", "/base/v2x", I, None),
    (MATCHING, "part of the base path", "GET", "/base", I, None),
    (MATCHING, "base path is case-sensitive", "GET", "/BASE/v2/files", I, None),
    (MATCHING, "base path compared before decoding", "GET", "/base%2Fv2/files", I, None),
    (MATCHING, "base path removed once", "GET", "/base/v2/base/v2/nested", I, "getNested"),
    (MATCHING, "a template starting with the base path loses it", "GET", "/base/v2/nested", I, None),
    (MATCHING, "base path then a double slash", "GET", "/base/v2//files", I, None),
    # ---- literal beside parameter, backtracking ----
    (MATCHING, "literal path", "GET", "/a/b/c", I, "getABC"),
    (MATCHING, "literal path with base path and trailing slash", "GET", "/base/v2/a/b/c/", I, "getABC"),
    (MATCHING, "backtrack from literal b to {x}", "GET", "/a/b/d", I, "getAXD"),
    (MATCHING, "parameter path", "GET", "/a/z/d", I, "getAXD"),
    (MATCHING, "literal b ends no template: backtrack to /a/{x}", "GET", "/a/b", I, "getAX"),
    (MATCHING, "parameter at the end", "GET", "/a/z", I, "getAX"),
    (MATCHING, "POST backtracks to /a/{x}/d", "POST", "/a/b/d", I, "postAXD"),
    (MATCHING, "literal match without the method falls back to the method default", "POST", "/a/b/c", NR, None),
    (MATCHING, "parameter match without the method", "DELETE", "/a/b/d", I, None),
    (MATCHING, "too long after backtracking", "GET", "/a/b/c/d", I, None),
    (MATCHING, "intermediate node only", "GET", "/a", I, None),
    (MATCHING, "empty segment never matches a parameter", "GET", "/a//d", I, None),
    (MATCHING, "trailing empty segment after one slash is removed", "GET", "/a/b/c//", I, None),
    (MATCHING, "encoded slash stays in the segment", "GET", "/a/b%2Fc/d", I, "getAXD"),
    (MATCHING, "encoded letter matches a literal segment", "GET", "/a/%62/c", I, "getABC"),
    (MATCHING, "literals are case-sensitive", "GET", "/A/b/c", I, None),
    (MATCHING, "deep literal", "GET", "/deep/l1/l2/l3", I, "getDeepLiteral"),
    (MATCHING, "deep: backtrack one level", "GET", "/deep/l1/l2/tail", I, "getDeepTail"),
    (MATCHING, "deep: backtrack two levels", "GET", "/deep/l1/l2/l3/more", I, "getDeepMore"),
    (MATCHING, "deep: parameter first", "GET", "/deep/zz/l2/l3/more", I, "getDeepMore"),
    (MATCHING, "deep: parameter second", "GET", "/deep/l1/zz/tail", I, "getDeepTail"),
    (MATCHING, "deep: literal segment text in a parameter position", "GET", "/deep/l1/tail/tail", I, "getDeepTail"),
    (MATCHING, "deep: every branch dead-ends", "GET", "/deep/l1/l2/l3/other", I, None),
    (MATCHING, "deep: intermediate after backtracking", "GET", "/deep/l1/l2", I, None),
    # ---- percent-decoding ----
    (MATCHING, "plain literal", "GET", "/abc", I, "getAbc"),
    (MATCHING, "encoded letter in a literal", "GET", "/a%62c", I, "getAbc"),
    (MATCHING, "all letters encoded", "GET", "/%61%62%63", I, "getAbc"),
    (MATCHING, "all letters encoded, trailing slash", "GET", "/%61%62%63/", I, "getAbc"),
    (MATCHING, "lower-case hex digits", "GET", "/a%62%63", I, "getAbc"),
    (MATCHING, "upper-case literal", "GET", "/ABC", I, None),
    (MATCHING, "encoded trailing slash is not a trailing slash", "GET", "/abc%2F", I, None),
    (MATCHING, "lone % at the end is kept", "GET", "/abc%", I, None),
    (MATCHING, "% with one hex digit is kept", "GET", "/ab%6", I, None),
    (MATCHING, "% with non-hex digits is kept", "GET", "/abc%zz", I, None),
    (MATCHING, "%62 decoded, invalid UTF-8 keeps the whole segment undecoded", "GET", "/a%62c%ff", I, None),
    (MATCHING, "non-ASCII literal", "GET", "/caf\u00e9", I, "getCafe"),
    (MATCHING, "non-ASCII literal percent-encoded", "GET", "/caf%C3%A9", I, "getCafe"),
    (MATCHING, "non-ASCII literal percent-encoded, lower-case hex", "GET", "/caf%c3%a9", I, "getCafe"),
    (MATCHING, "template written encoded, request raw", "GET", "/caf\u00e9/menu", I, "getCafeMenu"),
    (MATCHING, "template written encoded, request encoded", "GET", "/caf%C3%A9/menu", I, "getCafeMenu"),
    (MATCHING, "Latin-1 byte is invalid UTF-8: kept undecoded", "GET", "/caf%E9", I, None),
    (MATCHING, "NFD encoded is a different literal", "GET", "/cafe%CC%81", I, None),
    (MATCHING, "NFD raw is a different literal", "GET", "/cafe\u0301", I, None),
    (MATCHING, "non-ASCII literals are case-sensitive", "GET", "/CAF\u00c9", I, None),
    # ---- mixed segments ----
    (MATCHING, "literal beats mixed", "GET", "/files/report.json", I, "getReport"),
    (MATCHING, "encoded dot in a literal", "GET", "/files/report%2Ejson", I, "getReport"),
    (MATCHING, "literal without the method does not fall to the mixed sibling", "POST", "/files/report.json", NR, None),
    (MATCHING, "literal without the method (PUT)", "PUT", "/files/report.json", I, None),
    (MATCHING, "mixed {id}.json", "GET", "/files/x.json", I, "getFileJson"),
    (MATCHING, "mixed without the method does not fall to {name}.{ext}", "POST", "/files/x.json", NR, None),
    (MATCHING, "mixed without the method does not fall to the parameter", "DELETE", "/files/x.json", I, None),
    (MATCHING, "{id}.json where the id ends with .json", "GET", "/files/x.json.json", I, "getFileJson"),
    (MATCHING, "{id}.json needs a non-empty id", "GET", "/files/.json", I, "getFile"),
    (MATCHING, "a trailing mixed literal must end the segment", "GET", "/files/x.jsonx", I, "getFileExt"),
    (MATCHING, "more literal characters first", "GET", "/files/a-b.json", I, "getFileJson"),
    (MATCHING, "equal literal length: '-' sorts before '.'", "GET", "/files/a-b.txt", I, "getFileRev"),
    (MATCHING, "{name}-{rev} with a dot in the name", "GET", "/files/a.b-c", I, "getFileRev"),
    (MATCHING, "mixed {name}.{ext}", "GET", "/files/x.txt", I, "getFileExt"),
    (MATCHING, "POST on {name}.{ext}", "POST", "/files/x.txt", I, "uploadFile"),
    (MATCHING, "mixed literals are case-sensitive", "GET", "/files/x.JSON", I, "getFileExt"),
    (MATCHING, "{name}.{ext} with two dots", "GET", "/files/a.b.c", I, "getFileExt"),
    (MATCHING, "empty rev falls to the parameter", "GET", "/files/a-", I, "getFile"),
    (MATCHING, "empty name falls to the parameter", "GET", "/files/-a", I, "getFile"),
    (MATCHING, "empty ext falls to the parameter", "GET", "/files/a.", I, "getFile"),
    (MATCHING, "leading dot falls to the parameter", "GET", "/files/.a", I, "getFile"),
    (MATCHING, "parameter", "GET", "/files/x", I, "getFile"),
    (MATCHING, "parameter, DELETE", "DELETE", "/files/x", NR, "deleteFile"),
    (MATCHING, "parameter, PATCH (keyed)", "PATCH", "/files/x", K, "patchFile"),
    (MATCHING, "parameter without the method", "POST", "/files/x", NR, None),
    (MATCHING, "encoded dot matches a mixed literal", "GET", "/files/x%2Ejson", I, "getFileJson"),
    (MATCHING, "encoded slash in a parameter", "GET", "/files/a%2Fb", I, "getFile"),
    (MATCHING, "encoded slash in a mixed parameter", "GET", "/files/a%2Fb.json", I, "getFileJson"),
    (MATCHING, "percent-encoded literal in the spec", "GET", "/files/a%20b", I, "getSpaced"),
    (MATCHING, "percent-encoded literal in the spec, raw space", "GET", "/files/a b", I, "getSpaced"),
    (MATCHING, "percent-encoded literal, POST", "POST", "/files/a%20b", NR, "postSpaced"),
    (MATCHING, "double-encoded is not the literal", "GET", "/files/a%2520b", I, "getFile"),
    (MATCHING, "plus is not a space", "GET", "/files/a+b", I, "getFile"),
    (MATCHING, "encoded ? is not a query", "GET", "/files/a%3Fb", I, "getFile"),
    (MATCHING, "encoded # is not a fragment", "GET", "/files/a%23b.json", I, "getFileJson"),
    (MATCHING, "query and fragment", "GET", "/files/x.json?download=1#top", I, "getFileJson"),
    (MATCHING, "query holding slashes", "GET", "/files?x=/a/b", I, "listFiles"),
    (MATCHING, "fragment before a ?", "GET", "/files#frag/x?y=1", I, "listFiles"),
    (MATCHING, "%ff is kept undecoded", "GET", "/files/%ff", I, "getFile"),
    (MATCHING, "%ff.json undecoded still ends with .json", "GET", "/files/%ff.json", I, "getFileJson"),
    (MATCHING, "%ff%2Ejson kept whole: no dot", "GET", "/files/%ff%2Ejson", I, "getFile"),
    (MATCHING, "overlong UTF-8 kept whole", "GET", "/files/%C0%AF%2Ejson", I, "getFile"),
    (MATCHING, "encoded surrogate kept whole", "GET", "/files/%ED%A0%80%2Ejson", I, "getFile"),
    (MATCHING, "valid multi-byte UTF-8 decoded", "GET", "/files/%E2%82%AC%2Ejson", I, "getFileJson"),
    (MATCHING, "%00 decodes to NUL", "GET", "/files/%00", I, "getFile"),
    (MATCHING, "keyed POST", "POST", "/files", K, "createFile"),
    (MATCHING, "keyed by a path item header", "POST", "/orders", K, "createOrder"),
    (MATCHING, "no PUT on /orders", "PUT", "/orders", I, None),
    # ---- literal, mixed, parameter at one level ----
    (MATCHING, "literal v1", "GET", "/api/v1/status", I, "getV1Status"),
    (MATCHING, "mixed v{version}", "GET", "/api/v2/status", I, "getVersionStatus"),
    (MATCHING, "mixed needs a non-empty version", "GET", "/api/v/status", I, "getAnyStatus"),
    (MATCHING, "mixed literal is case-sensitive", "GET", "/api/V2/status", I, "getAnyStatus"),
    (MATCHING, "mixed v{version} with version v", "GET", "/api/vv/status", I, "getVersionStatus"),
    (MATCHING, "mixed v{version} with a dot", "GET", "/api/v1.5/status", I, "getVersionStatus"),
    (MATCHING, "a leading mixed literal must start the segment", "GET", "/api/xv2/status", I, "getAnyStatus"),
    (MATCHING, "mixed encoded", "GET", "/api/%76%32/status", I, "getVersionStatus"),
    (MATCHING, "backtrack from the mixed to the parameter", "GET", "/api/v2/health", I, "getAnyHealth"),
    (MATCHING, "backtrack from the literal, then the mixed, to the parameter", "GET", "/api/v1/health", I,
     "getAnyHealth"),
    (MATCHING, "mixed match without the method does not fall to the parameter", "POST", "/api/v2/status", NR, None),
    (MATCHING, "literal match without the method does not fall to the parameter", "POST", "/api/v1/status", NR, None),
    (MATCHING, "parameter with the method", "POST", "/api/x/status", I, "postAnyStatus"),
    (MATCHING, "every branch dead-ends", "GET", "/api/v2/other", I, None),
    (MATCHING, "intermediate", "GET", "/api/v1", I, None),
    # ---- non-ASCII and regex-syntax literals ----
    (MATCHING, "mixed under a non-ASCII literal", "POST", "/caf\u00e9/orders/latte.json", NR, "createCafeOrder"),
    (MATCHING, "mixed under an encoded non-ASCII literal", "POST", "/caf%C3%A9/orders/latte.json", NR,
     "createCafeOrder"),
    (MATCHING, "mixed under a non-ASCII literal, no dot", "POST", "/caf\u00e9/orders/latte", NR, None),
    (MATCHING, "mixed under a non-ASCII literal, GET", "GET", "/caf\u00e9/orders/latte.json", I, None),
    (MATCHING, "plus in a literal", "POST", "/calc/1+1", NR, "postCalc"),
    (MATCHING, "encoded plus", "POST", "/calc/1%2B1", NR, "postCalc"),
    (MATCHING, "encoded plus, lower-case hex", "POST", "/calc/1%2b1", NR, "postCalc"),
    (MATCHING, "space is not plus", "POST", "/calc/1 1", NR, None),
    (MATCHING, "plus is not a regex here", "POST", "/calc/11", NR, None),
    (MATCHING, "plus literal, GET", "GET", "/calc/1+1", I, None),
    # ---- streaming, x-retry, annotations ----
    (MATCHING, "text/event-stream keeps the method's class (v3 A1)", "GET", "/events", I, "streamEvents"),
    (MATCHING, "text/event-stream path, POST", "POST", "/events", NR, None),
    (MATCHING, "x-retry false on the path item, GET", "GET", "/events/e1", NO, "getEvent"),
    (MATCHING, "x-retry false on the path item, DELETE", "DELETE", "/events/e1", NO, "deleteEvent"),
    (MATCHING, "x-retry false path, PUT", "PUT", "/events/e1", I, None),
    (MATCHING, "text/event-stream with a parameter keeps the method's class (v3 A1)", "GET", "/jobs/j1/watch", I,
     "watchJob"),
    (MATCHING, "path item x-idempotent false on GET", "GET", "/jobs/j1", NR, "getJob"),
    (MATCHING, "path item x-idempotent false on POST", "POST", "/jobs/j1", NR, "runJob"),
    (MATCHING, "operation x-idempotent true beats path item false", "PUT", "/jobs/j1", I, "replaceJob"),
    (MATCHING, "path item false does not reach the method default", "DELETE", "/jobs/j1", I, None),
    (MATCHING, "root x-idempotent true on POST", "POST", "/a/z/d", I, "postAXD"),
    (MATCHING, "root x-idempotent does not change the method default", "POST", "/nowhere", NR, None),
    (MATCHING, "operation without operationId", "GET", "/health", I, None),
    (MATCHING, "HEAD is not GET", "HEAD", "/health", I, None),
    (MATCHING, "POST on a GET-only path", "POST", "/health", NR, None),
    # ---- methods ----
    (MATCHING, "lower-case method", "get", "/abc", I, "getAbc"),
    (MATCHING, "mixed-case method", "gEt", "/abc", I, "getAbc"),
    (MATCHING, "lower-case keyed method", "post", "/files", K, "createFile"),
    (MATCHING, "lower-case method with base path", "patch", "/base/v2/files/x", K, "patchFile"),
    (MATCHING, "PURGE on a known path", "PURGE", "/abc", NR, None),
    (MATCHING, "QUERY on a known path", "QUERY", "/abc", I, None),
    (MATCHING, "TRACE on a known path", "TRACE", "/abc", I, None),
    (MATCHING, "OPTIONS on a known path", "OPTIONS", "/abc", I, None),
    (MATCHING, "HEAD on a known path", "HEAD", "/abc", I, None),
    (MATCHING, "lower-case query", "query", "/nowhere", I, None),
    (MATCHING, "lower-case trace", "trace", "/nowhere", I, None),
    (MATCHING, "CONNECT", "CONNECT", "/nowhere", NR, None),
    (MATCHING, "LINK", "LINK", "/nowhere", NR, None),
    (MATCHING, "empty method", "", "/abc", NR, None),
    (MATCHING, "dotless i is not ASCII: no OPTIONS", "opt\u0131ons", "/nowhere", NR, None),
    (MATCHING, "long s is not ASCII: no POST", "po\u017ft", "/files", NR, None),
    # unknown paths for each method
    (MATCHING, "unknown path GET", "GET", "/nowhere/at/all", I, None),
    (MATCHING, "unknown path HEAD", "HEAD", "/nowhere/at/all", I, None),
    (MATCHING, "unknown path OPTIONS", "OPTIONS", "/nowhere/at/all", I, None),
    (MATCHING, "unknown path TRACE", "TRACE", "/nowhere/at/all", I, None),
    (MATCHING, "unknown path PUT", "PUT", "/nowhere/at/all", I, None),
    (MATCHING, "unknown path DELETE", "DELETE", "/nowhere/at/all", I, None),
    (MATCHING, "unknown path QUERY", "QUERY", "/nowhere/at/all", I, None),
    (MATCHING, "unknown path POST", "POST", "/nowhere/at/all", NR, None),
    (MATCHING, "unknown path PATCH", "PATCH", "/base/v2/nowhere/at/all", NR, None),
    (MATCHING, "unknown path PURGE", "PURGE", "/base/v2/nowhere", NR, None),

    # ---- specs/sandbox.yaml ----
    (SANDBOX, "list with base path", "GET", "/v1/sandboxes", I, "listSandboxes"),
    (SANDBOX, "list with a query", "GET", "/v1/sandboxes?limit=10&next=/v1/x", I, "listSandboxes"),
    (SANDBOX, "create", "POST", "/v1/sandboxes", NR, "createSandbox"),
    (SANDBOX, "create, bare path", "POST", "/sandboxes", NR, "createSandbox"),
    (SANDBOX, "literal beats parameter", "GET", "/v1/sandboxes/templates", I, "listSandboxTemplates"),
    (SANDBOX, "literal without the method does not fall to the parameter", "DELETE", "/v1/sandboxes/templates", I,
     None),
    (SANDBOX, "parameter", "GET", "/v1/sandboxes/sb1", I, "getSandbox"),
    (SANDBOX, "parameter, DELETE with trailing slash, lower-case", "delete", "/v1/sandboxes/sb1/", I, "killSandbox"),
    (SANDBOX, "encoded slash in the sandbox id", "GET", "/v1/sandboxes/sb%2F1", I, "getSandbox"),
    (SANDBOX, "fork", "POST", "/v1/sandboxes/sb1/fork", NR, "forkSandbox"),
    (SANDBOX, "backtrack from templates to the parameter", "POST", "/v1/sandboxes/templates/fork", NR, "forkSandbox"),
    # Contract v3, A1: an event stream keeps the class the usual rules give it (GET: idempotent).
    (SANDBOX, "logs stream", "GET", "/v1/sandboxes/sb1/logs", I, "streamSandboxLogs"),
    (SANDBOX, "logs stream for a sandbox called templates", "GET", "/v1/sandboxes/templates/logs", I,
     "streamSandboxLogs"),
    (SANDBOX, "pause", "POST", "/v1/sandboxes/sb1/pause", I, "pauseSandbox"),
    (SANDBOX, "resume", "POST", "/v1/sandboxes/sb1/resume", I, "resumeSandbox"),
    (SANDBOX, "timeout", "POST", "/v1/sandboxes/sb1/timeout", I, "setSandboxTimeout"),
    (SANDBOX, "snapshot", "POST", "/v1/sandboxes/sb1/snapshots", NR, "snapshotSandbox"),
    (SANDBOX, "keyed v2 create", "POST", "/v1/v2/sandboxes", K, "createSandboxV2"),
    (SANDBOX, "keyed v2 create, bare", "POST", "/v2/sandboxes", K, "createSandboxV2"),
    (SANDBOX, "v2 sandboxes has no GET", "GET", "/v1/v2/sandboxes", I, None),
    (SANDBOX, "create template", "POST", "/v1/v3/templates", I, "createTemplate"),
    (SANDBOX, "template through a $ref path item", "GET", "/v1/templates/t1", I, "getTemplate"),
    (SANDBOX, "delete template", "DELETE", "/v1/templates/t1", I, "deleteTemplate"),
    (SANDBOX, "template has no POST", "POST", "/v1/templates/t1", NR, None),
    (SANDBOX, "build logs x-retry false", "GET", "/v1/templates/t1/builds/b1/logs", NO, "getTemplateBuildLogs"),
    (SANDBOX, "build without logs", "GET", "/v1/templates/t1/builds/b1", I, None),
    (SANDBOX, "create volume", "POST", "/v1/volumes", NR, "createVolume"),
    (SANDBOX, "volumes has no DELETE", "DELETE", "/v1/volumes", I, None),
    (SANDBOX, "delete volume", "DELETE", "/v1/volumes/vol1", I, "deleteVolume"),
    (SANDBOX, "archive literal", "GET", "/v1/volumes/vol1/files/archive.tar", I, "downloadVolumeArchive"),
    (SANDBOX, "archive literal without PUT does not fall to {name}.{ext}", "PUT",
     "/v1/volumes/vol1/files/archive.tar", I, None),
    (SANDBOX, "upload through {name}.{ext}", "PUT", "/v1/volumes/vol1/files/data.csv", I, "uploadVolumeFile"),
    (SANDBOX, "upload with two dots", "PUT", "/v1/volumes/vol1/files/archive.tar.gz", I, "uploadVolumeFile"),
    (SANDBOX, "GET on {name}.{ext} has no operation", "GET", "/v1/volumes/vol1/files/archive.tar.gz", I, None),
    (SANDBOX, "no dot: no match", "PUT", "/v1/volumes/vol1/files/archive", I, None),
    (SANDBOX, "empty name: no match", "PUT", "/v1/volumes/vol1/files/.tar", I, None),
    (SANDBOX, "create secret", "POST", "/v1/secrets", NR, "createSecret"),
    (SANDBOX, "update secret keyed", "PATCH", "/v1/secrets/s1", K, "updateSecret"),
    (SANDBOX, "create api key", "POST", "/v1/api-keys", NR, "createApiKey"),
    (SANDBOX, "create team api key", "POST", "/v1/admin/teams/t1/api-keys", NR, "createTeamApiKey"),
    (SANDBOX, "create webhook", "POST", "/v1/events/webhooks", NR, "createWebhook"),
    (SANDBOX, "webhooks are not paths", "POST", "/v1/sandboxEvent", NR, None),
    (SANDBOX, "health has no operationId", "GET", "/v1/health", I, None),
    (SANDBOX, "base path alone: no root template", "GET", "/v1", I, None),
    (SANDBOX, "base path alone, POST", "POST", "/v1/", NR, None),
    (SANDBOX, "base path as a mere prefix", "GET", "/v1x/sandboxes", I, None),
    (SANDBOX, "longer version is not the base path", "POST", "/v10/sandboxes", NR, None),
    (SANDBOX, "unknown path PURGE", "PURGE", "/v1/sandboxes", NR, None),
    (SANDBOX, "QUERY on a known path", "QUERY", "/v1/sandboxes", I, None),
]

# (spec, name, operationId, expected (method, path) or None)
LOOKUP_CASES = [
    (SANDBOX, "getSandbox", "getSandbox", ("GET", "/sandboxes/{sandboxID}")),
    (SANDBOX, "killSandbox", "killSandbox", ("DELETE", "/sandboxes/{sandboxID}")),
    (SANDBOX, "through a $ref path item", "deleteTemplate", ("DELETE", "/templates/{templateID}")),
    (SANDBOX, "mixed segment path", "uploadVolumeFile", ("PUT", "/volumes/{volumeID}/files/{name}.{ext}")),
    (SANDBOX, "keyed", "createSandboxV2", ("POST", "/v2/sandboxes")),
    (SANDBOX, "no_retry", "getTemplateBuildLogs", ("GET", "/templates/{templateID}/builds/{buildID}/logs")),
    (SANDBOX, "webhook operations are not in the table", "onSandboxEvent", None),
    (SANDBOX, "case-sensitive", "getsandbox", None),
    (SANDBOX, "no trimming", "getSandbox ", None),
    (SANDBOX, "empty id (the operation without one is not found)", "", None),
    (MATCHING, "root", "postRoot", ("POST", "/")),
    (MATCHING, "percent-encoded literal as written", "getSpaced", ("GET", "/files/a%20b")),
    (MATCHING, "non-ASCII literal as written", "getCafe", ("GET", "/caf\u00e9")),
    (MATCHING, "encoded non-ASCII as written", "getCafeMenu", ("GET", "/caf%C3%A9/menu")),
    (MATCHING, "non-ASCII and mixed", "createCafeOrder", ("POST", "/caf\u00e9/orders/{name}.{ext}")),
    (MATCHING, "plus in the path", "postCalc", ("POST", "/calc/1+1")),
    (MATCHING, "mixed {id}.json", "getFileJson", ("GET", "/files/{id}.json")),
    (MATCHING, "mixed v{version}", "getVersionStatus", ("GET", "/api/v{version}/status")),
    (MATCHING, "path starting with the base path", "getNested", ("GET", "/base/v2/nested")),
    (MATCHING, "keyed by a path item header", "createOrder", ("POST", "/orders")),
    (MATCHING, "path item x-retry false", "deleteEvent", ("DELETE", "/events/{eventID}")),
    (MATCHING, "unknown", "getHealth", None),
    (MATCHING, "an operationId of the other spec", "getSandbox", None),
    (MATCHING, "non-ASCII unknown id", "getCaf\u00e9", None),
]

def build_classify():
    apis = {spec: contract.Api(base, [contract.Operation(*row) for row in rows]) for spec, (base, rows) in TABLES.items()}
    short = {SANDBOX: "sandbox", MATCHING: "matching"}
    cases = []
    for spec, name, method, path, cls, op_id in CLASSIFY_CASES:
        got_cls, got_op = apis[spec].classify(method, path)
        got_id = got_op.operation_id if got_op is not None else None
        if (got_cls, got_id) != (cls, op_id):
            raise Failure("classify %s %r: written %s %s, contract.py says %s %s" % (spec, name, cls, op_id, got_cls,
                                                                                      got_id))
        cases.append({"name": "%s: %s" % (short[spec], name), "kind": "classify", "spec": spec, "method": method,
                      "path": path, "expect": {"class": cls, "operation_id": op_id}})
    for spec, name, op_id, expected in LOOKUP_CASES:
        op = apis[spec].lookup(op_id)
        got = (op.method, op.path) if op is not None else None
        if got != expected:
            raise Failure("lookup %s %r: written %r, contract.py says %r" % (spec, name, expected, got))
        method, path = expected if expected is not None else (None, None)
        cases.append({"name": "%s: lookup %s" % (short[spec], name), "kind": "lookup", "spec": spec,
                      "operation_id": op_id, "expect": {"method": method, "path": path}})
    check_names(cases)
    return {
        "description": "Classification (docs/contract.md section 2) and operationId lookup "
                       "cases for specs/sandbox.yaml and specs/matching.yaml. Expected values written by hand in "
                       "conformance/reference/generate.py and checked there; do not edit by hand.",
        "cases": cases,
    }


def check_cli():
    """Compares TABLES with `retrygen list --format json` (method, path, operationId, class, and
    the pattern `list` shows)."""
    for spec, (base, rows) in sorted(TABLES.items()):
        out = subprocess.run(["cargo", "run", "-q", "--", "list", "--spec", spec, "--format", "json"], cwd=ROOT,
                             check=True, stdout=subprocess.PIPE).stdout
        listed = json.loads(out.decode("utf-8"))
        got = sorted((o["method"], o["path"], o["operation_id"], o["class"], o["pattern"]) for o in listed)
        want = sorted(r + (contract.Operation(*r).pattern(),) for r in rows)
        if got != want:
            for row in sorted(set(got) ^ set(want)):
                print("  %s %s" % ("cli only:  " if row in got else "table only:", row), file=sys.stderr)
            raise Failure("%s: the operation table differs from `retrygen list`" % spec)
        text = subprocess.run(["cargo", "run", "-q", "--", "list", "--spec", spec], cwd=ROOT, check=True,
                              stdout=subprocess.PIPE).stdout.decode("utf-8")
        if 'base path "%s"' % base not in text:
            raise Failure("%s: base path is not %r" % (spec, base))
        print("%s: %d operations agree with `retrygen list`, base path %s" % (spec, len(rows), base))


# =============================================================================================


# Decimal spellings used instead of Python's shortest repr. serde_json without its
# `float_roundtrip` feature (as the xtask that reads these files is built) parses
# "0.9999999999999999" as 1.0; the 17-digit spelling gives every parser the intended double.
FLOAT_SPELLINGS = {ALMOST_ONE: "0.99999999999999989"}


def json_text(value):
    """Compact JSON, keys in insertion order, ASCII only, floats spelled as above."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return json.dumps(value, ensure_ascii=True)
    if isinstance(value, float):
        text = FLOAT_SPELLINGS.get(value, repr(value))
        if float(text) != value or text in ("nan", "inf", "-inf"):
            raise Failure("cannot spell %r" % value)
        return text
    if isinstance(value, list):
        return "[" + ", ".join(json_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join("%s: %s" % (json.dumps(k, ensure_ascii=True), json_text(v)) for k, v in value.items()) + "}"
    raise Failure("cannot write %r" % (value,))


def render(doc):
    """One case per line, keys in a fixed order, ASCII only, trailing newline."""
    lines = ["{", ' "description": %s,' % json.dumps(doc["description"], ensure_ascii=True), ' "cases": [']
    cases = doc["cases"]
    for i, case in enumerate(cases):
        text = json_text(case)
        if json.loads(text) != case:
            raise Failure("%s: does not read back" % case["name"])
        lines.append("  " + text + ("," if i + 1 < len(cases) else ""))
    lines.append(" ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv):
    check_only = "--check" in argv
    try:
        if "--check-cli" in argv:
            check_cli()
        outputs = [(DECIDE_JSON, render(build_decide())), (CLASSIFY_JSON, render(build_classify()))]
        for file_name, doc in generate_v2.build_all(TABLES):
            outputs.append((os.path.join(ROOT, "conformance", "vectors", file_name), render(doc)))
        # Contract v3: its own folder, which `cargo xtask conformance-v3` reads.
        for file_name, doc in generate_v3.build_all():
            outputs.append((os.path.join(ROOT, "conformance", "vectors", "v3", file_name), render(doc)))
    except (Failure, generate_v2.Failure, generate_v3.Failure) as e:
        print("generate.py: FAILED: %s" % e, file=sys.stderr)
        return 1
    stale = []
    for path, text in outputs:
        json.loads(text)  # well-formed
        current = None
        if os.path.exists(path):
            with open(path, "r", encoding="utf-8", newline="") as f:
                current = f.read()
        if current != text:
            stale.append(path)
            if not check_only:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8", newline="\n") as f:
                    f.write(text)
        print("%s: %d cases%s" % (os.path.relpath(path, ROOT), len(json.loads(text)["cases"]),
                                  (" (stale)" if check_only else " (written)") if current != text else ""))
    if check_only and stale:
        print("generate.py: stale: %s; run python3 conformance/reference/generate.py" % ", ".join(stale),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
