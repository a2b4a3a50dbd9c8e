//! Scenarios of `conformance/faults/scenarios.json` made through the SDK's own methods against
//! the fault server at `RETRYGEN_FAULT_URL` (`cargo xtask runtime-tests --lang rust` starts it
//! and names the scenarios in `RETRYGEN_EXAMPLE_SCENARIOS`). This test checks what each call
//! returned and the finish event; xtask then checks the server's arrivals, the minted key and
//! the attempt header values against the scenario file.

use std::sync::{Arc, Mutex};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest_middleware::Middleware;
use sandbox_sdk::retry_policy::reqwest_adapter::{
    FinishEvent, FinishOutcome, RetryAttempt, RetryMiddleware, RetryMiddlewareBuilder,
    RetryOverrides,
};
use sandbox_sdk::retry_policy::OPERATION_TABLE;
use sandbox_sdk::{Client, Error, Reply};

/// What one scenario's call returns: `Ok(status)` or `Err(outcome)`, and the attempts.
struct Want {
    result: Result<u16, FinishOutcome>,
    attempts: i64,
}

/// A middleware below the adapter, as an instrumentation layer would sit: it records
/// OpenTelemetry's `http.request.resend_count` for each attempt (absent on the first send).
struct ResendCount(Arc<Mutex<Vec<Option<u32>>>>);

impl Middleware for ResendCount {
    fn handle<'a, 'b, 'c, 'd>(
        &'a self,
        req: reqwest::Request,
        extensions: &'b mut http::Extensions,
        next: reqwest_middleware::Next<'c>,
    ) -> std::pin::Pin<
        Box<
            dyn std::future::Future<Output = reqwest_middleware::Result<reqwest::Response>>
                + Send
                + 'd,
        >,
    >
    where
        'a: 'd,
        'b: 'd,
        'c: 'd,
        Self: 'd,
    {
        let resend_count = extensions
            .get::<RetryAttempt>()
            .map(|attempt| attempt.resend_count())
            .filter(|&n| n > 0);
        self.0.lock().unwrap().push(resend_count);
        next.run(req, extensions)
    }
}

fn var(name: &str) -> String {
    std::env::var(name)
        .unwrap_or_else(|_| panic!("{name} is not set: run cargo xtask runtime-tests --lang rust"))
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(future)
}

/// The SDK's client for one scenario: the fault server's two headers on every request, the
/// retries `configure` sets, the finish events recorded.
fn client(
    id: &str,
    finishes: &Arc<Mutex<Vec<FinishEvent<'static>>>>,
    configure: impl FnOnce(RetryMiddlewareBuilder) -> RetryMiddlewareBuilder,
) -> Client {
    let base = format!("{}/v1", var("RETRYGEN_FAULT_URL"));
    let mut headers = HeaderMap::new();
    for (name, value) in [
        ("x-fault-run", var("RETRYGEN_FAULT_RUN")),
        ("x-fault-scenario", id.to_owned()),
    ] {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_str(&value).expect("a header value"),
        );
    }
    let http = reqwest::Client::builder()
        .no_proxy()
        .default_headers(headers);
    let recorded = Arc::clone(finishes);
    Client::with_retries(&base, http, move |retries| {
        configure(retries.on_finish(move |event| {
            recorded.lock().unwrap().push(event.clone().into_owned());
        }))
    })
    .expect("the SDK's client")
}

/// The scenario's call through the SDK, and what it must return.
async fn call(
    id: &str,
    finishes: &Arc<Mutex<Vec<FinishEvent<'static>>>>,
) -> (Result<Reply, Error>, Want) {
    match id {
        "get-503-503-200" => {
            let client = client(id, finishes, |r| r);
            (
                client.get_sandbox("sb-1").await,
                Want {
                    result: Ok(200),
                    attempts: 3,
                },
            )
        }
        "create-503-not-replayable" => {
            let client = client(id, finishes, |r| r);
            (
                client.create_sandbox("base").await,
                Want {
                    result: Ok(503),
                    attempts: 1,
                },
            )
        }
        "create-reset-arrives-once" => {
            let client = client(id, finishes, |r| r);
            let want = Want {
                result: Err(FinishOutcome::Transport),
                attempts: 1,
            };
            (client.create_sandbox("base").await, want)
        }
        "kill-reset-arrives-twice" => {
            let client = client(id, finishes, |r| r);
            (
                client.kill_sandbox("sb-1").await,
                Want {
                    result: Ok(204),
                    attempts: 2,
                },
            )
        }
        // The keyed operation: the adapter mints the key the SDK did not set.
        "snapshot-minted-key-reset" => {
            let client = client(id, finishes, |r| r);
            let want = Want {
                result: Ok(201),
                attempts: 2,
            };
            (client.snapshot_sandbox("sb-1", "s1").await, want)
        }
        // The SDK reads the body after the middleware returns: cut, it is retried only
        // when the adapter reads it inside the loop.
        "get-body-cut-read-in-loop-retried" => {
            let client = client(id, finishes, |r| r.read_body(64 << 10));
            (
                client.get_sandbox("sb-1").await,
                Want {
                    result: Ok(200),
                    attempts: 2,
                },
            )
        }
        // A per-request override, on a scoped client sharing the pool and the budget.
        "get-override-max-retries-0-once" => {
            let client =
                client(id, finishes, |r| r).with_overrides(RetryOverrides::new().max_retries(0));
            (
                client.get_sandbox("sb-1").await,
                Want {
                    result: Ok(503),
                    attempts: 1,
                },
            )
        }
        "get-attempt-header-counts-earlier-attempts" => {
            let client = client(id, finishes, |r| {
                r.attempt_header(HeaderName::from_static("x-retry-attempt"))
            });
            (
                client.get_sandbox("sb-1").await,
                Want {
                    result: Ok(200),
                    attempts: 3,
                },
            )
        }
        other => panic!("{other}: no call for this scenario in examples/rust"),
    }
}

#[test]
fn scenarios_through_the_sdk() {
    let ids = var("RETRYGEN_EXAMPLE_SCENARIOS");
    for id in ids.split(',') {
        let finishes = Arc::new(Mutex::new(Vec::new()));
        let (result, want) = block_on(call(id, &finishes));
        let finishes = finishes.lock().unwrap();
        assert_eq!(finishes.len(), 1, "{id}: {finishes:?}");
        let finish = &finishes[0];
        assert_eq!(finish.attempts, want.attempts, "{id}: {finish:?}");
        match (&result, want.result) {
            (Ok(reply), Ok(status)) => {
                assert_eq!(reply.status, status, "{id}");
                // The fault server answers `ok`, except for a 204 (no content).
                let body = if status == 204 { "" } else { "ok" };
                assert_eq!(reply.body, body, "{id}");
                assert_eq!(reply.finish.as_ref(), Some(finish), "{id}");
            }
            (
                Err(Error::Status {
                    status: got,
                    finish: carried,
                }),
                Ok(status),
            ) => {
                assert_eq!(*got, status, "{id}");
                assert_eq!(carried.as_ref(), Some(finish), "{id}");
            }
            (Err(error @ Error::Request(_)), Err(outcome)) => {
                assert_eq!(finish.outcome, outcome, "{id}: {error}");
            }
            (got, _) => panic!("{id}: unexpected {got:?}"),
        }
        println!("{id}: {} attempt(s), {}", finish.attempts, finish.reason);
    }
}

#[test]
fn resend_count_below_the_adapter() {
    // The recipe of the runtime README: a layer below the adapter (where reqwest-tracing's
    // `TracingMiddleware` goes) reads the attempt from the extensions. Its own run name, so that
    // the server's script for `get-503-503-200` starts over.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let base = format!("{}/v1", var("RETRYGEN_FAULT_URL"));
    let retries = RetryMiddleware::builder(&OPERATION_TABLE)
        .base_url(&base)
        .build()
        .unwrap();
    let http = reqwest::Client::builder()
        .no_proxy()
        .redirect(RetryMiddleware::redirect_policy(10))
        .retry(reqwest::retry::never())
        .build()
        .unwrap();
    let client = reqwest_middleware::ClientBuilder::new(http)
        .with(retries)
        .with(ResendCount(Arc::clone(&seen)))
        .build();
    let status = block_on(async {
        client
            .get(format!("{base}/sandboxes/sb-1"))
            .header(
                "x-fault-run",
                format!("{}-telemetry", var("RETRYGEN_FAULT_RUN")),
            )
            .header("x-fault-scenario", "get-503-503-200")
            .send()
            .await
            .unwrap()
            .status()
    });
    assert_eq!(status.as_u16(), 200);
    assert_eq!(*seen.lock().unwrap(), [None, Some(1), Some(2)]);
}
