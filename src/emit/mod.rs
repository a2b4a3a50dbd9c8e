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

use crate::model::policy::Jitter;
use crate::model::{Api, ReplayClass, IDEMPOTENT_METHODS};
use include_dir::{include_dir, Dir};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    /// A string literal holding exactly `s`.
    fn string_literal(&self, s: &str) -> String;
    /// A regular expression literal or constructor argument for `pattern`.
    fn regex_literal(&self, pattern: &str) -> String {
        self.string_literal(pattern)
    }
    fn null_literal(&self) -> &'static str;
    /// How generated code names a replay class and a jitter kind.
    fn class_ident(&self, class: ReplayClass) -> String;
    fn jitter_ident(&self, jitter: Jitter) -> String;
    /// Text safe inside a line comment of this language.
    fn comment_text(&self, s: &str) -> String {
        comment_line(s)
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
    let kept = s.trim_end_matches(' ').len();
    let mut out = String::with_capacity(s.len());
    for (i, c) in s.char_indices() {
        if is_unsafe_in_source(c) || (c.is_whitespace() && (c != ' ' || i >= kept)) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
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

#[derive(serde::Serialize)]
struct OperationContext {
    index: usize,
    method: String,
    method_literal: String,
    path_literal: String,
    path_comment: String,
    pattern_literal: String,
    operation_id_literal: String,
    has_operation_id: bool,
    class: &'static str,
    class_ident: String,
}

#[derive(serde::Serialize)]
struct PieceContext {
    is_param: bool,
    literal: String,
}

#[derive(serde::Serialize)]
struct MixedContext {
    pieces: Vec<PieceContext>,
    child: usize,
}

#[derive(serde::Serialize)]
struct NodeContext {
    index: usize,
    literals: Vec<(String, usize)>,
    mixed: Vec<MixedContext>,
    /// -1 when the node has no parameter child.
    param: i64,
    operations: Vec<(String, usize)>,
}

#[derive(serde::Serialize)]
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
    deadline_ms: Option<u64>,
}

#[derive(serde::Serialize)]
struct ClassContext {
    name: &'static str,
    ident: String,
}

#[derive(serde::Serialize)]
struct Context {
    /// "Code generated by retrygen from <file>. DO NOT EDIT." made safe for a line comment.
    header: String,
    source_name_literal: String,
    base_path_literal: String,
    spec_version: &'static str,
    operations: Vec<OperationContext>,
    /// Indices into `operations` of the `non_replayable` ones.
    non_replayable: Vec<usize>,
    nodes: Vec<NodeContext>,
    policy: PolicyContext,
    classes: Vec<ClassContext>,
    idempotent_methods: Vec<String>,
    options: LanguageOptions,
}

fn context(api: &Api, backend: &dyn Backend, options: &LanguageOptions) -> Context {
    let lit = |s: &str| backend.string_literal(s);
    let operations = api
        .operations
        .iter()
        .enumerate()
        .map(|(index, op)| OperationContext {
            index,
            method: op.method.clone(),
            method_literal: lit(&op.method),
            path_literal: lit(&op.path),
            path_comment: backend.comment_text(&op.path),
            pattern_literal: backend.regex_literal(&op.pattern),
            operation_id_literal: op
                .operation_id
                .as_deref()
                .map_or_else(|| backend.null_literal().to_string(), lit),
            has_operation_id: op.operation_id.is_some(),
            class: op.class.name(),
            class_ident: backend.class_ident(op.class),
        })
        .collect();
    let nodes = api
        .matcher
        .nodes
        .iter()
        .enumerate()
        .map(|(index, node)| NodeContext {
            index,
            literals: node.literals.iter().map(|(k, c)| (lit(k), *c)).collect(),
            mixed: node
                .mixed
                .iter()
                .map(|(pieces, child)| MixedContext {
                    pieces: pieces
                        .iter()
                        .map(|p| match p {
                            crate::model::path::Piece::Literal(l) => PieceContext {
                                is_param: false,
                                literal: lit(l),
                            },
                            crate::model::path::Piece::Param(_) => PieceContext {
                                is_param: true,
                                literal: String::new(),
                            },
                        })
                        .collect(),
                    child: *child,
                })
                .collect(),
            param: node.param.map_or(-1, |p| p as i64),
            operations: node.operations.iter().map(|(m, i)| (lit(m), *i)).collect(),
        })
        .collect();
    let p = &api.policy;
    Context {
        header: backend.comment_text(&format!(
            "Code generated by retrygen from {}. DO NOT EDIT.",
            api.source_name
        )),
        source_name_literal: lit(&api.source_name),
        base_path_literal: lit(&api.base_path),
        spec_version: api.version.as_str(),
        non_replayable: api
            .operations
            .iter()
            .enumerate()
            .filter(|(_, o)| o.class == ReplayClass::NonReplayable)
            .map(|(i, _)| i)
            .collect(),
        operations,
        nodes,
        policy: PolicyContext {
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
        },
        classes: ReplayClass::ALL
            .iter()
            .map(|c| ClassContext {
                name: c.name(),
                ident: backend.class_ident(*c),
            })
            .collect(),
        idempotent_methods: IDEMPOTENT_METHODS.iter().map(|m| lit(m)).collect(),
        options: options.clone(),
    }
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
    let env = environment(templates.load(backend.name())?)?;
    let template = env
        .get_template(ENTRY_TEMPLATE)
        .map_err(|e| EmitError::Template {
            template: format!("{}/{ENTRY_TEMPLATE}", backend.name()),
            message: format!("{e:#}"),
        })?;
    let text = template
        .render(minijinja::value::Serde(context(api, backend, options)))
        .map_err(|e| EmitError::Template {
            template: format!("{}/{ENTRY_TEMPLATE}", backend.name()),
            message: format!("{e:#}"),
        })?;
    let mut text = text.trim_end().to_string();
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
    use std::sync::Mutex;
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
