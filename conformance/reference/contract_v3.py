"""Contract v3 (docs/contract.md, its v3 rules), read from its text: decide_v3 with the stream, precondition,
throttling and problem-type rules, the throttling budget kind, has_precondition (H2), the
problem-type scanner (Q2), the event-stream scanner (E2) and the key format (F1).

Plain Python 3.9+, standard library only, built on contract.py's v2 functions where v3 leaves
them unchanged. Like contract.py, it is the reviewer's oracle: written from the contract's text,
not from a runtime.
"""

import contract
from contract import Invalid, _int_in, _statuses, _trim, is_scalar_string

MAX_COUNTER = contract.MAX_COUNTER
BUDGET_MAX = contract.BUDGET_MAX

FAILURES_V3 = contract.FAILURES_V2 + ("dropped",)
BUDGET_KINDS_V3 = ("retry", "timeout", "throttling")
KEY_FORMATS = ("uuid", "sf-string")
PROBLEM_TYPE_MAX = 2048
QUOTA_EXCEEDED = "https://iana.org/assignments/http-problem-types#quota-exceeded"
ABNORMAL_USAGE = "https://iana.org/assignments/http-problem-types#abnormal-usage-detected"

DEFAULT_POLICY_V3 = dict(contract.DEFAULT_POLICY_V2)
DEFAULT_POLICY_V3.update({
    "throttling_statuses": [429],
    "throttling_initial_backoff_ms": None,
    "budget_throttling_cost": None,
    "stop_problem_types": [QUOTA_EXCEEDED, ABNORMAL_USAGE],
    "retry_problem_types": [],
    "idempotency_key_format": "uuid",
})

# T2: AWS's published 2026 standard-mode values; resolved by retrygen when it reads a spec.
PRESETS = {
    "aws-2026": {
        "max_retries": 2,
        "initial_backoff_ms": 50,
        "throttling_initial_backoff_ms": 1000,
        "max_backoff_ms": 20000,
        "multiplier": 2.0,
        "jitter": "full",
        "budget_capacity": 500,
        "budget_retry_cost": 14,
        "budget_timeout_cost": 14,
        "budget_throttling_cost": 5,
        "budget_success_refund": 1,
    },
}

REASONS_V3 = contract.REASONS_V2 + ("certificate_failure", "stream_resume", "stream_not_resumable",
                                    "precondition_failed_after_replay", "problem_type_stop",
                                    "problem_type_retry")


def resolve_preset(keys):
    """T2: a policy object that may name a preset: the preset's values, then the keys beside it."""
    keys = dict(keys)
    preset = keys.pop("preset", None)
    if preset is None:
        return keys
    if preset not in PRESETS:
        raise Invalid("policy.preset")
    out = dict(PRESETS[preset])
    out.update(keys)
    return out


def _problem_types(key, v):
    if not isinstance(v, list) or any(
            not isinstance(t, str) or not t or len(t) > PROBLEM_TYPE_MAX or not is_scalar_string(t) for t in v):
        raise Invalid(key)


def check_policy_v3(p):
    """V1 (v2's keys, then v3's in the table's order), then V2 (v2's check, then the throttling base)."""
    contract.check_policy_keys_v2(p)
    _statuses("policy.throttling_statuses", p["throttling_statuses"])
    if p["throttling_initial_backoff_ms"] is not None:
        _int_in("policy.throttling_initial_backoff_ms", p["throttling_initial_backoff_ms"], 1, contract.DAY_MS)
    if p["budget_throttling_cost"] is not None:
        _int_in("policy.budget_throttling_cost", p["budget_throttling_cost"], 1, BUDGET_MAX)
    _problem_types("policy.stop_problem_types", p["stop_problem_types"])
    _problem_types("policy.retry_problem_types", p["retry_problem_types"])
    if p["idempotency_key_format"] not in KEY_FORMATS:
        raise Invalid("policy.idempotency_key_format")
    if p["initial_backoff_ms"] > p["max_backoff_ms"]:
        raise Invalid("policy.max_backoff_ms")
    t = p["throttling_initial_backoff_ms"]
    if t is not None and t > p["max_backoff_ms"]:
        raise Invalid("policy.max_backoff_ms")


def policy_v3(overrides=None):
    p = dict(DEFAULT_POLICY_V3)
    for key, value in (overrides or {}).items():
        if key not in p:
            raise ValueError("unknown policy key %r" % key)  # a vector-writing mistake, not a case
        p[key] = value
    check_policy_v3(p)
    return p


# --- the budget (K2 changed) ---


def budget_try_acquire_v3(p, tokens, kind):
    contract._check_tokens(p, tokens)
    if kind not in BUDGET_KINDS_V3:
        raise Invalid("input.budget_kind")
    if p["budget_capacity"] == 0:
        return True, tokens
    if kind == "timeout":
        cost = p["budget_timeout_cost"]
    elif kind == "throttling" and p["budget_throttling_cost"] is not None:
        cost = p["budget_throttling_cost"]
    else:
        cost = p["budget_retry_cost"]
    if tokens < cost:
        return False, tokens
    return True, tokens - cost


# --- the server delay of a stream (S9) ---


def stream_delay(value):
    """S9: None (ignored), contract.OVER_ANY_CAP (more than 15 digits) or milliseconds."""
    if value is None or not value or any(c not in "0123456789" for c in value):
        return None
    if len(value) > contract.MAX_DIGITS:
        return contract.OVER_ANY_CAP
    return int(value)


def _asked_ms(outcome, inp):
    """The server delay a decision would read, uncapped: None, OVER_ANY_CAP or milliseconds."""
    if outcome.get("failure") == "dropped":
        return stream_delay(inp.get("stream_retry"))
    return contract.server_delay(outcome.get("retry_after"), outcome.get("retry_after_ms"), inp["now_ms"])


# --- decide, v3 ---


def check_input_v3(p, inp):
    """V3-V7 as in v2 (with the failure `dropped`), then the new inputs' strings (V8)."""
    if inp["class"] not in contract.CLASSES:
        raise Invalid("input.class")
    outcome = inp["outcome"]
    failure = outcome.get("failure")
    if failure is not None and failure not in FAILURES_V3:
        raise Invalid("input.outcome")
    if failure is None:
        s = outcome["status"]
        if not contract._is_int(s) or not 100 <= s <= 599:
            raise Invalid("input.status")
    for key in ("retries_used", "elapsed_ms", "previous_delay_ms"):
        _int_in("input." + key, inp[key], 0, MAX_COUNTER)
    r = inp["random"]
    if not isinstance(r, float) or not 0.0 <= r < 1.0:
        raise Invalid("input.random")
    if inp.get("budget_tokens") is not None:
        contract._check_tokens(p, inp["budget_tokens"])
    for key in ("stream_retry", "problem_type"):
        v = inp.get(key)
        if v is not None and not is_scalar_string(v):
            raise Invalid("input." + key)


def decide_v3(policy, inp):
    """{"retry", "delay_ms", "reason", "budget_tokens", "throttled", "server_delay_ms"} or raises
    Invalid."""
    p = policy_v3(policy)
    check_input_v3(p, inp)
    tokens = inp.get("budget_tokens")

    def stop(reason, asked=None):
        return {"retry": False, "delay_ms": 0, "reason": reason, "budget_tokens": tokens, "throttled": False,
                "server_delay_ms": asked}

    cls = inp["class"]
    outcome = inp["outcome"]
    failure = outcome.get("failure")
    status = None if failure is not None else outcome["status"]
    key = bool(inp["has_idempotency_key"])
    precondition = bool(inp.get("has_precondition"))
    replayable = (cls == "idempotent" or (cls == "keyed" and key)
                  or (cls in ("keyed", "non_replayable") and precondition))
    problem = inp.get("problem_type") if failure is None else None
    directive = None
    if failure is None and p["server_directive_headers"]:
        directive = contract.directive_value(outcome.get("directive"))

    if failure == "aborted":  # R1
        return stop("aborted")
    if failure == "certificate":  # R1
        return stop("certificate_failure")
    if cls == "no_retry":  # R2
        return stop("no_retry_operation")
    if inp["retries_used"] >= p["max_retries"]:  # R3
        return stop("exhausted")
    if failure == "connect":  # R4
        reason = "connect_failure"
    elif failure == "transport":  # R5
        if not replayable:
            return stop("not_replayable")
        reason = "transport_failure"
    elif failure == "dropped":  # R5a
        if not (inp.get("resumable") and (inp.get("has_last_event_id") or replayable)):
            return stop("stream_not_resumable")
        reason = "stream_resume"
    elif directive is False:  # R6
        return stop("server_said_no")
    elif precondition and status == 412 and inp["retries_used"] > 0:  # R6a
        return stop("precondition_failed_after_replay")
    elif problem is not None and problem in p["stop_problem_types"]:  # R6b
        return stop("problem_type_stop")
    elif key and status in p["key_reused_statuses"]:  # R7
        return stop("key_reused")
    elif key and status in p["key_in_flight_statuses"]:  # R8
        reason = "key_in_flight"
    elif directive is True and replayable:  # R9
        reason = "server_said_yes"
    elif problem is not None and problem in p["retry_problem_types"] and replayable:  # R9a
        reason = "problem_type_retry"
    elif status in p["rejected_statuses"]:  # R10
        reason = "rejected_status"
    elif status in p["retryable_statuses"]:  # R11
        if not replayable:
            return stop("not_replayable")
        reason = "retryable_status"
    else:  # R12
        return stop("status_not_retryable")
    throttled = status is not None and status in p["throttling_statuses"]
    delay = None
    if failure is None or failure == "dropped":
        sd = _asked_ms(outcome, inp)
        if failure is None and sd is None and status in p["retry_only_with_server_delay"]:  # R13
            return stop("no_server_delay")
        if sd is contract.OVER_ANY_CAP or (sd is not None and sd > p["retry_after_cap_ms"]):  # R14
            if p["retry_after_over_cap"] == "refuse":
                asked = MAX_COUNTER if sd is contract.OVER_ANY_CAP else min(sd, MAX_COUNTER)
                return stop("retry_after_over_cap", asked)
            sd = p["retry_after_cap_ms"]
        delay = sd
    if delay is None:  # R15 (T1: the throttling base for a throttled decision)
        q = p
        if throttled and p["throttling_initial_backoff_ms"] is not None:
            q = dict(p)
            q["initial_backoff_ms"] = p["throttling_initial_backoff_ms"]
        delay = contract.backoff(q, inp["retries_used"], inp["previous_delay_ms"], inp["random"])
    if p["deadline_ms"] is not None and inp["elapsed_ms"] + delay > p["deadline_ms"]:  # R16
        return stop("deadline")
    if tokens is not None:  # R17
        kind = "throttling" if throttled else ("timeout" if inp.get("timed_out") else "retry")
        allowed, after = budget_try_acquire_v3(p, tokens, kind)
        if not allowed:
            return stop("budget_exhausted")
        tokens = after
    return {"retry": True, "delay_ms": delay, "reason": reason, "budget_tokens": tokens,  # R18
            "throttled": throttled, "server_delay_ms": None}


# --- H2: has_precondition ---


def has_precondition(headers):
    """H2: an If-Match that is neither empty nor `*`, or an If-None-Match of exactly `*`."""
    for name, value in headers:
        lower = contract.ascii_lower(name)
        v = _trim(value)
        if lower == "if-match" and v not in ("", "*"):
            return True
        if lower == "if-none-match" and v == "*":
            return True
    return False


# --- Q2: the problem type of a body ---

_WS = b" \t\n\r"
MAX_DEPTH = 64


class _NotJson(Exception):
    pass


class _Scanner:
    """RFC 8259, by hand: values are checked, only the top-level object's `type` is kept."""

    def __init__(self, data):
        self.data = data
        self.i = 0

    def ws(self):
        while self.i < len(self.data) and self.data[self.i] in _WS:
            self.i += 1

    def peek(self):
        if self.i >= len(self.data):
            raise _NotJson()
        return self.data[self.i]

    def expect(self, byte):
        if self.peek() != byte:
            raise _NotJson()
        self.i += 1

    def string(self):
        """The unescaped string (code points), or _NotJson; escaped lone surrogates fail."""
        self.expect(0x22)
        out = []
        while True:
            c = self.peek()
            if c == 0x22:
                self.i += 1
                return "".join(out)
            if c < 0x20:
                raise _NotJson()
            if c == 0x5C:
                self.i += 1
                e = self.peek()
                self.i += 1
                simple = {0x22: '"', 0x5C: "\\", 0x2F: "/", 0x62: "\b", 0x66: "\f", 0x6E: "\n", 0x72: "\r",
                          0x74: "\t"}
                if e in simple:
                    out.append(simple[e])
                elif e == 0x75:
                    u = self.hex4()
                    if 0xD800 <= u <= 0xDBFF:
                        if self.data[self.i:self.i + 2] != b"\\u":
                            raise _NotJson()
                        self.i += 2
                        low = self.hex4()
                        if not 0xDC00 <= low <= 0xDFFF:
                            raise _NotJson()
                        u = 0x10000 + ((u - 0xD800) << 10) + (low - 0xDC00)
                    elif 0xDC00 <= u <= 0xDFFF:
                        raise _NotJson()
                    out.append(chr(u))
                else:
                    raise _NotJson()
                continue
            # One UTF-8 sequence, already validated for the whole body.
            n = 1 if c < 0x80 else 2 if c < 0xE0 else 3 if c < 0xF0 else 4
            out.append(self.data[self.i:self.i + n].decode("utf-8"))
            self.i += n

    def hex4(self):
        text = self.data[self.i:self.i + 4]
        if len(text) != 4 or any(b not in b"0123456789abcdefABCDEF" for b in text):
            raise _NotJson()
        self.i += 4
        return int(text, 16)

    def number(self):
        start = self.i
        if self.peek() == 0x2D:
            self.i += 1
        if self.peek() == 0x30:
            self.i += 1
        elif 0x31 <= self.peek() <= 0x39:
            while self.i < len(self.data) and 0x30 <= self.data[self.i] <= 0x39:
                self.i += 1
        else:
            raise _NotJson()
        if self.i < len(self.data) and self.data[self.i] == 0x2E:
            self.i += 1
            self.digits()
        if self.i < len(self.data) and self.data[self.i] in b"eE":
            self.i += 1
            if self.peek() in b"+-":
                self.i += 1
            self.digits()
        if self.i == start:
            raise _NotJson()

    def digits(self):
        if not 0x30 <= self.peek() <= 0x39:
            raise _NotJson()
        while self.i < len(self.data) and 0x30 <= self.data[self.i] <= 0x39:
            self.i += 1

    def literal(self, word):
        if self.data[self.i:self.i + len(word)] != word:
            raise _NotJson()
        self.i += len(word)

    def value(self, depth):
        """Skips one value; returns it when it is a string (the caller may keep it)."""
        c = self.peek()
        if c == 0x7B:
            self.obj(depth + 1)
        elif c == 0x5B:
            self.array(depth + 1)
        elif c == 0x22:
            return self.string()
        elif c == 0x74:
            self.literal(b"true")
        elif c == 0x66:
            self.literal(b"false")
        elif c == 0x6E:
            self.literal(b"null")
        else:
            self.number()
        return None

    def obj(self, depth, members=None):
        if depth > MAX_DEPTH:
            raise _NotJson()
        self.expect(0x7B)
        self.ws()
        if self.peek() == 0x7D:
            self.i += 1
            return
        while True:
            self.ws()
            name = self.string()
            self.ws()
            self.expect(0x3A)
            self.ws()
            is_string = self.peek() == 0x22
            v = self.value(depth)
            if members is not None:
                members.append((name, v if is_string else None, is_string))
            self.ws()
            if self.peek() == 0x2C:
                self.i += 1
                continue
            self.expect(0x7D)
            return

    def array(self, depth):
        if depth > MAX_DEPTH:
            raise _NotJson()
        self.expect(0x5B)
        self.ws()
        if self.peek() == 0x5D:
            self.i += 1
            return
        while True:
            self.ws()
            self.value(depth)
            self.ws()
            if self.peek() == 0x2C:
                self.i += 1
                continue
            self.expect(0x5D)
            return


def problem_type_of(body):
    """Q2: the problem type of a complete body (bytes), or None."""
    try:
        body.decode("utf-8")  # Python's decoder is strict: no surrogates, no overlong forms
    except UnicodeDecodeError:
        return None
    s = _Scanner(body)
    members = []
    try:
        s.ws()
        if s.peek() != 0x7B:
            return None
        s.obj(1, members)
        s.ws()
        if s.i != len(body):
            return None
    except _NotJson:
        return None
    types = [m for m in members if m[0] == "type"]
    if len(types) != 1 or not types[0][2]:
        return None
    return types[0][1]


PROBLEM_PREFIX_MAX = 65536


def problem_type_read(content_type, body, complete):
    """Q1-Q2 as an adapter applies them to a response: the media type, the bounded prefix."""
    if content_type is None:
        return None
    media = contract.ascii_lower(_trim(content_type.split(";", 1)[0]))
    if media != "application/problem+json":
        return None
    if not complete or len(body) > PROBLEM_PREFIX_MAX:
        return None
    return problem_type_of(body)


# --- E2: the event-stream scanner ---


def sse_scan(data):
    """E2 over a byte stream cut anywhere: (length of the complete events' bytes, last event id,
    reconnection time as written or None), all as of the last dispatched event."""
    i = 0
    n = len(data)
    if data.startswith(b"\xef\xbb\xbf"):
        i = 3
    committed = (i, "", None)  # after the BOM (or nothing): no event yet
    id_buffer = ""
    retry = None
    pending_id = None
    pending_retry = None
    while True:
        # One line: up to CR, LF or CRLF. A line without its end is not complete.
        j = i
        while j < n and data[j] not in (0x0A, 0x0D):
            j += 1
        if j >= n:
            break
        line = data[i:j]
        if data[j] == 0x0D:
            if j + 1 >= n:
                break  # a CR at the cut: the LF may follow, the line is not known complete
            end = j + 2 if data[j + 1] == 0x0A else j + 1
        else:
            end = j + 1
        i = end
        if not line:
            # Dispatch: the buffers as set by this event's fields become the stream's.
            if pending_id is not None:
                id_buffer = pending_id
            if pending_retry is not None:
                retry = pending_retry
            pending_id = None
            pending_retry = None
            committed = (i, id_buffer, retry)
            continue
        if line.startswith(b":"):
            continue
        if b":" in line:
            field, value = line.split(b":", 1)
            if value.startswith(b" "):
                value = value[1:]
        else:
            field, value = line, b""
        if field == b"id" and b"\x00" not in value:
            pending_id = value.decode("utf-8", errors="replace")
        elif field == b"retry" and value and all(0x30 <= b <= 0x39 for b in value):
            pending_retry = value.decode("ascii")
    return committed


# --- F1: the key's format ---


def idempotency_key_value(fmt, uuid):
    if fmt not in KEY_FORMATS:
        raise Invalid("policy.idempotency_key_format")
    return uuid if fmt == "uuid" else '"' + uuid + '"'
