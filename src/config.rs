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
    #[serde(default)]
    options: BTreeMap<String, String>,
    #[serde(default)]
    adapters: Vec<String>,
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
    let jobs = raw
        .job
        .into_iter()
        .map(|job| Job {
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
            targets: job
                .target
                .into_iter()
                .map(|t| {
                    let written_as_folder = t.out.to_string_lossy().ends_with(['/', '\\']);
                    let out = resolve(&t.out);
                    Target {
                        language: t.language,
                        out_is_folder: written_as_folder || out.is_dir(),
                        out,
                        options: t.options,
                        adapters: t.adapters,
                    }
                })
                .collect(),
        })
        .collect();
    Ok(Config {
        path: Some(path.to_path_buf()),
        jobs,
    })
}
