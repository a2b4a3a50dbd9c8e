//! Stage 3, emit: one backend per language behind [`Backend`], registered in [`BACKENDS`] (the
//! only list of languages). A target is a folder: a thin per-spec tables file rendered from
//! `templates/<language>/tables.j2`, and the language's spec-independent runtime
//! (`runtime/<language>/`) copied verbatim. Backends own what differs between languages (string
//! and regex literals, identifiers, options, file names); templates only lay data out.
//!
//! - [`templates`]: where templates come from, compiled once.
//! - [`context`]: what a template sees.
//! - [`escape`]: literal and comment escaping shared by the backends.

mod context;
mod csharp;
mod escape;
mod go;
mod kotlin;
mod python;
mod rust;
mod templates;
mod typescript;
mod visibility;

pub use escape::{comment_line, comment_safe, is_unsafe_in_source, push_comment_line};
pub use templates::{TemplateSource, ENTRY_TEMPLATE};

use crate::model::policy::Jitter;
use crate::model::{Api, ReplayClass};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Validated language options (package, namespace, class names...), from retrygen.toml.
pub type LanguageOptions = BTreeMap<String, String>;

pub trait Backend: Sync {
    /// The language's name in retrygen.toml, `--lang` and `templates/<name>/`.
    fn name(&self) -> &'static str;
    /// Option keys this backend accepts, with their defaults.
    fn default_options(&self) -> LanguageOptions;
    /// Checks option values (identifiers, keywords); called with defaults already filled in.
    fn check_options(&self, options: &LanguageOptions) -> Result<(), String>;
    /// The name of the per-spec tables file, rendered from `templates/<language>/tables.j2`.
    fn tables_file_name(&self, options: &LanguageOptions) -> String;
    /// The spec-independent runtime files (`runtime/<language>/`), emitted beside the tables file.
    fn runtime_files(&self) -> &'static [RuntimeFile] {
        &[]
    }
    /// The HTTP client adapters a target may opt into (`adapters = [...]` in retrygen.toml):
    /// spec-independent files emitted beside the runtime, each for one client
    /// (docs/adapters.md).
    fn adapters(&self) -> &'static [Adapter] {
        &[]
    }
    /// A runtime file as emitted: byte for byte its source, except the package or namespace
    /// declaration where the language's options rename it.
    fn runtime_text(&self, file: &RuntimeFile, _options: &LanguageOptions) -> String {
        file.source.to_string()
    }
    /// For a backend with the `visibility` option: the line start that marks a top-level
    /// declaration's public modifier in its runtime, adapters and tables, and what `internal`
    /// makes of it (see `visibility.rs`).
    fn internal_declarations(&self) -> Option<(&'static str, &'static str)> {
        None
    }
    /// How a thin tables file in `tables_dir` reaches the shared runtime in `runtime_dir`
    /// (declared with `runtime_options`): what the template sees as `runtime`. `runtime_path` is
    /// the target's `runtime_path` (Rust) or `runtime_import` (Go) option. An error when the
    /// language cannot share its runtime, or the two folders cannot be linked.
    fn runtime_link(&self, _link: &LinkRequest<'_>) -> Result<String, String> {
        Err(format!(
            "{} cannot share a runtime yet: its runtime refers to declarations of the tables file",
            self.name()
        ))
    }
    /// The file a shared runtime's folder needs beyond the runtime and adapter files (a
    /// package's `__init__.py`, a Rust module's `mod.rs`), rendered from
    /// `templates/<language>/runtime.j2` with no operations and the contract's default policy.
    fn runtime_entry_file(&self) -> Option<&'static str> {
        None
    }
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

/// What [`Backend::runtime_link`] links: a target's tables folder to a shared runtime's folder.
#[derive(Debug, Clone, Copy)]
pub struct LinkRequest<'a> {
    /// The tables' folder and the runtime's, as written in the config (relative to it) or
    /// absolute, both resolved the same way.
    pub tables_dir: &'a std::path::Path,
    pub runtime_dir: &'a std::path::Path,
    /// The target's options and the runtime's (package, namespace).
    pub tables_options: &'a LanguageOptions,
    pub runtime_options: &'a LanguageOptions,
    /// The target's path to its shared runtime: Rust's `runtime_path` option (a Rust path such
    /// as `crate::retry_runtime`) or Go's `runtime_import` option (an import path).
    pub runtime_path: Option<&'a str>,
}

/// One spec-independent runtime file, embedded from `runtime/<language>/`.
#[derive(Debug, Clone, Copy)]
pub struct RuntimeFile {
    /// The file name in the target folder.
    pub name: &'static str,
    /// The file's text as it is in the repository.
    pub source: &'static str,
}

/// An HTTP client adapter of one language: its name in retrygen.toml and its files, copied like
/// the runtime's (through [`Backend::runtime_text`]).
#[derive(Debug)]
pub struct Adapter {
    /// The name a target lists in `adapters = [...]` (the client's usual name).
    pub name: &'static str,
    /// What the adapter needs beyond the language's standard library, for `--help` and errors.
    pub requires: &'static str,
    pub files: &'static [RuntimeFile],
}

/// One file of a rendered target, named relative to the target's folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedFile {
    pub name: String,
    pub contents: String,
}

/// Marks every file retrygen writes, within its first lines: `check` reports a file that carries
/// it inside a target folder but that the current run would not write (an orphan).
pub const GENERATED_MARKER: &str = "Code generated by retrygen";

/// Whether `contents` is a file retrygen generated (the marker in its first five lines).
pub fn is_generated(contents: &str) -> bool {
    contents
        .lines()
        .take(5)
        .any(|line| line.contains(GENERATED_MARKER))
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

#[derive(Debug, thiserror::Error)]
pub enum EmitError {
    #[error("template {template}: {message}")]
    Template { template: String, message: String },
    #[error("cannot read templates from {path}: {message}")]
    TemplateDir { path: PathBuf, message: String },
    #[error("{language} options: {message}")]
    Options { language: String, message: String },
}

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

/// The adapters `names` selects among `backend`'s, in the backend's order; an unknown name is an
/// error naming the known ones.
pub fn resolve_adapters(
    backend: &dyn Backend,
    names: &[String],
) -> Result<Vec<&'static Adapter>, EmitError> {
    for name in names {
        if !backend.adapters().iter().any(|a| a.name == name) {
            let known: Vec<&str> = backend.adapters().iter().map(|a| a.name).collect();
            return Err(EmitError::Options {
                language: backend.name().into(),
                message: format!("unknown adapter `{name}`; known adapters: {known:?}"),
            });
        }
    }
    Ok(backend
        .adapters()
        .iter()
        .filter(|a| names.iter().any(|n| n == a.name))
        .collect())
}

/// Renders the tables file of one language for `api`.
fn render_tables(
    api: &Api,
    backend: &dyn Backend,
    options: &LanguageOptions,
    adapters: &[&'static Adapter],
    runtime: Option<&str>,
    templates: &TemplateSource,
) -> Result<String, EmitError> {
    render_template(
        ENTRY_TEMPLATE,
        api,
        backend,
        options,
        adapters,
        runtime,
        templates,
    )
}

/// The template a shared runtime's entry file is rendered from ([`Backend::runtime_entry_file`]).
pub const RUNTIME_TEMPLATE: &str = "runtime.j2";

/// Renders the template `name` of one language for `api`.
fn render_template(
    name: &str,
    api: &Api,
    backend: &dyn Backend,
    options: &LanguageOptions,
    adapters: &[&'static Adapter],
    runtime: Option<&str>,
    templates: &TemplateSource,
) -> Result<String, EmitError> {
    let compiled = templates.compiled(backend.name())?;
    let template = compiled
        .env
        .get_template(name)
        .map_err(|e| EmitError::Template {
            template: format!("{}/{name}", backend.name()),
            message: format!("{e:#}"),
        })?;
    let context = context::context(api, backend, options, adapters, runtime);
    let mut text = template.render(context).map_err(|e| EmitError::Template {
        template: format!("{}/{name}", backend.name()),
        message: format!("{e:#}"),
    })?;
    text.truncate(text.trim_end().len());
    text.push('\n');
    Ok(text)
}

/// Renders every file of one language's target for `api`: the tables file first, then the
/// runtime files in the backend's order, then the files of the chosen `adapters`.
pub fn render(
    api: &Api,
    backend: &dyn Backend,
    options: &LanguageOptions,
    adapters: &[&'static Adapter],
    templates: &TemplateSource,
) -> Result<Vec<RenderedFile>, EmitError> {
    let mut files = vec![RenderedFile {
        name: backend.tables_file_name(options),
        contents: render_tables(api, backend, options, adapters, None, templates)?,
    }];
    files.extend(runtime_copies(backend, options, adapters));
    make_internal(backend, options, &mut files);
    Ok(files)
}

/// Renders the thin tables file of a target whose runtime is shared: `link` is what
/// [`Backend::runtime_link`] gave, `adapters` the shared runtime's (the tables export what they
/// take). One file: the runtime is written by [`render_runtime`].
pub fn render_thin_tables(
    api: &Api,
    backend: &dyn Backend,
    options: &LanguageOptions,
    adapters: &[&'static Adapter],
    link: &str,
    templates: &TemplateSource,
) -> Result<RenderedFile, EmitError> {
    let mut files = vec![RenderedFile {
        name: backend.tables_file_name(options),
        contents: render_tables(api, backend, options, adapters, Some(link), templates)?,
    }];
    make_internal(backend, options, &mut files);
    Ok(files.remove(0))
}

/// The files of a shared runtime's folder (`[[runtime]]`): the runtime files, the chosen
/// adapters' files and what the folder needs besides ([`Backend::runtime_folder_files`]).
pub fn render_runtime(
    backend: &dyn Backend,
    options: &LanguageOptions,
    adapters: &[&'static Adapter],
    templates: &TemplateSource,
) -> Result<Vec<RenderedFile>, EmitError> {
    let mut files = Vec::new();
    if let Some(name) = backend.runtime_entry_file() {
        // No API: no operations, the contract's default policy.
        let api = Api {
            source_name: String::new(),
            version: crate::read::SpecVersion::OpenApi31,
            base_path: String::new(),
            operations: Vec::new(),
            policy: crate::model::policy::Policy::default(),
            matcher: crate::model::matcher::Matcher::build(&[]),
        };
        files.push(RenderedFile {
            name: name.to_string(),
            contents: render_template(
                RUNTIME_TEMPLATE,
                &api,
                backend,
                options,
                adapters,
                None,
                templates,
            )?,
        });
    }
    files.extend(runtime_copies(backend, options, adapters));
    make_internal(backend, options, &mut files);
    Ok(files)
}

/// The runtime files in the backend's order, then the files of `adapters`.
fn runtime_copies(
    backend: &dyn Backend,
    options: &LanguageOptions,
    adapters: &[&'static Adapter],
) -> Vec<RenderedFile> {
    let adapter_files = adapters.iter().flat_map(|a| a.files.iter());
    backend
        .runtime_files()
        .iter()
        .chain(adapter_files)
        .map(|file| RenderedFile {
            name: file.name.to_string(),
            contents: backend.runtime_text(file, options),
        })
        .collect()
}

/// `visibility = "internal"`: the same rewrite of every file's top-level declarations. Spec
/// strings cannot start a line (literals escape line breaks), so only the module's own
/// declarations change.
fn make_internal(backend: &dyn Backend, options: &LanguageOptions, files: &mut [RenderedFile]) {
    if let Some((marker, replacement)) = backend.internal_declarations() {
        if visibility::is_internal(options) {
            for file in files {
                file.contents =
                    visibility::rewrite_declarations(&file.contents, marker, replacement);
                // The longer modifier can push a signature past rustfmt's width.
                if backend.name() == "rust" {
                    file.contents = visibility::wrap_long_rust_signatures(&file.contents, 100);
                }
            }
        }
    }
}

/// The relative path from folder `from` to folder `to`, as path components (`..` for each step
/// up); None when one is absolute and the other not, or a `..` cannot be undone.
pub fn relative_components(from: &std::path::Path, to: &std::path::Path) -> Option<Vec<String>> {
    use std::path::Component;
    fn normal(p: &std::path::Path) -> Option<Vec<String>> {
        let mut out: Vec<String> = Vec::new();
        for c in p.components() {
            match c {
                Component::CurDir => {}
                Component::ParentDir => match out.last() {
                    Some(last) if last != "/" => {
                        out.pop();
                    }
                    _ => return None,
                },
                Component::RootDir | Component::Prefix(_) => out.push("/".into()),
                Component::Normal(n) => out.push(n.to_string_lossy().into_owned()),
            }
        }
        Some(out)
    }
    let (from, to) = (normal(from)?, normal(to)?);
    if from.first().is_some_and(|f| f == "/") != to.first().is_some_and(|t| t == "/") {
        return None;
    }
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut out = vec!["..".to_string(); from.len() - common];
    out.extend(to[common..].iter().cloned());
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::templates::environment;
    use super::*;
    use std::path::Path;

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
            overlays: vec![],
        };
        crate::model::build(&raw, "matching.yaml", &options)
            .expect("spec builds")
            .0
    }

    /// Renders `files` (name, text) as the templates of the `rust` language; returns the tables.
    fn render_folder(api: &Api, files: &[(&str, &str)]) -> Result<String, EmitError> {
        let root = tempfile::tempdir().expect("temporary folder");
        let folder = root.path().join("rust");
        std::fs::create_dir(&folder).expect("folder");
        for (name, text) in files {
            std::fs::write(folder.join(name), text).expect("template");
        }
        let options = resolve_options(&rust::Rust, &LanguageOptions::new()).expect("defaults");
        render_tables(
            api,
            &rust::Rust,
            &options,
            &[],
            None,
            &TemplateSource::Folder(root.path().to_path_buf()),
        )
    }

    /// `visibility = "internal"` changes exactly the top-level declarations' modifiers of every
    /// file (tables, runtime, adapter) and nothing else; the default output is untouched. The
    /// internal modules compile (golden/internal/, built by the conformance run's toolchains).
    #[test]
    fn internal_visibility_rewrites_top_level_declarations_only() {
        let api = matching_api();
        for (backend, package, marker, replacement) in [
            (
                &kotlin::Kotlin as &dyn Backend,
                Some(("package", "com.example.retry")),
                "public ",
                "internal ",
            ),
            (
                &csharp::CSharp,
                Some(("namespace", "Example.Retry")),
                "    public ",
                "    internal ",
            ),
            (&rust::Rust, None, "pub ", "pub(crate) "),
        ] {
            let mut given = LanguageOptions::new();
            if let Some((key, value)) = package {
                given.insert(key.into(), value.into());
            }
            let adapters = resolve_adapters(backend, &[backend.adapters()[0].name.to_string()])
                .expect("the adapter");
            let public = render(
                &api,
                backend,
                &resolve_options(backend, &given).expect("valid"),
                &adapters,
                &TemplateSource::Embedded,
            )
            .expect("renders");
            given.insert("visibility".into(), "internal".into());
            let internal = render(
                &api,
                backend,
                &resolve_options(backend, &given).expect("valid"),
                &adapters,
                &TemplateSource::Embedded,
            )
            .expect("renders");
            assert_eq!(public.len(), internal.len());
            for (p, i) in public.iter().zip(&internal) {
                let declarations = p.contents.lines().filter(|l| l.starts_with(marker)).count();
                assert!(declarations > 0, "{} {}", backend.name(), p.name);
                assert!(
                    !i.contents.lines().any(|l| l.starts_with(marker)),
                    "{} {}: a public declaration is left",
                    backend.name(),
                    i.name
                );
                let rewritten = i
                    .contents
                    .lines()
                    .filter(|l| l.starts_with(replacement))
                    .count();
                assert!(rewritten >= declarations, "{} {}", backend.name(), i.name);
                // Line for line the same file but for the modifier (Rust's tables add the one
                // `allow(dead_code)` attribute and its comment).
                let strip = |text: &str| -> Vec<String> {
                    text.lines()
                        .filter(|l| {
                            !l.starts_with("#![allow(dead_code")
                                && !l.contains("Crate-private")
                                && !l.contains("crate-private items")
                        })
                        .map(|l| match l.strip_prefix(replacement) {
                            Some(rest) => format!("{marker}{rest}"),
                            None => l.to_string(),
                        })
                        .filter(|l| l != "//!")
                        .collect()
                };
                let (mut before, mut after) = (strip(&p.contents), strip(&i.contents));
                if backend.name() == "rust" {
                    // A signature pushed past the width is wrapped: compare without layout.
                    let squash = |lines: &[String]| {
                        vec![lines
                            .concat()
                            .split_whitespace()
                            .collect::<String>()
                            .replace(",)", ")")]
                    };
                    (before, after) = (squash(&before), squash(&after));
                }
                assert_eq!(before.len(), after.len(), "{} {}", backend.name(), p.name);
                if let Some((b, a)) = before.iter().zip(&after).find(|(b, a)| b != a) {
                    panic!("{} {}: {b:?} became {a:?}", backend.name(), p.name);
                }
            }
        }
        // Kotlin and C# internal declarations need the SDK's own package or namespace.
        for backend in [&kotlin::Kotlin as &dyn Backend, &csharp::CSharp] {
            let given = LanguageOptions::from([("visibility".to_string(), "internal".to_string())]);
            let error = resolve_options(backend, &given).unwrap_err().to_string();
            assert!(error.contains("needs a"), "{error}");
        }
    }

    /// Contract v3, C3: the module-level `classify` of each language is the default
    /// classifier's, whose unknown requests get the spec's `unknown_operation_class`; and the
    /// tables carry the spec's v3 policy values, its problem types escaped.
    #[test]
    fn tables_carry_the_spec_policy_for_classify_and_v3() {
        let mut api = matching_api();
        api.policy.unknown_operation_class = crate::model::policy::UnknownClass::NoRetry;
        api.policy.throttling_initial_backoff_ms = Some(1234);
        api.policy.retry_problem_types = vec!["urn:\"x\"".into()];
        let expected: [(&str, &[&str]); 5] = [
            (
                "rust",
                &[
                    "with_unknown_operation_class(UnknownOperationClass::NoRetry)",
                    "throttling_initial_backoff_ms: Some(1234)",
                    r#"retry_problem_types: vec!["urn:\"x\"".to_string()]"#,
                ],
            ),
            (
                "go",
                &[
                    "UnknownOperationClass:    UnknownNoRetry,",
                    "ThrottlingInitialBackoffMs:  1234",
                    r#"RetryProblemTypes:           []string{"urn:\"x\""}"#,
                ],
            ),
            (
                "csharp",
                &[
                    "new OperationTable(BasePath, LoadOperations(), UnknownOperationClass.NoRetry)",
                    "long? throttlingInitialBackoffMs = 1234,",
                    r#"ProblemTypes(retryProblemTypes, "urn:\"x\"")"#,
                ],
            ),
            (
                "kotlin",
                &[
                    "unknownOperationClass = UnknownOperationClass.NO_RETRY",
                    "DEFAULT_POLICY.unknownOperationClass,",
                    "throttlingInitialBackoffMs = 1234,",
                    r#"RetryRuntime.problemTypeList("urn:\"x\"")"#,
                ],
            ),
            (
                "typescript",
                &[
                    r#"unknownOperationClass: "no_retry","#,
                    "  policy: POLICY,",
                    "throttlingInitialBackoffMs: 1234,",
                    r#"retryProblemTypes: ["urn:\"x\""],"#,
                ],
            ),
        ];
        for (language, needles) in expected {
            let backend = backend(language).expect("registered");
            let options = resolve_options(backend, &LanguageOptions::new()).expect("defaults");
            let files = render(&api, backend, &options, &[], &TemplateSource::Embedded).unwrap();
            let tables = &files[0].contents;
            for needle in needles {
                assert!(tables.contains(needle), "{language}: {needle}");
            }
        }
    }

    /// The fields of a context struct, as a template lists them.
    #[test]
    fn records_list_their_fields() {
        let text = render_folder(
            &matching_api(),
            &[(ENTRY_TEMPLATE, "{{ operations[0] | list | join(',') }}")],
        )
        .expect("renders");
        assert_eq!(
            text,
            "index,method,method_literal,path_literal,route_literal,operation_id_literal,\
             has_operation_id,class,class_ident,idempotency_header_literal,has_idempotency_header,\
             streaming,resumable\n"
        );
    }

    /// The relative path between two folders as written in a config.
    #[test]
    fn relative_components_between_folders() {
        let rel = |a: &str, b: &str| relative_components(Path::new(a), Path::new(b));
        assert_eq!(rel("sdk/a/", "sdk/rt/").unwrap(), ["..", "rt"]);
        assert_eq!(rel("./sdk/a", "sdk/a/rt").unwrap(), ["rt"]);
        assert_eq!(rel("a/b/../c", "a/rt").unwrap(), ["..", "rt"]);
        assert_eq!(rel("/x/y", "/x/z/w").unwrap(), ["..", "z", "w"]);
        assert!(rel("sdk/a", "sdk/a").unwrap().is_empty());
        assert!(rel("/x", "y").is_none());
        assert!(rel("../a", "b").is_none());
    }

    /// A shared runtime's folder: the entry file rendered from `runtime.j2`, then the verbatim
    /// runtime and adapters; thin tables are one file.
    #[test]
    fn shared_runtime_files() {
        let api = matching_api();
        for backend in BACKENDS {
            if backend.name() == "go" {
                continue;
            }
            let options = resolve_options(backend, &LanguageOptions::new()).expect("defaults");
            let adapters = resolve_adapters(backend, &[backend.adapters()[0].name.to_string()])
                .expect("the adapter");
            let files = render_runtime(backend, &options, &adapters, &TemplateSource::Embedded)
                .expect("renders");
            let entry = usize::from(backend.runtime_entry_file().is_some());
            assert_eq!(
                files.len(),
                entry + backend.runtime_files().len() + adapters[0].files.len()
            );
            for file in &files {
                assert!(is_generated(&file.contents), "{}", file.name);
            }
            for (file, source) in files[entry..].iter().zip(
                backend
                    .runtime_files()
                    .iter()
                    .chain(adapters[0].files.iter()),
            ) {
                assert_eq!(file.contents, source.source, "{}", file.name);
            }
            let thin = render_thin_tables(
                &api,
                backend,
                &options,
                &adapters,
                "crate::retry_runtime",
                &TemplateSource::Embedded,
            )
            .expect("renders");
            assert_eq!(thin.name, backend.tables_file_name(&options));
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
