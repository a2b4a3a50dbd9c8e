"""Unit tests of the httpx adapter against scripted HTTP/1.1 and HTTP/2 servers on 127.0.0.1.

The adapter imports the runtime relatively (``from ._runtime import``), as it
sits in a generated package, so these tests import both relatively too: run
them from the folder above this project (xtask copies it as ``python/``)::

    python3 -m unittest discover -s python/tests -t . -p test_httpx_transport.py

No HTTP client is mocked: httpx's own transports send every attempt.
"""

import asyncio
import contextlib
import dataclasses
import io
import os
import re
import select
import socket
import ssl
import struct
import subprocess
import tempfile
import threading
import time
import unittest
import unittest.mock
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field

import h2.config
import h2.connection
import h2.errors
import h2.events
import httpx
import trio

from .._runtime import (
    PROBLEM_TYPE_QUOTA_EXCEEDED,
    Classifier,
    DecisionReason,
    Failure,
    IdempotencyKeyFormat,
    Jitter,
    Operation,
    OperationTable,
    ReplayClass,
    RetryEvent,
    RetryPolicy,
    UnknownOperationClass,
)
from ..httpx_transport import (
    ATTEMPT_EXTENSION,
    BODY_NOT_REPLAYABLE,
    FINISH_EXTENSION,
    FOREIGN_ORIGIN,
    OVERRIDES_EXTENSION,
    AsyncRetryTransport,
    AttemptTimeout,
    FinishEvent,
    RetryOverrides,
    RetryTransport,
    StreamResumeError,
    finish_of,
    retry_overrides,
)

# The server.


@dataclass(frozen=True)
class Reply:
    """Answer with ``status``, ``headers`` and ``body`` and keep the connection."""

    status: int
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b"ok"


@dataclass(frozen=True)
class Reset:
    """Reset the connection (RST) without a byte of response."""


@dataclass(frozen=True)
class ReplyThenClose:
    """Answer 200 ``ok`` (keep-alive, as far as the client knows), then close (FIN)."""


@dataclass(frozen=True)
class Stall:
    """Answer 200 after ``seconds``, or stop when the client goes away."""

    seconds: float


@dataclass(frozen=True)
class CutBody:
    """Send the head of ``status`` with ``Content-Length: 10``, 2 bytes of body, then close."""

    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Sse:
    """Answer 200 ``text/event-stream``, chunked, a chunk per piece.

    Then the end, or a close (FIN) before the last chunk when ``drop``: the
    stream dropped.
    """

    pieces: tuple[bytes, ...]
    drop: bool = False
    pause: float = 0
    """Seconds waited before the last piece."""
    hold: bool = False
    """After the pieces, keep the stream open until the client goes away (at most 10 s)."""
    reset: bool = False
    """After the pieces and 50 ms, reset the connection (RST) before the last chunk."""


Step = Reply | Reset | Stall | ReplyThenClose | CutBody | Sse


@dataclass(frozen=True)
class Arrival:
    """A request the server read in full."""

    method: str
    target: str
    headers: dict[str, str]
    body: bytes


class Server:
    """A scripted HTTP/1.1 server: arrival ``n`` gets ``script[min(n, len - 1)]``."""

    def __init__(self, *script: Step, tls: bool = False) -> None:
        """Listen on an ephemeral port of 127.0.0.1 and serve ``script``.

        ``tls``: over TLS, with a self-signed certificate no CA vouches for.
        """
        self.script = script
        self.arrivals: list[Arrival] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._threads: list[threading.Thread] = []
        self._connections: list[socket.socket] = []
        self._tls = _self_signed() if tls else None
        port = self._listener.getsockname()[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
        self._spawn(self._accept)

    @property
    def connections(self) -> int:
        """How many connections the server accepted."""
        with self._lock:
            return len(self._connections)

    def _spawn(self, target: Callable[..., None], *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def close(self) -> None:
        """Stop accepting, drop every connection and wait for the threads."""
        self._stop.set()
        for thread in self._threads[:1]:
            thread.join(timeout=5)
        self._listener.close()
        with self._lock:
            for connection in self._connections:
                # shutdown wakes a thread blocked reading it, where close alone would not.
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)
                connection.close()
        for thread in self._threads:
            thread.join(timeout=5)

    def _accept(self) -> None:
        while not self._stop.is_set():
            # Polled: closing a socket does not wake a thread blocked in accept().
            readable, _, _ = select.select([self._listener], [], [], 0.01)
            if not readable:
                continue
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self._connections.append(connection)
            self._spawn(self._serve, connection)

    def _serve(self, connection: socket.socket) -> None:
        if self._tls is not None:
            connection.settimeout(5)
            try:
                connection = self._tls.wrap_socket(connection, server_side=True)
            except OSError:
                connection.close()
                return
            connection.settimeout(None)
        reader = connection.makefile("rb")
        try:
            while not self._stop.is_set():
                arrival = _read_request(reader)
                if arrival is None:
                    return
                with self._lock:
                    index = len(self.arrivals)
                    self.arrivals.append(arrival)
                step = self.script[min(index, len(self.script) - 1)]
                if isinstance(step, Reset):
                    connection.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )
                    return
                if isinstance(step, Stall) and not self._stall(connection, step):
                    return
                if isinstance(step, CutBody):
                    fields = "".join(f"{n}: {v}\r\n" for n, v in step.headers)
                    connection.sendall(
                        f"HTTP/1.1 {step.status} Cut\r\n{fields}Content-Length: 10\r\n\r\nok".encode()
                    )
                    return
                if isinstance(step, Sse):
                    connection.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                        b"Transfer-Encoding: chunked\r\n\r\n"
                    )
                    for k, piece in enumerate(step.pieces):
                        if k and k == len(step.pieces) - 1:
                            time.sleep(step.pause)
                        connection.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                    if step.hold:
                        self._stall(connection, Stall(10))
                        return
                    if step.reset:
                        # The pieces reach the client first; the close then sends RST.
                        time.sleep(0.05)
                        connection.setsockopt(
                            socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                        )
                        return
                    if step.drop:
                        connection.shutdown(socket.SHUT_WR)
                        return
                    connection.sendall(b"0\r\n\r\n")
                    continue
                reply = step if isinstance(step, Reply) else Reply(200)
                head = [f"HTTP/1.1 {reply.status} Scripted"]
                head += [f"{name}: {value}" for name, value in reply.headers]
                head.append(f"Content-Length: {len(reply.body)}")
                connection.sendall(
                    ("\r\n".join(head) + "\r\n\r\n").encode() + reply.body
                )
                if isinstance(step, ReplyThenClose):
                    return
        except OSError:
            return
        finally:
            reader.close()
            connection.close()

    def _stall(self, connection: socket.socket, step: Stall) -> bool:
        """Wait; tell whether the client is still there."""
        deadline = time.monotonic() + step.seconds
        while time.monotonic() < deadline and not self._stop.is_set():
            readable, _, _ = select.select([connection], [], [], 0.01)
            if readable and connection.recv(1, socket.MSG_PEEK) == b"":
                return False
        return not self._stop.is_set()


def _self_signed() -> ssl.SSLContext:
    """Return a server context with a fresh self-signed certificate for 127.0.0.1."""
    with tempfile.TemporaryDirectory() as folder:
        key = f"{folder}/key.pem"
        cert = f"{folder}/cert.pem"
        subprocess.run(
            [
                *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes"),
                *("-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1"),
                *("-addext", "subjectAltName=IP:127.0.0.1"),
            ],
            check=True,
            capture_output=True,
        )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
    return context


def _read_request(reader: io.BufferedReader) -> Arrival | None:
    """Read one request (Content-Length or chunked body); None at the end of the stream."""
    readline = reader.readline
    read = reader.read
    line = readline()
    if not line:
        return None
    method, target, _ = line.decode("latin-1").split(" ", 2)
    headers: dict[str, str] = {}
    while (line := readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while size := int(readline().split(b";")[0], 16):
            body += read(size)
            readline()
        while readline() not in (b"\r\n", b"\n", b""):
            pass
    else:
        body = read(int(headers.get("content-length", "0")))
    return Arrival(method, target, headers, body)


# The API the tests classify against, and its policy.

IDEMPOTENT = ReplayClass.IDEMPOTENT
KEYED = ReplayClass.KEYED
NON_REPLAYABLE = ReplayClass.NON_REPLAYABLE
NO_RETRY = ReplayClass.NO_RETRY


def _op(
    method: str,
    path: str,
    operation_id: str,
    replay_class: ReplayClass,
    idempotency_header: str | None = None,
    *,
    streaming: bool = False,
    resumable: bool = False,
) -> Operation:
    return Operation(
        method=method,
        route=path,
        path=path,
        operation_id=operation_id,
        replay_class=replay_class,
        idempotency_header=idempotency_header,
        streaming=streaming,
        resumable=resumable,
    )


TABLE = OperationTable(
    base_path="/v1",
    operations=(
        _op("POST", "/items", "createItem", NON_REPLAYABLE),
        _op("GET", "/items/{id}", "getItem", IDEMPOTENT),
        _op("PUT", "/items/{id}", "replaceItem", IDEMPOTENT),
        _op("POST", "/items/{id}/copies", "copyItem", KEYED, "Idempotency-Key"),
        _op("POST", "/items/{id}/run", "runItem", NO_RETRY),
        _op(
            "GET",
            "/items/{id}/events",
            "watchItem",
            IDEMPOTENT,
            streaming=True,
            resumable=True,
        ),
        _op("GET", "/items/{id}/feed", "feedItem", IDEMPOTENT, streaming=True),
        _op(
            "POST",
            "/items/{id}/runs",
            "runStream",
            NON_REPLAYABLE,
            streaming=True,
            resumable=True,
        ),
    ),
)

POLICY = RetryPolicy(
    max_retries=3,
    initial_backoff_ms=1,
    max_backoff_ms=4,
    jitter=Jitter.NONE,
    retryable_statuses=(500, 502, 503, 504),
    rejected_statuses=(429,),
    budget_capacity=100,
    budget_retry_cost=5,
    budget_timeout_cost=10,
    budget_success_refund=1,
)


class Tables:
    """What a generated package offers the adapter: its policy and its classifier."""

    def __init__(self, policy: RetryPolicy = POLICY) -> None:
        """Offer ``policy`` as the spec's."""
        self.DEFAULT_RETRY_POLICY = policy

    def classifier(
        self,
        base: str | None = None,
        unknown_operation_class: UnknownOperationClass = (
            UnknownOperationClass.METHOD_DEFAULT
        ),
    ) -> Classifier:
        return TABLE.classifier(base, unknown_operation_class)


# Every transport loads the CA bundle into a new SSL context (tens of milliseconds); the tests
# talk plain HTTP, so they share one.
TLS = httpx.create_ssl_context()

UUID_V4 = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
)


@dataclass
class Events:
    """What the callbacks received."""

    retries: list[RetryEvent] = field(default_factory=list)
    finishes: list[FinishEvent] = field(default_factory=list)

    @property
    def finish(self) -> FinishEvent:
        assert len(self.finishes) == 1, self.finishes
        return self.finishes[0]

    def reasons(self) -> list[tuple[int, str, int]]:
        return [(e.attempt, e.reason.value, e.delay_ms) for e in self.retries]


class Recording(httpx.BaseTransport):
    """The real transport, keeping every response it returned (to see them closed)."""

    def __init__(self) -> None:
        """Wrap a new ``httpx.HTTPTransport``."""
        self.inner = httpx.HTTPTransport(verify=TLS)
        self.responses: list[httpx.Response] = []
        self.closed = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        self.responses.append(response)
        return response

    def close(self) -> None:
        self.closed = True
        self.inner.close()


class AsyncRecording(httpx.AsyncBaseTransport):
    """``Recording`` for asyncio."""

    def __init__(self) -> None:
        """Wrap a new ``httpx.AsyncHTTPTransport``."""
        self.inner = httpx.AsyncHTTPTransport(verify=TLS)
        self.responses: list[httpx.Response] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        self.responses.append(response)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class TlsServer:
    """A TLS listener on 127.0.0.1 with a self-signed certificate no CA vouches for.

    It counts the handshakes clients begin; none completes for a client that
    verifies, or that insists on TLS 1.3 when the server offers at most 1.2.
    """

    def __init__(self, *, maximum: ssl.TLSVersion | None = None) -> None:
        """Make a key and certificate with the openssl command, then listen."""
        self._folder = tempfile.TemporaryDirectory()
        key = f"{self._folder.name}/key.pem"
        cert = f"{self._folder.name}/cert.pem"
        subprocess.run(
            [
                *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes"),
                *("-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1"),
                *("-addext", "subjectAltName=IP:127.0.0.1"),
            ],
            check=True,
            capture_output=True,
        )
        self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._context.load_cert_chain(cert, key)
        if maximum is not None:
            self._context.maximum_version = maximum
        self.handshakes = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"https://127.0.0.1:{self._listener.getsockname()[1]}"
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            self.handshakes += 1
            connection.settimeout(5)
            with contextlib.suppress(OSError):
                self._context.wrap_socket(connection, server_side=True).close()
            connection.close()

    def close(self) -> None:
        """Stop listening and remove the key."""
        self._listener.close()
        self._thread.join(timeout=5)
        self._folder.cleanup()


# The HTTP/2 server (h2c, prior knowledge), for the refusals of RFC 9113 section 8.7.


@dataclass(frozen=True)
class Refuse:
    """Reset the request's stream with REFUSED_STREAM: provably not processed."""


@dataclass(frozen=True)
class GoAway:
    """Send GOAWAY and close: below the request's stream (unprocessed) or at it (maybe not)."""

    processed: bool = False


@dataclass(frozen=True)
class ResetStream:
    """Reset the request's stream with PROTOCOL_ERROR after reading it: maybe processed."""


H2Step = Reply | Refuse | GoAway | ResetStream | ReplyThenClose


class H2Server:
    """A scripted HTTP/2 server: request ``n`` (refused or not) gets ``script[min(n, len - 1)]``.

    ``arrivals`` counts the requests it took (answered, reset after reading, or
    at or below a GOAWAY's last stream id); ``refused`` those it provably left
    unprocessed.
    """

    def __init__(self, *script: H2Step) -> None:
        """Listen on an ephemeral port of 127.0.0.1 and serve ``script``."""
        self.script = script
        self.arrivals: list[Arrival] = []
        self.refused = 0
        self.connections = 0
        self._requests = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._open: list[socket.socket] = []
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def close(self) -> None:
        """Stop listening, drop every connection and wait for the threads."""
        # shutdown wakes the threads blocked in accept() and recv(), where close would not.
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            for connection in self._open:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(timeout=5)

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
                self._open.append(connection)
            thread = threading.Thread(
                target=self._serve, args=(connection,), daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def _serve(self, connection: socket.socket) -> None:
        config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
        state = h2.connection.H2Connection(config=config)
        state.initiate_connection()
        requests: dict[int, tuple[dict[str, str], bytes]] = {}
        # The client may go first (a reset, a closed pool): that ends the connection, no more.
        with connection, contextlib.suppress(OSError):
            connection.sendall(state.data_to_send())
            closing = False
            while data := connection.recv(65536):
                if closing:
                    continue
                for event in state.receive_data(data):
                    if isinstance(event, h2.events.RequestReceived):
                        headers = {str(k): str(v) for k, v in event.headers or ()}
                        requests[event.stream_id] = (headers, b"")
                    elif isinstance(event, h2.events.DataReceived):
                        headers, body = requests[event.stream_id]
                        requests[event.stream_id] = (
                            headers,
                            body + (event.data or b""),
                        )
                        state.acknowledge_received_data(
                            event.flow_controlled_length or 0, event.stream_id
                        )
                    elif isinstance(event, h2.events.StreamEnded):
                        headers, body = requests.pop(event.stream_id)
                        closing = self._answer(state, event.stream_id, headers, body)
                        if closing:
                            break
                connection.sendall(state.data_to_send())
                if closing:
                    # The GOAWAY is out: no more writes, and read until the client goes, so
                    # that no reset overtakes the frame.
                    connection.shutdown(socket.SHUT_WR)

    def _answer(
        self,
        state: h2.connection.H2Connection,
        stream_id: int,
        headers: dict[str, str],
        body: bytes,
    ) -> bool:
        """Apply the next step to a request read in full; tell whether the connection ends."""
        with self._lock:
            step = self.script[min(self._requests, len(self.script) - 1)]
            self._requests += 1
            arrival = Arrival(headers[":method"], headers[":path"], headers, body)
            if isinstance(step, Refuse) or (
                isinstance(step, GoAway) and not step.processed
            ):
                self.refused += 1
            else:
                self.arrivals.append(arrival)
        if isinstance(step, Reply | ReplyThenClose):
            reply = step if isinstance(step, Reply) else Reply(200)
            state.send_headers(
                stream_id,
                [(":status", str(reply.status)), *reply.headers],
            )
            state.send_data(stream_id, reply.body, end_stream=True)
            # Then a bare FIN, no GOAWAY: the connection dies idle in the client's pool.
            return isinstance(step, ReplyThenClose)
        if isinstance(step, Refuse | ResetStream):
            code = h2.errors.ErrorCodes
            state.reset_stream(
                stream_id,
                (
                    code.REFUSED_STREAM
                    if isinstance(step, Refuse)
                    else code.PROTOCOL_ERROR
                ),
            )
            return False
        # Client streams are odd: stream_id - 2 is the one before this request's (0, none,
        # before stream 1).
        state.close_connection(
            last_stream_id=stream_id if step.processed else max(stream_id - 2, 0)
        )
        return True


class Unanswered:
    """A port whose connects stall: a listener whose accept queue one connection fills.

    Linux drops the SYNs a full accept queue gets, so the client waits in connect().
    """

    def __init__(self) -> None:
        """Listen with a backlog of 0 and queue one connection that is never accepted."""
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=0)
        port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self._queued = socket.create_connection(("127.0.0.1", port), timeout=5)

    def close(self) -> None:
        """Close the queued connection and the listener."""
        self._queued.close()
        self._listener.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# The sync transport.


class RetryTransportTest(unittest.TestCase):
    def serve(self, *script: Step) -> Server:
        server = Server(*script)
        self.addCleanup(server.close)
        return server

    def client(
        self,
        server_url: str,
        events: Events,
        transport: httpx.BaseTransport | None = None,
        **options: object,
    ) -> tuple[httpx.Client, RetryTransport]:
        adapter = RetryTransport(
            httpx.HTTPTransport(verify=TLS) if transport is None else transport,
            tables=Tables(),
            base_url=server_url + "/v1",
            on_retry=events.retries.append,
            on_finish=events.finishes.append,
            **options,  # type: ignore[arg-type]
        )
        client = httpx.Client(transport=adapter, base_url=server_url + "/v1")
        self.addCleanup(client.close)
        return client, adapter

    def test_retries_a_retryable_status_until_success(self) -> None:
        server = self.serve(Reply(503), Reply(503), Reply(200, body=b"done"))
        events = Events()
        client, adapter = self.client(server.url, events)
        response = client.get("/items/7")
        self.assertEqual((response.status_code, response.text), (200, "done"))
        self.assertEqual(len(server.arrivals), 3)
        self.assertEqual(
            events.reasons(), [(1, "retryable_status", 1), (2, "retryable_status", 2)]
        )
        self.assertEqual(
            events.finish,
            FinishEvent(
                attempts=3,
                reason=DecisionReason.STATUS_NOT_RETRYABLE,
                outcome="status",
                status=200,
                timed_out=False,
                redirects=0,
                method="GET",
                path_template="/items/{id}",
                operation_id="getItem",
                total_delay_ms=3,
            ),
        )
        retry = events.retries[0]
        self.assertEqual(
            (retry.method, retry.path_template, retry.operation_id),
            ("GET", "/items/{id}", "getItem"),
        )
        # Two retries took 10 tokens; the success gave the last one's 5 back.
        self.assertEqual(adapter.budget_tokens, 95)

    def test_returns_the_last_response_unread_when_exhausted(self) -> None:
        server = self.serve(Reply(503, body=b"busy"))
        events = Events()
        client, adapter = self.client(server.url, events)
        with client.stream("GET", "/items/7") as response:
            self.assertEqual(response.status_code, 503)
            self.assertFalse(response.is_stream_consumed)
            self.assertEqual(response.read(), b"busy")
        self.assertEqual(len(server.arrivals), 4)
        self.assertEqual(events.finish.reason, DecisionReason.EXHAUSTED)
        self.assertEqual(events.finish.attempts, 4)
        self.assertEqual(adapter.budget_tokens, 85)

    def test_releases_every_discarded_response(self) -> None:
        server = self.serve(Reply(503), Reply(502), Reply(200))
        recording = Recording()
        client, _ = self.client(server.url, Events(), recording)
        with client.stream("GET", "/items/7") as response:
            self.assertEqual(len(recording.responses), 3)
            self.assertEqual(
                [r.is_closed for r in recording.responses], [True, True, False]
            )
            self.assertIs(response, recording.responses[-1])

    def test_a_non_replayable_request_is_not_retried(self) -> None:
        server = self.serve(Reply(503), Reply(201))
        events = Events()
        client, _ = self.client(server.url, events)
        response = client.post("/items", content=b"{}")
        self.assertEqual(response.status_code, 503)
        self.assertEqual(len(server.arrivals), 1)
        self.assertEqual(events.finish.reason, DecisionReason.NOT_REPLAYABLE)
        self.assertEqual(events.retries, [])

    def test_a_no_retry_operation_is_not_retried(self) -> None:
        server = self.serve(Reset(), Reply(200))
        events = Events()
        client, _ = self.client(server.url, events)
        with self.assertRaises(httpx.TransportError):
            client.post("/items/7/run", content=b"ls")
        self.assertEqual(len(server.arrivals), 1)
        self.assertEqual(events.finish.reason, DecisionReason.NO_RETRY_OPERATION)
        self.assertEqual(events.finish.outcome, "transport")

    def test_a_keyed_request_gets_one_minted_key_for_every_attempt(self) -> None:
        server = self.serve(Reset(), Reply(201))
        events = Events()
        client, _ = self.client(server.url, events)
        response = client.post("/items/7/copies", content=b"{}")
        self.assertEqual(response.status_code, 201)
        keys = [a.headers.get("idempotency-key") for a in server.arrivals]
        self.assertEqual(len(keys), 2)
        self.assertIsNotNone(keys[0])
        self.assertRegex(str(keys[0]), UUID_V4)
        self.assertEqual(str(uuid.UUID(str(keys[0]))), keys[0])
        self.assertEqual(keys[0], keys[1])
        self.assertEqual(events.reasons(), [(1, "transport_failure", 1)])

    def test_keys_differ_between_requests(self) -> None:
        server = self.serve(Reply(201))
        client, _ = self.client(server.url, Events())
        client.post("/items/7/copies", content=b"{}")
        client.post("/items/7/copies", content=b"{}")
        keys = {a.headers["idempotency-key"] for a in server.arrivals}
        self.assertEqual(len(keys), 2)

    def test_a_callers_key_is_kept_in_any_case(self) -> None:
        for header in ("Idempotency-Key", "idempotency-KEY"):
            with self.subTest(header=header):
                server = self.serve(Reset(), Reply(201))
                client, _ = self.client(server.url, Events())
                response = client.post(
                    "/items/7/copies", content=b"{}", headers={header: "mine-1"}
                )
                self.assertEqual(response.status_code, 201)
                self.assertEqual(
                    [a.headers["idempotency-key"] for a in server.arrivals],
                    ["mine-1", "mine-1"],
                )

    def test_a_blank_key_is_replaced(self) -> None:
        server = self.serve(Reply(201))
        client, _ = self.client(server.url, Events())
        client.post(
            "/items/7/copies", content=b"{}", headers={"Idempotency-Key": " \t"}
        )
        self.assertRegex(server.arrivals[0].headers["idempotency-key"], UUID_V4)

    def test_minting_off_sends_no_key_and_does_not_replay(self) -> None:
        server = self.serve(Reset(), Reply(201))
        events = Events()
        client, _ = self.client(server.url, events, mint_idempotency_keys=False)
        with self.assertRaises(httpx.TransportError):
            client.post("/items/7/copies", content=b"{}")
        self.assertEqual(len(server.arrivals), 1)
        self.assertNotIn("idempotency-key", server.arrivals[0].headers)
        self.assertEqual(events.finish.reason, DecisionReason.NOT_REPLAYABLE)

    def test_a_create_after_the_server_closed_an_idle_connection_arrives_once(
        self,
    ) -> None:
        # httpcore checks an idle HTTP/1.1 connection's socket before reusing it and opens a
        # new one: nothing the adapter turns off is needed here, and nothing is lost.
        server = self.serve(ReplyThenClose(), Reply(201))
        events = Events()
        client, _ = self.client(server.url, events)
        self.assertEqual(client.get("/items/7").status_code, 200)
        time.sleep(0.2)
        events.finishes.clear()
        self.assertEqual(client.post("/items", content=b"{}").status_code, 201)
        self.assertEqual([a.method for a in server.arrivals], ["GET", "POST"])
        self.assertEqual((events.retries, events.finish.attempts), ([], 1))

    def test_a_transport_failure_raises_the_last_attempts_own_error(self) -> None:
        server = self.serve(Reset())
        events = Events()
        client, _ = self.client(server.url, events)
        with self.assertRaises(httpx.TransportError) as raised:
            client.delete("/items/7")
        self.assertNotIsInstance(raised.exception, (httpx.ConnectError, AttemptTimeout))
        self.assertIsNotNone(raised.exception.__cause__)  # httpcore's, kept by httpx
        self.assertEqual(len(server.arrivals), 4)
        self.assertEqual([r for _, r, _ in events.reasons()], ["transport_failure"] * 3)
        finish = events.finish
        self.assertEqual(
            (finish.reason, finish.outcome, finish.status, finish.attempts),
            (DecisionReason.EXHAUSTED, "transport", None, 4),
        )

    def test_a_refused_connection_is_retried_even_for_a_post(self) -> None:
        url = f"http://127.0.0.1:{_closed_port()}"
        events = Events()
        client, _ = self.client(url, events)
        with self.assertRaises(httpx.ConnectError):
            client.post("/items", content=b"{}")
        self.assertEqual(
            events.reasons(),
            [
                (1, "connect_failure", 1),
                (2, "connect_failure", 2),
                (3, "connect_failure", 4),
            ],
        )
        self.assertEqual(events.finish.outcome, "connect")

    def test_a_stream_body_gets_one_attempt_and_leaves_the_budget(self) -> None:
        server = self.serve(Reply(429, (("Retry-After", "0"),)), Reply(201))
        events = Events()
        client, adapter = self.client(server.url, events)

        def body() -> Iterator[bytes]:
            yield b'{"streamed":'
            yield b"true}"

        response = client.post("/items", content=body())
        self.assertEqual(response.status_code, 429)
        self.assertEqual([a.body for a in server.arrivals], [b'{"streamed":true}'])
        self.assertEqual(events.finish.reason, BODY_NOT_REPLAYABLE)
        self.assertEqual(events.retries, [])
        self.assertEqual(adapter.budget_tokens, 100)

    def test_a_read_body_is_replayable(self) -> None:
        server = self.serve(Reset(), Reply(200))
        client, _ = self.client(server.url, Events())
        request = client.build_request("PUT", "/items/7", content=iter([b"a", b"b"]))
        request.read()
        self.assertEqual(client.send(request).status_code, 200)
        self.assertEqual([a.body for a in server.arrivals], [b"ab", b"ab"])

    def test_the_server_delay_is_waited(self) -> None:
        server = self.serve(Reply(503, (("retry-after-ms", "60"),)), Reply(200))
        events = Events()
        client, _ = self.client(server.url, events)
        started = time.monotonic()
        self.assertEqual(client.get("/items/7").status_code, 200)
        self.assertGreaterEqual(time.monotonic() - started, 0.06)
        self.assertEqual(events.reasons(), [(1, "retryable_status", 60)])

    def test_the_server_directive_is_read(self) -> None:
        server = self.serve(Reply(503, (("X-Should-Retry", "false"),)), Reply(200))
        events = Events()
        client, _ = self.client(server.url, events)
        self.assertEqual(client.get("/items/7").status_code, 503)
        self.assertEqual(events.finish.reason, DecisionReason.SERVER_SAID_NO)

    def test_a_directive_on_a_status_no_list_names_is_still_decided(self) -> None:
        # The status alone would need no decision; the server's "true" makes it a retry (R9).
        server = self.serve(Reply(404, (("x-should-retry", "true"),)), Reply(200))
        events = Events()
        client, _ = self.client(server.url, events)
        self.assertEqual(client.get("/items/7").status_code, 200)
        self.assertEqual(events.reasons(), [(1, "server_said_yes", 1)])

    def test_the_attempt_timeout_ends_an_attempt_as_a_timed_out_transport_failure(
        self,
    ) -> None:
        server = self.serve(Stall(5), Reply(200))
        events = Events()
        client, adapter = self.client(server.url, events, attempt_timeout=0.1)
        started = time.monotonic()
        response = client.get("/items/7")
        self.assertLess(time.monotonic() - started, 2)
        self.assertEqual(response.status_code, 200)
        self.assertEqual(events.reasons(), [(1, "transport_failure", 1)])
        # The timeout cost 10, given back by the success.
        self.assertEqual(adapter.budget_tokens, 100)
        # The client's own timeouts are back in place for the body and the next request.
        self.assertEqual(response.request.extensions["timeout"]["read"], 5.0)

    def test_an_attempt_timeout_while_connecting_is_a_connect_failure(self) -> None:
        port = Unanswered()
        self.addCleanup(port.close)
        events = Events()
        client, _ = self.client(port.url, events, attempt_timeout=0.05)
        with self.assertRaises(httpx.ConnectTimeout):
            client.post("/items", content=b"{}")
        self.assertEqual([r for _, r, _ in events.reasons()], ["connect_failure"] * 3)
        self.assertEqual(
            (events.finish.outcome, events.finish.timed_out, events.finish.attempts),
            ("connect", False, 4),
        )

    def test_a_timeout_on_the_last_attempt_raises_httpx_timeout(self) -> None:
        server = self.serve(Stall(5))
        events = Events()
        # Long enough for a busy machine's server thread to read the request first.
        client, _ = self.client(server.url, events, attempt_timeout=0.5)
        with self.assertRaises(httpx.ReadTimeout):
            client.post("/items", content=b"{}")
        self.assertEqual(len(server.arrivals), 1)
        finish = events.finish
        self.assertEqual(
            (finish.reason, finish.outcome, finish.timed_out),
            (DecisionReason.NOT_REPLAYABLE, "transport", True),
        )

    def test_the_budget_is_one_cell_shared_by_threads(self) -> None:
        server = self.serve(Reply(503))
        events = Events()
        policy = dataclasses.replace(POLICY, budget_capacity=50)
        adapter = RetryTransport(
            tables=Tables(policy),
            on_retry=events.retries.append,
            on_finish=events.finishes.append,
        )
        client = httpx.Client(transport=adapter, base_url=server.url + "/v1")
        self.addCleanup(client.close)

        def requests() -> None:
            for _ in range(3):
                client.get("/items/7")

        threads = [threading.Thread(target=requests) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        # 50 tokens pay for exactly 10 retries of 5, whoever asks; failures refund nothing.
        self.assertEqual(len(events.retries), 10)
        self.assertEqual(adapter.budget_tokens, 0)
        self.assertEqual(len(server.arrivals), 18 + 10)
        reasons = {f.reason for f in events.finishes}
        self.assertIn(DecisionReason.BUDGET_EXHAUSTED, reasons)

    def test_the_base_url_places_the_api(self) -> None:
        server = self.serve(Reply(503), Reply(200))
        events = Events()
        adapter = RetryTransport(
            tables=Tables(),
            base_url=server.url + "/gateway/v2/",
            on_retry=events.retries.append,
            on_finish=events.finishes.append,
        )
        with httpx.Client(transport=adapter) as client:
            client.get(server.url + "/gateway/v2/items/7?full=1")
        self.assertEqual(events.finish.operation_id, "getItem")
        self.assertEqual(server.arrivals[0].target, "/gateway/v2/items/7?full=1")

    def test_an_unknown_request_follows_its_method(self) -> None:
        server = self.serve(Reply(503), Reply(200))
        events = Events()
        client, _ = self.client(server.url, events)
        self.assertEqual(client.get("/elsewhere").status_code, 200)
        self.assertEqual(
            (
                events.finish.method,
                events.finish.path_template,
                events.finish.operation_id,
            ),
            ("GET", None, None),
        )
        self.assertEqual(events.retries[0].method, "GET")

    def test_callback_errors_propagate_and_release_the_response(self) -> None:
        server = self.serve(Reply(503))
        recording = Recording()

        def fail(event: RetryEvent) -> None:
            raise RuntimeError(event.reason.value)

        adapter = RetryTransport(recording, tables=Tables(), on_retry=fail)
        with (
            httpx.Client(transport=adapter, base_url=server.url + "/v1") as client,
            self.assertRaisesRegex(RuntimeError, "retryable_status"),
        ):
            client.get("/items/7")
        self.assertTrue(recording.responses[0].is_closed)

    def test_a_raising_on_retry_ends_the_request_with_one_finish_event(self) -> None:
        server = self.serve(Reply(503))
        events = Events()
        recording = Recording()

        def fail(event: RetryEvent) -> None:
            events.retries.append(event)
            raise RuntimeError("on_retry")

        adapter = RetryTransport(
            recording,
            tables=Tables(),
            policy=RetryPolicy(budget_capacity=10, budget_retry_cost=1),
            on_retry=fail,
            on_finish=events.finishes.append,
        )
        with (
            httpx.Client(transport=adapter, base_url=server.url + "/v1") as client,
            self.assertRaisesRegex(RuntimeError, "on_retry"),
        ):
            client.get("/items/7")
        # One attempt sent, no second one; the finish event says so, once.
        self.assertEqual(len(server.arrivals), 1)
        self.assertEqual(len(events.finishes), 1)
        finish = events.finishes[0]
        self.assertEqual(
            (finish.attempts, finish.reason, finish.outcome, finish.status),
            (1, DecisionReason.RETRYABLE_STATUS, "status", 503),
        )
        self.assertTrue(recording.responses[0].is_closed)

    def test_a_request_to_another_origin_passes_through(self) -> None:
        server = self.serve(Reply(503))
        other = self.serve(Reply(503))
        events = Events()
        client, adapter = self.client(server.url, events)
        tokens = adapter.budget_tokens
        # A keyed copy on the server's origin would get a key and retries here; another
        # origin is not the API the tables describe.
        response = client.post(other.url + "/v1/items/7/copies", content=b"{}")
        self.assertEqual(response.status_code, 503)
        self.assertEqual(len(other.arrivals), 1)
        self.assertEqual(server.arrivals, [])
        self.assertEqual(events.retries, [])
        self.assertEqual(adapter.budget_tokens, tokens)
        self.assertEqual(
            events.finishes,
            [
                FinishEvent(
                    attempts=1,
                    reason=FOREIGN_ORIGIN,
                    outcome="status",
                    status=503,
                    timed_out=False,
                    redirects=0,
                    method="POST",
                    path_template=None,
                    operation_id=None,
                )
            ],
        )
        self.assertFalse(
            any(name.lower() == "idempotency-key" for name in other.arrivals[0].headers)
        )

    def test_an_untrusted_certificate_is_not_retried(self) -> None:
        server = TlsServer()
        self.addCleanup(server.close)
        events = Events()
        client, _ = self.client(server.url, events)
        # A GET on a failed connect is retried; a refused certificate would be refused again.
        with self.assertRaises(httpx.ConnectError) as raised:
            client.get("/items/7")
        # The client's own error, its cause chain kept.
        self.assertIn("CERTIFICATE_VERIFY_FAILED", str(raised.exception))
        self.assertEqual(server.handshakes, 1)
        self.assertEqual(
            (events.finish.attempts, events.finish.reason, events.finish.outcome),
            (1, DecisionReason.CERTIFICATE_FAILURE, "certificate"),
        )

    def test_another_handshake_failure_stays_connect(self) -> None:
        server = TlsServer(maximum=ssl.TLSVersion.TLSv1_2)
        self.addCleanup(server.close)
        context = ssl.create_default_context()
        context.minimum_version = ssl.TLSVersion.TLSv1_3
        events = Events()
        client, _ = self.client(server.url, events, httpx.HTTPTransport(verify=context))
        # No common protocol version: nothing was sent, the policy retries the connect.
        with self.assertRaises(httpx.ConnectError):
            client.get("/items/7")
        self.assertEqual(events.finish.outcome, "connect")
        self.assertEqual(events.finish.attempts, server.handshakes)
        self.assertGreater(server.handshakes, 1)

    # HTTP/2 (h2c): the refusals RFC 9113 section 8.7 says were not processed.

    def serve_h2(self, *script: H2Step) -> tuple[H2Server, Events, httpx.Client]:
        server = H2Server(*script)
        self.addCleanup(server.close)
        events = Events()
        client, _ = self.client(
            server.url, events, httpx.HTTPTransport(http1=False, http2=True)
        )
        return server, events, client

    def test_a_refused_stream_is_retried_as_connect(self) -> None:
        # Not processed, so even a non-replayable create is sent again, as after a refused
        # connection; httpcore raises it as any protocol error.
        server, events, client = self.serve_h2(Refuse(), Reply(201))
        response = client.post("/items", content=b"{}")
        self.assertEqual((response.status_code, response.http_version), (201, "HTTP/2"))
        self.assertEqual(
            (server.refused, [a.body for a in server.arrivals]), (1, [b"{}"])
        )
        self.assertEqual(events.reasons(), [(1, "connect_failure", 1)])
        self.assertEqual((events.finish.attempts, events.finish.outcome), (2, "status"))

    def test_a_goaway_below_the_stream_is_retried_as_connect(self) -> None:
        # GOAWAY with last stream id 0 on the request's own connection (httpcore raises it
        # rather than resending): no stream of that connection was processed.
        server, events, client = self.serve_h2(GoAway(), Reply(201))
        response = client.post("/items", content=b"{}")
        self.assertEqual(response.status_code, 201)
        self.assertEqual((server.refused, len(server.arrivals)), (1, 1))
        self.assertEqual(server.connections, 2)
        self.assertEqual(events.reasons(), [(1, "connect_failure", 1)])
        self.assertEqual(events.finish.attempts, 2)

    def test_httpcore_resends_a_stream_above_a_goaways_last_id_itself(self) -> None:
        # A resend below the adapter, and a safe one: the GOAWAY names the warm-up's stream as
        # the last processed, so httpcore sends the create again on a new connection.
        server, events, client = self.serve_h2(Reply(200), GoAway(), Reply(201))
        self.assertEqual(client.get("/items/7").status_code, 200)
        events.finishes.clear()
        response = client.post("/items", content=b"{}")
        self.assertEqual(response.status_code, 201)
        self.assertEqual((server.refused, len(server.arrivals)), (1, 2))
        self.assertEqual(server.connections, 2)
        self.assertEqual((events.retries, events.finish.attempts), ([], 1))

    def test_a_dead_idle_http2_connection_is_not_proof_of_an_unsent_request(
        self,
    ) -> None:
        # httpcore does not check an idle HTTP/2 connection before reusing it: the create is
        # written onto a connection the server closed without GOAWAY. Without a GOAWAY nothing
        # proves it unprocessed, so it is not sent again; a GET is.
        server, events, client = self.serve_h2(ReplyThenClose(), Reply(201))
        self.assertEqual(client.get("/items/7").status_code, 200)
        time.sleep(0.2)
        events.finishes.clear()
        with self.assertRaises(httpx.TransportError) as raised:
            client.post("/items", content=b"{}")
        self.assertNotIsInstance(raised.exception, httpx.ConnectError)
        self.assertEqual(
            (events.finish.reason, events.finish.outcome, events.finish.attempts),
            (DecisionReason.NOT_REPLAYABLE, "transport", 1),
        )
        self.assertEqual([a.method for a in server.arrivals], ["GET"])
        server, events, client = self.serve_h2(ReplyThenClose(), Reply(200))
        self.assertEqual(client.get("/items/7").status_code, 200)
        time.sleep(0.2)
        events.finishes.clear()
        self.assertEqual(client.get("/items/8").status_code, 200)
        self.assertEqual(events.reasons(), [(1, "transport_failure", 1)])
        self.assertEqual(
            [a.target for a in server.arrivals], ["/v1/items/7", "/v1/items/8"]
        )

    def test_a_stream_reset_or_goaway_after_the_request_stays_transport(self) -> None:
        # PROTOCOL_ERROR after the request was read, or a GOAWAY whose last stream id is the
        # request's: it may have been processed, so a create is not sent again.
        for step in (ResetStream(), GoAway(processed=True)):
            with self.subTest(step=step):
                server, events, client = self.serve_h2(step, Reply(201))
                with self.assertRaises(httpx.RemoteProtocolError):
                    client.post("/items", content=b"{}")
                self.assertEqual((server.refused, len(server.arrivals)), (0, 1))
                self.assertEqual(
                    (events.finish.reason, events.finish.outcome),
                    (DecisionReason.NOT_REPLAYABLE, "transport"),
                )

    def test_options_are_checked(self) -> None:
        with self.assertRaises(TypeError):
            RetryTransport(tables=Tables(), policy={"max_retries": 1})  # type: ignore[arg-type]
        for bad in (0, -1.0, float("nan"), float("inf")):
            with self.subTest(attempt_timeout=bad), self.assertRaises(ValueError):
                RetryTransport(tables=Tables(), attempt_timeout=bad)

    def test_a_policy_replaces_the_specs(self) -> None:
        server = self.serve(Reply(503), Reply(200))
        events = Events()
        adapter = RetryTransport(
            tables=Tables(),
            policy=dataclasses.replace(POLICY, max_retries=0),
            on_finish=events.finishes.append,
        )
        with httpx.Client(transport=adapter, base_url=server.url + "/v1") as client:
            self.assertEqual(client.get("/items/7").status_code, 503)
        self.assertEqual(events.finish.reason, DecisionReason.EXHAUSTED)

    def test_close_closes_the_wrapped_transport(self) -> None:
        recording = Recording()
        with RetryTransport(recording, tables=Tables()):
            self.assertFalse(recording.closed)
        self.assertTrue(recording.closed)


# The asyncio transport.


class AsyncRetryTransportTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        # The test loop runs in debug mode, which logs every step slower than 0.1 s: httpx's
        # first request imports its asyncio backend, and the machine may be busy.
        asyncio.get_running_loop().slow_callback_duration = 2

    def serve(self, *script: Step) -> Server:
        server = Server(*script)
        self.addCleanup(server.close)
        return server

    async def client(
        self,
        server_url: str,
        events: Events,
        transport: httpx.AsyncBaseTransport | None = None,
        **options: object,
    ) -> tuple[httpx.AsyncClient, AsyncRetryTransport]:
        adapter = AsyncRetryTransport(
            httpx.AsyncHTTPTransport(verify=TLS) if transport is None else transport,
            tables=Tables(),
            base_url=server_url + "/v1",
            on_retry=events.retries.append,
            on_finish=events.finishes.append,
            **options,  # type: ignore[arg-type]
        )
        client = httpx.AsyncClient(transport=adapter, base_url=server_url + "/v1")
        self.addAsyncCleanup(client.aclose)
        return client, adapter

    async def test_retries_a_retryable_status_until_success(self) -> None:
        server = self.serve(Reply(503), Reset(), Reply(200, body=b"done"))
        events = Events()
        recording = AsyncRecording()
        client, adapter = await self.client(server.url, events, recording)
        response = await client.get("/items/7")
        self.assertEqual((response.status_code, response.text), (200, "done"))
        self.assertEqual(
            events.reasons(), [(1, "retryable_status", 1), (2, "transport_failure", 2)]
        )
        self.assertEqual(events.finish.attempts, 3)
        self.assertTrue(recording.responses[0].is_closed)
        self.assertEqual(adapter.budget_tokens, 95)

    async def test_cancelling_the_attempt_in_flight_aborts(self) -> None:
        server = self.serve(Stall(5), Reply(200))
        events = Events()
        client, _ = await self.client(server.url, events)
        task = asyncio.ensure_future(client.get("/items/7"))
        # Cancelled once the server holds the request (polled: the machine may be busy).
        deadline = time.monotonic() + 5
        while not server.arrivals and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        started = time.monotonic()
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task
        self.assertLess(time.monotonic() - started, 1)
        self.assertEqual(len(server.arrivals), 1)
        finish = events.finish
        self.assertEqual(
            (finish.reason, finish.outcome, finish.attempts, finish.status),
            (DecisionReason.ABORTED, "aborted", 1, None),
        )

    async def test_cancelling_the_sleep_aborts(self) -> None:
        server = self.serve(Reply(503, (("retry-after-ms", "2000"),)), Reply(200))
        events = Events()
        recording = AsyncRecording()
        client, _ = await self.client(server.url, events, recording)
        started = time.monotonic()
        with self.assertRaises(asyncio.TimeoutError):
            await asyncio.wait_for(client.get("/items/7"), 0.2)
        self.assertLess(time.monotonic() - started, 1)
        self.assertEqual(events.reasons(), [(1, "retryable_status", 2000)])
        self.assertEqual(
            (events.finish.reason, events.finish.attempts), (DecisionReason.ABORTED, 1)
        )
        self.assertTrue(recording.responses[0].is_closed)

    async def test_the_attempt_timeout_limits_the_whole_attempt(self) -> None:
        server = self.serve(Stall(5))
        events = Events()
        client, adapter = await self.client(
            server.url,
            events,
            policy=dataclasses.replace(POLICY, max_retries=1),
            # Long enough for a busy machine to connect and send, well below the stall.
            attempt_timeout=0.5,
        )
        with self.assertRaises(AttemptTimeout) as raised:
            await client.get("/items/7")
        self.assertIsInstance(raised.exception, httpx.TimeoutException)
        self.assertIsInstance(raised.exception.__cause__, TimeoutError)
        self.assertEqual(len(server.arrivals), 2)
        self.assertEqual(events.reasons(), [(1, "transport_failure", 1)])
        finish = events.finish
        self.assertEqual(
            (finish.reason, finish.outcome, finish.timed_out),
            (DecisionReason.EXHAUSTED, "transport", True),
        )
        self.assertEqual(adapter.budget_tokens, 90)

    async def test_an_attempt_timeout_while_connecting_is_a_connect_failure(
        self,
    ) -> None:
        # Nothing of the request was written, so even a create is sent again; the error is
        # both the adapter's AttemptTimeout and httpx's ConnectTimeout, as the sync one's.
        port = Unanswered()
        self.addCleanup(port.close)
        events = Events()
        client, _ = await self.client(port.url, events, attempt_timeout=0.05)
        with self.assertRaises(AttemptTimeout) as raised:
            await client.post("/items", content=b"{}")
        self.assertIsInstance(raised.exception, httpx.ConnectTimeout)
        self.assertEqual([r for _, r, _ in events.reasons()], ["connect_failure"] * 3)
        finish = events.finish
        self.assertEqual(
            (finish.reason, finish.outcome, finish.timed_out, finish.attempts),
            (DecisionReason.EXHAUSTED, "connect", False, 4),
        )

    async def test_a_raising_on_retry_ends_the_request_once(self) -> None:
        # After a response and after a failure: one attempt, one finish event, no sleep.
        server = self.serve(Reply(503))
        granted: list[RetryEvent] = []

        def fail(event: RetryEvent) -> None:
            granted.append(event)
            raise RuntimeError("on_retry")

        for url, reason, outcome in (
            (server.url, DecisionReason.RETRYABLE_STATUS, "status"),
            (
                f"http://127.0.0.1:{_closed_port()}",
                DecisionReason.CONNECT_FAILURE,
                "connect",
            ),
        ):
            events = Events()
            recording = AsyncRecording()

            adapter = AsyncRetryTransport(
                recording,
                tables=Tables(),
                on_retry=fail,
                on_finish=events.finishes.append,
            )
            async with httpx.AsyncClient(
                transport=adapter, base_url=url + "/v1"
            ) as client:
                with self.assertRaisesRegex(RuntimeError, "on_retry"):
                    await client.get("/items/7")
            self.assertEqual(
                [(f.attempts, f.reason, f.outcome) for f in events.finishes],
                [(1, reason, outcome)],
            )
            # The budget stays as decided: the granted retry's cost is spent.
            self.assertEqual(adapter.budget_tokens, 95)
            self.assertTrue(all(r.is_closed for r in recording.responses))
        self.assertEqual((len(granted), len(server.arrivals)), (2, 1))

    async def test_the_attempt_timeout_keeps_the_callers_trace(self) -> None:
        server = self.serve(Reply(200))
        seen: list[str] = []

        async def trace(name: str, info: dict[str, object]) -> None:
            seen.append(name)
            self.assertIsInstance(info, dict)

        client, _ = await self.client(server.url, Events(), attempt_timeout=5)
        request = client.build_request("GET", "/items/7", extensions={"trace": trace})
        response = await client.send(request)
        self.assertEqual(response.status_code, 200)
        self.assertIn("http11.send_request_headers.started", seen)
        self.assertIs(request.extensions["trace"], trace)

    async def test_a_stream_body_gets_one_attempt(self) -> None:
        server = self.serve(Reset(), Reply(200))
        events = Events()
        client, _ = await self.client(server.url, events)

        async def body() -> AsyncIterator[bytes]:
            yield b"streamed"

        with self.assertRaises(httpx.TransportError):
            await client.put("/items/7", content=body())
        self.assertEqual([a.body for a in server.arrivals], [b"streamed"])
        self.assertEqual(events.finish.reason, BODY_NOT_REPLAYABLE)
        self.assertEqual(events.finish.outcome, "transport")

    async def test_the_budget_is_one_cell_shared_by_tasks(self) -> None:
        server = self.serve(Reply(503))
        events = Events()
        client, adapter = await self.client(
            server.url, events, policy=dataclasses.replace(POLICY, budget_capacity=50)
        )
        await asyncio.gather(*(client.get("/items/7") for _ in range(12)))
        self.assertEqual(len(events.retries), 10)
        self.assertEqual(adapter.budget_tokens, 0)
        self.assertEqual(len(events.finishes), 12)

    async def test_a_refused_stream_is_retried_as_connect(self) -> None:
        server = H2Server(Refuse(), GoAway(), Reply(201))
        self.addCleanup(server.close)
        events = Events()
        client, _ = await self.client(
            server.url, events, httpx.AsyncHTTPTransport(http1=False, http2=True)
        )
        # The adapter sends the refused create again on the same connection, where a GOAWAY
        # naming stream 1 as the last processed makes httpcore resend it on a new one.
        response = await client.post("/items", content=b"{}")
        self.assertEqual((response.status_code, response.http_version), (201, "HTTP/2"))
        self.assertEqual((server.refused, len(server.arrivals)), (2, 1))
        self.assertEqual(server.connections, 2)
        self.assertEqual(events.reasons(), [(1, "connect_failure", 1)])
        self.assertEqual(events.finish.attempts, 2)


# Issue 20: one object for both clients, the client's settings kept, per-request control.


def _env(**values: str) -> contextlib.AbstractContextManager[object]:
    """Set the proxy variables (both cases, as urllib reads either) and clear the others."""
    names = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
    given = {name: values.get(name, "") for name in names}
    return unittest.mock.patch.dict(
        os.environ, {**given, **{name.upper(): v for name, v in given.items()}}
    )


class Hooked(httpx.BaseTransport):
    """The real transport, noting each attempt's number (P2) as the layer below reads it."""

    def __init__(self) -> None:
        """Wrap a new ``httpx.HTTPTransport``."""
        self.inner = httpx.HTTPTransport(verify=TLS)
        self.attempts: list[object] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.attempts.append(request.extensions.get(ATTEMPT_EXTENSION))
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


class Seekless(io.RawIOBase):
    """A readable file that cannot seek: httpx cannot rewind it."""

    def __init__(self, data: bytes) -> None:
        """Read ``data`` once."""
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        chunk = self._data.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)


class OneObjectTest(unittest.TestCase):
    """``RetryTransport`` serves a Client and an AsyncClient with the client's settings."""

    def serve(self, *script: Step, tls: bool = False) -> Server:
        server = Server(*script, tls=tls)
        self.addCleanup(server.close)
        return server

    def adapter(
        self, server_url: str, events: Events, **options: object
    ) -> RetryTransport:
        return RetryTransport(
            tables=Tables(),
            base_url=server_url + "/v1",
            on_retry=events.retries.append,
            on_finish=events.finishes.append,
            **options,  # type: ignore[arg-type]
        )

    def test_one_object_serves_a_client_and_an_async_client(self) -> None:
        # A generated SDK passes the same httpx_args to both of its clients.
        server = self.serve(Reply(503), Reply(200))
        events = Events()
        adapter = self.adapter(server.url, events)
        args = adapter.httpx_args()
        with httpx.Client(base_url=server.url + "/v1", **args) as client:
            self.assertEqual(client.get("/items/7").status_code, 200)

        async def call() -> int:
            async with httpx.AsyncClient(base_url=server.url + "/v1", **args) as client:
                return (await client.get("/items/7")).status_code

        self.assertEqual(asyncio.run(call()), 200)
        self.assertEqual(len(server.arrivals), 3)
        self.assertEqual([f.attempts for f in events.finishes], [2, 1])
        # One budget for both: one retry's 5 tokens taken and given back.
        self.assertEqual(adapter.budget_tokens, 100)

    def test_the_async_side_runs_on_trio(self) -> None:
        # anyio sleeps and times out on whichever loop runs: asyncio.sleep fails on trio.
        server = self.serve(Reply(503), Stall(5), Reply(200))
        events = Events()
        adapter = self.adapter(server.url, events, attempt_timeout=0.5)

        async def call() -> int:
            async with httpx.AsyncClient(
                base_url=server.url + "/v1", transport=adapter
            ) as client:
                return (await client.get("/items/7")).status_code

        self.assertEqual(trio.run(call), 200)
        self.assertEqual(
            events.reasons(), [(1, "retryable_status", 1), (2, "transport_failure", 2)]
        )
        self.assertEqual(events.finish.attempts, 3)

    def test_verify_false_stays_false(self) -> None:
        server = self.serve(Reply(200), tls=True)
        events = Events()
        with httpx.Client(
            transport=self.adapter(server.url, events, verify=False)
        ) as c:
            self.assertEqual(c.get(server.url + "/v1/items/7").status_code, 200)
        # The default verifies, as httpx's does: the certificate is refused, once.
        with (
            httpx.Client(transport=self.adapter(server.url, events)) as client,
            self.assertRaises(httpx.ConnectError),
        ):
            client.get(server.url + "/v1/items/7")
        self.assertEqual(events.finishes[-1].reason, DecisionReason.CERTIFICATE_FAILURE)

    def test_the_environments_proxy_is_used_as_httpx_would(self) -> None:
        proxy = self.serve(Reply(503), Reply(200, body=b"via proxy"))
        events = Events()
        with _env(http_proxy=proxy.url):
            adapter = self.adapter("http://api.invalid", events)
            with httpx.Client(transport=adapter) as client:
                response = client.get("http://api.invalid/v1/items/7")
        self.assertEqual(response.text, "via proxy")
        # Both attempts went to the proxy, in absolute form.
        self.assertEqual(
            [a.target for a in proxy.arrivals], ["http://api.invalid/v1/items/7"] * 2
        )
        self.assertEqual(events.finish.attempts, 2)

    def test_no_proxy_and_an_explicit_proxy(self) -> None:
        proxy = self.serve(Reply(200, body=b"proxy"))
        api = self.serve(Reply(200, body=b"direct"))
        with _env(http_proxy=proxy.url, no_proxy="127.0.0.1"):
            with httpx.Client(transport=self.adapter(api.url, Events())) as client:
                self.assertEqual(client.get(api.url + "/v1/items/7").text, "direct")
            # trust_env=False ignores the environment, as httpx's does.
            with _env(http_proxy=proxy.url):
                adapter = self.adapter(api.url, Events(), trust_env=False)
                with httpx.Client(transport=adapter) as client:
                    self.assertEqual(client.get(api.url + "/v1/items/7").text, "direct")
        adapter = self.adapter(api.url, Events(), proxy=proxy.url)
        with _env(), httpx.Client(transport=adapter) as client:
            self.assertEqual(client.get(api.url + "/v1/items/7").text, "proxy")
        self.assertEqual((len(proxy.arrivals), len(api.arrivals)), (1, 2))

    def test_limits_and_http2_reach_the_built_transports(self) -> None:
        server = self.serve(Reply(200))
        no_keepalive = httpx.Limits(max_keepalive_connections=0)
        with httpx.Client(
            transport=self.adapter(server.url, Events(), limits=no_keepalive)
        ) as client:
            client.get(server.url + "/v1/items/7")
            client.get(server.url + "/v1/items/7")
        self.assertEqual(server.connections, 2)
        h2 = H2Server(Reply(200))
        self.addCleanup(h2.close)
        adapter = self.adapter(h2.url, Events(), http1=False, http2=True)
        with httpx.Client(transport=adapter) as client:
            response = client.get(h2.url + "/v1/items/7")
        self.assertEqual(response.http_version, "HTTP/2")

    def test_multipart_with_seekable_files_is_replayed(self) -> None:
        server = self.serve(Reset(), Reply(200))
        events = Events()
        with httpx.Client(transport=self.adapter(server.url, events)) as client:
            response = client.put(
                server.url + "/v1/items/7",
                data={"name": "x"},
                files={"file": ("a.txt", io.BytesIO(b"file bytes"))},
            )
        self.assertEqual(response.status_code, 200)
        self.assertEqual(len(server.arrivals), 2)
        first, second = (a.body for a in server.arrivals)
        self.assertEqual(first, second)
        self.assertIn(b"file bytes", second)
        self.assertEqual(events.reasons(), [(1, "transport_failure", 1)])

    def test_multipart_with_a_file_that_cannot_seek_is_sent_once(self) -> None:
        server = self.serve(Reset(), Reply(200))
        events = Events()
        with (
            httpx.Client(transport=self.adapter(server.url, events)) as client,
            self.assertRaises(httpx.TransportError),
        ):
            client.put(
                server.url + "/v1/items/7",
                files={"file": ("a.txt", io.BufferedReader(Seekless(b"once")))},
            )
        self.assertEqual(len(server.arrivals), 1)
        self.assertEqual(events.finish.reason, BODY_NOT_REPLAYABLE)

    def test_the_minted_key_is_there_for_the_clients_request_hooks(self) -> None:
        server = self.serve(Reply(503), Reply(201))
        seen: list[str | None] = []
        adapter = self.adapter(server.url, Events())
        args = adapter.httpx_args()
        args["event_hooks"]["request"].append(
            lambda request: seen.append(request.headers.get("idempotency-key"))
        )
        with httpx.Client(base_url=server.url + "/v1", **args) as client:
            self.assertEqual(client.post("/items/7/copies").status_code, 201)
        keys = [a.headers["idempotency-key"] for a in server.arrivals]
        self.assertEqual(len(keys), 2)
        self.assertEqual(seen, keys[:1])
        self.assertTrue(UUID_V4.fullmatch(keys[0]))

    def test_the_request_hook_works_in_an_async_client(self) -> None:
        server = self.serve(Reply(201))
        adapter = self.adapter(server.url, Events())

        async def call() -> None:
            async with httpx.AsyncClient(
                base_url=server.url + "/v1", **adapter.httpx_args()
            ) as client:
                await client.post("/items/7/copies")

        asyncio.run(call())
        self.assertTrue(
            UUID_V4.fullmatch(server.arrivals[0].headers["idempotency-key"])
        )


class ControlTest(unittest.TestCase):
    """Per-request overrides, the attempt below and above, the body read in the loop."""

    def serve(self, *script: Step) -> Server:
        server = Server(*script)
        self.addCleanup(server.close)
        return server

    def client(
        self,
        server_url: str,
        events: Events,
        transport: httpx.BaseTransport | None = None,
        **options: object,
    ) -> httpx.Client:
        adapter = RetryTransport(
            httpx.HTTPTransport(verify=TLS) if transport is None else transport,
            tables=Tables(),
            base_url=server_url + "/v1",
            on_retry=events.retries.append,
            on_finish=events.finishes.append,
            **options,  # type: ignore[arg-type]
        )
        client = httpx.Client(transport=adapter, base_url=server_url + "/v1")
        self.addCleanup(client.close)
        return client

    def test_max_retries_is_overridden_per_request(self) -> None:
        server = self.serve(Reply(503), Reply(200))
        events = Events()
        client = self.client(server.url, events)
        once = {OVERRIDES_EXTENSION: RetryOverrides(max_retries=0)}
        response = client.get("/items/7", extensions=once)
        self.assertEqual(response.status_code, 503)
        self.assertEqual(len(server.arrivals), 1)
        self.assertEqual(events.finish.reason, DecisionReason.EXHAUSTED)
        # The next request has the adapter's policy again.
        self.assertEqual(client.get("/items/7").status_code, 200)

    def test_overrides_apply_inside_a_block_for_sdks_without_extensions(self) -> None:
        server = self.serve(Reply(503), Reply(503), Reply(200))
        events = Events()
        client = self.client(server.url, events)
        with retry_overrides(RetryOverrides(max_retries=0)):
            self.assertEqual(client.get("/items/7").status_code, 503)
            # The request's own overrides win.
            more = {OVERRIDES_EXTENSION: RetryOverrides(max_retries=1)}
            self.assertEqual(client.get("/items/7", extensions=more).status_code, 200)
        self.assertEqual([f.attempts for f in events.finishes], [1, 2])

    def test_overrides_out_of_range_raise_before_sending(self) -> None:
        server = self.serve(Reply(200))
        events = Events()
        client = self.client(server.url, events)
        for overrides, error in (
            (RetryOverrides(max_retries=101), ValueError),
            (RetryOverrides(max_retries=-1), ValueError),
            (RetryOverrides(attempt_timeout=0), ValueError),
            (RetryOverrides(read_body_max_bytes=-1), ValueError),
            (RetryOverrides(max_retries=True), TypeError),
        ):
            with self.assertRaises(error):
                client.get("/items/7", extensions={OVERRIDES_EXTENSION: overrides})
        with self.assertRaises(TypeError):
            client.get("/items/7", extensions={OVERRIDES_EXTENSION: {"max_retries": 0}})
        self.assertEqual((server.arrivals, events.finishes), ([], []))

    def test_the_attempt_timeout_is_overridden_or_lifted(self) -> None:
        server = self.serve(Stall(0.6), Reply(200), Stall(0.6))
        events = Events()
        client = self.client(server.url, events)
        short = {OVERRIDES_EXTENSION: RetryOverrides(attempt_timeout=0.2)}
        self.assertEqual(client.get("/items/7", extensions=short).status_code, 200)
        self.assertEqual(events.reasons(), [(1, "transport_failure", 1)])
        # An adapter-wide limit lifted for one request: the stall is waited out.
        events = Events()
        client = self.client(server.url, events, attempt_timeout=0.2)
        lifted = {OVERRIDES_EXTENSION: RetryOverrides(attempt_timeout=None)}
        self.assertEqual(client.get("/items/7", extensions=lifted).status_code, 200)
        self.assertEqual((events.reasons(), len(server.arrivals)), ([], 3))

    def test_each_attempt_carries_its_number_below(self) -> None:
        server = self.serve(Reply(503), Reset(), Reply(200))
        hooked = Hooked()
        self.client(server.url, Events(), hooked).get("/items/7")
        self.assertEqual(hooked.attempts, [1, 2, 3])

    def test_the_attempt_header_counts_earlier_attempts(self) -> None:
        server = self.serve(Reply(503), Reply(503), Reply(200))
        client = self.client(server.url, Events(), attempt_header="X-Retry-Attempt")
        client.get("/items/7", headers={"x-retry-attempt": "caller"})
        self.assertEqual(
            [a.headers["x-retry-attempt"] for a in server.arrivals], ["0", "1", "2"]
        )
        # Off by default; never on a request to another origin.
        other = self.serve(Reply(200))
        self.client(server.url, Events()).get("/items/7")
        client.get(other.url + "/v1/items/7")
        self.assertNotIn("x-retry-attempt", server.arrivals[-1].headers)
        self.assertNotIn("x-retry-attempt", other.arrivals[0].headers)
        with self.assertRaises(ValueError):
            RetryTransport(tables=Tables(), attempt_header="X Bad")

    def test_retry_events_carry_the_attempt_and_the_finish_its_delays(self) -> None:
        server = self.serve(Reply(503), Reset(), Reply(200))
        events = Events()
        self.client(server.url, events).get("/items/7")
        first, second = events.retries
        self.assertEqual((first.status, first.failure), (503, None))
        self.assertEqual((second.status, second.failure), (None, Failure.TRANSPORT))
        self.assertIsNotNone(first.attempt_duration_ms)
        self.assertEqual(events.finish.total_delay_ms, 1 + 2)

    def test_the_finish_is_on_the_response_and_on_the_error(self) -> None:
        server = self.serve(Reply(503), Reply(200))
        events = Events()
        client = self.client(server.url, events)
        response = client.get("/items/7")
        self.assertIs(response.extensions[FINISH_EXTENSION], events.finish)
        self.assertIs(finish_of(response), events.finish)
        events = Events()
        client = self.client(f"http://127.0.0.1:{_closed_port()}", events)
        with self.assertRaises(httpx.ConnectError) as raised:
            client.get("/items/7")
        self.assertIs(finish_of(raised.exception), events.finish)
        self.assertEqual(events.finish.attempts, 4)
        self.assertIsNone(finish_of(ValueError("not through the adapter")))

    def test_a_body_cut_is_retried_when_read_in_the_loop(self) -> None:
        server = self.serve(CutBody(), Reply(200, body=b"whole"))
        events = Events()
        client = self.client(server.url, events, read_body_max_bytes=1024)
        response = client.get("/items/7")
        self.assertEqual((response.status_code, response.text), (200, "whole"))
        self.assertEqual(events.reasons(), [(1, "transport_failure", 1)])
        self.assertIs(finish_of(response), events.finish)

    def test_a_body_cut_is_the_callers_without_the_option(self) -> None:
        server = self.serve(CutBody(), CutBody(), Reply(200))
        events = Events()
        with self.assertRaises(httpx.RemoteProtocolError):
            self.client(server.url, events).get("/items/7")
        self.assertEqual((len(server.arrivals), events.retries), (1, []))
        # Per request, the same read.
        events = Events()
        read = {OVERRIDES_EXTENSION: RetryOverrides(read_body_max_bytes=1024)}
        response = self.client(server.url, events).get("/items/7", extensions=read)
        self.assertEqual(response.status_code, 200)
        self.assertEqual(events.reasons(), [(1, "transport_failure", 1)])

    def test_a_body_cut_on_a_create_surfaces_once(self) -> None:
        server = self.serve(CutBody(201), Reply(201))
        events = Events()
        client = self.client(server.url, events, read_body_max_bytes=1024)
        with self.assertRaises(httpx.RemoteProtocolError) as raised:
            client.post("/items", content=b"{}")
        self.assertEqual(len(server.arrivals), 1)
        finish = events.finish
        self.assertEqual(
            (finish.reason, finish.outcome, finish.attempts),
            (DecisionReason.NOT_REPLAYABLE, "transport", 1),
        )
        self.assertIs(finish_of(raised.exception), finish)

    def test_a_body_over_the_bound_is_handed_over_whole(self) -> None:
        body = b"x" * 5000
        server = self.serve(Reply(200, body=body))
        client = self.client(server.url, Events(), read_body_max_bytes=100)
        with client.stream("GET", "/items/7") as response:
            self.assertEqual(response.read(), body)

    def test_an_event_stream_is_not_read_in_the_loop(self) -> None:
        server = self.serve(Reply(200, (("content-type", "text/event-stream"),)))
        recording = Recording()
        client = self.client(server.url, Events(), recording, read_body_max_bytes=100)
        with client.stream("GET", "/items/7") as response:
            self.assertFalse(
                isinstance(recording.responses[0].stream, httpx.ByteStream)
            )
            self.assertEqual(response.read(), b"ok")

    def test_an_unlisted_status_stops_as_decide_would(self) -> None:
        # No decision is made for a status no rule names; the reason is still decide's.
        server = self.serve(Reply(503), Reply(404))
        events = Events()
        client = self.client(
            server.url, events, policy=dataclasses.replace(POLICY, max_retries=1)
        )
        client.get("/items/7")
        self.assertEqual(events.finish.reason, DecisionReason.EXHAUSTED)
        events = Events()
        self.client(server.url, events).post("/items/7/run")
        self.assertEqual(events.finish.reason, DecisionReason.NO_RETRY_OPERATION)
        events = Events()
        self.client(server.url, events).get("/items/7")
        self.assertEqual(events.finish.reason, DecisionReason.STATUS_NOT_RETRYABLE)


class AsyncControlTest(unittest.IsolatedAsyncioTestCase):
    """The async side of ``ControlTest``: the body read and the timeout under anyio."""

    async def asyncSetUp(self) -> None:
        # As AsyncRetryTransportTest's: debug mode logs every step slower than 0.1 s.
        asyncio.get_running_loop().slow_callback_duration = 2

    def serve(self, *script: Step) -> Server:
        server = Server(*script)
        self.addCleanup(server.close)
        return server

    async def client(
        self, server_url: str, events: Events, **options: object
    ) -> httpx.AsyncClient:
        adapter = RetryTransport(
            httpx.AsyncHTTPTransport(verify=TLS),
            tables=Tables(),
            base_url=server_url + "/v1",
            on_retry=events.retries.append,
            on_finish=events.finishes.append,
            **options,  # type: ignore[arg-type]
        )
        client = httpx.AsyncClient(transport=adapter, base_url=server_url + "/v1")
        self.addAsyncCleanup(client.aclose)
        return client

    async def test_a_body_cut_is_retried_when_read_in_the_loop(self) -> None:
        server = self.serve(CutBody(), Reply(200, body=b"whole"))
        events = Events()
        client = await self.client(server.url, events, read_body_max_bytes=1024)
        response = await client.get("/items/7")
        self.assertEqual((response.status_code, response.text), (200, "whole"))
        self.assertEqual(events.reasons(), [(1, "transport_failure", 1)])
        self.assertIs(finish_of(response), events.finish)

    async def test_overrides_and_the_finish_on_the_error(self) -> None:
        server = self.serve(Stall(5))
        events = Events()
        client = await self.client(server.url, events)
        once = RetryOverrides(max_retries=0, attempt_timeout=0.2)
        with self.assertRaises(AttemptTimeout) as raised:
            await client.get("/items/7", extensions={OVERRIDES_EXTENSION: once})
        self.assertEqual(len(server.arrivals), 1)
        self.assertIs(finish_of(raised.exception), events.finish)
        self.assertEqual(
            (events.finish.reason, events.finish.timed_out),
            (DecisionReason.EXHAUSTED, True),
        )


# Contract v3 (docs/contract.md section 12).

PROBLEM = (("Content-Type", "application/problem+json; charset=utf-8"),)
QUOTA = b'{"type": "' + PROBLEM_TYPE_QUOTA_EXCEEDED.encode() + b'", "status": 429}'


class V3Test(unittest.TestCase):
    """X5-X8 on the sync side: preconditions, problem types, key formats, the server's wait."""

    def serve(self, *script: Step) -> Server:
        server = Server(*script)
        self.addCleanup(server.close)
        return server

    def client(
        self, server_url: str, events: Events, **options: object
    ) -> tuple[httpx.Client, RetryTransport]:
        adapter = RetryTransport(
            httpx.HTTPTransport(verify=TLS),
            tables=Tables(),
            base_url=server_url + "/v1",
            on_retry=events.retries.append,
            on_finish=events.finishes.append,
            **options,  # type: ignore[arg-type]
        )
        client = httpx.Client(transport=adapter, base_url=server_url + "/v1")
        self.addCleanup(client.close)
        return client, adapter

    def test_a_precondition_makes_a_create_replayable_and_its_412_final(self) -> None:
        server = self.serve(Reset(), Reply(412))
        events = Events()
        client, _ = self.client(server.url, events)
        response = client.post("/items", content=b"x", headers={"If-Match": '"v1"'})
        self.assertEqual(response.status_code, 412)
        self.assertEqual(len(server.arrivals), 2)
        self.assertEqual(events.reasons(), [(1, "transport_failure", 1)])
        self.assertEqual(
            events.finish.reason, DecisionReason.PRECONDITION_FAILED_AFTER_REPLAY
        )

    def test_if_match_any_is_no_precondition(self) -> None:
        server = self.serve(Reset(), Reply(412))
        events = Events()
        client, _ = self.client(server.url, events)
        with self.assertRaises(httpx.TransportError):
            client.post("/items", content=b"x", headers={"If-Match": "*"})
        self.assertEqual(len(server.arrivals), 1)
        self.assertEqual(events.finish.reason, DecisionReason.NOT_REPLAYABLE)

    def test_a_412_on_the_first_attempt_is_an_unlisted_status(self) -> None:
        server = self.serve(Reply(412), Reply(200))
        events = Events()
        client, _ = self.client(server.url, events)
        client.post("/items", headers={"If-None-Match": "*"})
        self.assertEqual(len(server.arrivals), 1)
        self.assertEqual(events.finish.reason, DecisionReason.STATUS_NOT_RETRYABLE)

    def test_a_quota_problem_stops_with_its_body_intact(self) -> None:
        server = self.serve(Reply(429, PROBLEM, QUOTA), Reply(200))
        events = Events()
        client, _ = self.client(server.url, events)
        with client.stream("GET", "/items/7") as response:
            self.assertEqual(response.status_code, 429)
            self.assertEqual(response.read(), QUOTA)
        self.assertEqual(len(server.arrivals), 1)
        self.assertEqual(events.finish.reason, DecisionReason.PROBLEM_TYPE_STOP)

    def test_a_problem_type_retries_a_replayable_request_only(self) -> None:
        busy = (
            b'{"type":"urn:busy"}',
            dataclasses.replace(POLICY, retry_problem_types=("urn:busy",)),
        )
        server = self.serve(Reply(400, PROBLEM, busy[0]), Reply(200))
        events = Events()
        client, _ = self.client(server.url, events, policy=busy[1])
        self.assertEqual(client.get("/items/7").status_code, 200)
        self.assertEqual(events.reasons(), [(1, "problem_type_retry", 1)])
        events = Events()
        server = self.serve(Reply(400, PROBLEM, busy[0]), Reply(200))
        client, _ = self.client(server.url, events, policy=busy[1])
        self.assertEqual(client.post("/items").status_code, 400)
        self.assertEqual(events.finish.reason, DecisionReason.STATUS_NOT_RETRYABLE)

    def test_a_problem_body_is_not_read_without_problem_types(self) -> None:
        server = self.serve(Reply(429, PROBLEM, QUOTA), Reply(200))
        events = Events()
        none = dataclasses.replace(POLICY, stop_problem_types=())
        client, _ = self.client(server.url, events, policy=none)
        self.assertEqual(client.get("/items/7").status_code, 200)
        self.assertEqual(events.reasons(), [(1, "rejected_status", 1)])

    def test_a_problem_body_longer_than_the_bound_has_no_type_and_stays_whole(
        self,
    ) -> None:
        long_body = QUOTA[:-1] + b", " + b'"x": "' + b"y" * 70000 + b'"}'
        server = self.serve(Reply(403, PROBLEM, long_body))
        events = Events()
        client, _ = self.client(server.url, events)
        with client.stream("GET", "/items/7") as response:
            self.assertEqual(response.read(), long_body)
        self.assertEqual(events.finish.reason, DecisionReason.STATUS_NOT_RETRYABLE)

    def test_a_cut_problem_body_is_a_transport_failure(self) -> None:
        server = self.serve(CutBody(503, PROBLEM), Reply(200))
        events = Events()
        client, _ = self.client(server.url, events)
        self.assertEqual(client.get("/items/7").status_code, 200)
        self.assertEqual(events.reasons(), [(1, "transport_failure", 1)])
        events = Events()
        server = self.serve(CutBody(503, PROBLEM), Reply(200))
        client, _ = self.client(server.url, events)
        with self.assertRaises(httpx.RemoteProtocolError) as raised:
            client.post("/items")
        self.assertEqual(finish_of(raised.exception), events.finish)
        self.assertEqual(
            (events.finish.reason, events.finish.outcome),
            (DecisionReason.NOT_REPLAYABLE, "transport"),
        )

    def test_a_minted_key_is_written_in_the_policys_format(self) -> None:
        server = self.serve(Reset(), Reply(201))
        events = Events()
        quoted = dataclasses.replace(
            POLICY, idempotency_key_format=IdempotencyKeyFormat.SF_STRING
        )
        client, _ = self.client(server.url, events, policy=quoted)
        client.post("/items/7/copies")
        keys = [a.headers["idempotency-key"] for a in server.arrivals]
        self.assertEqual(len(keys), 2)
        self.assertEqual(keys[0], keys[1])
        self.assertRegex(keys[0], '^"' + UUID_V4.pattern + '"$')

    def test_the_finish_carries_a_refused_server_delay(self) -> None:
        server = self.serve(Reply(503, (("Retry-After", "120"),)), Reply(200))
        events = Events()
        client, _ = self.client(server.url, events)
        response = client.get("/items/7")
        self.assertEqual(response.status_code, 503)
        self.assertEqual(
            (events.finish.reason, events.finish.server_delay_ms),
            (DecisionReason.RETRY_AFTER_OVER_CAP, 120000),
        )
        self.assertIs(finish_of(response), events.finish)
        events = Events()
        client, _ = self.client(server.url, events)
        client.get("/items/7")
        self.assertIsNone(events.finish.server_delay_ms)

    def test_a_throttled_retry_costs_the_throttling_cost(self) -> None:
        server = self.serve(Reply(429))
        events = Events()
        throttling = dataclasses.replace(
            POLICY,
            max_retries=1,
            throttling_initial_backoff_ms=3,
            budget_throttling_cost=2,
        )
        client, adapter = self.client(server.url, events, policy=throttling)
        client.get("/items/7")
        self.assertEqual(events.reasons(), [(1, "rejected_status", 3)])
        self.assertEqual(adapter.budget_tokens, 98)


class AsyncV3Test(unittest.IsolatedAsyncioTestCase):
    """X5-X8 on the async side."""

    async def asyncSetUp(self) -> None:
        # As AsyncRetryTransportTest's: debug mode logs every step slower than 0.1 s.
        asyncio.get_running_loop().slow_callback_duration = 2

    def serve(self, *script: Step) -> Server:
        server = Server(*script)
        self.addCleanup(server.close)
        return server

    async def client(
        self, server_url: str, events: Events, **options: object
    ) -> httpx.AsyncClient:
        adapter = RetryTransport(
            httpx.AsyncHTTPTransport(verify=TLS),
            tables=Tables(),
            base_url=server_url + "/v1",
            on_retry=events.retries.append,
            on_finish=events.finishes.append,
            **options,  # type: ignore[arg-type]
        )
        client = httpx.AsyncClient(transport=adapter, base_url=server_url + "/v1")
        self.addAsyncCleanup(client.aclose)
        return client

    async def test_a_precondition_makes_a_create_replayable(self) -> None:
        server = self.serve(Reset(), Reply(412))
        events = Events()
        client = await self.client(server.url, events)
        response = await client.post("/items", headers={"If-Match": '"v1"'})
        self.assertEqual(response.status_code, 412)
        self.assertEqual(len(server.arrivals), 2)
        self.assertEqual(
            events.finish.reason, DecisionReason.PRECONDITION_FAILED_AFTER_REPLAY
        )

    async def test_a_quota_problem_stops_with_its_body_intact(self) -> None:
        server = self.serve(Reply(429, PROBLEM, QUOTA), Reply(200))
        events = Events()
        client = await self.client(server.url, events, attempt_timeout=5)
        async with client.stream("GET", "/items/7") as response:
            self.assertEqual(await response.aread(), QUOTA)
        self.assertEqual(len(server.arrivals), 1)
        self.assertEqual(events.finish.reason, DecisionReason.PROBLEM_TYPE_STOP)

    async def test_a_cut_problem_body_is_a_transport_failure(self) -> None:
        server = self.serve(CutBody(503, PROBLEM), Reply(200))
        events = Events()
        client = await self.client(server.url, events)
        self.assertEqual((await client.get("/items/7")).status_code, 200)
        self.assertEqual(events.reasons(), [(1, "transport_failure", 1)])

    async def test_keys_and_the_server_delay(self) -> None:
        server = self.serve(Reply(503, (("Retry-After", "120"),)))
        events = Events()
        quoted = dataclasses.replace(
            POLICY, idempotency_key_format=IdempotencyKeyFormat.SF_STRING
        )
        client = await self.client(server.url, events, policy=quoted)
        await client.post("/items/7/copies")
        self.assertRegex(
            server.arrivals[0].headers["idempotency-key"], '^"' + UUID_V4.pattern + '"$'
        )
        self.assertEqual(events.finish.server_delay_ms, 120000)


EVENTS = "/items/7/events"
ONE = b"id: 1\ndata: a\n\n"
TWO = b"id: 2\ndata: b\n\n"
THREE = b"id: 3\ndata: c\n\n"


# [contract X3, K3] The budget sequence every language's runtime tests run: 20 tokens, a retry
# costs 5, a timeout 10, a success without retries gives 1 back, 3 retries, 1 ms backoffs.
BUDGET = dataclasses.replace(
    POLICY,
    max_retries=3,
    initial_backoff_ms=1,
    max_backoff_ms=1,
    budget_capacity=20,
    budget_retry_cost=5,
    budget_timeout_cost=10,
    budget_success_refund=1,
)


def _budget_script(*, close: bool) -> tuple[Step, ...]:
    """Script a GET answered 503 four times, then a stream reset after event 1, resumed.

    The resume sends event 2 and ends, or holds the stream open for the caller to
    close (``close``).
    """
    return (
        Reply(503),
        Reply(503),
        Reply(503),
        Reply(503),
        Sse((ONE,), reset=True),
        Sse((TWO,), hold=close),
    )


def _budget_adapter(
    transport: httpx.BaseTransport | httpx.AsyncBaseTransport,
    server_url: str,
    events: Events,
    granted: list[int],
) -> RetryTransport:
    """Build an adapter on ``BUDGET`` whose ``on_retry`` notes the tokens each grant left."""
    adapter: RetryTransport

    def on_retry(event: RetryEvent) -> None:
        events.retries.append(event)
        granted.append(adapter.budget_tokens)

    adapter = RetryTransport(
        transport,
        tables=Tables(BUDGET),
        base_url=server_url + "/v1",
        on_retry=on_retry,
        on_finish=events.finishes.append,
    )
    return adapter


class StreamTest(unittest.TestCase):
    """X1-X4 on the sync side: resumable event streams."""

    def serve(self, *script: Step) -> Server:
        server = Server(*script)
        self.addCleanup(server.close)
        return server

    def client(
        self, server_url: str, events: Events, **options: object
    ) -> tuple[httpx.Client, RetryTransport]:
        adapter = RetryTransport(
            httpx.HTTPTransport(verify=TLS),
            tables=Tables(),
            base_url=server_url + "/v1",
            on_retry=events.retries.append,
            on_finish=events.finishes.append,
            **options,  # type: ignore[arg-type]
        )
        client = httpx.Client(transport=adapter, base_url=server_url + "/v1")
        self.addCleanup(client.close)
        return client, adapter

    def test_a_drop_is_resumed_after_the_last_complete_event(self) -> None:
        # The drop cuts event 3: its bytes are never the caller's, and the resume asks for 3.
        server = self.serve(
            Sse((ONE, TWO[:5], TWO[5:] + THREE[:9]), drop=True), Sse((THREE,))
        )
        events = Events()
        client, adapter = self.client(server.url, events, attempt_header="X-Attempt")
        with client.stream("GET", EVENTS) as response:
            self.assertEqual(events.finishes, [])
            chunks = list(response.iter_raw())
        self.assertEqual(b"".join(chunks), ONE + TWO + THREE)
        self.assertTrue(all(chunk.endswith(b"\n\n") for chunk in chunks), chunks)
        self.assertEqual(
            [a.headers.get("last-event-id") for a in server.arrivals], [None, "2"]
        )
        self.assertEqual([a.headers["x-attempt"] for a in server.arrivals], ["0", "1"])
        self.assertEqual(events.reasons(), [(1, "stream_resume", 1)])
        self.assertEqual(events.retries[0].failure, Failure.DROPPED)
        finish = events.finish
        self.assertEqual(
            (finish.attempts, finish.reason, finish.outcome, finish.status),
            (2, DecisionReason.STATUS_NOT_RETRYABLE, "status", 200),
        )
        self.assertIs(finish_of(response), finish)
        # The resume took 5 tokens; its event stream's commit gave them back.
        self.assertEqual(adapter.budget_tokens, 100)

    def test_drops_without_progress_stop_after_max_retries(self) -> None:
        server = self.serve(Sse((ONE,), drop=True), Sse((b"data: cut",), drop=True))
        events = Events()
        client, _ = self.client(server.url, events)
        with (
            client.stream("GET", EVENTS) as response,
            self.assertRaises(httpx.RemoteProtocolError) as raised,
        ):
            response.read()
        self.assertEqual(len(server.arrivals), 4)
        self.assertEqual(
            [a.headers.get("last-event-id") for a in server.arrivals],
            [None, "1", "1", "1"],
        )
        self.assertEqual(
            events.reasons(),
            [(1, "stream_resume", 1), (2, "stream_resume", 2), (3, "stream_resume", 4)],
        )
        self.assertEqual(
            (events.finish.reason, events.finish.attempts, events.finish.outcome),
            (DecisionReason.EXHAUSTED, 4, "status"),
        )
        self.assertIs(finish_of(raised.exception), events.finish)

    def test_progress_resets_the_count(self) -> None:
        server = self.serve(
            Sse((ONE,), drop=True),
            Sse((TWO,), drop=True),
            Sse((THREE,), drop=True),
            Sse((b"id: 4\n\n",)),
        )
        events = Events()
        client, _ = self.client(
            server.url, events, policy=dataclasses.replace(POLICY, max_retries=1)
        )
        self.assertEqual(client.get(EVENTS).content, ONE + TWO + THREE + b"id: 4\n\n")
        self.assertEqual(
            events.reasons(),
            [(1, "stream_resume", 1), (2, "stream_resume", 1), (3, "stream_resume", 1)],
        )

    def test_a_resume_answered_otherwise_ends_the_stream_with_its_status(self) -> None:
        server = self.serve(Sse((ONE,), drop=True), Reply(404))
        events = Events()
        client, _ = self.client(server.url, events)
        with (
            client.stream("GET", EVENTS) as response,
            self.assertRaises(StreamResumeError) as raised,
        ):
            response.read()
        self.assertEqual(raised.exception.status_code, 404)
        self.assertIsInstance(raised.exception, httpx.ReadError)
        self.assertEqual(len(server.arrivals), 2)
        self.assertEqual(
            (events.finish.attempts, events.finish.reason, events.finish.status),
            (2, DecisionReason.STATUS_NOT_RETRYABLE, 200),
        )

    def test_a_resume_failing_before_its_commit_is_decided_as_any_attempt(self) -> None:
        server = self.serve(Sse((ONE,), drop=True), Reply(503), Sse((TWO,)))
        events = Events()
        client, _ = self.client(server.url, events)
        self.assertEqual(client.get(EVENTS).content, ONE + TWO)
        self.assertEqual(
            events.reasons(), [(1, "stream_resume", 1), (2, "retryable_status", 2)]
        )
        self.assertEqual(events.finish.attempts, 3)

    def test_a_stream_that_is_not_resumable_is_the_clients(self) -> None:
        server = self.serve(Sse((ONE, b"data: cut"), drop=True), Sse((TWO,)))
        events = Events()
        client, _ = self.client(server.url, events)
        with client.stream("GET", "/items/7/feed") as response:
            # Finished at the commit, as in v2.
            self.assertEqual(len(events.finishes), 1)
            with self.assertRaises(httpx.RemoteProtocolError):
                response.read()
        self.assertEqual(len(server.arrivals), 1)

    def test_a_create_without_an_event_id_is_not_resumed(self) -> None:
        server = self.serve(Sse((b"data: a\n\n",), drop=True), Sse((TWO,)))
        events = Events()
        client, _ = self.client(server.url, events)
        with (
            client.stream("POST", "/items/7/runs", content=b"go") as response,
            self.assertRaises(httpx.RemoteProtocolError),
        ):
            response.read()
        self.assertEqual(len(server.arrivals), 1)
        self.assertEqual(events.finish.reason, DecisionReason.STREAM_NOT_RESUMABLE)

    def test_a_create_resumes_from_the_callers_own_last_event_id(self) -> None:
        server = self.serve(Sse((b"data: cut",), drop=True), Sse((TWO,)))
        events = Events()
        client, _ = self.client(server.url, events)
        response = client.post(
            "/items/7/runs", content=b"go", headers={"Last-Event-ID": "1"}
        )
        self.assertEqual(response.content, TWO)
        self.assertEqual(
            [a.headers["last-event-id"] for a in server.arrivals], ["1", "1"]
        )
        self.assertEqual([a.body for a in server.arrivals], [b"go", b"go"])

    def test_the_retry_field_is_the_resume_delay(self) -> None:
        server = self.serve(Sse((b"retry: 80\n" + ONE,), drop=True), Sse((TWO,)))
        events = Events()
        client, _ = self.client(server.url, events)
        started = time.monotonic()
        self.assertEqual(client.get(EVENTS).content, b"retry: 80\n" + ONE + TWO)
        self.assertGreaterEqual(time.monotonic() - started, 0.08)
        self.assertEqual(events.reasons(), [(1, "stream_resume", 80)])

    def test_an_event_over_a_mebibyte_ends_resumability(self) -> None:
        big = b"data: " + b"x" * (1 << 20) + b"\n"
        server = self.serve(Sse((ONE, big), drop=True), Sse((TWO,)))
        events = Events()
        client, _ = self.client(server.url, events)
        with client.stream("GET", EVENTS) as response:
            received = bytearray()
            with self.assertRaises(httpx.RemoteProtocolError):
                for chunk in response.iter_raw():
                    received += chunk
        self.assertEqual(bytes(received), ONE + big)
        self.assertEqual(len(server.arrivals), 1)
        self.assertEqual(events.retries, [])

    def test_a_stream_resumes_on_trio(self) -> None:
        # The resume's sleep and the close's wake-up are anyio's, whichever loop runs.
        server = self.serve(Sse((ONE,), drop=True), Sse((TWO,)))
        events = Events()
        adapter = RetryTransport(
            httpx.AsyncHTTPTransport(verify=TLS),
            tables=Tables(),
            base_url=server.url + "/v1",
            on_retry=events.retries.append,
            on_finish=events.finishes.append,
        )

        async def call() -> bytes:
            async with httpx.AsyncClient(
                base_url=server.url + "/v1", transport=adapter
            ) as client:
                return (await client.get(EVENTS)).content

        self.assertEqual(trio.run(call), ONE + TWO)
        self.assertEqual(events.reasons(), [(1, "stream_resume", 1)])
        self.assertEqual(events.finish.attempts, 2)

    def test_closing_the_body_while_reading_ends_it_aborted_with_its_status(
        self,
    ) -> None:
        # [X4] The server holds the stream open: only the caller's close ends it, once.
        server = self.serve(Sse((ONE,), drop=True), Sse((TWO,), hold=True))
        events = Events()
        client, _ = self.client(server.url, events)
        with client.stream("GET", EVENTS) as response:
            chunks = response.iter_raw()
            self.assertEqual([next(chunks), next(chunks)], [ONE, TWO])
            self.assertEqual(events.finishes, [])
        response.close()
        finish = events.finish
        self.assertEqual(
            (finish.outcome, finish.status, finish.reason),
            ("status", 200, DecisionReason.ABORTED),
        )
        self.assertEqual((finish.attempts, finish.timed_out), (2, False))
        self.assertIs(finish_of(response), finish)
        time.sleep(0.05)
        self.assertEqual(len(server.arrivals), 2)

    def test_closing_the_body_after_its_end_gives_no_second_finish(self) -> None:
        server = self.serve(Sse((ONE, TWO)))
        events = Events()
        client, _ = self.client(server.url, events)
        with client.stream("GET", EVENTS) as response:
            self.assertEqual(b"".join(response.iter_raw()), ONE + TWO)
            self.assertEqual(len(events.finishes), 1)
        response.close()
        self.assertEqual(
            (events.finish.reason, events.finish.outcome, events.finish.status),
            (DecisionReason.STATUS_NOT_RETRYABLE, "status", 200),
        )

    def test_closing_the_body_during_a_resumes_sleep_ends_it_aborted(self) -> None:
        server = self.serve(Sse((b"retry: 5000\n" + ONE,), drop=True), Sse((TWO,)))
        events = Events()
        client, _ = self.client(server.url, events)
        response = client.send(client.build_request("GET", EVENTS), stream=True)
        chunks = response.iter_raw()
        self.assertEqual(next(chunks), b"retry: 5000\n" + ONE)
        rest: list[bytes] = []
        reader = threading.Thread(target=lambda: rest.extend(chunks))
        reader.start()
        while not events.retries:
            time.sleep(0.01)
        started = time.monotonic()
        response.close()
        reader.join(timeout=5)
        self.assertFalse(reader.is_alive())
        self.assertLess(time.monotonic() - started, 2)
        self.assertEqual((rest, len(server.arrivals)), ([], 1))
        finish = events.finish
        self.assertEqual(
            (finish.outcome, finish.status, finish.reason, finish.attempts),
            ("aborted", None, DecisionReason.ABORTED, 1),
        )
        self.assertIs(finish_of(response), finish)

    def test_the_budget_counts_each_event_stream_answer_when_it_arrives(self) -> None:
        # [contract X3, K3] The commit's 2xx event stream is a success at once (the refund:
        # no retry before it), the resume's with the resume's cost; the stream's end, clean
        # or the caller's close, records nothing.
        for close in (False, True):
            with self.subTest(close=close):
                server = self.serve(*_budget_script(close=close))
                events = Events()
                granted: list[int] = []
                adapter = _budget_adapter(
                    httpx.HTTPTransport(verify=TLS), server.url, events, granted
                )
                client = httpx.Client(transport=adapter, base_url=server.url + "/v1")
                self.addCleanup(client.close)
                # Three retries granted (20 -> 15 -> 10 -> 5); the last 503 is no success.
                self.assertEqual(client.get("/items/7").status_code, 503)
                self.assertEqual((granted, adapter.budget_tokens), ([15, 10, 5], 5))
                with client.stream("GET", EVENTS) as response:
                    self.assertEqual(adapter.budget_tokens, 6)
                    chunks = response.iter_raw()
                    self.assertEqual(next(chunks), ONE)
                    self.assertEqual(adapter.budget_tokens, 6)
                    self.assertEqual(next(chunks), TWO)
                    # The resume was granted at 1 token; its answer gave its 5 back.
                    self.assertEqual(granted, [15, 10, 5, 1])
                    self.assertEqual(adapter.budget_tokens, 6)
                    if not close:
                        self.assertEqual(list(chunks), [])
                        self.assertEqual(len(events.finishes), 2)
                    self.assertEqual(adapter.budget_tokens, 6)
                response.close()
                self.assertEqual(adapter.budget_tokens, 6)
                self.assertEqual(events.reasons()[3:], [(1, "stream_resume", 1)])
                finish = events.finishes[1]
                self.assertEqual(
                    (finish.attempts, finish.outcome, finish.status, finish.reason),
                    (
                        2,
                        "status",
                        200,
                        (
                            DecisionReason.ABORTED
                            if close
                            else DecisionReason.STATUS_NOT_RETRYABLE
                        ),
                    ),
                )
                self.assertEqual(
                    [a.headers.get("last-event-id") for a in server.arrivals[4:]],
                    [None, "1"],
                )

    def test_the_attempt_timeout_ends_at_the_commit(self) -> None:
        # [X1] The second event comes after the attempt timeout: the stream runs on.
        server = self.serve(Sse((ONE, TWO), pause=0.5))
        events = Events()
        client, _ = self.client(server.url, events, attempt_timeout=0.2)
        self.assertEqual(client.get(EVENTS).content, ONE + TWO)
        self.assertEqual((len(server.arrivals), events.retries), (1, []))


class AsyncStreamTest(unittest.IsolatedAsyncioTestCase):
    """X1-X4 on the async side."""

    async def asyncSetUp(self) -> None:
        # As AsyncRetryTransportTest's: debug mode logs every step slower than 0.1 s.
        asyncio.get_running_loop().slow_callback_duration = 2

    def serve(self, *script: Step) -> Server:
        server = Server(*script)
        self.addCleanup(server.close)
        return server

    async def client(
        self, server_url: str, events: Events, **options: object
    ) -> httpx.AsyncClient:
        adapter = RetryTransport(
            httpx.AsyncHTTPTransport(verify=TLS),
            tables=Tables(),
            base_url=server_url + "/v1",
            on_retry=events.retries.append,
            on_finish=events.finishes.append,
            **options,  # type: ignore[arg-type]
        )
        client = httpx.AsyncClient(transport=adapter, base_url=server_url + "/v1")
        self.addAsyncCleanup(client.aclose)
        return client

    async def test_a_drop_is_resumed_after_the_last_complete_event(self) -> None:
        server = self.serve(Sse((ONE, TWO + THREE[:9]), drop=True), Sse((THREE,)))
        events = Events()
        client = await self.client(server.url, events, attempt_timeout=5)
        async with client.stream("GET", EVENTS) as response:
            self.assertEqual(events.finishes, [])
            chunks = [chunk async for chunk in response.aiter_raw()]
        self.assertEqual(b"".join(chunks), ONE + TWO + THREE)
        self.assertEqual(
            [a.headers.get("last-event-id") for a in server.arrivals], [None, "2"]
        )
        self.assertEqual(events.reasons(), [(1, "stream_resume", 1)])
        self.assertEqual((events.finish.attempts, events.finish.status), (2, 200))
        self.assertIs(finish_of(response), events.finish)

    async def test_drops_without_progress_stop_after_max_retries(self) -> None:
        server = self.serve(Sse((ONE,), drop=True), Sse((b"data: cut",), drop=True))
        events = Events()
        client = await self.client(server.url, events)
        async with client.stream("GET", EVENTS) as response:
            with self.assertRaises(httpx.RemoteProtocolError):
                await response.aread()
        self.assertEqual(len(server.arrivals), 4)
        self.assertEqual(events.finish.reason, DecisionReason.EXHAUSTED)

    async def test_a_resume_answered_otherwise_ends_the_stream_with_its_status(
        self,
    ) -> None:
        server = self.serve(Sse((ONE,), drop=True), Reply(503))
        events = Events()
        client = await self.client(
            server.url, events, policy=dataclasses.replace(POLICY, max_retries=1)
        )
        async with client.stream("GET", EVENTS) as response:
            with self.assertRaises(StreamResumeError) as raised:
                await response.aread()
        self.assertEqual(raised.exception.status_code, 503)
        self.assertEqual(
            (events.finish.attempts, events.finish.reason),
            (2, DecisionReason.EXHAUSTED),
        )

    async def test_the_budget_counts_each_event_stream_answer_when_it_arrives(
        self,
    ) -> None:
        # [contract X3, K3] StreamTest's sequence on the async side.
        for close in (False, True):
            with self.subTest(close=close):
                server = self.serve(*_budget_script(close=close))
                events = Events()
                granted: list[int] = []
                adapter = _budget_adapter(
                    httpx.AsyncHTTPTransport(verify=TLS), server.url, events, granted
                )
                client = httpx.AsyncClient(
                    transport=adapter, base_url=server.url + "/v1"
                )
                self.addAsyncCleanup(client.aclose)
                self.assertEqual((await client.get("/items/7")).status_code, 503)
                self.assertEqual((granted, adapter.budget_tokens), ([15, 10, 5], 5))
                async with client.stream("GET", EVENTS) as response:
                    self.assertEqual(adapter.budget_tokens, 6)
                    chunks = response.aiter_raw()
                    self.assertEqual(await chunks.__anext__(), ONE)
                    self.assertEqual(adapter.budget_tokens, 6)
                    self.assertEqual(await chunks.__anext__(), TWO)
                    self.assertEqual(granted, [15, 10, 5, 1])
                    self.assertEqual(adapter.budget_tokens, 6)
                    if not close:
                        self.assertEqual([chunk async for chunk in chunks], [])
                        self.assertEqual(len(events.finishes), 2)
                    self.assertEqual(adapter.budget_tokens, 6)
                await response.aclose()
                self.assertEqual(adapter.budget_tokens, 6)
                self.assertEqual(
                    (events.finishes[1].attempts, events.finishes[1].reason),
                    (
                        2,
                        (
                            DecisionReason.ABORTED
                            if close
                            else DecisionReason.STATUS_NOT_RETRYABLE
                        ),
                    ),
                )

    async def test_the_attempt_timeout_ends_at_the_commit(self) -> None:
        server = self.serve(Sse((ONE, TWO), pause=0.5))
        events = Events()
        client = await self.client(server.url, events, attempt_timeout=0.2)
        self.assertEqual((await client.get(EVENTS)).content, ONE + TWO)
        self.assertEqual((len(server.arrivals), events.retries), (1, []))

    async def test_closing_the_body_during_a_resumes_sleep_ends_it(self) -> None:
        server = self.serve(Sse((b"retry: 5000\n" + ONE,), drop=True), Sse((TWO,)))
        events = Events()
        client = await self.client(server.url, events)
        response = await client.send(client.build_request("GET", EVENTS), stream=True)
        reader = response.aiter_raw()
        self.assertEqual(await reader.__anext__(), b"retry: 5000\n" + ONE)
        pending = asyncio.ensure_future(reader.__anext__())
        while not events.retries:
            await asyncio.sleep(0.01)
        started = time.monotonic()
        await response.aclose()
        with self.assertRaises(StopAsyncIteration):
            await pending
        self.assertLess(time.monotonic() - started, 2)
        self.assertEqual(len(server.arrivals), 1)
        self.assertEqual(
            (
                events.finish.outcome,
                events.finish.status,
                events.finish.reason,
                events.finish.attempts,
            ),
            ("aborted", None, DecisionReason.ABORTED, 1),
        )

    async def test_closing_the_body_while_reading_ends_it_aborted_with_its_status(
        self,
    ) -> None:
        # [X4] The server holds the stream open: only the caller's close ends it, once.
        server = self.serve(Sse((ONE,), drop=True), Sse((TWO,), hold=True))
        events = Events()
        client = await self.client(server.url, events)
        async with client.stream("GET", EVENTS) as response:
            chunks = response.aiter_raw()
            self.assertEqual(
                [await chunks.__anext__(), await chunks.__anext__()], [ONE, TWO]
            )
            self.assertEqual(events.finishes, [])
        await response.aclose()
        finish = events.finish
        self.assertEqual(
            (finish.outcome, finish.status, finish.reason),
            ("status", 200, DecisionReason.ABORTED),
        )
        self.assertEqual((finish.attempts, finish.timed_out), (2, False))
        self.assertIs(finish_of(response), finish)
        await asyncio.sleep(0.05)
        self.assertEqual(len(server.arrivals), 2)

    async def test_cancelling_the_task_while_reading_ends_it_aborted_with_its_status(
        self,
    ) -> None:
        server = self.serve(Sse((ONE, TWO), hold=True))
        events = Events()
        client = await self.client(server.url, events)
        read = bytearray()
        holding: list[httpx.Response] = []

        async def reader() -> None:
            async with client.stream("GET", EVENTS) as response:
                holding.append(response)
                async for chunk in response.aiter_raw():
                    read.extend(chunk)

        task = asyncio.ensure_future(reader())
        while read != ONE + TWO:
            await asyncio.sleep(0.01)
        self.assertEqual(events.finishes, [])
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task
        finish = events.finish
        self.assertEqual(
            (finish.outcome, finish.status, finish.reason, finish.attempts),
            ("status", 200, DecisionReason.ABORTED, 1),
        )
        self.assertIs(finish_of(holding[0]), finish)
        self.assertEqual(len(server.arrivals), 1)


if __name__ == "__main__":
    unittest.main()
