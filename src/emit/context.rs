//! The template context: what `tables.j2` sees. Spec strings arrive already escaped for the
//! language (`*_literal` fields, through the backend) or made comment-safe.

use super::{Backend, LanguageOptions};
use crate::model::path::Piece;
use crate::model::{Api, ReplayClass, IDEMPOTENT_METHODS};
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

/// The width of `text` in the columns a formatter counts, as minijinja's `length` filter gives
/// it. Every `*_width` field is the width of the field it is named after: templates add widths
/// up to make a formatter's line-width decisions without building the line to measure it.
pub(super) fn width(text: &str) -> usize {
    if text.is_ascii() {
        text.len()
    } else {
        text.chars().count()
    }
}

/// The width of `n` written in decimal.
pub(super) fn digits(n: usize) -> usize {
    n.checked_ilog10().map_or(1, |log| log as usize + 1)
}

record! {
    /// One operation: `operations[i]`.
    struct OperationContext {
        index: usize,
        /// The HTTP method in upper case, as plain text.
        method: Value,
        method_literal: Value,
        path_literal: Value,
        /// The path template made safe for a line comment.
        path_comment: Value,
        pattern_literal: Value,
        /// The operationId's literal, or the language's null literal.
        operation_id_literal: Value,
        has_operation_id: bool,
        /// The replay class's name, such as `non_replayable`.
        class: &'static str,
        class_ident: Value,
        method_literal_width: usize,
        path_literal_width: usize,
        pattern_literal_width: usize,
        operation_id_literal_width: usize,
        class_ident_width: usize,
        /// The path template requests are matched against: the path without the `?`/`#` suffix
        /// some documents append to keep two path items apart, as a string literal.
        route_literal: Value,
        /// The idempotency key header a `keyed` operation declares, or the null literal.
        idempotency_header_literal: Value,
        has_idempotency_header: bool,
    }
}

record! {
    /// A piece of a mixed segment.
    struct PieceContext {
        is_param: bool,
        /// Empty for a parameter.
        literal: Value,
    }
}

record! {
    /// A mixed segment (`{name}.{ext}`) of a node and the node it leads to.
    struct MixedContext {
        /// A list of [`PieceContext`].
        pieces: Value,
        child: usize,
    }
}

record! {
    /// One node of the path trie: `nodes[i]`, node 0 being the root.
    struct NodeContext {
        index: usize,
        /// `(segment literal, child)` pairs, sorted by the decoded segment's bytes.
        literals: Value,
        /// A list of [`MixedContext`] in match order.
        mixed: Value,
        /// -1 when the node has no parameter child.
        param: i64,
        /// `(method literal, index in operations)` pairs, for the paths that end here.
        operations: Value,
        index_width: usize,
    }
}

record! {
    /// One edge of the path trie, which is also one statement of a module that fills the trie
    /// statement by statement: an element of `trie_statements` and of the list of its kind.
    struct EdgeContext {
        /// `param`, `literal`, `mixed` or `operation`.
        kind: &'static str,
        /// The index of the node the edge leaves.
        node: usize,
        node_width: usize,
        /// The segment literal of a `literal` edge, the method literal of an `operation` edge;
        /// empty for the other kinds.
        key: Value,
        key_width: usize,
        /// The pieces of a `mixed` edge (a list of [`PieceContext`]); empty for the other kinds.
        pieces: Value,
        /// The child node, or for an `operation` edge the index in `operations`.
        target: usize,
        target_width: usize,
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
    }
}

record! {
    /// A replay class: its name and how the language names it.
    struct ClassContext {
        name: &'static str,
        ident: Value,
    }
}

record! {
    /// What every template renders: the root of the template context. `nodes` and the lists of
    /// edges are built only for templates that refer to them (see [`context`]).
    struct Context {
        /// "Code generated by retrygen from <file>. DO NOT EDIT." made safe for a line comment.
        header: String,
        source_name_literal: String,
        base_path_literal: String,
        spec_version: &'static str,
        /// A list of [`OperationContext`], sorted by path and then method.
        operations: Value,
        /// Indices into `operations` of the `non_replayable` ones.
        non_replayable: Vec<usize>,
        /// A list of [`NodeContext`].
        nodes: Value,
        /// The number of nodes.
        node_count: usize,
        policy: Value,
        /// A list of [`ClassContext`], one per replay class.
        classes: Value,
        idempotent_methods: Vec<String>,
        options: Value,
        /// Every edge of the trie ([`EdgeContext`]) node by node, and within a node its `param`
        /// edge, its `literal` edges, its `mixed` edges and its `operation` edges.
        trie_statements: Value,
        /// The edges of `trie_statements` of each kind, in the same order.
        param_edges: Value,
        literal_edges: Value,
        mixed_edges: Value,
        operation_edges: Value,
    }
}

/// Spec strings made into template values through one reusable buffer: a backend writes each
/// literal into the buffer and the value copies it once (short ones are stored inline).
struct Literals<'a> {
    backend: &'a dyn Backend,
    buffer: String,
    /// A handful of methods, written thousands of times.
    methods: Vec<(String, (Value, usize))>,
}

impl<'a> Literals<'a> {
    fn new(backend: &'a dyn Backend) -> Self {
        Literals {
            backend,
            buffer: String::new(),
            methods: Vec::new(),
        }
    }

    /// What `push` appends to the empty buffer, as a value, and its width.
    fn make(&mut self, push: impl FnOnce(&dyn Backend, &mut String)) -> (Value, usize) {
        self.buffer.clear();
        push(self.backend, &mut self.buffer);
        (Value::from(self.buffer.as_str()), width(&self.buffer))
    }

    fn string(&mut self, s: &str) -> (Value, usize) {
        self.make(|backend, out| backend.push_string_literal(out, s))
    }

    fn regex(&mut self, pattern: &str) -> (Value, usize) {
        self.make(|backend, out| backend.push_regex_literal(out, pattern))
    }

    fn comment(&mut self, s: &str) -> Value {
        let (comment, _) = self.make(|backend, out| backend.push_comment_text(out, s));
        comment
    }

    fn method(&mut self, method: &str) -> (Value, usize) {
        if let Some((_, literal)) = self.methods.iter().find(|(m, _)| m == method) {
            return literal.clone();
        }
        let literal = self.string(method);
        self.methods.push((method.to_string(), literal.clone()));
        literal
    }
}

/// The root fields holding the edges of the trie.
const EDGE_FIELDS: [&str; 5] = [
    "trie_statements",
    "param_edges",
    "literal_edges",
    "mixed_edges",
    "operation_edges",
];

/// Builds the template context of `api` for one language. `uses` tells whether the templates
/// refer to a root field: the lists of nodes and of edges, which only some templates read, are
/// built only when they do (a field that is not built is undefined).
pub(super) fn context(
    api: &Api,
    backend: &dyn Backend,
    options: &LanguageOptions,
    uses: &dyn Fn(&str) -> bool,
) -> Value {
    let mut lit = Literals::new(backend);
    // Identifiers are decided once per class, not once per operation.
    let class_idents = ReplayClass::ALL.map(|class| {
        let ident = backend.class_ident(class);
        let ident_width = width(&ident);
        (Value::from(ident), ident_width)
    });
    let class_ident = |class: ReplayClass| {
        let index = ReplayClass::ALL
            .iter()
            .position(|c| *c == class)
            .expect("ALL lists every class");
        class_idents[index].clone()
    };

    let mut operations = Vec::with_capacity(api.operations.len());
    for (index, op) in api.operations.iter().enumerate() {
        let (method_literal, method_literal_width) = lit.method(&op.method);
        let (path_literal, path_literal_width) = lit.string(&op.path);
        let (pattern_literal, pattern_literal_width) = lit.regex(&op.pattern);
        let (operation_id_literal, operation_id_literal_width) = match &op.operation_id {
            Some(id) => lit.string(id),
            None => {
                let null = backend.null_literal();
                (Value::from(null), width(null))
            }
        };
        let (class_ident, class_ident_width) = class_ident(op.class);
        let (route_literal, _) = lit.string(crate::model::path::split_suffix(&op.path).0);
        let idempotency_header_literal = match &op.idempotency_header {
            Some(name) => lit.string(name).0,
            None => Value::from(backend.null_literal()),
        };
        operations.push(Value::from(OperationContext {
            index,
            method: Value::from(op.method.as_str()),
            method_literal,
            path_literal,
            path_comment: lit.comment(&op.path),
            pattern_literal,
            operation_id_literal,
            has_operation_id: op.operation_id.is_some(),
            class: op.class.name(),
            class_ident,
            method_literal_width,
            path_literal_width,
            pattern_literal_width,
            operation_id_literal_width,
            class_ident_width,
            route_literal,
            idempotency_header_literal,
            has_idempotency_header: op.idempotency_header.is_some(),
        }));
    }

    let want_nodes = uses("nodes");
    let want_edges = EDGE_FIELDS.iter().any(|field| uses(field));
    let (nodes, edges) = if want_nodes || want_edges {
        trie(api, &mut lit, want_nodes, want_edges)
    } else {
        (Vec::new(), Vec::new())
    };
    let edges_of = |kind: &str| -> Value {
        if !want_edges {
            return Value::UNDEFINED;
        }
        edges
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, edge)| edge.clone())
            .collect()
    };

    let p = &api.policy;
    Value::from(Context {
        header: backend.comment_text(&format!(
            "Code generated by retrygen from {}. DO NOT EDIT.",
            api.source_name
        )),
        source_name_literal: backend.string_literal(&api.source_name),
        base_path_literal: backend.string_literal(&api.base_path),
        spec_version: api.version.as_str(),
        non_replayable: api
            .operations
            .iter()
            .enumerate()
            .filter(|(_, o)| o.class == ReplayClass::NonReplayable)
            .map(|(i, _)| i)
            .collect(),
        operations: Value::from(operations),
        node_count: api.matcher.nodes.len(),
        nodes: if want_nodes {
            Value::from(nodes)
        } else {
            Value::UNDEFINED
        },
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
        }),
        classes: ReplayClass::ALL
            .iter()
            .map(|c| {
                Value::from(ClassContext {
                    name: c.name(),
                    ident: class_ident(*c).0,
                })
            })
            .collect(),
        idempotent_methods: IDEMPOTENT_METHODS
            .iter()
            .map(|m| backend.string_literal(m))
            .collect(),
        options: Value::from_object(
            options
                .iter()
                .map(|(key, value)| (key.clone(), Value::from(value.as_str())))
                .collect::<BTreeMap<String, Value>>(),
        ),
        param_edges: edges_of("param"),
        literal_edges: edges_of("literal"),
        mixed_edges: edges_of("mixed"),
        operation_edges: edges_of("operation"),
        trie_statements: if want_edges {
            edges.into_iter().map(|(_, edge)| edge).collect()
        } else {
            Value::UNDEFINED
        },
    })
}

/// The nodes of the trie ([`NodeContext`]) when `want_nodes`, and its edges ([`EdgeContext`],
/// with their kinds) in the order of `trie_statements` when `want_edges`.
fn trie(
    api: &Api,
    lit: &mut Literals<'_>,
    want_nodes: bool,
    want_edges: bool,
) -> (Vec<Value>, Vec<(&'static str, Value)>) {
    // Most nodes have no literal children, mixed children or operations: they share one list.
    let empty = Value::from(Vec::<Value>::new());
    let list = |items: Vec<Value>| {
        if items.is_empty() {
            empty.clone()
        } else {
            Value::from(items)
        }
    };
    let mut nodes = Vec::new();
    let mut edges = Vec::new();
    for (index, node) in api.matcher.nodes.iter().enumerate() {
        let mut edge = |kind, (key, key_width): (Value, usize), pieces: &Value, target| {
            if want_edges {
                let edge = Value::from(EdgeContext {
                    kind,
                    node: index,
                    node_width: digits(index),
                    key,
                    key_width,
                    pieces: pieces.clone(),
                    target,
                    target_width: digits(target),
                });
                edges.push((kind, edge));
            }
        };
        let no_key = || (Value::from(""), 0);
        if let Some(child) = node.param {
            edge("param", no_key(), &empty, child);
        }
        let mut literals = Vec::new();
        for (segment, child) in &node.literals {
            let key = lit.string(segment);
            if want_nodes {
                literals.push(Value::from((key.0.clone(), *child)));
            }
            edge("literal", key, &empty, *child);
        }
        let mut mixed = Vec::new();
        for (pieces, child) in &node.mixed {
            let pieces: Value = pieces
                .iter()
                .map(|piece| {
                    Value::from(match piece {
                        Piece::Literal(text) => PieceContext {
                            is_param: false,
                            literal: lit.string(text).0,
                        },
                        Piece::Param(_) => PieceContext {
                            is_param: true,
                            literal: Value::from(""),
                        },
                    })
                })
                .collect();
            edge("mixed", no_key(), &pieces, *child);
            if want_nodes {
                mixed.push(Value::from(MixedContext {
                    pieces,
                    child: *child,
                }));
            }
        }
        let mut operations = Vec::new();
        for (method, operation) in &node.operations {
            let key = lit.method(method);
            if want_nodes {
                operations.push(Value::from((key.0.clone(), *operation)));
            }
            edge("operation", key, &empty, *operation);
        }
        if want_nodes {
            nodes.push(Value::from(NodeContext {
                index,
                literals: list(literals),
                mixed: list(mixed),
                param: node.param.map_or(-1, |p| p as i64),
                operations: list(operations),
                index_width: digits(index),
            }));
        }
    }
    (nodes, edges)
}
