//! Stage 2, model: the language-neutral result. Every operation gets exactly one replay class
//! and a reason naming what decided it; the policy values are validated; the path matcher is
//! compiled. Nothing here knows about any target language.

pub mod matcher;
pub mod path;
pub mod policy;

use crate::diag::{Diagnostic, Diagnostics, Location};
use crate::percent::percent_decode;
use crate::read::{Located, RawOperation, RawSpec, SpecVersion};
use matcher::Matcher;
use path::PathTemplate;
use policy::Policy;
use std::collections::HashMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayClass {
    Idempotent,
    Keyed,
    NonReplayable,
    NoRetry,
}

impl ReplayClass {
    pub const ALL: [ReplayClass; 4] = [
        ReplayClass::Idempotent,
        ReplayClass::Keyed,
        ReplayClass::NonReplayable,
        ReplayClass::NoRetry,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ReplayClass::Idempotent => "idempotent",
            ReplayClass::Keyed => "keyed",
            ReplayClass::NonReplayable => "non_replayable",
            ReplayClass::NoRetry => "no_retry",
        }
    }

    /// RFC 9110 section 9.2.2 idempotent methods, plus QUERY (OpenAPI 3.2, safe by definition).
    pub fn method_default(method: &str) -> ReplayClass {
        if IDEMPOTENT_METHODS.contains(&method) {
            ReplayClass::Idempotent
        } else {
            ReplayClass::NonReplayable
        }
    }
}

pub const IDEMPOTENT_METHODS: [&str; 7] =
    ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE", "QUERY"];

/// Header names that mark an operation as deduplicated by the server.
pub const DEFAULT_IDEMPOTENCY_HEADERS: [&str; 2] = ["Idempotency-Key", "X-Idempotency-Key"];

#[derive(Debug, Clone)]
pub struct Operation {
    pub method: String,
    /// As written in the spec.
    pub path: String,
    pub template: PathTemplate,
    pub operation_id: Option<String>,
    pub class: ReplayClass,
    /// Names the deciding source: an annotation with its JSON pointer, or the default applied.
    pub reason: String,
    /// The idempotency key header this operation declares, when it is `keyed`.
    pub idempotency_header: Option<String>,
    pub location: Location,
    /// Where the path template is written (the `paths` key).
    pub path_location: Location,
    /// The structured form of `reason`: which kind of source decided, and where it is.
    pub decided_by: DecidedBy,
    /// Contract v3, A1-A2: set when a 2xx response streams `text/event-stream`.
    pub stream: Option<Stream>,
}

impl Operation {
    /// Contract v3, A1: a 2xx response streams `text/event-stream`.
    pub fn streaming(&self) -> bool {
        self.stream.is_some()
    }

    /// Contract v3, A2: a dropped stream of this operation is resumed with `Last-Event-ID`.
    pub fn resumable(&self) -> bool {
        self.stream.as_ref().is_some_and(|s| s.resumable)
    }

    /// Anchored regular expression of the path (see [`PathTemplate::regex`]), for `list` and the
    /// seed-compatible scan; built on demand, since generation never needs it.
    pub fn pattern(&self) -> String {
        self.template.regex()
    }
}

/// The kind of source that decided an operation's class (README "Classification").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// `x-retry: false` on the operation.
    XRetryOperation,
    /// `x-retry: false` on the path item.
    XRetryPathItem,
    /// `x-idempotent` on the operation.
    XIdempotentOperation,
    /// `x-idempotent` on the path item.
    XIdempotentPathItem,
    /// `x-idempotent` at the document root.
    XIdempotentRoot,
    /// No annotation: RFC 9110 method semantics.
    MethodDefault,
    /// No operation matches and the policy names the class (`unknown_operation_class`, C3).
    UnknownOperationClass,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::XRetryOperation => "x-retry on the operation",
            Source::XRetryPathItem => "x-retry on the path item",
            Source::XIdempotentOperation => "x-idempotent on the operation",
            Source::XIdempotentPathItem => "x-idempotent on the path item",
            Source::XIdempotentRoot => "x-idempotent on the document root",
            Source::MethodDefault => "method default (RFC 9110)",
            Source::UnknownOperationClass => "x-retry-policy's unknown_operation_class",
        }
    }

    /// An annotation the spec's author wrote (everything but the method default).
    pub fn is_annotation(self) -> bool {
        self != Source::MethodDefault
    }
}

/// What decided an operation's class, with the locations a user can open.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DecidedBy {
    pub source: Source,
    /// Where the deciding value is written; None for the method default.
    pub at: Option<Location>,
    /// Where the idempotency key header is declared, for `keyed` operations.
    pub key_at: Option<Location>,
}

#[derive(Debug, Clone)]
pub struct Api {
    pub source_name: String,
    pub version: SpecVersion,
    pub base_path: String,
    /// Sorted by path bytes, then method.
    pub operations: Vec<Operation>,
    pub policy: Policy,
    pub matcher: Matcher,
}

#[derive(Debug, Clone)]
pub struct ModelOptions {
    pub strict: bool,
    pub idempotency_headers: Vec<String>,
    /// retrygen.toml `[policy]` values, applied after the spec's `x-retry-policy`.
    pub policy_overrides: Vec<(String, policy::RawValue)>,
    /// Where the overrides came from, for diagnostics.
    pub overrides_at: Option<Location>,
    /// OpenAPI Overlay 1.0 files applied in order to the document before it is read (the
    /// reader applies them; see [`crate::read::read_spec_with_overlays`]).
    pub overlays: Vec<std::path::PathBuf>,
}

impl Default for ModelOptions {
    fn default() -> Self {
        ModelOptions {
            strict: false,
            idempotency_headers: DEFAULT_IDEMPOTENCY_HEADERS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            policy_overrides: Vec::new(),
            overrides_at: None,
            overlays: Vec::new(),
        }
    }
}

/// `#/pointer` for the root file, `file#/pointer` for referenced files.
fn source(at: &Location, root_file: &str) -> String {
    if at.file == root_file {
        format!("#{}", at.pointer)
    } else {
        format!("{}#{}", at.file, at.pointer)
    }
}

/// Where a deciding value comes from: `at #/pointer` (or `at file#/pointer`), or for a value an
/// overlay brought in `from overlay FILE action N` (1-based).
fn origin(at: &Location, raw: &RawSpec, root_file: &str) -> String {
    if raw.overlays.contains(&at.file) {
        let action = at
            .pointer
            .strip_prefix("/actions/")
            .and_then(|rest| rest.split('/').next())
            .and_then(|n| n.parse::<usize>().ok());
        if let Some(n) = action {
            return format!("from overlay {} action {}", at.file, n + 1);
        }
    }
    format!("at {}", source(at, root_file))
}

fn annotation(key: &str, a: &Located<bool>, raw: &RawSpec, root_file: &str) -> String {
    format!("{key}: {} {}", a.value, origin(&a.at, raw, root_file))
}

/// Builds the model. Errors (and, with `strict`, missing annotations) fail the build; warnings
/// are returned beside the model.
pub fn build(
    raw: &RawSpec,
    root_file: &str,
    options: &ModelOptions,
) -> Result<(Api, Diagnostics), Diagnostics> {
    let mut diagnostics = Diagnostics::default();
    let mut operations = Vec::with_capacity(raw.operations.len());
    let mut any_annotation = raw.idempotent_on_root.is_some();
    for op in &raw.operations {
        any_annotation |= op.idempotent_on_operation.is_some() || op.idempotent_on_path.is_some();
        let (matched, suffix) = path::split_suffix(&op.path);
        if let Some(suffix) = suffix {
            diagnostics.push(Diagnostic::warning(
                op.path_at.clone(),
                format!("path {:?} carries {suffix:?}, which no request contains; it is matched as {matched:?}", op.path),
                "query strings and fragments are not part of `paths` keys; keep one path item per URL",
            ));
        }
        let template = match PathTemplate::parse(matched) {
            Ok(t) => t,
            Err(problem) => {
                diagnostics.push(Diagnostic::error(
                    op.path_at.clone(),
                    format!("malformed path template {:?}: {problem}", op.path),
                    "write path templates like `/sandboxes/{sandboxID}/files/{name}.{ext}`",
                ));
                continue;
            }
        };
        if options.strict
            && matches!(op.method.as_str(), "POST" | "PATCH")
            && op.idempotent_on_operation.is_none()
            && op.idempotent_on_path.is_none()
        {
            diagnostics.push(Diagnostic::error(
                op.at.clone(),
                format!("{} {} has no `x-idempotent` annotation (strict mode)", op.method, op.path),
                "state whether a replay is safe: add `x-idempotent: true` or `x-idempotent: false` to the operation",
            ));
        }
        let (class, mut reason, idempotency_header, decided_by) =
            classify(op, raw, root_file, options);
        let stream = stream(op, class, raw, root_file, &mut diagnostics).map(|(stream, words)| {
            reason.push_str("; ");
            reason.push_str(&words);
            stream
        });
        operations.push(Operation {
            template,
            method: op.method.clone(),
            path: op.path.clone(),
            operation_id: op.operation_id.as_ref().map(|id| id.value.clone()),
            class,
            reason,
            idempotency_header,
            location: op.at.clone(),
            path_location: op.path_at.clone(),
            decided_by,
            stream,
        });
    }
    if options.strict && !any_annotation && !raw.operations.is_empty() {
        diagnostics.push(Diagnostic::error(
            Location {
                file: root_file.to_string(),
                line: 1,
                column: 1,
                pointer: String::new(),
            },
            "the document carries no `x-idempotent` annotation at all (strict mode)",
            "the spec pin probably predates the extension: update it, or add the annotations",
        ));
    }
    operations.sort_by(|a, b| (a.path.as_bytes(), &a.method).cmp(&(b.path.as_bytes(), &b.method)));
    check_operation_ids(raw, &mut diagnostics);
    check_equivalent_paths(&operations, &mut diagnostics);

    let mut policy = Policy::default();
    if let Some(node) = &raw.retry_policy {
        policy.apply_spec(node, &mut diagnostics);
    }
    if !options.policy_overrides.is_empty() {
        let at = options.overrides_at.clone().unwrap_or_else(|| Location {
            file: "retrygen.toml".into(),
            line: 1,
            column: 1,
            pointer: String::new(),
        });
        let entries: Vec<(&str, &policy::RawValue, &Location)> = options
            .policy_overrides
            .iter()
            .map(|(key, value)| (key.as_str(), value, &at))
            .collect();
        policy.apply_entries(
            &entries,
            &at,
            |_| "fix the `policy` table of this job in retrygen.toml",
            &mut diagnostics,
        );
    }
    if diagnostics.has_errors() {
        return Err(diagnostics);
    }
    let matcher = Matcher::build(&operations);
    let api = Api {
        source_name: raw.source_name.clone(),
        version: raw.version,
        base_path: raw.base_path.clone(),
        operations,
        policy,
        matcher,
    };
    Ok((api, diagnostics))
}

/// What makes a streaming operation resumable or not (contract v3, A2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Resume {
    /// A header parameter `Last-Event-ID` (ASCII case-insensitive): resumable.
    LastEventIdHeader,
    /// `x-retry-stream: resume`: resumable.
    XRetryStreamResume,
    /// `x-retry-stream: none`: not resumable, whatever the operation declares.
    XRetryStreamNone,
    /// The operation is `no_retry`, which is never resumed.
    NoRetry,
    /// Neither a `Last-Event-ID` header parameter nor `x-retry-stream`: not resumable.
    Undeclared,
}

impl Resume {
    /// Whether a dropped stream of the operation is resumed.
    pub fn resumable(self) -> bool {
        matches!(self, Resume::LastEventIdHeader | Resume::XRetryStreamResume)
    }

    pub fn name(self) -> &'static str {
        match self {
            Resume::LastEventIdHeader => "Last-Event-ID header parameter",
            Resume::XRetryStreamResume => "x-retry-stream: resume",
            Resume::XRetryStreamNone => "x-retry-stream: none",
            Resume::NoRetry => "no_retry operation",
            Resume::Undeclared => "no Last-Event-ID header parameter, no x-retry-stream",
        }
    }
}

/// The stream attributes of an operation whose 2xx responses include `text/event-stream`
/// (contract v3, A1-A2): the class comes from the usual rules; these say whether a dropped
/// stream is resumed, and what says so.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Stream {
    /// Where the event-stream media type is declared.
    pub at: Location,
    pub resumable: bool,
    pub resume: Resume,
    /// Where the `Last-Event-ID` header parameter or `x-retry-stream` is written.
    pub resume_at: Option<Location>,
}

/// The header parameter that makes a streaming operation resumable (contract v3, A2).
pub const LAST_EVENT_ID: &str = "Last-Event-ID";

/// Contract v3, A1-A2: the stream attributes of `op` of class `class`, and the words the reason
/// gets for them (where the stream and its resumability are declared). A `no_retry` operation
/// is never resumable; `x-retry-stream: resume` on one is a warning, since it does nothing.
fn stream(
    op: &RawOperation,
    class: ReplayClass,
    raw: &RawSpec,
    root_file: &str,
    diagnostics: &mut Diagnostics,
) -> Option<(Stream, String)> {
    let at = op.streaming.as_ref()?;
    let header = op
        .header_parameters
        .iter()
        .find(|h| h.value.eq_ignore_ascii_case(LAST_EVENT_ID));
    let declared = op.retry_stream.as_ref();
    let (resume, resume_at) = match (class, declared, header) {
        (ReplayClass::NoRetry, d, _) => {
            if let Some(d) = d.filter(|d| d.value == crate::read::RetryStream::Resume) {
                diagnostics.push(Diagnostic::warning(
                    d.at.clone(),
                    format!("`x-retry-stream: resume` on {} {}, which is `no_retry`: a no_retry operation is never resumed", op.method, op.path),
                    "remove `x-retry-stream`, or the `x-retry: false` that makes the operation single-attempt",
                ));
            }
            (Resume::NoRetry, None)
        }
        (_, Some(d), _) if d.value == crate::read::RetryStream::None => {
            (Resume::XRetryStreamNone, Some(d.at.clone()))
        }
        (_, Some(d), _) => (Resume::XRetryStreamResume, Some(d.at.clone())),
        (_, None, Some(h)) => (Resume::LastEventIdHeader, Some(h.at.clone())),
        (_, None, None) => (Resume::Undeclared, None),
    };
    let streams = format!("streams text/event-stream {}", origin(at, raw, root_file));
    let words = match (resume, &resume_at) {
        (Resume::LastEventIdHeader, Some(h)) => format!(
            "{streams}, resumable with its {} header declared at {}",
            header.map_or(LAST_EVENT_ID, |h| h.value.as_str()),
            source(h, root_file)
        ),
        (Resume::XRetryStreamResume, Some(d)) => format!(
            "{streams}, resumable: x-retry-stream: resume {}",
            origin(d, raw, root_file)
        ),
        (Resume::XRetryStreamNone, Some(d)) => format!(
            "{streams}, not resumable: x-retry-stream: none {}",
            origin(d, raw, root_file)
        ),
        (Resume::NoRetry, _) => format!("{streams}, never resumed (no_retry)"),
        _ => format!(
            "{streams}, not resumable (no Last-Event-ID header parameter, no x-retry-stream)"
        ),
    };
    Some((
        Stream {
            at: at.clone(),
            resumable: resume.resumable(),
            resume,
            resume_at,
        },
        words,
    ))
}

/// docs/contract.md section 1 and the README's "Classification".
fn classify(
    op: &RawOperation,
    raw: &RawSpec,
    root_file: &str,
    options: &ModelOptions,
) -> (ReplayClass, String, Option<String>, DecidedBy) {
    let decided = |source, at: Option<&Location>| DecidedBy {
        source,
        at: at.cloned(),
        key_at: None,
    };
    let (retry, retry_source) = match (&op.retry_on_operation, &op.retry_on_path) {
        (Some(r), _) => (Some(r), Source::XRetryOperation),
        (None, Some(r)) => (Some(r), Source::XRetryPathItem),
        (None, None) => (None, Source::XRetryOperation),
    };
    if let Some(r) = retry.filter(|r| !r.value) {
        return (
            ReplayClass::NoRetry,
            annotation("x-retry", r, raw, root_file),
            None,
            decided(retry_source, Some(&r.at)),
        );
    }
    let declared = [
        (&op.idempotent_on_operation, Source::XIdempotentOperation),
        (&op.idempotent_on_path, Source::XIdempotentPathItem),
        (&raw.idempotent_on_root, Source::XIdempotentRoot),
    ]
    .into_iter()
    .find_map(|(a, s)| a.as_ref().map(|a| (a, s)));
    let (idempotent, reason, mut decided_by) = match declared {
        Some((a, s)) => (
            a.value,
            annotation("x-idempotent", a, raw, root_file),
            decided(s, Some(&a.at)),
        ),
        None => {
            let default = ReplayClass::method_default(&op.method) == ReplayClass::Idempotent;
            let verdict = if default {
                "is idempotent"
            } else {
                "is not idempotent"
            };
            (
                default,
                format!("method default: {} {verdict} (RFC 9110)", op.method),
                decided(Source::MethodDefault, None),
            )
        }
    };
    if idempotent {
        return (ReplayClass::Idempotent, reason, None, decided_by);
    }
    let key = op.header_parameters.iter().find(|h| {
        options
            .idempotency_headers
            .iter()
            .any(|k| k.eq_ignore_ascii_case(&h.value))
    });
    match key {
        Some(h) => {
            decided_by.key_at = Some(h.at.clone());
            (
                ReplayClass::Keyed,
                format!(
                    "{reason}; replayable with its {} header declared at {}",
                    h.value,
                    source(&h.at, root_file)
                ),
                Some(h.value.clone()),
                decided_by,
            )
        }
        None => (ReplayClass::NonReplayable, reason, None, decided_by),
    }
}

fn check_operation_ids(raw: &RawSpec, diagnostics: &mut Diagnostics) {
    let mut first: HashMap<&str, &RawOperation> = HashMap::with_capacity(raw.operations.len());
    for op in &raw.operations {
        let Some(id) = &op.operation_id else { continue };
        match first.get(id.value.as_str()) {
            None => {
                first.insert(&id.value, op);
            }
            Some(prev) => diagnostics.push(Diagnostic::error(
                id.at.clone(),
                format!(
                    "duplicate operationId {:?}, also used by {} {}",
                    id.value, prev.method, prev.path
                ),
                "operationIds must be unique in the document; rename one of them",
            )),
        }
    }
}

/// Templates that match the same requests (`/a/{x}` beside `/a/{y}`, or `/t` beside `/t#x`):
/// a warning, since the first in table order wins, and an error when they give one method two
/// different classes, since then the winner would decide whether a replay is safe.
fn check_equivalent_paths(operations: &[Operation], diagnostics: &mut Diagnostics) {
    let shapes: Vec<String> = operations.iter().map(|op| op.template.shape()).collect();
    let mut first_by_shape: HashMap<&str, &Operation> = HashMap::with_capacity(operations.len());
    let mut by_shape_method: HashMap<(&str, &str), &Operation> =
        HashMap::with_capacity(operations.len());
    let mut reported: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for (op, shape) in operations.iter().zip(&shapes) {
        let first = *first_by_shape.entry(shape).or_insert(op);
        if first.path != op.path && reported.insert(op.path.as_str()) {
            diagnostics.push(Diagnostic::warning(
                op.path_location.clone(),
                format!("path {:?} matches the same requests as {:?}", op.path, first.path),
                format!("OpenAPI forbids templated paths that differ only in parameter names; where both declare a method, the operation of {:?} is used; merge them into one path item", first.path),
            ));
        }
        match by_shape_method.entry((shape, op.method.as_str())) {
            std::collections::hash_map::Entry::Occupied(prev) => {
                let prev = *prev.get();
                if prev.class != op.class {
                    diagnostics.push(Diagnostic::error(
                        op.location.clone(),
                        format!(
                            "{} {:?} is {} but {} {:?}, which matches the same requests, is {}",
                            op.method,
                            op.path,
                            op.class.name(),
                            prev.method,
                            prev.path,
                            prev.class.name()
                        ),
                        "give both operations the same `x-idempotent`, or merge the path items",
                    ));
                }
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(op);
            }
        }
    }
}

/// The result of classifying one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Classification {
    /// Index into [`Api::operations`], when an operation matched.
    pub operation: Option<usize>,
    pub class: ReplayClass,
}

/// Contract v2, C1: removes `scheme://authority` from a full URL (the scheme is a letter, then
/// letters, digits, `+`, `-` or `.`); a target that then neither is empty nor starts with `/`,
/// `?` or `#` is taken from the root (a `/` is put in front).
pub fn strip_origin(target: &str) -> std::borrow::Cow<'_, str> {
    let bytes = target.as_bytes();
    let scheme_len = bytes.first().filter(|b| b.is_ascii_alphabetic()).map(|_| {
        bytes
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
            .count()
    });
    let mut rest = target;
    if let Some(n) = scheme_len {
        if target[n..].starts_with("://") {
            let after = &target[n + 3..];
            rest = after.find(['/', '?', '#']).map_or("", |i| &after[i..]);
        }
    }
    if rest.is_empty() || rest.starts_with(['/', '?', '#']) {
        std::borrow::Cow::Borrowed(rest)
    } else {
        std::borrow::Cow::Owned(format!("/{rest}"))
    }
}

/// Contract v2, C2: the base path of a configured base (a path or a full URL): origin, query and
/// fragment removed, then every trailing `/`; empty means no base path. Never decoded.
pub fn base_path_of(base: &str) -> String {
    let path = strip_origin(base);
    let end = path.find(['?', '#']).unwrap_or(path.len());
    path[..end].trim_end_matches('/').to_string()
}

impl Api {
    /// docs/contract.md section 2 as the generated module-level `classify` does it: the spec's
    /// base path, and for a request that matches no operation the class the spec's policy's
    /// `unknown_operation_class` gives (C3); `target` is a path or a full URL.
    pub fn classify(&self, method: &str, target: &str) -> Classification {
        self.classify_with(
            &self.base_path,
            self.policy.unknown_operation_class,
            method,
            target,
        )
    }

    /// docs/contract.md section 2 (contract v2): classify with a configured base path (see
    /// [`base_path_of`]) and the policy's `unknown_operation_class`. The reference the generated
    /// modules are checked against.
    pub fn classify_with(
        &self,
        base_path: &str,
        unknown: policy::UnknownClass,
        method: &str,
        target: &str,
    ) -> Classification {
        let method = method.to_ascii_uppercase();
        let stripped = strip_origin(target);
        let end = stripped.find(['?', '#']).unwrap_or(stripped.len());
        let mut path = &stripped[..end];
        if !base_path.is_empty() {
            if let Some(rest) = path.strip_prefix(base_path) {
                if rest.is_empty() || rest.starts_with('/') {
                    path = rest;
                }
            }
        }
        if path.is_empty() {
            path = "/";
        }
        if path.len() > 1 {
            path = path.strip_suffix('/').unwrap_or(path);
        }
        let trimmed = path.strip_prefix('/').unwrap_or(path);
        let segments: Vec<String> = if trimmed.is_empty() && path == "/" {
            Vec::new()
        } else {
            trimmed
                .split('/')
                .map(|s| percent_decode(s).into_owned())
                .collect()
        };
        let operation = self.matcher.find(&segments).and_then(|node| {
            let ops = &self.matcher.nodes[node].operations;
            ops.binary_search_by(|(m, _)| m.as_str().cmp(&method))
                .ok()
                .map(|i| ops[i].1)
        });
        let class = match operation {
            Some(i) => self.operations[i].class,
            None => match unknown {
                policy::UnknownClass::MethodDefault => ReplayClass::method_default(&method),
                policy::UnknownClass::NonReplayable => ReplayClass::NonReplayable,
                policy::UnknownClass::NoRetry => ReplayClass::NoRetry,
            },
        };
        Classification { operation, class }
    }

    pub fn operation_by_id(&self, id: &str) -> Option<&Operation> {
        self.operations
            .iter()
            .find(|o| o.operation_id.as_deref() == Some(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(yaml: &str) -> Api {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spec.yaml");
        std::fs::write(&path, yaml).unwrap();
        let (raw, _) = crate::read::read(&path, &crate::read::Limits::default()).unwrap();
        build(&raw, "spec.yaml", &ModelOptions::default())
            .unwrap()
            .0
    }

    const SPEC: &str = r#"
openapi: 3.0.0
servers: [{url: "https://x.example/base"}]
paths:
  /a/b/c: {get: {operationId: abc, responses: {}}}
  /a/{x}/d: {get: {operationId: axd, responses: {}}}
  /f/{name}.{ext}: {get: {operationId: file, responses: {}}}
  /f/{id}: {post: {operationId: fid, x-idempotent: true, responses: {}}}
  /f/archive.tar: {get: {operationId: archive, responses: {}}}
  /: {post: {operationId: root, responses: {}}}
"#;

    #[test]
    fn literal_beats_parameter_with_backtracking() {
        let api = api(SPEC);
        let id = |m: &str, p: &str| {
            api.classify(m, p)
                .operation
                .map(|i| api.operations[i].operation_id.clone().unwrap())
        };
        assert_eq!(id("GET", "/base/a/b/c"), Some("abc".into()));
        assert_eq!(id("get", "/a/b/d?x=1"), Some("axd".into()));
        assert_eq!(id("GET", "/a/b/c/"), Some("abc".into()));
        assert_eq!(id("GET", "/f/archive.tar"), Some("archive".into()));
        assert_eq!(id("GET", "/f/x.y"), Some("file".into()));
        assert_eq!(
            id("POST", "/f/x.y"),
            None,
            "the mixed path matched first and has no POST"
        );
        assert_eq!(id("POST", "/f/xy"), Some("fid".into()));
        assert_eq!(id("POST", "/base"), Some("root".into()));
        assert_eq!(id("POST", "/base/"), Some("root".into()));
        assert_eq!(id("GET", "/a/%62/c"), Some("abc".into()));
        assert_eq!(
            api.classify("PURGE", "/nowhere").class,
            ReplayClass::NonReplayable
        );
        assert_eq!(
            api.classify("QUERY", "/nowhere").class,
            ReplayClass::Idempotent
        );
    }

    /// C3: the module-level classify gives an unknown request the class the spec's policy names,
    /// as every generated module does; a matched operation keeps its own.
    #[test]
    fn classify_reads_the_specs_unknown_operation_class() {
        let mut api = api(r#"
openapi: 3.0.3
x-retry-policy:
  unknown_operation_class: no_retry
paths:
  /items:
    get:
      operationId: listItems
      responses: {"200": {description: ok}}
"#);
        assert_eq!(api.classify("GET", "/nowhere").class, ReplayClass::NoRetry);
        assert_eq!(api.classify("GET", "/items").class, ReplayClass::Idempotent);
        api.policy.unknown_operation_class = policy::UnknownClass::MethodDefault;
        assert_eq!(
            api.classify("GET", "/nowhere").class,
            ReplayClass::Idempotent
        );
    }

    /// docs/contract.md section 2 step 7, decoded by the one decoder the reader resolves `$ref`s
    /// with.
    #[test]
    fn segments_decode_as_the_contract_says() {
        let decode = crate::percent::percent_decode;
        assert_eq!(decode("caf%C3%A9"), "caf\u{e9}");
        assert_eq!(decode("caf%c3%a9"), "caf\u{e9}");
        assert_eq!(decode("a%2Fb"), "a/b");
        assert_eq!(decode("100%"), "100%");
        assert_eq!(decode("%zz%4"), "%zz%4");
        assert_eq!(decode("%41%"), "A%");
        // Not UTF-8 once decoded: the segment stays as written, even its valid escapes.
        assert_eq!(decode("%C3%A9%FF"), "%C3%A9%FF");
        let api = api(SPEC);
        let id = |p: &str| {
            api.classify("GET", p)
                .operation
                .map(|i| api.operations[i].operation_id.clone().unwrap())
        };
        assert_eq!(id("/a/%62/c"), Some("abc".into()));
        assert_eq!(id("/f/archive%2Etar"), Some("archive".into()));
        assert_eq!(
            id("/a%2Fb/c"),
            None,
            "an encoded slash stays inside its segment"
        );
    }

    #[test]
    fn mixed_segments() {
        use path::Piece::*;
        let p = [Param("n".into()), Literal(".".into()), Param("e".into())];
        assert!(mixed_matches_pub("a.b", &p));
        assert!(mixed_matches_pub("a.b.c", &p));
        assert!(!mixed_matches_pub(".b", &p));
        assert!(!mixed_matches_pub("a.", &p));
        assert!(!mixed_matches_pub("ab", &p));
    }

    #[test]
    fn v2_base_and_full_urls() {
        let api = api(SPEC);
        let id = |base: &str, m: &str, p: &str| {
            api.classify_with(
                &base_path_of(base),
                policy::UnknownClass::MethodDefault,
                m,
                p,
            )
            .operation
            .map(|i| api.operations[i].operation_id.clone().unwrap())
        };
        assert_eq!(
            id("/base", "GET", "https://h:1/base/a/b/c?x"),
            Some("abc".into())
        );
        assert_eq!(
            id("https://gw/proxy/base/", "GET", "/proxy/base/a/b/c"),
            Some("abc".into())
        );
        assert_eq!(id("/base", "GET", "/proxy/base/a/b/c"), None);
        assert_eq!(id("", "POST", "http://h"), Some("root".into()));
        assert_eq!(id("", "GET", "a/b/c"), Some("abc".into()));
        assert_eq!(base_path_of("HTTP://u@h:8/v1//?q"), "/v1");
        assert_eq!(base_path_of("/"), "");
        assert_eq!(strip_origin("/a:b//c"), "/a:b//c");
        assert_eq!(strip_origin("1http://h/x"), "/1http://h/x");
        let unknown = api.classify_with("/base", policy::UnknownClass::NoRetry, "GET", "/zz");
        assert_eq!(
            (unknown.operation, unknown.class),
            (None, ReplayClass::NoRetry)
        );
        assert_eq!(
            api.operations
                .iter()
                .find(|o| o.path == "/f/archive.tar")
                .unwrap()
                .template
                .safe_regex(),
            "^/(?:f|%66)/(?:a|%61)(?:r|%72)(?:c|%63)(?:h|%68)(?:i|%69)(?:v|%76)(?:e|%65)(?:\\.|%2[Ee])(?:t|%74)(?:a|%61)(?:r|%72)/?$"
        );
    }

    /// Contract v3, A1-A2: a stream keeps its class; what makes it resumable.
    #[test]
    fn streams_are_an_attribute_with_a_declared_resume() {
        let api = api(r##"
openapi: 3.0.3
paths:
  /a:
    parameters: [{name: LAST-EVENT-id, in: header}]
    get: {operationId: pathHeader, responses: {"200": {content: {text/event-stream: {}}}}}
  /b:
    get: {operationId: plain, responses: {"200": {content: {Text/Event-Stream; charset=utf-8: {}}}}}
    post:
      operationId: resumedPost
      x-retry-stream: resume
      responses: {"201": {content: {text/event-stream: {}}}}
    put:
      operationId: notResumed
      x-retry-stream: none
      parameters: [{$ref: "#/components/parameters/LastEventId"}]
      responses: {"200": {content: {text/event-stream: {}}}}
  /c:
    get:
      operationId: single
      x-retry: false
      x-retry-stream: resume
      parameters: [{$ref: "#/components/parameters/LastEventId"}]
      responses: {"200": {content: {text/event-stream: {}}}}
    post:
      operationId: keyedStream
      parameters: [{name: Idempotency-Key, in: header}, {name: Last-Event-ID, in: header}]
      responses: {"200": {content: {text/event-stream: {}}}, "400": {content: {text/event-stream: {}}}}
    delete: {operationId: json, responses: {"200": {content: {application/json: {}}}}}
  /d:
    get: {operationId: errorStream, responses: {"500": {content: {text/event-stream: {}}}}}
components:
  parameters:
    LastEventId: {name: Last-Event-ID, in: header}
"##);
        let of = |id: &str| api.operation_by_id(id).unwrap();
        let attributes = |id: &str| {
            let op = of(id);
            (
                op.class,
                op.streaming(),
                op.resumable(),
                op.stream.as_ref().map(|s| s.resume),
            )
        };
        use ReplayClass::*;
        assert_eq!(
            attributes("pathHeader"),
            (Idempotent, true, true, Some(Resume::LastEventIdHeader))
        );
        assert_eq!(
            attributes("plain"),
            (Idempotent, true, false, Some(Resume::Undeclared))
        );
        assert_eq!(
            attributes("resumedPost"),
            (NonReplayable, true, true, Some(Resume::XRetryStreamResume))
        );
        assert_eq!(
            attributes("notResumed"),
            (Idempotent, true, false, Some(Resume::XRetryStreamNone))
        );
        assert_eq!(
            attributes("single"),
            (NoRetry, true, false, Some(Resume::NoRetry))
        );
        assert_eq!(
            attributes("keyedStream"),
            (Keyed, true, true, Some(Resume::LastEventIdHeader))
        );
        assert_eq!(attributes("json"), (Idempotent, false, false, None));
        assert_eq!(
            attributes("errorStream"),
            (Idempotent, false, false, None),
            "only 2xx responses make a stream"
        );
        // (The spec is read from a temporary folder: its locations name the file.)
        let reason = &of("pathHeader").reason;
        assert!(reason.contains("resumable with its LAST-EVENT-id header declared at "));
        assert!(reason.ends_with("#/paths/~1a/parameters/0"), "{reason}");
        let reason = &of("notResumed").reason;
        assert!(reason.contains("not resumable: x-retry-stream: none at "));
        assert!(
            reason.ends_with("#/paths/~1b/put/x-retry-stream"),
            "{reason}"
        );
        assert!(of("single").reason.starts_with("x-retry: false at "));
        assert!(of("single").reason.ends_with(", never resumed (no_retry)"));
        assert_eq!(
            of("resumedPost")
                .stream
                .as_ref()
                .unwrap()
                .resume_at
                .as_ref()
                .unwrap()
                .pointer,
            "/paths/~1b/post/x-retry-stream"
        );
    }

    #[test]
    fn bad_stream_declarations_are_spec_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spec.yaml");
        std::fs::write(
            &path,
            r#"
openapi: 3.1.0
paths:
  /a:
    get: {x-retry-stream: resume, responses: {"200": {content: {application/json: {}}}}}
    post: {x-retry-stream: always, responses: {"200": {content: {text/event-stream: {}}}}}
    put: {x-retry-stream: [resume], responses: {"200": {content: {text/event-stream: {}}}}}
"#,
        )
        .unwrap();
        let (_, diagnostics) = crate::read::read(&path, &crate::read::Limits::default()).unwrap();
        let errors: Vec<String> = diagnostics
            .iter()
            .map(|d| format!("{} {}", d.location.pointer, d.message))
            .collect();
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors[0].starts_with("/paths/~1a/get/x-retry-stream `x-retry-stream: resume` on an operation that does not stream"));
        assert!(errors[1].ends_with("must be `resume` or `none`, found the string \"always\""));
        assert!(errors[2].ends_with("found a sequence"));
    }

    fn mixed_matches_pub(s: &str, p: &[path::Piece]) -> bool {
        matcher::mixed_matches(s, p)
    }
}
