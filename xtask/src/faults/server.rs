//! The fault-injecting server of the fault matrix (conformance/faults/README.md "The server"), on
//! 127.0.0.1 with ephemeral ports. HTTP/1.1 (plain and over TLS) is served by the standard library,
//! one thread per connection; TLS is rustls with a test CA generated at start (tls.rs). It counts
//! every request it reads per run and scenario, records the protocol it came over, and answers
//! each with the scenario's script.
//!
//! Listeners: per protocol the server, the same server on another port (another origin: the same
//! counts and scripts), and over TLS an untrusted port (a certificate of a CA nobody trusts); one
//! TLS-mismatch port fails every handshake with a fatal `handshake_failure` alert.

use super::tls::{Authority, CaFile};
use super::{Scenario, Step};
use rustls::{ServerConfig, ServerConnection, StreamOwned};
use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const MAX_CONNECTIONS: usize = 64;
const MAX_HEAD_BYTES: usize = 64 * 1024;
const MAX_BODY_BYTES: usize = 1024 * 1024;
const MAX_STALL: Duration = Duration::from_secs(10);
/// A keep-alive connection with nothing to read for this long is closed.
const IDLE: Duration = Duration::from_secs(30);

/// One request as the server read it.
#[derive(Debug, Clone)]
pub struct Arrival {
    pub method: String,
    pub target: String,
    pub body: Vec<u8>,
    /// The values of every `Idempotency-Key` field (name compared case-insensitively).
    pub keys: Vec<String>,
    /// Every header field as received, names ASCII lower-cased, in order (the driver reads the
    /// attempt header of a scenario from them).
    pub headers: Vec<(String, String)>,
    /// False when the server closed the connection after the head, before reading the body
    /// (`close_after_head`): `body` is then empty and says nothing about what the client sent.
    pub body_read: bool,
    /// The protocol the request came over: `http1`, `http1-tls`, `h2c` or `h2`.
    pub protocol: &'static str,
    /// The soak fault this arrival got (None outside the soak).
    pub fault: Option<String>,
}

/// A run and a scenario (or soak request) id.
pub(super) type Key = (String, String);

/// The scripts by scenario id.
pub(super) type Scripts = HashMap<String, Vec<Step>>;

#[derive(Default)]
pub(super) struct State {
    arrivals: Mutex<HashMap<Key, Vec<Arrival>>>,
    /// HTTP/2 refusals that prove the request unprocessed (REFUSED_STREAM, GOAWAY below its
    /// stream), by kind: not arrivals, but they advance the script.
    refused: Mutex<HashMap<Key, Vec<String>>>,
    /// The soak's faults are drawn for `#soak<seed>` runs once enabled.
    soak: AtomicBool,
    pub(super) last_activity: Mutex<Option<Instant>>,
}

impl State {
    /// How many times the request of `key` reached the server so far, refusals included: the
    /// index of the script step its next arrival gets (a refused-then-201 script could never get
    /// past its refusal otherwise).
    fn reached(&self, key: &Key) -> usize {
        let arrivals = self.arrivals.lock().unwrap().get(key).map_or(0, Vec::len);
        let refused = self.refused.lock().unwrap().get(key).map_or(0, Vec::len);
        arrivals + refused
    }

    /// The step the next arrival of `key` over `protocol` gets, and its soak fault kind (None:
    /// neither a scenario nor a soak request).
    pub(super) fn step(
        &self,
        key: &Key,
        scripts: &Scripts,
        protocol: &str,
    ) -> Option<(Step, Option<String>)> {
        let n = self.reached(key);
        if let Some(script) = scripts.get(&key.1) {
            return Some((script[n.min(script.len() - 1)].clone(), None));
        }
        let seed = key.0.split_once("#soak")?.1.parse().ok()?;
        let index = key.1.strip_prefix("soak-")?.parse().ok()?;
        if !self.soak.load(Ordering::SeqCst) {
            return None;
        }
        let (kind, step) = soak_fault(seed, index, n, protocol);
        Some((step, Some(kind.to_string())))
    }

    pub(super) fn record(&self, key: Key, arrival: Arrival) {
        self.arrivals
            .lock()
            .unwrap()
            .entry(key)
            .or_default()
            .push(arrival);
    }

    pub(super) fn refuse(&self, key: Key, kind: String) {
        self.refused
            .lock()
            .unwrap()
            .entry(key)
            .or_default()
            .push(kind);
    }
}

/// The soak's fault for the `arrival`-th time (0-based, refusals included) request `index` of
/// seed `seed` reached the server over `protocol`: drawn with splitmix64 from the three, so a
/// seed replays the same faults; from the fifth arrival on, success (every retry budget ends).
pub(super) fn soak_fault(
    seed: u64,
    index: u64,
    arrival: usize,
    protocol: &str,
) -> (&'static str, Step) {
    use super::Action;
    let status = |status: u16, retry_after: bool| Step::Status {
        status,
        headers: if retry_after {
            vec![("Retry-After".to_string(), "0".to_string())]
        } else {
            Vec::new()
        },
        body: None,
    };
    let success = ("success", status(200, false));
    if arrival >= 4 {
        return success;
    }
    let mut rng = super::soak::SplitMix::new(
        seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ (arrival as u64).wrapping_mul(0xD1B5_4A32_D192_ED03),
    );
    rng.next_u64();
    let roll = rng.below(100);
    let http2 = matches!(protocol, "h2c" | "h2");
    // Weights out of 100; the stall (longer than the soak's 1500 ms attempt timeout) is rare
    // so a run stays short.
    match roll {
        0..=29 => success,
        30..=37 => ("503", status(503, false)),
        38..=45 => ("503-retry-after-0", status(503, true)),
        46..=53 => ("429-retry-after-0", status(429, true)),
        54..=59 => ("421", status(421, false)),
        60..=65 => ("500", status(500, false)),
        66..=73 => ("reset", Step::Action(Action::Reset)),
        74..=81 => ("close", Step::Action(Action::Close)),
        82..=87 => (
            "headers-then-close",
            Step::Action(Action::CloseAfterHeaders { status: 200 }),
        ),
        88..=89 => ("stall", Step::Action(Action::Stall { ms: 2500 })),
        _ if !http2 => ("close-after-head", Step::Action(Action::CloseAfterHead)),
        90..=93 => (
            "rst-stream-protocol-error",
            Step::Action(Action::RstStream {
                code: "PROTOCOL_ERROR".to_string(),
            }),
        ),
        94..=96 => ("refused-stream", Step::Action(Action::RefusedStream)),
        _ => (
            "goaway-unprocessed",
            Step::Action(Action::GoawayUnprocessed),
        ),
    }
}

/// The listeners of one protocol.
#[derive(Debug, Clone, Copy)]
struct Ports {
    main: SocketAddr,
    other: SocketAddr,
    /// TLS protocols only: the same server presenting a certificate no trusted CA signed.
    untrusted: Option<SocketAddr>,
}

pub struct Server {
    /// The HTTP/1.1 server (`http1`).
    pub addr: SocketAddr,
    /// A port that fails every TLS handshake with a fatal `handshake_failure` alert.
    mismatch_addr: SocketAddr,
    ports: HashMap<&'static str, Ports>,
    ca_file: CaFile,
    state: Arc<State>,
    stop: Arc<AtomicBool>,
    accept: Vec<thread::JoinHandle<()>>,
    wake: Vec<SocketAddr>,
    /// Runs the HTTP/2 listeners and connections.
    runtime: Option<tokio::runtime::Runtime>,
}

/// What a listener does with each connection it accepts.
#[derive(Clone)]
enum Kind {
    /// HTTP/1.1 under `protocol`, over TLS with `tls` when given.
    Http1 {
        protocol: &'static str,
        tls: Option<Arc<ServerConfig>>,
    },
    TlsMismatch,
}

fn spawn_acceptor(
    listener: TcpListener,
    kind: Kind,
    state: Arc<State>,
    scripts: Arc<Scripts>,
    stop: Arc<AtomicBool>,
    started: Instant,
    lifetime: Duration,
) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let active = Arc::new(AtomicUsize::new(0));
        for stream in listener.incoming() {
            if stop.load(Ordering::SeqCst) || started.elapsed() > lifetime {
                break;
            }
            let Ok(stream) = stream else { continue };
            *state.last_activity.lock().unwrap() = Some(Instant::now());
            if active.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
                drop(stream);
                continue;
            }
            active.fetch_add(1, Ordering::SeqCst);
            let (state, scripts, active) = (state.clone(), scripts.clone(), active.clone());
            let kind = kind.clone();
            thread::spawn(move || {
                let _ = match kind {
                    Kind::Http1 {
                        protocol,
                        tls: None,
                    } => serve(stream, protocol, &state, &scripts),
                    Kind::Http1 {
                        protocol,
                        tls: Some(config),
                    } => ServerConnection::new(config)
                        .map_err(io::Error::other)
                        .and_then(|conn| {
                            serve(StreamOwned::new(conn, stream), protocol, &state, &scripts)
                        }),
                    Kind::TlsMismatch => refuse_handshake(stream),
                };
                active.fetch_sub(1, Ordering::SeqCst);
            });
        }
    })
}

fn bind() -> io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    Ok((listener, addr))
}

impl Server {
    /// Binds its ports on 127.0.0.1 and serves `scenarios` until dropped, or until `lifetime`
    /// has passed. The CA file goes to `target/faults/`.
    pub fn start(scenarios: Vec<Scenario>, lifetime: Duration) -> io::Result<Server> {
        let trusted = Authority::generate("retrygen fault-matrix test CA")?;
        let untrusted = Authority::generate("retrygen fault-matrix CA nobody trusts")?;
        let ca_file = CaFile::write(
            &crate::toolchains::root().join("target/faults"),
            &trusted.ca_pem,
        )?;
        let state = Arc::new(State::default());
        let stop = Arc::new(AtomicBool::new(false));
        let scripts: Arc<Scripts> = Arc::new(
            scenarios
                .into_iter()
                .map(|s| (s.id.clone(), s.script))
                .collect(),
        );
        let started = Instant::now();
        let mut listeners: Vec<(TcpListener, Kind)> = Vec::new();
        let mut ports = HashMap::new();
        let mut listen = |kind: Kind| -> io::Result<SocketAddr> {
            let (listener, addr) = bind()?;
            listeners.push((listener, kind));
            Ok(addr)
        };
        let http1 = Kind::Http1 {
            protocol: "http1",
            tls: None,
        };
        ports.insert(
            "http1",
            Ports {
                main: listen(http1.clone())?,
                other: listen(http1)?,
                untrusted: None,
            },
        );
        let tls1 = Kind::Http1 {
            protocol: "http1-tls",
            tls: Some(trusted.server_config(b"http/1.1")?),
        };
        ports.insert(
            "http1-tls",
            Ports {
                main: listen(tls1.clone())?,
                other: listen(tls1)?,
                untrusted: Some(listen(Kind::Http1 {
                    protocol: "http1-tls",
                    tls: Some(untrusted.server_config(b"http/1.1")?),
                })?),
            },
        );
        let mismatch_addr = listen(Kind::TlsMismatch)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("fault-server-h2")
            .enable_all()
            .build()?;
        for (protocol, tls) in [("h2c", None), ("h2", Some(&trusted))] {
            let listen2 = |authority: Option<&Authority>| -> io::Result<SocketAddr> {
                let (listener, addr) = bind()?;
                let tls = authority.map(|a| a.server_config(b"h2")).transpose()?;
                super::h2::spawn(
                    &runtime,
                    listener,
                    super::h2::Listener {
                        protocol,
                        tls,
                        state: state.clone(),
                        scripts: scripts.clone(),
                        stop: stop.clone(),
                        started,
                        lifetime,
                    },
                )?;
                Ok(addr)
            };
            let main = listen2(tls)?;
            let other = listen2(tls)?;
            let untrusted = tls.map(|_| listen2(Some(&untrusted))).transpose()?;
            ports.insert(
                protocol,
                Ports {
                    main,
                    other,
                    untrusted,
                },
            );
        }
        let wake: Vec<SocketAddr> = listeners
            .iter()
            .filter_map(|(l, _)| l.local_addr().ok())
            .collect();
        let accept = listeners
            .into_iter()
            .map(|(listener, kind)| {
                spawn_acceptor(
                    listener,
                    kind,
                    state.clone(),
                    scripts.clone(),
                    stop.clone(),
                    started,
                    lifetime,
                )
            })
            .collect();
        let http1 = ports["http1"];
        Ok(Server {
            addr: http1.main,
            mismatch_addr,
            ports,
            ca_file,
            state,
            stop,
            accept,
            wake,
            runtime: Some(runtime),
        })
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The variables a runner needs to run over `protocol` (conformance/faults/README.md "A
    /// runner"). Panics for a protocol the server does not speak: the driver's list and the
    /// server's must agree.
    pub fn env(&self, protocol: &str) -> Vec<(&'static str, String)> {
        let Some(ports) = self.ports.get(protocol) else {
            panic!(
                "the fault server does not speak {protocol:?}; it speaks {:?}",
                self.protocols()
            );
        };
        let scheme = if protocol.ends_with("tls") || protocol == "h2" {
            "https"
        } else {
            "http"
        };
        // The untrusted port of the same HTTP version (over plain TCP: its TLS sibling's), so
        // every variable is always set.
        let untrusted = ports
            .untrusted
            .or_else(|| {
                let sibling = if protocol == "h2c" { "h2" } else { "http1-tls" };
                self.ports.get(sibling).and_then(|p| p.untrusted)
            })
            .expect("every TLS protocol has an untrusted port");
        let closed = super::closed_port().expect("a free port");
        vec![
            ("RETRYGEN_FAULT_URL", format!("{scheme}://{}", ports.main)),
            ("RETRYGEN_FAULT_PROTOCOL", protocol.to_string()),
            (
                "RETRYGEN_FAULT_CLOSED_URL",
                format!("{scheme}://127.0.0.1:{closed}"),
            ),
            (
                "RETRYGEN_FAULT_UNRESOLVABLE_URL",
                format!("{scheme}://sandbox.invalid:{}", ports.main.port()),
            ),
            ("RETRYGEN_FAULT_BASE_PATH", "/v1".to_string()),
            (
                "RETRYGEN_FAULT_OTHER_ORIGIN_URL",
                format!("{scheme}://{}", ports.other),
            ),
            (
                "RETRYGEN_FAULT_CA_FILE",
                self.ca_file.path.display().to_string(),
            ),
            (
                "RETRYGEN_FAULT_UNTRUSTED_URL",
                format!("https://{untrusted}"),
            ),
            (
                "RETRYGEN_FAULT_TLS_MISMATCH_URL",
                format!("https://{}", self.mismatch_addr),
            ),
        ]
    }

    /// The protocols this server speaks.
    pub fn protocols(&self) -> Vec<&'static str> {
        super::PROTOCOLS
            .into_iter()
            .filter(|p| self.ports.contains_key(p))
            .collect()
    }

    /// What arrived for one run and scenario, in order.
    pub fn arrivals(&self, run: &str, scenario: &str) -> Vec<Arrival> {
        self.state
            .arrivals
            .lock()
            .unwrap()
            .get(&(run.to_string(), scenario.to_string()))
            .cloned()
            .unwrap_or_default()
    }

    /// Draws the soak's faults for `#soak<seed>` runs (conformance/faults/README.md "The soak");
    /// the seed comes from the run name, so every seed of a soak shares this one switch.
    pub fn enable_soak(&self, _seed: u64) {
        self.state.soak.store(true, Ordering::SeqCst);
    }

    /// The HTTP/2 refusals (REFUSED_STREAM, GOAWAY below the stream) one request got, by kind, in
    /// order: not arrivals, the request provably unprocessed.
    pub fn refused_faults(&self, run: &str, scenario: &str) -> Vec<String> {
        self.state
            .refused
            .lock()
            .unwrap()
            .get(&(run.to_string(), scenario.to_string()))
            .cloned()
            .unwrap_or_default()
    }

    /// The last time a connection was accepted (None: never).
    pub fn last_activity(&self) -> Option<Instant> {
        *self.state.last_activity.lock().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes each accept loop so it sees the flag.
        for addr in &self.wake {
            let _ = TcpStream::connect_timeout(addr, Duration::from_secs(1));
        }
        for accept in self.accept.drain(..) {
            let _ = accept.join();
        }
        // Drops every HTTP/2 connection and accept loop.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

/// A connection HTTP/1.1 is served over: plain TCP or rustls over TCP.
trait Conn: Read + Write {
    fn tcp(&self) -> &TcpStream;

    /// Ends the response stream cleanly (over TLS: `close_notify`, then FIN).
    fn finish(&mut self) {
        let _ = self.flush();
        let _ = self.tcp().shutdown(Shutdown::Write);
    }
}

impl Conn for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

impl Conn for StreamOwned<ServerConnection, TcpStream> {
    fn tcp(&self) -> &TcpStream {
        &self.sock
    }

    fn finish(&mut self) {
        self.conn.send_close_notify();
        let _ = self.flush();
        let _ = self.sock.shutdown(Shutdown::Write);
    }
}

struct Request {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Serves one connection: requests one after another while the client keeps it open.
fn serve<C: Conn>(
    conn: C,
    protocol: &'static str,
    state: &State,
    scripts: &Scripts,
) -> io::Result<()> {
    conn.tcp().set_read_timeout(Some(IDLE))?;
    conn.tcp().set_nodelay(true)?;
    let mut reader = BufReader::new(conn);
    loop {
        // Over TLS the handshake happens inside the first read.
        let Some(mut request) = read_head(&mut reader)? else {
            return Ok(());
        };
        let close_requested = request
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        if let Some(warmup) = request.header("x-fault-warmup") {
            let close = warmup.eq_ignore_ascii_case("close");
            read_body(&mut request, &mut reader)?;
            // No `Connection: close` even for `close`: the client pools the connection and
            // finds it closed only when it reuses it (a stale pooled connection).
            respond(reader.get_mut(), 200, &[], b"ok")?;
            if close || close_requested {
                reader.get_mut().finish();
                return Ok(());
            }
            continue;
        }
        let (Some(run), Some(id)) = (
            request.header("x-fault-run"),
            request.header("x-fault-scenario"),
        ) else {
            respond(
                reader.get_mut(),
                400,
                &[],
                b"x-fault-run and x-fault-scenario headers are required",
            )?;
            return Ok(());
        };
        let key: Key = (run.to_string(), id.to_string());
        let Some((step, fault)) = state.step(&key, scripts, protocol) else {
            respond(reader.get_mut(), 404, &[], b"unknown scenario")?;
            return Ok(());
        };
        let step = &step;
        let body_read = !matches!(step, Step::Action(super::Action::CloseAfterHead));
        if body_read {
            read_body(&mut request, &mut reader)?;
        }
        state.record(
            key,
            Arrival {
                method: request.method.clone(),
                target: request.target.clone(),
                body: request.body.clone(),
                keys: request
                    .headers
                    .iter()
                    .filter(|(n, _)| n.eq_ignore_ascii_case("idempotency-key"))
                    .map(|(_, v)| v.clone())
                    .collect(),
                headers: request
                    .headers
                    .iter()
                    .map(|(n, v)| (n.to_ascii_lowercase(), v.clone()))
                    .collect(),
                body_read,
                protocol,
                fault,
            },
        );
        let conn = reader.get_mut();
        match step {
            Step::Status {
                status,
                headers,
                body,
            } => {
                let body = Step::status_body(*status, body.as_deref());
                respond(conn, *status, headers, &body)?;
            }
            Step::Action(action) => match action {
                super::Action::Reset => return reset(conn.tcp()),
                super::Action::Close => {
                    conn.finish();
                    return Ok(());
                }
                super::Action::CloseAfterHeaders { status } => {
                    let head = format!(
                        "HTTP/1.1 {status} {}\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n0123456789",
                        reason(*status)
                    );
                    conn.write_all(head.as_bytes())?;
                    conn.finish();
                    return Ok(());
                }
                super::Action::Stall { ms } => {
                    let until = Instant::now() + Duration::from_millis(*ms).min(MAX_STALL);
                    if !wait_while_open(conn.tcp(), until)? {
                        return Ok(());
                    }
                    respond(conn, 200, &[], b"ok")?;
                }
                super::Action::Sse { events } | super::Action::SseDrop { events } => {
                    conn.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n",
                    )?;
                    for i in 1..=*events {
                        let event = format!("data: line {i}\n\n");
                        write!(conn, "{:x}\r\n{event}\r\n", event.len())?;
                        conn.flush()?;
                        thread::sleep(Duration::from_millis(5));
                    }
                    if matches!(action, super::Action::SseDrop { .. }) {
                        return reset(conn.tcp());
                    }
                    conn.write_all(b"0\r\n\r\n")?;
                    conn.flush()?;
                }
                super::Action::SseEvents {
                    events,
                    drop_after,
                    retry_ms,
                    hold_after,
                } => {
                    let (chunks, drop) = super::sse_plan(
                        request.header("last-event-id"),
                        *events,
                        *drop_after,
                        *retry_ms,
                    );
                    conn.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n",
                    )?;
                    for (sent, event) in chunks.into_iter().enumerate() {
                        if hold_after.is_some_and(|n| n as usize == sent)
                            && !wait_while_silent(conn.tcp(), Instant::now() + MAX_STALL)?
                        {
                            return Ok(());
                        }
                        write!(conn, "{:x}\r\n{event}\r\n", event.len())?;
                        conn.flush()?;
                        thread::sleep(Duration::from_millis(5));
                    }
                    if drop {
                        return reset(conn.tcp());
                    }
                    conn.write_all(b"0\r\n\r\n")?;
                    conn.flush()?;
                }
                super::Action::CloseAfterHead => {
                    // The head was read and counted; no `100 Continue`, no body read.
                    let _ = conn.tcp().shutdown(Shutdown::Both);
                    return Ok(());
                }
                // HTTP/2 frames have no HTTP/1.1 form: a scenario using them lists only the
                // HTTP/2 protocols, so this answer means a scenario file error.
                other @ (super::Action::RstStream { .. }
                | super::Action::RefusedStream
                | super::Action::GoawayUnprocessed) => {
                    let body = format!("{other:?} has no HTTP/1.1 form");
                    respond(conn, 500, &[], body.as_bytes())?;
                }
            },
        }
        if close_requested {
            reader.get_mut().finish();
            return Ok(());
        }
    }
}

/// Waits until `until` while the client keeps the connection open; false when it went away.
fn wait_while_open(stream: &TcpStream, until: Instant) -> io::Result<bool> {
    wait_for_client(stream, until, false)
}

/// Waits until `until` while the client keeps the connection open and sends nothing; false when
/// it went away. A client sends nothing while it reads an HTTP/1.1 response, so any byte means it
/// is leaving (TLS's `close_notify` comes before the FIN and would hide it from a peek).
fn wait_while_silent(stream: &TcpStream, until: Instant) -> io::Result<bool> {
    wait_for_client(stream, until, true)
}

/// Peeks every 10 ms until `until`: false once the client closed or reset the connection, or,
/// with `bytes_mean_gone`, sent anything.
fn wait_for_client(stream: &TcpStream, until: Instant, bytes_mean_gone: bool) -> io::Result<bool> {
    stream.set_read_timeout(Some(Duration::from_millis(10)))?;
    let mut probe = [0u8; 1];
    let open = loop {
        if Instant::now() >= until {
            break true;
        }
        match stream.peek(&mut probe) {
            Ok(0) => break false,
            Ok(_) if bytes_mean_gone => break false,
            Ok(_) => thread::sleep(Duration::from_millis(10)),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break false,
        }
    };
    stream.set_read_timeout(Some(IDLE))?;
    Ok(open)
}

/// Closes with a TCP reset: `SO_LINGER` on with a zero timeout; the reset goes out when the
/// descriptor closes (the caller returns and drops the connection).
fn reset(stream: &TcpStream) -> io::Result<()> {
    set_zero_linger(stream.as_raw_fd())
}

/// `SO_LINGER` on with a zero timeout: closing `fd` then sends a reset, not a FIN.
pub(super) fn set_zero_linger(fd: std::os::fd::RawFd) -> io::Result<()> {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket descriptor and a correctly sized, initialised option value.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            std::ptr::addr_of!(linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn respond(
    writer: &mut impl Write,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    let bodiless = status == 204 || status == 304 || status < 200;
    if bodiless {
        head.push_str("\r\n");
    } else {
        if !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
        {
            head.push_str("Content-Type: text/plain\r\n");
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    }
    writer.write_all(head.as_bytes())?;
    if !bodiless {
        writer.write_all(body)?;
    }
    writer.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        400 => "Bad Request",
        404 => "Not Found",
        409 => "Conflict",
        422 => "Unprocessable Content",
        425 => "Too Early",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

fn bad(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_string())
}

/// Reads one request head; None at a clean EOF before any byte of a request.
fn read_head(reader: &mut BufReader<impl Read>) -> io::Result<Option<Request>> {
    let mut head = Vec::new();
    loop {
        let before = head.len();
        let n = reader
            .by_ref()
            .take((MAX_HEAD_BYTES - head.len()) as u64 + 1)
            .read_until(b'\n', &mut head)?;
        if n == 0 {
            return if head.is_empty() {
                Ok(None)
            } else {
                Err(bad("EOF inside a request head"))
            };
        }
        if head.len() > MAX_HEAD_BYTES {
            return Err(bad("request head too large"));
        }
        let line = &head[before..];
        if line == b"\r\n" || line == b"\n" {
            if before == 0 {
                // Tolerates a stray empty line between keep-alive requests (RFC 9112 2.2).
                head.clear();
                continue;
            }
            break;
        }
    }
    let text = String::from_utf8(head).map_err(|_| bad("request head is not UTF-8"))?;
    let mut lines = text.split("\r\n").flat_map(|l| l.split('\n'));
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Err(bad("malformed request line"));
    };
    let headers: Vec<(String, String)> = lines
        .filter(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    Ok(Some(Request {
        method: method.to_string(),
        target: target.to_string(),
        headers,
        body: Vec::new(),
    }))
}

/// Reads the body the head announces (Content-Length or chunked), after a `100 Continue` when
/// the client asked for one.
fn read_body<C: Read + Write>(request: &mut Request, reader: &mut BufReader<C>) -> io::Result<()> {
    if request
        .header("expect")
        .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
    {
        let writer = reader.get_mut();
        writer.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        writer.flush()?;
    }
    let chunked = request
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        request.body = read_chunked(reader)?;
    } else if let Some(length) = request.header("content-length") {
        let length: usize = length.parse().map_err(|_| bad("bad Content-Length"))?;
        if length > MAX_BODY_BYTES {
            return Err(bad("request body too large"));
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        request.body = body;
    }
    Ok(())
}

/// The TLS-mismatch port: reads the ClientHello record, answers a fatal `handshake_failure`
/// alert record (TLS 1.2 record version, as every TLS 1.3 stack accepts), then closes.
fn refuse_handshake(mut stream: TcpStream) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut header = [0u8; 5];
    stream.read_exact(&mut header)?;
    let length = u16::from_be_bytes([header[3], header[4]]) as usize;
    // A record is at most 2^14 bytes plus expansion; read what fits and ignore the rest.
    let mut record = vec![0u8; length.min(18 * 1024)];
    let _ = stream.read_exact(&mut record);
    stream.write_all(&[0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28])?;
    stream.flush()?;
    let _ = stream.shutdown(Shutdown::Write);
    // Drains what the client still sends so the close is a FIN, not a reset.
    let mut sink = [0u8; 1024];
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
    Ok(())
}

fn read_chunked(reader: &mut BufReader<impl Read>) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size_line = String::new();
        reader.by_ref().take(1024).read_line(&mut size_line)?;
        let size_text = size_line.trim().split(';').next().unwrap_or_default();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| bad("bad chunk size line"))?;
        if body.len() + size > MAX_BODY_BYTES {
            return Err(bad("request body too large"));
        }
        if size == 0 {
            // Trailer fields, then the empty line.
            loop {
                let mut line = String::new();
                let n = reader.by_ref().take(8192).read_line(&mut line)?;
                if n == 0 || line == "\r\n" || line == "\n" {
                    return Ok(body);
                }
            }
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        let mut crlf = [0u8; 2];
        reader.read_exact(&mut crlf)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(id: &str, script: &str) -> Scenario {
        let json = format!(
            r#"{{"id": "{id}", "method": "GET", "path": "/x", "script": {script},
                "expect": {{"arrivals": 0, "status": 200, "events": [],
                  "finish": {{"reason": "r", "attempts": 1, "outcome": "status", "timed_out": false}},
                  "operation": {{"method": "GET", "path_template": null, "operation_id": null}}}}}}"#
        );
        serde_json::from_str(&json).expect("a valid scenario")
    }

    fn send(server: &Server, request: &str) -> io::Result<String> {
        let mut stream = TcpStream::connect(server.addr)?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        stream.write_all(request.as_bytes())?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer)?;
        Ok(answer)
    }

    /// Arrivals are counted per run and scenario, the last step repeats, chunked bodies are
    /// decoded, and a reset reaches the client as a reset after the request was counted.
    #[test]
    fn counts_arrivals_and_follows_the_script() {
        let server = Server::start(
            vec![
                scenario(
                    "seq",
                    r#"[{"status": 503, "headers": {"Retry-After": "1"}}, {"status": 201}]"#,
                ),
                scenario("rst", r#"[{"action": "reset"}]"#),
            ],
            Duration::from_secs(60),
        )
        .expect("binds");
        let get = |run: &str, id: &str| {
            format!("GET /v1/x HTTP/1.1\r\nHost: h\r\nx-fault-run: {run}\r\nx-fault-scenario: {id}\r\nConnection: close\r\n\r\n")
        };
        let first = send(&server, &get("a", "seq")).expect("answers");
        assert!(first.starts_with("HTTP/1.1 503 "), "{first}");
        assert!(first.contains("Retry-After: 1\r\n"), "{first}");
        for _ in 0..2 {
            let next = send(&server, &get("a", "seq")).expect("answers");
            assert!(next.starts_with("HTTP/1.1 201 "), "{next}");
        }
        assert_eq!(server.arrivals("a", "seq").len(), 3);
        assert_eq!(server.arrivals("b", "seq").len(), 0);

        let chunked = "POST /v1/x HTTP/1.1\r\nHost: h\r\nx-fault-run: b\r\nx-fault-scenario: seq\r\nTransfer-Encoding: chunked\r\nIdempotency-Key: k1\r\nConnection: close\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        send(&server, chunked).expect("answers");
        let arrivals = server.arrivals("b", "seq");
        assert_eq!(arrivals[0].body, b"abcde");
        assert_eq!(arrivals[0].keys, ["k1"]);
        assert_eq!(arrivals[0].target, "/v1/x");

        let reset = send(&server, &get("a", "rst"));
        assert!(
            matches!(&reset, Err(e) if e.kind() == io::ErrorKind::ConnectionReset)
                || matches!(&reset, Ok(text) if text.is_empty()),
            "{reset:?}"
        );
        assert_eq!(server.arrivals("a", "rst").len(), 1);
    }

    /// `hold_after`: the server sends that many events, then holds the stream open while the
    /// client stays, and stops when it goes away (a caller closing its body mid-stream).
    #[test]
    fn sse_events_hold_after_waits_for_the_client() {
        let server = Server::start(
            vec![scenario(
                "held",
                r#"[{"action": "sse_events", "events": 5, "hold_after": 2}]"#,
            )],
            Duration::from_secs(60),
        )
        .expect("binds");
        let mut stream = TcpStream::connect(server.addr).expect("connects");
        stream
            .write_all(b"GET /v1/s HTTP/1.1\r\nHost: h\r\nx-fault-run: a\r\nx-fault-scenario: held\r\n\r\n")
            .unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        // Everything the server sends within 300 ms of silence: the head and two events.
        while let Ok(n) = stream.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
        }
        let seen = String::from_utf8_lossy(&seen);
        assert!(seen.contains("id: 2\ndata: line 2\n\n"), "{seen}");
        assert!(!seen.contains("id: 3"), "held after two events: {seen}");
        drop(stream);
        assert_eq!(server.arrivals("a", "held").len(), 1);
    }

    /// Contract v3's steps over HTTP/1.1: `sse_events` drops after `drop_after` events and
    /// resumes after the request's `Last-Event-ID`; a status step's `body` and `Content-Type`
    /// are answered as written.
    #[test]
    fn sse_events_resume_and_a_problem_body() {
        let server = Server::start(
            vec![
                scenario(
                    "stream",
                    r#"[{"action": "sse_events", "events": 4, "drop_after": 2, "retry_ms": 50}]"#,
                ),
                scenario(
                    "quota",
                    r#"[{"status": 429, "headers": {"Content-Type": "application/problem+json"}, "body": "{\"type\": \"urn:q\"}"}]"#,
                ),
            ],
            Duration::from_secs(60),
        )
        .expect("binds");
        let get = |last: &str| {
            format!("GET /v1/s HTTP/1.1\r\nHost: h\r\nx-fault-run: a\r\nx-fault-scenario: stream\r\n{last}Connection: close\r\n\r\n")
        };
        let mut stream = TcpStream::connect(server.addr).expect("connects");
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        stream.write_all(get("").as_bytes()).unwrap();
        let mut first = Vec::new();
        let dropped = stream.read_to_end(&mut first);
        let first = String::from_utf8_lossy(&first);
        assert!(
            first.contains("retry: 50\nid: 1\ndata: line 1\n\n"),
            "{first}"
        );
        assert!(first.contains("id: 2\ndata: line 2\n\n"), "{first}");
        assert!(!first.contains("id: 3"), "{first}");
        assert!(
            dropped.is_err() || !first.contains("\r\n0\r\n\r\n"),
            "a drop, not the last chunk: {first}"
        );
        let second = send(&server, &get("Last-Event-ID: 2\r\n")).expect("answers");
        assert!(
            second.contains("retry: 50\nid: 3\ndata: line 3\n\n"),
            "{second}"
        );
        assert!(second.contains("id: 4\ndata: line 4\n\n"), "{second}");
        assert!(second.ends_with("0\r\n\r\n"), "ends cleanly: {second}");
        let arrivals = server.arrivals("a", "stream");
        assert_eq!(arrivals.len(), 2);
        let last_id = |i: usize| {
            arrivals[i]
                .headers
                .iter()
                .find(|(n, _)| n == "last-event-id")
                .map(|(_, v)| v.clone())
        };
        assert_eq!((last_id(0), last_id(1)), (None, Some("2".to_string())));

        let quota = send(
            &server,
            "GET /v1/q HTTP/1.1\r\nHost: h\r\nx-fault-run: a\r\nx-fault-scenario: quota\r\nConnection: close\r\n\r\n",
        )
        .expect("answers");
        assert!(quota.starts_with("HTTP/1.1 429 "), "{quota}");
        assert!(
            quota.contains("Content-Type: application/problem+json\r\n"),
            "{quota}"
        );
        assert!(!quota.contains("text/plain"), "{quota}");
        assert!(quota.ends_with("\r\n\r\n{\"type\": \"urn:q\"}"), "{quota}");
    }

    /// A `close` warm-up is answered 200 `ok` without `Connection: close`, then the connection
    /// closes; `close_after_head` counts the arrival unread and closes before any `100 Continue`;
    /// the other-origin port shares the counts.
    #[test]
    fn warm_close_close_after_head_and_other_origin() {
        let server = Server::start(
            vec![scenario(
                "cah",
                r#"[{"action": "close_after_head"}, {"status": 201}]"#,
            )],
            Duration::from_secs(60),
        )
        .expect("binds");
        let mut stream = TcpStream::connect(server.addr).expect("connects");
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        stream
            .write_all(b"GET /v1/health HTTP/1.1\r\nHost: h\r\nx-fault-warmup: close\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        stream
            .read_to_string(&mut answer)
            .expect("closed after the answer");
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
        assert!(answer.ends_with("\r\n\r\nok"), "{answer}");
        assert!(
            !answer.to_ascii_lowercase().contains("connection: close"),
            "{answer}"
        );

        let post = "POST /v1/x HTTP/1.1\r\nHost: h\r\nx-fault-run: a\r\nx-fault-scenario: cah\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n";
        let first = send(&server, post);
        assert!(
            matches!(&first, Ok(text) if text.is_empty()) || first.is_err(),
            "no byte before the close, not even 100 Continue: {first:?}"
        );
        let arrivals = server.arrivals("a", "cah");
        assert_eq!(arrivals.len(), 1);
        assert!(!arrivals[0].body_read);

        let mut other = TcpStream::connect(server.ports["http1"].other).expect("connects");
        other
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        other
            .write_all(
                format!("{post}abc")
                    .replace("Expect: 100-continue\r\n", "Connection: close\r\n")
                    .as_bytes(),
            )
            .unwrap();
        let mut second = String::new();
        other.read_to_string(&mut second).expect("answers");
        assert!(second.starts_with("HTTP/1.1 201 "), "{second}");
        let arrivals = server.arrivals("a", "cah");
        assert_eq!(arrivals.len(), 2);
        assert!(arrivals[1].body_read);
        assert_eq!(arrivals[1].body, b"abc");
    }

    /// A rustls client trusting only the CA file, offering `alpn`.
    fn tls_client(server: &Server, alpn: &[u8]) -> Arc<rustls::ClientConfig> {
        use rustls::pki_types::pem::PemObject;
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls::pki_types::CertificateDer::pem_file_iter(&server.ca_file.path)
            .expect("the CA file reads")
        {
            roots.add(cert.expect("a PEM certificate")).expect("a CA");
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![alpn.to_vec()];
        Arc::new(config)
    }

    fn tls_exchange(
        config: Arc<rustls::ClientConfig>,
        name: &str,
        addr: SocketAddr,
        request: &str,
    ) -> io::Result<(String, Option<Vec<u8>>)> {
        let name = rustls::pki_types::ServerName::try_from(name.to_string()).unwrap();
        let conn = rustls::ClientConnection::new(config, name).map_err(io::Error::other)?;
        let tcp = TcpStream::connect(addr)?;
        tcp.set_read_timeout(Some(Duration::from_secs(5)))?;
        let mut tls = StreamOwned::new(conn, tcp);
        tls.write_all(request.as_bytes())?;
        let mut answer = String::new();
        tls.read_to_string(&mut answer)?;
        Ok((answer, tls.conn.alpn_protocol().map(<[u8]>::to_vec)))
    }

    /// The TLS port presents a certificate for 127.0.0.1 and localhost that the CA file
    /// verifies, negotiates `http/1.1` and counts the request as `http1-tls`; the untrusted port's
    /// certificate fails verification; a client offering only `h2` fails the handshake.
    #[test]
    fn the_tls_ports_present_the_right_certificates() {
        let server = Server::start(
            vec![scenario("ok", r#"[{"status": 200}]"#)],
            Duration::from_secs(60),
        )
        .expect("binds");
        let ports = server.ports["http1-tls"];
        let get = "GET /v1/x HTTP/1.1\r\nHost: h\r\nx-fault-run: t\r\nx-fault-scenario: ok\r\nConnection: close\r\n\r\n";
        for name in ["127.0.0.1", "localhost"] {
            let (answer, alpn) =
                tls_exchange(tls_client(&server, b"http/1.1"), name, ports.main, get)
                    .expect("a verified exchange");
            assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
            assert_eq!(alpn.as_deref(), Some(&b"http/1.1"[..]));
        }
        let arrivals = server.arrivals("t", "ok");
        assert_eq!(arrivals.len(), 2);
        assert!(arrivals.iter().all(|a| a.protocol == "http1-tls"));

        let untrusted = tls_exchange(
            tls_client(&server, b"http/1.1"),
            "127.0.0.1",
            ports.untrusted.expect("an untrusted port"),
            get,
        );
        let error = untrusted.expect_err("the untrusted certificate fails");
        assert!(format!("{error:?}").contains("UnknownIssuer"), "{error:?}");
        let h2_only = tls_exchange(tls_client(&server, b"h2"), "127.0.0.1", ports.main, get);
        assert!(h2_only.is_err(), "{h2_only:?}");
        assert_eq!(server.arrivals("t", "ok").len(), 2);
    }

    /// One HTTP/2 frame as read off the wire.
    #[derive(Debug)]
    struct Frame {
        kind: u8,
        flags: u8,
        stream: u32,
        payload: Vec<u8>,
    }

    fn write_frame(io: &mut impl Write, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        let len = (payload.len() as u32).to_be_bytes();
        let mut frame = vec![len[1], len[2], len[3], kind, flags];
        frame.extend_from_slice(&stream.to_be_bytes());
        frame.extend_from_slice(payload);
        io.write_all(&frame).unwrap();
    }

    /// A minimal HTTP/2 client on the wire, so the tests see the exact frames: the preface, a
    /// request on stream 1 (HPACK literals without indexing), SETTINGS acknowledged; then the
    /// frames until the stream ends, a GOAWAY or (with `to_eof`) the connection closes. The
    /// bool says whether the connection closed.
    fn h2_exchange(
        io: &mut (impl Read + Write),
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        to_eof: bool,
    ) -> (Vec<Frame>, bool) {
        io.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").unwrap();
        write_frame(io, 0x4, 0, 0, &[]);
        let mut block = Vec::new();
        let method = if body.is_empty() { "GET" } else { "POST" };
        let pseudo = [
            (":method", method),
            (":scheme", "http"),
            (":authority", "127.0.0.1"),
            (":path", path),
        ];
        for (name, value) in pseudo.iter().chain(headers) {
            block.push(0);
            block.push(name.len() as u8);
            block.extend_from_slice(name.as_bytes());
            block.push(value.len() as u8);
            block.extend_from_slice(value.as_bytes());
        }
        let end_stream = if body.is_empty() { 0x1 } else { 0 };
        write_frame(io, 0x1, 0x4 | end_stream, 1, &block);
        if !body.is_empty() {
            write_frame(io, 0x0, 0x1, 1, body);
        }
        io.flush().unwrap();
        let mut frames = Vec::new();
        loop {
            let mut head = [0u8; 9];
            if io.read_exact(&mut head).is_err() {
                return (frames, true);
            }
            let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
            let mut payload = vec![0u8; len];
            if io.read_exact(&mut payload).is_err() {
                return (frames, true);
            }
            let frame = Frame {
                kind: head[3],
                flags: head[4],
                stream: u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff,
                payload,
            };
            if frame.kind == 0x4 && frame.flags & 0x1 == 0 {
                write_frame(io, 0x4, 0x1, 0, &[]);
                io.flush().unwrap();
            }
            let ends = frame.stream == 1
                && (frame.kind == 0x3
                    || (matches!(frame.kind, 0x0 | 0x1) && frame.flags & 0x1 != 0));
            let goaway = frame.kind == 0x7;
            frames.push(frame);
            if goaway || (ends && !to_eof) {
                return (frames, false);
            }
        }
    }

    fn tcp(addr: SocketAddr) -> TcpStream {
        let stream = TcpStream::connect(addr).expect("connects");
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        stream
    }

    fn rst_code(frames: &[Frame]) -> Option<u32> {
        frames
            .iter()
            .find(|f| f.kind == 0x3 && f.stream == 1)
            .map(|f| u32::from_be_bytes(f.payload[..4].try_into().unwrap()))
    }

    /// Over h2c: REFUSED_STREAM is answered at the headers and is no arrival, yet advances the
    /// script; RST_STREAM(PROTOCOL_ERROR) comes after the whole request was read and counted;
    /// the GOAWAY of `goaway_unprocessed` names a last-stream-id below the request's stream (0
    /// for stream 1) and then the connection closes.
    #[test]
    fn h2c_refused_stream_rst_stream_and_goaway() {
        let server = Server::start(
            vec![
                scenario(
                    "refuse",
                    r#"[{"action": "refused_stream"}, {"status": 201}]"#,
                ),
                scenario(
                    "rst",
                    r#"[{"action": "rst_stream", "code": "PROTOCOL_ERROR"}, {"status": 201}]"#,
                ),
                scenario(
                    "away",
                    r#"[{"action": "goaway_unprocessed"}, {"status": 201}]"#,
                ),
                scenario("close", r#"[{"action": "close"}]"#),
            ],
            Duration::from_secs(60),
        )
        .expect("binds");
        let addr = server.ports["h2c"].main;
        let run = |id: &'static str| [("x-fault-run", "a"), ("x-fault-scenario", id)];

        let (frames, _) = h2_exchange(&mut tcp(addr), "/v1/x", &run("refuse"), b"abc", false);
        assert_eq!(rst_code(&frames), Some(0x7), "REFUSED_STREAM: {frames:?}");
        assert_eq!(server.arrivals("a", "refuse").len(), 0);
        assert_eq!(server.refused_faults("a", "refuse"), ["refused-stream"]);
        let (frames, _) = h2_exchange(&mut tcp(addr), "/v1/x", &run("refuse"), b"abc", false);
        // The 2xx step's body (the status itself is Huffman-coded HPACK).
        assert!(
            frames.iter().any(|f| f.kind == 0x0 && f.payload == b"ok"),
            "{frames:?}"
        );
        let arrivals = server.arrivals("a", "refuse");
        assert_eq!(arrivals.len(), 1);
        assert_eq!(arrivals[0].body, b"abc");
        assert_eq!(arrivals[0].protocol, "h2c");

        let (frames, _) = h2_exchange(&mut tcp(addr), "/v1/x", &run("rst"), b"abc", false);
        assert_eq!(rst_code(&frames), Some(0x1), "PROTOCOL_ERROR: {frames:?}");
        let arrivals = server.arrivals("a", "rst");
        assert_eq!(arrivals.len(), 1);
        assert_eq!(arrivals[0].body, b"abc");
        assert!(server.refused_faults("a", "rst").is_empty());

        let mut stream = tcp(addr);
        let (frames, _) = h2_exchange(&mut stream, "/v1/x", &run("away"), b"", false);
        let goaway = frames
            .iter()
            .find(|f| f.kind == 0x7)
            .unwrap_or_else(|| panic!("a GOAWAY: {frames:?}"));
        let last = u32::from_be_bytes(goaway.payload[..4].try_into().unwrap());
        assert_eq!(last, 0, "the last-stream-id is below stream 1");
        assert_eq!(rst_code(&frames), None, "no RST_STREAM besides: {frames:?}");
        let mut rest = Vec::new();
        stream
            .read_to_end(&mut rest)
            .expect("closed after the GOAWAY");
        assert_eq!(server.arrivals("a", "away").len(), 0);
        assert_eq!(server.refused_faults("a", "away"), ["goaway-unprocessed"]);

        // `close`: the request is counted, then the connection ends with no frame for it (no
        // RST_STREAM, no GOAWAY): a FIN.
        let (frames, closed) = h2_exchange(&mut tcp(addr), "/v1/x", &run("close"), b"abc", true);
        assert!(closed);
        assert!(
            frames.iter().all(|f| f.stream == 0 && f.kind != 0x7),
            "{frames:?}"
        );
        assert_eq!(server.arrivals("a", "close").len(), 1);
    }

    /// `sse_events` over h2c: the drop resets the connection after the second event (as
    /// `sse_drop` does: no END_STREAM, no RST_STREAM); the resume with
    /// `last-event-id` gets the rest and ends with END_STREAM.
    #[test]
    fn h2c_sse_events_drop_and_resume() {
        let server = Server::start(
            vec![scenario(
                "stream",
                r#"[{"action": "sse_events", "events": 3, "drop_after": 2}]"#,
            )],
            Duration::from_secs(60),
        )
        .expect("binds");
        let addr = server.ports["h2c"].main;
        let run = [("x-fault-run", "a"), ("x-fault-scenario", "stream")];
        let data = |frames: &[Frame]| -> String {
            frames
                .iter()
                .filter(|f| f.kind == 0x0 && f.stream == 1)
                .map(|f| String::from_utf8_lossy(&f.payload).into_owned())
                .collect()
        };
        let (frames, closed) = h2_exchange(&mut tcp(addr), "/v1/s", &run, b"", false);
        assert_eq!(
            data(&frames),
            "id: 1\ndata: line 1\n\nid: 2\ndata: line 2\n\n"
        );
        assert!(closed, "dropped: {frames:?}");
        assert!(
            frames.iter().all(|f| f.kind == 0x4 || f.flags & 0x1 == 0),
            "no END_STREAM: {frames:?}"
        );
        let resume = [run[0], run[1], ("last-event-id", "2")];
        let (frames, closed) = h2_exchange(&mut tcp(addr), "/v1/s", &resume, b"", false);
        assert_eq!(data(&frames), "id: 3\ndata: line 3\n\n");
        assert!(!closed, "ended with END_STREAM: {frames:?}");
        assert_eq!(server.arrivals("a", "stream").len(), 2);
    }

    /// Over h2 (TLS, ALPN `h2`): the certificate verifies against the CA file, arrivals count as
    /// `h2`, and a `close` warm-up is answered `ok` before the connection closes without GOAWAY.
    #[test]
    fn h2_over_tls_and_warm_up_close() {
        let server = Server::start(
            vec![scenario("ok", r#"[{"status": 200}]"#)],
            Duration::from_secs(60),
        )
        .expect("binds");
        let connect = || {
            let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
            let conn = rustls::ClientConnection::new(tls_client(&server, b"h2"), name).unwrap();
            StreamOwned::new(conn, tcp(server.ports["h2"].main))
        };
        let mut tls = connect();
        let (frames, _) = h2_exchange(
            &mut tls,
            "/v1/x",
            &[("x-fault-run", "t"), ("x-fault-scenario", "ok")],
            b"",
            false,
        );
        assert_eq!(tls.conn.alpn_protocol(), Some(&b"h2"[..]));
        assert!(
            frames.iter().any(|f| f.kind == 0x0 && f.payload == b"ok"),
            "{frames:?}"
        );
        let arrivals = server.arrivals("t", "ok");
        assert_eq!(arrivals.len(), 1);
        assert_eq!(arrivals[0].protocol, "h2");
        assert_eq!(arrivals[0].target, "/v1/x");

        let mut tls = connect();
        let (frames, closed) = h2_exchange(
            &mut tls,
            "/v1/health",
            &[("x-fault-warmup", "close")],
            b"",
            true,
        );
        assert!(closed, "{frames:?}");
        assert!(
            frames.iter().any(|f| f.kind == 0x0 && f.payload == b"ok"),
            "{frames:?}"
        );
        assert!(
            !frames.iter().any(|f| f.kind == 0x7),
            "no GOAWAY: {frames:?}"
        );
    }

    /// Through the `h2` crate's client over h2c: a scripted header keeps its value without the
    /// surrounding whitespace HTTP/2 forbids (over HTTP/1.1 that whitespace is OWS).
    #[test]
    fn h2_headers_arrive_as_over_http1() {
        let server = Server::start(
            vec![scenario(
                "hdr",
                r#"[{"status": 400, "headers": {"X-Should-Retry": " TRUE "}}]"#,
            )],
            Duration::from_secs(60),
        )
        .expect("binds");
        let addr = server.ports["h2c"].main;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (status, value) = runtime.block_on(async move {
            let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
            let (mut client, conn) = ::h2::client::handshake(tcp).await.unwrap();
            tokio::spawn(conn);
            let request = http::Request::get(format!("http://{addr}/v1/x"))
                .header("x-fault-run", "a")
                .header("x-fault-scenario", "hdr")
                .body(())
                .unwrap();
            let (response, _) = client.send_request(request, true).unwrap();
            let response = response.await.unwrap();
            let value = response.headers()["x-should-retry"]
                .to_str()
                .unwrap()
                .to_string();
            (response.status().as_u16(), value)
        });
        assert_eq!((status, value.as_str()), (400, "TRUE"));
        assert_eq!(server.arrivals("a", "hdr")[0].protocol, "h2c");
    }

    /// The soak's faults replay by (seed, request, arrival), succeed from the fifth arrival,
    /// and draw HTTP/2 frames only over HTTP/2 and `close_after_head` only over HTTP/1.1.
    #[test]
    fn soak_faults_follow_the_seed_and_the_protocol() {
        let kinds = |seed: u64, protocol: &str| -> Vec<&'static str> {
            (0..200)
                .flat_map(|index| (0..4).map(move |arrival| (index, arrival)))
                .map(|(index, arrival)| soak_fault(seed, index, arrival, protocol).0)
                .collect()
        };
        assert_eq!(kinds(1, "http1"), kinds(1, "http1"));
        assert_ne!(kinds(1, "http1"), kinds(2, "http1"));
        let http1 = kinds(1, "http1-tls");
        let http2 = kinds(1, "h2c");
        for kind in [
            "success",
            "503",
            "reset",
            "close",
            "stall",
            "headers-then-close",
        ] {
            assert!(http1.contains(&kind) && http2.contains(&kind), "{kind}");
        }
        assert!(http1.contains(&"close-after-head"));
        assert!(!http2.contains(&"close-after-head"));
        for kind in [
            "rst-stream-protocol-error",
            "refused-stream",
            "goaway-unprocessed",
        ] {
            assert!(http2.contains(&kind) && !http1.contains(&kind), "{kind}");
        }
        // The stall outlasts the soak's attempt timeout, and stays rare.
        assert!(http1.iter().filter(|k| **k == "stall").count() < http1.len() / 20);
        for arrival in 4..8 {
            assert_eq!(soak_fault(1, 3, arrival, "h2").0, "success");
        }
    }

    /// A soak run's requests get their faults only once the soak is enabled, and the fault is
    /// recorded on the arrival.
    #[test]
    fn soak_requests_get_faults_once_enabled() {
        let server = Server::start(Vec::new(), Duration::from_secs(60)).expect("binds");
        let get = "GET /v1/health HTTP/1.1\r\nHost: h\r\nx-fault-run: go#soak7\r\nx-fault-scenario: soak-0\r\nConnection: close\r\n\r\n";
        let off = send(&server, get).expect("answers");
        assert!(off.starts_with("HTTP/1.1 404 "), "{off}");
        server.enable_soak(7);
        let want = soak_fault(7, 0, 0, "http1").0;
        let _ = send(&server, get);
        let arrivals = server.arrivals("go#soak7", "soak-0");
        assert_eq!(arrivals.len(), 1);
        assert_eq!(arrivals[0].fault.as_deref(), Some(want));
    }

    /// The mismatch port answers a ClientHello with the fatal handshake_failure alert record.
    #[test]
    fn the_mismatch_port_sends_the_alert() {
        let server = Server::start(Vec::new(), Duration::from_secs(60)).expect("binds");
        let mut stream = TcpStream::connect(server.mismatch_addr).expect("connects");
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        // A record header announcing a 4-byte handshake message, then the 4 bytes.
        stream
            .write_all(&[0x16, 0x03, 0x01, 0x00, 0x04, 0x01, 0, 0, 0])
            .unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).expect("closes");
        assert_eq!(answer, [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28]);
    }
}
