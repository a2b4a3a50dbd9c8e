//! `retrygen explain --spec F METHOD URL`: which operation a concrete request is, its class, the
//! source that decided it (with file:line:column), its idempotency key header, and what the
//! spec's policy does with the first failure of three common kinds. It answers "will my SDK
//! replay this?" without reading generated code.

use crate::decide::{decide, DecisionInput, Outcome};
use crate::diag::Location;
use crate::model::policy::UnknownClass;
use crate::model::{Api, ReplayClass, Resume, Source};

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Explanation {
    /// Upper-case method.
    pub method: String,
    /// The request path as classified (scheme, host, query and fragment removed).
    pub path: String,
    /// The matched operation, or null when the method default decides.
    pub operation: Option<MatchedOperation>,
    pub class: ReplayClass,
    pub reason: String,
    /// What decided the class and where it is written (null location for the method default).
    pub decided_by: Source,
    pub decided_at: Option<Location>,
    pub idempotency_header: Option<String>,
    pub idempotency_header_at: Option<Location>,
    /// Contract v3, A1: the operation streams `text/event-stream` (false for no operation).
    pub streaming: bool,
    /// Where the event-stream media type is declared.
    pub stream_at: Option<Location>,
    /// Contract v3, A2: a dropped stream is resumed with `Last-Event-ID`.
    pub resumable: bool,
    /// What makes a streaming operation resumable or not; null when it does not stream.
    pub resume: Option<Resume>,
    /// Where the `Last-Event-ID` header parameter or `x-retry-stream` is written.
    pub resume_at: Option<Location>,
    /// What the spec's policy does with the first failed attempt.
    pub outcomes: Vec<OutcomeDecision>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MatchedOperation {
    pub operation_id: Option<String>,
    pub method: String,
    pub path: String,
    pub location: Location,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct OutcomeDecision {
    /// `status 503`, `connect failure` or `reset mid-request`.
    pub outcome: &'static str,
    /// For keyed operations, each outcome is decided with and without the key.
    pub has_idempotency_key: bool,
    pub retry: bool,
    /// The delay range over the random number's range (equal when jitter is `none`).
    pub delay_ms_min: u64,
    pub delay_ms_max: u64,
    /// The contract's reason, such as `retryable_status` or `not_replayable`.
    pub decision_reason: &'static str,
}

/// The path of a request given as a path or a full URL.
pub fn request_path(url: &str) -> String {
    let rest = match url.find("://") {
        Some(i) => &url[i + 3..],
        None => match url.strip_prefix("//") {
            Some(r) => r,
            None => return url.to_string(),
        },
    };
    match rest.find(['/', '?', '#']) {
        Some(i) if rest[i..].starts_with('/') => rest[i..].to_string(),
        Some(i) => format!("/{}", &rest[i..]),
        None => "/".to_string(),
    }
}

pub fn explain(api: &Api, method: &str, url: &str) -> Explanation {
    let method = method.to_ascii_uppercase();
    let full = request_path(url);
    let path = full
        .find(['?', '#'])
        .map_or(full.as_str(), |i| &full[..i])
        .to_string();
    let c = api.classify(&method, &path);
    let op = c.operation.map(|i| &api.operations[i]);
    let (reason, decided_by, decided_at, header, header_at) = match op {
        Some(op) => (
            op.reason.clone(),
            op.decided_by.source,
            op.decided_by.at.clone(),
            op.idempotency_header.clone(),
            op.decided_by.key_at.clone(),
        ),
        // C3: a request no operation matches takes the policy's unknown_operation_class.
        None if api.policy.unknown_operation_class != UnknownClass::MethodDefault => (
            format!(
                "no operation matches; the policy's unknown_operation_class makes it {}",
                c.class.name()
            ),
            Source::UnknownOperationClass,
            None,
            None,
            None,
        ),
        None => (
            format!(
                "no operation matches; method default: {method} {} (RFC 9110)",
                if c.class == ReplayClass::Idempotent {
                    "is idempotent"
                } else {
                    "is not idempotent"
                }
            ),
            Source::MethodDefault,
            None,
            None,
            None,
        ),
    };
    let keys: &[bool] = if c.class == ReplayClass::Keyed {
        &[true, false]
    } else {
        &[false]
    };
    let mut outcomes = Vec::new();
    for (name, outcome) in [
        (
            "status 503",
            Outcome::Status {
                status: 503,
                retry_after: None,
                retry_after_ms: None,
            },
        ),
        ("connect failure", Outcome::Connect),
        ("reset mid-request", Outcome::Transport),
    ] {
        for &has_key in keys {
            let at = |random: f64| {
                decide(
                    &api.policy,
                    &DecisionInput {
                        class: c.class,
                        has_idempotency_key: has_key,
                        outcome,
                        retries_used: 0,
                        elapsed_ms: 0,
                        previous_delay_ms: 0,
                        now_ms: 0,
                        random,
                    },
                )
            };
            let (low, high) = (at(0.0), at(1.0 - f64::EPSILON / 2.0));
            outcomes.push(OutcomeDecision {
                outcome: name,
                has_idempotency_key: has_key,
                retry: low.retry,
                delay_ms_min: low.delay_ms,
                delay_ms_max: high.delay_ms,
                decision_reason: low.reason.as_str(),
            });
        }
    }
    let stream = op.and_then(|op| op.stream.as_ref());
    Explanation {
        streaming: stream.is_some(),
        stream_at: stream.map(|s| s.at.clone()),
        resumable: stream.is_some_and(|s| s.resumable),
        resume: stream.map(|s| s.resume),
        resume_at: stream.and_then(|s| s.resume_at.clone()),
        operation: op.map(|op| MatchedOperation {
            operation_id: op.operation_id.clone(),
            method: op.method.clone(),
            path: op.path.clone(),
            location: op.location.clone(),
        }),
        method,
        path,
        class: c.class,
        reason,
        decided_by,
        decided_at,
        idempotency_header: header,
        idempotency_header_at: header_at,
        outcomes,
    }
}

fn place(at: &Location) -> String {
    format!("{}:{}:{} #{}", at.file, at.line, at.column, at.pointer)
}

impl Explanation {
    pub fn render_text(&self, api: &Api) -> String {
        let safe = crate::emit::comment_safe;
        let mut out = format!("{} {}\n", safe(&self.method), safe(&self.path));
        match &self.operation {
            Some(op) => out.push_str(&format!(
                "  operation:          {} ({} {}) at {}\n",
                safe(op.operation_id.as_deref().unwrap_or("(no operationId)")),
                op.method,
                safe(&op.path),
                safe(&place(&op.location))
            )),
            None => out.push_str("  operation:          none matches\n"),
        }
        out.push_str(&format!("  class:              {}\n", self.class.name()));
        out.push_str(&format!(
            "  decided by:         {}{}\n",
            self.decided_by.name(),
            self.decided_at
                .as_ref()
                .map_or(String::new(), |at| format!(" at {}", safe(&place(at))))
        ));
        out.push_str(&format!("  reason:             {}\n", safe(&self.reason)));
        out.push_str(&format!(
            "  idempotency header: {}\n",
            match (&self.idempotency_header, &self.idempotency_header_at) {
                (Some(h), Some(at)) => format!("{} (declared at {})", safe(h), safe(&place(at))),
                (Some(h), None) => safe(h),
                _ => "none".to_string(),
            }
        ));
        match (&self.stream_at, self.resume) {
            (Some(at), Some(resume)) => {
                out.push_str(&format!(
                    "  stream:             text/event-stream at {}\n",
                    safe(&place(at))
                ));
                out.push_str(&format!(
                    "  resumable:          {}: {}{}\n",
                    if self.resumable { "yes" } else { "no" },
                    resume.name(),
                    self.resume_at
                        .as_ref()
                        .map_or(String::new(), |at| format!(" at {}", safe(&place(at))))
                ));
            }
            _ => out.push_str("  stream:             none\n"),
        }
        let p = &api.policy;
        out.push_str(&format!(
            "  policy:             max_retries {}, backoff {}-{} ms x{} ({} jitter), retryable {:?}, rejected {:?}\n",
            p.max_retries,
            p.initial_backoff_ms,
            p.max_backoff_ms,
            p.multiplier,
            p.jitter.name(),
            p.retryable_statuses,
            p.rejected_statuses
        ));
        out.push_str("  after the first failed attempt:\n");
        for o in &self.outcomes {
            let label = if self.class == ReplayClass::Keyed {
                format!(
                    "{} ({} key)",
                    o.outcome,
                    if o.has_idempotency_key {
                        "with the"
                    } else {
                        "without a"
                    }
                )
            } else {
                o.outcome.to_string()
            };
            let what = if !o.retry {
                format!("stop ({})", o.decision_reason)
            } else if o.delay_ms_min == o.delay_ms_max {
                format!("retry after {} ms ({})", o.delay_ms_min, o.decision_reason)
            } else {
                format!(
                    "retry after {}-{} ms ({})",
                    o.delay_ms_min, o.delay_ms_max, o.decision_reason
                )
            };
            out.push_str(&format!("    {label:<34} {what}\n"));
        }
        out
    }

    pub fn render_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("plain data serializes");
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_become_paths() {
        assert_eq!(
            request_path("https://api.example.com/v1/x?y=1"),
            "/v1/x?y=1"
        );
        assert_eq!(request_path("https://api.example.com"), "/");
        assert_eq!(request_path("https://api.example.com?q"), "/?q");
        assert_eq!(request_path("//host/a"), "/a");
        assert_eq!(request_path("/a/b"), "/a/b");
    }

    fn api() -> Api {
        crate::facade::load_api(
            std::path::Path::new("specs/sandbox.yaml"),
            &Default::default(),
        )
        .unwrap()
        .0
    }

    #[test]
    fn a_keyed_create_is_decided_with_and_without_the_key() {
        let e = explain(
            &api(),
            "post",
            "https://api.eu.sandbox.example/v1/v2/sandboxes",
        );
        assert_eq!(e.class, ReplayClass::Keyed);
        assert_eq!(e.idempotency_header.as_deref(), Some("Idempotency-Key"));
        let reset: Vec<_> = e
            .outcomes
            .iter()
            .filter(|o| o.outcome == "reset mid-request")
            .map(|o| (o.has_idempotency_key, o.retry))
            .collect();
        assert_eq!(reset, vec![(true, true), (false, false)]);
    }

    #[test]
    fn unmatched_requests_take_the_method_default() {
        let e = explain(&api(), "POST", "/nowhere");
        assert!(e.operation.is_none());
        assert_eq!(e.class, ReplayClass::NonReplayable);
        assert_eq!(e.decided_by, Source::MethodDefault);
    }

    #[test]
    fn unmatched_requests_take_the_policys_unknown_class() {
        let mut api = api();
        api.policy.unknown_operation_class = UnknownClass::NoRetry;
        let e = explain(&api, "GET", "/nowhere");
        assert!(e.operation.is_none());
        assert_eq!(e.class, ReplayClass::NoRetry);
        assert_eq!(e.decided_by, Source::UnknownOperationClass);
        assert!(
            e.reason
                .contains("unknown_operation_class makes it no_retry"),
            "{}",
            e.reason
        );
    }
}
