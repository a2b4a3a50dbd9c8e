//! retrygen.toml: one or more jobs, each a spec and its targets. Relative paths resolve against
//! the folder of the config file. Documented in README.md ("Configuration").

use crate::diag::{Diagnostic, Location};
use crate::emit::LanguageOptions;
use crate::read::policy::RawValue;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const FILE_NAME: &str = "retrygen.toml";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    job: Vec<RawJob>,
    /// Shared runtimes: each language's runtime written once, for the targets that name it.
    #[serde(default)]
    runtime: Vec<RawRuntime>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRuntime {
    language: String,
    out: toml::Spanned<PathBuf>,
    #[serde(default)]
    options: BTreeMap<String, String>,
    #[serde(default)]
    adapters: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJob {
    spec: PathBuf,
    #[serde(default)]
    strict: bool,
    idempotency_headers: Option<Vec<String>>,
    templates: Option<PathBuf>,
    #[serde(default)]
    policy: BTreeMap<String, toml::Value>,
    #[serde(default)]
    target: Vec<RawTarget>,
    /// OpenAPI Overlay 1.0 files applied in order to the spec.
    #[serde(default)]
    overlays: Vec<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTarget {
    language: String,
    out: PathBuf,
    options: Option<toml::Spanned<BTreeMap<String, String>>>,
    #[serde(default)]
    adapters: Option<toml::Spanned<Vec<String>>>,
    /// The `out` of a `[[runtime]]` of the same language: the target writes its tables only.
    runtime: Option<toml::Spanned<PathBuf>>,
}

/// A `[[runtime]]`: one language's runtime (runtime/<language>/) and adapters, written once into
/// `out` for every target that names it with `runtime = "<out>"`.
#[derive(Debug, Clone)]
pub struct Runtime {
    pub language: String,
    /// The folder the runtime is written into.
    pub out: PathBuf,
    /// The runtime's own options (the package or namespace it declares; visibility).
    pub options: LanguageOptions,
    /// The HTTP client adapters written beside the shared runtime.
    pub adapters: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Target {
    pub language: String,
    /// A file, or a folder (existing, or written with a trailing `/`) that gets the language's
    /// default file name.
    pub out: PathBuf,
    pub out_is_folder: bool,
    pub options: LanguageOptions,
    /// The HTTP client adapters emitted beside the runtime (docs/adapters.md).
    pub adapters: Vec<String>,
    /// The index in [`Config::runtimes`] of the shared runtime the tables use; None for a
    /// self-contained target (its own copy of the runtime beside the tables).
    pub runtime: Option<usize>,
    /// The option that names the shared runtime for the tables, kept out of the language
    /// options: Rust's `runtime_path` (its module path, `crate::retry_runtime`), Go's
    /// `runtime_import` (its import path, `example.com/sdk/retrypolicy`).
    pub runtime_path: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Job {
    pub spec: PathBuf,
    pub strict: bool,
    pub idempotency_headers: Option<Vec<String>>,
    pub templates: Option<PathBuf>,
    pub policy: Vec<(String, RawValue)>,
    pub targets: Vec<Target>,
    /// OpenAPI Overlay 1.0 files applied in order to the spec before it is read.
    pub overlays: Vec<PathBuf>,
}

#[derive(Debug, Clone)]
pub struct Config {
    /// The config file, or None for a config built in memory (the command line's ad hoc mode).
    pub path: Option<PathBuf>,
    pub jobs: Vec<Job>,
    /// The shared runtimes (`[[runtime]]`), each written once.
    pub runtimes: Vec<Runtime>,
}

fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rfind('\n')
        .map_or(before.chars().count(), |i| before[i + 1..].chars().count())
        + 1;
    (line, column)
}

/// A TOML value as the model's format-neutral raw value.
fn raw_value(value: &toml::Value) -> RawValue {
    match value {
        toml::Value::Integer(i) => RawValue::Integer(*i),
        toml::Value::Float(f) => RawValue::Float(*f),
        toml::Value::String(s) => RawValue::Text(s.clone()),
        toml::Value::Array(items) => RawValue::List(items.iter().map(raw_value).collect()),
        toml::Value::Boolean(_) => RawValue::Other("a boolean"),
        _ => RawValue::Other("a table or date"),
    }
}

/// Finds `retrygen.toml` in `dir`.
pub fn discover(dir: &Path) -> Option<PathBuf> {
    let candidate = dir.join(FILE_NAME);
    candidate.is_file().then_some(candidate)
}

pub fn load(path: &Path) -> Result<Config, Diagnostic> {
    let display = path.to_string_lossy().replace('\\', "/");
    let whole = |line, column| Location {
        file: display.clone(),
        line,
        column,
        pointer: String::new(),
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        Diagnostic::error(
            whole(1, 1),
            format!("cannot read the config: {e}"),
            "pass --config PATH, or run in the folder holding retrygen.toml",
        )
    })?;
    let raw: RawConfig = toml::from_str(&text).map_err(|e| {
        let (line, column) = e.span().map_or((1, 1), |s| line_column(&text, s.start));
        Diagnostic::error(
            whole(line, column),
            format!("invalid config: {}", e.message()),
            "see \"Configuration\" in README.md",
        )
    })?;
    if raw.job.is_empty() {
        return Err(Diagnostic::error(
            whole(1, 1),
            "the config declares no [[job]]",
            "add a [[job]] with a spec and at least one [[job.target]]",
        ));
    }
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let resolve = |p: &Path| {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            base.join(p)
        }
    };
    let at = |span: std::ops::Range<usize>| {
        let (line, column) = line_column(&text, span.start);
        whole(line, column)
    };
    let mut runtimes: Vec<Runtime> = Vec::new();
    for runtime in raw.runtime {
        let out = resolve(runtime.out.get_ref());
        if runtimes.iter().any(|r| r.out == out) {
            return Err(Diagnostic::error(
                at(runtime.out.span()),
                format!(
                    "a second [[runtime]] writes into {:?}",
                    runtime.out.get_ref().to_string_lossy()
                ),
                "give each [[runtime]] a folder of its own",
            ));
        }
        let written_as_folder = runtime
            .out
            .get_ref()
            .to_string_lossy()
            .ends_with(['/', '\\']);
        if !written_as_folder && !out.is_dir() {
            return Err(Diagnostic::error(
                at(runtime.out.span()),
                format!(
                    "runtime out {:?} is not a folder",
                    runtime.out.get_ref().to_string_lossy()
                ),
                "end the path with `/` (see \"Shared runtimes\" in README.md)",
            ));
        }
        runtimes.push(Runtime {
            language: runtime.language,
            out,
            options: runtime.options,
            adapters: runtime.adapters,
        });
    }
    let mut jobs = Vec::new();
    for job in raw.job {
        let mut targets = Vec::new();
        for t in job.target {
            let written_as_folder = t.out.to_string_lossy().ends_with(['/', '\\']);
            let out = resolve(&t.out);
            let options_span = t.options.as_ref().map(toml::Spanned::span);
            let mut options = t.options.map(toml::Spanned::into_inner).unwrap_or_default();
            let link_option = runtime_link_option(&t.language);
            let runtime_path = options.remove(link_option);
            let adapters_span = t.adapters.as_ref().map(toml::Spanned::span);
            let adapters = t
                .adapters
                .map(toml::Spanned::into_inner)
                .unwrap_or_default();
            let runtime = match &t.runtime {
                None => {
                    if runtime_path.is_some() {
                        return Err(Diagnostic::error(
                            at(options_span.unwrap_or(0..0)),
                            format!("option `{link_option}` without `runtime`"),
                            "name the target's shared runtime with `runtime = \"<its out>\"`",
                        ));
                    }
                    None
                }
                Some(named) => Some(shared_runtime(
                    &runtimes,
                    named,
                    &resolve(named.get_ref()),
                    &t.language,
                    (&adapters, adapters_span),
                    runtime_path.is_some(),
                    &at,
                )?),
            };
            targets.push(Target {
                language: t.language,
                out_is_folder: written_as_folder || out.is_dir(),
                out,
                options,
                adapters,
                runtime,
                runtime_path,
            });
        }
        jobs.push(Job {
            spec: resolve(&job.spec),
            strict: job.strict,
            idempotency_headers: job.idempotency_headers,
            templates: job.templates.as_deref().map(resolve),
            overlays: job.overlays.iter().map(|p| resolve(p)).collect(),
            policy: job
                .policy
                .iter()
                .map(|(k, v)| (k.clone(), raw_value(v)))
                .collect(),
            targets,
        });
    }
    Ok(Config {
        path: Some(path.to_path_buf()),
        jobs,
        runtimes,
    })
}

/// The target option that tells the tables how to reach a shared runtime: Go's import path,
/// every other language's `runtime_path` (Rust's module path).
fn runtime_link_option(language: &str) -> &'static str {
    if language == "go" {
        "runtime_import"
    } else {
        "runtime_path"
    }
}

/// The index of the `[[runtime]]` a target names with `runtime = "<out>"`, checked: one of the
/// same language, and the target lists no adapters of its own (they live with the runtime).
fn shared_runtime(
    runtimes: &[Runtime],
    named: &toml::Spanned<PathBuf>,
    resolved: &Path,
    language: &str,
    (adapters, adapters_span): (&[String], Option<std::ops::Range<usize>>),
    has_runtime_path: bool,
    at: &dyn Fn(std::ops::Range<usize>) -> Location,
) -> Result<usize, Diagnostic> {
    let shown = named.get_ref().to_string_lossy();
    let Some(index) = runtimes.iter().position(|r| r.out == resolved) else {
        let known: Vec<String> = runtimes
            .iter()
            .map(|r| r.out.to_string_lossy().into_owned())
            .collect();
        return Err(Diagnostic::error(
            at(named.span()),
            format!("runtime {shown:?} is the `out` of no [[runtime]]"),
            if known.is_empty() {
                "declare it: [[runtime]] with its language and out".to_string()
            } else {
                format!("the [[runtime]] folders: {}", known.join(", "))
            },
        ));
    };
    let runtime = &runtimes[index];
    if runtime.language != language {
        return Err(Diagnostic::error(
            at(named.span()),
            format!(
                "runtime {shown:?} is a {} runtime; this target is {language}",
                runtime.language
            ),
            "name the [[runtime]] of the target's language",
        ));
    }
    if !adapters.is_empty() {
        return Err(Diagnostic::error(
            at(adapters_span.unwrap_or_else(|| named.span())),
            "a target with a shared `runtime` lists no `adapters`: they are written with the runtime",
            "move `adapters` to the [[runtime]] it names",
        ));
    }
    if language == "rust" && !has_runtime_path {
        return Err(Diagnostic::error(
            at(named.span()),
            "a Rust target with a shared `runtime` needs the option `runtime_path`",
            "add options = { runtime_path = \"crate::retry_runtime\" } (the runtime's module path)",
        ));
    }
    if language == "go" && !has_runtime_path {
        return Err(Diagnostic::error(
            at(named.span()),
            "a Go target with a shared `runtime` needs the option `runtime_import`",
            "add options = { runtime_import = \"<module path>/<runtime folder>\" } (the runtime package's import path)",
        ));
    }
    Ok(index)
}
