"""Unit tests of the runtime, run with ``python3 -m unittest`` from runtime/python."""

import dataclasses
import importlib.util
import math
import re
import unittest
from pathlib import Path
from unittest import mock

import _runtime as rt
from _runtime import (
    Decision,
    DecisionInput,
    DecisionReason,
    Failure,
    Jitter,
    Operation,
    OperationTable,
    ReplayClass,
    RetryPolicy,
    StatusOutcome,
    decide,
    server_delay_ms,
)

IDEMPOTENT = ReplayClass.IDEMPOTENT
KEYED = ReplayClass.KEYED
NON_REPLAYABLE = ReplayClass.NON_REPLAYABLE
NO_RETRY = ReplayClass.NO_RETRY

RUNTIME = Path(__file__).resolve().parent.parent / "_runtime.py"


def op(
    method: str,
    path: str,
    operation_id: str | None,
    replay_class: ReplayClass = IDEMPOTENT,
) -> Operation:
    """Build an operation whose route is its path without a ``?``/``#`` suffix."""
    route = re.split(r"[?#]", path, maxsplit=1)[0]
    return Operation(
        method=method,
        route=route,
        path=path,
        operation_id=operation_id,
        replay_class=replay_class,
    )


OPERATIONS = (
    op("GET", "/", "root"),
    op("GET", "/sandboxes", "listSandboxes"),
    op("POST", "/sandboxes", "createSandbox", NON_REPLAYABLE),
    op("GET", "/sandboxes/templates", "listTemplates"),
    op("GET", "/sandboxes/{id}", "getSandbox"),
    op("POST", "/sandboxes/{id}", "updateSandbox", KEYED),
    op("GET", "/sandboxes/{id}/logs", "logs", NO_RETRY),
    # Backtracking: the literal `templates` branch has no `files` child.
    op("GET", "/sandboxes/{id}/files", "sandboxFiles"),
    op("GET", "/files/{name}.{ext}", "file"),
    op("GET", "/files/{name}.tar.{ext}", "tarball"),
    op("GET", "/files/{name}.json", "json"),
    op("GET", "/v/v{version}", "versioned"),
    op("GET", "/v/{name}v", "suffixed"),
    op("GET", "/p/{a}x", "shorter"),
    op("GET", "/p/{a}x{b}", "longer"),
    op("GET", "/a%20b/caf%C3%A9", "encoded"),
    op("GET", "/bad/%FF", "notUtf8"),
    op("GET", "/trailing/", "trailing"),
    op("GET", "/oauth/token#refresh", "refresh"),
    op("POST", "/oauth/token#refresh", "refreshPost", NON_REPLAYABLE),
    op("POST", "/oauth/token?grant=code", "codePost", NON_REPLAYABLE),
    op("GET", "/x/{a}/y", "first"),
    op("GET", "/x/{b}/y", "second"),
    op("PUT", "/regex/a.b+c(d)/{id}/v{n}.json", "regex", NON_REPLAYABLE),
)


def table(base_path: str = "/api/v1") -> OperationTable:
    """Return the matcher of ``OPERATIONS``."""
    return OperationTable(base_path=base_path, operations=OPERATIONS)


def operation_id(t: OperationTable, method: str, path: str) -> str | None:
    """Return the operationId ``t`` classifies a request as."""
    found = t.classify(method, path).operation
    return None if found is None else found.operation_id


class MatcherTest(unittest.TestCase):
    def setUp(self) -> None:
        self.table = table()

    def test_literal_beats_parameter(self) -> None:
        self.assertEqual(
            operation_id(self.table, "GET", "/sandboxes/templates"), "listTemplates"
        )
        self.assertEqual(
            operation_id(self.table, "GET", "/sandboxes/abc"), "getSandbox"
        )

    def test_backtracking_out_of_a_literal_branch(self) -> None:
        self.assertEqual(
            operation_id(self.table, "GET", "/sandboxes/templates/files"),
            "sandboxFiles",
        )
        self.assertIsNone(operation_id(self.table, "GET", "/sandboxes/templates/x"))

    def test_mixed_segments_in_order(self) -> None:
        # More literal bytes first: `.json` and `.tar.` (5 bytes each, `.j` before `.t`)
        # before `.` (1 byte).
        self.assertEqual(operation_id(self.table, "GET", "/files/x.tar.gz"), "tarball")
        self.assertEqual(operation_id(self.table, "GET", "/files/x.json"), "json")
        self.assertEqual(operation_id(self.table, "GET", "/files/x.tar.json"), "json")
        self.assertEqual(operation_id(self.table, "GET", "/files/x.json.json"), "json")
        self.assertEqual(operation_id(self.table, "GET", "/files/a.b"), "file")
        # A parameter covers at least one character.
        self.assertIsNone(operation_id(self.table, "GET", "/files/.json"))
        self.assertIsNone(operation_id(self.table, "GET", "/files/x."))
        # Equal literal bytes: a literal piece sorts before a parameter.
        self.assertEqual(operation_id(self.table, "GET", "/v/vXv"), "versioned")
        self.assertEqual(operation_id(self.table, "GET", "/v/Xv"), "suffixed")
        self.assertIsNone(operation_id(self.table, "GET", "/v/v"))
        # A list that is a prefix of the other sorts first.
        self.assertEqual(operation_id(self.table, "GET", "/p/axbx"), "shorter")
        self.assertEqual(operation_id(self.table, "GET", "/p/axb"), "longer")

    def test_mixed_children_sort_by_code_point_not_utf16(self) -> None:
        # U+FF61 + "x" and U+1F600 are both 4 UTF-8 bytes; by code point U+FF61 comes first,
        # by UTF-16 code unit the surrogate 0xD83D would.
        t = OperationTable(
            base_path="",
            operations=(
                op("GET", "/m/{a}\U0001f600", "emoji"),
                op("GET", "/m/{a}\uff61x", "halfwidth"),
            ),
        )
        node = t._root.literals["m"]
        self.assertEqual(
            [pieces for pieces, _ in node.mixed],
            [(None, "\uff61x"), (None, "\U0001f600")],
        )

    def test_percent_decoding(self) -> None:
        self.assertEqual(operation_id(self.table, "GET", "/a%20b/caf%c3%a9"), "encoded")
        self.assertEqual(operation_id(self.table, "GET", "/a b/caf\u00e9"), "encoded")
        # Not UTF-8 once decoded: kept as written, on both sides.
        self.assertEqual(operation_id(self.table, "GET", "/bad/%FF"), "notUtf8")
        self.assertIsNone(operation_id(self.table, "GET", "/bad/%ff"))
        # An encoded slash stays inside its segment.
        self.assertEqual(
            operation_id(self.table, "GET", "/sandboxes/a%2Fb"), "getSandbox"
        )
        self.assertEqual(rt._percent_decode("%zz%4"), "%zz%4")
        self.assertEqual(rt._percent_decode("%%41%"), "%A%")

    def test_trailing_slash_query_fragment_and_case(self) -> None:
        self.assertEqual(
            operation_id(self.table, "get", "/sandboxes/"), "listSandboxes"
        )
        self.assertEqual(operation_id(self.table, "GET", "/trailing"), "trailing")
        self.assertEqual(operation_id(self.table, "GET", "/trailing/"), "trailing")
        self.assertIsNone(operation_id(self.table, "GET", "/trailing//"))
        self.assertEqual(
            operation_id(self.table, "gEt", "/sandboxes?x=/templates#y"),
            "listSandboxes",
        )
        self.assertEqual(operation_id(self.table, "GET", "/oauth/token"), "refresh")
        self.assertEqual(
            operation_id(self.table, "POST", "/oauth/token"), "refreshPost"
        )
        # Only ASCII letters are upper-cased.
        self.assertIsNone(operation_id(self.table, "g\u0117t", "/sandboxes"))

    def test_base_path(self) -> None:
        self.assertEqual(
            operation_id(self.table, "GET", "/api/v1/sandboxes"), "listSandboxes"
        )
        self.assertEqual(operation_id(self.table, "GET", "/api/v1"), "root")
        self.assertEqual(operation_id(self.table, "GET", "/api/v1/"), "root")
        self.assertEqual(operation_id(self.table, "GET", ""), "root")
        # Not a whole segment: the path is used as is.
        self.assertIsNone(operation_id(self.table, "GET", "/api/v1sandboxes"))

    def test_empty_segments_and_parameters(self) -> None:
        self.assertIsNone(operation_id(self.table, "GET", "/sandboxes//logs"))
        self.assertEqual(operation_id(self.table, "GET", "/sandboxes/1/logs"), "logs")

    def test_first_operation_claiming_a_method_wins(self) -> None:
        self.assertEqual(operation_id(self.table, "GET", "/x/1/y"), "first")

    def test_method_defaults(self) -> None:
        for method in ("GET", "head", "OPTIONS", "TRACE", "put", "DELETE", "QUERY"):
            c = self.table.classify(method, "/nowhere")
            self.assertIsNone(c.operation)
            self.assertIs(c.replay_class, IDEMPOTENT, method)
        for method in ("POST", "patch", "CONNECT", "BREW", ""):
            c = self.table.classify(method, "/nowhere")
            self.assertIs(c.replay_class, NON_REPLAYABLE, method)
        # A path that exists without the method.
        self.assertIs(
            self.table.classify("PATCH", "/sandboxes").replay_class, NON_REPLAYABLE
        )
        self.assertIsNone(self.table.classify("PATCH", "/sandboxes").operation)

    def test_classify_allocates_no_result(self) -> None:
        self.assertIs(
            self.table.classify("GET", "/sandboxes/1"),
            self.table.classify("get", "/api/v1/sandboxes/2/"),
        )
        self.assertIs(
            self.table.classify("GET", "/nowhere"), self.table.classify("PUT", "/x")
        )

    def test_operation_by_id(self) -> None:
        found = self.table.operation_by_id("updateSandbox")
        self.assertIsNotNone(found)
        assert found is not None
        self.assertEqual((found.method, found.path), ("POST", "/sandboxes/{id}"))
        self.assertIsNone(self.table.operation_by_id("nope"))
        self.assertIsNone(self.table.operation_by_id(""))

    def test_malformed_routes_are_refused(self) -> None:
        for route in ("/a/{", "/a/}", "/a/}{x}", "/a/{x}}"):
            with self.assertRaises(ValueError, msg=route):
                OperationTable(base_path="", operations=(op("GET", route, None),))


class NonReplayableTest(unittest.TestCase):
    def test_patterns_are_the_models(self) -> None:
        t = table()
        self.assertEqual(
            [(m, p.pattern) for m, p in t.non_replayable_operations],
            [
                ("POST", "^/sandboxes/?$"),
                ("POST", "^/oauth/token/?$"),
                ("POST", "^/oauth/token/?$"),
                ("PUT", r"^/regex/a\.b\+c\(d\)/[^/]+/v[^/]+\.json/?$"),
            ],
        )
        self.assertEqual(len(t.non_replayable_operations), 4)
        self.assertEqual(op("GET", "/", None).regex, "^/$")
        # Literal text as written, not decoded; every syntax character escaped.
        self.assertEqual(op("GET", "/a%20b/", None).regex, "^/a%20b/?$")
        syntax = "/\\.+*?()|[]^$/{x}"
        self.assertEqual(
            Operation(
                method="GET",
                route=syntax,
                path=syntax,
                operation_id=None,
                replay_class=IDEMPOTENT,
            ).regex,
            r"^/\\\.\+\*\?\(\)\|\[\]\^\$/[^/]+/?$",
        )
        pattern = t.non_replayable_operations[3][1]
        self.assertIsNotNone(pattern.fullmatch("/regex/a.b+c(d)/7/v2.json/"))
        self.assertIsNone(pattern.fullmatch("/regex/a.b+c(d)/7/v2.json\n"))

    def test_nothing_is_compiled_until_the_list_is_read(self) -> None:
        compiled: list[object] = []
        real = re.compile

        def counting(pattern: str, flags: int = 0) -> re.Pattern[str]:
            compiled.append(pattern)
            return real(pattern, flags)

        spec = importlib.util.spec_from_file_location("_runtime_fresh", RUNTIME)
        assert spec is not None
        assert spec.loader is not None
        fresh = importlib.util.module_from_spec(spec)
        with mock.patch.object(re, "compile", counting):
            spec.loader.exec_module(fresh)
            t = fresh.OperationTable(base_path="/api", operations=OPERATIONS)
            for method, path in (("GET", "/files/a.json"), ("GET", "/a%20b/caf%C3%A9")):
                t.classify(method, path)
            t.operation_by_id("file")
            self.assertEqual(len(t.non_replayable_operations), 4)
            self.assertEqual(compiled, [])
            self.assertEqual(t.non_replayable_operations[0][0], "POST")
        self.assertEqual(len(compiled), 3)


def inputs(**changes: object) -> DecisionInput:
    """Return the contract's example inputs with ``changes`` applied."""
    base = DecisionInput(
        replay_class=IDEMPOTENT,
        has_idempotency_key=False,
        outcome=StatusOutcome(status=503),
        retries_used=0,
        elapsed_ms=0,
        previous_delay_ms=0,
        now_ms=784111777000,
        random=0.5,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


class DecideTest(unittest.TestCase):
    def test_rules(self) -> None:
        policy = RetryPolicy()
        cases: list[tuple[DecisionInput, Decision]] = [
            (
                inputs(replay_class=NON_REPLAYABLE),
                Decision(retry=False, delay_ms=0, reason=DecisionReason.NOT_REPLAYABLE),
            ),
            (
                inputs(replay_class=NON_REPLAYABLE, outcome=StatusOutcome(status=429)),
                Decision(
                    retry=True, delay_ms=250, reason=DecisionReason.REJECTED_STATUS
                ),
            ),
            (
                inputs(
                    replay_class=NON_REPLAYABLE, outcome=Failure.CONNECT, retries_used=2
                ),
                Decision(
                    retry=True, delay_ms=1000, reason=DecisionReason.CONNECT_FAILURE
                ),
            ),
            (
                inputs(
                    replay_class=KEYED,
                    has_idempotency_key=True,
                    outcome=Failure.TRANSPORT,
                ),
                Decision(
                    retry=True, delay_ms=250, reason=DecisionReason.TRANSPORT_FAILURE
                ),
            ),
            (
                inputs(replay_class=KEYED, outcome=Failure.TRANSPORT),
                Decision(retry=False, delay_ms=0, reason=DecisionReason.NOT_REPLAYABLE),
            ),
            (
                inputs(
                    outcome=StatusOutcome(status=503, retry_after="7"), retries_used=1
                ),
                Decision(
                    retry=True, delay_ms=7000, reason=DecisionReason.RETRYABLE_STATUS
                ),
            ),
            (
                inputs(outcome=StatusOutcome(status=503, retry_after="120")),
                Decision(
                    retry=False, delay_ms=0, reason=DecisionReason.RETRY_AFTER_OVER_CAP
                ),
            ),
            (
                inputs(outcome=StatusOutcome(status=500), retries_used=3),
                Decision(retry=False, delay_ms=0, reason=DecisionReason.EXHAUSTED),
            ),
            (
                inputs(outcome=StatusOutcome(status=404)),
                Decision(
                    retry=False, delay_ms=0, reason=DecisionReason.STATUS_NOT_RETRYABLE
                ),
            ),
            (
                inputs(replay_class=NO_RETRY, outcome=Failure.CONNECT),
                Decision(
                    retry=False, delay_ms=0, reason=DecisionReason.NO_RETRY_OPERATION
                ),
            ),
            (
                inputs(outcome=Failure.ABORTED, replay_class=NO_RETRY),
                Decision(retry=False, delay_ms=0, reason=DecisionReason.ABORTED),
            ),
        ]
        for given, expected in cases:
            with self.subTest(given=given):
                self.assertEqual(decide(policy, given), expected)

    def test_deadline(self) -> None:
        policy = RetryPolicy(deadline_ms=1000)
        self.assertEqual(
            decide(policy, inputs(elapsed_ms=900)).reason, DecisionReason.DEADLINE
        )
        self.assertEqual(decide(policy, inputs(elapsed_ms=750)).delay_ms, 250)

    def test_failures_ignore_headers(self) -> None:
        # A failure has no server delay (R9): only the backoff counts.
        self.assertEqual(
            decide(RetryPolicy(), inputs(outcome=Failure.CONNECT)).delay_ms, 250
        )


class BackoffTest(unittest.TestCase):
    def delays(self, jitter: Jitter, random: float = 0.5, count: int = 8) -> list[int]:
        policy = RetryPolicy(jitter=jitter, max_retries=10)
        return [
            decide(policy, inputs(retries_used=n, random=random)).delay_ms
            for n in range(count)
        ]

    def test_full(self) -> None:
        self.assertEqual(
            self.delays(Jitter.FULL), [250, 500, 1000, 2000, 4000, 8000, 15000, 15000]
        )

    def test_equal(self) -> None:
        self.assertEqual(
            self.delays(Jitter.EQUAL),
            [375, 750, 1500, 3000, 6000, 12000, 22500, 22500],
        )
        # random < 1 does not keep the delay below the base.
        self.assertEqual(self.delays(Jitter.EQUAL, 0.9999999999999999, 1), [500])

    def test_none(self) -> None:
        self.assertEqual(
            self.delays(Jitter.NONE), [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000]
        )

    def test_decorrelated(self) -> None:
        policy = RetryPolicy(jitter=Jitter.DECORRELATED, max_retries=10)
        # prev = initial after the first attempt: 500 + 0.5 * (1500 - 500)
        self.assertEqual(decide(policy, inputs()).delay_ms, 1000)
        self.assertEqual(decide(policy, inputs(previous_delay_ms=1000)).delay_ms, 1750)
        self.assertEqual(
            decide(policy, inputs(previous_delay_ms=29000, random=0.99)).delay_ms, 30000
        )

    def test_multiplier_and_cap_in_double_precision(self) -> None:
        policy = RetryPolicy(
            jitter=Jitter.NONE, multiplier=1.1, initial_backoff_ms=3, max_retries=10
        )
        expected = 3.0
        for _ in range(5):
            expected *= 1.1
        self.assertEqual(
            decide(policy, inputs(retries_used=5)).delay_ms, math.floor(expected)
        )


NOW = 784111777000  # Sun, 06 Nov 1994 08:49:37 GMT


class ServerDelayTest(unittest.TestCase):
    def test_retry_after_ms(self) -> None:
        self.assertEqual(server_delay_ms("9", " 1500.9\t", NOW), 1500)
        self.assertEqual(server_delay_ms(None, "-5", NOW), 0)
        self.assertEqual(server_delay_ms("9", "1.", NOW), 9000)
        self.assertEqual(server_delay_ms("9", ".5", NOW), 9000)
        self.assertEqual(server_delay_ms(None, "1" * 16, NOW), 2**63 - 1)
        # Leading zeros count; the digits of the fraction do not.
        self.assertEqual(server_delay_ms(None, "0" * 14 + "7.123456789", NOW), 7)
        self.assertEqual(server_delay_ms(None, "0" * 15 + "7", NOW), 2**63 - 1)
        self.assertEqual(server_delay_ms(None, "-" + "9" * 20, NOW), 0)

    def test_seconds(self) -> None:
        self.assertEqual(server_delay_ms("7", None, NOW), 7000)
        self.assertEqual(server_delay_ms("-7", None, NOW), 0)
        self.assertEqual(server_delay_ms("9" * 15, None, NOW), 999999999999999000)
        self.assertEqual(server_delay_ms("9" * 16, None, NOW), 2**63 - 1)
        self.assertIsNone(server_delay_ms("1.5", None, NOW))
        self.assertIsNone(server_delay_ms("\u0661", None, NOW))  # Arabic-Indic one

    def test_imf_fixdate(self) -> None:
        self.assertEqual(
            server_delay_ms("Sun, 06 Nov 1994 08:49:47 GMT", None, NOW), 10000
        )
        self.assertEqual(server_delay_ms("Sun, 06 Nov 1994 08:49:27 GMT", None, NOW), 0)
        # The day name is not checked against the date.
        self.assertEqual(
            server_delay_ms("Mon, 06 Nov 1994 08:49:47 GMT", None, NOW), 10000
        )
        self.assertEqual(
            server_delay_ms("Sun, 06 Nov 1994 08:49:60 GMT", None, NOW), 23000
        )
        for bad in (
            "Sun, 06 Nov 1994 08:49:47 UTC",
            "sun, 06 Nov 1994 08:49:47 GMT",
            "Sun, 6 Nov 1994 08:49:47 GMT",
            "Sun, 29 Feb 1995 08:49:47 GMT",
            "Sun, 31 Apr 1995 08:49:47 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:60:00 GMT",
            "Sun, 06 Nov 1994 08:49:61 GMT",
            "Sun, 06 Nov 0000 08:49:47 GMT",
            "Sunday, 06 Nov 1994 08:49:47 GMT",
        ):
            self.assertIsNone(server_delay_ms(bad, None, NOW), bad)
        self.assertEqual(
            server_delay_ms("Thu, 29 Feb 1996 00:00:00 GMT", None, NOW),
            825552000000 - NOW,
        )

    def test_rfc850(self) -> None:
        self.assertEqual(
            server_delay_ms("Sunday, 06-Nov-94 08:49:47 GMT", None, NOW), 10000
        )
        self.assertIsNone(server_delay_ms("Sun, 06-Nov-94 08:49:47 GMT", None, NOW))
        # With now in 2030, `80` is 2080 (not more than 50 years ahead), `81` is 1981.
        now_2030 = 1893456000000  # 2030-01-01
        self.assertEqual(
            server_delay_ms("Monday, 01-Jan-80 00:00:00 GMT", None, now_2030),
            3471292800000 - now_2030,
        )
        self.assertEqual(
            server_delay_ms("Thursday, 01-Jan-81 00:00:00 GMT", None, now_2030), 0
        )
        # Before 1970 the year of now comes from floor division: 1 ms before 1900 is 1899,
        # so `50` is 1850 (past); from 1900 on it is 1950.
        self.assertEqual(
            server_delay_ms("Sunday, 01-Jan-50 00:00:00 GMT", None, -2208988800001), 0
        )
        self.assertEqual(
            server_delay_ms("Sunday, 01-Jan-50 00:00:00 GMT", None, -2208988800000),
            -631152000000 + 2208988800000,
        )

    def test_asctime(self) -> None:
        self.assertEqual(server_delay_ms("Sun Nov  6 08:49:47 1994", None, NOW), 10000)
        self.assertEqual(server_delay_ms("Sun Nov 06 08:49:47 1994", None, NOW), 10000)
        self.assertIsNone(server_delay_ms("Sun Nov 6 08:49:47 1994", None, NOW))
        self.assertIsNone(server_delay_ms("Sun Nov  6 08:49:47 1994 GMT", None, NOW))

    def test_garbage_is_absent(self) -> None:
        for bad in ("", " ", "soon", "7s", "+7", "0x10"):
            self.assertIsNone(server_delay_ms(bad, None, NOW), bad)
            self.assertIsNone(server_delay_ms(None, bad, NOW), bad)


class IdiomTest(unittest.TestCase):
    """Issue 9 item 6: typed values, frozen slotted keyword-only dataclasses."""

    def test_a_plain_string_is_not_a_replay_class(self) -> None:
        with self.assertRaises(TypeError):
            inputs(replay_class="no_retry")
        with self.assertRaises(TypeError):
            inputs(outcome="aborted")
        with self.assertRaises(TypeError):
            RetryPolicy(jitter="none")  # type: ignore[arg-type]
        with self.assertRaises(TypeError):
            op("GET", "/", None, "idempotent")  # type: ignore[arg-type]

    def test_decide_compares_by_value(self) -> None:
        # Even a string forced past the checks decides as its class would.
        given = inputs(outcome=Failure.CONNECT)
        object.__setattr__(given, "replay_class", "no_retry")
        self.assertEqual(
            decide(RetryPolicy(), given).reason, DecisionReason.NO_RETRY_OPERATION
        )
        object.__setattr__(given, "outcome", "aborted")
        self.assertEqual(decide(RetryPolicy(), given).reason, DecisionReason.ABORTED)

    def test_dataclasses_are_keyword_only_slotted_and_frozen(self) -> None:
        for cls in (
            Operation,
            rt.Classification,
            RetryPolicy,
            StatusOutcome,
            DecisionInput,
            Decision,
        ):
            with self.subTest(cls=cls.__name__):
                self.assertTrue(dataclasses.is_dataclass(cls))
                self.assertTrue(hasattr(cls, "__slots__"))
                params = getattr(cls, "__dataclass_params__")  # noqa: B009
                self.assertTrue(params.frozen)
                self.assertTrue(
                    all(f.kw_only for f in dataclasses.fields(cls)),
                )
        with self.assertRaises(TypeError):
            StatusOutcome(503)  # type: ignore[misc]
        policy = RetryPolicy()
        with self.assertRaises(dataclasses.FrozenInstanceError):
            policy.max_retries = 5  # type: ignore[misc]
        self.assertEqual(dataclasses.replace(policy, max_retries=5).max_retries, 5)

    def test_tables_cannot_be_changed(self) -> None:
        t = table()
        self.assertIsInstance(t.operations, tuple)
        with self.assertRaises(AttributeError):
            t.operations = ()  # type: ignore[misc]
        with self.assertRaises(TypeError):
            t.non_replayable_operations[0] = ("GET", re.compile("x"))  # type: ignore[index]

    def test_typing_is_pep_604_and_585(self) -> None:
        source = RUNTIME.read_text(encoding="utf-8")
        for old in (
            "Optional[",
            "Union[",
            "List[",
            "Tuple[",
            "Dict[",
            "from typing import List",
        ):
            self.assertNotIn(old, source)
        # No identity comparison with a member: a plain string would slip through.
        self.assertIsNone(
            re.search(r"\bis (not )?(ReplayClass|Failure|Jitter)\.", source)
        )


ANCHORS = {"R": 12, "S": 8, "B": 6}


class AnchorTest(unittest.TestCase):
    def test_every_contract_anchor_in_order(self) -> None:
        source = RUNTIME.read_text(encoding="utf-8")
        firsts: dict[str, list[int]] = {family: [] for family in ANCHORS}
        seen: set[str] = set()
        for m in re.finditer(r"\[contract ([RSB])([0-9]+)\]", source):
            anchor = m.group(1) + m.group(2)
            if anchor not in seen:
                seen.add(anchor)
                firsts[m.group(1)].append(int(m.group(2)))
        for family, count in ANCHORS.items():
            self.assertEqual(firsts[family], list(range(1, count + 1)), family)


if __name__ == "__main__":
    unittest.main()
