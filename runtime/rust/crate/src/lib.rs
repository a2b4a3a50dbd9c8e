//! retrygen's Rust runtime as a crate of its own: `runtime.rs`, which generation copies verbatim
//! beside every tables file (`mod.rs`), compiled, linted (clippy pedantic) and tested here
//! without rendering anything. See `README.md`.
//!
//! The enums that are expected to grow are `#[non_exhaustive]`, so an SDK crate that
//! re-exports them keeps its users' code compiling when the contract adds a variant; these
//! doctests fail if the attribute is dropped:
//!
//! ```compile_fail,E0004
//! fn name(reason: retrygen_runtime::Reason) -> &'static str {
//!     use retrygen_runtime::Reason::*;
//!     match reason {
//!         Aborted | NoRetryOperation | Exhausted | NotReplayable | StatusNotRetryable => "stop",
//!         RetryAfterOverCap | Deadline | ServerSaidNo | KeyReused | NoServerDelay => "stop",
//!         BudgetExhausted => "stop",
//!         ServerSaidYes | KeyInFlight => "retry",
//!         ConnectFailure | TransportFailure | RejectedStatus | RetryableStatus => "retry",
//!     }
//! }
//! ```
//!
//! ```compile_fail,E0004
//! fn name(jitter: retrygen_runtime::Jitter) -> &'static str {
//!     use retrygen_runtime::Jitter;
//!     match jitter {
//!         Jitter::Full | Jitter::Equal | Jitter::Decorrelated | Jitter::None => "jitter",
//!     }
//! }
//! ```
//!
//! ```compile_fail,E0004
//! fn name(outcome: retrygen_runtime::Outcome<'_>) -> &'static str {
//!     use retrygen_runtime::Outcome;
//!     match outcome {
//!         Outcome::Status { .. } | Outcome::Connect | Outcome::Transport | Outcome::Aborted => "x",
//!     }
//! }
//! ```
//!
//! Results are `#[non_exhaustive]` structs: readable, not built outside the module.
//!
//! ```compile_fail,E0639
//! let _ = retrygen_runtime::Decision { retry: false, delay_ms: 0, reason: retrygen_runtime::Reason::Aborted, budget_tokens: None };
//! ```
//!
//! The replay classes are deliberately exhaustive (see [`ReplayClass`]):
//!
//! ```
//! fn name(class: retrygen_runtime::ReplayClass) -> &'static str {
//!     use retrygen_runtime::ReplayClass;
//!     match class {
//!         ReplayClass::Idempotent | ReplayClass::Keyed => "maybe",
//!         ReplayClass::NonReplayable | ReplayClass::NoRetry => "no",
//!     }
//! }
//! ```

#[path = "../../runtime.rs"]
mod runtime;

pub use runtime::*;

#[cfg(test)]
mod tests;
