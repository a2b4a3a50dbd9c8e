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
    Api.lookup(operation_id), Api.non_replayable_listed(method, path)
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
        """The anchored regular expression of NON_REPLAYABLE_OPERATIONS for this template."""
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

    def non_replayable_listed(self, method, path):
        """NON_REPLAYABLE_OPERATIONS: exact method, the whole path matched by the expression."""
        for op in self.operations:
            if op.cls == "non_replayable" and op.method == method:
                if re.fullmatch(op.pattern(), path) is not None:
                    return True
        return False
