"""The contract v2 vectors (docs/contract.md, the rules marked v2), written by generate.py:

    conformance/vectors/v2_decide.json    decide2 cases (directives, keyed statuses, over-cap
                                          mode, retry_only_with_server_delay, the budget inside
                                          decide, the seed's policy)
    conformance/vectors/v2_invalid.json   invalid cases: inputs every language must reject with
                                          the same message key, never a decision
    conformance/vectors/v2_budget.json    budget cases: event sequences with the state after each
    conformance/vectors/v2_classify.json  classify2 (runtime base, full URLs, percent-encoding,
                                          unknown_operation_class), safe_list, has_key and event

Every case carries "contract": 2 so that `cargo xtask conformance` leaves them out until the
runtimes implement v2 (RETRYGEN_CONTRACT=2 switches them on). Cases named `example:` or `hand:`
carry expectations written by hand (checked against contract.py); the rest are computed by
contract.py.
"""

import contract

NOW = 784111777000
ALMOST_ONE = 0.9999999999999999
NAN = float("nan")

SANDBOX = "specs/sandbox.yaml"
MATCHING = "specs/matching.yaml"

# The seed's shipped behaviour (docs/contract.md section 4, "The seed's policy").
SEED_POLICY = {
    "initial_backoff_ms": 100,
    "max_backoff_ms": 10000,
    "jitter": "equal",
    "retryable_statuses": [],
    "rejected_statuses": [429, 502, 503],
    "retry_only_with_server_delay": [429],
    "deadline_ms": 60000,
    "key_in_flight_statuses": [],
    "key_reused_statuses": [],
    "server_directive_headers": [],
    "budget_capacity": 0,
}

V2_KEYS = list(contract.DEFAULT_POLICY_V2)


class Failure(Exception):
    pass


def compact_policy(name, policy):
    policy = dict(policy or {})
    for k in policy:
        if k not in contract.DEFAULT_POLICY_V2:
            raise Failure("%s: unknown policy key %s" % (name, k))
    out = {}
    for k in V2_KEYS:
        if k in policy and not (policy[k] == contract.DEFAULT_POLICY_V2[k]
                                and type(policy[k]) is type(contract.DEFAULT_POLICY_V2[k])):
            out[k] = policy[k]
    if isinstance(out.get("multiplier"), int) and not isinstance(out.get("multiplier"), bool):
        out["multiplier"] = float(out["multiplier"])
    return out


def status(code, retry_after=None, retry_after_ms=None, directive=None):
    return {"status": code, "retry_after": retry_after, "retry_after_ms": retry_after_ms, "directive": directive}


def failure(kind):
    return {"failure": kind}


def d2(name, outcome, policy=None, cls="idempotent", key=False, retries_used=0, elapsed_ms=0, previous_delay_ms=0,
       now_ms=NOW, random=0.5, budget_tokens=None, timed_out=False, kind="decide2"):
    return {
        "name": name,
        "kind": kind,
        "contract": 2,
        "policy": compact_policy(name, policy),
        "input": {
            "class": cls,
            "has_idempotency_key": key,
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


def retry(delay, reason, tokens=None):
    return {"retry": True, "delay_ms": delay, "reason": reason, "budget_tokens": tokens}


def stop(reason, tokens=None):
    return {"retry": False, "delay_ms": 0, "reason": reason, "budget_tokens": tokens}


def run_decide(case):
    p = dict(case["policy"])
    return contract.decide_v2(p, case["input"])


# ---------------------------------------------------------------------------------------------
# decide2: hand-written first (contract section 4, v2 examples)
# ---------------------------------------------------------------------------------------------

HAND = [
    # Server directives
    (d2("example: x-should-retry false stops a retryable 503", status(503, directive="false")),
     stop("server_said_no")),
    (d2("example: x-should-retry true makes 404 eligible (idempotent)", status(404, directive="true")),
     retry(250, "server_said_yes")),
    (d2("example: x-should-retry true does not make a non_replayable 404 replayable", status(404, directive="true"),
        cls="non_replayable"), stop("status_not_retryable")),
    (d2("example: x-should-retry true on a non_replayable 503 stays not_replayable", status(503, directive="true"),
        cls="non_replayable"), stop("not_replayable")),
    (d2("example: x-should-retry false stops even a rejected 429", status(429, directive="false"),
        cls="non_replayable"), stop("server_said_no")),
    (d2("hand: directive compared case-insensitively and trimmed", status(404, directive=" TRUE\t")),
     retry(250, "server_said_yes")),
    (d2("hand: an unknown directive is ignored", status(404, directive="yes")), stop("status_not_retryable")),
    (d2("hand: directives off (no header names) ignore the value", status(503, directive="false"),
        policy={"server_directive_headers": []}), retry(250, "retryable_status")),
    (d2("hand: failures have no directive", failure("transport"), cls="non_replayable"), stop("not_replayable")),
    # Certificate failures (R1): provably unsent, but a retry meets the same certificate
    (d2("example: a refused certificate stops an idempotent request", failure("certificate")),
     stop("certificate_failure")),
    (d2("hand: a refused certificate stops before no_retry", failure("certificate"), cls="no_retry"),
     stop("certificate_failure")),
    (d2("hand: a refused certificate stops before exhausted", failure("certificate"), retries_used=3),
     stop("certificate_failure")),
    (d2("hand: a refused certificate on a create", failure("certificate"), cls="non_replayable"),
     stop("certificate_failure")),
    (d2("hand: a refused certificate spends no budget", failure("certificate"), budget_tokens=500, timed_out=True),
     stop("certificate_failure", 500)),
    # Keyed statuses
    (d2("example: 409 with the key is key_in_flight", status(409), cls="keyed", key=True),
     retry(250, "key_in_flight")),
    (d2("example: 422 with the key is key_reused", status(422), cls="keyed", key=True), stop("key_reused")),
    (d2("example: 409 without the key is not retryable", status(409), cls="keyed"), stop("status_not_retryable")),
    (d2("hand: 409 key_in_flight for any class carrying a key", status(409), cls="non_replayable", key=True),
     retry(250, "key_in_flight")),
    (d2("hand: key_in_flight honours Retry-After", status(409, "2"), cls="keyed", key=True),
     retry(2000, "key_in_flight")),
    (d2("hand: x-should-retry true does not override key_reused", status(422, directive="true"), cls="keyed",
        key=True), stop("key_reused")),
    (d2("hand: x-should-retry false beats key_in_flight", status(409, directive="false"), cls="keyed", key=True),
     stop("server_said_no")),
    (d2("hand: key statuses configurable (425 in flight)", status(425), cls="keyed", key=True,
        policy={"key_in_flight_statuses": [425], "retryable_statuses": []}), retry(250, "key_in_flight")),
    (d2("hand: no_retry beats key_in_flight", status(409), cls="no_retry", key=True), stop("no_retry_operation")),
    (d2("hand: exhausted beats key_in_flight", status(409), cls="keyed", key=True, retries_used=3),
     stop("exhausted")),
    # Over-cap mode
    (d2("example: Retry-After 120 refused (default)", status(503, "120")), stop("retry_after_over_cap")),
    (d2("example: Retry-After 120 clamped to 60000", status(503, "120"), policy={"retry_after_over_cap": "clamp"}),
     retry(60000, "retryable_status")),
    (d2("hand: clamp a 16-digit Retry-After", status(503, "1000000000000000"),
        policy={"retry_after_over_cap": "clamp", "retry_after_cap_ms": 5000}), retry(5000, "retryable_status")),
    (d2("hand: clamp to cap 0", status(503, "1"), policy={"retry_after_over_cap": "clamp", "retry_after_cap_ms": 0}),
     retry(0, "retryable_status")),
    (d2("hand: clamped delay still meets the deadline", status(503, "120"),
        policy={"retry_after_over_cap": "clamp", "deadline_ms": 50000}), stop("deadline")),
    # Only with a server delay
    (d2("example: seed 429 without Retry-After stops", status(429), policy=SEED_POLICY, cls="non_replayable"),
     stop("no_server_delay")),
    (d2("example: seed 429 with Retry-After 2 waits 2 s", status(429, "2"), policy=SEED_POLICY,
        cls="non_replayable"), retry(2000, "rejected_status")),
    (d2("example: seed 503 without Retry-After backs off (equal jitter: 50 + 0.5 * 50)", status(503),
        policy=SEED_POLICY, cls="non_replayable"), retry(75, "rejected_status")),
    (d2("example: seed 502 after 2 retries (200 + 0.5 * 200)", status(502), policy=SEED_POLICY,
        cls="non_replayable", retries_used=2), retry(300, "rejected_status")),
    (d2("example: seed 504 is never retried", status(504), policy=SEED_POLICY), stop("status_not_retryable")),
    (d2("example: seed 500 is never retried", status(500), policy=SEED_POLICY), stop("status_not_retryable")),
    (d2("example: seed connect failure on a create", failure("connect"), policy=SEED_POLICY, cls="non_replayable"),
     retry(75, "connect_failure")),
    (d2("example: seed transport failure on a create", failure("transport"), policy=SEED_POLICY,
        cls="non_replayable"), stop("not_replayable")),
    (d2("example: seed transport failure on a delete", failure("transport"), policy=SEED_POLICY),
     retry(75, "transport_failure")),
    (d2("example: seed backoff capped at 10 s (r7: 5000 + 0.5 * 5000)", failure("connect"),
        policy=dict(SEED_POLICY, max_retries=10), retries_used=7), retry(7500, "connect_failure")),
    (d2("hand: seed 429 with an ignored Retry-After stops", status(429, "soon"), policy=SEED_POLICY),
     stop("no_server_delay")),
    (d2("hand: seed 429 with retry-after-ms", status(429, None, "150"), policy=SEED_POLICY), retry(150,
                                                                                                  "rejected_status")),
    # The budget inside decide
    (d2("example: budget 500, a retry takes 5", failure("connect"), budget_tokens=500),
     retry(250, "connect_failure", 495)),
    (d2("example: budget 10, a timeout takes 10", failure("transport"), budget_tokens=10, timed_out=True),
     retry(250, "transport_failure", 0)),
    (d2("example: budget 4 cannot pay a retry", status(503), budget_tokens=4), stop("budget_exhausted", 4)),
    (d2("hand: budget 9 cannot pay a timeout", failure("connect"), budget_tokens=9, timed_out=True),
     stop("budget_exhausted", 9)),
    (d2("hand: a stop costs nothing", status(404), budget_tokens=7), stop("status_not_retryable", 7)),
    (d2("hand: deadline stops before the budget is charged", status(503), budget_tokens=500,
        policy={"deadline_ms": 100}), stop("deadline", 500)),
    (d2("hand: budget disabled (capacity 0) lets the retry through", status(503), budget_tokens=0,
        policy={"budget_capacity": 0}), retry(250, "retryable_status", 0)),
]


def gen_directives():
    out = []
    combos = [("idempotent", False), ("keyed", True), ("keyed", False), ("non_replayable", False)]
    for directive in (None, "true", "false", "False", " true ", "1", ""):
        for cls, key in combos:
            for code in (200, 404, 409, 422, 429, 500, 503):
                name = "directive: %r, %s %s key, status %d" % (directive, cls, "with" if key else "without", code)
                out.append(d2(name, status(code, directive=directive), cls=cls, key=key))
    for headers in ([], ["Stripe-Should-Retry"], ["x-should-retry", "stripe-should-retry"]):
        for directive in ("true", "false"):
            name = "directive: headers %r, value %s, 404" % (headers, directive)
            out.append(d2(name, status(404, directive=directive), policy={"server_directive_headers": headers}))
    return out


def gen_keyed():
    out = []
    lists = [
        ("defaults", {}),
        ("empty", {"key_in_flight_statuses": [], "key_reused_statuses": []}),
        ("swapped", {"key_in_flight_statuses": [422], "key_reused_statuses": [409]}),
        ("409 in both", {"key_in_flight_statuses": [409], "key_reused_statuses": [409]}),
        ("in flight 409,429", {"key_in_flight_statuses": [409, 429]}),
    ]
    for label, policy in lists:
        for cls in contract.CLASSES:
            for key in (False, True):
                for code in (409, 422, 429):
                    for retries_used in (0, 3):
                        name = "keyed: %s, %s %s key, %d, retries_used %d" % (
                            label, cls, "with" if key else "without", code, retries_used)
                        out.append(d2(name, status(code), policy=policy, cls=cls, key=key, retries_used=retries_used))
    return out


def gen_over_cap():
    out = []
    headers = [("Retry-After 61", "61", None), ("Retry-After 60", "60", None), ("ms 60001", None, "60001"),
               ("16 digits", "1000000000000000", None), ("ms 16 digits", None, "1000000000000000.5"),
               ("date 2 min ahead", "Sun, 06 Nov 1994 08:51:37 GMT", None), ("Retry-After -3", "-3", None)]
    for mode in contract.OVER_CAP_MODES:
        for cap in (0, 1000, 60000, 86400000):
            for label, ra, ram in headers:
                name = "over cap: %s, cap %d, %s" % (mode, cap, label)
                out.append(d2(name, status(503, ra, ram), policy={"retry_after_over_cap": mode,
                                                                   "retry_after_cap_ms": cap}))
    return out


def gen_only_with_delay():
    out = []
    delays = [("none", None, None), ("Retry-After 2", "2", None), ("Retry-After soon", "soon", None),
              ("Retry-After -1", "-1", None), ("ms 150", None, "150"), ("Retry-After 0", "0", None)]
    for label, policy in (("seed", SEED_POLICY), ("429 and 503", {"retry_only_with_server_delay": [429, 503]})):
        for code in (429, 500, 502, 503, 504):
            for dlabel, ra, ram in delays:
                for cls in ("idempotent", "non_replayable"):
                    name = "only with server delay: %s, %d, %s, %s" % (label, code, dlabel, cls)
                    out.append(d2(name, status(code, ra, ram), policy=policy, cls=cls))
    # A directive or a key status is held to the rule too.
    out.append(d2("only with server delay: directive true on a listed 404", status(404, directive="true"),
                  policy={"retry_only_with_server_delay": [404]}))
    out.append(d2("only with server delay: key_in_flight listed", status(409), cls="keyed", key=True,
                  policy={"retry_only_with_server_delay": [409]}))
    out.append(d2("only with server delay: key_in_flight listed, with delay", status(409, "1"), cls="keyed",
                  key=True, policy={"retry_only_with_server_delay": [409]}))
    return out


def gen_budget_in_decide():
    out = []
    outcomes = [("connect", failure("connect")), ("transport", failure("transport")), ("503", status(503)),
                ("404", status(404)), ("aborted", failure("aborted")),
                ("certificate", failure("certificate"))]
    for tokens in (None, 0, 4, 5, 9, 10, 11, 500):
        for timed_out in (False, True):
            for label, outcome in outcomes:
                name = "budget in decide: tokens %s, %s, %s" % (tokens, "timed out" if timed_out else "not timed out",
                                                              label)
                out.append(d2(name, outcome, budget_tokens=tokens, timed_out=timed_out))
    for cap, cost, tokens in ((0, 5, 0), (1, 1, 1), (1, 2, 1), (1000000, 1000000, 1000000), (20, 7, 13)):
        name = "budget in decide: capacity %d, retry cost %d, tokens %d" % (cap, cost, tokens)
        out.append(d2(name, failure("connect"), budget_tokens=tokens,
                      policy={"budget_capacity": cap, "budget_retry_cost": cost}))
    return out


def gen_seed_matrix():
    out = []
    for cls in contract.CLASSES:
        for label, outcome in (("connect", failure("connect")), ("transport", failure("transport")),
                               ("certificate", failure("certificate")), ("429", status(429)), ("429 Retry-After 1", status(429, "1")),
                               ("502", status(502)), ("503", status(503)), ("503 Retry-After 3", status(503, "3")),
                               ("504", status(504)), ("500", status(500)), ("408", status(408))):
            for retries_used in (0, 1, 3):
                name = "seed: %s, %s, retries_used %d" % (cls, label, retries_used)
                out.append(d2(name, outcome, policy=SEED_POLICY, cls=cls, retries_used=retries_used))
    return out


def build_decide():
    cases = []
    for case, expected in HAND:
        got = run_decide(case)
        if got != expected:
            raise Failure("hand case %r: written %r, contract.py says %r" % (case["name"], expected, got))
        case["expect"] = expected
        cases.append(case)
    for gen in (gen_directives, gen_keyed, gen_over_cap, gen_only_with_delay, gen_budget_in_decide, gen_seed_matrix):
        for case in gen():
            case["expect"] = run_decide(case)
            cases.append(case)
    return {
        "description": "Contract v2 decision cases (docs/contract.md section 3, rules R1-R18). Generated by "
                       "conformance/reference/generate.py; 'example:' and 'hand:' cases carry hand-written "
                       "expectations; do not edit by hand.",
        "cases": cases,
    }


# ---------------------------------------------------------------------------------------------
# invalid
# ---------------------------------------------------------------------------------------------


def invalid_decide(name, key, outcome=None, **kw):
    case = d2(name, outcome if outcome is not None else status(503), kind="invalid", **kw)
    case["call"] = "decide"
    case["expect"] = {"error": "invalid_input", "key": key}
    return case


def _raw_policy(policy):
    """Invalid policy values are written as given (compact_policy would drop defaults only)."""
    return policy


BAD_POLICY = [
    ("max_retries", -1), ("max_retries", 101),
    ("initial_backoff_ms", 0), ("initial_backoff_ms", -5), ("initial_backoff_ms", 86400001),
    ("max_backoff_ms", 0), ("max_backoff_ms", 86400001),
    ("multiplier", NAN), ("multiplier", 0.5), ("multiplier", 10.5), ("multiplier", float("inf")),
    ("multiplier", -2.0), ("multiplier", 0.9999999999999999),
    ("jitter", "Full"), ("jitter", "fancy"), ("jitter", ""), ("jitter", " full"),
    ("retryable_statuses", [99]), ("retryable_statuses", [600]), ("retryable_statuses", [503, -1]),
    ("rejected_statuses", [1000]), ("rejected_statuses", [0]),
    ("retry_after_cap_ms", -1), ("retry_after_cap_ms", 86400001),
    ("deadline_ms", 0), ("deadline_ms", -1), ("deadline_ms", 86400001),
    ("retry_only_with_server_delay", [700]),
    ("key_in_flight_statuses", [99]), ("key_reused_statuses", [600]),
    ("server_directive_headers", [""]), ("server_directive_headers", ["x should retry"]),
    ("server_directive_headers", ["x-should-retry:"]), ("server_directive_headers", ["caf\u00e9"]),
    ("retry_after_over_cap", "Clamp"), ("retry_after_over_cap", "ignore"), ("retry_after_over_cap", ""),
    ("unknown_operation_class", "idempotent"), ("unknown_operation_class", "keyed"),
    ("unknown_operation_class", "none"),
    ("budget_capacity", -1), ("budget_capacity", 1000001),
    ("budget_retry_cost", 0), ("budget_retry_cost", 1000001),
    ("budget_timeout_cost", 0), ("budget_timeout_cost", -10),
    ("budget_success_refund", -1), ("budget_success_refund", 1000001),
]


def gen_invalid():
    out = []
    for key, value in BAD_POLICY:
        label = "%r" % (value,)
        out.append(invalid_decide("invalid: policy %s %s" % (key, label), "policy." + key, policy={key: value}))
    out.append(invalid_decide("invalid: initial above max", "policy.max_backoff_ms",
                              policy={"initial_backoff_ms": 2000, "max_backoff_ms": 1000}))
    out.append(invalid_decide("invalid: the first bad key in table order wins", "policy.max_retries",
                              policy={"max_retries": -1, "jitter": "fancy", "budget_capacity": -1}))
    out.append(invalid_decide("invalid: policy before input", "policy.jitter", policy={"jitter": "x"}, random=NAN))
    for value in (NAN, -0.5, 1.0, 1.5, float("inf"), float("-inf"), -1e-300):
        out.append(invalid_decide("invalid: random %r" % value, "input.random", random=value))
    # every random is checked, even where the decision would not use it
    out.append(invalid_decide("invalid: random NaN on an aborted request", "input.random", failure("aborted"),
                              random=NAN))
    out.append(invalid_decide("invalid: random NaN with a server delay", "input.random", status(503, "2"),
                              random=NAN))
    for cls in ("Idempotent", "keyed ", "", "unknown"):
        out.append(invalid_decide("invalid: class %r" % cls, "input.class", cls=cls))
    for kind in ("timeout", "Connect", "", "Certificate", "tls"):
        out.append(invalid_decide("invalid: failure %r" % kind, "input.outcome", failure(kind)))
    for code in (99, 600, 0, -1, 1000):
        out.append(invalid_decide("invalid: status %d" % code, "input.status", status(code)))
    for field in ("retries_used", "elapsed_ms", "previous_delay_ms"):
        for value in (-1, 2**53):
            out.append(invalid_decide("invalid: %s %d" % (field, value), "input." + field, **{field: value}))
    out.append(invalid_decide("invalid: input order (class before random)", "input.class", cls="x", random=NAN))
    out.append(invalid_decide("invalid: input order (status before retries_used)", "input.status", status(42),
                              retries_used=-1))
    for tokens, policy in ((-1, {}), (501, {}), (1, {"budget_capacity": 0})):
        out.append(invalid_decide("invalid: budget_tokens %d, capacity %d" % (
            tokens, policy.get("budget_capacity", 500)), "input.budget_tokens", budget_tokens=tokens, policy=policy))
    # classify with strings that are not Unicode scalar values (lone surrogates, as WTF-8 hex)
    lone = [("a lone high surrogate", "2fed a080".replace(" ", "")),
            ("a lone low surrogate", "2f73616e64626f786573 2fedb080".replace(" ", "")),
            ("a lone surrogate in a query", "2f73616e64626f7865733f783ded a0bd".replace(" ", ""))]
    for label, target_hex in lone:
        out.append(classify_invalid("invalid: classify path with %s" % label, "input.path", SANDBOX, None, "GET",
                                    target_hex))
    out.append(classify_invalid("invalid: classify method with a lone surrogate", "input.method", SANDBOX, None,
                                "edb080", "2f73616e64626f786573", method_is_hex=True))
    out.append(classify_invalid("invalid: classify base with a lone surrogate", "input.base", SANDBOX,
                                "2f76ed a080".replace(" ", ""), "GET", "2f"))
    out.append(classify_invalid("invalid: base checked before the path", "input.base", SANDBOX, "eda080", "GET",
                                "eda080"))
    out.append(classify_invalid("invalid: classify unknown_operation_class", "policy.unknown_operation_class", SANDBOX,
                                None, "GET", "2f", unknown="idempotent"))
    # budget calls
    out.append(budget_invalid("invalid: budget kind", "input.budget_kind", [["acquire", "slow"]]))
    out.append(budget_invalid("invalid: budget release -1", "input.budget_release", [["success", -1]]))
    out.append(budget_invalid("invalid: budget policy capacity", "policy.budget_capacity", [["acquire", "retry"]],
                              policy={"budget_capacity": -1}))
    out.append(budget_invalid("invalid: budget policy retry cost", "policy.budget_retry_cost", [["acquire", "retry"]],
                              policy={"budget_retry_cost": 0}))
    out.append(budget_invalid("invalid: budget release above the maximum", "input.budget_release",
                              [["success", 1000001]]))
    return out


def classify_invalid(name, key, spec, base_hex, method, target_hex, method_is_hex=False, unknown="method_default"):
    return {"name": name, "kind": "invalid", "contract": 2, "call": "classify", "spec": spec,
            "base_hex": base_hex, "unknown_operation_class": unknown,
            "method_hex": method if method_is_hex else method.encode("utf-8").hex(), "target_hex": target_hex,
            "expect": {"error": "invalid_input", "key": key}}


def budget_invalid(name, key, events, policy=None):
    return {"name": name, "kind": "invalid", "contract": 2, "call": "budget", "policy": policy or {},
            "events": events, "expect": {"error": "invalid_input", "key": key}}


def check_invalid(case):
    """contract.py must raise Invalid with the written key."""
    try:
        if case["call"] == "decide":
            got = contract.decide_v2(case["policy"], case["input"])
        elif case["call"] == "budget":
            got = run_budget(case["policy"], case["events"])
        else:
            got = run_classify_hex(case)
    except contract.Invalid as e:
        if e.key != case["expect"]["key"]:
            raise Failure("%s: written key %s, contract.py raises %s" % (case["name"], case["expect"]["key"], e.key))
        return
    raise Failure("%s: contract.py does not reject it (gives %r)" % (case["name"], got))


def wtf8(hexed):
    return bytes.fromhex(hexed).decode("utf-8", "surrogatepass")


def run_classify_hex(case):
    api = APIS[case["spec"]]
    base = None if case["base_hex"] is None else wtf8(case["base_hex"])
    c = contract.Classifier(api, base, case["unknown_operation_class"])
    return c.classify(wtf8(case["method_hex"]), wtf8(case["target_hex"]))


def build_invalid():
    cases = gen_invalid()
    for case in cases:
        check_invalid(case)
    return {
        "description": "Contract v2 invalid inputs (docs/contract.md section 3, Validation V1-V8): every language "
                       "reports the error invalid_input with this message key, never a decision. Generated by "
                       "conformance/reference/generate.py; do not edit by hand.",
        "cases": cases,
    }


# ---------------------------------------------------------------------------------------------
# budget sequences
# ---------------------------------------------------------------------------------------------


def run_budget(policy, events):
    p = contract.policy_v2(policy)
    tokens = contract.budget_new(p)
    initial = tokens
    after = []
    for ev in events:
        if ev[0] == "acquire":
            allowed, tokens = contract.budget_try_acquire(p, tokens, ev[1])
            after.append({"allowed": allowed, "tokens": tokens})
        elif ev[0] == "success":
            tokens = contract.budget_record_success(p, tokens, ev[1])
            after.append({"tokens": tokens})
        else:
            raise Failure("unknown budget event %r" % (ev,))
    return {"initial": initial, "after": after}


def seq(*parts):
    out = []
    for n, ev in parts:
        out.extend([list(ev)] * n)
    return out


R, T = ("acquire", "retry"), ("acquire", "timeout")


def S(n):
    return ("success", n)


BUDGET_HAND = [
    # AWS standard mode: 500 tokens, 5 a retry, 10 a timeout, 1 back per success without retries.
    ("example: 100 retries empty the bucket, the 101st is refused", {}, seq((101, R)),
     {"initial": 500, "after": [{"allowed": True, "tokens": 500 - 5 * i} for i in range(1, 101)]
      + [{"allowed": False, "tokens": 0}]}),
    ("example: a success after a retry gives its 5 back", {}, seq((1, R), (1, S(5))),
     {"initial": 500, "after": [{"allowed": True, "tokens": 495}, {"tokens": 500}]}),
    ("example: a success without retries refunds 1, never above capacity", {}, seq((1, T), (1, S(0)), (10, S(0))),
     {"initial": 500, "after": [{"allowed": True, "tokens": 490}, {"tokens": 491}] + [
         {"tokens": min(500, 492 + i)} for i in range(10)]}),
    ("example: capacity 0 disables the budget", {"budget_capacity": 0}, seq((3, R), (1, T), (1, S(5)), (1, S(0))),
     {"initial": 0, "after": [{"allowed": True, "tokens": 0}] * 4 + [{"tokens": 0}] * 2}),
    ("hand: a refused acquire takes nothing", {"budget_capacity": 12}, seq((1, T), (1, T), (1, R), (1, R)),
     {"initial": 12, "after": [{"allowed": True, "tokens": 2}, {"allowed": False, "tokens": 2},
                               {"allowed": False, "tokens": 2}, {"allowed": False, "tokens": 2}]}),
]


def gen_budget():
    out = []
    policies = [
        ("AWS defaults", {}),
        ("small", {"budget_capacity": 20, "budget_retry_cost": 3, "budget_timeout_cost": 7,
                   "budget_success_refund": 2}),
        ("costs above capacity", {"budget_capacity": 4}),
        ("refund 0", {"budget_capacity": 10, "budget_success_refund": 0}),
        ("cost 1", {"budget_capacity": 3, "budget_retry_cost": 1, "budget_timeout_cost": 1}),
        ("large", {"budget_capacity": 1000000, "budget_retry_cost": 999999, "budget_timeout_cost": 1000000,
                   "budget_success_refund": 1000000}),
        ("disabled", {"budget_capacity": 0}),
    ]
    patterns = [
        ("retries until refused", seq((8, R))),
        ("timeouts until refused", seq((6, T))),
        ("alternating", seq((1, R), (1, T), (1, R), (1, T), (1, S(10)), (1, R))),
        ("drain then refill", seq((5, T), (3, S(0)), (2, R), (2, S(5)), (1, T))),
        ("successes at full", seq((3, S(0)), (1, S(5)), (1, R))),
        ("release larger than taken", seq((1, R), (1, S(1000)))),
        ("long mixed", [list(R if i % 3 else T) if i % 4 else ["success", i % 11] for i in range(1, 40)]),
    ]
    for plabel, policy in policies:
        for label, events in patterns:
            out.append(("budget: %s, %s" % (plabel, label), policy, events))
    return out


def build_budget():
    cases = []
    for name, policy, events, expected in BUDGET_HAND:
        got = run_budget(policy, events)
        if got != expected:
            raise Failure("hand budget case %r: written %r, contract.py says %r" % (name, expected, got))
        cases.append({"name": name, "kind": "budget", "contract": 2, "policy": policy, "events": events,
                      "expect": expected})
    for name, policy, events in gen_budget():
        cases.append({"name": name, "kind": "budget", "contract": 2, "policy": policy, "events": events,
                      "expect": run_budget(policy, events)})
    return {
        "description": "Contract v2 retry budget sequences (docs/contract.md section 3, Retry budget K1-K4): each "
                       "case starts from budget_new(policy) and applies the events in order; expect holds the state "
                       "after each. Generated by conformance/reference/generate.py; do not edit by hand.",
        "cases": cases,
    }


# ---------------------------------------------------------------------------------------------
# classify2, safe_list, has_key, event
# ---------------------------------------------------------------------------------------------

APIS = {}
HEADERS = {
    SANDBOX: {"updateSecret": "x-idempotency-key", "createSandboxV2": "Idempotency-Key"},
    MATCHING: {"createFile": "Idempotency-Key", "patchFile": "idempotency-key", "createOrder": "Idempotency-Key"},
}

I, K, NR, NO = "idempotent", "keyed", "non_replayable", "no_retry"

# (spec, name, base (None: the spec's), unknown_operation_class, method, target, class, operationId)
CLASSIFY2_HAND = [
    (SANDBOX, "behind a proxy the streaming GET is idempotent (v3 A1)", "/proxy/v1", "method_default", "GET",
     "/proxy/v1/sandboxes/sb1/logs", I, "streamSandboxLogs"),
    (SANDBOX, "behind a proxy, configured as a full URL", "https://gw.example/proxy/v1/", "method_default", "GET",
     "https://gw.example/proxy/v1/sandboxes/sb1/logs?follow=1", I, "streamSandboxLogs"),
    (SANDBOX, "the spec's base does not know the proxy", None, "method_default", "GET",
     "/proxy/v1/sandboxes/sb1/logs", I, None),
    (SANDBOX, "version v2 configured: a plain create", "https://api.eu.sandbox.example/v2", "method_default", "POST",
     "/v2/sandboxes", NR, "createSandbox"),
    (SANDBOX, "version v1 (default): /v2/sandboxes is the keyed create", None, "method_default", "POST",
     "/v1/v2/sandboxes", K, "createSandboxV2"),
    (SANDBOX, "full URL to classify", None, "method_default", "POST", "http://h/sandboxes/x/pause", I,
     "pauseSandbox"),
    (SANDBOX, "full URL with the base path", None, "method_default", "POST",
     "https://api.eu.sandbox.example/v1/sandboxes/x/pause", I, "pauseSandbox"),
    (SANDBOX, "full URL, scheme in upper case, port, userinfo", None, "method_default", "POST",
     "HTTPS://user:pw@h:8443/v1/sandboxes", NR, "createSandbox"),
    (SANDBOX, "full URL without a path is the root", None, "method_default", "GET", "http://h", I, None),
    (SANDBOX, "full URL with only a query", None, "method_default", "GET", "http://h?x=/sandboxes", I, None),
    (SANDBOX, "relative target taken from the root", None, "method_default", "POST", "sandboxes", NR,
     "createSandbox"),
    (SANDBOX, "not a scheme: a colon in the first segment", None, "method_default", "POST", "/a:b//sandboxes", NR,
     None),
    (SANDBOX, "unknown request, no_retry", None, "no_retry", "GET", "/other-service/items", NO, None),
    (SANDBOX, "unknown request, non_replayable", None, "non_replayable", "GET", "/other-service/items", NR, None),
    (SANDBOX, "known path, unknown method, no_retry", None, "no_retry", "PUT", "/v1/sandboxes", NO, None),
    (SANDBOX, "unknown_operation_class leaves matches alone", None, "no_retry", "GET", "/v1/sandboxes", I,
     "listSandboxes"),
    (SANDBOX, "encoded literal as classify decodes it", None, "method_default", "POST", "/v1/api-k%65ys", NR,
     "createApiKey"),
    (SANDBOX, "base path root", "/", "method_default", "POST", "/sandboxes", NR, "createSandbox"),
    (SANDBOX, "empty base", "", "method_default", "POST", "/v1/sandboxes", NR, None),
    (SANDBOX, "base is compared undecoded", "/v%31", "method_default", "POST", "/v1/sandboxes", NR, None),
    (MATCHING, "decoded surrogate escape is not UTF-8: kept", None, "method_default", "GET", "/caf%ED%A0%80", I,
     None),
    (MATCHING, "overlong encoding is not UTF-8: kept", None, "method_default", "GET", "/files/%C0%AE", I, "getFile"),
    (MATCHING, "beyond U+10FFFF is not UTF-8", None, "method_default", "GET", "/caf%F4%90%80%80", I, None),
    (MATCHING, "truncated sequence is not UTF-8", None, "method_default", "GET", "/caf%C3", I, None),
    (MATCHING, "lower-case escapes", None, "method_default", "GET", "/caf%c3%a9", I, "getCafe"),
    (MATCHING, "U+FFFE is a valid scalar value", None, "method_default", "GET", "/files/%EF%BF%BE", I, "getFile"),
    (MATCHING, "encoded non-ASCII literal matched raw", None, "method_default", "GET", "/caf\u00e9/menu", I,
     "getCafeMenu"),
]


def classify2(spec, base, unknown, method, target):
    c = contract.Classifier(APIS[spec], base, unknown)
    cls, op = c.classify(method, target)
    return cls, (op.operation_id if op is not None else None)


def encode_some(path):
    """Every unreserved ASCII letter of the literal text percent-encoded, upper-case hex."""
    return "".join("%%%02X" % ord(c) if c.isalpha() and c.isascii() else c for c in path)


def concrete(op, style="plain"):
    out = ""
    for i, (kind, value) in enumerate(op.segments):
        out += "/"
        if kind == "literal":
            out += value if style == "plain" else encode_some(value) if style == "upper" else encode_some(
                value).lower()
        elif kind == "param":
            out += "p%dzq" % i
        else:
            for pk, text in value:
                out += ("m%d" % i) if pk == "param" else (text if style == "plain" else encode_some(text))
    return out or "/"


def gen_classify2():
    out = []
    bases = {
        SANDBOX: [None, "/proxy/v1", "https://api.eu.sandbox.example/v1", "http://localhost:3000/v2/"],
        MATCHING: [None, "/gw", "https://x.example/base/v2?ignored=1"],
    }
    for spec in (SANDBOX, MATCHING):
        api = APIS[spec]
        for base in bases[spec]:
            prefix = api.base_path if base is None else contract.base_path_of(base)
            for op in api.operations:
                for style in ("plain", "upper", "lower"):
                    path = concrete(op, style)
                    for form in ("path", "url"):
                        target = prefix + path if form == "path" else "https://host.example:8443" + prefix + path + "?q=1#f"
                        name = "%s base %s: %s %s %s as %s" % (spec.split("/")[1].split(".")[0], base, op.method,
                                                               op.path, style, form)
                        out.append((spec, name, base, "method_default", op.method, target))
        for unknown in contract.UNKNOWN_CLASSES:
            for method in ("GET", "POST", "DELETE", "PATCH"):
                name = "%s unknown request %s as %s" % (spec.split("/")[1].split(".")[0], method, unknown)
                out.append((spec, name, None, unknown, method, "/definitely/not/here"))
    return out


def safe_list_cases():
    out = []
    for spec in (SANDBOX, MATCHING):
        api = APIS[spec]
        short = spec.split("/")[1].split(".")[0]
        for op in api.operations:
            for style in ("plain", "upper", "lower"):
                path = concrete(op, style)
                for method in sorted({op.method, "POST", "PATCH"}):
                    out.append((spec, "%s: %s on %s %s (%s)" % (short, method, op.method, op.path, style), method,
                                path, method == op.method))
                out.append((spec, "%s: %s %s (%s), trailing slash" % (short, op.method, op.path, style), op.method,
                            path + "/", True))
    extra = [
        (SANDBOX, "sandbox: encoded slash is not a separator", "POST", "/api%2Fkeys", False),
        (SANDBOX, "sandbox: raw slash in place of an encoded one", "POST", "/api-keys/x", False),
        (MATCHING, "matching: list decodes a%20b", "POST", "/files/a b", False),
        (MATCHING, "matching: plus encoded", "POST", "/calc/1%2B1", False),
        (MATCHING, "matching: plus is not a quantifier", "POST", "/calc/11", False),
        (MATCHING, "matching: anchored, newline", "POST", "/calc/1+1\n", False),
        (MATCHING, "matching: encoded dot in a mixed segment", "POST", "/caf%C3%A9/orders/latte%2Ejson", False),
    ]
    out.extend(extra)
    return out


def has_key_cases():
    out = []
    for spec in (SANDBOX, MATCHING):
        short = spec.split("/")[1].split(".")[0]
        for op_id, header in sorted(HEADERS[spec].items()):
            variants = [
                ("as declared", [[header, "k1"]]),
                ("upper case", [[header.upper(), "k1"]]),
                ("lower case", [[header.lower(), "k1"]]),
                ("empty value", [[header, ""]]),
                ("blank value", [[header, " \t "]]),
                ("among others", [["Accept", "*/*"], [header, "k"], ["X-Other", "1"]]),
                ("another header", [["Idempotency", "k1"], [header + "s", "k1"]]),
                ("none", []),
                ("first blank, second set", [[header, ""], [header.lower(), "k2"]]),
            ]
            for label, headers in variants:
                out.append((spec, "%s: %s %s" % (short, op_id, label), op_id, headers))
        for op_id in ("getSandbox", "createSandbox", "noSuchOperation") if spec == SANDBOX else ("getRoot",
                                                                                                 "postRoot"):
            out.append((spec, "%s: %s has no idempotency header" % (short, op_id), op_id,
                        [["Idempotency-Key", "k1"], ["x-idempotency-key", "k1"]]))
    return out


EVENT_CASES = [
    # (spec, name, base, method, target, retries_used, delay_ms, reason)
    (SANDBOX, "a template, never the URL", None, "delete", "https://h/v1/sandboxes/sb-123?x=1", 0, 250,
     "transport_failure"),
    (SANDBOX, "third retry", None, "POST", "/v1/sandboxes", 2, 1000, "connect_failure"),
    (SANDBOX, "unknown request: no template, no id", None, "get", "/other/x", 1, 500, "retryable_status"),
    (SANDBOX, "operation without an id", None, "GET", "/v1/health", 0, 7000, "retryable_status"),
    (SANDBOX, "keyed", "/proxy/v1", "PATCH", "/proxy/v1/secrets/s1", 0, 250, "key_in_flight"),
    (MATCHING, "mixed template", None, "POST", "/base/v2/caf%C3%A9/orders/a.b", 0, 0, "rejected_status"),
]


def build_classify2():
    for spec, (base, rows) in TABLES.items():
        APIS[spec] = contract.Api(base, [contract.Operation(*r) for r in rows])
    cases = []
    for spec, name, base, unknown, method, target, cls, op_id in CLASSIFY2_HAND:
        got = classify2(spec, base, unknown, method, target)
        if got != (cls, op_id):
            raise Failure("classify2 %r: written %s %s, contract.py says %s %s" % (name, cls, op_id, got[0], got[1]))
        cases.append({"name": "hand: " + name, "kind": "classify2", "contract": 2, "spec": spec, "base": base,
                      "unknown_operation_class": unknown, "method": method, "target": target,
                      "expect": {"class": cls, "operation_id": op_id}})
    for spec, name, base, unknown, method, target in gen_classify2():
        cls, op_id = classify2(spec, base, unknown, method, target)
        cases.append({"name": name, "kind": "classify2", "contract": 2, "spec": spec, "base": base,
                      "unknown_operation_class": unknown, "method": method, "target": target,
                      "expect": {"class": cls, "operation_id": op_id}})
    for spec, name, method, path, must_agree in safe_list_cases():
        api = APIS[spec]
        entries = contract.safe_list(api.operations, HEADERS[spec])
        listed, header = contract.safe_list_match(entries, method, path)
        if must_agree:
            # L2: the list and classify agree (path given without the base path).
            cls, _ = contract.Classifier(api, "/").classify(method, path)
            if listed != (cls in ("non_replayable", "keyed")):
                raise Failure("safe list %r: listed %r but classify says %s" % (name, listed, cls))
        cases.append({"name": "safe list: " + name, "kind": "safe_list", "contract": 2, "spec": spec,
                      "method": method, "path": path, "expect": {"listed": listed, "idempotency_header": header}})
    for spec, name, op_id, headers in has_key_cases():
        op = APIS[spec].lookup(op_id)
        header = HEADERS[spec].get(op_id) if op is not None else None
        cases.append({"name": "has key: " + name, "kind": "has_key", "contract": 2, "spec": spec,
                      "operation_id": op_id, "headers": headers,
                      "expect": {"has_key": contract.has_idempotency_key(header, headers)}})
    for spec, name, base, method, target, used, delay, reason in EVENT_CASES:
        _, op = contract.Classifier(APIS[spec], base).classify(method, target)
        ev = contract.retry_event(method, op, used, {"retry": True, "delay_ms": delay, "reason": reason})
        cases.append({"name": "event: " + name, "kind": "event", "contract": 2, "spec": spec, "base": base,
                      "method": method, "target": target, "retries_used": used,
                      "decision": {"delay_ms": delay, "reason": reason}, "expect": ev})
    return {
        "description": "Contract v2 classification with a runtime base and full URLs (section 2, C1-C4), the safe "
                       "list (L1-L2), has_idempotency_key (H1) and the retry event (E1). Generated by "
                       "conformance/reference/generate.py ('hand:' cases written by hand); do not edit by hand.",
        "cases": cases,
    }


# origin (C5): (name, base, target); the expectation comes from contract.in_scope.
ORIGIN_CASES = [
    ("bare base path keeps every origin", "/v1", "https://other.example/v1/sandboxes"),
    ("empty base keeps every origin", "", "https://other.example/"),
    ("relative target is in scope", "https://api.example/v1", "/v1/sandboxes"),
    ("relative target without a slash", "https://api.example/v1", "sandboxes"),
    ("same origin", "https://api.example/v1", "https://api.example/v1/sandboxes"),
    ("another host", "https://api.example/v1", "https://other.example/v1/sandboxes"),
    ("a data-plane subdomain", "https://api.e2b.app", "https://49983-sbx.e2b.app/envd/files"),
    ("host in another case", "https://api.example/v1", "https://API.Example/v1/x"),
    ("scheme in another case", "HTTPS://api.example/v1", "https://api.example/v1/x"),
    ("another scheme", "https://api.example/v1", "http://api.example/v1/x"),
    ("https default port written", "https://api.example/v1", "https://api.example:443/v1/x"),
    ("http default port written", "http://api.example", "http://api.example:80/x"),
    ("https port 80 is not the default", "https://api.example", "https://api.example:80/x"),
    ("another port", "http://127.0.0.1:8080/v1", "http://127.0.0.1:8081/v1/x"),
    ("same explicit port", "http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1/x"),
    ("leading zeros in the port", "http://127.0.0.1:8080", "http://127.0.0.1:08080/x"),
    ("port zero spelled twice", "http://h:0", "http://h:000/x"),
    ("empty port means the default", "https://api.example:/v1", "https://api.example/v1"),
    ("user info is not the host", "https://api.example/v1", "https://api.example@evil.example/v1"),
    ("user info is dropped", "https://api.example/v1", "https://user:pw@api.example/v1"),
    ("the last @ ends the user info", "https://api.example", "https://a@b@api.example/x"),
    ("an @ in the path is not user info", "https://api.example", "https://api.example/a@evil.example"),
    ("IPv6 host with a port", "http://[::1]:8080/v1", "http://[::1]:8080/v1/x"),
    ("IPv6 host in another case", "http://[FE80::1]/", "http://[fe80::1]:80/x"),
    ("IPv6 host, another port", "http://[::1]:8080", "http://[::1]:8081/"),
    ("authority ends at a query", "https://api.example", "https://api.example?x=1"),
    ("authority ends at a fragment", "https://api.example:8443", "https://api.example:8443#f"),
    ("unknown scheme has no default port", "grpc://h:443", "grpc://h/x"),
    ("unknown scheme, same port", "grpc+tls://h:443", "GRPC+TLS://H:443/x"),
    ("ws default port", "ws://h", "ws://h:80/x"),
    ("wss default port", "wss://h:443", "wss://h/x"),
    ("a trailing dot is another host", "https://api.example", "https://api.example./x"),
    ("no percent-decoding of the host", "https://api.example", "https://api%2Eexample/x"),
    ("no IDNA", "https://xn--bcher-kva.example", "https://b\u00fccher.example/x"),
    ("a non-ASCII host kept as written", "https://b\u00fccher.example", "https://B\u00fccher.example/"),
    ("a scheme without // is not an origin", "https://api.example", "mailto:someone@other.example"),
    ("a base without // has no origin", "api.example/v1", "https://other.example/v1"),
    ("a non-numeric port compared as written", "http://h:8o", "http://h:8o/x"),
    ("a non-numeric port differs from the default", "http://h:8o", "http://h/x"),
    ("an empty host", "http:///v1", "http://h/v1"),
    ("two empty hosts", "file:///a", "FILE:///b"),
]


def build_origin():
    cases = []
    for name, base, target in ORIGIN_CASES:
        base = base.encode().decode("unicode_escape") if "\\u" in base else base
        target = target.encode().decode("unicode_escape") if "\\u" in target else target
        cases.append({"name": "origin: " + name, "kind": "origin", "contract": 2, "base": base,
                      "target": target, "expect": {"in_scope": contract.in_scope(base, target)}})
    return {
        "description": "Contract v2 origin scope (section 2, C5): whether a request belongs to the configured "
                       "base URL's origin. Generated by conformance/reference/generate.py; do not edit by hand.",
        "cases": cases,
    }


TABLES = None  # set by generate.py


SPECIAL = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def spell_specials(value):
    """NaN and the infinities, which JSON cannot hold, as the strings NaN, Infinity, -Infinity."""
    if isinstance(value, float) and repr(value) in SPECIAL:
        return SPECIAL[repr(value)]
    if isinstance(value, list):
        return [spell_specials(v) for v in value]
    if isinstance(value, dict):
        return {k: spell_specials(v) for k, v in value.items()}
    return value


def build_all(tables):
    """[(file name, document)] in a fixed order."""
    global TABLES
    TABLES = tables
    classify_doc = build_classify2()  # fills APIS, which the invalid classify cases use
    docs = [("v2_budget.json", build_budget()), ("v2_classify.json", classify_doc),
            ("v2_decide.json", build_decide()), ("v2_invalid.json", build_invalid()),
            ("v2_origin.json", build_origin())]
    names = set()
    for _, doc in docs:
        for case in doc["cases"]:
            if case["name"] in names:
                raise Failure("duplicate case name %r" % case["name"])
            names.add(case["name"])
        doc["cases"] = [spell_specials(c) for c in doc["cases"]]
    return docs
