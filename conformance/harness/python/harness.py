"""Conformance harness for the Python package.

Reads a case file (conformance/README.md) and prints one result line per case.
`cargo xtask` copies it next to the generated package, as the folder retry_policy/
(`__init__.py` tables and `_runtime.py`).
"""

import re
import struct
import sys
from collections.abc import Sequence

import retry_policy as rp

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


def run(lines: Sequence[str]) -> list[str]:
    out: list[str] = []
    for line in lines:
        if line == "":
            continue
        f = line.split("\t")
        kind = f[0]
        if kind == "D":
            out.append(decide_line(f))
        elif kind == "C":
            expect_fields(f, 4)
            c = rp.classify(unhex(f[2]), unhex(f[3]))
            op_id = None if c.operation is None else c.operation.operation_id
            out.append(
                "\t".join(
                    [
                        "C",
                        f[1],
                        c.replay_class.value,
                        "-" if op_id is None else to_hex(op_id),
                    ]
                )
            )
        elif kind == "I":
            expect_fields(f, 3)
            op = rp.operation_by_id(unhex(f[2]))
            if op is None:
                out.append("\t".join(["I", f[1], "-", "-"]))
            else:
                out.append("\t".join(["I", f[1], to_hex(op.method), to_hex(op.path)]))
        elif kind == "N":
            expect_fields(f, 4)
            method, path = unhex(f[2]), unhex(f[3])
            hit = any(
                m == method and p.fullmatch(path) is not None
                for m, p in rp.NON_REPLAYABLE_OPERATIONS
            )
            out.append("\t".join(["N", f[1], "1" if hit else "0"]))
        elif kind == "T":
            expect_fields(f, 1)
            out.append("\t".join(["B", to_hex(rp.BASE_PATH), to_hex(rp.SOURCE_SPEC)]))
            out.append("\t".join(["P", *policy_fields(rp.DEFAULT_RETRY_POLICY)]))
            for index, op in enumerate(rp.OPERATIONS):
                out.append(
                    "\t".join(
                        [
                            "O",
                            str(index),
                            to_hex(op.method),
                            to_hex(op.path),
                            "-" if op.operation_id is None else to_hex(op.operation_id),
                            op.replay_class.value,
                            to_hex(op.pattern.pattern),
                        ]
                    )
                )
        else:
            raise Malformed(f"unknown line kind {kind!r}")
    return out


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
