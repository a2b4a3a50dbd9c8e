"""Scenarios of conformance/faults/scenarios.json made through the SDK's own calls.

``cargo xtask runtime-tests --lang python`` generates the SDK, starts the fault
server and runs this file with ``RETRYGEN_FAULT_URL``, ``RETRYGEN_FAULT_RUN``
and ``RETRYGEN_EXAMPLE_SCENARIOS`` set; it then compares the server's
arrivals with each scenario's. Each call goes through the SDK's sync or async
client (one of them on trio), both built from the one ``httpx_args``.
"""

import asyncio
import os
import unittest
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import trio

from sandbox_client import Client
from sandbox_client.api.default import (
    create_sandbox,
    get_sandbox,
    kill_sandbox,
    snapshot_sandbox,
)
from sandbox_client.retry_policy.httpx_transport import (
    FinishEvent,
    RetryOverrides,
    finish_of,
    retry_overrides,
)
from sandbox_client.types import Response
from sdk import new_client

Send = Callable[[Client], Response[Any] | Awaitable[Response[Any]]]


@dataclass(frozen=True)
class Call:
    """One scenario's call: how to send it, and what it must return."""

    send: Send
    loop: str = "sync"
    """``sync``, ``asyncio`` or ``trio``: which of the SDK's clients sends it."""
    status: int | None = None
    """The status it returns, or None when it raises."""
    attempts: int = 1
    options: dict[str, Any] = field(default_factory=dict)


def get_sync(client: Client) -> Response[Any]:
    """Get a sandbox with the SDK's sync client."""
    return get_sandbox.sync_detailed("sb-1", client=client)


async def get_async(client: Client) -> Response[Any]:
    """Get a sandbox with the SDK's async client."""
    return await get_sandbox.asyncio_detailed("sb-1", client=client)


def get_once(client: Client) -> Response[Any]:
    """Get a sandbox with one attempt only."""
    # The SDK's calls take no httpx extensions: the overrides apply to the block.
    with retry_overrides(RetryOverrides(max_retries=0)):
        return get_sandbox.sync_detailed("sb-1", client=client)


async def create_async(client: Client) -> Response[Any]:
    """Create a sandbox with the SDK's async client."""
    return await create_sandbox.asyncio_detailed(client=client)


def create_sync(client: Client) -> Response[Any]:
    """Create a sandbox with the SDK's sync client."""
    return create_sandbox.sync_detailed(client=client)


async def kill_async(client: Client) -> Response[Any]:
    """Kill a sandbox with the SDK's async client."""
    return await kill_sandbox.asyncio_detailed("sb-1", client=client)


def snapshot_sync(client: Client) -> Response[Any]:
    """Snapshot a sandbox (a keyed operation) with the SDK's sync client."""
    # No key given: the adapter mints one, before the SDK client's request hooks.
    return snapshot_sandbox.sync_detailed("sb-1", client=client)


CALLS: dict[str, Call] = {
    "get-503-503-200": Call(get_sync, status=200, attempts=3),
    "create-503-not-replayable": Call(create_async, "asyncio", status=503),
    "create-reset-arrives-once": Call(create_sync),
    "kill-reset-arrives-twice": Call(kill_async, "trio", status=204, attempts=2),
    "snapshot-minted-key-reset": Call(snapshot_sync, status=201, attempts=2),
    # The SDK reads the body after the transport returns: cut, it is retried only when the
    # adapter reads it inside the loop.
    "get-body-cut-read-in-loop-retried": Call(
        get_async,
        "asyncio",
        status=200,
        attempts=2,
        options={"read_body_max_bytes": 65536},
    ),
    "get-override-max-retries-0-once": Call(get_once, status=503),
    "get-attempt-header-counts-earlier-attempts": Call(
        get_sync, status=200, attempts=3, options={"attempt_header": "X-Retry-Attempt"}
    ),
}


class ScenariosThroughTheSDK(unittest.TestCase):
    """The scenarios of RETRYGEN_EXAMPLE_SCENARIOS, one SDK client each."""

    def test_scenarios(self) -> None:
        """Make each scenario's call against the fault server."""
        server = os.environ.get("RETRYGEN_FAULT_URL", "")
        ids = os.environ.get("RETRYGEN_EXAMPLE_SCENARIOS", "")
        self.assertTrue(
            server and ids,
            "RETRYGEN_FAULT_URL and RETRYGEN_EXAMPLE_SCENARIOS are not set: "
            "run cargo xtask runtime-tests --lang python",
        )
        for scenario in ids.split(","):
            with self.subTest(scenario):
                self.run_call(server, scenario, CALLS[scenario])

    def run_call(self, server: str, scenario: str, call: Call) -> None:
        """Make one call through a new SDK client; check its finish event."""
        finishes: list[FinishEvent] = []
        client = new_client(
            server + "/v1",
            headers={
                "x-fault-run": os.environ["RETRYGEN_FAULT_RUN"],
                "x-fault-scenario": scenario,
            },
            on_finish=finishes.append,
            **call.options,
        )
        response: Response[Any] | None = None
        try:
            response = send(client, call)
        except httpx.TransportError as error:
            # The finish is on the error the SDK's call raised.
            self.assertIsNone(call.status, error)
            self.assertEqual(finish_of(error), finishes[-1])
        else:
            self.assertEqual(response.status_code, call.status)
        self.assertEqual(len(finishes), 1, finishes)
        self.assertEqual(finishes[0].attempts, call.attempts, finishes[0])


def send(client: Client, call: Call) -> Response[Any]:
    """Send the call with the SDK client its loop needs, and close that client."""
    if call.loop == "sync":
        with client:
            result = call.send(client)
            assert not isinstance(result, Awaitable)
            return result

    async def in_loop() -> Response[Any]:
        async with client:
            result = call.send(client)
            assert isinstance(result, Awaitable)
            return await result

    if call.loop == "trio":
        return trio.run(in_loop)
    return asyncio.run(in_loop())


if __name__ == "__main__":
    unittest.main()
