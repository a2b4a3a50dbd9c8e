"""An independent, plain-Python reading of docs/contract.md, the reviewer's oracle.

Written from the text of the contract, not from any generated module or from retrygen's Rust
model. Standard library only, Python 3.9+.

Section 3 (the retry decision) is the main part:

    decide(policy, input) -> {"retry": bool, "delay_ms": int, "reason": str}
    server_delay(retry_after, retry_after_ms, now_ms) -> None | int | OVER_ANY_CAP
    backoff(policy, retries_used, previous_delay_ms, random) -> int
    http_date_ms(text, now_ms) -> None | int

`policy` and `input` are dicts shaped like the conformance vectors (conformance/README.md);
`policy` may omit keys, which then take the contract's defaults.

Section 2 (classifying a request) is here too, so that the expectations written by hand in
generate.py for conformance/vectors/classify.json are checked against a second reading:

    Operation(method, path, operation_id, cls)
    Api(base_path, operations).classify(method, path) -> (class, operation or None)
    Api.lookup(operation_id)
"""

import math
import re

# ---------------------------------------------------------------------------------------------
# Section 3: policy
# ---------------------------------------------------------------------------------------------

DEFAULT_POLICY = {
    "max_retries": 3,
    "initial_backoff_ms": 500,
    "max_backoff_ms": 30000,
    "multiplier": 2.0,
    "jitter": "full",
    "retryable_statuses": [408, 425, 429, 500, 502, 503, 504],
    "rejected_statuses": [429],
    "retry_after_cap_ms": 60000,
    "deadline_ms": None,
}

CLASSES = ("idempotent", "keyed", "non_replayable", "no_retry")
JITTERS = ("full", "equal", "decorrelated", "none")
FAILURES = ("connect", "transport", "aborted")
# v2 adds `certificate`: the peer's TLS certificate was refused (R1 stops on it).
FAILURES_V2 = FAILURES + ("certificate",)
REASONS = (
    "aborted",
    "no_retry_operation",
    "exhausted",
    "connect_failure",
    "transport_failure",
    "not_replayable",
    "rejected_status",
    "retryable_status",
    "status_not_retryable",
    "retry_after_over_cap",
    "deadline",
)

DAY_MS = 86400000


def full_policy(overrides=None):
    """The contract's defaults with `overrides` applied, checked against the constraints."""
    p = dict(DEFAULT_POLICY)
    for key, value in (overrides or {}).items():
        if key not in p:
            raise ValueError("unknown policy key %r" % key)
        p[key] = value
    if not 0 <= p["max_retries"] <= 100:
        raise ValueError("max_retries out of range")
    if not 1 <= p["initial_backoff_ms"] <= DAY_MS:
        raise ValueError("initial_backoff_ms out of range")
    if not p["initial_backoff_ms"] <= p["max_backoff_ms"] <= DAY_MS:
        raise ValueError("max_backoff_ms out of range")
    if not 1.0 <= p["multiplier"] <= 10.0:
        raise ValueError("multiplier out of range")
    if p["jitter"] not in JITTERS:
        raise ValueError("unknown jitter")
    for key in ("retryable_statuses", "rejected_statuses"):
        if any(not 100 <= s <= 599 for s in p[key]):
            raise ValueError("%s: a status out of 100-599" % key)
    if not 0 <= p["retry_after_cap_ms"] <= DAY_MS:
        raise ValueError("retry_after_cap_ms out of range")
    if p["deadline_ms"] is not None and not 1 <= p["deadline_ms"] <= DAY_MS:
        raise ValueError("deadline_ms out of range")
    return p


# ---------------------------------------------------------------------------------------------
# Section 3: server delay
# ---------------------------------------------------------------------------------------------


class _OverAnyCap:
    """A server delay written with more than 15 digits: larger than any cap."""

    def __repr__(self):
        return "OVER_ANY_CAP"


OVER_ANY_CAP = _OverAnyCap()

# More than this many digits (leading zeros included) is "huge".
MAX_DIGITS = 15


def _trim(text):
    """Trims spaces and tabs only (not newlines, not other white space)."""
    return text.strip(" \t")


# [0-9] rather than \d: Python's \d also matches non-ASCII digits.
_MS_VALUE = re.compile(r"(-?)([0-9]+)(?:\.[0-9]+)?")
_DELTA_SECONDS = re.compile(r"(-?)([0-9]+)")


def _retry_after_ms(value):
    """`retry-after-ms`: None when absent or invalid, else milliseconds or OVER_ANY_CAP."""
    if value is None:
        return None
    m = _MS_VALUE.fullmatch(_trim(value))
    if m is None:
        return None
    negative, digits = m.group(1) == "-", m.group(2)
    if negative:
        return 0  # "a negative value means 0", huge or not
    if len(digits) > MAX_DIGITS:
        return OVER_ANY_CAP
    return int(digits)  # the integer part; the fraction is dropped


def _retry_after(value, now_ms):
    """`Retry-After`: None when absent or invalid, else milliseconds or OVER_ANY_CAP."""
    if value is None:
        return None
    text = _trim(value)
    m = _DELTA_SECONDS.fullmatch(text)
    if m is not None:
        negative, digits = m.group(1) == "-", m.group(2)
        if negative:
            return 0
        if len(digits) > MAX_DIGITS:
            return OVER_ANY_CAP
        return int(digits) * 1000
    date_ms = http_date_ms(text, now_ms)
    if date_ms is None:
        return None  # garbage, fractions, other date forms: as if absent
    return max(0, date_ms - now_ms)


def server_delay(retry_after, retry_after_ms, now_ms):
    """The server delay of a status outcome: None (absent), an int of ms, or OVER_ANY_CAP."""
    ms = _retry_after_ms(retry_after_ms)
    if ms is not None:
        return ms  # a valid retry-after-ms wins
    return _retry_after(retry_after, now_ms)


# --- HTTP-date (RFC 9110 section 5.6.7), exact spacing, case-sensitive names ---

_SHORT_DAYS = "Mon|Tue|Wed|Thu|Fri|Sat|Sun"
_LONG_DAYS = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTH = "|".join(_MONTHS)
_TIME = r"([0-9]{2}):([0-9]{2}):([0-9]{2})"

# Sun, 06 Nov 1994 08:49:37 GMT
_IMF_FIXDATE = re.compile(r"(?:%s), ([0-9]{2}) (%s) ([0-9]{4}) %s GMT" % (_SHORT_DAYS, _MONTH, _TIME))
# Sunday, 06-Nov-94 08:49:37 GMT
_RFC850 = re.compile(r"(?:%s), ([0-9]{2})-(%s)-([0-9]{2}) %s GMT" % (_LONG_DAYS, _MONTH, _TIME))
# Sun Nov  6 08:49:37 1994  (the day is two characters: two digits, or a space and one digit)
_ASCTIME = re.compile(r"(?:%s) (%s) ([0-9]{2}| [0-9]) %s ([0-9]{4})" % (_SHORT_DAYS, _MONTH, _TIME))


def is_leap(year):
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year, month):
    if month == 2:
        return 29 if is_leap(year) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def days_from_civil(year, month, day):
    """Days since 1970-01-01 of a proleptic Gregorian date (any year, negative results too)."""
    y = year - 1 if month <= 2 else year
    era = y // 400  # floor division
    yoe = y - era * 400
    mp = (month + 9) % 12  # March = 0
    doy = (153 * mp + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def year_of(epoch_ms):
    """The UTC calendar year of a time in ms since the epoch (floor division: before 1970 too)."""
    days = epoch_ms // DAY_MS
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (1 if month <= 2 else 0)


def rfc850_year(two_digits, now_ms):
    """The year in the century of now's year with these last two digits, moved back 100 years
    when that is more than 50 years after now's year."""
    now_year = year_of(now_ms)
    year = (now_year // 100) * 100 + two_digits
    if year > now_year + 50:
        year -= 100
    return year


def http_date_ms(text, now_ms):
    """The HTTP-date `text` as ms since the epoch, or None when it is not a valid HTTP-date."""
    m = _IMF_FIXDATE.fullmatch(text)
    if m is not None:
        day, month, year, hour, minute, second = m.groups()
        year = int(year)
        if not 1 <= year <= 9999:
            return None
    else:
        m = _RFC850.fullmatch(text)
        if m is not None:
            day, month, yy, hour, minute, second = m.groups()
            year = rfc850_year(int(yy), now_ms)
        else:
            m = _ASCTIME.fullmatch(text)
            if m is None:
                return None
            month, day, hour, minute, second, year = m.groups()
            year = int(year)
            if not 1 <= year <= 9999:
                return None
    month = _MONTHS.index(month) + 1
    day, hour, minute, second = int(day), int(hour), int(minute), int(second)
    if not 1 <= day <= days_in_month(year, month):
        return None
    if not (0 <= hour <= 23 and 0 <= minute <= 59 and 0 <= second <= 60):
        return None
    seconds = days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second
    return seconds * 1000


# ---------------------------------------------------------------------------------------------
# Section 3: backoff (IEEE 754 doubles; Python floats are exactly that)
# ---------------------------------------------------------------------------------------------


def backoff(policy, retries_used, previous_delay_ms, random):
    initial = float(policy["initial_backoff_ms"])
    maximum = float(policy["max_backoff_ms"])
    multiplier = float(policy["multiplier"])
    random = float(random)

    base = initial
    for _ in range(retries_used):
        base = base * multiplier
        if base >= maximum:
            base = maximum
            break
    base = min(base, maximum)

    jitter = policy["jitter"]
    if jitter == "full":
        d = random * base
    elif jitter == "equal":
        d = base / 2.0 + random * (base / 2.0)
    elif jitter == "none":
        d = base
    elif jitter == "decorrelated":
        prev = float(previous_delay_ms) if previous_delay_ms > 0 else initial
        d = initial + random * (prev * 3.0 - initial)
        d = min(d, maximum)
    else:
        raise ValueError("unknown jitter %r" % jitter)
    return math.floor(d)


# ---------------------------------------------------------------------------------------------
# Section 3: decide
# ---------------------------------------------------------------------------------------------


def _stop(reason):
    return {"retry": False, "delay_ms": 0, "reason": reason}


def decide(policy, inp):
    """docs/contract.md section 3, rules 1-12 in order."""
    p = full_policy(policy)
    cls = inp["class"]
    if cls not in CLASSES:
        raise ValueError("unknown class %r" % cls)
    outcome = inp["outcome"]
    failure = outcome.get("failure")
    if failure is not None and failure not in FAILURES:
        raise ValueError("unknown failure %r" % failure)
    status = None if failure is not None else outcome["status"]
    if status is not None and not 100 <= status <= 599:
        raise ValueError("status out of range")
    random = inp["random"]
    if not 0.0 <= random < 1.0:
        raise ValueError("random out of [0, 1)")

    replayable = cls == "idempotent" or (cls == "keyed" and bool(inp["has_idempotency_key"]))

    # 1-3
    if failure == "aborted":
        return _stop("aborted")
    if cls == "no_retry":
        return _stop("no_retry_operation")
    if inp["retries_used"] >= p["max_retries"]:
        return _stop("exhausted")
    # 4-8
    if failure == "connect":
        reason = "connect_failure"
    elif failure == "transport":
        if not replayable:
            return _stop("not_replayable")
        reason = "transport_failure"
    elif status in p["rejected_statuses"]:
        reason = "rejected_status"
    elif status in p["retryable_statuses"]:
        if not replayable:
            return _stop("not_replayable")
        reason = "retryable_status"
    else:
        return _stop("status_not_retryable")
    # 9: only a status outcome has a server delay
    delay = None
    if failure is None:
        sd = server_delay(outcome.get("retry_after"), outcome.get("retry_after_ms"), inp["now_ms"])
        if sd is OVER_ANY_CAP or (sd is not None and sd > p["retry_after_cap_ms"]):
            return _stop("retry_after_over_cap")
        delay = sd
    # 10
    if delay is None:
        delay = backoff(p, inp["retries_used"], inp["previous_delay_ms"], random)
    # 11
    if p["deadline_ms"] is not None and inp["elapsed_ms"] + delay > p["deadline_ms"]:
        return _stop("deadline")
    # 12
    return {"retry": True, "delay_ms": delay, "reason": reason}


# ---------------------------------------------------------------------------------------------
# Section 2: classify (used to check the hand-written classify vectors)
# ---------------------------------------------------------------------------------------------

IDEMPOTENT_METHODS = ("GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE", "QUERY")


def method_default(method):
    return "idempotent" if method in IDEMPOTENT_METHODS else "non_replayable"


def ascii_upper(text):
    """Upper-cases a-z only (str.upper would also map e.g. U+0131 to I)."""
    return "".join(chr(ord(c) - 32) if "a" <= c <= "z" else c for c in text)


_HEX = "0123456789abcdefABCDEF"


def percent_decode(segment):
    """Every %XX with two hex digits becomes that byte, other % are kept; when the bytes are not
    valid UTF-8 the segment is returned undecoded."""
    raw = segment.encode("utf-8")
    out = bytearray()
    i = 0
    while i < len(raw):
        if raw[i] == 0x25 and i + 2 < len(raw) and chr(raw[i + 1]) in _HEX and chr(raw[i + 2]) in _HEX:
            out.append(int(raw[i + 1 : i + 3].decode("ascii"), 16))
            i += 3
        else:
            out.append(raw[i])
            i += 1
    try:
        return out.decode("utf-8", errors="strict")
    except UnicodeDecodeError:
        return segment


class Operation:
    def __init__(self, method, path, operation_id, cls):
        self.method = method
        self.path = path
        self.operation_id = operation_id
        self.cls = cls
        self.segments = parse_template(path)

    def pattern(self):
        """The anchored regular expression `retrygen list` shows for this template: literals as
        written (contract v1's list; v2's safe list is `safe_pattern`)."""
        if not self.segments:
            return "^/$"
        out = "^"
        for kind, value in self.segments:
            out += "/"
            if kind == "literal":
                out += _regex_escape(value)
            elif kind == "param":
                out += "[^/]+"
            else:
                for piece_kind, text in value:
                    out += _regex_escape(text) if piece_kind == "literal" else "[^/]+"
        return out + "/?$"


def _regex_escape(text):
    return "".join("\\" + c if c in "\\.+*?()|[]{}^$" else c for c in text)


def parse_template(path):
    """[(kind, value)] with kind literal (raw text), param (name) or mixed ([(kind, text)])."""
    assert path.startswith("/")
    rest = path[1:]
    if rest.endswith("/"):
        rest = rest[:-1]
    if rest == "":
        return []
    segments = []
    for seg in rest.split("/"):
        pieces = re.findall(r"\{[^{}]+\}|[^{}]+", seg)
        assert "".join(pieces) == seg, seg
        if len(pieces) == 1 and pieces[0].startswith("{"):
            segments.append(("param", pieces[0][1:-1]))
        elif all(not p.startswith("{") for p in pieces):
            segments.append(("literal", seg))
        else:
            segments.append(
                ("mixed", [("param", p[1:-1]) if p.startswith("{") else ("literal", p) for p in pieces])
            )
    return segments


def mixed_matches(segment, pieces):
    """Literal pieces appear in order, exactly where they stand; each parameter piece covers at
    least one character. Tries every split, so `{id}.json` matches `a.json.json`."""
    if not pieces:
        return segment == ""
    kind, text = pieces[0]
    if kind == "literal":
        return segment.startswith(text) and mixed_matches(segment[len(text) :], pieces[1:])
    return any(mixed_matches(segment[i:], pieces[1:]) for i in range(1, len(segment) + 1))


class _Node:
    def __init__(self):
        self.literals = {}  # decoded literal -> node
        self.mixed = []  # [(decoded pieces, node)]
        self.param = None
        self.operations = {}  # method -> Operation


def _mixed_order(entry):
    pieces = entry[0]
    literal_chars = sum(len(t) for k, t in pieces if k == "literal")
    # More literal characters first, then by the bytes of the pieces (a literal before a
    # parameter at the first difference).
    return (-literal_chars, [(0, t.encode("utf-8")) if k == "literal" else (1, b"") for k, t in pieces])


class Api:
    def __init__(self, base_path, operations):
        self.base_path = base_path
        self.operations = operations
        self.root = _Node()
        for op in operations:
            node = self.root
            for kind, value in op.segments:
                if kind == "literal":
                    node = node.literals.setdefault(percent_decode(value), _Node())
                elif kind == "param":
                    if node.param is None:
                        node.param = _Node()
                    node = node.param
                else:
                    key = [(k, percent_decode(t) if k == "literal" else "") for k, t in value]
                    for existing, child in node.mixed:
                        if existing == key:
                            node = child
                            break
                    else:
                        child = _Node()
                        node.mixed.append((key, child))
                        node = child
            node.operations.setdefault(op.method, op)
        self._sort(self.root)

    def _sort(self, node):
        node.mixed.sort(key=_mixed_order)
        for child in list(node.literals.values()) + [c for _, c in node.mixed] + [node.param]:
            if child is not None:
                self._sort(child)

    def _find(self, node, segments):
        if not segments:
            return node if node.operations else None
        first, rest = segments[0], segments[1:]
        if first in node.literals:
            found = self._find(node.literals[first], rest)
            if found is not None:
                return found
        for pieces, child in node.mixed:
            if mixed_matches(first, pieces):
                found = self._find(child, rest)
                if found is not None:
                    return found
        if node.param is not None and first != "":
            return self._find(node.param, rest)
        return None

    def normalize(self, path):
        """Steps 2-5: the path without query, fragment, base path and one trailing slash."""
        for i, c in enumerate(path):
            if c in "?#":
                path = path[:i]
                break
        if path == "" or path[0] != "/":
            path = "/" + path
        b = self.base_path
        if b and (path == b or path.startswith(b + "/")):
            path = path[len(b) :]
        if path == "":
            path = "/"
        if path != "/" and path.endswith("/"):
            path = path[:-1]
        return path

    def classify(self, method, path):
        """(class, Operation or None)."""
        method = ascii_upper(method)
        path = self.normalize(path)
        assert path.startswith("/"), "a path without a leading / is outside the contract"
        segments = [] if path == "/" else [percent_decode(s) for s in path[1:].split("/")]
        node = self._find(self.root, segments)
        op = node.operations.get(method) if node is not None else None
        if op is None:
            return method_default(method), None
        return op.cls, op

    def lookup(self, operation_id):
        for op in self.operations:
            if op.operation_id is not None and op.operation_id == operation_id:
                return op
        return None


# =============================================================================================
# Contract v2 (docs/contract.md, "v2" rules): validation, the policy's new keys, server
# directives, keyed statuses, the over-cap mode, the retry budget, classify with a runtime base
# URL and full URLs, the safe list, has_idempotency_key and the retry event.
#
# Every v2 function either returns its result or raises Invalid(key), the contract's one error
# kind ("invalid_input") with its message key (the name of the offending field).
# ---------------------------------------------------------------------------------------------

MAX_COUNTER = 2**53 - 1  # retries_used, elapsed_ms, previous_delay_ms, budget values: JS-exact
BUDGET_MAX = 1000000

DEFAULT_POLICY_V2 = dict(DEFAULT_POLICY)
DEFAULT_POLICY_V2.update({
    "retry_only_with_server_delay": [],
    "key_in_flight_statuses": [409],
    "key_reused_statuses": [422],
    "server_directive_headers": ["x-should-retry"],
    "retry_after_over_cap": "refuse",
    "unknown_operation_class": "method_default",
    "budget_capacity": 500,
    "budget_retry_cost": 5,
    "budget_timeout_cost": 10,
    "budget_success_refund": 1,
})

# What a v1 `D` line means under v2: the new keys at values that change nothing.
NEUTRAL_V2 = {
    "retry_only_with_server_delay": [],
    "key_in_flight_statuses": [],
    "key_reused_statuses": [],
    "server_directive_headers": [],
    "retry_after_over_cap": "refuse",
    "unknown_operation_class": "method_default",
}

OVER_CAP_MODES = ("refuse", "clamp")
UNKNOWN_CLASSES = ("method_default", "non_replayable", "no_retry")
BUDGET_KINDS = ("retry", "timeout")
REASONS_V2 = REASONS + ("server_said_no", "server_said_yes", "key_in_flight", "key_reused", "no_server_delay",
                        "budget_exhausted")
_TCHAR = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


class Invalid(Exception):
    """The contract's invalid_input error; `key` is the message key every language reports."""

    def __init__(self, key):
        Exception.__init__(self, key)
        self.key = key


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _int_in(key, v, lo, hi):
    if not _is_int(v) or not lo <= v <= hi:
        raise Invalid(key)


def _statuses(key, v):
    if not isinstance(v, list) or any(not _is_int(s) or not 100 <= s <= 599 for s in v):
        raise Invalid(key)


def is_scalar_string(s):
    """A string of Unicode scalar values: no lone surrogate (Python str may hold one)."""
    return isinstance(s, str) and not any(0xD800 <= ord(c) <= 0xDFFF for c in s)


def policy_v2(overrides=None):
    """V1-V2: the v2 defaults with `overrides`, every value checked in the policy table's order;
    the first failing key raises Invalid("policy.<key>")."""
    p = dict(DEFAULT_POLICY_V2)
    for key, value in (overrides or {}).items():
        if key not in p:
            raise ValueError("unknown policy key %r" % key)  # a vector-writing mistake, not a case
        p[key] = value
    check_policy_v2(p)
    return p


def check_policy_v2(p):
    check_policy_keys_v2(p)
    # V2: cross-field
    if p["initial_backoff_ms"] > p["max_backoff_ms"]:
        raise Invalid("policy.max_backoff_ms")


def check_policy_keys_v2(p):
    """V1 for v2's keys, in the policy table's order."""
    _int_in("policy.max_retries", p["max_retries"], 0, 100)
    _int_in("policy.initial_backoff_ms", p["initial_backoff_ms"], 1, DAY_MS)
    _int_in("policy.max_backoff_ms", p["max_backoff_ms"], 1, DAY_MS)
    m = p["multiplier"]
    if not isinstance(m, (int, float)) or isinstance(m, bool) or not 1.0 <= m <= 10.0:  # NaN fails too
        raise Invalid("policy.multiplier")
    if p["jitter"] not in JITTERS:
        raise Invalid("policy.jitter")
    _statuses("policy.retryable_statuses", p["retryable_statuses"])
    _statuses("policy.rejected_statuses", p["rejected_statuses"])
    _int_in("policy.retry_after_cap_ms", p["retry_after_cap_ms"], 0, DAY_MS)
    if p["deadline_ms"] is not None:
        _int_in("policy.deadline_ms", p["deadline_ms"], 1, DAY_MS)
    _statuses("policy.retry_only_with_server_delay", p["retry_only_with_server_delay"])
    _statuses("policy.key_in_flight_statuses", p["key_in_flight_statuses"])
    _statuses("policy.key_reused_statuses", p["key_reused_statuses"])
    h = p["server_directive_headers"]
    if not isinstance(h, list) or any(not isinstance(n, str) or _TCHAR.fullmatch(n) is None for n in h):
        raise Invalid("policy.server_directive_headers")
    if p["retry_after_over_cap"] not in OVER_CAP_MODES:
        raise Invalid("policy.retry_after_over_cap")
    if p["unknown_operation_class"] not in UNKNOWN_CLASSES:
        raise Invalid("policy.unknown_operation_class")
    _int_in("policy.budget_capacity", p["budget_capacity"], 0, BUDGET_MAX)
    _int_in("policy.budget_retry_cost", p["budget_retry_cost"], 1, BUDGET_MAX)
    _int_in("policy.budget_timeout_cost", p["budget_timeout_cost"], 1, BUDGET_MAX)
    _int_in("policy.budget_success_refund", p["budget_success_refund"], 0, BUDGET_MAX)


# --- the retry budget (K1-K4) ---


def _check_tokens(p, tokens):
    _int_in("input.budget_tokens", tokens, 0, p["budget_capacity"])


def budget_new(p):
    """K1: a full bucket (0 tokens when the budget is disabled)."""
    return p["budget_capacity"]


def budget_try_acquire(p, tokens, kind):
    """K2: (allowed, tokens). Disabled (capacity 0): always allowed, nothing taken."""
    _check_tokens(p, tokens)
    if kind not in BUDGET_KINDS:
        raise Invalid("input.budget_kind")
    if p["budget_capacity"] == 0:
        return True, tokens
    cost = p["budget_timeout_cost"] if kind == "timeout" else p["budget_retry_cost"]
    if tokens < cost:
        return False, tokens
    return True, tokens - cost


def budget_record_success(p, tokens, released):
    """K3: a request succeeded; `released` is what its last granted retry took (0 when it was
    not retried): that comes back, else the success refund; never above the capacity."""
    _check_tokens(p, tokens)
    _int_in("input.budget_release", released, 0, BUDGET_MAX)
    if p["budget_capacity"] == 0:
        return tokens
    return min(p["budget_capacity"], tokens + (released if released > 0 else p["budget_success_refund"]))


# --- decide, v2 ---


def directive_value(text):
    """"true"/"false" (ASCII case-insensitive, trimmed of spaces and tabs) or None."""
    if text is None:
        return None
    t = _trim(text).lower() if all(ord(c) < 128 for c in text) else None
    return {"true": True, "false": False}.get(t)


def check_input_v2(p, inp):
    """V3-V7, in the input table's order."""
    if inp["class"] not in CLASSES:
        raise Invalid("input.class")
    outcome = inp["outcome"]
    failure = outcome.get("failure")
    if failure is not None and failure not in FAILURES_V2:
        raise Invalid("input.outcome")
    if failure is None:
        s = outcome["status"]
        if not _is_int(s) or not 100 <= s <= 599:
            raise Invalid("input.status")
    for key in ("retries_used", "elapsed_ms", "previous_delay_ms"):
        _int_in("input." + key, inp[key], 0, MAX_COUNTER)
    r = inp["random"]
    if not isinstance(r, float) or not 0.0 <= r < 1.0:  # NaN compares false
        raise Invalid("input.random")
    if inp.get("budget_tokens") is not None:
        _check_tokens(p, inp["budget_tokens"])


def decide_v2(policy, inp):
    """{"retry", "delay_ms", "reason", "budget_tokens"} or raises Invalid."""
    p = policy_v2(policy)
    check_input_v2(p, inp)
    tokens = inp.get("budget_tokens")

    def stop(reason):
        return {"retry": False, "delay_ms": 0, "reason": reason, "budget_tokens": tokens}

    cls = inp["class"]
    outcome = inp["outcome"]
    failure = outcome.get("failure")
    status = None if failure is not None else outcome["status"]
    key = bool(inp["has_idempotency_key"])
    replayable = cls == "idempotent" or (cls == "keyed" and key)
    directive = None
    if failure is None and p["server_directive_headers"]:
        directive = directive_value(outcome.get("directive"))

    if failure == "aborted":  # R1
        return stop("aborted")
    if failure == "certificate":  # R1: a retry meets the same certificate
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
    elif directive is False:  # R6
        return stop("server_said_no")
    elif key and status in p["key_reused_statuses"]:  # R7
        return stop("key_reused")
    elif key and status in p["key_in_flight_statuses"]:  # R8
        reason = "key_in_flight"
    elif directive is True and replayable:  # R9
        reason = "server_said_yes"
    elif status in p["rejected_statuses"]:  # R10
        reason = "rejected_status"
    elif status in p["retryable_statuses"]:  # R11
        if not replayable:
            return stop("not_replayable")
        reason = "retryable_status"
    else:  # R12
        return stop("status_not_retryable")
    delay = None
    if failure is None:
        sd = server_delay(outcome.get("retry_after"), outcome.get("retry_after_ms"), inp["now_ms"])
        if sd is None and status in p["retry_only_with_server_delay"]:  # R13
            return stop("no_server_delay")
        if sd is OVER_ANY_CAP or (sd is not None and sd > p["retry_after_cap_ms"]):  # R14
            if p["retry_after_over_cap"] == "refuse":
                return stop("retry_after_over_cap")
            sd = p["retry_after_cap_ms"]
        delay = sd
    if delay is None:  # R15
        delay = backoff(p, inp["retries_used"], inp["previous_delay_ms"], inp["random"])
    if p["deadline_ms"] is not None and inp["elapsed_ms"] + delay > p["deadline_ms"]:  # R16
        return stop("deadline")
    if tokens is not None:  # R17
        allowed, after = budget_try_acquire(p, tokens, "timeout" if inp.get("timed_out") else "retry")
        if not allowed:
            return stop("budget_exhausted")
        tokens = after
    return {"retry": True, "delay_ms": delay, "reason": reason, "budget_tokens": tokens}  # R18


# --- classify, v2 (C1-C4 on top of section 2) ---

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def strip_origin(target):
    """C1: `scheme://authority` removed from a full URL; anything else unchanged."""
    m = _SCHEME.match(target)
    if m is None:
        rest = target
    else:
        rest = target[m.end():]
        for i, c in enumerate(rest):
            if c in "/?#":
                rest = rest[i:]
                break
        else:
            rest = ""
    if rest != "" and rest[0] not in "/?#":
        rest = "/" + rest  # a relative target is taken from the root
    return rest


def base_path_of(base):
    """C2: the base path of a configured base (a path or a full URL)."""
    path = strip_origin(base)
    for i, c in enumerate(path):
        if c in "?#":
            path = path[:i]
            break
    return path.rstrip("/")


class Classifier:
    """classify with a configured base (None: the spec's base path) and the policy's
    unknown_operation_class."""

    def __init__(self, api, base=None, unknown="method_default"):
        if base is not None and not is_scalar_string(base):
            raise Invalid("input.base")
        if unknown not in UNKNOWN_CLASSES:
            raise Invalid("policy.unknown_operation_class")
        self.api = api
        self.base_path = api.base_path if base is None else base_path_of(base)
        self.unknown = unknown

    def classify(self, method, target):
        if not is_scalar_string(method):
            raise Invalid("input.method")
        if not is_scalar_string(target):
            raise Invalid("input.path")
        path = strip_origin(target)
        saved = self.api.base_path
        self.api.base_path = self.base_path
        try:
            cls, op = self.api.classify(method, path)
        finally:
            self.api.base_path = saved
        if op is None and self.unknown != "method_default":
            cls = self.unknown
        return cls, op


def retry_event(method, op, retries_used, decision):
    """The event of a granted retry: attempt, reason, delay, method, template, operationId."""
    assert decision["retry"]
    return {
        "attempt": retries_used + 1,
        "reason": decision["reason"],
        "delay_ms": decision["delay_ms"],
        "method": op.method if op is not None else ascii_upper(method),
        "path_template": op.path if op is not None else None,
        "operation_id": op.operation_id if op is not None else None,
    }


# --- has_idempotency_key and the safe list ---


def ascii_lower(text):
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in text)


# --- origin scope (C5) ---

_DEFAULT_PORTS = {"http": "80", "ws": "80", "https": "443", "wss": "443"}


def origin_of(text):
    """C5: (scheme, host, port) of a full URL, or None for a string without `scheme://`."""
    m = _SCHEME.match(text)
    if m is None:
        return None
    scheme = ascii_lower(text[: m.end() - 3])
    authority = text[m.end():]
    for i, c in enumerate(authority):
        if c in "/?#":
            authority = authority[:i]
            break
    at = authority.rfind("@")
    if at >= 0:
        authority = authority[at + 1:]
    if authority.startswith("["):
        end = authority.find("]")
        host = authority if end < 0 else authority[: end + 1]
    else:
        end = authority.find(":")
        host = authority if end < 0 else authority[:end]
    rest = authority[len(host):]
    port = rest[1:] if rest.startswith(":") else ""
    if port != "" and all("0" <= c <= "9" for c in port):
        port = port.lstrip("0") or "0"
    if port == "":
        port = _DEFAULT_PORTS.get(scheme, "")
    return (scheme, ascii_lower(host), port)


def in_scope(base, target):
    """C5: a request belongs to the API's origin: the base or the target has no origin, or both
    origins are equal."""
    b, t = origin_of(base), origin_of(target)
    return b is None or t is None or b == t


def has_idempotency_key(header, headers):
    """H1: the operation declares `header` and the request carries it (name compared ASCII
    case-insensitively) with a value that is not empty after trimming spaces and tabs."""
    if header is None:
        return False
    want = ascii_lower(header)
    return any(ascii_lower(n) == want and _trim(v) != "" for n, v in headers)


def _hex_digit_class(d):
    return d if d.isdigit() else "[%s%s]" % (d.upper(), d.lower())


def _encoded_alternatives(text):
    """Each character as itself or as the percent-encoding of its UTF-8 bytes (either hex case);
    `/` only encoded (a raw one would end the segment)."""
    out = ""
    for c in text:
        enc = "".join("%" + _hex_digit_class("%X" % (b >> 4)) + _hex_digit_class("%X" % (b & 15))
                      for b in c.encode("utf-8"))
        if c == "/":
            out += enc
        else:
            out += "(?:%s|%s)" % (_regex_escape(c), enc)
    return out


def safe_pattern(op):
    """L1: the anchored expression of the safe list for one template."""
    if not op.segments:
        return "^//?$"  # the root, and one trailing slash as everywhere
    out = "^"
    for kind, value in op.segments:
        out += "/"
        if kind == "literal":
            out += _encoded_alternatives(percent_decode(value))
        elif kind == "param":
            out += "[^/]+"
        else:
            for piece_kind, text in value:
                out += _encoded_alternatives(percent_decode(text)) if piece_kind == "literal" else "[^/]+"
    return out + "/?$"


def safe_list(operations, headers_of):
    """[(method, pattern, idempotency header or None)]: non_replayable and keyed, table order."""
    return [(op.method, safe_pattern(op), headers_of.get(op.operation_id) if op.cls == "keyed" else None)
            for op in operations if op.cls in ("non_replayable", "keyed")]


def safe_list_match(entries, method, path):
    """(matched, header of the first matching entry)."""
    for m, pattern, header in entries:
        if m == method and re.fullmatch(pattern, path) is not None:
            return True, header
    return False, None
