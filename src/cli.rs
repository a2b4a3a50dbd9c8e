//! The command line: parsing, the pipeline per job, and exit codes
//! (0 ok, 1 drift or lint errors, 2 usage or spec errors).

use crate::config::{self, Config, Job, Target};
use crate::diag::{Diagnostic, Diagnostics, Location};
use crate::emit;
use crate::facade::{self, display_path, load_api};
use crate::model::{self, Api, ModelOptions};
use crate::write::Status;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};

pub const EXIT_OK: i32 = 0;
pub const EXIT_DRIFT: i32 = 1;
pub const EXIT_ERROR: i32 = 2;

#[derive(Parser, Debug)]
#[command(
    name = "retrygen",
    about = "Generate spec-driven retry-policy modules (Rust, TypeScript, Python, Go, Kotlin, C#) from an OpenAPI document",
    long_about = "retrygen reads an OpenAPI 2.0/3.0/3.1/3.2 document, classifies every operation as idempotent, keyed, \
non_replayable or no_retry (x-retry, streaming responses, x-idempotent, RFC 9110 method semantics, idempotency-key \
headers), and generates for each SDK language one module with the operation table, a path matcher and the retry \
decision of docs/contract.md.\n\nExit codes: 0 ok, 1 stale files (check) or lint errors, 2 usage or spec errors.",
    version
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Generate modules: every job of retrygen.toml, or one ad hoc target with --spec/--lang/--out.
    Generate(GenerateArgs),
    /// Render in memory and print a unified diff for each stale or missing file; exit 1 on drift. Never writes.
    Check(GenerateArgs),
    /// List every operation with its class and the reason for it.
    List(ListArgs),
    /// Write a commented retrygen.toml for a spec and the languages given.
    Init(InitArgs),
    /// Report diagnostics only; exit 1 when there are errors. --suggest-overlay writes a starting overlay.
    Lint(LintArgs),
    /// Compare two specs' retry behaviour (each a file or git:REV:path); rate every change riskier, safer or neutral.
    Diff(DiffArgs),
    /// Explain one concrete request: its operation, class, deciding source and what the policy does on failure.
    Explain(ExplainArgs),
}

#[derive(Args, Debug)]
pub struct GenerateArgs {
    /// The config file (default: retrygen.toml in the current folder).
    #[arg(long, conflicts_with_all = ["spec", "lang", "out"])]
    pub config: Option<PathBuf>,
    /// Ad hoc mode: the OpenAPI document.
    #[arg(long, requires_all = ["lang", "out"])]
    pub spec: Option<PathBuf>,
    /// Ad hoc mode: the target language (rust, typescript, python, go, kotlin, csharp).
    #[arg(long, requires = "spec")]
    pub lang: Option<String>,
    /// Ad hoc mode: the folder the module's files go into (end it with `/`).
    #[arg(long, requires = "spec")]
    pub out: Option<PathBuf>,
    /// Ad hoc mode: a language option, KEY=VALUE (repeatable), e.g. package=retrypolicy.
    #[arg(long = "option", value_name = "KEY=VALUE", requires = "spec")]
    pub options: Vec<String>,
    /// Ad hoc mode: also emit this HTTP client adapter (repeatable): rust `reqwest`,
    /// typescript `fetch`, python `httpx`, go `net/http`, kotlin `okhttp`, csharp `httpclient`
    /// (docs/adapters.md).
    #[arg(long = "adapter", value_name = "NAME", requires = "spec")]
    pub adapters: Vec<String>,
    /// Ad hoc mode: require an explicit x-idempotent on every POST and PATCH.
    #[arg(long, requires = "spec")]
    pub strict: bool,
    /// Use templates from DIR/<language>/ instead of the embedded ones.
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
    /// An OpenAPI Overlay 1.0 file applied to every job's spec after the job's own `overlays`
    /// (repeatable, applied in order).
    #[arg(long = "overlay", value_name = "FILE")]
    pub overlays: Vec<PathBuf>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    Table,
    Json,
    Markdown,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    #[arg(long)]
    pub spec: PathBuf,
    #[arg(long, value_enum, default_value_t = ListFormat::Table)]
    pub format: ListFormat,
    /// Require an explicit x-idempotent on every POST and PATCH.
    #[arg(long)]
    pub strict: bool,
    /// An OpenAPI Overlay 1.0 file applied to the spec before it is read (repeatable, applied in order).
    #[arg(long = "overlay", value_name = "FILE")]
    pub overlays: Vec<PathBuf>,
}

#[derive(Args, Debug)]
pub struct InitArgs {
    /// The OpenAPI document the config generates from.
    #[arg(long)]
    pub spec: PathBuf,
    /// A target language (repeatable or comma-separated): rust, typescript, python, go, kotlin, csharp.
    #[arg(
        long = "lang",
        value_name = "LANGUAGE",
        required = true,
        value_delimiter = ','
    )]
    pub languages: Vec<String>,
    /// The folder the targets go into, one subfolder per language.
    #[arg(long, value_name = "DIR", default_value = "retry")]
    pub out_dir: PathBuf,
    /// The config file to write.
    #[arg(long, default_value = config::FILE_NAME)]
    pub config: PathBuf,
    /// Replace an existing config file.
    #[arg(long)]
    pub force: bool,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum LintFormat {
    /// Diagnostics on stderr, a summary line on stdout.
    Text,
    /// SARIF 2.1.0 on stdout, for code-scanning upload.
    Sarif,
    /// GitHub Actions workflow commands on stdout: annotations on the pull request.
    Github,
}

#[derive(Args, Debug)]
pub struct LintArgs {
    /// The OpenAPI document. Without it, every job's spec of the config is linted with that
    /// job's overlays and strictness (what a pre-commit hook wants).
    #[arg(long)]
    pub spec: Option<PathBuf>,
    /// The config whose specs are linted when no --spec is given (default: retrygen.toml in the
    /// current folder).
    #[arg(long, conflicts_with = "spec")]
    pub config: Option<PathBuf>,
    /// Require an explicit x-idempotent on every POST and PATCH, and at least one annotation.
    #[arg(long)]
    pub strict: bool,
    #[arg(long, value_enum, default_value_t = LintFormat::Text)]
    pub format: LintFormat,
    /// Write an OpenAPI Overlay 1.0 file with `x-idempotent: false` for every POST and PATCH
    /// that lacks the annotation, to review and commit (replaces FILE).
    #[arg(long, value_name = "FILE")]
    pub suggest_overlay: Option<PathBuf>,
    /// An OpenAPI Overlay 1.0 file applied to the spec before it is read (repeatable, applied in order).
    #[arg(long = "overlay", value_name = "FILE")]
    pub overlays: Vec<PathBuf>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    Text,
    Json,
    Markdown,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Exit 1 when any change is rated riskier.
    Riskier,
    /// Exit 1 on any change at all.
    Any,
}

#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The spec before the change: a file, or git:REV:path (read with `git show`, no checkout).
    pub old: String,
    /// The spec after the change: a file, or git:REV:path.
    pub new: String,
    #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
    pub format: DiffFormat,
    /// Exit 1 when a change of this rating (or any change) is found.
    #[arg(long, value_enum, value_name = "riskier|any")]
    pub fail_on: Option<FailOn>,
    /// An OpenAPI Overlay 1.0 file applied to both specs (repeatable, applied in order).
    #[arg(long = "overlay", value_name = "FILE")]
    pub overlays: Vec<PathBuf>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExplainFormat {
    Text,
    Json,
}

#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// The OpenAPI document: a file, or git:REV:path.
    #[arg(long)]
    pub spec: String,
    /// The request's HTTP method.
    pub method: String,
    /// The request's path (with the base path or without) or full URL.
    pub url: String,
    #[arg(long, value_enum, default_value_t = ExplainFormat::Text)]
    pub format: ExplainFormat,
    /// An OpenAPI Overlay 1.0 file applied to the spec before it is read (repeatable, applied in order).
    #[arg(long = "overlay", value_name = "FILE")]
    pub overlays: Vec<PathBuf>,
}

fn print_diagnostics(err: &mut dyn std::io::Write, diagnostics: &Diagnostics) {
    for d in diagnostics.clone().into_sorted() {
        let _ = writeln!(err, "{d}");
    }
}

/// The config of one invocation: retrygen.toml (or --config), or one ad hoc job built from
/// --spec/--lang/--out; `--templates` applies to every job.
fn config(args: &GenerateArgs) -> Result<Config, Diagnostic> {
    let mut config =
        if let (Some(spec), Some(lang), Some(out)) = (&args.spec, &args.lang, &args.out) {
            let mut options = emit::LanguageOptions::new();
            for pair in &args.options {
                let Some((k, v)) = pair.split_once('=') else {
                    return Err(Diagnostic::error(
                        Location {
                            file: "<command line>".into(),
                            line: 1,
                            column: 1,
                            pointer: String::new(),
                        },
                        format!("--option {pair:?} is not KEY=VALUE"),
                        "write e.g. --option package=retrypolicy",
                    ));
                };
                options.insert(k.to_string(), v.to_string());
            }
            let out_is_folder = out.to_string_lossy().ends_with(['/', '\\']) || out.is_dir();
            let target = Target {
                language: lang.clone(),
                out: out.clone(),
                out_is_folder,
                options,
                adapters: args.adapters.clone(),
                runtime: None,
                runtime_path: None,
            };
            Config {
                path: None,
                jobs: vec![Job {
                    spec: spec.clone(),
                    strict: args.strict,
                    idempotency_headers: None,
                    templates: None,
                    policy: Vec::new(),
                    targets: vec![target],
                    overlays: Vec::new(),
                }],
                runtimes: Vec::new(),
            }
        } else {
            let path = match &args.config {
                Some(p) => p.clone(),
                None => config::discover(Path::new(".")).ok_or_else(|| {
                    Diagnostic::error(
                        Location {
                            file: config::FILE_NAME.into(),
                            line: 1,
                            column: 1,
                            pointer: String::new(),
                        },
                        "no retrygen.toml in the current folder",
                        "pass --config PATH, or --spec/--lang/--out for one ad hoc target",
                    )
                })?,
            };
            config::load(&path)?
        };
    if let Some(dir) = &args.templates {
        for job in &mut config.jobs {
            job.templates = Some(dir.clone());
        }
    }
    for job in &mut config.jobs {
        job.overlays.extend(args.overlays.iter().cloned());
    }
    Ok(config)
}

/// Prints a failed run's problems and gives its exit code.
fn report(err: &mut dyn std::io::Write, error: &facade::Error) -> i32 {
    let _ = writeln!(err, "{error}");
    EXIT_ERROR
}

pub fn generate(
    args: &GenerateArgs,
    out: &mut dyn std::io::Write,
    err: &mut dyn std::io::Write,
) -> i32 {
    let config = match config(args) {
        Ok(c) => c,
        Err(d) => {
            let _ = writeln!(err, "{d}");
            return EXIT_ERROR;
        }
    };
    let mut warnings_shown = |warnings: &Diagnostics| print_diagnostics(&mut *err, warnings);
    match facade::generate_and_write(&config, &mut warnings_shown) {
        Ok((plan, statuses)) => {
            for (display, status) in statuses {
                let word = match status {
                    Status::Written => "wrote",
                    Status::Unchanged => "unchanged",
                };
                let _ = writeln!(out, "{word} {display}");
            }
            for orphan in &plan.orphans {
                let _ = writeln!(out, "removed {} (orphaned generated file)", orphan.display);
            }
            EXIT_OK
        }
        Err(e) => report(err, &e),
    }
}

pub fn check(
    args: &GenerateArgs,
    out: &mut dyn std::io::Write,
    err: &mut dyn std::io::Write,
) -> i32 {
    let config = match config(args) {
        Ok(c) => c,
        Err(d) => {
            let _ = writeln!(err, "{d}");
            return EXIT_ERROR;
        }
    };
    let report_ = match facade::check(&config) {
        Ok(r) => r,
        Err(e) => return report(err, &e),
    };
    print_diagnostics(err, &report_.warnings);
    for diff in report_.stale.iter().chain(&report_.orphans) {
        let _ = write!(out, "{diff}");
    }
    if report_.is_clean() {
        let _ = writeln!(err, "{} generated file(s) up to date", report_.files);
        EXIT_OK
    } else {
        let _ = writeln!(err, "{} of {} generated file(s) are stale or missing, {} orphaned; run `retrygen generate` (or `make codegen`) and commit the result", report_.stale.len(), report_.files, report_.orphans.len());
        EXIT_DRIFT
    }
}

#[derive(serde::Serialize)]
pub struct ListedOperation<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub operation_id: Option<&'a str>,
    pub class: &'static str,
    pub reason: &'a str,
    pub idempotency_header: Option<&'a str>,
    pub pattern: String,
    /// Contract v3, A1: a 2xx response streams `text/event-stream`.
    pub streaming: bool,
    /// Contract v3, A2: a dropped stream is resumed with `Last-Event-ID`.
    pub resumable: bool,
}

impl ListedOperation<'_> {
    /// The stream column of the human formats: `resumable`, `streaming` or `-`.
    fn stream(&self) -> &'static str {
        match (self.streaming, self.resumable) {
            (_, true) => "resumable",
            (true, false) => "streaming",
            (false, false) => "-",
        }
    }
}

pub fn listed(api: &Api) -> Vec<ListedOperation<'_>> {
    api.operations
        .iter()
        .map(|o| ListedOperation {
            method: &o.method,
            path: &o.path,
            operation_id: o.operation_id.as_deref(),
            class: o.class.name(),
            reason: &o.reason,
            idempotency_header: o.idempotency_header.as_deref(),
            pattern: o.pattern(),
            streaming: o.streaming(),
            resumable: o.resumable(),
        })
        .collect()
}

/// Renders `list` output. Control characters are escaped in the human formats so a hostile spec
/// cannot rewrite the terminal; JSON is escaped by its own rules.
pub fn render_list(api: &Api, format: ListFormat) -> String {
    let rows = listed(api);
    match format {
        ListFormat::Json => {
            let mut s = serde_json::to_string_pretty(&rows).expect("plain data serializes");
            s.push('\n');
            s
        }
        ListFormat::Table | ListFormat::Markdown => {
            let safe = |s: &str| emit::comment_safe(s);
            let header = [
                "METHOD",
                "PATH",
                "OPERATION ID",
                "CLASS",
                "STREAM",
                "REASON",
            ];
            let cells: Vec<[String; 6]> = rows
                .iter()
                .map(|r| {
                    [
                        safe(r.method),
                        safe(r.path),
                        r.operation_id.map_or("-".to_string(), safe),
                        r.class.to_string(),
                        r.stream().to_string(),
                        safe(r.reason),
                    ]
                })
                .collect();
            let mut out = String::new();
            if format == ListFormat::Markdown {
                let md = |s: &str| s.replace('|', "\\|");
                out.push_str(
                    "| method | path | operationId | class | stream | reason |\n|---|---|---|---|---|---|\n",
                );
                for c in &cells {
                    out.push_str(&format!(
                        "| {} | `{}` | {} | {} | {} | {} |\n",
                        md(&c[0]),
                        md(&c[1]).replace('`', "'"),
                        md(&c[2]),
                        c[3],
                        c[4],
                        md(&c[5])
                    ));
                }
            } else {
                let widths: Vec<usize> = (0..5)
                    .map(|i| {
                        cells
                            .iter()
                            .map(|c| c[i].chars().count())
                            .chain([header[i].len()])
                            .max()
                            .unwrap_or(0)
                    })
                    .collect();
                let line = |c: [&str; 6]| {
                    let mut l = String::new();
                    for i in 0..5 {
                        l.push_str(c[i]);
                        l.push_str(&" ".repeat(widths[i] - c[i].chars().count() + 2));
                    }
                    l.push_str(c[5]);
                    l.push('\n');
                    l
                };
                out.push_str(&line(header));
                for c in &cells {
                    out.push_str(&line([&c[0], &c[1], &c[2], &c[3], &c[4], &c[5]]));
                }
            }
            let count = |class: model::ReplayClass| {
                api.operations.iter().filter(|o| o.class == class).count()
            };
            let summary: Vec<String> = model::ReplayClass::ALL
                .iter()
                .map(|c| format!("{} {}", count(*c), c.name()))
                .collect();
            if format == ListFormat::Table {
                out.push_str(&format!(
                    "\n{} operations: {}; {} streaming, {} resumable; base path {:?}\n",
                    api.operations.len(),
                    summary.join(", "),
                    rows.iter().filter(|r| r.streaming).count(),
                    rows.iter().filter(|r| r.resumable).count(),
                    api.base_path
                ));
            }
            out
        }
    }
}

pub fn list(args: &ListArgs, out: &mut dyn std::io::Write, err: &mut dyn std::io::Write) -> i32 {
    let options = ModelOptions {
        strict: args.strict,
        overlays: args.overlays.clone(),
        ..ModelOptions::default()
    };
    match load_api(&args.spec, &options) {
        Ok((api, warnings)) => {
            print_diagnostics(err, &warnings);
            let _ = out.write_all(render_list(&api, args.format).as_bytes());
            EXIT_OK
        }
        Err(diagnostics) => {
            print_diagnostics(err, &diagnostics);
            EXIT_ERROR
        }
    }
}

pub fn lint(args: &LintArgs, out: &mut dyn std::io::Write, err: &mut dyn std::io::Write) -> i32 {
    let Some(spec) = &args.spec else {
        return lint_config(args, out, err);
    };
    if let Some(file) = &args.suggest_overlay {
        return suggest_overlay(spec, &args.overlays, file, out, err);
    }
    let options = ModelOptions {
        strict: args.strict,
        overlays: args.overlays.clone(),
        ..ModelOptions::default()
    };
    lint_one(spec, &options, args.format, out, err)
}

/// `lint` without `--spec`: each job's spec of the config, as `generate` reads it.
fn lint_config(args: &LintArgs, out: &mut dyn std::io::Write, err: &mut dyn std::io::Write) -> i32 {
    if args.suggest_overlay.is_some() {
        let _ = writeln!(
            err,
            "error: --suggest-overlay needs --spec (the overlay is written for one document)"
        );
        return EXIT_ERROR;
    }
    let generate_args = GenerateArgs {
        config: args.config.clone(),
        spec: None,
        lang: None,
        out: None,
        options: Vec::new(),
        adapters: Vec::new(),
        strict: false,
        templates: None,
        overlays: args.overlays.clone(),
    };
    let config = match config(&generate_args) {
        Ok(c) => c,
        Err(d) => {
            let _ = writeln!(err, "{d}");
            return EXIT_ERROR;
        }
    };
    // The worst exit over the jobs: a usage problem (2) outranks lint errors (1).
    let mut code = EXIT_OK;
    for job in &config.jobs {
        let mut options = facade::model_options(job, &config);
        options.strict |= args.strict;
        code = code.max(lint_one(&job.spec, &options, args.format, out, err));
    }
    code
}

fn lint_one(
    spec: &Path,
    options: &ModelOptions,
    format: LintFormat,
    out: &mut dyn std::io::Write,
    err: &mut dyn std::io::Write,
) -> i32 {
    // A spec path that names no file is a usage problem (exit 2); every problem inside a
    // document is what lint reports (exit 1).
    let unreadable = !spec.is_file();
    let diagnostics = match load_api(spec, options) {
        Ok((_, d)) | Err(d) => d,
    };
    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    let warnings = diagnostics.len() - errors;
    match format {
        LintFormat::Text => {
            print_diagnostics(err, &diagnostics);
            let _ = writeln!(
                out,
                "{}: {errors} error(s), {warnings} warning(s)",
                display_path(spec)
            );
        }
        LintFormat::Sarif => {
            let sorted = diagnostics.into_sorted();
            let _ = out.write_all(crate::diag::render_sarif(&sorted).as_bytes());
        }
        LintFormat::Github => {
            let sorted = diagnostics.into_sorted();
            let _ = out.write_all(crate::diag::render_github(&sorted).as_bytes());
        }
    }
    match (unreadable, errors) {
        (true, _) => EXIT_ERROR,
        (false, 0) => EXIT_OK,
        (false, _) => EXIT_DRIFT,
    }
}

fn suggest_overlay(
    spec: &Path,
    overlays: &[PathBuf],
    file: &Path,
    out: &mut dyn std::io::Write,
    err: &mut dyn std::io::Write,
) -> i32 {
    match facade::suggest_overlay(spec, overlays) {
        Ok((text, actions)) => {
            if let Err(e) = facade::write_file_atomically(file, &text) {
                let _ = writeln!(err, "error: cannot write {}: {e}", display_path(file));
                return EXIT_ERROR;
            }
            let _ = writeln!(
                out,
                "{}: {actions} POST/PATCH operation(s) without x-idempotent; wrote {} (review each action, then add it to the job's overlays)",
                display_path(spec),
                display_path(file)
            );
            EXIT_OK
        }
        Err(diagnostics) => {
            print_diagnostics(err, &diagnostics);
            EXIT_ERROR
        }
    }
}

pub fn init(args: &InitArgs, out: &mut dyn std::io::Write, err: &mut dyn std::io::Write) -> i32 {
    let mut languages: Vec<&str> = Vec::new();
    for language in &args.languages {
        match emit::backend(language.trim()) {
            Some(backend) if !languages.contains(&backend.name()) => languages.push(backend.name()),
            Some(_) => {}
            None => {
                let _ = writeln!(
                    err,
                    "error: unknown language {language:?}\n  help: one of {}",
                    emit::language_names().join(", ")
                );
                return EXIT_ERROR;
            }
        }
    }
    if args.config.exists() && !args.force {
        let _ = writeln!(
            err,
            "error: {} exists\n  help: edit it, or pass --force to replace it",
            display_path(&args.config)
        );
        return EXIT_ERROR;
    }
    // The spec must load: a config for a document retrygen cannot read would fail at once.
    let unannotated = match facade::suggest_overlay(&args.spec, &[]) {
        Ok((_, n)) => n,
        Err(diagnostics) => {
            print_diagnostics(err, &diagnostics);
            return EXIT_ERROR;
        }
    };
    // The config names paths relative to its own folder.
    let absolute = |p: &Path| std::env::current_dir().map_or(p.to_path_buf(), |cwd| cwd.join(p));
    let folder = absolute(args.config.parent().unwrap_or(Path::new("")));
    let spec = display_path(&crate::init::relative_to(&absolute(&args.spec), &folder));
    let out_dir = display_path(&crate::init::relative_to(&absolute(&args.out_dir), &folder));
    let text = crate::init::config_text(&spec, &languages, &out_dir);
    if let Err(e) = facade::write_file_atomically(&args.config, &text) {
        let _ = writeln!(
            err,
            "error: cannot write {}: {e}",
            display_path(&args.config)
        );
        return EXIT_ERROR;
    }
    let _ = writeln!(
        out,
        "wrote {} ({} target(s)); next: `retrygen generate`",
        display_path(&args.config),
        languages.len()
    );
    if unannotated > 0 {
        let _ = writeln!(
            out,
            "{unannotated} POST/PATCH operation(s) have no x-idempotent: `retrygen lint --spec {} --suggest-overlay retry-overlay.yaml` writes an overlay to review",
            display_path(&args.spec)
        );
    }
    EXIT_OK
}

pub fn diff(args: &DiffArgs, out: &mut dyn std::io::Write, err: &mut dyn std::io::Write) -> i32 {
    let (report, warnings) = match facade::diff(
        &args.old,
        &args.new,
        &ModelOptions {
            overlays: args.overlays.clone(),
            ..ModelOptions::default()
        },
    ) {
        Ok(r) => r,
        Err(diagnostics) => {
            print_diagnostics(err, &diagnostics);
            return EXIT_ERROR;
        }
    };
    print_diagnostics(err, &warnings);
    let text = match args.format {
        DiffFormat::Text => report.render_text(),
        DiffFormat::Json => report.render_json(),
        DiffFormat::Markdown => report.render_markdown(),
    };
    let _ = out.write_all(text.as_bytes());
    let fail = match args.fail_on {
        None => false,
        Some(FailOn::Riskier) => report.count(crate::diff::Risk::Riskier) > 0,
        Some(FailOn::Any) => !report.changes.is_empty(),
    };
    if fail {
        EXIT_DRIFT
    } else {
        EXIT_OK
    }
}

pub fn explain(
    args: &ExplainArgs,
    out: &mut dyn std::io::Write,
    err: &mut dyn std::io::Write,
) -> i32 {
    let loaded = crate::read::SpecRef::parse(&args.spec)
        .map_err(|message| {
            let mut d = Diagnostics::default();
            d.push(Diagnostic::error(
                Location {
                    file: "<command line>".into(),
                    line: 1,
                    column: 1,
                    pointer: String::new(),
                },
                message,
                "name a spec file, or git:REV:path",
            ));
            d
        })
        .and_then(|spec| {
            let options = ModelOptions {
                overlays: args.overlays.clone(),
                ..ModelOptions::default()
            };
            facade::load_spec(&spec, &options)
        });
    let (api, warnings) = match loaded {
        Ok(loaded) => loaded,
        Err(diagnostics) => {
            print_diagnostics(err, &diagnostics);
            return EXIT_ERROR;
        }
    };
    print_diagnostics(err, &warnings);
    let e = crate::explain::explain(&api, &args.method, &args.url);
    let text = match args.format {
        ExplainFormat::Text => e.render_text(&api),
        ExplainFormat::Json => e.render_json(),
    };
    let _ = out.write_all(text.as_bytes());
    EXIT_OK
}

pub fn run(cli: Cli, out: &mut dyn std::io::Write, err: &mut dyn std::io::Write) -> i32 {
    match &cli.command {
        Command::Generate(args) => generate(args, out, err),
        Command::Check(args) => check(args, out, err),
        Command::List(args) => list(args, out, err),
        Command::Init(args) => init(args, out, err),
        Command::Lint(args) => lint(args, out, err),
        Command::Diff(args) => diff(args, out, err),
        Command::Explain(args) => explain(args, out, err),
    }
}
