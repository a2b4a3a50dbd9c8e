//! The retry policy values (docs/contract.md section 3, "Policy"): defaults, the spec's
//! `x-retry-policy` declarations and retrygen.toml overrides, each validated with a clear error.

use crate::diag::{Diagnostic, Diagnostics, Location};
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

/// `idempotency_key_format` (contract v3, F1): how an adapter writes the key it mints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum KeyFormat {
    /// A bare random UUID.
    #[serde(rename = "uuid")]
    Uuid,
    /// The UUID as an RFC 9651 Structured Field String (`"` + uuid + `"`).
    #[serde(rename = "sf-string")]
    SfString,
}

impl KeyFormat {
    pub const ALL: [KeyFormat; 2] = [KeyFormat::Uuid, KeyFormat::SfString];

    pub fn name(self) -> &'static str {
        match self {
            KeyFormat::Uuid => "uuid",
            KeyFormat::SfString => "sf-string",
        }
    }
}

/// The RateLimit draft's problem types that need a person, not a retry: the default
/// `stop_problem_types` (contract v3, section 5).
pub const PROBLEM_TYPE_QUOTA_EXCEEDED: &str =
    "https://iana.org/assignments/http-problem-types#quota-exceeded";
pub const PROBLEM_TYPE_ABNORMAL_USAGE_DETECTED: &str =
    "https://iana.org/assignments/http-problem-types#abnormal-usage-detected";
/// The longest problem type a policy may list, in characters (contract v3, section 4).
pub const PROBLEM_TYPE_MAX_CHARS: usize = 2048;

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
    // Contract v3: docs/contract.md section 3's policy table.
    pub throttling_statuses: Vec<u16>,
    /// None: `initial_backoff_ms` applies to throttled retries too.
    pub throttling_initial_backoff_ms: Option<u64>,
    /// None: `budget_retry_cost` applies to throttled retries too.
    pub budget_throttling_cost: Option<u64>,
    pub stop_problem_types: Vec<String>,
    pub retry_problem_types: Vec<String>,
    pub idempotency_key_format: KeyFormat,
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
            throttling_statuses: vec![429],
            throttling_initial_backoff_ms: None,
            budget_throttling_cost: None,
            stop_problem_types: vec![
                PROBLEM_TYPE_QUOTA_EXCEEDED.to_string(),
                PROBLEM_TYPE_ABNORMAL_USAGE_DETECTED.to_string(),
            ],
            retry_problem_types: Vec::new(),
            idempotency_key_format: KeyFormat::Uuid,
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

/// Contract v3's policy keys (docs/contract.md section 3's policy table), in the table's order: validated
/// after [`KEYS`] (V1 extended).
pub const V3_KEYS: [&str; 6] = [
    "throttling_statuses",
    "throttling_initial_backoff_ms",
    "budget_throttling_cost",
    "stop_problem_types",
    "retry_problem_types",
    "idempotency_key_format",
];

/// The key that names a preset (contract v3, T2); the keys written beside it win over it.
pub const PRESET_KEY: &str = "preset";

/// The presets (contract v3, T2): each name with its values, resolved when the spec is read.
pub const PRESETS: [(&str, &[(&str, PresetValue)]); 1] = [(
    "aws-2026",
    &[
        ("max_retries", PresetValue::Integer(2)),
        ("initial_backoff_ms", PresetValue::Integer(50)),
        ("throttling_initial_backoff_ms", PresetValue::Integer(1000)),
        ("max_backoff_ms", PresetValue::Integer(20_000)),
        ("multiplier", PresetValue::Float(2.0)),
        ("jitter", PresetValue::Text("full")),
        ("budget_capacity", PresetValue::Integer(500)),
        ("budget_retry_cost", PresetValue::Integer(14)),
        ("budget_timeout_cost", PresetValue::Integer(14)),
        ("budget_throttling_cost", PresetValue::Integer(5)),
        ("budget_success_refund", PresetValue::Integer(1)),
    ],
)];

/// A preset's value, set through [`Policy::set`] like a written one.
#[derive(Debug, Clone, Copy)]
pub enum PresetValue {
    Integer(i64),
    Float(f64),
    Text(&'static str),
}

impl PresetValue {
    fn raw(self) -> RawValue {
        match self {
            PresetValue::Integer(i) => RawValue::Integer(i),
            PresetValue::Float(f) => RawValue::Float(f),
            PresetValue::Text(t) => RawValue::Text(t.to_string()),
        }
    }
}

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

/// A list of RFC 9457 problem type URIs: each a non-empty string of at most
/// [`PROBLEM_TYPE_MAX_CHARS`] characters, compared exactly; repeats are dropped.
fn problem_types(key: &str, v: &RawValue) -> Result<Vec<String>, String> {
    let RawValue::List(items) = v else {
        return Err(format!(
            "`{key}` must be a list of problem type URIs, found {}",
            v.describe()
        ));
    };
    let mut out: Vec<String> = Vec::new();
    for item in items {
        match item {
            RawValue::Text(t) if t.is_empty() => {
                return Err(format!("`{key}` lists an empty problem type"))
            }
            RawValue::Text(t) if t.chars().count() > PROBLEM_TYPE_MAX_CHARS => {
                return Err(format!(
                    "`{key}` lists a problem type of {} characters, more than {PROBLEM_TYPE_MAX_CHARS}",
                    t.chars().count()
                ))
            }
            RawValue::Text(t) => {
                if !out.contains(t) {
                    out.push(t.clone());
                }
            }
            other => {
                return Err(format!(
                    "`{key}` must be a list of problem type URIs, found an item that is {}",
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
            "throttling_statuses" => self.throttling_statuses = statuses(key, value)?,
            "throttling_initial_backoff_ms" => {
                self.throttling_initial_backoff_ms = Some(integer(key, value, 1, DAY_MS)?)
            }
            "budget_throttling_cost" => {
                self.budget_throttling_cost = Some(integer(key, value, 1, BUDGET_MAX)?)
            }
            "stop_problem_types" => self.stop_problem_types = problem_types(key, value)?,
            "retry_problem_types" => self.retry_problem_types = problem_types(key, value)?,
            "idempotency_key_format" => {
                self.idempotency_key_format = one_of(key, value, &KeyFormat::ALL, KeyFormat::name)?
            }
            _ => {
                return Err(format!(
                    "unknown retry policy key `{key}`; known keys: {}, {}, {PRESET_KEY}",
                    KEYS.join(", "),
                    V3_KEYS.join(", ")
                ))
            }
        }
        Ok(())
    }

    /// Cross-field checks once every key is set (V2, extended by contract v3).
    pub fn check(&self) -> Result<(), String> {
        if self.initial_backoff_ms > self.max_backoff_ms {
            return Err(format!(
                "`initial_backoff_ms` ({}) is above `max_backoff_ms` ({})",
                self.initial_backoff_ms, self.max_backoff_ms
            ));
        }
        if let Some(throttling) = self.throttling_initial_backoff_ms {
            if throttling > self.max_backoff_ms {
                return Err(format!(
                    "`throttling_initial_backoff_ms` ({throttling}) is above `max_backoff_ms` ({})",
                    self.max_backoff_ms
                ));
            }
        }
        Ok(())
    }

    /// Sets the values of the preset `value` names (contract v3, T2).
    pub fn apply_preset(&mut self, value: &RawValue) -> Result<(), String> {
        let names: Vec<&str> = PRESETS.iter().map(|(name, _)| *name).collect();
        let RawValue::Text(name) = value else {
            return Err(format!(
                "`{PRESET_KEY}` must be a string, found {}; use one of {}",
                value.describe(),
                names.join(", ")
            ));
        };
        let (_, values) = PRESETS
            .iter()
            .find(|(preset, _)| preset == name)
            .ok_or_else(|| {
                format!(
                    "unknown `{PRESET_KEY}` {name:?}; use one of {}",
                    names.join(", ")
                )
            })?;
        for (key, v) in values.iter() {
            self.set(key, &v.raw())
                .expect("a preset's values are valid");
        }
        Ok(())
    }

    /// Applies located entries: the preset first, wherever it is written, then every other key
    /// (so the keys beside a preset win over it), then the cross-field checks at `check_at`.
    /// Every problem is reported, each with `help`.
    pub fn apply_entries(
        &mut self,
        entries: &[(&str, &RawValue, &Location)],
        check_at: &Location,
        help: fn(&str) -> &'static str,
        diagnostics: &mut Diagnostics,
    ) {
        let presets = entries.iter().filter(|(key, _, _)| *key == PRESET_KEY);
        let keys = entries.iter().filter(|(key, _, _)| *key != PRESET_KEY);
        for (key, value, at) in presets.chain(keys) {
            let applied = if *key == PRESET_KEY {
                self.apply_preset(value)
            } else {
                self.set(key, value)
            };
            if let Err(message) = applied {
                diagnostics.push(Diagnostic::error((*at).clone(), message, help(key)));
            }
        }
        if let Err(message) = self.check() {
            diagnostics.push(Diagnostic::error(check_at.clone(), message, help("")));
        }
    }

    /// Applies the spec's `x-retry-policy`, reporting every problem.
    pub fn apply_spec(&mut self, policy: &RawPolicy, diagnostics: &mut Diagnostics) {
        let help = |key: &str| {
            if key == PRESET_KEY || V3_KEYS.contains(&key) {
                "see the policy keys in docs/contract.md section 3 and the preset in section 8"
            } else {
                "see the policy table in docs/contract.md"
            }
        };
        let entries = match &policy.entries {
            Ok(entries) => entries,
            Err(kind) => {
                diagnostics.push(Diagnostic::error(
                    policy.at.clone(),
                    format!("`x-retry-policy` must be a mapping, found {kind}"),
                    help(""),
                ));
                return;
            }
        };
        let entries: Vec<(&str, &RawValue, &Location)> = entries
            .iter()
            .map(|e| (e.key.as_str(), &e.value, &e.at))
            .collect();
        self.apply_entries(&entries, &policy.at, help, diagnostics);
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

    #[test]
    fn validates_v3_keys() {
        let mut p = Policy::default();
        let text = |s: &str| RawValue::Text(s.into());
        let list = |items: Vec<RawValue>| RawValue::List(items);
        assert_eq!(p.throttling_statuses, vec![429]);
        assert_eq!(p.stop_problem_types.len(), 2);
        p.set(
            "throttling_statuses",
            &list(vec![RawValue::Integer(503), RawValue::Integer(429)]),
        )
        .unwrap();
        assert_eq!(p.throttling_statuses, vec![429, 503]);
        assert!(p
            .set("throttling_statuses", &list(vec![RawValue::Integer(99)]))
            .is_err());
        assert!(p
            .set("throttling_initial_backoff_ms", &RawValue::Integer(0))
            .is_err());
        assert!(p
            .set(
                "throttling_initial_backoff_ms",
                &RawValue::Integer(86_400_001)
            )
            .is_err());
        p.set("throttling_initial_backoff_ms", &RawValue::Integer(1000))
            .unwrap();
        assert_eq!(p.throttling_initial_backoff_ms, Some(1000));
        assert!(p
            .set("budget_throttling_cost", &RawValue::Integer(0))
            .is_err());
        p.set("budget_throttling_cost", &RawValue::Integer(5))
            .unwrap();
        assert_eq!(p.budget_throttling_cost, Some(5));
        p.set(
            "stop_problem_types",
            &list(vec![text("urn:a"), text("urn:b"), text("urn:a")]),
        )
        .unwrap();
        assert_eq!(p.stop_problem_types, vec!["urn:a", "urn:b"]);
        p.set("retry_problem_types", &list(vec![])).unwrap();
        assert!(p.retry_problem_types.is_empty());
        assert!(p
            .set("stop_problem_types", &list(vec![text("")]))
            .unwrap_err()
            .contains("empty"));
        let longest = "\u{e9}".repeat(PROBLEM_TYPE_MAX_CHARS);
        p.set("retry_problem_types", &list(vec![text(&longest)]))
            .unwrap();
        assert!(p
            .set(
                "retry_problem_types",
                &list(vec![text(&format!("{longest}x"))])
            )
            .unwrap_err()
            .contains("2049 characters"));
        assert!(p
            .set("retry_problem_types", &list(vec![RawValue::Integer(1)]))
            .is_err());
        p.set("idempotency_key_format", &text("sf-string")).unwrap();
        assert_eq!(p.idempotency_key_format, KeyFormat::SfString);
        assert!(p.set("idempotency_key_format", &text("UUID")).is_err());
        // V2 extended: the throttling base is at most max_backoff_ms.
        p.set("max_backoff_ms", &RawValue::Integer(999)).unwrap();
        assert!(p
            .check()
            .unwrap_err()
            .contains("`throttling_initial_backoff_ms` (1000) is above `max_backoff_ms` (999)"));
        p.set("max_backoff_ms", &RawValue::Integer(1000)).unwrap();
        p.check().unwrap();
    }

    fn entries_applied(entries: &[(&str, RawValue)]) -> (Policy, Diagnostics) {
        let at = Location {
            file: "x.yaml".into(),
            line: 1,
            column: 1,
            pointer: String::new(),
        };
        let located: Vec<(&str, &RawValue, &Location)> =
            entries.iter().map(|(k, v)| (*k, v, &at)).collect();
        let mut policy = Policy::default();
        let mut diagnostics = Diagnostics::default();
        policy.apply_entries(&located, &at, |_| "help", &mut diagnostics);
        (policy, diagnostics)
    }

    /// T2: the preset's values, whatever its place among the keys; the keys beside it win.
    #[test]
    fn a_preset_is_resolved_and_the_keys_beside_it_win() {
        let (p, d) = entries_applied(&[
            ("max_retries", RawValue::Integer(4)),
            ("preset", RawValue::Text("aws-2026".into())),
        ]);
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(p.max_retries, 4, "written beside the preset, before it");
        assert_eq!(
            (
                p.initial_backoff_ms,
                p.throttling_initial_backoff_ms,
                p.max_backoff_ms
            ),
            (50, Some(1000), 20_000)
        );
        assert_eq!((p.multiplier, p.jitter), (2.0, Jitter::Full));
        assert_eq!(
            (
                p.budget_capacity,
                p.budget_retry_cost,
                p.budget_timeout_cost,
                p.budget_throttling_cost,
                p.budget_success_refund
            ),
            (500, 14, 14, Some(5), 1)
        );
        // What the preset does not name keeps its default.
        assert_eq!(p.retryable_statuses, Policy::default().retryable_statuses);
        let (_, d) = entries_applied(&[("preset", RawValue::Text("aws-2025".into()))]);
        assert!(d.has_errors());
        let (_, d) = entries_applied(&[
            ("preset", RawValue::Text("aws-2026".into())),
            ("max_backoff_ms", RawValue::Integer(500)),
        ]);
        assert!(
            d.has_errors(),
            "the preset's 1000 ms throttling base is above a max_backoff_ms of 500"
        );
        let (_, d) = entries_applied(&[("preset", RawValue::Integer(2026))]);
        assert!(d.has_errors());
    }

    #[test]
    fn presets_hold_valid_values_of_known_keys() {
        for (name, values) in PRESETS {
            let mut p = Policy::default();
            p.apply_preset(&RawValue::Text(name.into())).unwrap();
            p.check().unwrap();
            for (key, _) in values {
                assert!(KEYS.contains(key) || V3_KEYS.contains(key), "{name}: {key}");
            }
        }
    }
}
