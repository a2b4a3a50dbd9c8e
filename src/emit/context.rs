//! The template context: what `tables.j2` sees, and nothing more: the per-spec data of a tables
//! file (the operations, the base path, the policy defaults). Spec strings arrive already escaped
//! for the language (`*_literal` fields, through the backend) or made comment-safe (`header`).
//! Templates use their formatter's off-switch for the data, so no field carries layout hints.

use super::{Adapter, Backend, LanguageOptions};
use crate::model::{Api, ReplayClass};
use minijinja::value::{Enumerator, Object, ObjectRepr, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Declares one struct of the template context. Templates see it as a map of its fields, under
/// the same names; `Value::from` converts every field to a template value once, so that reading
/// a field in a template loop costs a string match and a reference-count increment.
macro_rules! record {
    ($(#[$meta:meta])* struct $name:ident {
        $($(#[$field_meta:meta])* $field:ident: $ty:ty,)*
    }) => {
        $(#[$meta])*
        struct $name {
            $($(#[$field_meta])* $field: $ty,)*
        }

        impl From<$name> for Value {
            fn from(record: $name) -> Value {
                /// The struct as templates see it.
                #[derive(Debug)]
                struct Fields {
                    $($field: Value,)*
                }

                impl Object for Fields {
                    fn repr(self: &Arc<Self>) -> ObjectRepr {
                        ObjectRepr::Map
                    }

                    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
                        self.get_value_by_str(key.as_str()?)
                    }

                    fn get_value_by_str(self: &Arc<Self>, key: &str) -> Option<Value> {
                        match key {
                            $(stringify!($field) => Some(self.$field.clone()),)*
                            _ => None,
                        }
                    }

                    fn enumerate(self: &Arc<Self>) -> Enumerator {
                        Enumerator::Str(&[$(stringify!($field)),*])
                    }

                    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
                        Some([$(stringify!($field)),*].len())
                    }
                }

                Value::from_object(Fields {
                    $($field: Value::from(record.$field),)*
                })
            }
        }
    };
}

record! {
    /// One operation: `operations[i]`, in table order (path bytes, then method).
    struct OperationContext {
        index: usize,
        /// The HTTP method in upper case, as plain text.
        method: Value,
        method_literal: Value,
        /// The path template as written in the spec.
        path_literal: Value,
        /// The path template requests are matched against: the path without the `?`/`#` suffix
        /// some documents append to keep two path items apart.
        route_literal: Value,
        /// The operationId's literal, or the language's null literal.
        operation_id_literal: Value,
        has_operation_id: bool,
        /// The replay class's name, such as `non_replayable`.
        class: &'static str,
        class_ident: Value,
        /// The idempotency key header a `keyed` operation declares, or the null literal.
        idempotency_header_literal: Value,
        has_idempotency_header: bool,
        /// Contract v3, A1: a 2xx response streams `text/event-stream`.
        streaming: bool,
        /// Contract v3, A2: a dropped stream is resumed with `Last-Event-ID`.
        resumable: bool,
    }
}

record! {
    /// The retry policy the module declares: `policy`.
    struct PolicyContext {
        max_retries: u32,
        initial_backoff_ms: u64,
        max_backoff_ms: u64,
        multiplier_literal: String,
        jitter: &'static str,
        jitter_ident: String,
        retryable_statuses: Vec<u16>,
        rejected_statuses: Vec<u16>,
        retry_after_cap_ms: u64,
        /// None when the policy has no deadline.
        deadline_ms: Option<u64>,
        // Contract v2.
        retry_only_with_server_delay: Vec<u16>,
        key_in_flight_statuses: Vec<u16>,
        key_reused_statuses: Vec<u16>,
        /// The server directive header names, each as the language's string literal.
        server_directive_header_literals: Vec<Value>,
        /// `refuse` or `clamp`.
        retry_after_over_cap: &'static str,
        /// `method_default`, `non_replayable` or `no_retry`.
        unknown_operation_class: &'static str,
        budget_capacity: u64,
        budget_retry_cost: u64,
        budget_timeout_cost: u64,
        budget_success_refund: u64,
        // Contract v3: docs/contract.md section 3's policy table.
        throttling_statuses: Vec<u16>,
        /// None when throttled retries use `initial_backoff_ms`.
        throttling_initial_backoff_ms: Option<u64>,
        /// None when throttled retries cost `budget_retry_cost`.
        budget_throttling_cost: Option<u64>,
        /// The problem type URIs, each as the language's string literal.
        stop_problem_type_literals: Vec<Value>,
        retry_problem_type_literals: Vec<Value>,
        /// `uuid` or `sf-string`.
        idempotency_key_format: &'static str,
    }
}

record! {
    /// What a tables template renders: the root of the template context.
    struct Context {
        /// "Code generated by retrygen from <file>. DO NOT EDIT." made safe for a line comment.
        header: String,
        source_name_literal: String,
        base_path_literal: String,
        spec_version: &'static str,
        /// A list of [`OperationContext`].
        operations: Value,
        policy: Value,
        options: Value,
        /// The names of the adapters the target opted into (`adapters = [...]`), or for a
        /// target with a shared runtime, the runtime's.
        adapters: Vec<&'static str>,
        /// How the tables reach a shared runtime (the backend's [`super::Backend::runtime_link`]:
        /// a module path, an import path, a package); none for a self-contained target.
        runtime: Option<String>,
    }
}

/// Builds the template context of `api` for one language.
pub(super) fn context(
    api: &Api,
    backend: &dyn Backend,
    options: &LanguageOptions,
    adapters: &[&'static Adapter],
    runtime: Option<&str>,
) -> Value {
    let mut buffer = String::new();
    let mut literal = |push: &dyn Fn(&mut String)| {
        buffer.clear();
        push(&mut buffer);
        Value::from(buffer.as_str())
    };
    // Identifiers and method literals are decided once, not once per operation.
    let class_idents = ReplayClass::ALL.map(|class| Value::from(backend.class_ident(class)));
    let class_ident = |class: ReplayClass| {
        let index = ReplayClass::ALL
            .iter()
            .position(|c| *c == class)
            .expect("ALL lists every class");
        class_idents[index].clone()
    };
    let mut methods: Vec<(&str, Value)> = Vec::new();
    let null = Value::from(backend.null_literal());
    let mut operations = Vec::with_capacity(api.operations.len());
    for (index, op) in api.operations.iter().enumerate() {
        let method_literal = match methods.iter().find(|(m, _)| *m == op.method) {
            Some((_, v)) => v.clone(),
            None => {
                let v = literal(&|out| backend.push_string_literal(out, &op.method));
                methods.push((&op.method, v.clone()));
                v
            }
        };
        let route = crate::model::path::split_suffix(&op.path).0;
        let path_literal = literal(&|out| backend.push_string_literal(out, &op.path));
        // Most paths carry no suffix: their route is the same text.
        let route_literal = if route.len() == op.path.len() {
            path_literal.clone()
        } else {
            literal(&|out| backend.push_string_literal(out, route))
        };
        operations.push(Value::from(OperationContext {
            index,
            method: Value::from(op.method.as_str()),
            method_literal,
            path_literal,
            route_literal,
            operation_id_literal: match &op.operation_id {
                Some(id) => literal(&|out| backend.push_string_literal(out, id)),
                None => null.clone(),
            },
            has_operation_id: op.operation_id.is_some(),
            class: op.class.name(),
            class_ident: class_ident(op.class),
            idempotency_header_literal: match &op.idempotency_header {
                Some(name) => literal(&|out| backend.push_string_literal(out, name)),
                None => null.clone(),
            },
            has_idempotency_header: op.idempotency_header.is_some(),
            streaming: op.streaming(),
            resumable: op.resumable(),
        }));
    }
    let p = &api.policy;
    Value::from(Context {
        header: backend.comment_text(&format!(
            "Code generated by retrygen from {}. DO NOT EDIT.",
            api.source_name
        )),
        source_name_literal: backend.string_literal(&api.source_name),
        base_path_literal: backend.string_literal(&api.base_path),
        spec_version: api.version.as_str(),
        operations: Value::from(operations),
        policy: Value::from(PolicyContext {
            max_retries: p.max_retries,
            initial_backoff_ms: p.initial_backoff_ms,
            max_backoff_ms: p.max_backoff_ms,
            multiplier_literal: format!("{:?}", p.multiplier),
            jitter: p.jitter.name(),
            jitter_ident: backend.jitter_ident(p.jitter),
            retryable_statuses: p.retryable_statuses.clone(),
            rejected_statuses: p.rejected_statuses.clone(),
            retry_after_cap_ms: p.retry_after_cap_ms,
            deadline_ms: p.deadline_ms,
            retry_only_with_server_delay: p.retry_only_with_server_delay.clone(),
            key_in_flight_statuses: p.key_in_flight_statuses.clone(),
            key_reused_statuses: p.key_reused_statuses.clone(),
            server_directive_header_literals: string_literals(backend, &p.server_directive_headers),
            retry_after_over_cap: p.retry_after_over_cap.name(),
            unknown_operation_class: p.unknown_operation_class.name(),
            budget_capacity: p.budget_capacity,
            budget_retry_cost: p.budget_retry_cost,
            budget_timeout_cost: p.budget_timeout_cost,
            budget_success_refund: p.budget_success_refund,
            throttling_statuses: p.throttling_statuses.clone(),
            throttling_initial_backoff_ms: p.throttling_initial_backoff_ms,
            budget_throttling_cost: p.budget_throttling_cost,
            stop_problem_type_literals: string_literals(backend, &p.stop_problem_types),
            retry_problem_type_literals: string_literals(backend, &p.retry_problem_types),
            idempotency_key_format: p.idempotency_key_format.name(),
        }),
        options: Value::from_object(
            options
                .iter()
                .map(|(key, value)| (key.clone(), Value::from(value.as_str())))
                .collect::<BTreeMap<String, Value>>(),
        ),
        adapters: adapters.iter().map(|a| a.name).collect(),
        runtime: runtime.map(str::to_string),
    })
}

/// Each string as the language's string literal.
fn string_literals(backend: &dyn Backend, strings: &[String]) -> Vec<Value> {
    strings
        .iter()
        .map(|s| Value::from(backend.string_literal(s)))
        .collect()
}
