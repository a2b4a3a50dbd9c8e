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
        }
    }
}

const DAY_MS: u64 = 86_400_000;

pub const KEYS: [&str; 9] = [
    "max_retries",
    "initial_backoff_ms",
    "max_backoff_ms",
    "multiplier",
    "jitter",
    "retryable_statuses",
    "rejected_statuses",
    "retry_after_cap_ms",
    "deadline_ms",
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
}
