"""The contract v3 vectors (docs/contract.md), written by generate.py into conformance/vectors/v3/:

    v3_decide.json    decide3 cases: streams (R5a, S9), preconditions (R6a), problem types (R6b,
                      R9a), throttling (T1, K2), the aws-2026 preset (T2), the reported over-cap
                      delay (R14)
    v3_invalid.json   invalid cases for the new policy keys and inputs
    v3_budget.json    budget sequences with the `throttling` kind
    v3_probes.json    precondition (H2), problem (Q1-Q2), sse (E2) and key_format (F1) cases

Every case carries "contract": 3; `cargo xtask conformance` reads only conformance/vectors/*.json
(v2) until the runtimes implement v3. Strings that may hold anything (problem types, the stream's
reconnection time, header values, bodies) are written as UTF-8 hex (WTF-8 for lone surrogates) in
fields ending in `_hex`. `example:`/`hand:` cases carry hand-written expectations checked against
contract_v3.py; the rest are computed by it.
"""

import contract
import contract_v3 as v3
import generate_v2

NOW = generate_v2.NOW
NAN = generate_v2.NAN
QUOTA = v3.QUOTA_EXCEEDED
REDUCED = "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity"
V3_KEYS = list(v3.DEFAULT_POLICY_V3)


class Failure(Exception):
    pass


def hx(text):
    return None if text is None else text.encode("utf-8", "surrogatepass").hex()


def unhex(text):
    return None if text is None else bytes.fromhex(text).decode("utf-8", "surrogatepass")


def compact_policy(name, policy):
    policy = v3.resolve_preset(policy or {})
    out = {}
    for k in policy:
        if k not in v3.DEFAULT_POLICY_V3:
            raise Failure("%s: unknown policy key %s" % (name, k))
    for k in V3_KEYS:
        if k in policy and not (policy[k] == v3.DEFAULT_POLICY_V3[k]
                                and type(policy[k]) is type(v3.DEFAULT_POLICY_V3[k])):
            out[k] = policy[k]
    if isinstance(out.get("multiplier"), int) and not isinstance(out.get("multiplier"), bool):
        out["multiplier"] = float(out["multiplier"])
    return out


status = generate_v2.status
failure = generate_v2.failure


def d3(name, outcome, policy=None, cls="idempotent", key=False, precondition=False, resumable=False,
       last_event_id=False, stream_retry=None, problem_type=None, retries_used=0, elapsed_ms=0,
       previous_delay_ms=0, now_ms=NOW, random=0.5, budget_tokens=None, timed_out=False, kind="decide3"):
    return {
        "name": name,
        "kind": kind,
        "contract": 3,
        "policy": compact_policy(name, policy),
        "input": {
            "class": cls,
            "has_idempotency_key": key,
            "has_precondition": precondition,
            "resumable": resumable,
            "has_last_event_id": last_event_id,
            "stream_retry_hex": hx(stream_retry),
            "problem_type_hex": hx(problem_type),
            "outcome": outcome,
            "retries_used": retries_used,
            "elapsed_ms": elapsed_ms,
            "previous_delay_ms": previous_delay_ms,
            "now_ms": now_ms,
            "random": random,
            "budget_tokens": budget_tokens,
            "timed_out": timed_out,
        },
    }


def as_input(case):
    inp = dict(case["input"])
    inp["stream_retry"] = unhex(inp.pop("stream_retry_hex"))
    inp["problem_type"] = unhex(inp.pop("problem_type_hex"))
    return inp


def run_decide(case):
    return v3.decide_v3(dict(case["policy"]), as_input(case))


def retry(delay, reason, tokens=None, throttled=False):
    return {"retry": True, "delay_ms": delay, "reason": reason, "budget_tokens": tokens, "throttled": throttled,
            "server_delay_ms": None}


def stop(reason, tokens=None, asked=None):
    return {"retry": False, "delay_ms": 0, "reason": reason, "budget_tokens": tokens, "throttled": False,
            "server_delay_ms": asked}


DROP = failure("dropped")
AWS = {"preset": "aws-2026"}

HAND = [
    # Streams (A6-A7, R5a, S9)
    (d3("example: a dropped resumable stream with a last event id resumes after its retry field", DROP,
        cls="non_replayable", resumable=True, last_event_id=True, stream_retry="3000"),
     retry(3000, "stream_resume")),
    (d3("example: a dropped resumable stream without a retry field resumes after the backoff", DROP,
        resumable=True, last_event_id=True), retry(250, "stream_resume")),
    (d3("example: a non_replayable stream without a last event id is not resumed (a full replay)", DROP,
        cls="non_replayable", resumable=True), stop("stream_not_resumable")),
    (d3("hand: an idempotent stream without a last event id resumes from the start", DROP, resumable=True),
     retry(250, "stream_resume")),
    (d3("example: a stream that is not resumable surfaces its drop", DROP, last_event_id=True),
     stop("stream_not_resumable")),
    (d3("hand: a keyed stream with its key and no last event id resumes", DROP, cls="keyed", key=True,
        resumable=True), retry(250, "stream_resume")),
    (d3("hand: a keyed stream without its key or a last event id is not resumed", DROP, cls="keyed",
        resumable=True), stop("stream_not_resumable")),
    (d3("hand: a no_retry stream is never resumed", DROP, cls="no_retry", resumable=True, last_event_id=True),
     stop("no_retry_operation")),
    (d3("hand: resumes count against max_retries", DROP, resumable=True, last_event_id=True, retries_used=3),
     stop("exhausted")),
    (d3("hand: a retry field over the cap is refused and reported", DROP, resumable=True, last_event_id=True,
        stream_retry="120000"), stop("retry_after_over_cap", asked=120000)),
    (d3("hand: a retry field over the cap is clamped in clamp mode", DROP, resumable=True, last_event_id=True,
        stream_retry="120000", policy={"retry_after_over_cap": "clamp"}), retry(60000, "stream_resume")),
    (d3("hand: a retry field that is not digits is ignored", DROP, resumable=True, last_event_id=True,
        stream_retry=" 3000"), retry(250, "stream_resume")),
    (d3("hand: a retry field of 16 digits is over any cap, reported saturated", DROP, resumable=True,
        last_event_id=True, stream_retry="1000000000000000"), stop("retry_after_over_cap", asked=2**53 - 1)),
    (d3("hand: a retry field of 0 resumes at once", DROP, resumable=True, last_event_id=True, stream_retry="0"),
     retry(0, "stream_resume")),
    (d3("hand: a status outcome ignores the stream's retry field", status(503), stream_retry="3000"),
     retry(250, "retryable_status")),
    (d3("hand: a resume pays the budget like a retry", DROP, resumable=True, last_event_id=True,
        budget_tokens=500), retry(250, "stream_resume", tokens=495)),
    (d3("hand: a resume past the deadline stops", DROP, resumable=True, last_event_id=True, stream_retry="2000",
        elapsed_ms=59000, policy={"deadline_ms": 60000}), stop("deadline")),
    # Preconditions (H2, R6a)
    (d3("example: a conditional non_replayable request is replayed after a transport failure",
        failure("transport"), cls="non_replayable", precondition=True), retry(250, "transport_failure")),
    (d3("example: a 412 after a replayed conditional request ends with precondition_failed_after_replay",
        status(412), cls="non_replayable", precondition=True, retries_used=1),
     stop("precondition_failed_after_replay")),
    (d3("hand: a 412 on the first attempt is an ordinary status", status(412), cls="non_replayable",
        precondition=True), stop("status_not_retryable")),
    (d3("hand: a 412 after a replay without a precondition is an ordinary status", status(412), retries_used=1),
     stop("status_not_retryable")),
    (d3("hand: a conditional keyed request without its key is replayable", status(503), cls="keyed",
        precondition=True), retry(250, "retryable_status")),
    (d3("hand: a precondition does not lift no_retry", failure("transport"), cls="no_retry", precondition=True),
     stop("no_retry_operation")),
    (d3("hand: a directive false wins over a 412 after a replay", status(412, directive="false"),
        precondition=True, retries_used=1), stop("server_said_no")),
    # Problem types (R6b, R9a)
    (d3("example: a quota-exceeded 429 stops at once", status(429), cls="non_replayable", problem_type=QUOTA),
     stop("problem_type_stop")),
    (d3("hand: a quota-exceeded 503 with Retry-After stops", status(503, retry_after="5"), problem_type=QUOTA),
     stop("problem_type_stop")),
    (d3("hand: a stop problem type wins over a directive true", status(503, directive="true"),
        problem_type=QUOTA), stop("problem_type_stop")),
    (d3("hand: a directive false wins over a stop problem type", status(429, directive="false"),
        problem_type=QUOTA), stop("server_said_no")),
    (d3("hand: problem types compare exactly", status(429), problem_type=QUOTA.upper()),
     retry(250, "rejected_status", throttled=True)),
    (d3("hand: no stop problem types, the status decides", status(429), problem_type=QUOTA,
        policy={"stop_problem_types": []}), retry(250, "rejected_status", throttled=True)),
    (d3("example: a retry problem type makes a 400 eligible on a replayable request", status(400),
        problem_type=REDUCED, policy={"retry_problem_types": [REDUCED]}), retry(250, "problem_type_retry")),
    (d3("hand: a retry problem type does not make a non_replayable request replayable", status(400),
        cls="non_replayable", problem_type=REDUCED, policy={"retry_problem_types": [REDUCED]}),
     stop("status_not_retryable")),
    (d3("hand: a failure has no problem type", failure("transport"), cls="non_replayable", problem_type=QUOTA),
     stop("not_replayable")),
    (d3("hand: a stop problem type stops a keyed request carrying its key on 409", status(409), cls="keyed",
        key=True, problem_type=QUOTA), stop("problem_type_stop")),
    # Throttling (T1, K2, T2)
    (d3("example: a throttled 429 uses the throttling base", status(429),
        policy={"throttling_initial_backoff_ms": 1000, "max_backoff_ms": 20000}),
     retry(500, "rejected_status", throttled=True)),
    (d3("hand: a 503 is not throttling and keeps the base", status(503),
        policy={"throttling_initial_backoff_ms": 1000}), retry(250, "retryable_status")),
    (d3("hand: throttled, no throttling base: today's backoff", status(429)),
     retry(250, "rejected_status", throttled=True)),
    (d3("hand: a throttled retry pays the throttling cost", status(429), budget_tokens=500,
        policy={"budget_throttling_cost": 2}), retry(250, "rejected_status", tokens=498, throttled=True)),
    (d3("hand: a throttled retry with a server delay waits the server's", status(429, retry_after="2"),
        policy={"throttling_initial_backoff_ms": 1000}), retry(2000, "rejected_status", throttled=True)),
    (d3("hand: a refused throttled decision is not throttled", status(429), retries_used=3), stop("exhausted")),
    (d3("example: aws-2026, a transient 503 on the first retry", status(503), policy=AWS, budget_tokens=500),
     retry(25, "retryable_status", tokens=486)),
    (d3("example: aws-2026, a throttled 429 on the first retry", status(429), policy=AWS, budget_tokens=500),
     retry(500, "rejected_status", tokens=495, throttled=True)),
    (d3("example: aws-2026, a timeout costs what a transient failure costs", failure("transport"), policy=AWS,
        timed_out=True, budget_tokens=500), retry(25, "transport_failure", tokens=486)),
    (d3("hand: aws-2026 makes 3 attempts", status(503), policy=AWS, retries_used=2), stop("exhausted")),
    (d3("hand: aws-2026, the throttling base grows and is capped", status(429), policy=AWS, retries_used=1,
        random=0.99), retry(1980, "rejected_status", throttled=True)),
    # The server's asked delay, reported when refused (R14)
    (d3("example: an over-cap Retry-After is reported", status(503, retry_after="120")),
     stop("retry_after_over_cap", asked=120000)),
    (d3("hand: an over-cap retry-after-ms is reported", status(503, retry_after_ms="90000.5")),
     stop("retry_after_over_cap", asked=90000)),
    (d3("hand: an over-cap HTTP-date is reported", status(503, retry_after="Sun, 06 Nov 1994 08:51:37 GMT")),
     stop("retry_after_over_cap", asked=120000)),
    (d3("hand: a huge Retry-After is reported saturated", status(503, retry_after="9999999999999999")),
     stop("retry_after_over_cap", asked=2**53 - 1)),
    (d3("hand: a clamped delay is not reported", status(503, retry_after="120"),
        policy={"retry_after_over_cap": "clamp"}), retry(60000, "retryable_status")),
]


def gen_streams():
    out = []
    for cls in contract.CLASSES:
        for key in (False, True):
            for resumable in (False, True):
                for last in (False, True):
                    for retry_field in (None, "0", "1500", "60000", "60001", "x"):
                        out.append(d3("stream: %s key=%s resumable=%s last_id=%s retry=%r" % (
                            cls, key, resumable, last, retry_field), DROP, cls=cls, key=key, resumable=resumable,
                            last_event_id=last, stream_retry=retry_field))
    return out


def gen_preconditions():
    out = []
    for cls in contract.CLASSES:
        for pre in (False, True):
            for outcome, label in ((failure("transport"), "transport"), (failure("connect"), "connect"),
                                   (status(503), "503"), (status(502), "502"), (status(412), "412"),
                                   (status(409), "409")):
                for used in (0, 1):
                    out.append(d3("precondition: %s pre=%s %s retries_used=%d" % (cls, pre, label, used), outcome,
                                  cls=cls, precondition=pre, retries_used=used))
    return out


def gen_problems():
    out = []
    lists = [("default lists", None), ("retry reduced", {"retry_problem_types": [REDUCED]}),
             ("both empty", {"stop_problem_types": []})]
    for label, policy in lists:
        for cls in ("idempotent", "non_replayable"):
            for code in (400, 409, 429, 503):
                for problem in (None, QUOTA, REDUCED, "about:blank", "/problems/local"):
                    out.append(d3("problem: %s %s %d %s" % (label, cls, code, problem), status(code), cls=cls,
                                  problem_type=problem, policy=policy))
    return out


def gen_throttling():
    out = []
    policies = [("default", None), ("base 1000", {"throttling_initial_backoff_ms": 1000}),
                ("base 1000 decorrelated", {"throttling_initial_backoff_ms": 1000, "jitter": "decorrelated"}),
                ("503 throttles", {"throttling_statuses": [429, 503], "throttling_initial_backoff_ms": 2000}),
                ("aws-2026", AWS)]
    for label, policy in policies:
        for code in (429, 503, 500):
            for used in (0, 1, 2):
                for tokens in (None, 500, 6):
                    out.append(d3("throttling: %s %d retries_used=%d tokens=%s" % (label, code, used, tokens),
                                  status(code), policy=policy, retries_used=used, budget_tokens=tokens,
                                  previous_delay_ms=700 if used else 0))
    return out


def build_decide():
    cases = []
    for case, expected in HAND:
        got = run_decide(case)
        if got != expected:
            raise Failure("hand case %r: written %r, contract_v3.py says %r" % (case["name"], expected, got))
        case["expect"] = expected
        cases.append(case)
    for gen in (gen_streams, gen_preconditions, gen_problems, gen_throttling):
        for case in gen():
            case["expect"] = run_decide(case)
            cases.append(case)
    return {
        "description": "Contract v3 decision cases (docs/contract.md sections 3 and 6-9: R5a, R6a, R6b, R9a, S9, "
                       "T1, T2, R14's reported delay). Generated by conformance/reference/generate.py; "
                       "'example:' and 'hand:' cases carry hand-written expectations; do not edit by hand.",
        "cases": cases,
    }


# --- invalid ---


def invalid_decide(name, key, outcome=None, **kw):
    case = d3(name, outcome if outcome is not None else status(503), kind="invalid", **kw)
    case["call"] = "decide"
    case["expect"] = {"error": "invalid_input", "key": key}
    return case


def raw_invalid(name, key, policy, outcome=None):
    """A case whose policy is written as given (compact_policy would resolve or drop keys)."""
    case = invalid_decide(name, key, outcome)
    case["policy"] = policy
    return case


BAD_POLICY = [
    ("throttling_statuses", [99]), ("throttling_statuses", [600]),
    ("throttling_initial_backoff_ms", 0), ("throttling_initial_backoff_ms", 86400001),
    ("budget_throttling_cost", 0), ("budget_throttling_cost", 1000001),
    ("stop_problem_types", [""]), ("stop_problem_types", ["x" * 2049]),
    ("retry_problem_types", [""]),
    ("idempotency_key_format", "UUID"), ("idempotency_key_format", "sf_string"), ("idempotency_key_format", ""),
]


def gen_invalid():
    out = []
    for key, value in BAD_POLICY:
        label = "%r" % (value,) if len(repr(value)) < 40 else "a string of %d characters" % len(value[0])
        out.append(raw_invalid("invalid v3: policy %s %s" % (key, label), "policy." + key, {key: value}))
    out.append(raw_invalid("invalid v3: the throttling base above max", "policy.max_backoff_ms",
                           {"throttling_initial_backoff_ms": 40000}))
    out.append(raw_invalid("invalid v3: v2's keys are checked before v3's", "policy.budget_retry_cost",
                           {"budget_retry_cost": 0, "throttling_statuses": [0]}))
    out.append(raw_invalid("invalid v3: V1 before V2 (a bad v3 key before initial above max)",
                           "policy.idempotency_key_format",
                           {"initial_backoff_ms": 2000, "max_backoff_ms": 1000, "idempotency_key_format": "x"}))
    out.append(raw_invalid("invalid v3: v2's V2 before the throttling base", "policy.max_backoff_ms",
                           {"initial_backoff_ms": 2000, "max_backoff_ms": 1000,
                            "throttling_initial_backoff_ms": 40000}))
    for kind in ("drop", "Dropped", "stream"):
        out.append(invalid_decide("invalid v3: failure %r" % kind, "input.outcome", failure(kind)))
    out.append(invalid_decide("invalid v3: a stream retry field with a lone surrogate", "input.stream_retry", DROP,
                              resumable=True, stream_retry="1\ud800"))
    out.append(invalid_decide("invalid v3: a problem type with a lone surrogate", "input.problem_type",
                              problem_type="urn:\udc00"))
    out.append(invalid_decide("invalid v3: random before the new inputs", "input.random", problem_type="\ud800",
                              random=NAN))
    out.append(budget_invalid("invalid v3: budget kind throttle", "input.budget_kind", [["acquire", "throttle"]]))
    out.append(budget_invalid("invalid v3: budget policy throttling cost", "policy.budget_throttling_cost",
                              [["acquire", "throttling"]], policy={"budget_throttling_cost": 0}))
    return out


def budget_invalid(name, key, events, policy=None):
    return {"name": name, "kind": "invalid", "contract": 3, "call": "budget", "policy": policy or {},
            "events": events, "expect": {"error": "invalid_input", "key": key}}


def run_budget(policy, events):
    p = v3.policy_v3(v3.resolve_preset(policy))
    tokens = contract.budget_new(p)
    initial = tokens
    after = []
    for ev in events:
        if ev[0] == "acquire":
            allowed, tokens = v3.budget_try_acquire_v3(p, tokens, ev[1])
            after.append({"allowed": allowed, "tokens": tokens})
        elif ev[0] == "success":
            tokens = contract.budget_record_success(p, tokens, ev[1])
            after.append({"tokens": tokens})
        else:
            raise Failure("unknown budget event %r" % (ev,))
    return {"initial": initial, "after": after}


def check_invalid(case):
    try:
        if case["call"] == "decide":
            got = v3.decide_v3(case["policy"], as_input(case))
        else:
            got = run_budget(case["policy"], case["events"])
    except contract.Invalid as e:
        if e.key != case["expect"]["key"]:
            raise Failure("%s: written key %s, contract_v3.py raises %s" % (case["name"], case["expect"]["key"],
                                                                           e.key))
        return
    raise Failure("%s: contract_v3.py does not reject it (gives %r)" % (case["name"], got))


def build_invalid():
    cases = gen_invalid()
    for case in cases:
        check_invalid(case)
    return {
        "description": "Contract v3 invalid inputs (docs/contract.md, V1-V2 extended, V3 with `dropped`, the new "
                       "inputs' strings): every language reports invalid_input with this message key. Generated by "
                       "conformance/reference/generate.py; do not edit by hand.",
        "cases": cases,
    }


# --- budget ---

R, T, TH = ("acquire", "retry"), ("acquire", "timeout"), ("acquire", "throttling")
seq = generate_v2.seq
S = generate_v2.S

BUDGET_HAND = [
    ("example: aws-2026, 35 transient retries empty the bucket (14 each), throttled ones still pass until 5",
     AWS, seq((35, R), (1, R), (2, TH)),
     {"initial": 500, "after": [{"allowed": True, "tokens": 500 - 14 * i} for i in range(1, 36)]
      + [{"allowed": False, "tokens": 10}, {"allowed": True, "tokens": 5}, {"allowed": True, "tokens": 0}]}),
    ("hand: without a throttling cost, throttling costs a retry", {}, seq((1, TH), (1, R)),
     {"initial": 500, "after": [{"allowed": True, "tokens": 495}, {"allowed": True, "tokens": 490}]}),
    ("hand: a success after a throttled retry gives its cost back", {"budget_throttling_cost": 3},
     seq((1, TH), (1, S(3))), {"initial": 500, "after": [{"allowed": True, "tokens": 497}, {"tokens": 500}]}),
    ("hand: throttling with the budget disabled", {"budget_capacity": 0, "budget_throttling_cost": 3},
     seq((2, TH)), {"initial": 0, "after": [{"allowed": True, "tokens": 0}] * 2}),
]


def build_budget():
    cases = []
    for name, policy, events, expected in BUDGET_HAND:
        got = run_budget(policy, events)
        if got != expected:
            raise Failure("budget case %r: written %r, contract_v3.py says %r" % (name, expected, got))
        cases.append({"name": name, "kind": "budget", "contract": 3, "policy": compact_policy(name, policy),
                      "events": [list(e) for e in events], "expect": expected})
    return {
        "description": "Contract v3 retry budget sequences (docs/contract.md, K2 with the `throttling` "
                       "kind). Generated by conformance/reference/generate.py; do not edit by hand.",
        "cases": cases,
    }


# --- probes: has_precondition, problem types, the event scanner, key formats ---

PRECONDITION_CASES = [
    ("example: If-Match with an entity tag", [("If-Match", '"v7"')], True),
    ("hand: If-Match with a weak tag still counts (strong comparison never matches it again)",
     [("if-match", 'W/"v7"')], True),
    ("example: If-Match * does not count", [("If-Match", "*")], False),
    ("hand: If-Match * with spaces does not count", [("If-Match", " * ")], False),
    ("hand: an empty If-Match does not count", [("If-Match", " \t")], False),
    ("example: If-None-Match * counts", [("If-None-Match", "*")], True),
    ("hand: If-None-Match * trimmed counts", [("IF-NONE-MATCH", "\t* ")], True),
    ("hand: If-None-Match with a tag does not count", [("If-None-Match", '"v7"')], False),
    ("hand: If-None-Match with a list holding * does not count", [("If-None-Match", '*, "v7"')], False),
    ("example: If-Unmodified-Since does not count (one-second resolution)",
     [("If-Unmodified-Since", "Sun, 06 Nov 1994 08:49:37 GMT")], False),
    ("hand: no headers", [], False),
    ("hand: a repeated field, one counts", [("If-Match", "*"), ("If-Match", '"a"')], True),
    ("hand: a name with a non-ASCII letter is another name", [("\u0130f-Match", '"a"')], False),
    ("hand: other headers only", [("Idempotency-Key", "k"), ("Match", '"a"')], False),
]

SSE_CASES = [
    ("example: two events, the second cut", b"id: 1\ndata: a\n\nid: 2\ndata: b", (15, "1", None)),
    ("example: retry and id taken at dispatch", b"retry: 3000\nid: 7\ndata: x\n\n", (27, "7", "3000")),
    ("hand: a cut event's id and retry are not taken", b"id: 1\n\nretry: 5\nid: 2\n", (7, "1", None)),
    ("hand: CRLF and CR line ends", b"id: a\r\n\r\nid: b\r\rid: c\r", (16, "b", None)),
    ("hand: a CR at the cut may be a CRLF: no dispatch yet", b"id: a\n\r", (0, "", None)),
    ("hand: a BOM is skipped", b"\xef\xbb\xbfid: 1\n\n", (10, "1", None)),
    ("hand: no BOM, nothing complete", b"data: partial", (0, "", None)),
    ("hand: a BOM is complete before the first event", b"\xef\xbb\xbfdata: x", (3, "", None)),
    ("hand: a BOM cut in the middle is not", b"\xef\xbb", (0, "", None)),
    ("hand: an id with NUL is ignored", b"id: 1\n\nid: 2\x00\n\n", (15, "1", None)),
    ("hand: an empty id empties the buffer", b"id: 1\n\nid\n\n", (11, "", None)),
    ("hand: id without a space and with two spaces", b"id:x\n\nid:  y\n\n", (14, " y", None)),
    ("hand: a retry with a sign or a space inside is ignored", b"retry: -1\n\nretry: 1 0\n\nretry: 20\n\n",
     (34, "", "20")),
    ("hand: a comment line and an unknown field", b": ping\nfoo: bar\nid: 9\n\n", (23, "9", None)),
    ("hand: the id persists over later events without one", b"id: 3\ndata: a\n\ndata: b\n\n", (24, "3", None)),
    ("hand: a field named with a colon-less line", b"retry\nid\n\n", (10, "", None)),
    ("hand: invalid UTF-8 in an id is replaced as the standard decodes", b"id: \xff\n\n", (7, "\ufffd", None)),
    ("hand: a blank line alone dispatches nothing but commits", b"\n\n", (2, "", None)),
]

PROBLEM_CASES = [
    ("example: a quota-exceeded problem", "application/problem+json",
     b'{"type": "https://iana.org/assignments/http-problem-types#quota-exceeded", "title": "Quota exceeded"}',
     True, QUOTA),
    ("hand: media type with parameters and in any case", "Application/Problem+JSON; charset=utf-8",
     b'{"type":"urn:a"}', True, "urn:a"),
    ("hand: another media type is not read", "application/json", b'{"type":"urn:a"}', True, None),
    ("hand: no content type", None, b'{"type":"urn:a"}', True, None),
    ("hand: an incomplete body has no type", "application/problem+json", b'{"type":"urn:a"', False, None),
    ("hand: a complete prefix of a longer body has no type", "application/problem+json", b'{"type":"urn:a"}',
     False, None),
    ("hand: type missing", "application/problem+json", b'{"title":"x"}', True, None),
    ("hand: type not a string", "application/problem+json", b'{"type":404}', True, None),
    ("hand: type repeated", "application/problem+json", b'{"type":"urn:a","type":"urn:a"}', True, None),
    ("hand: type nested only", "application/problem+json", b'{"detail":{"type":"urn:a"}}', True, None),
    ("hand: an escaped member name", "application/problem+json", b'{"typ\\u0065":"urn:a"}', True, "urn:a"),
    ("hand: escapes in the value", "application/problem+json", b'{"type":"urn:\\u00e9\\/x\\n"}', True,
     "urn:\u00e9/x\n"),
    ("hand: a surrogate pair escape", "application/problem+json", b'{"type":"\\ud83d\\ude00"}', True, "\U0001f600"),
    ("hand: an escaped lone surrogate", "application/problem+json", b'{"type":"\\ud83d"}', True, None),
    ("hand: raw UTF-8 in the value", "application/problem+json", '{"type":"urn:caf\u00e9"}'.encode(), True,
     "urn:caf\u00e9"),
    ("hand: invalid UTF-8 anywhere", "application/problem+json", b'{"type":"urn:a","x":"\xff"}', True, None),
    ("hand: a control character in a string", "application/problem+json", b'{"type":"a\tb"}', True, None),
    ("hand: trailing garbage", "application/problem+json", b'{"type":"urn:a"} x', True, None),
    ("hand: whitespace around", "application/problem+json", b' \r\n\t{ "type" : "urn:a" } \n', True, "urn:a"),
    ("hand: a top-level array", "application/problem+json", b'[{"type":"urn:a"}]', True, None),
    ("hand: numbers, literals and arrays elsewhere", "application/problem+json",
     b'{"status":429,"x":[1.5e3,-0,true,false,null,{}],"type":"urn:a"}', True, "urn:a"),
    ("hand: a leading zero is not JSON", "application/problem+json", b'{"status":01,"type":"urn:a"}', True, None),
    ("hand: a trailing comma is not JSON", "application/problem+json", b'{"type":"urn:a",}', True, None),
    ("hand: nesting 64 deep is read", "application/problem+json",
     b'{"type":"urn:a","n":' + b'[' * 63 + b']' * 63 + b'}', True, "urn:a"),
    ("hand: nesting 65 deep is not", "application/problem+json",
     b'{"type":"urn:a","n":' + b'[' * 64 + b']' * 64 + b'}', True, None),
    ("hand: an empty type string", "application/problem+json", b'{"type":""}', True, ""),
    ("hand: a body over 65536 bytes has no type", "application/problem+json",
     b'{"type":"urn:a","pad":"' + b'x' * 65520 + b'"}', True, None),
]

KEY_FORMAT_CASES = [
    ("example: a bare UUID", "uuid", "8e03978e-40d5-43e8-bc93-6894a57f9324", "8e03978e-40d5-43e8-bc93-6894a57f9324"),
    ("example: a Structured Field String", "sf-string", "8e03978e-40d5-43e8-bc93-6894a57f9324",
     '"8e03978e-40d5-43e8-bc93-6894a57f9324"'),
]


def build_probes():
    cases = []
    for name, headers, expected in PRECONDITION_CASES:
        if v3.has_precondition(headers) != expected:
            raise Failure("precondition case %r: written %r" % (name, expected))
        cases.append({"name": name, "kind": "precondition", "contract": 3,
                      "headers_hex": [[hx(n), hx(v)] for n, v in headers], "expect": expected})
    for name, content_type, body, complete, expected in PROBLEM_CASES:
        got = v3.problem_type_read(content_type, body, complete)
        if got != expected:
            raise Failure("problem case %r: written %r, contract_v3.py says %r" % (name, expected, got))
        cases.append({"name": name, "kind": "problem", "contract": 3, "content_type": content_type,
                      "body_hex": body.hex(), "complete": complete, "expect": {"problem_type_hex": hx(expected)}})
    for name, data, (length, last_id, retry_field) in SSE_CASES:
        got = v3.sse_scan(data)
        if got != (length, last_id, retry_field):
            raise Failure("sse case %r: written %r, contract_v3.py says %r" % (name, (length, last_id, retry_field),
                                                                              got))
        cases.append({"name": name, "kind": "sse", "contract": 3, "stream_hex": data.hex(),
                      "expect": {"complete_bytes": length, "last_event_id_hex": hx(last_id),
                                 "retry_hex": hx(retry_field)}})
    for name, fmt, uuid, expected in KEY_FORMAT_CASES:
        if v3.idempotency_key_value(fmt, uuid) != expected:
            raise Failure("key format case %r" % name)
        cases.append({"name": name, "kind": "key_format", "contract": 3, "format": fmt, "uuid": uuid,
                      "expect": expected})
    return {
        "description": "Contract v3 pure functions: has_precondition (H2), the problem type of a response (Q1-Q2), "
                       "the event-stream scanner (E2) and the idempotency key's format (F1). Expectations written by "
                       "hand in conformance/reference/generate_v3.py and checked there; do not edit by hand.",
        "cases": cases,
    }


def build_all():
    docs = [("v3_budget.json", build_budget()), ("v3_decide.json", build_decide()),
            ("v3_invalid.json", build_invalid()), ("v3_probes.json", build_probes())]
    names = set()
    for _, doc in docs:
        for case in doc["cases"]:
            if case["name"] in names:
                raise Failure("duplicate case name %r" % case["name"])
            names.add(case["name"])
        doc["cases"] = [generate_v2.spell_specials(c) for c in doc["cases"]]
    return docs
