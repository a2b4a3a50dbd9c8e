//! The Rust runner of the fault matrix (conformance/faults/README.md): every scenario of the file
//! given as the only argument through a fresh reqwest client with `RetryMiddleware` installed,
//! one JSON line each, over the protocol `RETRYGEN_FAULT_PROTOCOL` names (http1, h2c, http1-tls,
//! h2); with `RETRYGEN_FAULT_SOAK` set, the soak (one client, the plan's requests); with
//! `RETRYGEN_FAULT_BENCH=N`, the adapter's overhead over the bare client instead.

use std::alloc::{GlobalAlloc, Layout, System};
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::Frame;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware, RequestBuilder};
use reqwest_retry::policies::ExponentialBackoff;
use reqwest_retry::RetryTransientMiddleware;
use retrygen_fault_runner::retry_policy::reqwest_adapter::{
    finish_of, FinishEvent, RetryMiddleware, RetryOverrides, StreamFinish,
};
use retrygen_fault_runner::retry_policy::{KeyFormat, RetryEvent, RetryPolicy, OPERATION_TABLE};
use serde_json::{json, Value};

/// The system allocator, counting the bytes it hands out (for the overhead mode).
struct Counting;

static ALLOCATED: AtomicU64 = AtomicU64::new(0);

// The one unsafe item: a global allocator must implement the unsafe `GlobalAlloc` trait; it only
// forwards to the system allocator.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above, i.e. from the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATED.fetch_add(new_size as u64, Ordering::Relaxed);
        // SAFETY: as `alloc` and `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The variables `cargo xtask faults` sets.
struct Env {
    url: String,
    closed_url: String,
    unresolvable_url: String,
    other_origin_url: Option<String>,
    untrusted_url: Option<String>,
    tls_mismatch_url: Option<String>,
    base_path: String,
    run: String,
    protocol: String,
    /// The test CA, the only one the client trusts over TLS.
    ca: Option<reqwest::Certificate>,
}

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"))
}

fn optional(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl Env {
    fn read() -> Env {
        let ca = optional("RETRYGEN_FAULT_CA_FILE").map(|path| {
            let pem = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            reqwest::Certificate::from_pem(&pem).expect("the test CA is PEM")
        });
        Env {
            url: var("RETRYGEN_FAULT_URL"),
            closed_url: var("RETRYGEN_FAULT_CLOSED_URL"),
            unresolvable_url: var("RETRYGEN_FAULT_UNRESOLVABLE_URL"),
            other_origin_url: optional("RETRYGEN_FAULT_OTHER_ORIGIN_URL"),
            untrusted_url: optional("RETRYGEN_FAULT_UNTRUSTED_URL"),
            tls_mismatch_url: optional("RETRYGEN_FAULT_TLS_MISMATCH_URL"),
            base_path: std::env::var("RETRYGEN_FAULT_BASE_PATH").unwrap_or_else(|_| "/v1".into()),
            run: var("RETRYGEN_FAULT_RUN"),
            protocol: optional("RETRYGEN_FAULT_PROTOCOL").unwrap_or_else(|| "http1".into()),
            ca,
        }
    }

    /// The URL of a scenario's `target`.
    fn target(&self, name: &str) -> &str {
        let url = match name {
            "server" => Some(&self.url),
            "closed_port" => Some(&self.closed_url),
            "unresolvable" => Some(&self.unresolvable_url),
            "other_origin" => self.other_origin_url.as_ref(),
            "untrusted_tls" => self.untrusted_url.as_ref(),
            "tls_mismatch" => self.tls_mismatch_url.as_ref(),
            other => panic!("unknown target {other}"),
        };
        url.unwrap_or_else(|| panic!("target {name}: its variable is not set"))
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let env = Env::read();
    if let Ok(rounds) = std::env::var("RETRYGEN_FAULT_BENCH") {
        let rounds = rounds.parse().expect("RETRYGEN_FAULT_BENCH is a number");
        println!("{}", runtime.block_on(bench(&env, rounds)));
        return;
    }
    let path = std::env::args().nth(1).expect("the scenario file");
    let text = std::fs::read_to_string(&path).expect("the scenario file is readable");
    let file: Value = serde_json::from_str(&text).expect("the scenario file is JSON");
    if optional("RETRYGEN_FAULT_SOAK").is_some() {
        runtime.block_on(soak(&env, &file));
        return;
    }
    let scenarios = file["scenarios"].as_array().expect("a list of scenarios");
    for scenario in scenarios {
        println!("{}", runtime.block_on(run_scenario(&env, scenario)));
    }
}

/// A body reqwest can send only once, announced without a length (chunked).
struct OneShot(Option<Bytes>);

impl http_body::Body for OneShot {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.get_mut().0.take().map(|data| Ok(Frame::data(data))))
    }
}

/// The bare client, as the adapter's README tells an SDK to build it: keep-alive, redirects
/// followed and counted (`RetryMiddleware::redirect_policy`), reqwest's own resends of HTTP/2
/// refusals off (the adapter retries them); no proxy (the matrix talks to 127.0.0.1 only); the
/// run's protocol; over TLS, the test CA as the only trusted root.
fn bare_client(env: &Env) -> reqwest::Client {
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .redirect(RetryMiddleware::redirect_policy(10))
        .retry(reqwest::retry::never());
    builder = match env.protocol.as_str() {
        // Over TLS, ALPN then offers `http/1.1` only.
        "http1" | "http1-tls" => builder.http1_only(),
        "h2c" => builder.http2_prior_knowledge(),
        // ALPN: the server's h2 port offers `h2` only.
        "h2" => builder,
        other => panic!("protocol {other}: this runner speaks http1, h2c, http1-tls and h2"),
    };
    if let Some(ca) = &env.ca {
        builder = builder.tls_certs_only([ca.clone()]);
    }
    builder.build().expect("a reqwest client")
}

fn event_json(event: &RetryEvent<'_>) -> Value {
    json!({
        "attempt": event.attempt,
        "reason": event.reason.as_str(),
        "delay_ms": event.delay_ms,
        "method": event.method,
        "path_template": event.path_template,
        "operation_id": event.operation_id,
    })
}

fn finish_json(event: &FinishEvent<'_>) -> Value {
    json!({
        "attempts": event.attempts,
        "reason": event.reason.as_str(),
        "outcome": event.outcome.as_str(),
        "status": event.status,
        "timed_out": event.timed_out,
        "redirects": event.redirects,
        "method": event.method,
        "path_template": event.path_template,
        "operation_id": event.operation_id,
        "total_delay_ms": event.total_delay_ms,
        "server_delay_ms": event.server_delay_ms,
    })
}

/// The name of a failure's type, for people reading the report.
fn error_type(error: &reqwest_middleware::Error) -> String {
    match error {
        reqwest_middleware::Error::Reqwest(e) => format!("reqwest::Error ({e})"),
        reqwest_middleware::Error::Middleware(e) => format!("reqwest_middleware::Error ({e:#})"),
    }
}

/// What the callbacks of a client received during one call.
#[derive(Default)]
struct Recorded {
    events: Vec<Value>,
    finishes: Vec<Value>,
    /// The sum over the finish events of `attempts + redirects`.
    reported_arrivals: i64,
}

/// A new client with the adapter (a fresh retry budget) under `base`, configured by the
/// scenario's (or the soak plan's) options, recording its events.
fn recording_client(
    env: &Env,
    base: &str,
    options: &Value,
    recorded: &Arc<Mutex<Recorded>>,
) -> ClientWithMiddleware {
    let mut builder = RetryMiddleware::builder(&OPERATION_TABLE)
        .base_url(base)
        .mint_idempotency_keys(options["mint_keys"].as_bool() != Some(false))
        .on_retry({
            let recorded = Arc::clone(recorded);
            move |event| recorded.lock().unwrap().events.push(event_json(event))
        })
        .on_finish({
            let recorded = Arc::clone(recorded);
            move |event| {
                let mut recorded = recorded.lock().unwrap();
                recorded.reported_arrivals += event.attempts + event.redirects;
                recorded.finishes.push(finish_json(event));
            }
        });
    if let Some(ms) = options["attempt_timeout_ms"].as_u64() {
        builder = builder.attempt_timeout(Duration::from_millis(ms));
    }
    if let Some(name) = options["attempt_header"].as_str() {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes()).expect("a header name");
        builder = builder.attempt_header(name);
    }
    if let Some(max) = options["read_body_max_bytes"].as_u64() {
        builder = builder.read_body(usize::try_from(max).expect("a byte bound"));
    }
    // Contract v3: the module's default policy with the scenario's keys replaced.
    if let Some(policy) = options["policy"].as_object() {
        let mut replaced = RetryPolicy::default();
        if let Some(format) = policy.get("idempotency_key_format").and_then(Value::as_str) {
            replaced.idempotency_key_format = format.parse::<KeyFormat>().expect("a key format");
        }
        builder = builder.policy(replaced);
    }
    // Dropped event streams of resumable operations are resumed with the same client.
    let http = bare_client(env);
    builder = builder.resume_client(http.clone());
    ClientBuilder::new(http)
        .with(builder.build().expect("the spec's policy is valid"))
        .build()
}

/// The request of a scenario or a soak entry to `url`: method, headers and body.
fn scenario_request(
    client: &ClientWithMiddleware,
    scenario: &Value,
    url: &str,
    env: &Env,
) -> RequestBuilder {
    let id = scenario["id"].as_str().expect("an id");
    let method = scenario["method"].as_str().expect("a method");
    let mut request = client
        .request(
            reqwest::Method::from_bytes(method.as_bytes()).expect("a method"),
            url,
        )
        .header("x-fault-run", &env.run)
        .header("x-fault-scenario", id);
    if let Some(headers) = scenario["headers"].as_object() {
        for (name, value) in headers {
            request = request.header(name.as_str(), value.as_str().expect("a header value"));
        }
    }
    if let Some(overrides) = scenario["overrides"].as_object() {
        let mut retry = RetryOverrides::new();
        if let Some(n) = overrides.get("max_retries").and_then(Value::as_u64) {
            retry = retry.max_retries(u32::try_from(n).expect("max_retries"));
        }
        if let Some(ms) = overrides.get("attempt_timeout_ms").and_then(Value::as_u64) {
            retry = retry.attempt_timeout(Duration::from_millis(ms));
        }
        if let Some(max) = overrides.get("read_body_max_bytes").and_then(Value::as_u64) {
            retry = retry.read_body_max_bytes(usize::try_from(max).expect("a byte bound"));
        }
        request = request.with_extension(retry);
    }
    if let Some(body) = scenario.get("body").filter(|b| !b.is_null()) {
        let text = body["text"].as_str().expect("a body text").to_owned();
        request = match body["kind"].as_str() {
            Some("stream") => request.body(reqwest::Body::wrap(OneShot(Some(Bytes::from(text))))),
            _ => request.body(text),
        };
    }
    request
}

/// The warm-up `GET <base>/health` (not counted by the server; with `close`, the server closes
/// the connection after answering), its body read.
async fn warm_up(client: &ClientWithMiddleware, base: &str, env: &Env, id: &str, close: bool) {
    let warm = client
        .get(format!("{base}/health"))
        .header("x-fault-run", &env.run)
        .header("x-fault-scenario", id)
        .header("x-fault-warmup", if close { "close" } else { "1" })
        .send()
        .await
        .expect("the warm-up request succeeds");
    warm.bytes().await.expect("the warm-up body");
}

/// Sends one request (a scenario's or a soak entry) and returns its report line.
async fn send_one(
    client: &ClientWithMiddleware,
    recorded: &Arc<Mutex<Recorded>>,
    scenario: &Value,
    url: &str,
    env: &Env,
) -> Value {
    let id = scenario["id"].as_str().expect("an id");
    *recorded.lock().unwrap() = Recorded::default();
    let request = scenario_request(client, scenario, url, env);
    let started = Instant::now();
    let sent = match scenario["abort_after_ms"].as_u64() {
        // Cancelling in Rust: the request's future is dropped when the timer fires.
        Some(ms) => tokio::time::timeout(Duration::from_millis(ms), request.send())
            .await
            .map_err(|elapsed| format!("tokio::time::error::Elapsed ({elapsed})")),
        None => Ok(request.send().await),
    };
    let (status, failed, error_type, body, body_error, from_result) = match sent {
        Err(aborted) => (None, true, Some(aborted), None, false, None),
        Ok(Err(error)) => {
            // P5: the finish event the error carries, where it carries one.
            let from_result = finish_of(&error).map(finish_json);
            (
                None,
                true,
                Some(error_type(&error)),
                None,
                false,
                from_result,
            )
        }
        Ok(Ok(response)) => {
            let status = response.status().as_u16();
            let from_result = response
                .extensions()
                .get::<FinishEvent<'static>>()
                .map(finish_json);
            // A resumable event stream's call finishes when its body ends (contract X4).
            let stream = response.extensions().get::<StreamFinish>().cloned();
            let text = match scenario["close_after_events"].as_u64() {
                Some(events) => read_events_then_close(response, events).await,
                None => response.text().await,
            };
            let from_result = from_result.or_else(|| stream?.get().map(finish_json));
            match text {
                Ok(text) => (Some(status), false, None, Some(text), false, from_result),
                Err(_) => (Some(status), false, None, None, true, from_result),
            }
        }
    };
    let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let Recorded {
        events,
        mut finishes,
        reported_arrivals,
    } = std::mem::take(&mut *recorded.lock().unwrap());
    let count = finishes.len();
    let finish = finishes.pop();
    let outcome = finish.as_ref().and_then(|f| f["outcome"].as_str());
    // The call failed exactly when the finish event says the last attempt got no response.
    let error = match (outcome, failed) {
        (Some(outcome), true) if outcome != "status" => Value::from(outcome),
        (Some("status"), false) => Value::Null,
        _ => Value::from("mismatch"),
    };
    let mut line = json!({
        "id": id,
        "status": status,
        "error": error,
        "body": body,
        "body_error": body_error,
        "events": events,
        "finish": finish,
        "finishes": count,
        "reported_arrivals": reported_arrivals,
        "error_type": error_type,
        "elapsed_ms": elapsed_ms,
    });
    // Only where the result carries it (P5): a `reqwest::Error` cannot.
    if let Some(from_result) = from_result {
        line["finish_from_result"] = from_result;
    }
    line
}

/// Reads `response`'s body until the text read holds `events` complete events (a blank line
/// ends each: `\n\n` in the matrix's streams) or ends, then closes the body (Rust's way: the
/// response is dropped) and returns exactly the text read.
async fn read_events_then_close(
    mut response: reqwest::Response,
    events: u64,
) -> Result<String, reqwest::Error> {
    let mut read = Vec::new();
    let complete = |read: &[u8]| read.windows(2).filter(|pair| pair == b"\n\n").count();
    while u64::try_from(complete(&read)).unwrap_or(u64::MAX) < events {
        match response.chunk().await? {
            Some(bytes) => read.extend_from_slice(&bytes),
            None => break,
        }
    }
    drop(response);
    Ok(String::from_utf8_lossy(&read).into_owned())
}

async fn run_scenario(env: &Env, scenario: &Value) -> Value {
    let id = scenario["id"].as_str().expect("an id");
    let target = scenario["target"].as_str().unwrap_or("server");
    // Another origin: the base URL stays the server's, the request goes elsewhere.
    let base_target = if target == "other_origin" {
        "server"
    } else {
        target
    };
    let base = format!("{}{}", env.target(base_target), env.base_path);
    let path = scenario["path"].as_str().expect("a path");
    let url = format!("{}{}{path}", env.target(target), env.base_path);
    let recorded = Arc::new(Mutex::new(Recorded::default()));
    let client = recording_client(env, &base, scenario, &recorded);
    if scenario["warm"].as_bool() == Some(true) {
        let close = scenario["warm_close"].as_bool() == Some(true);
        warm_up(&client, &base, env, id, close).await;
        if let Some(ms) = scenario["warm_pause_ms"].as_u64() {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
    }
    send_one(&client, &recorded, scenario, &url, env).await
}

/// The process's open descriptors and resident memory, from /proc/self.
fn resources() -> Value {
    let fds = std::fs::read_dir("/proc/self/fd").map_or(0, Iterator::count);
    let rss_kb = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
        })
        .unwrap_or(0);
    json!({"fds": fds, "rss_kb": rss_kb})
}

/// The soak (conformance/faults/README.md): one client for every request of the plan.
async fn soak(env: &Env, plan: &Value) {
    let base = format!("{}{}", env.url, env.base_path);
    let recorded = Arc::new(Mutex::new(Recorded::default()));
    let client = recording_client(env, &base, plan, &recorded);
    warm_up(&client, &base, env, "soak-warmup", false).await;
    println!("{}", json!({"soak_start": resources()}));
    for request in plan["requests"].as_array().expect("the plan's requests") {
        let path = request["path"].as_str().expect("a path");
        let url = format!("{base}{path}");
        println!("{}", send_one(&client, &recorded, request, &url, env).await);
    }
    // No collector to run: what is still held at the end is held.
    println!("{}", json!({"soak_end": resources()}));
}

/// The time of one `GET /health` warm-up request (answered at once, never counted), from
/// sending it to the end of its body.
async fn timed<E: std::fmt::Debug>(
    sent: impl std::future::Future<Output = Result<reqwest::Response, E>>,
) -> Duration {
    let started = Instant::now();
    let response = sent.await.expect("the bench request succeeds");
    response.bytes().await.expect("the bench body");
    let elapsed = started.elapsed();
    // Lets hyper's connection task hand the connection back to its pool before the next request
    // (on this one-thread runtime it runs only when the bench yields); otherwise the next request
    // may find the pool empty and open a new connection, and one client of the two pays a TCP
    // handshake per request.
    for _ in 0..4 {
        tokio::task::yield_now().await;
    }
    elapsed
}

fn median_us(times: &mut [Duration]) -> f64 {
    times.sort_unstable();
    times[times.len() / 2].as_secs_f64() * 1e6
}

/// The version of reqwest-retry Cargo.toml pins (the overhead mode's peer).
const REQWEST_RETRY: &str = "reqwest-retry 0.9.1 (RetryTransientMiddleware)";

/// The overhead mode: the median time of a request with the adapter, with reqwest-retry's
/// `RetryTransientMiddleware` (the peer: exponential backoff, 3 retries, its defaults otherwise),
/// through reqwest-middleware with no middleware (the floor both pay) and with the bare reqwest
/// client, each over a reqwest client of its own, in rotating order, and each one's extra
/// allocation per request.
// Request and byte counts stay far below 2^52: their conversions to f64 are exact.
#[allow(clippy::cast_precision_loss)]
async fn bench(env: &Env, rounds: usize) -> Value {
    let url = format!("{}{}/health", env.url, env.base_path);
    // The bare client is reqwest's own (no reqwest-middleware around it): the overhead is all
    // that installing the adapter or the peer costs.
    let bare = bare_client(env);
    let adapter = ClientBuilder::new(bare_client(env))
        .with(RetryMiddleware::new(&OPERATION_TABLE))
        .build();
    let peer = ClientBuilder::new(bare_client(env))
        .with(RetryTransientMiddleware::new_with_policy(
            ExponentialBackoff::builder().build_with_max_retries(3),
        ))
        .build();
    // reqwest-middleware with no middleware: the floor of any layer installed through it.
    let framework = ClientBuilder::new(bare_client(env)).build();
    let headers = [
        ("x-fault-run", env.run.as_str()),
        ("x-fault-scenario", "bench"),
        ("x-fault-warmup", "1"),
    ];
    let bare_get = || {
        headers
            .iter()
            .fold(bare.get(&url), |r, (name, value)| r.header(*name, *value))
            .send()
    };
    let with_middleware = |client: &ClientWithMiddleware| {
        headers
            .iter()
            .fold(client.get(&url), |r, (name, value)| r.header(*name, *value))
            .send()
    };
    // 0: bare, 1: the adapter, 2: the peer, 3: reqwest-middleware alone.
    let (adapter, peer, framework) = (&adapter, &peer, &framework);
    let time = |n: usize| async move {
        match n {
            0 => timed(bare_get()).await,
            1 => timed(with_middleware(adapter)).await,
            2 => timed(with_middleware(peer)).await,
            _ => timed(with_middleware(framework)).await,
        }
    };
    for _ in 0..200 {
        for n in 0..4 {
            time(n).await;
        }
    }
    let mut times: [Vec<Duration>; 4] = Default::default();
    let mut bytes = [0u64; 4];
    for round in 0..rounds.max(1) {
        for k in 0..4 {
            // Each client first, second, third and fourth in turn.
            let n = (round + k) % 4;
            let before = ALLOCATED.load(Ordering::Relaxed);
            times[n].push(time(n).await);
            bytes[n] += ALLOCATED.load(Ordering::Relaxed) - before;
        }
    }
    let [bare_us, adapter_us, peer_us, framework_us] = times.map(|mut t| median_us(&mut t));
    let count = rounds.max(1) as f64;
    let extra = |n: usize| (bytes[n] as f64 - bytes[0] as f64) / count;
    json!({"bench": {
        "requests": 2 * rounds.max(1),
        "bare_us": bare_us,
        "adapter_us": adapter_us,
        "overhead_us": adapter_us - bare_us,
        "overhead_pct": (adapter_us - bare_us) / bare_us * 100.0,
        "allocated_bytes_per_request": extra(1),
        "allocation_counter": "a counting #[global_allocator] (bytes allocated on every thread)",
        "peers": [{
            "name": REQWEST_RETRY,
            "us": peer_us,
            "overhead_us": peer_us - bare_us,
            "overhead_pct": (peer_us - bare_us) / bare_us * 100.0,
            "allocated_bytes_per_request": extra(2),
        }, {
            "name": "reqwest-middleware 0.5.2 alone (ClientWithMiddleware, no middleware)",
            "us": framework_us,
            "overhead_us": framework_us - bare_us,
            "overhead_pct": (framework_us - bare_us) / bare_us * 100.0,
            "allocated_bytes_per_request": extra(3),
        }],
    }})
}
