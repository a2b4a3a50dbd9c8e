//! The fault server's HTTP/2 listeners: `h2c` (prior knowledge over TCP) and `h2` (TLS, ALPN `h2`
//! only), each on its own ports so a client that falls back to HTTP/1.1 fails loudly. Built on the
//! `h2` crate (hyper's HTTP/2) on a tokio runtime the server owns, with tokio-rustls for TLS.
//!
//! Every request is one stream; its script step decides the answer as over HTTP/1.1, plus the
//! HTTP/2-only steps: `rst_stream` (RST_STREAM with a code after reading the whole request),
//! `refused_stream` (RST_STREAM REFUSED_STREAM) and `goaway_unprocessed` (GOAWAY whose
//! last-stream-id is below the request's stream, then close). The last two prove the request was
//! not processed (RFC 9113 section 8.7): they are not arrivals but refusals, yet they advance the
//! script. Connection-level steps (`reset`, `close`, ...) act on the TCP connection through a
//! command channel to the task that drives it.
//!
//! The `h2` crate's GOAWAY always names the last stream it accepted; [`Rewrite`] wraps the IO it
//! writes to and rewrites the outgoing GOAWAY frame's last-stream-id to the one the step chose.

use super::server::{set_zero_linger, Arrival, Key, Scripts, State};
use super::{Action, Step};
use bytes::Bytes;
use h2::server::SendResponse;
use h2::{Reason, RecvStream};
use std::io;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;

const MAX_CONNECTIONS: usize = 64;
const MAX_HEADER_LIST: u32 = 64 * 1024;
const MAX_BODY_BYTES: usize = 1024 * 1024;
const MAX_STALL: Duration = Duration::from_secs(10);
/// A connection with no new stream for this long is closed.
const IDLE: Duration = Duration::from_secs(30);
/// A TLS or HTTP/2 handshake that takes longer fails.
const HANDSHAKE: Duration = Duration::from_secs(10);
/// Time for frames already queued to leave before the connection is closed under them.
const FLUSH: Duration = Duration::from_millis(50);
/// How long a closing connection waits for the client to close its side.
const LINGER: Duration = Duration::from_secs(2);
/// No GOAWAY rewrite wanted.
const NO_REWRITE: u32 = u32::MAX;

/// The RST_STREAM error codes a script may name (RFC 9113 section 7).
pub fn reason(name: &str) -> Option<Reason> {
    Some(match name {
        "NO_ERROR" => Reason::NO_ERROR,
        "PROTOCOL_ERROR" => Reason::PROTOCOL_ERROR,
        "INTERNAL_ERROR" => Reason::INTERNAL_ERROR,
        "FLOW_CONTROL_ERROR" => Reason::FLOW_CONTROL_ERROR,
        "STREAM_CLOSED" => Reason::STREAM_CLOSED,
        "REFUSED_STREAM" => Reason::REFUSED_STREAM,
        "CANCEL" => Reason::CANCEL,
        "ENHANCE_YOUR_CALM" => Reason::ENHANCE_YOUR_CALM,
        "HTTP_1_1_REQUIRED" => Reason::HTTP_1_1_REQUIRED,
        _ => return None,
    })
}

/// One HTTP/2 listener: what it serves and with what.
pub struct Listener {
    pub protocol: &'static str,
    pub tls: Option<Arc<rustls::ServerConfig>>,
    pub state: Arc<State>,
    pub scripts: Arc<Scripts>,
    pub stop: Arc<AtomicBool>,
    pub started: Instant,
    pub lifetime: Duration,
}

/// Accepts connections on `listener` (already bound) inside `runtime` until the server stops.
pub fn spawn(
    runtime: &tokio::runtime::Runtime,
    listener: std::net::TcpListener,
    config: Listener,
) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let _context = runtime.enter();
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let config = Arc::new(config);
    runtime.spawn(async move {
        let active = Arc::new(AtomicUsize::new(0));
        let tls = config.tls.clone().map(tokio_rustls::TlsAcceptor::from);
        loop {
            if config.stop.load(Ordering::SeqCst) || config.started.elapsed() > config.lifetime {
                return;
            }
            // Wakes now and then to see the stop flag and the lifetime.
            let Ok(accepted) =
                tokio::time::timeout(Duration::from_millis(250), listener.accept()).await
            else {
                continue;
            };
            let Ok((tcp, _)) = accepted else { continue };
            *config.state.last_activity.lock().unwrap() = Some(Instant::now());
            if active.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
                continue;
            }
            active.fetch_add(1, Ordering::SeqCst);
            let (config, active, tls) = (config.clone(), active.clone(), tls.clone());
            tokio::spawn(async move {
                let _ = connection(tcp, tls, &config).await;
                active.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    Ok(())
}

/// What a stream asks of the task driving its connection, with the stream's handles: dropped
/// earlier, `h2` would reset the stream with CANCEL before the connection-level answer.
struct Command {
    order: Order,
    keep: Box<dyn std::any::Any + Send>,
}

enum Order {
    /// Reset the TCP connection (RST).
    Reset,
    /// Close the TCP connection (FIN) without a GOAWAY.
    Close,
    /// Send a GOAWAY naming `last_stream_id`, then close.
    GoAway { last_stream_id: u32 },
}

async fn connection(
    tcp: tokio::net::TcpStream,
    tls: Option<tokio_rustls::TlsAcceptor>,
    config: &Arc<Listener>,
) -> io::Result<()> {
    tcp.set_nodelay(true)?;
    let fd = tcp.as_raw_fd();
    let rewrite = Arc::new(AtomicU32::new(NO_REWRITE));
    match tls {
        None => serve(Rewrite::new(tcp, rewrite.clone()), fd, rewrite, config).await,
        Some(acceptor) => {
            let stream = tokio::time::timeout(HANDSHAKE, acceptor.accept(tcp))
                .await
                .map_err(|_| io::Error::other("TLS handshake timed out"))??;
            serve(Rewrite::new(stream, rewrite.clone()), fd, rewrite, config).await
        }
    }
}

/// Serves one HTTP/2 connection: each stream in its own task, connection-level steps here.
async fn serve<T: AsyncRead + AsyncWrite + Unpin>(
    io: Rewrite<T>,
    fd: std::os::fd::RawFd,
    rewrite: Arc<AtomicU32>,
    config: &Arc<Listener>,
) -> io::Result<()> {
    let mut builder = h2::server::Builder::new();
    builder
        .max_header_list_size(MAX_HEADER_LIST)
        .max_concurrent_streams(100);
    let mut conn = tokio::time::timeout(HANDSHAKE, builder.handshake::<_, Bytes>(io))
        .await
        .map_err(|_| io::Error::other("HTTP/2 handshake timed out"))?
        .map_err(io::Error::other)?;
    let (commands, mut orders) = mpsc::unbounded_channel();
    loop {
        tokio::select! {
            next = conn.accept() => match next {
                Some(Ok((request, respond))) => {
                    let (config, commands) = (config.clone(), commands.clone());
                    tokio::spawn(async move {
                        let _ = stream(request, respond, &config, &commands).await;
                    });
                }
                // The client closed the connection, or broke the protocol.
                _ => return Ok(()),
            },
            Some(Command { order, keep }) = orders.recv() => {
                match order {
                    // Dropping the connection (on return) closes the socket with a reset.
                    Order::Reset => set_zero_linger(fd)?,
                    Order::Close => {
                        // SAFETY: `fd` is the connection's socket, open while `conn` lives.
                        unsafe { libc::shutdown(fd, libc::SHUT_WR) };
                        linger(fd).await;
                    }
                    Order::GoAway { last_stream_id } => {
                        rewrite.store(last_stream_id, Ordering::SeqCst);
                        conn.abrupt_shutdown(Reason::NO_ERROR);
                        // Sends the GOAWAY and shuts the write side; the connection then ends.
                        let _ = tokio::time::timeout(
                            HANDSHAKE,
                            std::future::poll_fn(|cx| conn.poll_closed(cx)),
                        )
                        .await;
                        linger(fd).await;
                    }
                }
                // The connection goes first: the stream's handles then have nothing to send on.
                drop(conn);
                drop(keep);
                return Ok(());
            },
            () = tokio::time::sleep(IDLE) => return Ok(()),
        }
    }
}

/// After the server's FIN: reads and discards what the client still sends, until it closes or
/// [`LINGER`] passes. Closing a socket with unread bytes sends a reset, and a client that gets
/// the reset may lose the frames before it (the GOAWAY saying its stream was not processed).
async fn linger(fd: std::os::fd::RawFd) {
    let until = Instant::now() + LINGER;
    let mut sink = [0u8; 4096];
    while Instant::now() < until {
        // SAFETY: `fd` is the connection's socket, open while the caller's connection lives;
        // the buffer is valid for its length.
        let n = unsafe { libc::recv(fd, sink.as_mut_ptr().cast(), sink.len(), libc::MSG_DONTWAIT) };
        if n == 0 {
            return;
        }
        if n < 0 {
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::WouldBlock {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Hands a connection-level step to the connection's task, with the handles to keep till then.
fn order(commands: &mpsc::UnboundedSender<Command>, order: Order, keep: impl std::any::Any + Send) {
    let _ = commands.send(Command {
        order,
        keep: Box::new(keep),
    });
}

fn header<'a>(request: &'a http::Request<RecvStream>, name: &str) -> Option<&'a str> {
    request.headers().get(name).and_then(|v| v.to_str().ok())
}

/// Reads the request body to its end (at most [`MAX_BODY_BYTES`]).
async fn read_body(body: &mut RecvStream) -> Result<Vec<u8>, h2::Error> {
    let mut data = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
        data.extend_from_slice(&chunk);
        if data.len() > MAX_BODY_BYTES {
            return Err(h2::Error::from(Reason::ENHANCE_YOUR_CALM));
        }
    }
    Ok(data)
}

fn response(
    status: u16,
    headers: &[(String, String)],
    length: Option<usize>,
) -> http::Response<()> {
    let mut builder = http::Response::builder().status(status);
    for (name, value) in headers {
        // HTTP/2 names are lower case, and a value may not begin or end with whitespace (RFC
        // 9113 section 8.2.1): over HTTP/1.1 that whitespace is the field's OWS, not its value,
        // so the same header arrives as the same value either way.
        builder = builder.header(name.to_ascii_lowercase(), value.trim_matches([' ', '\t']));
    }
    if let Some(length) = length {
        if !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
        {
            builder = builder.header("content-type", "text/plain");
        }
        builder = builder.header("content-length", length);
    }
    builder.body(()).unwrap_or_else(|_| http::Response::new(()))
}

/// Answers `status` with `headers` and `body` (no body for 1xx, 204 and 304).
fn answer(
    respond: &mut SendResponse<Bytes>,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<(), h2::Error> {
    let bodiless = status == 204 || status == 304 || status < 200;
    let head = response(status, headers, (!bodiless).then_some(body.len()));
    let mut send = respond.send_response(head, bodiless)?;
    if !bodiless {
        send.send_data(Bytes::copy_from_slice(body), true)?;
    }
    Ok(())
}

async fn stream(
    request: http::Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
    config: &Listener,
    commands: &mpsc::UnboundedSender<Command>,
) -> Result<(), h2::Error> {
    let stream_id = u32::from(respond.stream_id());
    if let Some(warmup) = header(&request, "x-fault-warmup") {
        let close = warmup.eq_ignore_ascii_case("close");
        let mut body = request.into_body();
        read_body(&mut body).await?;
        answer(&mut respond, 200, &[], b"ok")?;
        if close {
            // The answer leaves first; then the TCP connection closes under the pooled client.
            tokio::time::sleep(FLUSH).await;
            order(commands, Order::Close, (respond, body));
        }
        return Ok(());
    }
    let (Some(run), Some(id)) = (
        header(&request, "x-fault-run"),
        header(&request, "x-fault-scenario"),
    ) else {
        return answer(
            &mut respond,
            400,
            &[],
            b"x-fault-run and x-fault-scenario headers are required",
        );
    };
    let key: Key = (run.to_string(), id.to_string());
    let Some((step, fault)) = config.state.step(&key, &config.scripts, config.protocol) else {
        return answer(&mut respond, 404, &[], b"unknown scenario");
    };
    let kind = |default: &str| fault.clone().unwrap_or_else(|| default.to_string());
    // Refusals: answered at the headers, before the body, and not counted as arrivals.
    match &step {
        Step::Action(Action::RefusedStream) => {
            config.state.refuse(key, kind("refused-stream"));
            respond.send_reset(Reason::REFUSED_STREAM);
            return Ok(());
        }
        Step::Action(Action::GoawayUnprocessed) => {
            config.state.refuse(key, kind("goaway-unprocessed"));
            // Client streams are odd: every stream below this one may count as processed.
            let last_stream_id = stream_id.saturating_sub(2);
            order(
                commands,
                Order::GoAway { last_stream_id },
                (request, respond),
            );
            return Ok(());
        }
        _ => {}
    }
    let method = request.method().as_str().to_string();
    let target = request.uri().path_and_query().map_or_else(
        || request.uri().path().to_string(),
        |p| p.as_str().to_string(),
    );
    let keys = request
        .headers()
        .get_all("idempotency-key")
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect();
    let last_event_id = header(&request, "last-event-id").map(str::to_string);
    // HTTP/2 field names are lower-case on the wire already.
    let headers = request
        .headers()
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let body_read = !matches!(step, Step::Action(Action::CloseAfterHead));
    let expects_continue =
        header(&request, "expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));
    if body_read && expects_continue {
        // As over HTTP/1.1: the client asked before sending its body.
        let head = http::Response::builder()
            .status(100)
            .body(())
            .expect("a valid head");
        respond.send_informational(head)?;
    }
    let mut recv = request.into_body();
    let body = if body_read {
        read_body(&mut recv).await?
    } else {
        Vec::new()
    };
    config.state.record(
        key,
        Arrival {
            method,
            target,
            body,
            keys,
            headers,
            body_read,
            protocol: config.protocol,
            fault,
        },
    );
    match step {
        Step::Status {
            status,
            headers,
            body,
        } => {
            let body = Step::status_body(status, body.as_deref());
            answer(&mut respond, status, &headers, &body)?;
        }
        Step::Action(action) => match action {
            Action::Reset => order(commands, Order::Reset, (respond, recv)),
            Action::Close | Action::CloseAfterHead => {
                order(commands, Order::Close, (respond, recv));
            }
            Action::CloseAfterHeaders { status } => {
                let head = response(status, &[], None);
                let mut head = head;
                head.headers_mut()
                    .insert("content-length", http::HeaderValue::from_static("1000"));
                let mut send = respond.send_response(head, false)?;
                send.send_data(Bytes::from_static(b"0123456789"), false)?;
                tokio::time::sleep(FLUSH).await;
                order(commands, Order::Close, (respond, recv, send));
            }
            Action::Stall { ms } => {
                let wait = Duration::from_millis(ms).min(MAX_STALL);
                tokio::select! {
                    () = tokio::time::sleep(wait) => answer(&mut respond, 200, &[], b"ok")?,
                    // The client cancelled the stream: nobody to answer.
                    _ = std::future::poll_fn(|cx| respond.poll_reset(cx)) => {}
                }
            }
            Action::Sse { events } | Action::SseDrop { events } => {
                let head = http::Response::builder()
                    .status(200)
                    .header("content-type", "text/event-stream")
                    .header("cache-control", "no-cache")
                    .body(())
                    .expect("a valid head");
                let mut send = respond.send_response(head, false)?;
                for i in 1..=events {
                    send.send_data(Bytes::from(format!("data: line {i}\n\n")), false)?;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                if matches!(action, Action::SseDrop { .. }) {
                    tokio::time::sleep(FLUSH).await;
                    order(commands, Order::Reset, (respond, recv, send));
                } else {
                    send.send_data(Bytes::new(), true)?;
                }
            }
            Action::SseEvents {
                events,
                drop_after,
                retry_ms,
                hold_after,
            } => {
                let (chunks, drop) =
                    super::sse_plan(last_event_id.as_deref(), events, drop_after, retry_ms);
                let head = http::Response::builder()
                    .status(200)
                    .header("content-type", "text/event-stream")
                    .header("cache-control", "no-cache")
                    .body(())
                    .expect("a valid head");
                let mut send = respond.send_response(head, false)?;
                for (sent, event) in chunks.into_iter().enumerate() {
                    if hold_after.is_some_and(|n| n as usize == sent) {
                        tokio::select! {
                            () = tokio::time::sleep(MAX_STALL) => {}
                            // The client cancelled the stream: nobody to send the rest to.
                            _ = std::future::poll_fn(|cx| send.poll_reset(cx)) => return Ok(()),
                        }
                    }
                    send.send_data(Bytes::from(event), false)?;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                if drop {
                    tokio::time::sleep(FLUSH).await;
                    order(commands, Order::Reset, (respond, recv, send));
                } else {
                    send.send_data(Bytes::new(), true)?;
                }
            }
            Action::RstStream { code } => {
                respond.send_reset(reason(&code).unwrap_or(Reason::PROTOCOL_ERROR));
            }
            // Handled above, before the body.
            Action::RefusedStream | Action::GoawayUnprocessed => {}
        },
    }
    Ok(())
}

/// Where the outgoing byte stream is in its frame: HTTP/2 frames are a 9-byte header (24-bit
/// length, type, flags, stream id) and a payload.
#[derive(Clone, Copy, Default)]
struct Scan {
    header: [u8; 9],
    have: usize,
    remaining: usize,
    offset: usize,
}

const GOAWAY: u8 = 0x7;

impl Scan {
    /// Steps over one outgoing byte, rewriting it when it is part of a GOAWAY frame's
    /// last-stream-id and `target` asks for one.
    fn step(&mut self, byte: &mut u8, target: u32) {
        if self.have < 9 {
            self.header[self.have] = *byte;
            self.have += 1;
            if self.have == 9 {
                self.remaining =
                    u32::from_be_bytes([0, self.header[0], self.header[1], self.header[2]])
                        as usize;
                self.offset = 0;
                if self.remaining == 0 {
                    self.have = 0;
                }
            }
            return;
        }
        if self.header[3] == GOAWAY && self.offset < 4 && target != NO_REWRITE {
            *byte = (target & 0x7fff_ffff).to_be_bytes()[self.offset];
        }
        self.offset += 1;
        self.remaining -= 1;
        if self.remaining == 0 {
            self.have = 0;
        }
    }
}

/// The IO under the `h2` connection: passes bytes through, rewriting the last-stream-id of an
/// outgoing GOAWAY frame once a `goaway_unprocessed` step set one.
struct Rewrite<T> {
    inner: T,
    target: Arc<AtomicU32>,
    scan: Scan,
}

impl<T> Rewrite<T> {
    fn new(inner: T, target: Arc<AtomicU32>) -> Rewrite<T> {
        Rewrite {
            inner,
            target,
            scan: Scan::default(),
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Rewrite<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Rewrite<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let target = self.target.load(Ordering::SeqCst);
        // Rewrites a copy from the current position; the position advances only by what the
        // inner IO took, so a short write rewrites the rest the same way next time.
        let mut out = buf.to_vec();
        let mut scan = self.scan;
        for byte in &mut out {
            scan.step(byte, target);
        }
        let written = match Pin::new(&mut self.inner).poll_write(cx, &out) {
            Poll::Ready(Ok(n)) => n,
            other => return other,
        };
        let mut scan = self.scan;
        for byte in &mut out[..written] {
            scan.step(byte, target);
        }
        self.scan = scan;
        Poll::Ready(Ok(written))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
