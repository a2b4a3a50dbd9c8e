"""The sandbox SDK as openapi-python-client generates it, with retrygen's adapter installed.

``sandbox_client/`` is openapi-python-client's output for
conformance/faults/spec.yaml; ``sandbox_client/retry_policy/`` is retrygen's
Python target for the same spec with the httpx adapter. The install is the
three lines of ``new_client``: one ``RetryTransport`` serves the SDK's
``httpx.Client`` and its ``httpx.AsyncClient``, through the one
``httpx_args`` the SDK hands to both.
"""

from collections.abc import Callable

from sandbox_client import Client, retry_policy
from sandbox_client.retry_policy.httpx_transport import FinishEvent, RetryTransport


def new_client(
    base_url: str,
    *,
    headers: dict[str, str] | None = None,
    on_finish: Callable[[FinishEvent], object] | None = None,
    read_body_max_bytes: int = 0,
    attempt_header: str | None = None,
) -> Client:
    """Return the SDK's client for ``base_url``, its calls retried by the API's policy."""
    retries = RetryTransport(
        tables=retry_policy,
        base_url=base_url,
        on_finish=on_finish,
        read_body_max_bytes=read_body_max_bytes,
        attempt_header=attempt_header,
    )
    return Client(
        base_url=base_url, headers=headers or {}, httpx_args=retries.httpx_args()
    )
