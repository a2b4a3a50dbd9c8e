//! The retry policy values (docs/contract.md section 3, "Policy"): defaults, the spec's
//! `x-retry-policy` declarations and retrygen.toml overrides, each validated with a clear error.

use crate::diag::{Diagnostic, Diagnostics};
pub use crate::read::policy::{RawPolicy, RawPolicyEntry, RawValue};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Jitter {
    Full,
    Equal,
    Decorrelated,
    None,
}

impl Jitter {
    pub const ALL: [Jitter; 4] = [
        Jitter::Full,
        Jitter::Equal,
        Jitter::Decorrelated,
        Jitter::None,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Jitter::Full => "full",
            Jitter::Equal => "equal",
            Jitter::Decorrelated => "decorrelated",
            Jitter::None => "none",
        }
    }
}

/// `retry_after_over_cap` (contract v2): what a server delay above `retry_after_cap_ms` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OverCap {
    Refuse,
    Clamp,
}

impl OverCap {
    pub const ALL: [OverCap; 2] = [OverCap::Refuse, OverCap::Clamp];

    pub fn name(self) -> &'static str {
        match self {
            OverCap::Refuse => "refuse",
            OverCap::Clamp => "clamp",
        }
    }
}

/// `unknown_operation_class` (contract v2): the class of a request that matches no operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnknownClass {
    MethodDefault,
    NonReplayable,
    NoRetry,
}

impl UnknownClass {
    pub const ALL: [UnknownClass; 3] = [
        UnknownClass::MethodDefault,
        UnknownClass::NonReplayable,
        UnknownClass::NoRetry,
    ];

    pub fn name(self) -> &'static str {
        match self {
            UnknownClass::MethodDefault => "method_default",
            UnknownClass::NonReplayable => "non_replayable",
            UnknownClass::NoRetry => "no_retry",
        }
    }

    pub fn parse(name: &str) -> Option<UnknownClass> {
        UnknownClass::ALL.into_iter().find(|u| u.name() == name)
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Policy {
    pub max_retries: u32,
    pub initial_backoff_ms: u64,
    pub max_backoff_ms: u64,
    pub multiplier: f64,
    pub jitter: Jitter,
    pub retryable_statuses: Vec<u16>,
    pub rejected_statuses: Vec<u16>,
    pub retry_after_cap_ms: u64,
    pub deadline_ms: Option<u64>,
    // Contract v2.
    pub retry_only_with_server_delay: Vec<u16>,
    pub key_in_flight_statuses: Vec<u16>,
    pub key_reused_statuses: Vec<u16>,
    pub server_directive_headers: Vec<String>,
    pub retry_after_over_cap: OverCap,
    pub unknown_operation_class: UnknownClass,
    pub budget_capacity: u64,
    pub budget_retry_cost: u64,
    pub budget_timeout_cost: u64,
    pub budget_success_refund: u64,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            max_retries: 3,
            initial_backoff_ms: 500,
            max_backoff_ms: 30_000,
            multiplier: 2.0,
            jitter: Jitter::Full,
            retryable_statuses: vec![408, 425, 429, 500, 502, 503, 504],
            rejected_statuses: vec![429],
            retry_after_cap_ms: 60_000,
            deadline_ms: None,
            retry_only_with_server_delay: Vec::new(),
            key_in_flight_statuses: vec![409],
            key_reused_statuses: vec![422],
            server_directive_headers: vec!["x-should-retry".to_string()],
            retry_after_over_cap: OverCap::Refuse,
            unknown_operation_class: UnknownClass::MethodDefault,
            budget_capacity: 500,
            budget_retry_cost: 5,
            budget_timeout_cost: 10,
            budget_success_refund: 1,
        }
    }
}

const DAY_MS: u64 = 86_400_000;
/// The upper bound of every budget value.
pub const BUDGET_MAX: u64 = 1_000_000;

pub const KEYS: [&str; 19] = [
    "max_retries",
    "initial_backoff_ms",
    "max_backoff_ms",
    "multiplier",
    "jitter",
    "retryable_statuses",
    "rejected_statuses",
    "retry_after_cap_ms",
    "deadline_ms",
    "retry_only_with_server_delay",
    "key_in_flight_statuses",
    "key_reused_statuses",
    "server_directive_headers",
    "retry_after_over_cap",
    "unknown_operation_class",
    "budget_capacity",
    "budget_retry_cost",
    "budget_timeout_cost",
    "budget_success_refund",
];

fn integer(key: &str, v: &RawValue, min: u64, max: u64) -> Result<u64, String> {
    match v {
        RawValue::Integer(i) if *i >= min as i64 && *i <= max as i64 => Ok(*i as u64),
        RawValue::Integer(i) => Err(format!("`{key}` is {i}, outside {min}..={max}")),
        other => Err(format!(
            "`{key}` must be an integer, found {}",
            other.describe()
        )),
    }
}

fn statuses(key: &str, v: &RawValue) -> Result<Vec<u16>, String> {
    let RawValue::List(items) = v else {
        return Err(format!(
            "`{key}` must be a list of status codes, found {}",
            v.describe()
        ));
    };
    let mut out = Vec::new();
    for item in items {
        let code = integer(key, item, 100, 599)
            .map_err(|e| format!("{e} (HTTP statuses are 100-599)"))? as u16;
        if !out.contains(&code) {
            out.push(code);
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// An HTTP field name (RFC 9110 `token`).
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn header_names(key: &str, v: &RawValue) -> Result<Vec<String>, String> {
    let RawValue::List(items) = v else {
        return Err(format!(
            "`{key}` must be a list of header names, found {}",
            v.describe()
        ));
    };
    let mut out: Vec<String> = Vec::new();
    for item in items {
        match item {
            RawValue::Text(name) if is_token(name) => {
                if !out.iter().any(|n| n.eq_ignore_ascii_case(name)) {
                    out.push(name.clone());
                }
            }
            RawValue::Text(name) => {
                return Err(format!(
                    "`{key}`: {name:?} is not an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)"
                ))
            }
            other => {
                return Err(format!(
                    "`{key}` must be a list of header names, found an item that is {}",
                    other.describe()
                ))
            }
        }
    }
    Ok(out)
}

fn one_of<T: Copy>(
    key: &str,
    v: &RawValue,
    all: &[T],
    name: fn(T) -> &'static str,
) -> Result<T, String> {
    let RawValue::Text(text) = v else {
        return Err(format!("`{key}` must be a string, found {}", v.describe()));
    };
    all.iter()
        .copied()
        .find(|x| name(*x) == text)
        .ok_or_else(|| {
            let names: Vec<&str> = all.iter().map(|x| name(*x)).collect();
            format!("unknown `{key}` {text:?}; use one of {}", names.join(", "))
        })
}

impl Policy {
    /// Sets one key; the error text says what is wrong (the caller adds where).
    pub fn set(&mut self, key: &str, value: &RawValue) -> Result<(), String> {
        match key {
            "max_retries" => self.max_retries = integer(key, value, 0, 100)? as u32,
            "initial_backoff_ms" => self.initial_backoff_ms = integer(key, value, 1, DAY_MS)?,
            "max_backoff_ms" => self.max_backoff_ms = integer(key, value, 1, DAY_MS)?,
            "retry_after_cap_ms" => self.retry_after_cap_ms = integer(key, value, 0, DAY_MS)?,
            "deadline_ms" => self.deadline_ms = Some(integer(key, value, 1, DAY_MS)?),
            "multiplier" => {
                let m = match value {
                    RawValue::Integer(i) => *i as f64,
                    RawValue::Float(f) => *f,
                    other => {
                        return Err(format!(
                            "`multiplier` must be a number, found {}",
                            other.describe()
                        ))
                    }
                };
                if !(1.0..=10.0).contains(&m) {
                    return Err(format!("`multiplier` is {m}, outside 1.0..=10.0"));
                }
                self.multiplier = m;
            }
            "jitter" => {
                let RawValue::Text(name) = value else {
                    return Err(format!(
                        "`jitter` must be a string, found {}",
                        value.describe()
                    ));
                };
                self.jitter = Jitter::ALL
                    .into_iter()
                    .find(|j| j.name() == name)
                    .ok_or_else(|| {
                        format!(
                            "unknown `jitter` {name:?}; use one of full, equal, decorrelated, none"
                        )
                    })?;
            }
            "retryable_statuses" => self.retryable_statuses = statuses(key, value)?,
            "rejected_statuses" => self.rejected_statuses = statuses(key, value)?,
            "retry_only_with_server_delay" => {
                self.retry_only_with_server_delay = statuses(key, value)?
            }
            "key_in_flight_statuses" => self.key_in_flight_statuses = statuses(key, value)?,
            "key_reused_statuses" => self.key_reused_statuses = statuses(key, value)?,
            "server_directive_headers" => self.server_directive_headers = header_names(key, value)?,
            "retry_after_over_cap" => {
                self.retry_after_over_cap = one_of(key, value, &OverCap::ALL, OverCap::name)?
            }
            "unknown_operation_class" => {
                self.unknown_operation_class =
                    one_of(key, value, &UnknownClass::ALL, UnknownClass::name)?
            }
            "budget_capacity" => self.budget_capacity = integer(key, value, 0, BUDGET_MAX)?,
            "budget_retry_cost" => self.budget_retry_cost = integer(key, value, 1, BUDGET_MAX)?,
            "budget_timeout_cost" => self.budget_timeout_cost = integer(key, value, 1, BUDGET_MAX)?,
            "budget_success_refund" => {
                self.budget_success_refund = integer(key, value, 0, BUDGET_MAX)?
            }
            _ => {
                return Err(format!(
                    "unknown retry policy key `{key}`; known keys: {}",
                    KEYS.join(", ")
                ))
            }
        }
        Ok(())
    }

    /// Cross-field checks once every key is set.
    pub fn check(&self) -> Result<(), String> {
        if self.initial_backoff_ms > self.max_backoff_ms {
            return Err(format!(
                "`initial_backoff_ms` ({}) is above `max_backoff_ms` ({})",
                self.initial_backoff_ms, self.max_backoff_ms
            ));
        }
        Ok(())
    }

    /// Applies the spec's `x-retry-policy`, reporting every problem.
    pub fn apply_spec(&mut self, policy: &RawPolicy, diagnostics: &mut Diagnostics) {
        let help = "see the policy table in docs/contract.md";
        let entries = match &policy.entries {
            Ok(entries) => entries,
            Err(kind) => {
                diagnostics.push(Diagnostic::error(
                    policy.at.clone(),
                    format!("`x-retry-policy` must be a mapping, found {kind}"),
                    help,
                ));
                return;
            }
        };
        for entry in entries {
            if let Err(message) = self.set(&entry.key, &entry.value) {
                diagnostics.push(Diagnostic::error(entry.at.clone(), message, help));
            }
        }
        if let Err(message) = self.check() {
            diagnostics.push(Diagnostic::error(policy.at.clone(), message, help));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_values() {
        let mut p = Policy::default();
        assert!(p.set("max_retries", &RawValue::Integer(-1)).is_err());
        assert!(p
            .set(
                "retryable_statuses",
                &RawValue::List(vec![RawValue::Integer(600)])
            )
            .is_err());
        assert!(p.set("jitter", &RawValue::Text("fancy".into())).is_err());
        assert!(p.set("nope", &RawValue::Integer(1)).is_err());
        assert!(p.set("multiplier", &RawValue::Text("2".into())).is_err());
        p.set("initial_backoff_ms", &RawValue::Integer(40_000))
            .unwrap();
        assert!(p.check().unwrap_err().contains("above `max_backoff_ms`"));
        p.set(
            "rejected_statuses",
            &RawValue::List(vec![
                RawValue::Integer(503),
                RawValue::Integer(429),
                RawValue::Integer(503),
            ]),
        )
        .unwrap();
        assert_eq!(p.rejected_statuses, vec![429, 503]);
    }

    #[test]
    fn validates_v2_keys() {
        let mut p = Policy::default();
        let text = |s: &str| RawValue::Text(s.into());
        p.set("retry_after_over_cap", &text("clamp")).unwrap();
        assert_eq!(p.retry_after_over_cap, OverCap::Clamp);
        assert!(p
            .set("retry_after_over_cap", &text("Clamp"))
            .unwrap_err()
            .contains("use one of refuse, clamp"));
        p.set("unknown_operation_class", &text("no_retry")).unwrap();
        assert_eq!(p.unknown_operation_class, UnknownClass::NoRetry);
        assert!(p
            .set("unknown_operation_class", &text("idempotent"))
            .is_err());
        p.set(
            "server_directive_headers",
            &RawValue::List(vec![
                text("Stripe-Should-Retry"),
                text("stripe-should-retry"),
            ]),
        )
        .unwrap();
        assert_eq!(p.server_directive_headers, vec!["Stripe-Should-Retry"]);
        assert!(p
            .set(
                "server_directive_headers",
                &RawValue::List(vec![text("x y")])
            )
            .is_err());
        assert!(p.set("server_directive_headers", &text("x")).is_err());
        p.set("budget_capacity", &RawValue::Integer(0)).unwrap();
        assert!(p.set("budget_capacity", &RawValue::Integer(-1)).is_err());
        assert!(p.set("budget_retry_cost", &RawValue::Integer(0)).is_err());
        assert!(p
            .set("budget_timeout_cost", &RawValue::Integer(1_000_001))
            .is_err());
        p.set("budget_success_refund", &RawValue::Integer(0))
            .unwrap();
        assert!(p
            .set(
                "key_reused_statuses",
                &RawValue::List(vec![RawValue::Integer(99)])
            )
            .is_err());
        p.set(
            "retry_only_with_server_delay",
            &RawValue::List(vec![RawValue::Integer(429)]),
        )
        .unwrap();
        assert_eq!(p.retry_only_with_server_delay, vec![429]);
    }
}
