"""The fault-matrix runner of Python's httpx adapter (conformance/faults/README.md).

Runs every scenario of the file through a new ``httpx.AsyncClient`` with
``AsyncRetryTransport`` (variant ``async``, the run ``python``) or a new
``httpx.Client`` with ``RetryTransport`` (variant ``sync``, ``python-sync``)
and prints one JSON line per scenario. A blocking httpx call cannot be
cancelled by its caller, so the sync variant reports the scenarios that abort
a request as unsupported. With ``RETRYGEN_FAULT_BENCH=N`` it measures the
adapter's overhead instead.
"""

import asyncio
import enum
import json
import os
import statistics
import sys
import time
import tracemalloc
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

import retry_policy
from retry_policy import RetryEvent
from retry_policy.httpx_transport import (
    AsyncRetryTransport,
    FinishEvent,
    RetryTransport,
)

Json = dict[str, Any]


@dataclass
class Recorder:
    """The callbacks' events of one scenario."""

    events: list[RetryEvent] = field(default_factory=list)
    finishes: list[FinishEvent] = field(default_factory=list)

    def clear(self) -> None:
        """Forget the events of the warm-up request."""
        self.events.clear()
        self.finishes.clear()


@dataclass
class Result:
    """What the call returned and what its body read gave."""

    status: int | None = None
    error: BaseException | None = None
    body: str | None = None
    body_error: bool = False


def name(value: str) -> str:
    """Return an enum member's value, or the string itself."""
    return str(value.value) if isinstance(value, enum.Enum) else value


def operation_fields(event: RetryEvent | FinishEvent) -> Json:
    """Return the operation fields of a retry or finish event."""
    return {
        "method": event.method,
        "path_template": event.path_template,
        "operation_id": event.operation_id,
    }


def report(scenario: Json, recorder: Recorder, result: Result, elapsed: float) -> Json:
    """Build the scenario's line."""
    finish = recorder.finishes[-1] if len(recorder.finishes) == 1 else None
    if result.error is None:
        error = None if finish is None or finish.outcome == "status" else "mismatch"
    elif finish is None or finish.outcome == "status":
        error = "mismatch"
    else:
        error = finish.outcome
    return {
        "id": scenario["id"],
        "status": result.status,
        "error": error,
        "body": result.body,
        "body_error": result.body_error,
        "events": [
            {
                "attempt": e.attempt,
                "reason": name(e.reason),
                "delay_ms": e.delay_ms,
                **operation_fields(e),
            }
            for e in recorder.events
        ],
        "finish": (
            None
            if finish is None
            else {
                "attempts": finish.attempts,
                "reason": name(finish.reason),
                "outcome": finish.outcome,
                "status": finish.status,
                "timed_out": finish.timed_out,
                **operation_fields(finish),
            }
        ),
        "error_type": None if result.error is None else type(result.error).__name__,
        "elapsed_ms": round(elapsed * 1000),
    }


class Scenarios:
    """The scenario file and the server's addresses."""

    def __init__(self, path: str) -> None:
        """Read the scenario file at ``path`` and the RETRYGEN_FAULT_* variables."""
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
        self.base_path: str = document["base_path"]
        self.scenarios: list[Json] = document["scenarios"]
        self.run = os.environ["RETRYGEN_FAULT_RUN"]
        self.targets = {
            "server": os.environ["RETRYGEN_FAULT_URL"],
            "closed_port": os.environ["RETRYGEN_FAULT_CLOSED_URL"],
            "unresolvable": os.environ["RETRYGEN_FAULT_UNRESOLVABLE_URL"],
        }

    def base_url(self, scenario: Json) -> str:
        """Return the scenario's base URL: its target, then the base path."""
        return self.targets[scenario.get("target", "server")] + self.base_path

    def headers(self, scenario: Json) -> dict[str, str]:
        """Return the scenario's headers and the runner's two."""
        return {
            **scenario.get("headers", {}),
            "x-fault-run": self.run,
            "x-fault-scenario": scenario["id"],
        }

    def warmup_headers(self, scenario: Json) -> dict[str, str]:
        """Return the headers of a warm-up request."""
        return {
            "x-fault-run": self.run,
            "x-fault-scenario": scenario["id"],
            "x-fault-warmup": "1",
        }


def options(scenario: Json, recorder: Recorder) -> Json:
    """Return the adapter's options for a scenario."""
    timeout_ms = scenario.get("attempt_timeout_ms")
    return {
        "tables": retry_policy,
        "on_retry": recorder.events.append,
        "on_finish": recorder.finishes.append,
        "mint_idempotency_keys": scenario.get("mint_keys", True),
        "attempt_timeout": None if timeout_ms is None else timeout_ms / 1000,
    }


def body_text(scenario: Json) -> bytes | None:
    """Return the scenario's body, if any."""
    body = scenario.get("body")
    return None if body is None else str(body["text"]).encode()


def is_stream(scenario: Json) -> bool:
    """Tell whether the scenario's body must be sent as a one-shot stream."""
    body = scenario.get("body")
    return body is not None and body["kind"] == "stream"


# The async variant.


async def one_shot(data: bytes) -> AsyncIterator[bytes]:
    """Yield a body once: httpx sends it chunked and cannot send it again."""
    yield data


async def run_async(file: Scenarios, scenario: Json) -> Json:
    """Run one scenario with ``AsyncRetryTransport``."""
    recorder = Recorder()
    base = file.base_url(scenario)
    url = base + scenario["path"]
    transport = AsyncRetryTransport(base_url=base, **options(scenario, recorder))
    async with httpx.AsyncClient(transport=transport) as client:
        if scenario.get("warm", False):
            await client.get(url, headers=file.warmup_headers(scenario))
            recorder.clear()
        data = body_text(scenario)
        request = client.build_request(
            scenario["method"],
            url,
            headers=file.headers(scenario),
            content=(
                one_shot(data) if data is not None and is_stream(scenario) else data
            ),
        )
        result = Result()
        started = time.monotonic()

        async def call() -> None:
            response = await client.send(request, stream=True)
            result.status = response.status_code
            try:
                result.body = (await response.aread()).decode("utf-8", "replace")
            except httpx.HTTPError:
                result.body_error = True
            finally:
                await response.aclose()

        task = asyncio.ensure_future(call())
        abort_ms = scenario.get("abort_after_ms")
        timer = (
            None
            if abort_ms is None
            else asyncio.get_running_loop().call_later(abort_ms / 1000, task.cancel)
        )
        try:
            await task
        except (Exception, asyncio.CancelledError) as error:
            result.error = error
        finally:
            if timer is not None:
                timer.cancel()
        return report(scenario, recorder, result, time.monotonic() - started)


# The sync variant.


def run_sync(file: Scenarios, scenario: Json) -> Json:
    """Run one scenario with ``RetryTransport``."""
    if scenario.get("abort_after_ms") is not None:
        return {
            "id": scenario["id"],
            "unsupported": "a blocking httpx call cannot be cancelled by its caller",
        }
    recorder = Recorder()
    base = file.base_url(scenario)
    url = base + scenario["path"]
    transport = RetryTransport(base_url=base, **options(scenario, recorder))
    with httpx.Client(transport=transport) as client:
        if scenario.get("warm", False):
            client.get(url, headers=file.warmup_headers(scenario))
            recorder.clear()
        data = body_text(scenario)
        request = client.build_request(
            scenario["method"],
            url,
            headers=file.headers(scenario),
            content=iter([data]) if data is not None and is_stream(scenario) else data,
        )
        result = Result()
        started = time.monotonic()
        try:
            response = client.send(request, stream=True)
        except Exception as error:
            result.error = error
        else:
            result.status = response.status_code
            try:
                result.body = response.read().decode("utf-8", "replace")
            except httpx.HTTPError:
                result.body_error = True
            finally:
                response.close()
        return report(scenario, recorder, result, time.monotonic() - started)


# The overhead mode.

WARMUP_REQUESTS = 200
"""Requests sent with each client before measuring."""
ALLOCATION_ROUNDS = 200
"""Rounds measured with tracemalloc (it slows every allocation, so apart from the timing)."""


def summary(
    rounds: int,
    bare: list[float],
    adapted: list[float],
    bare_peaks: list[int],
    adapted_peaks: list[int],
) -> Json:
    """Build the bench line from the per-request times (seconds) and memory peaks (bytes)."""
    bare_us = statistics.median(bare) * 1e6
    adapter_us = statistics.median(adapted) * 1e6
    return {
        "bench": {
            "requests": rounds,
            "bare_us": round(bare_us, 2),
            "adapter_us": round(adapter_us, 2),
            "overhead_us": round(adapter_us - bare_us, 2),
            "overhead_pct": round((adapter_us - bare_us) / bare_us * 100, 2),
            # tracemalloc sees live memory, not a running total of allocations: the peak above
            # the start of a request is the most that request held at once (medians: a
            # collection or a pool's growth during one request would swamp a mean).
            "allocated_bytes_per_request": round(
                statistics.median(adapted_peaks) - statistics.median(bare_peaks)
            ),
            "allocation_counter": "tracemalloc (median peak above each request's start)",
        }
    }


def bench_sync(file: Scenarios, rounds: int) -> Json:
    """Measure ``RetryTransport`` against the bare ``httpx.Client``."""
    url = file.targets["server"] + file.base_path + "/health"
    headers = {"x-fault-warmup": "1"}
    with (
        httpx.Client() as bare,
        httpx.Client(transport=RetryTransport(tables=retry_policy)) as adapted,
    ):
        clients = (bare, adapted)
        for _ in range(WARMUP_REQUESTS):
            for client in clients:
                client.get(url, headers=headers).raise_for_status()
        times: tuple[list[float], list[float]] = ([], [])
        for i in range(rounds):
            for k in (0, 1) if i % 2 == 0 else (1, 0):
                started = time.perf_counter()
                clients[k].get(url, headers=headers).raise_for_status()
                times[k].append(time.perf_counter() - started)
        peaks: tuple[list[int], list[int]] = ([], [])
        tracemalloc.start()
        try:
            for _ in range(ALLOCATION_ROUNDS):
                for k in (0, 1):
                    start, _ = tracemalloc.get_traced_memory()
                    tracemalloc.reset_peak()
                    clients[k].get(url, headers=headers).raise_for_status()
                    peaks[k].append(tracemalloc.get_traced_memory()[1] - start)
        finally:
            tracemalloc.stop()
    return summary(rounds, *times, *peaks)


async def bench_async(file: Scenarios, rounds: int) -> Json:
    """Measure ``AsyncRetryTransport`` against the bare ``httpx.AsyncClient``."""
    url = file.targets["server"] + file.base_path + "/health"
    headers = {"x-fault-warmup": "1"}
    async with (
        httpx.AsyncClient() as bare,
        httpx.AsyncClient(
            transport=AsyncRetryTransport(tables=retry_policy)
        ) as adapted,
    ):
        clients = (bare, adapted)
        for _ in range(WARMUP_REQUESTS):
            for client in clients:
                (await client.get(url, headers=headers)).raise_for_status()
        times: tuple[list[float], list[float]] = ([], [])
        for i in range(rounds):
            for k in (0, 1) if i % 2 == 0 else (1, 0):
                started = time.perf_counter()
                (await clients[k].get(url, headers=headers)).raise_for_status()
                times[k].append(time.perf_counter() - started)
        peaks: tuple[list[int], list[int]] = ([], [])
        tracemalloc.start()
        try:
            for _ in range(ALLOCATION_ROUNDS):
                for k in (0, 1):
                    start, _ = tracemalloc.get_traced_memory()
                    tracemalloc.reset_peak()
                    (await clients[k].get(url, headers=headers)).raise_for_status()
                    peaks[k].append(tracemalloc.get_traced_memory()[1] - start)
        finally:
            tracemalloc.stop()
    return summary(rounds, *times, *peaks)


def scenario_lines(variant: str, file: Scenarios) -> Iterator[Json]:
    """Run every scenario of the file, in order."""
    if variant == "sync":
        for scenario in file.scenarios:
            yield run_sync(file, scenario)
        return
    for scenario in file.scenarios:
        yield asyncio.run(run_async(file, scenario))


def main(args: list[str]) -> int:
    """Run the variant ``args[0]`` over the scenario file ``args[1]``."""
    if len(args) != 2 or args[0] not in ("async", "sync"):
        print(
            "usage: main.py (async|sync) [--import-path DIR]... SCENARIOS.json",
            file=sys.stderr,
        )
        return 2
    variant, path = args
    file = Scenarios(path)
    bench = os.environ.get("RETRYGEN_FAULT_BENCH")
    if bench is not None:
        rounds = int(bench)
        line = (
            bench_sync(file, rounds)
            if variant == "sync"
            else asyncio.run(bench_async(file, rounds))
        )
        print(json.dumps(line), flush=True)
        return 0
    for line in scenario_lines(variant, file):
        print(json.dumps(line), flush=True)
    return 0
