"""Unit tests of contract v3 (docs/contract.md sections 3 and 6-11) in the runtime.

Beyond what the v3 vectors show: decisions read whole (every output field at
once), the event scanner fed in pieces of every size, the problem scanner's
limits, and the defaults that keep every v2 decision.
"""

import dataclasses
import re
import unittest

from _runtime import (
    PROBLEM_BODY_MAX_BYTES,
    PROBLEM_TYPE_ABNORMAL_USAGE_DETECTED,
    PROBLEM_TYPE_QUOTA_EXCEEDED,
    BudgetKind,
    Decision,
    DecisionInput,
    DecisionReason,
    EventStreamScanner,
    Failure,
    IdempotencyKeyFormat,
    InvalidInputError,
    Jitter,
    Operation,
    OperationTable,
    OverCapMode,
    ReplayClass,
    RetryBudget,
    RetryPolicy,
    StatusOutcome,
    UnknownOperationClass,
    budget_try_acquire,
    decide,
    has_precondition,
    idempotency_key_value,
    problem_type_of,
)

from .test_runtime import RUNTIME, inputs

IDEMPOTENT = ReplayClass.IDEMPOTENT
KEYED = ReplayClass.KEYED
NON_REPLAYABLE = ReplayClass.NON_REPLAYABLE
NO_RETRY = ReplayClass.NO_RETRY
PROBLEM = "application/problem+json"
# retry_after_cap_ms is 60000; the largest integer every language holds exactly.
MAX_COUNTER = 2**53 - 1


def stop(reason: DecisionReason, **fields: object) -> Decision:
    """Return a decision not to retry, with ``fields`` set."""
    return dataclasses.replace(
        Decision(retry=False, delay_ms=0, reason=reason),
        **fields,  # type: ignore[arg-type]
    )


def retry(delay_ms: int, reason: DecisionReason, **fields: object) -> Decision:
    """Return a decision to retry, with ``fields`` set."""
    return dataclasses.replace(
        Decision(retry=True, delay_ms=delay_ms, reason=reason),
        **fields,  # type: ignore[arg-type]
    )


def dropped(**changes: object) -> DecisionInput:
    """Return the inputs of a dropped stream with ``changes`` applied."""
    return dataclasses.replace(
        inputs(outcome=Failure.DROPPED),
        **changes,  # type: ignore[arg-type]
    )


def scan(stream: bytes, size: int = 0) -> tuple[int, str, str | None]:
    """Feed ``stream`` to a new scanner in pieces of ``size`` bytes (0: at once)."""
    scanner = EventStreamScanner()
    step = size or len(stream) + 1
    for at in range(0, len(stream), step):
        scanner.feed(stream[at : at + step])
    return scanner.complete_bytes, scanner.last_event_id, scanner.retry


class DroppedStreamTest(unittest.TestCase):
    """R5a and S9: a committed stream that dropped."""

    def test_resume(self) -> None:
        policy = RetryPolicy(jitter=Jitter.NONE)
        cases: list[tuple[DecisionInput, Decision]] = [
            # After its last event id, a resumable stream of any class goes on,
            # after its retry field.
            (
                dropped(
                    replay_class=NON_REPLAYABLE,
                    resumable=True,
                    has_last_event_id=True,
                    stream_retry="3000",
                ),
                retry(3000, DecisionReason.STREAM_RESUME),
            ),
            # A retry field that is not ASCII digits only is ignored: the backoff.
            (
                dropped(
                    replay_class=NON_REPLAYABLE,
                    resumable=True,
                    has_last_event_id=True,
                    stream_retry="3s",
                ),
                retry(500, DecisionReason.STREAM_RESUME),
            ),
            (
                dropped(resumable=True, has_last_event_id=True, stream_retry=" 30"),
                retry(500, DecisionReason.STREAM_RESUME),
            ),
            (
                dropped(resumable=True, has_last_event_id=True, stream_retry=""),
                retry(500, DecisionReason.STREAM_RESUME),
            ),
            (
                dropped(resumable=True, has_last_event_id=True, stream_retry="\u0663"),
                retry(500, DecisionReason.STREAM_RESUME),
            ),
            # Without a last event id a resume is a full replay: replayable only.
            (
                dropped(resumable=True),
                retry(500, DecisionReason.STREAM_RESUME),
            ),
            (
                dropped(replay_class=KEYED, has_idempotency_key=True, resumable=True),
                retry(500, DecisionReason.STREAM_RESUME),
            ),
            (
                dropped(
                    replay_class=NON_REPLAYABLE, has_precondition=True, resumable=True
                ),
                retry(500, DecisionReason.STREAM_RESUME),
            ),
            (
                dropped(replay_class=NON_REPLAYABLE, resumable=True),
                stop(DecisionReason.STREAM_NOT_RESUMABLE),
            ),
            (
                dropped(replay_class=KEYED, resumable=True),
                stop(DecisionReason.STREAM_NOT_RESUMABLE),
            ),
            # A stream that is not resumable never goes on.
            (
                dropped(has_last_event_id=True, stream_retry="10"),
                stop(DecisionReason.STREAM_NOT_RESUMABLE),
            ),
            (
                dropped(replay_class=NO_RETRY, resumable=True, has_last_event_id=True),
                stop(DecisionReason.NO_RETRY_OPERATION),
            ),
            (
                dropped(resumable=True, has_last_event_id=True, retries_used=3),
                stop(DecisionReason.EXHAUSTED),
            ),
            # R14 caps the stream's delay as it caps Retry-After, and reports it.
            (
                dropped(resumable=True, has_last_event_id=True, stream_retry="61000"),
                stop(DecisionReason.RETRY_AFTER_OVER_CAP, server_delay_ms=61000),
            ),
            (
                dropped(
                    resumable=True,
                    has_last_event_id=True,
                    stream_retry="1234567890123456",
                ),
                stop(DecisionReason.RETRY_AFTER_OVER_CAP, server_delay_ms=MAX_COUNTER),
            ),
            (
                dropped(
                    resumable=True,
                    has_last_event_id=True,
                    stream_retry="123456789012345",
                ),
                stop(
                    DecisionReason.RETRY_AFTER_OVER_CAP,
                    server_delay_ms=123456789012345,
                ),
            ),
        ]
        for given, expected in cases:
            with self.subTest(given=given):
                self.assertEqual(decide(policy, given), expected)
        clamp = RetryPolicy(retry_after_over_cap=OverCapMode.CLAMP)
        self.assertEqual(
            decide(
                clamp,
                dropped(resumable=True, has_last_event_id=True, stream_retry="61000"),
            ),
            retry(60000, DecisionReason.STREAM_RESUME),
        )

    def test_a_resume_pays_as_a_retry(self) -> None:
        budget = RetryBudget(RetryPolicy(budget_throttling_cost=1), tokens=100)
        decision = budget.decide(dropped(resumable=True, has_last_event_id=True))
        self.assertEqual(
            decision,
            retry(250, DecisionReason.STREAM_RESUME, budget_tokens=95),
        )

    def test_headers_are_not_a_streams_delay(self) -> None:
        # A status outcome ignores the stream's retry field.
        self.assertEqual(
            decide(RetryPolicy(), inputs(stream_retry="7000", resumable=True)),
            retry(250, DecisionReason.RETRYABLE_STATUS),
        )


class PreconditionTest(unittest.TestCase):
    """H2 and R6a."""

    def test_has_precondition(self) -> None:
        cases: list[tuple[list[tuple[str, str]], bool]] = [
            ([("If-Match", '"v1"')], True),
            ([("if-match", ' \tW/"v1"\t')], True),
            ([("IF-MATCH", "*")], False),
            ([("If-Match", " * ")], False),
            ([("If-Match", " \t")], False),
            ([("If-Match", "")], False),
            ([("If-None-Match", "*")], True),
            ([("if-none-match", "\t* ")], True),
            ([("If-None-Match", '"v1"')], False),
            ([("If-None-Match", "*, *")], False),
            ([("If-Unmodified-Since", "Sun, 06 Nov 1994 08:49:37 GMT")], False),
            ([("If-Match", "*"), ("If-Match", '"v2"')], True),
            ([("If-None-Match", '"a"'), ("If-None-Match", "*")], True),
            # Names compare ASCII case-insensitively only.
            ([("\u0130f-Match", '"v1"')], False),
            ([("If-None-Match\u017f", "*")], False),
            ([], False),
        ]
        for headers, expected in cases:
            with self.subTest(headers=headers):
                self.assertIs(has_precondition(headers), expected)
        self.assertTrue(has_precondition({"If-None-Match": "*"}))
        self.assertFalse(has_precondition({"If-Match": "*"}))

    def test_a_precondition_makes_a_request_replayable(self) -> None:
        policy = RetryPolicy()
        for replay_class in (KEYED, NON_REPLAYABLE):
            with self.subTest(replay_class=replay_class):
                self.assertEqual(
                    decide(
                        policy,
                        inputs(replay_class=replay_class, has_precondition=True),
                    ),
                    retry(250, DecisionReason.RETRYABLE_STATUS),
                )
                self.assertEqual(
                    decide(
                        policy,
                        inputs(
                            replay_class=replay_class,
                            has_precondition=True,
                            outcome=Failure.TRANSPORT,
                        ),
                    ),
                    retry(250, DecisionReason.TRANSPORT_FAILURE),
                )
                self.assertEqual(
                    decide(policy, inputs(replay_class=replay_class)).reason,
                    DecisionReason.NOT_REPLAYABLE,
                )
        self.assertEqual(
            decide(policy, inputs(replay_class=NO_RETRY, has_precondition=True)),
            stop(DecisionReason.NO_RETRY_OPERATION),
        )

    def test_412_after_a_replay(self) -> None:
        policy = RetryPolicy(retryable_statuses=(412, 503))
        put = inputs(
            replay_class=NON_REPLAYABLE,
            has_precondition=True,
            outcome=StatusOutcome(status=412),
            retries_used=1,
        )
        self.assertEqual(
            decide(policy, put), stop(DecisionReason.PRECONDITION_FAILED_AFTER_REPLAY)
        )
        # The first attempt's 412 goes through the other rules.
        self.assertEqual(
            decide(policy, dataclasses.replace(put, retries_used=0)),
            retry(250, DecisionReason.RETRYABLE_STATUS),
        )
        self.assertEqual(
            decide(RetryPolicy(), dataclasses.replace(put, retries_used=0)),
            stop(DecisionReason.STATUS_NOT_RETRYABLE),
        )
        # Without a precondition a 412 is any status.
        self.assertEqual(
            decide(
                policy,
                dataclasses.replace(
                    put, replay_class=IDEMPOTENT, has_precondition=False
                ),
            ),
            retry(500, DecisionReason.RETRYABLE_STATUS),
        )
        # After R6: the server's "false" still wins.
        self.assertEqual(
            decide(
                policy,
                dataclasses.replace(
                    put, outcome=StatusOutcome(status=412, directive="false")
                ),
            ),
            stop(DecisionReason.SERVER_SAID_NO),
        )


class ProblemTypeTest(unittest.TestCase):
    """R6b, R9a and Q1-Q2."""

    def test_decide(self) -> None:
        policy = RetryPolicy(retry_problem_types=("urn:busy",))
        quota = inputs(
            outcome=StatusOutcome(status=429, retry_after="1"),
            problem_type=PROBLEM_TYPE_QUOTA_EXCEEDED,
        )
        self.assertEqual(decide(policy, quota), stop(DecisionReason.PROBLEM_TYPE_STOP))
        self.assertEqual(
            decide(
                policy,
                dataclasses.replace(
                    quota, problem_type=PROBLEM_TYPE_ABNORMAL_USAGE_DETECTED
                ),
            ),
            stop(DecisionReason.PROBLEM_TYPE_STOP),
        )
        # Before the key statuses and the server's "true".
        self.assertEqual(
            decide(
                policy,
                dataclasses.replace(
                    quota,
                    replay_class=KEYED,
                    has_idempotency_key=True,
                    outcome=StatusOutcome(status=409, directive="true"),
                ),
            ),
            stop(DecisionReason.PROBLEM_TYPE_STOP),
        )
        # Compared exactly.
        self.assertEqual(
            decide(
                policy,
                dataclasses.replace(
                    quota, problem_type=PROBLEM_TYPE_QUOTA_EXCEEDED.upper()
                ),
            ),
            retry(1000, DecisionReason.REJECTED_STATUS, throttled=True),
        )
        busy = inputs(outcome=StatusOutcome(status=400), problem_type="urn:busy")
        self.assertEqual(
            decide(policy, busy), retry(250, DecisionReason.PROBLEM_TYPE_RETRY)
        )
        conditional = dataclasses.replace(
            busy, replay_class=NON_REPLAYABLE, has_precondition=True
        )
        self.assertEqual(
            decide(policy, conditional), retry(250, DecisionReason.PROBLEM_TYPE_RETRY)
        )
        # Ignored for a request that is not replayable: the next rules decide.
        self.assertEqual(
            decide(policy, dataclasses.replace(conditional, has_precondition=False)),
            stop(DecisionReason.STATUS_NOT_RETRYABLE),
        )
        self.assertEqual(
            decide(
                policy,
                dataclasses.replace(
                    busy, replay_class=NON_REPLAYABLE, outcome=StatusOutcome(status=429)
                ),
            ),
            retry(250, DecisionReason.REJECTED_STATUS, throttled=True),
        )
        # The key statuses come first.
        self.assertEqual(
            decide(
                policy,
                dataclasses.replace(
                    busy,
                    replay_class=KEYED,
                    has_idempotency_key=True,
                    outcome=StatusOutcome(status=409),
                ),
            ),
            retry(250, DecisionReason.KEY_IN_FLIGHT),
        )
        # A failure has no problem type.
        self.assertEqual(
            decide(
                policy,
                dataclasses.replace(quota, outcome=Failure.CONNECT),
            ),
            retry(250, DecisionReason.CONNECT_FAILURE),
        )
        # By default no problem type retries.
        self.assertEqual(
            decide(RetryPolicy(), busy), stop(DecisionReason.STATUS_NOT_RETRYABLE)
        )

    def test_problem_type_of(self) -> None:
        body = (
            '{"title": "over", "type": "' + PROBLEM_TYPE_QUOTA_EXCEEDED + '", '
            '"detail": {"a": [1, -0.5e+3, 0, 2E-1, true, false, null, ""]}}'
        ).encode()
        self.assertEqual(
            problem_type_of(
                "Application/Problem+JSON ; charset=utf-8", body, complete=True
            ),
            PROBLEM_TYPE_QUOTA_EXCEEDED,
        )
        self.assertIsNone(problem_type_of("application/json", body, complete=True))
        self.assertIsNone(problem_type_of(None, body, complete=True))
        self.assertIsNone(problem_type_of(PROBLEM, body, complete=False))
        self.assertIsNone(
            problem_type_of("application/problem+json+x", body, complete=True)
        )

        def deep(depth: int) -> bytes:
            return b'{"type":"t","x":' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"

        cases: list[tuple[bytes, str | None]] = [
            (b' \r\n\t{"type":"t"}\n ', "t"),
            (b'{"type":""}', ""),
            (deep(64), "t"),
            (deep(65), None),
            (b'{"x":' + b'{"a":' * 63 + b"1" + b"}" * 63 + b',"type":"t"}', "t"),
            (b'{"x":' + b'{"a":' * 64 + b"1" + b"}" * 64 + b',"type":"t"}', None),
            # Unescaped before it is compared and returned.
            (b'{"t\\u0079pe":"a\\/b\\"\\\\\\n\\u00e9"}', 'a/b"\\\n\u00e9'),
            (b'{"type":"a\\ud83d\\ude00"}', "a\U0001f600"),
            (b'{"type":"\xc3\xa9"}', "\u00e9"),
            (b'{"type":"t","typ\\u0065":"u"}', None),
            (b'{"type":"t","type":"t"}', None),
            (b'{"a":{"type":"t"}}', None),
            (b'{"type":1}', None),
            (b'{"type":null}', None),
            (b'{"type":["t"]}', None),
            (b'{"Type":"t"}', None),
            (b'{"type":"\\ud83d"}', None),
            (b'{"type":"\\ude00"}', None),
            (b'{"type":"\\ud83d\\u0041"}', None),
            (b'{"type":"\xed\xa0\xbd"}', None),
            (b'{"type":"\xff"}', None),
            (b'{"type":"\xc0\xaf"}', None),
            (b'{"type":"a\x1fb"}', None),
            (b'{"type":"\\x41"}', None),
            (b'{"type":"\\u004"}', None),
            (b'{"type":"\\u+041"}', None),
            (b'\xef\xbb\xbf{"type":"t"}', None),
            (b'{"type":"t"} x', None),
            (b'{"type":"t"}{}', None),
            (b'{"type":"t",}', None),
            (b'{"type":"t"', None),
            (b'["t"]', None),
            (b'"t"', None),
            (b"", None),
            (b'{"type":"t","n":01}', None),
            (b'{"type":"t","n":1.}', None),
            (b'{"type":"t","n":.5}', None),
            (b'{"type":"t","n":1e}', None),
            (b'{"type":"t","n":+1}', None),
            (b'{"type":"t","n":-}', None),
            (b'{"type":"t","n":\xd9\xa3}', None),
            (b'{"type":"t","n":tru}', None),
            (b'{"type":"t","n":True}', None),
            (b'{"type":"t","n":NaN}', None),
            (b'{"type":"t",\x0b"n":1}', None),
            (b"{'type':'t'}", None),
        ]
        for given, expected in cases:
            with self.subTest(body=given):
                self.assertEqual(
                    problem_type_of(PROBLEM, given, complete=True), expected
                )

    def test_the_body_limit(self) -> None:
        padding = PROBLEM_BODY_MAX_BYTES - len(b'{"type":"t"}')
        whole = b'{"type":"t"}' + b" " * padding
        self.assertEqual(problem_type_of(PROBLEM, whole, complete=True), "t")
        self.assertIsNone(problem_type_of(PROBLEM, whole + b" ", complete=True))


class ThrottlingTest(unittest.TestCase):
    """T1 and K2's kind ``throttling``."""

    def test_decide(self) -> None:
        policy = RetryPolicy(
            jitter=Jitter.NONE,
            throttling_initial_backoff_ms=1000,
            budget_throttling_cost=2,
            throttling_statuses=(429, 503),
            retryable_statuses=(500, 503),
        )

        def given(status: int, retries_used: int, *, timed_out: bool) -> DecisionInput:
            return inputs(
                outcome=StatusOutcome(status=status),
                retries_used=retries_used,
                budget_tokens=100,
                timed_out=timed_out,
            )

        cases: list[tuple[DecisionInput, Decision]] = [
            # The throttling base grows as the usual one does, and the
            # throttling cost is paid, even after a timeout.
            (
                given(429, 0, timed_out=False),
                retry(
                    1000,
                    DecisionReason.REJECTED_STATUS,
                    budget_tokens=98,
                    throttled=True,
                ),
            ),
            (
                given(503, 1, timed_out=True),
                retry(
                    2000,
                    DecisionReason.RETRYABLE_STATUS,
                    budget_tokens=98,
                    throttled=True,
                ),
            ),
            (
                given(500, 0, timed_out=True),
                retry(500, DecisionReason.RETRYABLE_STATUS, budget_tokens=90),
            ),
            (
                given(500, 0, timed_out=False),
                retry(500, DecisionReason.RETRYABLE_STATUS, budget_tokens=95),
            ),
            # A stop is never throttled.
            (
                dataclasses.replace(
                    given(429, 0, timed_out=False), replay_class=NO_RETRY
                ),
                stop(DecisionReason.NO_RETRY_OPERATION, budget_tokens=100),
            ),
            (
                dataclasses.replace(given(429, 0, timed_out=False), budget_tokens=1),
                stop(DecisionReason.BUDGET_EXHAUSTED, budget_tokens=1),
            ),
            # A throttling status's server delay is not the backoff.
            (
                inputs(outcome=StatusOutcome(status=429, retry_after="3")),
                retry(3000, DecisionReason.REJECTED_STATUS, throttled=True),
            ),
            # A failure is never throttled.
            (
                inputs(outcome=Failure.CONNECT),
                retry(500, DecisionReason.CONNECT_FAILURE),
            ),
        ]
        for case, expected in cases:
            with self.subTest(given=case):
                self.assertEqual(decide(policy, case), expected)

    def test_the_throttling_base_in_every_jitter(self) -> None:
        throttled = inputs(
            outcome=StatusOutcome(status=429), retries_used=1, random=0.25
        )
        for jitter, expected in (
            (Jitter.FULL, 500),
            (Jitter.EQUAL, 1250),
            (Jitter.NONE, 2000),
            # B5's first previous delay is the throttling base too.
            (Jitter.DECORRELATED, 1000 + 500),
        ):
            with self.subTest(jitter=jitter):
                policy = RetryPolicy(jitter=jitter, throttling_initial_backoff_ms=1000)
                self.assertEqual(decide(policy, throttled).delay_ms, expected)

    def test_defaults_keep_v2(self) -> None:
        # Without the throttling keys a throttled retry is a v2 retry, flagged.
        policy = RetryPolicy(jitter=Jitter.NONE)
        self.assertEqual(
            decide(
                policy, inputs(outcome=StatusOutcome(status=429), budget_tokens=100)
            ),
            retry(
                500, DecisionReason.REJECTED_STATUS, budget_tokens=95, throttled=True
            ),
        )
        self.assertEqual(
            decide(policy, inputs(budget_tokens=100, timed_out=True)),
            retry(500, DecisionReason.RETRYABLE_STATUS, budget_tokens=90),
        )

    def test_budget_kind(self) -> None:
        policy = RetryPolicy(budget_capacity=10, budget_throttling_cost=3)
        self.assertEqual(
            budget_try_acquire(policy, 10, BudgetKind.THROTTLING), (True, 7)
        )
        self.assertEqual(
            budget_try_acquire(policy, 2, BudgetKind.THROTTLING), (False, 2)
        )
        self.assertEqual(budget_try_acquire(policy, 10, BudgetKind.RETRY), (True, 5))
        self.assertEqual(budget_try_acquire(policy, 10, BudgetKind.TIMEOUT), (True, 0))
        default = RetryPolicy(budget_capacity=10)
        self.assertEqual(
            budget_try_acquire(default, 10, BudgetKind.THROTTLING), (True, 5)
        )
        disabled = RetryPolicy(budget_capacity=0, budget_throttling_cost=3)
        self.assertEqual(
            budget_try_acquire(disabled, 0, BudgetKind.THROTTLING), (True, 0)
        )
        self.assertEqual(BudgetKind.parse("throttling"), BudgetKind.THROTTLING)
        with self.assertRaises(InvalidInputError) as caught:
            BudgetKind.parse("throttle")
        self.assertEqual(caught.exception.key, "input.budget_kind")


def key_of(**fields: object) -> str:
    """Return the key of the error a policy with ``fields`` raises, or ``valid``."""
    try:
        RetryPolicy(**fields)  # type: ignore[arg-type]
    except InvalidInputError as e:
        return e.key
    return "valid"


class PolicyTest(unittest.TestCase):
    """V1 and V2, extended; the defaults."""

    def test_defaults(self) -> None:
        policy = RetryPolicy()
        self.assertEqual(policy.throttling_statuses, (429,))
        self.assertIsNone(policy.throttling_initial_backoff_ms)
        self.assertIsNone(policy.budget_throttling_cost)
        self.assertEqual(
            policy.stop_problem_types,
            (
                "https://iana.org/assignments/http-problem-types#quota-exceeded",
                "https://iana.org/assignments/http-problem-types#abnormal-usage-detected",
            ),
        )
        self.assertEqual(policy.retry_problem_types, ())
        self.assertIs(policy.idempotency_key_format, IdempotencyKeyFormat.UUID)

    def test_each_key(self) -> None:
        cases: list[tuple[dict[str, object], str]] = [
            ({"throttling_statuses": (99,)}, "policy.throttling_statuses"),
            ({"throttling_statuses": (600,)}, "policy.throttling_statuses"),
            ({"throttling_statuses": (True,)}, "policy.throttling_statuses"),
            ({"throttling_statuses": 429}, "policy.throttling_statuses"),
            (
                {"throttling_initial_backoff_ms": 0},
                "policy.throttling_initial_backoff_ms",
            ),
            (
                {"throttling_initial_backoff_ms": 86_400_001},
                "policy.throttling_initial_backoff_ms",
            ),
            (
                {"throttling_initial_backoff_ms": 1.5},
                "policy.throttling_initial_backoff_ms",
            ),
            ({"budget_throttling_cost": 0}, "policy.budget_throttling_cost"),
            ({"budget_throttling_cost": 1_000_001}, "policy.budget_throttling_cost"),
            ({"stop_problem_types": ("",)}, "policy.stop_problem_types"),
            ({"stop_problem_types": ("x" * 2049,)}, "policy.stop_problem_types"),
            ({"stop_problem_types": ("urn:\ud800",)}, "policy.stop_problem_types"),
            ({"stop_problem_types": (1,)}, "policy.stop_problem_types"),
            ({"stop_problem_types": "urn:a"}, "policy.stop_problem_types"),
            ({"retry_problem_types": ("",)}, "policy.retry_problem_types"),
            ({"idempotency_key_format": "uuid"}, "policy.idempotency_key_format"),
            # v2's keys first, then v3's in the table's order, then the ranges.
            (
                {"budget_retry_cost": 0, "throttling_statuses": (0,)},
                "policy.budget_retry_cost",
            ),
            (
                {"throttling_statuses": (0,), "budget_throttling_cost": 0},
                "policy.throttling_statuses",
            ),
            (
                {"stop_problem_types": ("",), "retry_problem_types": ("",)},
                "policy.stop_problem_types",
            ),
            (
                {
                    "initial_backoff_ms": 2000,
                    "max_backoff_ms": 1000,
                    "idempotency_key_format": "x",
                },
                "policy.idempotency_key_format",
            ),
            ({"throttling_initial_backoff_ms": 30001}, "policy.max_backoff_ms"),
            (
                {
                    "initial_backoff_ms": 2000,
                    "max_backoff_ms": 1000,
                    "throttling_initial_backoff_ms": 40000,
                },
                "policy.max_backoff_ms",
            ),
        ]
        for fields, key in cases:
            with self.subTest(fields=fields):
                self.assertEqual(key_of(**fields), key)
        edge = RetryPolicy(
            throttling_statuses=(100, 599),
            throttling_initial_backoff_ms=30000,
            budget_throttling_cost=1_000_000,
            stop_problem_types=("x" * 2048,),
            retry_problem_types=("\U0001f600" * 2048,),
        )
        self.assertEqual(edge.throttling_statuses, (100, 599))
        self.assertEqual(edge.stop_problem_types, ("x" * 2048,))
        self.assertEqual(edge.retry_problem_types, ("\U0001f600" * 2048,))
        self.assertEqual(RetryPolicy(throttling_statuses=()).throttling_statuses, ())

    def test_new_input_strings(self) -> None:
        # V8: a lone surrogate is invalid input, after the budget state (V7).
        with self.assertRaises(InvalidInputError) as caught:
            decide(RetryPolicy(), dropped(resumable=True, stream_retry="1\ud800"))
        self.assertEqual(caught.exception.key, "input.stream_retry")
        with self.assertRaises(InvalidInputError) as caught:
            decide(RetryPolicy(), inputs(problem_type="urn:\udc00"))
        self.assertEqual(caught.exception.key, "input.problem_type")
        with self.assertRaises(InvalidInputError) as caught:
            decide(
                RetryPolicy(budget_capacity=5),
                inputs(problem_type="\udc00", budget_tokens=6),
            )
        self.assertEqual(caught.exception.key, "input.budget_tokens")
        self.assertEqual(Failure.parse("dropped"), Failure.DROPPED)
        for name in ("drop", "Dropped", "stream"):
            with self.subTest(name=name), self.assertRaises(InvalidInputError):
                Failure.parse(name)


class EventStreamScannerTest(unittest.TestCase):
    """E2, fed in pieces."""

    def test_pieces(self) -> None:
        long_data = b"data: " + b"x" * 70000 + b"\nid: 9\n\nid\n"
        cases: list[tuple[bytes, int, str, str | None]] = [
            (b"id: 1\ndata: a\n\nid: 2\ndata: b", 15, "1", None),
            (b"retry: 3000\r\nid: 7\r\ndata: x\r\n\r\nid: 8\r\n", 31, "7", "3000"),
            # A CR at the cut may be the first half of a CRLF: not complete yet.
            (b"id: a\r\rid: b\r", 7, "a", None),
            (b"\xef\xbb\xbfid: 1\n\n: ping\n", 10, "1", None),
            # A data line as long as a model's answer is passed through, never kept.
            (long_data, len(long_data) - 3, "9", None),
            (b"id: \xff\xe2\x82\n\n", 9, "\ufffd\ufffd", None),
            (
                b"id: \xf0\x90\x80A\xed\xa0\x80\n\n",
                13,
                "\ufffdA\ufffd\ufffd\ufffd",
                None,
            ),
            # A leading mark is complete: it belongs to no event.
            (b"\xef\xbb\xbfdata: x", 3, "", None),
            (b"\xef\xbb", 0, "", None),
            # A partial mark starts a line that is no field of ours.
            (b"\xef\xbbid: 1\n\n", 9, "", None),
            # An empty id empties it; one with U+0000 is ignored.
            (b"id: 1\n\nid\n\n", 11, "", None),
            (b"id: 1\n\nid: 2\x003\n\n", 16, "1", None),
            # One leading space of a value is removed, not two; no colon: empty.
            (b"id:  2\n\n", 8, " 2", None),
            (b"id:2\nretry:45\n\n", 15, "2", "45"),
            (b"retry\n\nretry: 4 5\nretry: -1\nretry: \n\n", 37, "", None),
            (b"retry: 10\n\nretry: 20\n\nretry: x\n\n", 32, "", "20"),
            (b"ID: 1\nid : 2\n:id: 3\n\n", 21, "", None),
            # The fields of an event cut by the drop are not taken.
            (b"id: 1\nretry: 5\n\nid: 2\nretry: 6\n", 16, "1", "5"),
            (b"", 0, "", None),
        ]
        for stream, complete, last_event_id, reconnection in cases:
            for size in (0, 1, 2, 3, 5, 7):
                with self.subTest(stream=stream[:30], size=size):
                    self.assertEqual(
                        scan(stream, size), (complete, last_event_id, reconnection)
                    )

    def test_every_cut(self) -> None:
        # Byte by byte equals whole on every cut of a stream with every line end.
        stream = (
            b"\xef\xbb\xbfretry: 5\r\nid: x\r\rdata: y\n\n:c\rid: z\nretry: 7\r\n\r\n"
            b"event: e\n"
        )
        for cut in range(len(stream) + 1):
            with self.subTest(cut=cut):
                self.assertEqual(scan(stream[:cut], 1), scan(stream[:cut]))
        self.assertEqual(scan(stream), (len(stream) - 9, "z", "7"))

    def test_an_empty_piece_changes_nothing(self) -> None:
        scanner = EventStreamScanner()
        for piece in (b"id: 1\r", b"", b"\r", b"", b"\n"):
            scanner.feed(piece)
        self.assertEqual(
            (scanner.complete_bytes, scanner.last_event_id, scanner.retry),
            (8, "1", None),
        )


class KeyFormatTest(unittest.TestCase):
    """F1."""

    def test_idempotency_key_value(self) -> None:
        uuid = "8e03978e-0000-4000-8000-000000000000"
        self.assertEqual(idempotency_key_value(IdempotencyKeyFormat.UUID, uuid), uuid)
        self.assertEqual(
            idempotency_key_value(IdempotencyKeyFormat.SF_STRING, uuid), f'"{uuid}"'
        )
        self.assertEqual(
            IdempotencyKeyFormat.parse("sf-string"), IdempotencyKeyFormat.SF_STRING
        )
        for name in ("UUID", "sf_string", "", "sf-string "):
            with (
                self.subTest(name=name),
                self.assertRaises(InvalidInputError) as caught,
            ):
                IdempotencyKeyFormat.parse(name)
            self.assertEqual(caught.exception.key, "policy.idempotency_key_format")
        with self.assertRaises(InvalidInputError) as caught:
            idempotency_key_value("sf-string", uuid)  # type: ignore[arg-type]
        self.assertEqual(caught.exception.key, "policy.idempotency_key_format")


def stream_table(unknown: UnknownOperationClass) -> OperationTable:
    """Return a table with a resumable, a streaming and a plain operation."""
    return OperationTable(
        base_path="/v1",
        operations=(
            Operation(
                method="GET",
                route="/logs",
                path="/logs",
                operation_id="logs",
                replay_class=IDEMPOTENT,
                streaming=True,
                resumable=True,
            ),
            Operation(
                method="POST",
                route="/chat",
                path="/chat",
                operation_id="chat",
                replay_class=NON_REPLAYABLE,
                streaming=True,
            ),
            Operation(
                method="GET",
                route="/items",
                path="/items",
                operation_id="items",
                replay_class=IDEMPOTENT,
            ),
        ),
        unknown_operation_class=unknown,
    )


class ClassifyTest(unittest.TestCase):
    """C3 and the stream attributes (A1-A2) of an operation."""

    def test_the_tables_class_of_unknown_requests(self) -> None:
        table = stream_table(UnknownOperationClass.NO_RETRY)
        self.assertEqual(table.unknown_operation_class, UnknownOperationClass.NO_RETRY)
        self.assertEqual(table.classify("GET", "/v1/other").replay_class, NO_RETRY)
        self.assertEqual(
            table.classifier("/gw").classify("GET", "/gw/x").replay_class, NO_RETRY
        )
        self.assertEqual(
            table.classifier(None, UnknownOperationClass.METHOD_DEFAULT)
            .classify("GET", "/v1/other")
            .replay_class,
            IDEMPOTENT,
        )
        plain = stream_table(UnknownOperationClass.METHOD_DEFAULT)
        self.assertEqual(plain.classify("GET", "/v1/other").replay_class, IDEMPOTENT)
        self.assertEqual(
            plain.classify("POST", "/v1/other").replay_class, NON_REPLAYABLE
        )
        self.assertEqual(
            OperationTable(base_path="", operations=())
            .classify("DELETE", "/x")
            .replay_class,
            IDEMPOTENT,
        )
        with self.assertRaises(InvalidInputError) as caught:
            OperationTable(
                base_path="",
                operations=(),
                unknown_operation_class="no_retry",  # type: ignore[arg-type]
            )
        self.assertEqual(caught.exception.key, "policy.unknown_operation_class")

    def test_stream_attributes(self) -> None:
        table = stream_table(UnknownOperationClass.METHOD_DEFAULT)
        found = {
            path: (c.streaming, c.resumable, c.replay_class)
            for path in ("/logs", "/chat", "/items", "/nothing")
            for c in [table.classify("POST" if path == "/chat" else "GET", path)]
        }
        self.assertEqual(
            found,
            {
                "/logs": (True, True, IDEMPOTENT),
                "/chat": (True, False, NON_REPLAYABLE),
                "/items": (False, False, IDEMPOTENT),
                "/nothing": (False, False, IDEMPOTENT),
            },
        )


V3_ANCHORS = ("H2", "R5a", "R6a", "R6b", "R9a", "S9", "T1", "Q2", "E2", "F1")


class AnchorTest(unittest.TestCase):
    def test_every_v3_anchor(self) -> None:
        source = RUNTIME.read_text(encoding="utf-8")
        marked = set(re.findall(r"\[contract ([A-Z][0-9]+[a-z]?)\]", source))
        self.assertLessEqual(set(V3_ANCHORS), marked)


if __name__ == "__main__":
    unittest.main()
