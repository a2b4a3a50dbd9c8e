//! A small SDK for the sandbox API of retrygen's fault matrix (`conformance/faults/spec.yaml`),
//! written by hand over reqwest and reqwest-middleware as Rust SDK teams write theirs, with
//! retrygen's reqwest adapter installed in three lines ([`Client::with_retries`]).
//!
//! `retry_policy` is what `retrygen generate` writes for the same document with
//! `adapters = ["reqwest"]` (git-ignored here; `cargo xtask runtime-tests --lang rust` renders
//! it).

use std::sync::Arc;

use reqwest::Method;
use reqwest_middleware::ClientWithMiddleware;

pub mod retry_policy;

use retry_policy::reqwest_adapter::{
    finish_of, FinishEvent, RetryMiddleware, RetryMiddlewareBuilder, RetryOverrides,
};
use retry_policy::OPERATION_TABLE;

/// The API's client: cheap to clone, every clone shares one connection pool and one retry
/// budget.
#[derive(Debug, Clone)]
pub struct Client {
    http: ClientWithMiddleware,
    base_url: Arc<str>,
    overrides: Option<RetryOverrides>,
}

/// What a call returned: a status in 2xx, the body, and how the retries went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The response's status.
    pub status: u16,
    /// The body as text.
    pub body: String,
    /// The adapter's finish event for the call (attempts, reason, delays).
    pub finish: Option<FinishEvent<'static>>,
}

/// Why a call failed.
#[derive(Debug)]
pub enum Error {
    /// The API answered with a status outside 2xx (after the retries the policy allowed).
    Status {
        /// The last response's status.
        status: u16,
        /// The adapter's finish event.
        finish: Option<FinishEvent<'static>>,
    },
    /// No response: the adapter's or reqwest's error of the last attempt.
    Request(reqwest_middleware::Error),
    /// The client could not be built.
    Build(Box<dyn std::error::Error + Send + Sync>),
}

impl Error {
    /// The adapter's finish event, where the error carries one.
    #[must_use]
    pub fn finish(&self) -> Option<&FinishEvent<'static>> {
        match self {
            Error::Status { finish, .. } => finish.as_ref(),
            Error::Request(error) => finish_of(error),
            Error::Build(_) => None,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Status { status, .. } => write!(f, "the API answered {status}"),
            Error::Request(error) => write!(f, "the request failed: {error}"),
            Error::Build(error) => write!(f, "the client could not be built: {error}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<reqwest_middleware::Error> for Error {
    fn from(error: reqwest_middleware::Error) -> Error {
        Error::Request(error)
    }
}

impl Client {
    /// The client for the API at `base_url` (such as `https://api.fault.example/v1`), with the
    /// API's retry policy.
    ///
    /// # Errors
    ///
    /// [`Error::Build`] when reqwest cannot build its client.
    pub fn new(base_url: &str) -> Result<Client, Error> {
        Client::with_retries(base_url, reqwest::Client::builder(), |retries| retries)
    }

    /// The client over `http` (the SDK user's reqwest settings: proxies, TLS, timeouts,
    /// default headers), with the retries `configure` sets on the adapter's builder.
    ///
    /// # Errors
    ///
    /// [`Error::Build`] when reqwest cannot build its client or the policy is invalid.
    pub fn with_retries(
        base_url: &str,
        http: reqwest::ClientBuilder,
        configure: impl FnOnce(RetryMiddlewareBuilder) -> RetryMiddlewareBuilder,
    ) -> Result<Client, Error> {
        let build = |e: Box<dyn std::error::Error + Send + Sync>| Error::Build(e);
        // The adapter's installation: reqwest's redirects counted and its own resends off, then
        // the middleware for this base URL.
        let http = http
            .redirect(RetryMiddleware::redirect_policy(10))
            .retry(reqwest::retry::never());
        let http = http.build().map_err(|e| build(e.into()))?;
        // Dropped event streams of resumable operations are resumed with the same client.
        let retries = configure(
            RetryMiddleware::builder(&OPERATION_TABLE)
                .base_url(base_url)
                .resume_client(http.clone()),
        );
        let http = reqwest_middleware::ClientBuilder::new(http)
            .with(retries.build().map_err(|e| build(e.into()))?)
            .build();
        Ok(Client {
            http,
            base_url: base_url.trim_end_matches('/').into(),
            overrides: None,
        })
    }

    /// This client (same pool, same budget) with `overrides` on every call it makes.
    #[must_use]
    pub fn with_overrides(&self, overrides: RetryOverrides) -> Client {
        Client {
            overrides: Some(overrides),
            ..self.clone()
        }
    }

    /// `GET /sandboxes/{sandboxID}`.
    ///
    /// # Errors
    ///
    /// [`Error::Status`] or [`Error::Request`].
    pub async fn get_sandbox(&self, sandbox_id: &str) -> Result<Reply, Error> {
        self.call(self.request(Method::GET, &format!("/sandboxes/{sandbox_id}")))
            .await
    }

    /// `POST /sandboxes` with `{"image": image}` (not replayable: never retried after it may have
    /// arrived).
    ///
    /// # Errors
    ///
    /// [`Error::Status`] or [`Error::Request`].
    pub async fn create_sandbox(&self, image: &str) -> Result<Reply, Error> {
        let request = self
            .request(Method::POST, "/sandboxes")
            .json(&serde_json::json!({ "image": image }));
        self.call(request).await
    }

    /// `DELETE /sandboxes/{sandboxID}` (idempotent).
    ///
    /// # Errors
    ///
    /// [`Error::Status`] or [`Error::Request`].
    pub async fn kill_sandbox(&self, sandbox_id: &str) -> Result<Reply, Error> {
        self.call(self.request(Method::DELETE, &format!("/sandboxes/{sandbox_id}")))
            .await
    }

    /// `POST /sandboxes/{sandboxID}/snapshots` with `{"name": name}` (keyed: the adapter mints
    /// its idempotency key, sent on every attempt).
    ///
    /// # Errors
    ///
    /// [`Error::Status`] or [`Error::Request`].
    pub async fn snapshot_sandbox(&self, sandbox_id: &str, name: &str) -> Result<Reply, Error> {
        let request = self
            .request(Method::POST, &format!("/sandboxes/{sandbox_id}/snapshots"))
            .json(&serde_json::json!({ "name": name }));
        self.call(request).await
    }

    fn request(&self, method: Method, path: &str) -> reqwest_middleware::RequestBuilder {
        let request = self
            .http
            .request(method, format!("{}{path}", self.base_url));
        match self.overrides {
            Some(overrides) => request.with_extension(overrides),
            None => request,
        }
    }

    async fn call(&self, request: reqwest_middleware::RequestBuilder) -> Result<Reply, Error> {
        let response = request.send().await?;
        let status = response.status().as_u16();
        let finish = response.extensions().get::<FinishEvent<'static>>().cloned();
        if !response.status().is_success() {
            return Err(Error::Status { status, finish });
        }
        let body = response
            .text()
            .await
            .map_err(|e| Error::Request(e.into()))?;
        Ok(Reply {
            status,
            body,
            finish,
        })
    }
}
