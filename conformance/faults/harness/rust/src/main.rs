//! The Rust runner of the fault matrix (conformance/faults/README.md): every scenario of the file
//! given as the only argument through a fresh reqwest client with `RetryMiddleware` installed,
//! one JSON line each; with `RETRYGEN_FAULT_BENCH=N`, the adapter's overhead over the bare client
//! instead.

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
use retrygen_fault_runner::retry_policy::reqwest_adapter::{FinishEvent, RetryMiddleware};
use retrygen_fault_runner::retry_policy::{RetryEvent, OPERATION_TABLE};
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
    base_path: String,
    run: String,
}

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"))
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let env = Env {
        url: var("RETRYGEN_FAULT_URL"),
        closed_url: var("RETRYGEN_FAULT_CLOSED_URL"),
        unresolvable_url: var("RETRYGEN_FAULT_UNRESOLVABLE_URL"),
        base_path: std::env::var("RETRYGEN_FAULT_BASE_PATH").unwrap_or_else(|_| "/v1".into()),
        run: var("RETRYGEN_FAULT_RUN"),
    };
    if let Ok(rounds) = std::env::var("RETRYGEN_FAULT_BENCH") {
        let rounds = rounds.parse().expect("RETRYGEN_FAULT_BENCH is a number");
        println!("{}", runtime.block_on(bench(&env, rounds)));
        return;
    }
    let path = std::env::args().nth(1).expect("the scenario file");
    let text = std::fs::read_to_string(&path).expect("the scenario file is readable");
    let file: Value = serde_json::from_str(&text).expect("the scenario file is JSON");
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

/// The bare client: keep-alive, no proxy (the matrix talks to 127.0.0.1 only).
fn bare_client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("a reqwest client")
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
        "method": event.method,
        "path_template": event.path_template,
        "operation_id": event.operation_id,
    })
}

/// The name of a failure's type, for people reading the report.
fn error_type(error: &reqwest_middleware::Error) -> String {
    match error {
        reqwest_middleware::Error::Reqwest(e) => format!("reqwest::Error ({e})"),
        reqwest_middleware::Error::Middleware(e) => format!("reqwest_middleware::Error ({e:#})"),
    }
}

/// What the callbacks of a scenario's client received.
#[derive(Default)]
struct Recorded {
    events: Vec<Value>,
    finish: Option<Value>,
}

/// A new client with the adapter for `scenario` (a fresh retry budget), recording its events.
fn scenario_client(
    scenario: &Value,
    base: &str,
    recorded: &Arc<Mutex<Recorded>>,
) -> ClientWithMiddleware {
    let mut builder = RetryMiddleware::builder(&OPERATION_TABLE)
        .base_url(base)
        .on_retry({
            let recorded = Arc::clone(recorded);
            move |event| recorded.lock().unwrap().events.push(event_json(event))
        })
        .on_finish({
            let recorded = Arc::clone(recorded);
            move |event| recorded.lock().unwrap().finish = Some(finish_json(event))
        });
    if let Some(ms) = scenario["attempt_timeout_ms"].as_u64() {
        builder = builder.attempt_timeout(Duration::from_millis(ms));
    }
    if scenario["mint_keys"].as_bool() == Some(false) {
        builder = builder.mint_idempotency_keys(false);
    }
    ClientBuilder::new(bare_client())
        .with(builder.build().expect("the spec's policy is valid"))
        .build()
}

/// The scenario's request: method, URL, headers and body.
fn scenario_request(
    client: &ClientWithMiddleware,
    scenario: &Value,
    base: &str,
    env: &Env,
) -> RequestBuilder {
    let id = scenario["id"].as_str().expect("an id");
    let method = scenario["method"].as_str().expect("a method");
    let path = scenario["path"].as_str().expect("a path");
    let mut request = client
        .request(
            reqwest::Method::from_bytes(method.as_bytes()).expect("a method"),
            format!("{base}{path}"),
        )
        .header("x-fault-run", &env.run)
        .header("x-fault-scenario", id);
    if let Some(headers) = scenario["headers"].as_object() {
        for (name, value) in headers {
            request = request.header(name.as_str(), value.as_str().expect("a header value"));
        }
    }
    if let Some(body) = scenario.get("body") {
        let text = body["text"].as_str().expect("a body text").to_owned();
        request = match body["kind"].as_str() {
            Some("stream") => request.body(reqwest::Body::wrap(OneShot(Some(Bytes::from(text))))),
            _ => request.body(text),
        };
    }
    request
}

async fn run_scenario(env: &Env, scenario: &Value) -> Value {
    let id = scenario["id"].as_str().expect("an id");
    let target = match scenario["target"].as_str() {
        Some("closed_port") => &env.closed_url,
        Some("unresolvable") => &env.unresolvable_url,
        _ => &env.url,
    };
    let base = format!("{target}{}", env.base_path);
    let recorded = Arc::new(Mutex::new(Recorded::default()));
    let client = scenario_client(scenario, &base, &recorded);
    if scenario["warm"].as_bool() == Some(true) {
        let warm = client
            .get(format!("{base}/health"))
            .header("x-fault-run", &env.run)
            .header("x-fault-scenario", id)
            .header("x-fault-warmup", "1")
            .send()
            .await
            .expect("the warm-up request succeeds");
        warm.bytes().await.expect("the warm-up body");
        *recorded.lock().unwrap() = Recorded::default();
    }
    let request = scenario_request(&client, scenario, &base, env);

    let started = Instant::now();
    let sent = match scenario["abort_after_ms"].as_u64() {
        // Cancelling in Rust: the request's future is dropped when the timer fires.
        Some(ms) => tokio::time::timeout(Duration::from_millis(ms), request.send())
            .await
            .map_err(|elapsed| format!("tokio::time::error::Elapsed ({elapsed})")),
        None => Ok(request.send().await),
    };
    let (status, failed, error_type, body, body_error) = match sent {
        Err(aborted) => (None, true, Some(aborted), None, false),
        Ok(Err(error)) => (None, true, Some(error_type(&error)), None, false),
        Ok(Ok(response)) => {
            let status = response.status().as_u16();
            match response.text().await {
                Ok(text) => (Some(status), false, None, Some(text), false),
                Err(_) => (Some(status), false, None, None, true),
            }
        }
    };
    let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let Recorded { events, finish } = std::mem::take(&mut *recorded.lock().unwrap());
    let outcome = finish.as_ref().and_then(|f| f["outcome"].as_str());
    // The call failed exactly when the finish event says the last attempt got no response.
    let error = match (outcome, failed) {
        (Some(outcome), true) if outcome != "status" => Value::from(outcome),
        (Some("status"), false) => Value::Null,
        _ => Value::from("mismatch"),
    };
    json!({
        "id": id,
        "status": status,
        "error": error,
        "body": body,
        "body_error": body_error,
        "events": events,
        "finish": finish,
        "error_type": error_type,
        "elapsed_ms": elapsed_ms,
    })
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

/// The overhead mode: the median time of a request with the adapter and without it, and the
/// adapter's extra allocation per request.
// Request and byte counts stay far below 2^52: their conversions to f64 are exact.
#[allow(clippy::cast_precision_loss)]
async fn bench(env: &Env, rounds: usize) -> Value {
    let url = format!("{}{}/health", env.url, env.base_path);
    let bare = bare_client();
    let adapter = ClientBuilder::new(bare_client())
        .with(RetryMiddleware::new(&OPERATION_TABLE))
        .build();
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
    let adapter_get = || {
        headers
            .iter()
            .fold(adapter.get(&url), |r, (name, value)| {
                r.header(*name, *value)
            })
            .send()
    };
    for _ in 0..200 {
        timed(bare_get()).await;
        timed(adapter_get()).await;
    }
    let (mut bare_times, mut adapter_times) = (Vec::new(), Vec::new());
    let (mut bare_bytes, mut adapter_bytes) = (0u64, 0u64);
    for round in 0..rounds.max(1) {
        for adapter_turn in [round % 2 == 0, round % 2 == 1] {
            let before = ALLOCATED.load(Ordering::Relaxed);
            if adapter_turn {
                adapter_times.push(timed(adapter_get()).await);
                adapter_bytes += ALLOCATED.load(Ordering::Relaxed) - before;
            } else {
                bare_times.push(timed(bare_get()).await);
                bare_bytes += ALLOCATED.load(Ordering::Relaxed) - before;
            }
        }
    }
    let bare_us = median_us(&mut bare_times);
    let adapter_us = median_us(&mut adapter_times);
    let count = bare_times.len() as f64;
    json!({"bench": {
        "requests": bare_times.len() + adapter_times.len(),
        "bare_us": bare_us,
        "adapter_us": adapter_us,
        "overhead_us": adapter_us - bare_us,
        "overhead_pct": (adapter_us - bare_us) / bare_us * 100.0,
        "allocated_bytes_per_request": (adapter_bytes as f64 - bare_bytes as f64) / count,
        "allocation_counter": "a counting #[global_allocator] (bytes allocated on every thread)",
    }})
}
