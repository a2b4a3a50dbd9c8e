//! `x-retry-policy` as the reader hands it to the model: located, format-neutral raw values
//! (retrygen.toml's `[job.policy]` produces the same values in config.rs). Validation is the
//! model's.

use super::node::{Node, Value};
use crate::diag::Location;

/// A policy value before validation, from either source.
#[derive(Debug, Clone, PartialEq)]
pub enum RawValue {
    Integer(i64),
    Float(f64),
    Text(String),
    List(Vec<RawValue>),
    Other(&'static str),
}

impl RawValue {
    pub fn describe(&self) -> String {
        match self {
            RawValue::Integer(i) => format!("the integer {i}"),
            RawValue::Float(f) => format!("the number {f}"),
            RawValue::Text(s) => format!("the string {s:?}"),
            RawValue::List(_) => "a list".into(),
            RawValue::Other(k) => (*k).into(),
        }
    }
}

/// A policy declaration as the reader hands it over: located raw values, whatever the format
/// (YAML or JSON) they were written in.
#[derive(Debug, Clone)]
pub struct RawPolicy {
    /// Where the declaration is.
    pub at: Location,
    /// Its entries, or what was found instead of a mapping.
    pub entries: Result<Vec<RawPolicyEntry>, String>,
}

#[derive(Debug, Clone)]
pub struct RawPolicyEntry {
    pub key: String,
    pub value: RawValue,
    /// Where the value is, with its JSON pointer.
    pub at: Location,
}

/// Turns a YAML/JSON node into a raw value.
pub(crate) fn raw_value(node: &Node) -> RawValue {
    match &node.value {
        Value::Number(n) => match n.parse::<i64>() {
            Ok(i) => RawValue::Integer(i),
            Err(_) => n
                .parse::<f64>()
                .map(RawValue::Float)
                .unwrap_or(RawValue::Other("a number")),
        },
        Value::String(s) => RawValue::Text(s.clone()),
        Value::Seq(items) => RawValue::List(items.iter().map(raw_value).collect()),
        other => RawValue::Other(match other {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            _ => "a mapping",
        }),
    }
}
