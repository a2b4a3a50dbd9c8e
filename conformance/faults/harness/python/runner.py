"""The fault-matrix runner of Python's httpx adapter (conformance/faults/README.md).

Runs every scenario of the file through a new ``httpx.AsyncClient`` (variant
``async``, the run ``python``) or a new ``httpx.Client`` (variant ``sync``,
``python-sync``) with a new ``RetryTransport``, the one object that serves
both, and prints one JSON line per scenario. A blocking httpx call cannot be
cancelled by its caller, so the sync variant reports the scenarios that abort
a request as unsupported. With ``RETRYGEN_FAULT_SOAK`` set the file is a soak
plan, sent through one client; with ``RETRYGEN_FAULT_BENCH=N`` it measures the
adapter's overhead instead.

Protocols (``RETRYGEN_FAULT_PROTOCOL``): ``http1``; ``h2c``, HTTP/2 with prior
knowledge (``http1=False, http2=True`` on an ``http://`` URL); ``http1-tls``;
``h2`` (``http1=False, http2=True`` over TLS, ALPN ``h2``). Over TLS the client
trusts exactly the CA of ``RETRYGEN_FAULT_CA_FILE``. Every response must come
back over the protocol asked for, or the runner stops with an error.
"""

import asyncio
import dataclasses
import enum
import gc
import json
import os
import ssl
import statistics
import sys
import time
import tracemalloc
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

import httpx
import httpx_retries

import retry_policy
from retry_policy import IdempotencyKeyFormat, RetryEvent
from retry_policy.httpx_transport import (
    OVERRIDES_EXTENSION,
    UNSET,
    FinishEvent,
    RetryOverrides,
    RetryTransport,
    finish_of,
)

Json = dict[str, Any]

PROTOCOLS = ("http1", "h2c", "http1-tls", "h2")
"""The protocols a run may be asked to speak."""

KEEPALIVE_EXPIRY = 5.0
"""httpx's default keep-alive expiry, in seconds, set explicitly so the soak knows it.

httpcore closes an idle HTTP/2 connection whose socket failed (a reset, a close)
only once this has passed, at the pool's next request; until then it holds its
descriptor (at most ``max_keepalive_connections`` of them, 20 by default).
"""


@dataclass
class Recorder:
    """The callbacks' events of the request in flight."""

    events: list[RetryEvent] = field(default_factory=list)
    finishes: list[FinishEvent] = field(default_factory=list)

    def clear(self) -> None:
        """Forget the events of an earlier request (the warm-up, the soak's previous one)."""
        self.events.clear()
        self.finishes.clear()


@dataclass
class Result:
    """What the call returned and what its body read gave."""

    status: int | None = None
    error: BaseException | None = None
    body: str | None = None
    body_error: bool = False
    finish: FinishEvent | None = None
    """The finish event read back from the response or the error (P5)."""


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


def finish_fields(finish: FinishEvent | None) -> Json | None:
    """Return a finish event's line fields."""
    if finish is None:
        return None
    return {
        "attempts": finish.attempts,
        "reason": name(finish.reason),
        "outcome": finish.outcome,
        "status": finish.status,
        "timed_out": finish.timed_out,
        "redirects": finish.redirects,
        "total_delay_ms": finish.total_delay_ms,
        "server_delay_ms": finish.server_delay_ms,
        **operation_fields(finish),
    }


def report(scenario: Json, recorder: Recorder, result: Result, elapsed: float) -> Json:
    """Build the line of a scenario or a soak request."""
    finishes = recorder.finishes
    # The last finish event: a redirect httpx's Client follows makes one per hop.
    finish = finishes[-1] if finishes else None
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
        "finish": finish_fields(finish),
        "finish_from_result": finish_fields(result.finish),
        "finishes": len(finishes),
        "reported_arrivals": sum(f.attempts + f.redirects for f in finishes),
        "error_type": None if result.error is None else type(result.error).__name__,
        "elapsed_ms": round(elapsed * 1000),
    }


def variable(key: str) -> str:
    """Return an environment variable the runner cannot do without."""
    value = os.environ.get(key, "")
    if value == "":
        sys.exit(f"{key} is not set")
    return value


class Scenarios:
    """The scenario file (or soak plan), the server's addresses and the protocol."""

    def __init__(self, path: str) -> None:
        """Read the file at ``path`` and the RETRYGEN_FAULT_* variables."""
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
        self.soak = os.environ.get("RETRYGEN_FAULT_SOAK", "") != ""
        self.base_path: str = os.environ.get(
            "RETRYGEN_FAULT_BASE_PATH", document.get("base_path", "/v1")
        )
        self.scenarios: list[Json] = (
            document["requests"] if self.soak else document["scenarios"]
        )
        self.attempt_timeout_ms: int | None = document.get("attempt_timeout_ms")
        self.run = variable("RETRYGEN_FAULT_RUN")
        self.protocol = os.environ.get("RETRYGEN_FAULT_PROTOCOL", "http1")
        if self.protocol not in PROTOCOLS:
            sys.exit(
                f"RETRYGEN_FAULT_PROTOCOL {self.protocol!r}: not one of {PROTOCOLS}"
            )
        self.http2 = self.protocol in ("h2c", "h2")
        self.verify: ssl.SSLContext | bool = True
        if self.protocol in ("http1-tls", "h2"):
            # Exactly the test CA: never verification off, never the system's roots.
            self.verify = ssl.create_default_context(
                cafile=variable("RETRYGEN_FAULT_CA_FILE")
            )
        self.targets = {
            "server": variable("RETRYGEN_FAULT_URL"),
            "closed_port": variable("RETRYGEN_FAULT_CLOSED_URL"),
            "unresolvable": variable("RETRYGEN_FAULT_UNRESOLVABLE_URL"),
        }
        for target, key in (
            ("other_origin", "RETRYGEN_FAULT_OTHER_ORIGIN_URL"),
            ("untrusted_tls", "RETRYGEN_FAULT_UNTRUSTED_URL"),
            ("tls_mismatch", "RETRYGEN_FAULT_TLS_MISMATCH_URL"),
        ):
            url = os.environ.get(key, "")
            if url != "":
                self.targets[target] = url

    def target(self, kind: str) -> str:
        """Return the URL of a target, or stop when the server gave none."""
        url = self.targets.get(kind)
        if url is None:
            sys.exit(f"target {kind}: its variable is not set")
        return url

    def base_url(self, scenario: Json) -> str:
        """Return the base URL the adapter is configured with: the target, then the base path.

        For ``other_origin`` the base stays the server's: the request goes elsewhere.
        """
        kind = scenario.get("target", "server")
        return (
            self.target("server" if kind == "other_origin" else kind) + self.base_path
        )

    def url(self, scenario: Json) -> str:
        """Return the URL the scenario's request is sent to."""
        path = str(scenario["path"])
        if scenario.get("target") == "other_origin":
            return self.target("other_origin") + self.base_path + path
        return self.base_url(scenario) + path

    def headers(self, scenario: Json) -> dict[str, str]:
        """Return the scenario's headers and the runner's two."""
        return {
            **scenario.get("headers", {}),
            "x-fault-run": self.run,
            "x-fault-scenario": scenario["id"],
        }

    def warmup_headers(self, scenario_id: str, *, close: bool) -> dict[str, str]:
        """Return the headers of a warm-up request; ``close`` asks for a stale connection."""
        return {
            "x-fault-run": self.run,
            "x-fault-scenario": scenario_id,
            "x-fault-warmup": "close" if close else "1",
        }

    def transport_options(self) -> Json:
        """Return the settings the adapter builds its httpx transports from, for the protocol."""
        # HTTP/2 alone (http1=False): prior knowledge on http://, ALPN h2 only over TLS, so a
        # run never passes by falling back to HTTP/1.1. The adapter builds the transports as
        # httpx.Client would (retries 0: the adapter owns every replay); no proxy from the
        # environment stands between the runner and the fault server.
        return {
            "verify": self.verify,
            "http1": not self.http2,
            "http2": self.http2,
            "limits": httpx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY),
            "trust_env": False,
        }

    def check_version(self, response: httpx.Response) -> None:
        """Stop the runner when a response came over another protocol than the run's."""
        want = "HTTP/2" if self.http2 else "HTTP/1.1"
        if response.http_version != want:
            sys.exit(
                f"protocol {self.protocol}: a response came over {response.http_version}"
            )


def options(
    attempt_timeout_ms: int | None, recorder: Recorder, *, mint_keys: bool
) -> Json:
    """Return the adapter's options."""
    return {
        "tables": retry_policy,
        "on_retry": recorder.events.append,
        "on_finish": recorder.finishes.append,
        "mint_idempotency_keys": mint_keys,
        "attempt_timeout": (
            None if attempt_timeout_ms is None else attempt_timeout_ms / 1000
        ),
    }


def scenario_options(scenario: Json, recorder: Recorder) -> Json:
    """Return the adapter's options for a scenario (P3, P6 and its policy when it has them)."""
    found = {
        **options(
            scenario.get("attempt_timeout_ms"),
            recorder,
            mint_keys=scenario.get("mint_keys", True),
        ),
        "attempt_header": scenario.get("attempt_header"),
        "read_body_max_bytes": scenario.get("read_body_max_bytes", 0),
    }
    given = scenario.get("policy")
    if given is not None:
        # The module's default policy with the scenario's keys replaced (contract v3).
        changes: Json = {}
        for key, value in given.items():
            if key != "idempotency_key_format":
                sys.exit(f"{scenario['id']}: policy key {key!r} is not supported")
            changes[key] = IdempotencyKeyFormat.parse(value)
        found["policy"] = dataclasses.replace(
            retry_policy.DEFAULT_RETRY_POLICY, **changes
        )
    return found


def extensions(scenario: Json) -> Json:
    """Return the request's extensions: the scenario's retry overrides (P1), if any."""
    given = scenario.get("overrides")
    if given is None:
        return {}
    timeout_ms = given.get("attempt_timeout_ms", UNSET)
    return {
        OVERRIDES_EXTENSION: RetryOverrides(
            max_retries=given.get("max_retries"),
            attempt_timeout=(
                timeout_ms
                if timeout_ms is UNSET or timeout_ms is None
                else timeout_ms / 1000
            ),
            read_body_max_bytes=given.get("read_body_max_bytes"),
        )
    }


def body_text(scenario: Json) -> bytes | None:
    """Return the request's body, if any."""
    body = scenario.get("body")
    return None if body is None else str(body["text"]).encode()


EVENT_END = b"\n\n"
"""The blank line that ends an event in the fault server's streams."""


async def read_events_async(response: httpx.Response, count: int) -> bytes:
    """Read ``response``'s body until it holds ``count`` complete events (or ends)."""
    text = b""
    async for chunk in response.aiter_bytes():
        text += chunk
        if text.count(EVENT_END) >= count:
            break
    return text


def read_events_sync(response: httpx.Response, count: int) -> bytes:
    """Read ``response``'s body until it holds ``count`` complete events (or ends)."""
    text = b""
    for chunk in response.iter_bytes():
        text += chunk
        if text.count(EVENT_END) >= count:
            break
    return text


async def read_body_async(response: httpx.Response, scenario: Json) -> bytes:
    """Read the whole body, or up to ``close_after_events`` events of it."""
    count = scenario.get("close_after_events")
    if count is None:
        return await response.aread()
    return await read_events_async(response, count)


def read_body_sync(response: httpx.Response, scenario: Json) -> bytes:
    """Read the whole body, or up to ``close_after_events`` events of it."""
    count = scenario.get("close_after_events")
    return response.read() if count is None else read_events_sync(response, count)


def is_stream(scenario: Json) -> bool:
    """Tell whether the request's body must be sent as a one-shot stream."""
    body = scenario.get("body")
    return body is not None and body["kind"] == "stream"


def emit(line: Json) -> None:
    """Print one JSON line at once (xtask reads them as they come)."""
    print(json.dumps(line), flush=True)


def resources() -> Json:
    """Return the open descriptors and the resident memory, from /proc/self."""
    rss_kb = 0
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss_kb = int(line.split()[1])
    return {"fds": len(os.listdir("/proc/self/fd")), "rss_kb": rss_kb}


def settled(at_last_request: Json) -> Json:
    """Return the resources after a collection, beside those measured at the last request."""
    # A full collection first, so that memory counts what is kept, not what is garbage.
    gc.collect()
    return {**resources(), "at_last_request": at_last_request}


# The async variant.


async def one_shot(data: bytes) -> AsyncIterator[bytes]:
    """Yield a body once: httpx sends it chunked and cannot send it again."""
    yield data


def async_client(transport: RetryTransport) -> httpx.AsyncClient:
    """Return an ``httpx.AsyncClient`` over the adapter; it follows redirects, as SDKs do."""
    return httpx.AsyncClient(transport=transport, follow_redirects=True)


async def warm_up_async(
    file: Scenarios,
    client: httpx.AsyncClient,
    base: str,
    scenario_id: str,
    *,
    close: bool,
) -> None:
    """Send the warm-up request and read its body."""
    response = await client.get(
        base + "/health", headers=file.warmup_headers(scenario_id, close=close)
    )
    file.check_version(response)


async def send_async(
    file: Scenarios,
    client: httpx.AsyncClient,
    recorder: Recorder,
    scenario: Json,
    url: str,
) -> Json:
    """Send one request of a scenario or the soak; return its line."""
    recorder.clear()
    data = body_text(scenario)
    request = client.build_request(
        scenario["method"],
        url,
        headers=file.headers(scenario),
        content=(one_shot(data) if data is not None and is_stream(scenario) else data),
        extensions=extensions(scenario),
    )
    result = Result()
    started = time.monotonic()

    async def call() -> None:
        response = await client.send(request, stream=True)
        file.check_version(response)
        result.status = response.status_code
        try:
            body = await read_body_async(response, scenario)
            result.body = body.decode("utf-8", "replace")
        except httpx.HTTPError:
            result.body_error = True
        finally:
            # With close_after_events: the caller closing the stream while reading it.
            await response.aclose()
            # A resumable stream's finish comes when its body ends (contract v3 X4).
            result.finish = finish_of(response)

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
        result.finish = finish_of(error)
    finally:
        if timer is not None:
            timer.cancel()
    return report(scenario, recorder, result, time.monotonic() - started)


async def run_async(file: Scenarios, scenario: Json) -> Json:
    """Run one scenario through an ``httpx.AsyncClient``."""
    recorder = Recorder()
    base = file.base_url(scenario)
    transport = RetryTransport(
        **file.transport_options(),
        base_url=base,
        **scenario_options(scenario, recorder),
    )
    async with async_client(transport) as client:
        if scenario.get("warm", False):
            await warm_up_async(
                file,
                client,
                base,
                scenario["id"],
                close=scenario.get("warm_close", False),
            )
            pause_ms = scenario.get("warm_pause_ms")
            if pause_ms is not None:
                await asyncio.sleep(pause_ms / 1000)
        return await send_async(file, client, recorder, scenario, file.url(scenario))


async def soak_async(file: Scenarios) -> None:
    """Send every request of the soak plan through one ``httpx.AsyncClient``."""
    recorder = Recorder()
    base = file.target("server") + file.base_path
    transport = RetryTransport(
        **file.transport_options(),
        base_url=base,
        **options(file.attempt_timeout_ms, recorder, mint_keys=True),
    )
    async with async_client(transport) as client:
        await warm_up_async(file, client, base, "soak-warmup", close=False)
        start = resources()
        emit({"soak_start": start})
        for request in file.scenarios:
            emit(
                await send_async(
                    file, client, recorder, request, base + request["path"]
                )
            )
        emit({"soak_end": await settled_async(file, client, base, start)})


async def settled_async(
    file: Scenarios, client: httpx.AsyncClient, base: str, start: Json
) -> Json:
    """Measure the end, after the keep-alive expiry when descriptors grew.

    The pool closes what it keeps only until then at its next request.
    """
    at_last_request = resources()
    if at_last_request["fds"] > start["fds"]:
        await asyncio.sleep(KEEPALIVE_EXPIRY + 0.5)
        await warm_up_async(file, client, base, "soak-settle", close=False)
    return settled(at_last_request)


# The sync variant.


def sync_client(transport: RetryTransport) -> httpx.Client:
    """Return an ``httpx.Client`` over the adapter; it follows redirects, as SDKs do."""
    return httpx.Client(transport=transport, follow_redirects=True)


def warm_up_sync(
    file: Scenarios,
    client: httpx.Client,
    base: str,
    scenario_id: str,
    *,
    close: bool,
) -> None:
    """Send the warm-up request and read its body."""
    response = client.get(
        base + "/health", headers=file.warmup_headers(scenario_id, close=close)
    )
    file.check_version(response)


def send_sync(
    file: Scenarios, client: httpx.Client, recorder: Recorder, scenario: Json, url: str
) -> Json:
    """Send one request of a scenario or the soak; return its line."""
    recorder.clear()
    data = body_text(scenario)
    request = client.build_request(
        scenario["method"],
        url,
        headers=file.headers(scenario),
        content=iter([data]) if data is not None and is_stream(scenario) else data,
        extensions=extensions(scenario),
    )
    result = Result()
    started = time.monotonic()
    try:
        response = client.send(request, stream=True)
    except Exception as error:
        result.error = error
        result.finish = finish_of(error)
    else:
        file.check_version(response)
        result.status = response.status_code
        try:
            result.body = read_body_sync(response, scenario).decode("utf-8", "replace")
        except httpx.HTTPError:
            result.body_error = True
        finally:
            # With close_after_events: the caller closing the stream while reading it.
            response.close()
            # A resumable stream's finish comes when its body ends (contract v3 X4).
            result.finish = finish_of(response)
    return report(scenario, recorder, result, time.monotonic() - started)


def run_sync(file: Scenarios, scenario: Json) -> Json:
    """Run one scenario with ``RetryTransport``."""
    if scenario.get("abort_after_ms") is not None:
        return {
            "id": scenario["id"],
            "unsupported": "a blocking httpx call cannot be cancelled by its caller",
        }
    recorder = Recorder()
    base = file.base_url(scenario)
    transport = RetryTransport(
        **file.transport_options(),
        base_url=base,
        **scenario_options(scenario, recorder),
    )
    with sync_client(transport) as client:
        if scenario.get("warm", False):
            warm_up_sync(
                file,
                client,
                base,
                scenario["id"],
                close=scenario.get("warm_close", False),
            )
            pause_ms = scenario.get("warm_pause_ms")
            if pause_ms is not None:
                time.sleep(pause_ms / 1000)
        return send_sync(file, client, recorder, scenario, file.url(scenario))


def settled_sync(file: Scenarios, client: httpx.Client, base: str, start: Json) -> Json:
    """Measure the end, after the keep-alive expiry when descriptors grew.

    The pool closes what it keeps only until then at its next request.
    """
    at_last_request = resources()
    if at_last_request["fds"] > start["fds"]:
        time.sleep(KEEPALIVE_EXPIRY + 0.5)
        warm_up_sync(file, client, base, "soak-settle", close=False)
    return settled(at_last_request)


def soak_sync(file: Scenarios) -> None:
    """Send every request of the soak plan through one ``RetryTransport``."""
    recorder = Recorder()
    base = file.target("server") + file.base_path
    transport = RetryTransport(
        **file.transport_options(),
        base_url=base,
        **options(file.attempt_timeout_ms, recorder, mint_keys=True),
    )
    with sync_client(transport) as client:
        warm_up_sync(file, client, base, "soak-warmup", close=False)
        start = resources()
        emit({"soak_start": start})
        for request in file.scenarios:
            emit(send_sync(file, client, recorder, request, base + request["path"]))
        emit({"soak_end": settled_sync(file, client, base, start)})


# The overhead mode.

WARMUP_REQUESTS = 200
"""Requests sent with each client before measuring."""
ALLOCATION_ROUNDS = 200
"""Rounds measured with tracemalloc (it slows every allocation, so apart from the timing)."""


PEER = "httpx-retries 0.6.0"
"""The peer the overhead mode measures beside the adapter (issue 20 item 7): httpx-retries'
``RetryTransport`` with its default ``Retry`` (scripts/bootstrap.d/python.sh pins it)."""


def summary(rounds: int, times: list[list[float]], peaks: list[list[int]]) -> Json:
    """Build the bench line from the per-request times (seconds) and memory peaks (bytes).

    Index 0 is the bare client, 1 the adapter's, 2 the peer's.
    """
    bare_us = statistics.median(times[0]) * 1e6

    def overhead(k: int) -> Json:
        us = statistics.median(times[k]) * 1e6
        return {
            "us": round(us, 2),
            "overhead_us": round(us - bare_us, 2),
            "overhead_pct": round((us - bare_us) / bare_us * 100, 2),
            # tracemalloc sees live memory, not a running total of allocations: the peak above
            # the start of a request is the most that request held at once (medians: a
            # collection or a pool's growth during one request would swamp a mean).
            "allocated_bytes_per_request": round(
                statistics.median(peaks[k]) - statistics.median(peaks[0])
            ),
        }

    adapter = overhead(1)
    return {
        "bench": {
            "requests": rounds,
            "bare_us": round(bare_us, 2),
            "adapter_us": adapter["us"],
            "overhead_us": adapter["overhead_us"],
            "overhead_pct": adapter["overhead_pct"],
            "allocated_bytes_per_request": adapter["allocated_bytes_per_request"],
            "allocation_counter": "tracemalloc (median peak above each request's start)",
            "peers": [{"name": PEER, **overhead(2)}],
        }
    }


def bench_sync(file: Scenarios, rounds: int) -> Json:
    """Measure ``RetryTransport`` and the peer against the bare ``httpx.Client``."""
    url = file.targets["server"] + file.base_path + "/health"
    headers = {"x-fault-warmup": "1"}
    with (
        httpx.Client() as bare,
        httpx.Client(transport=RetryTransport(tables=retry_policy)) as adapted,
        httpx.Client(transport=httpx_retries.RetryTransport()) as peer,
    ):
        clients = (bare, adapted, peer)
        for _ in range(WARMUP_REQUESTS):
            for client in clients:
                client.get(url, headers=headers).raise_for_status()
        times: list[list[float]] = [[] for _ in clients]
        for i in range(rounds):
            # Each round in another order, so that no client always follows the same one.
            for k in ORDERS[i % len(ORDERS)]:
                started = time.perf_counter()
                clients[k].get(url, headers=headers).raise_for_status()
                times[k].append(time.perf_counter() - started)
        peaks: list[list[int]] = [[] for _ in clients]
        tracemalloc.start()
        try:
            for _ in range(ALLOCATION_ROUNDS):
                for k, client in enumerate(clients):
                    start, _ = tracemalloc.get_traced_memory()
                    tracemalloc.reset_peak()
                    client.get(url, headers=headers).raise_for_status()
                    peaks[k].append(tracemalloc.get_traced_memory()[1] - start)
        finally:
            tracemalloc.stop()
    return summary(rounds, times, peaks)


async def bench_async(file: Scenarios, rounds: int) -> Json:
    """Measure ``RetryTransport`` and the peer against the bare ``httpx.AsyncClient``."""
    url = file.targets["server"] + file.base_path + "/health"
    headers = {"x-fault-warmup": "1"}
    async with (
        httpx.AsyncClient() as bare,
        httpx.AsyncClient(transport=RetryTransport(tables=retry_policy)) as adapted,
        httpx.AsyncClient(transport=httpx_retries.RetryTransport()) as peer,
    ):
        clients = (bare, adapted, peer)
        for _ in range(WARMUP_REQUESTS):
            for client in clients:
                (await client.get(url, headers=headers)).raise_for_status()
        times: list[list[float]] = [[] for _ in clients]
        for i in range(rounds):
            for k in ORDERS[i % len(ORDERS)]:
                started = time.perf_counter()
                (await clients[k].get(url, headers=headers)).raise_for_status()
                times[k].append(time.perf_counter() - started)
        peaks: list[list[int]] = [[] for _ in clients]
        tracemalloc.start()
        try:
            for _ in range(ALLOCATION_ROUNDS):
                for k, client in enumerate(clients):
                    start, _ = tracemalloc.get_traced_memory()
                    tracemalloc.reset_peak()
                    (await client.get(url, headers=headers)).raise_for_status()
                    peaks[k].append(tracemalloc.get_traced_memory()[1] - start)
        finally:
            tracemalloc.stop()
    return summary(rounds, times, peaks)


ORDERS: Final = ((0, 1, 2), (2, 1, 0), (1, 2, 0), (0, 2, 1), (2, 0, 1), (1, 0, 2))
"""The orders of the bare client (0), the adapter's (1) and the peer's (2) in a round."""


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
    if file.soak:
        if variant == "sync":
            soak_sync(file)
        else:
            asyncio.run(soak_async(file))
        return 0
    bench = os.environ.get("RETRYGEN_FAULT_BENCH")
    if bench is not None:
        rounds = int(bench)
        line = (
            bench_sync(file, rounds)
            if variant == "sync"
            else asyncio.run(bench_async(file, rounds))
        )
        emit(line)
        return 0
    for line in scenario_lines(variant, file):
        emit(line)
    return 0
