//! Stage 3, emit: one backend per language behind [`Backend`]. Backends own what differs between
//! languages: string and regex literals, identifiers, option validation. Templates in
//! `templates/<language>/` only lay the prepared text out. Adding a language is one backend file
//! here, one line in [`BACKENDS`] and one templates folder.

mod csharp;
mod escape;
mod go;
mod kotlin;
mod python;
mod rust;
mod typescript;

use crate::model::path::Piece;
use crate::model::policy::Jitter;
use crate::model::{Api, ReplayClass, IDEMPOTENT_METHODS};
use include_dir::{include_dir, Dir};
use minijinja::value::{Enumerator, Object, ObjectRepr, Value};
use minijinja::Environment;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

static EMBEDDED_TEMPLATES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/templates");

/// Validated language options (package, namespace, class names...), from retrygen.toml.
pub type LanguageOptions = BTreeMap<String, String>;

pub trait Backend: Sync {
    /// The language's name in retrygen.toml, `--lang` and `templates/<name>/`.
    fn name(&self) -> &'static str;
    /// Option keys this backend accepts, with their defaults.
    fn default_options(&self) -> LanguageOptions;
    /// Checks option values (identifiers, keywords); called with defaults already filled in.
    fn check_options(&self, options: &LanguageOptions) -> Result<(), String>;
    /// File name used when the config names a folder rather than a file.
    fn default_file_name(&self, options: &LanguageOptions) -> String;
    /// Appends a string literal holding exactly `s` to `out`.
    fn push_string_literal(&self, out: &mut String, s: &str);
    /// Appends a regular expression literal or constructor argument for `pattern` to `out`.
    fn push_regex_literal(&self, out: &mut String, pattern: &str) {
        self.push_string_literal(out, pattern)
    }
    fn null_literal(&self) -> &'static str;
    /// How generated code names a replay class and a jitter kind.
    fn class_ident(&self, class: ReplayClass) -> String;
    fn jitter_ident(&self, jitter: Jitter) -> String;
    /// Appends text safe inside a line comment of this language to `out`.
    fn push_comment_text(&self, out: &mut String, s: &str) {
        push_comment_line(out, s)
    }

    // The same as strings of their own. The context is built with the `push_` forms, into one
    // buffer, which saves an allocation per spec string.

    /// A string literal holding exactly `s`.
    fn string_literal(&self, s: &str) -> String {
        let mut out = String::with_capacity(s.len() + 2);
        self.push_string_literal(&mut out, s);
        out
    }
    /// A regular expression literal or constructor argument for `pattern`.
    fn regex_literal(&self, pattern: &str) -> String {
        let mut out = String::with_capacity(pattern.len() + 2);
        self.push_regex_literal(&mut out, pattern);
        out
    }
    /// Text safe inside a line comment of this language.
    fn comment_text(&self, s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        self.push_comment_text(&mut out, s);
        out
    }
}

pub static BACKENDS: [&dyn Backend; 6] = [
    &rust::Rust,
    &typescript::TypeScript,
    &python::Python,
    &go::Go,
    &kotlin::Kotlin,
    &csharp::CSharp,
];

pub fn backend(name: &str) -> Option<&'static dyn Backend> {
    BACKENDS.iter().copied().find(|b| b.name() == name)
}

pub fn language_names() -> Vec<&'static str> {
    BACKENDS.iter().map(|b| b.name()).collect()
}

/// Replaces every character that could end a line comment or change how a line displays
/// (line and paragraph separators, bidi controls, other control and format characters) with a
/// visible `\u{...}` escape.
pub fn comment_safe(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if is_unsafe_in_source(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// [`comment_safe`] for a line comment of generated code, which must also survive the
/// language's formatter unchanged: rustfmt, gofmt and black trim trailing whitespace, Unicode
/// whitespace such as U+3000 included. So whitespace other than the ASCII space is escaped
/// wherever it is, and spaces at the end are too.
pub fn comment_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_comment_line(&mut out, s);
    out
}

/// [`comment_line`], appended to `out`.
pub fn push_comment_line(out: &mut String, s: &str) {
    let kept = s.trim_end_matches(' ').len();
    if s.bytes().all(|b| (b' '..=b'~').contains(&b)) {
        // Printable ASCII: only the trailing spaces change.
        out.push_str(&s[..kept]);
        for _ in kept..s.len() {
            out.push_str("\\u{20}");
        }
        return;
    }
    for (i, c) in s.char_indices() {
        if is_unsafe_in_source(c) || (c.is_whitespace() && (c != ' ' || i >= kept)) {
            push_code_point(out, c);
        } else {
            out.push(c);
        }
    }
}

/// Appends `\u{...}`, the code point of `c` in hexadecimal.
fn push_code_point(out: &mut String, c: char) {
    use std::fmt::Write;
    write!(out, "\\u{{{:x}}}", c as u32).expect("writing to a String cannot fail");
}

/// Characters no generated file contains raw: controls, line/paragraph separators, and the
/// bidi and zero-width format characters behind "Trojan Source" (CVE-2021-42574).
pub fn is_unsafe_in_source(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{85}' | '\u{feff}' | '\u{061c}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}')
}

#[derive(Debug, thiserror::Error)]
pub enum EmitError {
    #[error("template {template}: {message}")]
    Template { template: String, message: String },
    #[error("cannot read templates from {path}: {message}")]
    TemplateDir { path: PathBuf, message: String },
    #[error("{language} options: {message}")]
    Options { language: String, message: String },
}

/// Where templates come from: the embedded defaults or a folder given with `--templates`.
#[derive(Debug, Clone, Default)]
pub enum TemplateSource {
    #[default]
    Embedded,
    Folder(PathBuf),
}

impl TemplateSource {
    /// All templates of one language, as (name relative to its folder, text).
    fn load(&self, language: &str) -> Result<Vec<(String, String)>, EmitError> {
        match self {
            TemplateSource::Embedded => {
                let dir =
                    EMBEDDED_TEMPLATES
                        .get_dir(language)
                        .ok_or_else(|| EmitError::Template {
                            template: format!("{language}/"),
                            message: "no embedded templates for this language".into(),
                        })?;
                let mut out = Vec::new();
                collect_embedded(dir, language, &mut out);
                Ok(out)
            }
            TemplateSource::Folder(root) => {
                let dir = root.join(language);
                if !dir.is_dir() {
                    // A folder that overrides some languages leaves the others embedded.
                    return TemplateSource::Embedded.load(language);
                }
                let mut out = Vec::new();
                collect_folder(&dir, &dir, &mut out).map_err(|e| EmitError::TemplateDir {
                    path: dir.clone(),
                    message: e.to_string(),
                })?;
                out.sort();
                Ok(out)
            }
        }
    }
}

/// The compiled templates of one language.
struct Compiled {
    env: Environment<'static>,
    /// The root context fields the templates refer to, or `None` when that is not known: a
    /// folder with several templates, which may include or import one another.
    uses: Option<HashSet<String>>,
}

impl Compiled {
    fn new(templates: Vec<(String, String)>) -> Result<Compiled, EmitError> {
        let single = templates.len() == 1;
        let env = environment(templates)?;
        let uses = match env.get_template(ENTRY_TEMPLATE) {
            Ok(template) if single => Some(template.undeclared_variables(false)),
            _ => None,
        };
        Ok(Compiled { env, uses })
    }

    fn uses(&self, field: &str) -> bool {
        self.uses.as_ref().map_or(true, |uses| uses.contains(field))
    }
}

/// The compiled embedded templates of each language, compiled on first use: a run that renders
/// several specs (retrygen.toml, `check`) compiles each language's templates once.
static EMBEDDED_TEMPLATES_COMPILED: Mutex<Vec<(&'static str, Arc<Compiled>)>> =
    Mutex::new(Vec::new());

impl TemplateSource {
    /// The compiled templates of one language. Templates from a folder are read and compiled on
    /// every call, so that edits to them show up; embedded ones are compiled once.
    fn compiled(&self, language: &'static str) -> Result<Arc<Compiled>, EmitError> {
        let embedded = match self {
            TemplateSource::Embedded => true,
            TemplateSource::Folder(root) => !root.join(language).is_dir(),
        };
        if !embedded {
            return Ok(Arc::new(Compiled::new(self.load(language)?)?));
        }
        let cached = |cache: &[(&str, Arc<Compiled>)]| {
            cache
                .iter()
                .find(|(name, _)| *name == language)
                .map(|(_, env)| env.clone())
        };
        let lock = || {
            EMBEDDED_TEMPLATES_COMPILED
                .lock()
                .unwrap_or_else(|e| e.into_inner())
        };
        if let Some(compiled) = cached(&lock()) {
            return Ok(compiled);
        }
        // Compiled without holding the lock; if two threads race, both results are the same.
        let compiled = Arc::new(Compiled::new(TemplateSource::Embedded.load(language)?)?);
        let mut cache = lock();
        if let Some(compiled) = cached(&cache) {
            return Ok(compiled);
        }
        cache.push((language, compiled.clone()));
        Ok(compiled)
    }
}

fn collect_embedded(dir: &Dir<'static>, language: &str, out: &mut Vec<(String, String)>) {
    for file in dir.files() {
        let name = file
            .path()
            .strip_prefix(language)
            .unwrap_or(file.path())
            .to_string_lossy()
            .replace('\\', "/");
        out.push((name, file.contents_utf8().unwrap_or_default().to_string()));
    }
    for sub in dir.dirs() {
        collect_embedded(sub, language, out);
    }
    out.sort();
}

fn collect_folder(base: &Path, dir: &Path, out: &mut Vec<(String, String)>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_folder(base, &path, out)?;
        } else {
            let name = path
                .strip_prefix(base)
                .unwrap_or(&path)
                .to_string_lossy()
                .replace('\\', "/");
            out.push((name, std::fs::read_to_string(&path)?));
        }
    }
    Ok(())
}

/// The entry template of every language.
pub const ENTRY_TEMPLATE: &str = "module.j2";

/// Fills option defaults and validates the result.
pub fn resolve_options(
    backend: &dyn Backend,
    given: &LanguageOptions,
) -> Result<LanguageOptions, EmitError> {
    let mut options = backend.default_options();
    for (key, value) in given {
        if !options.contains_key(key) {
            let known: Vec<&String> = options.keys().collect();
            return Err(EmitError::Options {
                language: backend.name().into(),
                message: format!("unknown option `{key}`; known options: {known:?}"),
            });
        }
        options.insert(key.clone(), value.clone());
    }
    backend
        .check_options(&options)
        .map_err(|message| EmitError::Options {
            language: backend.name().into(),
            message,
        })?;
    Ok(options)
}

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
fn width(text: &str) -> usize {
    if text.is_ascii() {
        text.len()
    } else {
        text.chars().count()
    }
}

/// The width of `n` written in decimal.
fn digits(n: usize) -> usize {
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
fn context(
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

/// A template environment that fails on any undefined value, so a typo in a template is an
/// error, never silently empty output.
fn environment(
    templates: Vec<(String, String)>,
) -> Result<minijinja::Environment<'static>, EmitError> {
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    let syntax = minijinja::syntax::SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .keep_trailing_newline(true)
        .build()
        .expect("default delimiters are valid");
    env.set_syntax(syntax);
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    for (name, source) in templates {
        env.add_template_owned(name.clone(), source)
            .map_err(|e| EmitError::Template {
                template: name,
                message: format!("{e:#}"),
            })?;
    }
    Ok(env)
}

/// Renders the module of one language for `api`.
pub fn render(
    api: &Api,
    backend: &dyn Backend,
    options: &LanguageOptions,
    templates: &TemplateSource,
) -> Result<String, EmitError> {
    let compiled = templates.compiled(backend.name())?;
    let template = compiled
        .env
        .get_template(ENTRY_TEMPLATE)
        .map_err(|e| EmitError::Template {
            template: format!("{}/{ENTRY_TEMPLATE}", backend.name()),
            message: format!("{e:#}"),
        })?;
    let context = context(api, backend, options, &|field| compiled.uses(field));
    let mut text = template.render(context).map_err(|e| EmitError::Template {
        template: format!("{}/{ENTRY_TEMPLATE}", backend.name()),
        message: format!("{e:#}"),
    })?;
    text.truncate(text.trim_end().len());
    text.push('\n');
    Ok(text)
}

/// One module to render: a backend and its resolved options.
pub struct RenderJob<'a> {
    pub backend: &'static dyn Backend,
    pub options: &'a LanguageOptions,
}

/// Renders several modules of one `api`, spread over the available cores (the six renders are
/// independent and dominate generation time after reading). Results come back in `jobs` order,
/// so output stays deterministic whatever the scheduling.
pub fn render_all(
    api: &Api,
    jobs: &[RenderJob<'_>],
    templates: &TemplateSource,
) -> Vec<Result<String, EmitError>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(jobs.len());
    if workers <= 1 {
        return jobs
            .iter()
            .map(|j| render(api, j.backend, j.options, templates))
            .collect();
    }
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<String, EmitError>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let result = render(api, job.backend, job.options, templates);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(result);
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every job index below len is taken by exactly one worker"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every embedded template of every language parses under the strict environment.
    #[test]
    fn every_embedded_template_loads() {
        for backend in BACKENDS {
            let templates = TemplateSource::Embedded
                .load(backend.name())
                .expect("templates exist");
            assert!(
                templates.iter().any(|(n, _)| n == ENTRY_TEMPLATE),
                "{} has no {ENTRY_TEMPLATE}",
                backend.name()
            );
            environment(templates).unwrap_or_else(|e| panic!("{}: {e}", backend.name()));
        }
    }

    fn matching_api() -> Api {
        let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("specs/matching.yaml");
        let (raw, _) = crate::read::read(&spec, &Default::default()).expect("spec reads");
        let options = crate::model::ModelOptions {
            strict: false,
            idempotency_headers: vec!["Idempotency-Key".into()],
            policy_overrides: vec![],
            overrides_at: None,
        };
        crate::model::build(&raw, "matching.yaml", &options)
            .expect("spec builds")
            .0
    }

    /// The parallel render returns, in job order, exactly what each render gives alone; twice
    /// each language, so that two workers render the same templates at once.
    #[test]
    fn render_all_equals_one_render_at_a_time() {
        let api = matching_api();
        let options: Vec<(&'static dyn Backend, LanguageOptions)> = BACKENDS
            .iter()
            .chain(BACKENDS.iter())
            .map(|b| {
                (
                    *b,
                    resolve_options(*b, &LanguageOptions::new()).expect("defaults"),
                )
            })
            .collect();
        let jobs: Vec<RenderJob<'_>> = options
            .iter()
            .map(|(backend, options)| RenderJob {
                backend: *backend,
                options,
            })
            .collect();
        let together = render_all(&api, &jobs, &TemplateSource::Embedded);
        assert_eq!(together.len(), jobs.len());
        for (job, text) in jobs.iter().zip(together) {
            let alone = render(&api, job.backend, job.options, &TemplateSource::Embedded)
                .expect("renders alone");
            assert_eq!(
                text.expect("renders in parallel"),
                alone,
                "{}",
                job.backend.name()
            );
        }
    }

    /// Renders `files` (name, text) as the templates of the `rust` language.
    fn render_folder(api: &Api, files: &[(&str, &str)]) -> Result<String, EmitError> {
        let root = tempfile::tempdir().expect("temporary folder");
        let folder = root.path().join("rust");
        std::fs::create_dir(&folder).expect("folder");
        for (name, text) in files {
            std::fs::write(folder.join(name), text).expect("template");
        }
        let options = resolve_options(&rust::Rust, &LanguageOptions::new()).expect("defaults");
        render(
            api,
            &rust::Rust,
            &options,
            &TemplateSource::Folder(root.path().to_path_buf()),
        )
    }

    /// The fields of a context struct, as a template lists them.
    #[test]
    fn records_list_their_fields() {
        let text = render_folder(
            &matching_api(),
            &[(
                ENTRY_TEMPLATE,
                "{{ operations[0] | list | join(',') }}\n{{ trie_statements[0] | list | join(',') }}",
            )],
        )
        .expect("renders");
        assert_eq!(
            text,
            "index,method,method_literal,path_literal,path_comment,pattern_literal,\
             operation_id_literal,has_operation_id,class,class_ident,method_literal_width,\
             path_literal_width,pattern_literal_width,operation_id_literal_width,class_ident_width\n\
             kind,node,node_width,key,key_width,pieces,target,target_width\n"
        );
    }

    /// Only the trie views a template refers to are built, and each one is complete whichever
    /// other views are built; templates split over several files get every view.
    #[test]
    fn trie_views_agree_whichever_are_built() {
        let api = matching_api();
        let by_nodes = "{% for n in nodes %}{% if n.param >= 0 %}{{ n.index }} param {{ n.param }}\n{% endif %}\
            {% for key, child in n.literals %}{{ n.index }} literal {{ key }} {{ child }}\n{% endfor %}\
            {% for m in n.mixed %}{{ n.index }} mixed {{ m.pieces | length }} {{ m.child }}\n{% endfor %}\
            {% for method, index in n.operations %}{{ n.index }} operation {{ method }} {{ index }}\n{% endfor %}\
            {% endfor %}";
        let by_edges = "{% for e in trie_statements %}{{ e.node }} {{ e.kind }}\
            {% if e.kind == 'literal' or e.kind == 'operation' %} {{ e.key }}{% endif %}\
            {% if e.kind == 'mixed' %} {{ e.pieces | length }}{% endif %} {{ e.target }}\n{% endfor %}";
        let nodes = render_folder(&api, &[(ENTRY_TEMPLATE, by_nodes)]).expect("renders");
        let edges = render_folder(&api, &[(ENTRY_TEMPLATE, by_edges)]).expect("renders");
        assert_eq!(nodes, edges);
        assert!(nodes.contains(" mixed ") && nodes.contains(" param "));
        let both = render_folder(
            &api,
            &[
                (ENTRY_TEMPLATE, "{% include 'edges.j2' %}"),
                ("edges.j2", by_edges),
            ],
        )
        .expect("renders");
        assert_eq!(both, edges);
        // The number of nodes comes without the list of nodes.
        assert_eq!(
            render_folder(&api, &[(ENTRY_TEMPLATE, "{{ node_count }}")]).expect("renders"),
            format!("{}\n", api.matcher.nodes.len())
        );
    }

    #[test]
    fn widths_are_what_length_gives() {
        assert_eq!(width("\"a\\u00e9\""), 9);
        assert_eq!(width("caf\u{e9}"), 4);
        assert_eq!(
            (digits(0), digits(9), digits(10), digits(12345)),
            (1, 1, 2, 5)
        );
    }

    #[test]
    fn comment_lines_survive_formatters() {
        assert_eq!(
            comment_line("/a b\u{3000}c\u{a0}/d  "),
            "/a b\\u{3000}c\\u{a0}/d\\u{20}\\u{20}"
        );
        assert_eq!(comment_line("/x\n\u{202e}"), "/x\\u{a}\\u{202e}");
    }

    #[test]
    fn comments_cannot_be_broken() {
        assert_eq!(
            comment_safe("a\nb\u{2028}c\u{202e}d"),
            "a\\u{a}b\\u{2028}c\\u{202e}d"
        );
    }
}
