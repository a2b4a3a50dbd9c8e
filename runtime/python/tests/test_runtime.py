"""Unit tests of the runtime, run with ``python3 -m unittest`` from runtime/python."""

import asyncio
import dataclasses
import enum
import importlib.util
import math
import re
import sys
import threading
import tracemalloc
import unittest
from collections.abc import Callable
from pathlib import Path
from unittest import mock

import _runtime as rt
from _runtime import (
    BudgetKind,
    Decision,
    DecisionInput,
    DecisionReason,
    Failure,
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
    budget_new,
    budget_record_success,
    budget_try_acquire,
    decide,
    has_idempotency_key,
    in_scope,
    retry_event,
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
    idempotency_header: str | None = None,
) -> Operation:
    """Build an operation whose route is its path without a ``?``/``#`` suffix."""
    route = re.split(r"[?#]", path, maxsplit=1)[0]
    return Operation(
        method=method,
        route=route,
        path=path,
        operation_id=operation_id,
        replay_class=replay_class,
        idempotency_header=idempotency_header,
    )


OPERATIONS = (
    op("GET", "/", "root"),
    op("GET", "/sandboxes", "listSandboxes"),
    op("POST", "/sandboxes", "createSandbox", NON_REPLAYABLE),
    op("GET", "/sandboxes/templates", "listTemplates"),
    op("GET", "/sandboxes/{id}", "getSandbox"),
    op("POST", "/sandboxes/{id}", "updateSandbox", KEYED, "Idempotency-Key"),
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

    def test_greedy_walk_agrees_with_the_search(self) -> None:
        # classify walks greedily and falls back on the depth-first search
        # (_find over _segments, the reference) only where it may backtrack.
        pieces = [
            "", "/", "//", "?q=/sandboxes", "#f", "api", "v1", "sandboxes",
            "templates", "files", "x.json", "x.tar.gz", ".json", "a%2Fb", "%61",
            "caf%C3%A9", "a b", "logs", "y", "x", "1", "https://h", "v", "vXv",
        ]  # fmt: skip
        targets = [a + b for a in pieces for b in pieces]
        targets += ["/" + a + "/" + b + "/" + c for a in pieces[5:12] for b in pieces
                    for c in pieces[5:12]]  # fmt: skip
        for base in (None, "", "/api", "/api/v1", "https://gw/api/v1/", "/x//y"):
            c = self.table.classifier(base)
            for target in targets:
                node = rt._find(c._root, c._segments(target), 0)
                want = None if node is None else node.operations.get("GET")
                got = c.classify("GET", target).operation
                self.assertIs(got, None if want is None else want.operation, target)

    def test_classify_memory_does_not_grow_with_the_table(self) -> None:
        # CPython allocates the path's segments and their list; what classify
        # allocates depends on the request, never on the number of operations.
        big = OperationTable(
            base_path="/api/v1",
            operations=OPERATIONS
            + tuple(
                op("GET", f"/r{i}/{{id}}/s{i % 7}/{{name}}.json", f"r{i}")
                for i in range(2000)
            ),
        )
        requests = [
            ("GET", "/sandboxes/1/logs"),
            ("GET", "/api/v1/sandboxes/templates"),
            ("get", "/files/x.tar.gz?x=1"),
            ("POST", "/sandboxes/templates/x"),
            ("GET", "/nowhere/at/all"),
        ]

        def peaks(t: OperationTable) -> list[int]:
            classify = t.classify
            for method, target in requests:
                classify(method, target)
            out = []
            tracemalloc.start()
            try:
                for method, target in requests:
                    before = tracemalloc.get_traced_memory()[0]
                    tracemalloc.reset_peak()
                    classify(method, target)
                    out.append(tracemalloc.get_traced_memory()[1] - before)
            finally:
                tracemalloc.stop()
            return out

        small_peaks = peaks(self.table)
        self.assertEqual(small_peaks, peaks(big))
        self.assertLess(max(small_peaks), 1024, small_peaks)

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


class SafeListTest(unittest.TestCase):
    def test_entries_are_non_replayable_and_keyed_in_table_order(self) -> None:
        t = table()
        self.assertEqual(
            [(m, h) for m, _, h in t.non_replayable_operations],
            [
                ("POST", None),
                ("POST", "Idempotency-Key"),
                ("POST", None),
                ("POST", None),
                ("PUT", None),
            ],
        )
        self.assertEqual(len(t.non_replayable_operations), 5)
        first = t.non_replayable_operations[0]
        self.assertEqual(first.method, "POST")
        self.assertIsNone(first.idempotency_header)

    def test_patterns_are_the_models(self) -> None:
        # L1, as src/model/path.rs safe_regex writes them.
        self.assertEqual(op("GET", "/", None).safe_regex, "^//?$")
        self.assertEqual(
            op("POST", "/ab", None).safe_regex,
            "^/(?:a|%61)(?:b|%62)/?$",
        )
        self.assertEqual(
            op("POST", "/a%2Fb/{x}.j", None).safe_regex,
            "^/(?:a|%61)%2[Ff](?:b|%62)/[^/]+(?:\\.|%2[Ee])(?:j|%6[Aa])/?$",
        )
        self.assertEqual(
            op("POST", "/\u00e9", None).safe_regex, "^/(?:\u00e9|%[Cc]3%[Aa]9)/?$"
        )
        # v1's expression stays on Operation.regex: literal text as written.
        self.assertEqual(op("GET", "/", None).regex, "^/$")
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

    def test_the_list_agrees_with_classify(self) -> None:
        t = table()
        safe = t.non_replayable_operations
        for path in ("/sandboxes", "/s%61ndboxes/", "/%73andboxes"):
            entry = safe.match("POST", path)
            self.assertIsNotNone(entry, path)
            self.assertEqual(
                t.classify("POST", path).replay_class, NON_REPLAYABLE, path
            )
        keyed = safe.match("POST", "/sandboxes/7")
        assert keyed is not None
        self.assertEqual(keyed.idempotency_header, "Idempotency-Key")
        self.assertIsNone(safe.match("post", "/sandboxes"))
        self.assertIsNone(safe.match("POST", "/sandboxes\n"))
        regex = safe[-1].pattern
        self.assertIsNotNone(regex.fullmatch("/regex/a.b+c(d)/7/v2.json/"))
        self.assertIsNotNone(regex.fullmatch("/regex/a%2eb%2Bc(d)/7/v2.json"))
        self.assertIsNone(regex.fullmatch("/regex/aXb+c(d)/7/v2.json"))

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
        # OPERATIONS belong to this module, whose cache other tests filled.
        rt._regex.cache_clear()
        with mock.patch.object(re, "compile", counting):
            spec.loader.exec_module(fresh)
            t = fresh.OperationTable(base_path="/api", operations=OPERATIONS)
            for method, path in (("GET", "/files/a.json"), ("GET", "/a%20b/caf%C3%A9")):
                t.classify(method, path)
            t.operation_by_id("file")
            t.classifier("https://gw.example/proxy/").classify("GET", "http://h/x?y")
            fresh.RetryPolicy(server_directive_headers=("a",))
            self.assertEqual(len(t.non_replayable_operations), 5)
            self.assertEqual(compiled, [])
            self.assertEqual(t.non_replayable_operations[0][0], "POST")
        self.assertEqual(len(compiled), 4)


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
                    retry=True,
                    delay_ms=250,
                    reason=DecisionReason.REJECTED_STATUS,
                    throttled=True,
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
                    retry=False,
                    delay_ms=0,
                    reason=DecisionReason.RETRY_AFTER_OVER_CAP,
                    server_delay_ms=120000,
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
        # A failure has no server delay (R13): only the backoff counts.
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
        for build, key in (
            (lambda: inputs(replay_class="no_retry"), "input.class"),
            (lambda: inputs(outcome="aborted"), "input.outcome"),
            (lambda: RetryPolicy(jitter="none"), "policy.jitter"),  # type: ignore[arg-type]
            (
                lambda: RetryPolicy(retry_after_over_cap="clamp"),  # type: ignore[arg-type]
                "policy.retry_after_over_cap",
            ),
            (
                lambda: RetryPolicy(
                    unknown_operation_class="no_retry",  # type: ignore[arg-type]
                ),
                "policy.unknown_operation_class",
            ),
            (
                lambda: table().classifier(None, "no_retry"),  # type: ignore[arg-type]
                "policy.unknown_operation_class",
            ),
        ):
            with self.assertRaises(InvalidInputError) as caught:
                build()
            self.assertEqual(caught.exception.key, key)
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
            rt.RetryEvent,
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


def key_of(build: Callable[..., object], *args: object, **kwargs: object) -> str:
    """Return the message key of the InvalidInputError ``build(...)`` raises."""
    try:
        build(*args, **kwargs)
    except InvalidInputError as e:
        return e.key
    msg = "no InvalidInputError"
    raise AssertionError(msg)


class ValidationTest(unittest.TestCase):
    """V1-V8: the first failing check, in the contract's order, gives the key."""

    def test_policy_keys(self) -> None:
        nan, inf = math.nan, math.inf
        bad: list[tuple[str, object]] = [
            ("max_retries", -1),
            ("max_retries", 101),
            ("max_retries", 1.0),
            ("max_retries", True),
            ("initial_backoff_ms", 0),
            ("initial_backoff_ms", 86400001),
            ("max_backoff_ms", 0),
            ("multiplier", nan),
            ("multiplier", inf),
            ("multiplier", 0.9999999999999999),
            ("multiplier", 10.5),
            ("jitter", "full"),
            ("retryable_statuses", (99,)),
            ("rejected_statuses", (600,)),
            ("rejected_statuses", "429"),
            ("retry_after_cap_ms", -1),
            ("deadline_ms", 0),
            ("retry_only_with_server_delay", (700,)),
            ("key_in_flight_statuses", (99,)),
            ("key_reused_statuses", (600,)),
            ("server_directive_headers", ("",)),
            ("server_directive_headers", ("x should retry",)),
            ("server_directive_headers", ("caf\u00e9",)),
            ("server_directive_headers", "x-should-retry"),
            ("retry_after_over_cap", "refuse"),
            ("unknown_operation_class", "method_default"),
            ("budget_capacity", 1000001),
            ("budget_retry_cost", 0),
            ("budget_timeout_cost", 0),
            ("budget_success_refund", -1),
        ]
        for field, value in bad:
            with self.subTest(field=field, value=value):
                self.assertEqual(
                    key_of(RetryPolicy, **{field: value}),
                    "policy." + field,
                )

    def test_policy_order_and_range(self) -> None:
        self.assertEqual(
            key_of(
                lambda: RetryPolicy(
                    max_retries=-1,
                    jitter="x",  # type: ignore[arg-type]
                    budget_capacity=-1,
                )
            ),
            "policy.max_retries",
        )
        self.assertEqual(
            key_of(lambda: RetryPolicy(initial_backoff_ms=2000, max_backoff_ms=1000)),
            "policy.max_backoff_ms",
        )
        # Lists are accepted and stored as tuples, so the policy stays immutable.
        policy = RetryPolicy(
            retryable_statuses=[503],  # type: ignore[arg-type]
            server_directive_headers=["X-Should-Retry"],  # type: ignore[arg-type]
        )
        self.assertEqual(policy.retryable_statuses, (503,))
        self.assertEqual(policy.server_directive_headers, ("X-Should-Retry",))
        self.assertEqual(RetryPolicy(multiplier=3).multiplier, 3)

    def test_inputs_in_order(self) -> None:
        cases: list[tuple[dict[str, object], str]] = [
            ({"replay_class": "x", "random": math.nan}, "input.class"),
            ({"outcome": "timeout"}, "input.outcome"),
            ({"outcome": StatusOutcome(status=99)}, "input.status"),
            ({"outcome": StatusOutcome(status=42), "retries_used": -1}, "input.status"),
            ({"retries_used": 2**53}, "input.retries_used"),
            ({"elapsed_ms": -1}, "input.elapsed_ms"),
            ({"previous_delay_ms": 2**53}, "input.previous_delay_ms"),
            ({"random": math.nan}, "input.random"),
            ({"random": 1.0}, "input.random"),
            ({"random": -1e-300}, "input.random"),
            ({"random": -math.inf}, "input.random"),
            ({"random": math.nan, "outcome": Failure.ABORTED}, "input.random"),
        ]
        for changes, key in cases:
            with self.subTest(changes=changes):
                self.assertEqual(key_of(inputs, **changes), key)
        inputs(retries_used=2**53 - 1, now_ms=-(2**63))

    def test_budget_tokens(self) -> None:
        policy = RetryPolicy()
        for tokens in (-1, 501):
            self.assertEqual(
                key_of(decide, policy, inputs(budget_tokens=tokens)),
                "input.budget_tokens",
            )
        self.assertEqual(
            key_of(
                lambda: decide(RetryPolicy(budget_capacity=0), inputs(budget_tokens=1))
            ),
            "input.budget_tokens",
        )

    def test_name_parsers_are_exact(self) -> None:
        parsers: list[tuple[Callable[[str], enum.Enum], str, str]] = [
            (ReplayClass.parse, "keyed", "input.class"),
            (Failure.parse, "connect", "input.outcome"),
            (Jitter.parse, "equal", "policy.jitter"),
            (OverCapMode.parse, "clamp", "policy.retry_after_over_cap"),
            (
                UnknownOperationClass.parse,
                "no_retry",
                "policy.unknown_operation_class",
            ),
            (BudgetKind.parse, "timeout", "input.budget_kind"),
        ]
        for parse, good, key in parsers:
            self.assertEqual(parse(good).value, good)
            for word in (good.upper(), " " + good, good + " ", "", "x"):
                with self.subTest(word=word):
                    self.assertEqual(key_of(parse, word), key)

    def test_strings_must_be_scalar_values(self) -> None:
        t = table()
        self.assertEqual(key_of(lambda: t.classify("GET", "/\ud800")), "input.path")
        self.assertEqual(
            key_of(lambda: t.classify("GET", "/sandboxes?x=\udc00")), "input.path"
        )
        self.assertEqual(
            key_of(lambda: t.classify("\udc80", "/\ud800")), "input.method"
        )
        self.assertEqual(key_of(lambda: t.classifier("/v\ud800")), "input.base")
        self.assertEqual(
            key_of(lambda: t.classifier("\ud800", "x")),  # type: ignore[arg-type]
            "input.base",
        )


class ClassifierTest(unittest.TestCase):
    """C1-C3 and the strict decoder of step 7."""

    def setUp(self) -> None:
        self.table = table()

    def id_of(self, c: rt.Classification) -> str | None:
        return None if c.operation is None else c.operation.operation_id

    def test_configured_base(self) -> None:
        for base in (
            "/proxy/v1",
            "/proxy/v1/",
            "https://gw.example/proxy/v1//",
            "HTTP://gw.example:8443/proxy/v1?x=1",
            "proxy/v1",
        ):
            with self.subTest(base=base):
                clf = self.table.classifier(base)
                self.assertEqual(clf.base_path, "/proxy/v1")
                c = clf.classify("GET", "/proxy/v1/sandboxes/sb1/logs")
                self.assertEqual(self.id_of(c), "logs")
                self.assertEqual(c.replay_class, NO_RETRY)
        self.assertEqual(self.table.classifier("https://gw.example").base_path, "")
        self.assertEqual(self.table.classifier("/").base_path, "")
        # The base is compared as written, never decoded.
        clf = self.table.classifier("/pro%78y")
        self.assertIsNone(clf.classify("GET", "/proxy/sandboxes/templates").operation)
        # The spec's base is unknown to a classifier with another one.
        self.assertIsNone(
            self.table.classify("GET", "/proxy/v1/sandboxes/sb1/logs").operation
        )

    def test_full_urls(self) -> None:
        for target in (
            "https://h/api/v1/sandboxes/templates",
            "h+t.t-p://user@h:1/api/v1/sandboxes/templates?x#y",
            "api/v1/sandboxes/templates",
            "/sandboxes/templates",
        ):
            with self.subTest(target=target):
                c = self.table.classify("GET", target)
                self.assertEqual(self.id_of(c), "listTemplates")
        # No scheme: a colon before the first slash is part of the path.
        self.assertIsNone(self.table.classify("GET", "1http://h/sandboxes").operation)
        self.assertEqual(self.id_of(self.table.classify("GET", "https://h")), "root")
        self.assertEqual(
            self.id_of(self.table.classify("GET", "https://h?q=/sandboxes")), "root"
        )

    def test_unknown_operation_class(self) -> None:
        for unknown, expected in (
            (UnknownOperationClass.METHOD_DEFAULT, IDEMPOTENT),
            (UnknownOperationClass.NON_REPLAYABLE, NON_REPLAYABLE),
            (UnknownOperationClass.NO_RETRY, NO_RETRY),
        ):
            clf = self.table.classifier(None, unknown)
            self.assertEqual(clf.unknown_operation_class, unknown)
            self.assertEqual(clf.classify("GET", "/nowhere").replay_class, expected)
            # A matched operation keeps its class.
            self.assertEqual(
                clf.classify("POST", "/sandboxes").replay_class, NON_REPLAYABLE
            )
            self.assertIs(clf.classify("GET", "/nowhere"), clf.classify("DELETE", "/x"))

    def test_strict_decoding(self) -> None:
        t = OperationTable(
            base_path="",
            operations=(
                op("GET", "/{p}", "param"),
                op("GET", "/\u00e9", "literal"),
                op("GET", "/%C0%AE", "overlong"),
            ),
        )
        self.assertEqual(self.id_of(t.classify("GET", "/%C3%A9")), "literal")
        self.assertEqual(self.id_of(t.classify("GET", "/%c3%a9")), "literal")
        # Not UTF-8: the segment stays as written, never U+FFFD.
        for bad in ("%C0%AE", "%ED%A0%80", "%F4%90%80%80", "%C3", "%EF%BF%BD%C3"):
            with self.subTest(bad=bad):
                self.assertEqual(rt._percent_decode(bad), bad)
        self.assertEqual(self.id_of(t.classify("GET", "/%C0%AE")), "overlong")
        self.assertEqual(rt._percent_decode("%EF%BF%BE"), "\ufffe")


class DecideV2Test(unittest.TestCase):
    """The v2 examples of docs/contract.md section 4."""

    def test_examples(self) -> None:
        policy = RetryPolicy()
        d = DecisionReason
        cases: list[tuple[DecisionInput, tuple[bool, int, DecisionReason, int | None]]]
        cases = [
            (
                inputs(outcome=StatusOutcome(status=503, directive="false")),
                (False, 0, d.SERVER_SAID_NO, None),
            ),
            (
                inputs(outcome=StatusOutcome(status=404, directive=" TRUE\t")),
                (True, 250, d.SERVER_SAID_YES, None),
            ),
            (
                inputs(
                    replay_class=NON_REPLAYABLE,
                    outcome=StatusOutcome(status=404, directive="true"),
                ),
                (False, 0, d.STATUS_NOT_RETRYABLE, None),
            ),
            (
                inputs(
                    replay_class=NON_REPLAYABLE,
                    outcome=StatusOutcome(status=429, directive="false"),
                ),
                (False, 0, d.SERVER_SAID_NO, None),
            ),
            (
                inputs(
                    replay_class=KEYED,
                    has_idempotency_key=True,
                    outcome=StatusOutcome(status=409),
                ),
                (True, 250, d.KEY_IN_FLIGHT, None),
            ),
            (
                inputs(
                    replay_class=KEYED,
                    has_idempotency_key=True,
                    outcome=StatusOutcome(status=422, directive="true"),
                ),
                (False, 0, d.KEY_REUSED, None),
            ),
            (
                inputs(replay_class=KEYED, outcome=StatusOutcome(status=409)),
                (False, 0, d.STATUS_NOT_RETRYABLE, None),
            ),
            (
                inputs(outcome=Failure.CONNECT, budget_tokens=500),
                (True, 250, d.CONNECT_FAILURE, 495),
            ),
            (
                inputs(outcome=Failure.TRANSPORT, budget_tokens=10, timed_out=True),
                (True, 250, d.TRANSPORT_FAILURE, 0),
            ),
            (inputs(budget_tokens=4), (False, 0, d.BUDGET_EXHAUSTED, 4)),
            (
                inputs(outcome=StatusOutcome(status=404), budget_tokens=4),
                (False, 0, d.STATUS_NOT_RETRYABLE, 4),
            ),
        ]
        for given, (retry, delay, reason, tokens) in cases:
            with self.subTest(given=given):
                self.assertEqual(
                    decide(policy, given),
                    Decision(
                        retry=retry, delay_ms=delay, reason=reason, budget_tokens=tokens
                    ),
                )

    def test_directives_off_and_ignored(self) -> None:
        off = RetryPolicy(server_directive_headers=())
        given = inputs(outcome=StatusOutcome(status=503, directive="false"))
        self.assertEqual(decide(off, given).reason, DecisionReason.RETRYABLE_STATUS)
        for ignored in ("no", "", "truee", "tru\u0435", "1"):
            given = inputs(outcome=StatusOutcome(status=503, directive=ignored))
            self.assertEqual(
                decide(RetryPolicy(), given).reason,
                DecisionReason.RETRYABLE_STATUS,
                ignored,
            )

    def test_server_delay_only_and_over_cap(self) -> None:
        only = RetryPolicy(retry_only_with_server_delay=(429,))
        self.assertEqual(
            decide(only, inputs(outcome=StatusOutcome(status=429))).reason,
            DecisionReason.NO_SERVER_DELAY,
        )
        self.assertEqual(
            decide(
                only, inputs(outcome=StatusOutcome(status=429, retry_after="1"))
            ).delay_ms,
            1000,
        )
        clamp = RetryPolicy(retry_after_over_cap=OverCapMode.CLAMP)
        for header in ("120", "9" * 16):
            d = decide(
                clamp, inputs(outcome=StatusOutcome(status=503, retry_after=header))
            )
            self.assertEqual((d.retry, d.delay_ms), (True, 60000), header)


class CertificateTest(unittest.TestCase):
    def test_certificate_stops_before_every_rule(self) -> None:
        # R1: no class, retry count or budget makes a refused certificate worth retrying, and
        # the budget is left as it was.
        policy = RetryPolicy(budget_capacity=10)
        for replay_class in ReplayClass:
            d = decide(
                policy,
                inputs(
                    replay_class=replay_class,
                    outcome=Failure.CERTIFICATE,
                    budget_tokens=10,
                ),
            )
            self.assertEqual(
                d,
                Decision(
                    retry=False,
                    delay_ms=0,
                    reason=DecisionReason.CERTIFICATE_FAILURE,
                    budget_tokens=10,
                ),
            )
        self.assertIs(Failure.parse("certificate"), Failure.CERTIFICATE)


class InScopeTest(unittest.TestCase):
    def test_origins(self) -> None:
        cases = [
            ("/v1", "https://other.example/v1/x", True),
            ("https://api.example/v1", "/v1/sandboxes", True),
            ("https://api.example/v1", "https://API.example:443/v1", True),
            ("https://api.example/v1", "https://u:p@api.example:0443/", True),
            ("https://api.example/v1", "http://api.example/v1", False),
            ("https://api.example/v1", "https://api.example:8443/v1", False),
            ("https://api.e2b.app", "https://49983-sbx.e2b.app/envd/files", False),
            ("http://[::1]:80/", "http://[::1]/x", True),
            ("foo://h/", "foo://h:1/", False),
            ("https://api.example.", "https://api.example/", False),
            # Never fails: a lone surrogate is compared as it is.
            ("https://a\ud800/", "https://a\ud800/x", True),
            ("1http://a/", "http://b/", True),
        ]
        for base, target, expected in cases:
            with self.subTest(base=base, target=target):
                self.assertIs(in_scope(base, target), expected)


class BudgetTest(unittest.TestCase):
    """K1-K4."""

    def test_pure_functions(self) -> None:
        policy = RetryPolicy()
        tokens = budget_new(policy)
        self.assertEqual(tokens, 500)
        for _ in range(100):
            allowed, tokens = budget_try_acquire(policy, tokens, BudgetKind.RETRY)
            self.assertTrue(allowed)
        self.assertEqual(
            budget_try_acquire(policy, tokens, BudgetKind.RETRY), (False, 0)
        )
        self.assertEqual(budget_record_success(policy, 0, 5), 5)
        self.assertEqual(budget_record_success(policy, 0, 0), 1)
        self.assertEqual(budget_record_success(policy, 499, 10), 500)
        self.assertEqual(budget_try_acquire(policy, 10, BudgetKind.TIMEOUT), (True, 0))
        off = RetryPolicy(budget_capacity=0)
        self.assertEqual(budget_new(off), 0)
        self.assertEqual(budget_try_acquire(off, 0, BudgetKind.TIMEOUT), (True, 0))
        self.assertEqual(budget_record_success(off, 0, 5), 0)

    def test_invalid(self) -> None:
        policy = RetryPolicy()
        self.assertEqual(
            key_of(lambda: budget_try_acquire(policy, 0, "retry")),  # type: ignore[arg-type]
            "input.budget_kind",
        )
        for released in (-1, 1000001):
            self.assertEqual(
                key_of(budget_record_success, policy, 0, released),
                "input.budget_release",
            )
        self.assertEqual(
            key_of(lambda: budget_record_success(policy, 501, 0)),
            "input.budget_tokens",
        )
        self.assertEqual(
            key_of(lambda: RetryBudget(policy, tokens=-1)), "input.budget_tokens"
        )

    def test_the_cell_decides_and_stores(self) -> None:
        budget = RetryBudget(RetryPolicy(), tokens=10)
        self.assertEqual(budget.decide(inputs()).budget_tokens, 5)
        self.assertEqual(budget.tokens, 5)
        self.assertTrue(budget.decide(inputs(timed_out=False)).retry)
        self.assertEqual(budget.tokens, 0)
        self.assertEqual(
            budget.decide(inputs()).reason, DecisionReason.BUDGET_EXHAUSTED
        )
        budget.record_success(5)
        self.assertEqual(budget.tokens, 5)
        budget.record_success()
        self.assertEqual(budget.tokens, 6)

    def test_the_cell_is_thread_safe(self) -> None:
        policy = RetryPolicy(budget_capacity=1000000, budget_retry_cost=1)
        budget = RetryBudget(policy)
        threads, rounds = 8, 2000
        barrier = threading.Barrier(threads)

        def work() -> None:
            barrier.wait()
            for _ in range(rounds):
                budget.try_acquire(BudgetKind.RETRY)
                budget.decide(inputs(outcome=Failure.CONNECT))
                budget.record_success(1)

        interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)
        try:
            workers = [threading.Thread(target=work) for _ in range(threads)]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
        finally:
            sys.setswitchinterval(interval)
        # Each round takes 2 tokens and gives 1 back: no update was lost.
        self.assertEqual(budget.tokens, 1000000 - threads * rounds)

    def test_the_cell_serves_asyncio_tasks(self) -> None:
        budget = RetryBudget(RetryPolicy(budget_capacity=100, budget_retry_cost=1))

        async def task() -> None:
            for _ in range(10):
                budget.try_acquire(BudgetKind.RETRY)
                await asyncio.sleep(0)

        async def main() -> None:
            await asyncio.gather(*(task() for _ in range(10)))

        asyncio.run(main())
        self.assertEqual(budget.tokens, 0)
        self.assertFalse(budget.try_acquire(BudgetKind.RETRY))


class KeyAndEventTest(unittest.TestCase):
    """H1 and E1."""

    def test_has_idempotency_key(self) -> None:
        keyed = table().operation_by_id("updateSandbox")
        plain = table().operation_by_id("getSandbox")
        self.assertTrue(has_idempotency_key(keyed, [("idempotency-KEY", "k")]))
        self.assertTrue(has_idempotency_key(keyed, {"Idempotency-Key": " k "}))
        self.assertTrue(
            has_idempotency_key(
                keyed, [("Idempotency-Key", " \t"), ("Idempotency-Key", "k")]
            )
        )
        self.assertFalse(has_idempotency_key(keyed, [("Idempotency-Key", " \t")]))
        self.assertFalse(has_idempotency_key(keyed, [("Idempotency-K\u0435y", "k")]))
        self.assertFalse(has_idempotency_key(plain, [("Idempotency-Key", "k")]))
        self.assertFalse(has_idempotency_key(None, [("Idempotency-Key", "k")]))

    def test_retry_event(self) -> None:
        t = table()
        decision = Decision(
            retry=True, delay_ms=250, reason=DecisionReason.TRANSPORT_FAILURE
        )
        c = t.classify("post", "https://h/api/v1/sandboxes/sb-1?x=1")
        event = retry_event(
            method="post", operation=c.operation, retries_used=0, decision=decision
        )
        self.assertEqual(
            event,
            rt.RetryEvent(
                attempt=1,
                reason=DecisionReason.TRANSPORT_FAILURE,
                delay_ms=250,
                method="POST",
                path_template="/sandboxes/{id}",
                operation_id="updateSandbox",
            ),
        )
        unknown = retry_event(
            method="purge", operation=None, retries_used=2, decision=decision
        )
        self.assertEqual(
            (unknown.attempt, unknown.method, unknown.path_template), (3, "PURGE", None)
        )
        with self.assertRaises(ValueError):
            retry_event(
                method="GET",
                operation=None,
                retries_used=0,
                decision=decide(RetryPolicy(), inputs(outcome=Failure.ABORTED)),
            )


def _family(letter: str, count: int, extra: dict[int, tuple[str, ...]]) -> list[str]:
    return [
        anchor
        for i in range(1, count + 1)
        for anchor in (f"{letter}{i}", *(f"{letter}{i}{x}" for x in extra.get(i, ())))
    ]


# docs/contract.md section 3's anchors in contract order, per family (R5a after R5...).
ANCHORS = {
    "V": _family("V", 8, {}),
    "R": _family("R", 18, {5: ("a",), 6: ("a", "b"), 9: ("a",)}),
    "S": _family("S", 9, {}),
    "B": _family("B", 6, {}),
    "K": _family("K", 4, {}),
}


class AnchorTest(unittest.TestCase):
    def test_every_contract_anchor_in_order(self) -> None:
        source = RUNTIME.read_text(encoding="utf-8")
        firsts: dict[str, list[str]] = {family: [] for family in ANCHORS}
        for m in re.finditer(r"\[contract ([VRSBK])([0-9]+[a-z]?)\]", source):
            anchor = m.group(1) + m.group(2)
            if anchor not in firsts[m.group(1)]:
                firsts[m.group(1)].append(anchor)
        for family, anchors in ANCHORS.items():
            self.assertEqual(firsts[family], anchors, family)


if __name__ == "__main__":
    unittest.main()
