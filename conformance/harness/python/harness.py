"""Conformance harness for the Python package.

Reads a case file (conformance/README.md) and prints one result line per case.
`cargo xtask` copies it next to the generated package, as the folder retry_policy/
(`__init__.py` tables and `_runtime.py`).
"""

import re
import struct
import sys
from collections.abc import Callable, Sequence
from typing import TypeVar, cast

import retry_policy as rp

# The runtime module itself: the package's __init__.py (templates/python/tables.j2) does not
# re-export in_scope yet.
from retry_policy._runtime import in_scope

_HEX = re.compile(r"(?:[0-9a-f]{2})*")
_INTEGER = re.compile(r"-?[0-9]+")
_BITS = re.compile(r"[0-9a-f]{16}")


class Malformed(Exception):
    """The case file breaks the format."""


def field(fields: Sequence[str], index: int) -> str:
    if index >= len(fields):
        raise Malformed(f"missing field {index}")
    return fields[index]


def unhex(text: str) -> str:
    if _HEX.fullmatch(text) is None:
        raise Malformed(f"bad hex field {text!r}")
    try:
        return bytes.fromhex(text).decode("utf-8")
    except UnicodeDecodeError as e:
        raise Malformed(f"hex field is not UTF-8: {text}") from e


def to_hex(text: str) -> str:
    return text.encode("utf-8").hex()


def optional_hex(text: str) -> str | None:
    return None if text == "-" else unhex(text)


def integer(text: str) -> int:
    if _INTEGER.fullmatch(text) is None:
        raise Malformed(f"bad integer {text!r}")
    return int(text)


def optional_integer(text: str) -> int | None:
    return None if text == "-" else integer(text)


def double(bits: str) -> float:
    if _BITS.fullmatch(bits) is None:
        raise Malformed(f"bad double bits {bits!r}")
    value: float = struct.unpack(">d", bytes.fromhex(bits))[0]
    return value


def double_bits(value: float) -> str:
    return struct.pack(">d", value).hex()


def statuses(text: str) -> tuple[int, ...]:
    return () if text == "" else tuple(integer(s) for s in text.split(","))


def flag(text: str) -> bool:
    if text not in ("0", "1"):
        raise Malformed(f"bad flag {text!r}")
    return text == "1"


def policy_fields(policy: rp.RetryPolicy) -> list[str]:
    return [
        str(policy.max_retries),
        str(policy.initial_backoff_ms),
        str(policy.max_backoff_ms),
        double_bits(policy.multiplier),
        policy.jitter.value,
        ",".join(str(s) for s in policy.retryable_statuses),
        ",".join(str(s) for s in policy.rejected_statuses),
        str(policy.retry_after_cap_ms),
        "-" if policy.deadline_ms is None else str(policy.deadline_ms),
    ]


def decide_line(f: Sequence[str]) -> str:
    if len(f) != 22:
        raise Malformed(f"D line has {len(f)} fields, expected 22")
    try:
        jitter = rp.Jitter(field(f, 6))
        replay_class = rp.ReplayClass(field(f, 11))
    except ValueError as e:
        raise Malformed(str(e)) from e
    policy = rp.RetryPolicy(
        max_retries=integer(field(f, 2)),
        initial_backoff_ms=integer(field(f, 3)),
        max_backoff_ms=integer(field(f, 4)),
        multiplier=double(field(f, 5)),
        jitter=jitter,
        retryable_statuses=statuses(field(f, 7)),
        rejected_statuses=statuses(field(f, 8)),
        retry_after_cap_ms=integer(field(f, 9)),
        deadline_ms=optional_integer(field(f, 10)),
    )
    kind = field(f, 13)
    outcome: rp.Outcome
    if kind == "status":
        outcome = rp.StatusOutcome(
            status=integer(field(f, 14)),
            retry_after=optional_hex(field(f, 15)),
            retry_after_ms=optional_hex(field(f, 16)),
        )
    elif kind in ("connect", "transport", "aborted"):
        outcome = rp.Failure(kind)
    else:
        raise Malformed(f"unknown outcome {kind!r}")
    inputs = rp.DecisionInput(
        replay_class=replay_class,
        has_idempotency_key=flag(field(f, 12)),
        outcome=outcome,
        retries_used=integer(field(f, 17)),
        elapsed_ms=integer(field(f, 18)),
        previous_delay_ms=integer(field(f, 19)),
        now_ms=integer(field(f, 20)),
        random=double(field(f, 21)),
    )
    d = rp.decide(policy, inputs)
    return "\t".join(
        ["D", f[1], "1" if d.retry else "0", str(d.delay_ms), d.reason.value]
    )


def expect_fields(f: Sequence[str], count: int) -> None:
    if len(f) != count:
        raise Malformed(f"{f[0]} line has {len(f)} fields, expected {count}")


def wtf8(text: str) -> str:
    """A hex field of a C2 line: UTF-8 that may hold lone surrogates."""
    if _HEX.fullmatch(text) is None:
        raise Malformed(f"bad hex field {text!r}")
    try:
        return bytes.fromhex(text).decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as e:
        raise Malformed(f"hex field is not WTF-8: {text}") from e


_Name = TypeVar(
    "_Name",
    rp.Jitter,
    rp.OverCapMode,
    rp.UnknownOperationClass,
    rp.ReplayClass,
    rp.Failure,
    rp.IdempotencyKeyFormat,
)


def name(parse: Callable[[str], _Name], word: str) -> _Name:
    """A name given to the runtime's parser; an unknown one goes to the runtime as
    the plain string it is, so that the runtime's checks (which refuse a plain
    string where an enum belongs) report it in the contract's order."""
    try:
        return parse(word)
    except rp.InvalidInputError:
        return cast(_Name, word)


def policy2(f: Sequence[str]) -> rp.RetryPolicy:
    """The 19 P2 fields."""
    if len(f) != 19:
        raise Malformed(f"P2 has {len(f)} fields, expected 19")
    headers = () if f[12] == "-" else tuple(unhex(h) for h in f[12].split(","))
    return rp.RetryPolicy(
        max_retries=integer(f[0]),
        initial_backoff_ms=integer(f[1]),
        max_backoff_ms=integer(f[2]),
        multiplier=double(f[3]),
        jitter=name(rp.Jitter.parse, f[4]),
        retryable_statuses=statuses(f[5]),
        rejected_statuses=statuses(f[6]),
        retry_after_cap_ms=integer(f[7]),
        deadline_ms=optional_integer(f[8]),
        retry_only_with_server_delay=statuses(f[9]),
        key_in_flight_statuses=statuses(f[10]),
        key_reused_statuses=statuses(f[11]),
        server_directive_headers=headers,
        retry_after_over_cap=name(rp.OverCapMode.parse, f[13]),
        unknown_operation_class=name(rp.UnknownOperationClass.parse, f[14]),
        budget_capacity=integer(f[15]),
        budget_retry_cost=integer(f[16]),
        budget_timeout_cost=integer(f[17]),
        budget_success_refund=integer(f[18]),
    )


def policy2_fields(p: rp.RetryPolicy) -> list[str]:
    headers = (
        ",".join(to_hex(h) for h in p.server_directive_headers)
        if p.server_directive_headers
        else "-"
    )
    return [
        *policy_fields(p),
        ",".join(str(s) for s in p.retry_only_with_server_delay),
        ",".join(str(s) for s in p.key_in_flight_statuses),
        ",".join(str(s) for s in p.key_reused_statuses),
        headers,
        p.retry_after_over_cap.value,
        p.unknown_operation_class.value,
        str(p.budget_capacity),
        str(p.budget_retry_cost),
        str(p.budget_timeout_cost),
        str(p.budget_success_refund),
    ]


def decide2_line(f: Sequence[str]) -> str:
    expect_fields(f, 35)
    policy = policy2(f[2:21])
    replay_class = name(rp.ReplayClass.parse, f[21])
    has_key = flag(f[22])
    outcome: rp.Outcome
    if f[23] == "status":
        outcome = rp.StatusOutcome(
            status=integer(f[24]),
            retry_after=optional_hex(f[25]),
            retry_after_ms=optional_hex(f[26]),
            directive=optional_hex(f[27]),
        )
    else:
        outcome = name(rp.Failure.parse, f[23])
    inputs = rp.DecisionInput(
        replay_class=replay_class,
        has_idempotency_key=has_key,
        outcome=outcome,
        retries_used=integer(f[28]),
        elapsed_ms=integer(f[29]),
        previous_delay_ms=integer(f[30]),
        now_ms=integer(f[31]),
        random=double(f[32]),
        budget_tokens=optional_integer(f[33]),
        timed_out=flag(f[34]),
    )
    d = rp.decide(policy, inputs)
    tokens = "-" if d.budget_tokens is None else str(d.budget_tokens)
    return "\t".join(
        ["D2", f[1], "1" if d.retry else "0", str(d.delay_ms), d.reason.value, tokens]
    )


def budget_line(f: Sequence[str]) -> str:
    expect_fields(f, 7)
    policy = rp.RetryPolicy(
        budget_capacity=integer(f[2]),
        budget_retry_cost=integer(f[3]),
        budget_timeout_cost=integer(f[4]),
        budget_success_refund=integer(f[5]),
    )
    budget = rp.RetryBudget(policy)
    initial = budget.tokens
    results = []
    for event in f[6].split(",") if f[6] else []:
        if event in ("r", "t") or event.startswith("a"):
            if event == "r":
                kind = rp.BudgetKind.RETRY
            elif event == "t":
                kind = rp.BudgetKind.TIMEOUT
            else:
                kind = rp.BudgetKind.parse(unhex(event[1:]))
            allowed = budget.try_acquire(kind)
            results.append(("y" if allowed else "n") + str(budget.tokens))
        elif event.startswith("s"):
            budget.record_success(integer(event[1:]))
            results.append("s" + str(budget.tokens))
        else:
            raise Malformed(f"bad budget event {event!r}")
    return "\t".join(["K", f[1], str(initial), ",".join(results)])


def hex_list(text: str) -> tuple[str, ...]:
    """A list of WTF-8 hex strings joined by `,`; `-` is the empty list."""
    return () if text == "-" else tuple(wtf8(t) for t in text.split(","))


def optional_wtf8(text: str) -> str | None:
    return None if text == "-" else wtf8(text)


def raw_bytes(text: str) -> bytes:
    if _HEX.fullmatch(text) is None:
        raise Malformed(f"bad hex field {text!r}")
    return bytes.fromhex(text)


def policy3(f: Sequence[str]) -> rp.RetryPolicy:
    """The 25 P3 fields: P2's 19, then contract v3's six, names as given.

    Built in one call, so that the runtime checks every key in its order (V1)
    before the ranges (V2).
    """
    if len(f) != 25:
        raise Malformed(f"P3 has {len(f)} fields, expected 25")
    return rp.RetryPolicy(
        max_retries=integer(f[0]),
        initial_backoff_ms=integer(f[1]),
        max_backoff_ms=integer(f[2]),
        multiplier=double(f[3]),
        jitter=name(rp.Jitter.parse, f[4]),
        retryable_statuses=statuses(f[5]),
        rejected_statuses=statuses(f[6]),
        retry_after_cap_ms=integer(f[7]),
        deadline_ms=optional_integer(f[8]),
        retry_only_with_server_delay=statuses(f[9]),
        key_in_flight_statuses=statuses(f[10]),
        key_reused_statuses=statuses(f[11]),
        server_directive_headers=hex_list(f[12]),
        retry_after_over_cap=name(rp.OverCapMode.parse, f[13]),
        unknown_operation_class=name(rp.UnknownOperationClass.parse, f[14]),
        budget_capacity=integer(f[15]),
        budget_retry_cost=integer(f[16]),
        budget_timeout_cost=integer(f[17]),
        budget_success_refund=integer(f[18]),
        throttling_statuses=statuses(f[19]),
        throttling_initial_backoff_ms=optional_integer(f[20]),
        budget_throttling_cost=optional_integer(f[21]),
        stop_problem_types=hex_list(f[22]),
        retry_problem_types=hex_list(f[23]),
        idempotency_key_format=name(rp.IdempotencyKeyFormat.parse, f[24]),
    )


def decide3_line(f: Sequence[str]) -> str:
    expect_fields(f, 46)
    policy = policy3(f[2:27])
    outcome: rp.Outcome
    if f[34] == "status":
        outcome = rp.StatusOutcome(
            status=integer(f[35]),
            retry_after=optional_hex(f[36]),
            retry_after_ms=optional_hex(f[37]),
            directive=optional_hex(f[38]),
        )
    else:
        outcome = name(rp.Failure.parse, f[34])
    inputs = rp.DecisionInput(
        replay_class=name(rp.ReplayClass.parse, f[27]),
        has_idempotency_key=flag(f[28]),
        has_precondition=flag(f[29]),
        resumable=flag(f[30]),
        has_last_event_id=flag(f[31]),
        stream_retry=optional_wtf8(f[32]),
        problem_type=optional_wtf8(f[33]),
        outcome=outcome,
        retries_used=integer(f[39]),
        elapsed_ms=integer(f[40]),
        previous_delay_ms=integer(f[41]),
        now_ms=integer(f[42]),
        random=double(f[43]),
        budget_tokens=optional_integer(f[44]),
        timed_out=flag(f[45]),
    )
    d = rp.decide(policy, inputs)
    return "\t".join(
        [
            "D3",
            f[1],
            "1" if d.retry else "0",
            str(d.delay_ms),
            d.reason.value,
            "-" if d.budget_tokens is None else str(d.budget_tokens),
            "1" if d.throttled else "0",
            "-" if d.server_delay_ms is None else str(d.server_delay_ms),
        ]
    )


def budget3_line(f: Sequence[str]) -> str:
    expect_fields(f, 28)
    budget = rp.RetryBudget(policy3(f[2:27]))
    initial = budget.tokens
    results = []
    for event in f[27].split(",") if f[27] else []:
        if event.startswith("s"):
            budget.record_success(integer(event[1:]))
            results.append("s" + str(budget.tokens))
            continue
        if event == "r":
            kind = rp.BudgetKind.RETRY
        elif event == "t":
            kind = rp.BudgetKind.TIMEOUT
        elif event == "h":
            kind = rp.BudgetKind.THROTTLING
        elif event.startswith("a"):
            kind = rp.BudgetKind.parse(unhex(event[1:]))
        else:
            raise Malformed(f"bad budget event {event!r}")
        allowed = budget.try_acquire(kind)
        results.append(("y" if allowed else "n") + str(budget.tokens))
    return "\t".join(["K3", f[1], str(initial), ",".join(results)])


def scan_line(f: Sequence[str]) -> str:
    expect_fields(f, 3)
    stream = raw_bytes(f[2])
    scanner = rp.EventStreamScanner()
    # Fed in two pieces, so that a line or a CRLF split across reads is covered too.
    half = len(stream) // 2
    scanner.feed(stream[:half])
    scanner.feed(stream[half:])
    return "\t".join(
        [
            "SE",
            f[1],
            str(scanner.complete_bytes),
            to_hex(scanner.last_event_id),
            optional_to_hex(scanner.retry),
        ]
    )


def classifier(base: str, unknown: str) -> rp.Classifier:
    return rp.classifier(
        None if base == "-" else wtf8(base),
        name(rp.UnknownOperationClass.parse, unknown),
    )


def run(lines: Sequence[str]) -> list[str]:
    out: list[str] = []
    for line in lines:
        if line == "":
            continue
        f = line.split("\t")
        try:
            out.extend(case(f))
        except rp.InvalidInputError as e:
            out.append("\t".join(["X", field(f, 1), e.key]))
    return out


def case(f: Sequence[str]) -> list[str]:
    kind = f[0]
    if kind == "D":
        return [decide_line(f)]
    if kind == "D2":
        return [decide2_line(f)]
    if kind == "K":
        return [budget_line(f)]
    if kind == "D3":
        return [decide3_line(f)]
    if kind == "K3":
        return [budget3_line(f)]
    if kind == "HP":
        if len(f) % 2 != 0:
            raise Malformed("HP line needs name/value pairs")
        pairs = [(wtf8(f[i]), wtf8(f[i + 1])) for i in range(2, len(f), 2)]
        return ["\t".join(["HP", f[1], "1" if rp.has_precondition(pairs) else "0"])]
    if kind == "Q":
        expect_fields(f, 5)
        problem = rp.problem_type_of(
            optional_wtf8(f[2]), raw_bytes(f[4]), complete=flag(f[3])
        )
        return ["\t".join(["Q", f[1], optional_to_hex(problem)])]
    if kind == "SE":
        return [scan_line(f)]
    if kind == "F":
        expect_fields(f, 4)
        key_format = rp.IdempotencyKeyFormat.parse(f[2])
        value = rp.idempotency_key_value(key_format, unhex(f[3]))
        return ["\t".join(["F", f[1], to_hex(value)])]
    if kind == "C":
        expect_fields(f, 4)
        c = rp.classify(unhex(f[2]), unhex(f[3]))
        return ["\t".join(["C", f[1], *classification(c)])]
    if kind == "C2":
        expect_fields(f, 6)
        clf = classifier(f[2], f[3])
        c = clf.classify(wtf8(f[4]), wtf8(f[5]))
        return ["\t".join(["C2", f[1], *classification(c)])]
    if kind == "O":
        expect_fields(f, 4)
        hit = in_scope(wtf8(f[2]), wtf8(f[3]))
        return ["\t".join(["O", f[1], "1" if hit else "0"])]
    if kind == "I":
        expect_fields(f, 3)
        op = rp.operation_by_id(unhex(f[2]))
        if op is None:
            return ["\t".join(["I", f[1], "-", "-"])]
        return ["\t".join(["I", f[1], to_hex(op.method), to_hex(op.path)])]
    if kind == "L":
        expect_fields(f, 4)
        entry = rp.NON_REPLAYABLE_OPERATIONS.match(unhex(f[2]), unhex(f[3]))
        if entry is None:
            return ["\t".join(["L", f[1], "0", "-"])]
        return ["\t".join(["L", f[1], "1", optional_to_hex(entry.idempotency_header)])]
    if kind == "H":
        if len(f) < 3 or len(f) % 2 != 1:
            raise Malformed("H line needs an operation and name/value pairs")
        op = rp.operation_by_id(unhex(f[2]))
        headers = [(unhex(f[i]), unhex(f[i + 1])) for i in range(3, len(f), 2)]
        hit = rp.has_idempotency_key(op, headers)
        return ["\t".join(["H", f[1], "1" if hit else "0"])]
    if kind == "E":
        expect_fields(f, 8)
        method = unhex(f[3])
        c = classifier(f[2], "method_default").classify(method, unhex(f[4]))
        decision = rp.Decision(
            retry=True,
            delay_ms=integer(f[6]),
            reason=rp.DecisionReason(f[7]),
        )
        event = rp.retry_event(
            method=method,
            operation=c.operation,
            retries_used=integer(f[5]),
            decision=decision,
        )
        return [
            "\t".join(
                [
                    "E",
                    f[1],
                    str(event.attempt),
                    event.reason.value,
                    str(event.delay_ms),
                    to_hex(event.method),
                    optional_to_hex(event.path_template),
                    optional_to_hex(event.operation_id),
                ]
            )
        ]
    if kind == "T2":
        expect_fields(f, 1)
        out = ["\t".join(["B2", to_hex(rp.BASE_PATH), to_hex(rp.SOURCE_SPEC)])]
        out.append("\t".join(["P2", *policy2_fields(rp.DEFAULT_RETRY_POLICY)]))
        listed = []
        for index, op in enumerate(rp.OPERATIONS):
            out.append(
                "\t".join(
                    [
                        "O2",
                        str(index),
                        to_hex(op.method),
                        to_hex(op.path),
                        optional_to_hex(op.operation_id),
                        op.replay_class.value,
                        optional_to_hex(op.idempotency_header),
                    ]
                )
            )
            if op.replay_class in (rp.ReplayClass.NON_REPLAYABLE, rp.ReplayClass.KEYED):
                listed.append(index)
        entries = list(rp.NON_REPLAYABLE_OPERATIONS)
        if len(entries) != len(listed):
            raise Malformed("the safe list and the operations disagree")
        for index, entry in zip(listed, entries, strict=True):
            out.append(
                "\t".join(
                    [
                        "L2",
                        str(index),
                        to_hex(entry.method),
                        to_hex(entry.pattern.pattern),
                        optional_to_hex(entry.idempotency_header),
                    ]
                )
            )
        return out
    raise Malformed(f"unknown line kind {kind!r}")


def classification(c: rp.Classification) -> list[str]:
    op_id = None if c.operation is None else c.operation.operation_id
    return [c.replay_class.value, optional_to_hex(op_id)]


def optional_to_hex(text: str | None) -> str:
    return "-" if text is None else to_hex(text)


def main(argv: Sequence[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: python3 harness.py CASEFILE\n")
        return 2
    with open(argv[1], encoding="utf-8", newline="") as file:
        lines = file.read().split("\n")
    try:
        out = run(lines)
    except Malformed as e:
        sys.stderr.write(f"harness: malformed case file: {e}\n")
        return 1
    sys.stdout.write("".join(line + "\n" for line in out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
