//! The library's entry points: what `retrygen generate`, `check`, `list` and `lint` compute,
//! without printing anything. The binary (src/cli.rs) only parses arguments, calls these, prints
//! and maps the result to an exit code; xtask and the tests call them too.

use crate::config::{Config, Job};
use crate::diag::{Diagnostic, Diagnostics, Location};
use crate::emit::{self, EmitError, TemplateSource};
use crate::model::{self, Api, ModelOptions};
use crate::read::{self, Limits};
use crate::write::{self, Orphan, Planned, Status, WriteError};
use std::path::Path;

/// Everything that can stop a run. Spec and config problems come all at once.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Problems in the documents or the config: every one found, warnings included.
    #[error("{}", .0.clone().into_sorted().iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Diagnostics(Diagnostics),
    /// Templates that do not render (a `--templates` folder with an error, say).
    #[error("{}", .0.iter().map(|e| format!("error: {e}")).collect::<Vec<_>>().join("\n"))]
    Render(Vec<EmitError>),
    /// Writing failed; nothing was changed.
    #[error("{0}; no file was changed")]
    Write(#[from] WriteError),
}

/// What [`generate`] plans: every file with its contents, the generated files of earlier runs
/// that no target writes any more, and the warnings about the specs.
#[derive(Debug, Clone)]
pub struct Plan {
    pub files: Vec<Planned>,
    pub orphans: Vec<Orphan>,
    pub warnings: Diagnostics,
}

/// What [`check`] found: a unified diff per stale or missing file, and one per orphan.
#[derive(Debug, Clone)]
pub struct CheckReport {
    pub stale: Vec<String>,
    pub orphans: Vec<String>,
    /// The number of files the run would write.
    pub files: usize,
    pub warnings: Diagnostics,
}

impl CheckReport {
    pub fn is_clean(&self) -> bool {
        self.stale.is_empty() && self.orphans.is_empty()
    }
}

/// Reads and models one spec. Every problem of both stages comes back in one set of
/// diagnostics; the model is returned only when none of them is an error.
pub fn load_api(spec: &Path, options: &ModelOptions) -> Result<(Api, Diagnostics), Diagnostics> {
    load_spec(&read::SpecRef::file(spec), options)
}

/// [`load_api`] for a spec on disk or in a git revision (`git:REV:path`, see [`read::SpecRef`]).
pub fn load_spec(
    spec: &read::SpecRef,
    options: &ModelOptions,
) -> Result<(Api, Diagnostics), Diagnostics> {
    let (raw, mut diagnostics) =
        read::read_spec_with_overlays(spec, &Limits::default(), &options.overlays, options.strict)?;
    let root_file = &spec.display;
    match model::build(&raw, root_file, options) {
        Ok((api, warnings)) => {
            diagnostics.extend(warnings);
            if diagnostics.has_errors() {
                return Err(diagnostics);
            }
            Ok((api, diagnostics))
        }
        Err(errors) => {
            diagnostics.extend(errors);
            Err(diagnostics)
        }
    }
}

/// Reads two specs (each a file or `git:REV:path`) and compares them: `retrygen diff`.
/// Problems of both come back together; warnings beside the report.
pub fn diff(
    old: &str,
    new: &str,
    options: &ModelOptions,
) -> Result<(crate::diff::Report, Diagnostics), Diagnostics> {
    let mut diagnostics = Diagnostics::default();
    let mut load = |arg: &str| match read::SpecRef::parse(arg) {
        Ok(spec) => match load_spec(&spec, options) {
            Ok((api, warnings)) => {
                diagnostics.extend(warnings);
                Some((api, spec.display))
            }
            Err(problems) => {
                diagnostics.extend(problems);
                None
            }
        },
        Err(message) => {
            diagnostics.push(Diagnostic::error(
                Location {
                    file: "<command line>".into(),
                    line: 1,
                    column: 1,
                    pointer: String::new(),
                },
                message,
                "name a spec file, or git:REV:path to read one from the repository's history",
            ));
            None
        }
    };
    let (old, new) = (load(old), load(new));
    match (old, new) {
        (Some((old, old_name)), Some((new, new_name))) if !diagnostics.has_errors() => Ok((
            crate::diff::diff(&old, &new, &old_name, &new_name),
            diagnostics,
        )),
        _ => Err(diagnostics),
    }
}

/// The model options of one job of `config`.
pub fn model_options(job: &Job, config: &Config) -> ModelOptions {
    let mut options = ModelOptions {
        strict: job.strict,
        ..ModelOptions::default()
    };
    if let Some(headers) = &job.idempotency_headers {
        options.idempotency_headers = headers.clone();
    }
    options.policy_overrides = job.policy.clone();
    options.overlays = job.overlays.clone();
    options.overrides_at = config.path.as_ref().map(|p| Location {
        file: display_path(p),
        line: 1,
        column: 1,
        pointer: "/job/policy".into(),
    });
    options
}

/// A path as the user gave it, with `/` separators and without a leading `./`.
pub fn display_path(path: &Path) -> String {
    let s = path.to_string_lossy().replace('\\', "/");
    s.strip_prefix("./").map(str::to_string).unwrap_or(s)
}

/// Where a target of the config is, for its diagnostics.
fn target_location(config: &Config, job: usize, target: usize) -> Location {
    Location {
        file: config
            .path
            .as_deref()
            .map_or_else(|| "<command line>".to_string(), display_path),
        line: 1,
        column: 1,
        pointer: format!("/job/{job}/target/{target}"),
    }
}

/// Renders every target of every job of `config` in memory. Nothing is written.
pub fn generate(config: &Config) -> Result<Plan, Error> {
    let mut files = Vec::new();
    let mut problems = Diagnostics::default();
    let mut render_errors = Vec::new();
    for (job_index, job) in config.jobs.iter().enumerate() {
        let api = match load_api(&job.spec, &model_options(job, config)) {
            Ok((api, warnings)) => {
                problems.extend(warnings);
                api
            }
            Err(diagnostics) => {
                problems.extend(diagnostics);
                continue;
            }
        };
        let templates = job
            .templates
            .as_ref()
            .map_or(TemplateSource::Embedded, |dir| {
                TemplateSource::Folder(dir.clone())
            });
        // Targets are checked first (cheap, reported in order); the renders then run in parallel.
        let mut accepted = Vec::new();
        for (target_index, target) in job.targets.iter().enumerate() {
            let at = || target_location(config, job_index, target_index);
            if !target.out_is_folder {
                problems.push(Diagnostic::error(
                    at(),
                    format!(
                        "out {:?} is not a folder: a target writes a tables file and the runtime beside it",
                        display_path(&target.out)
                    ),
                    "end the path with `/` (see \"Configuration\" in README.md)",
                ));
                continue;
            }
            let Some(backend) = emit::backend(&target.language) else {
                problems.push(Diagnostic::error(
                    at(),
                    format!("unknown language {:?}", target.language),
                    format!("known: {}", emit::language_names().join(", ")),
                ));
                continue;
            };
            match emit::resolve_options(backend, &target.options).and_then(|options| {
                Ok((options, emit::resolve_adapters(backend, &target.adapters)?))
            }) {
                Ok((options, adapters)) => accepted.push((target, backend, options, adapters)),
                Err(e) => problems.push(Diagnostic::error(
                    at(),
                    e.to_string(),
                    "see the language options in README.md",
                )),
            }
        }
        let render_jobs: Vec<emit::RenderJob<'_>> = accepted
            .iter()
            .map(|(_, backend, options, adapters)| emit::RenderJob {
                backend: *backend,
                options,
                adapters,
            })
            .collect();
        let rendered = emit::render_all(&api, &render_jobs, &templates);
        for ((target, _, _, _), result) in accepted.iter().zip(rendered) {
            match result {
                Ok(rendered) => {
                    for file in rendered {
                        let path = target.out.join(&file.name);
                        files.push(Planned {
                            display: display_path(&path),
                            path,
                            contents: file.contents,
                        });
                    }
                }
                Err(e) => render_errors.push(e),
            }
        }
    }
    // A file in the way that retrygen did not write is the user's: never overwrite it.
    for file in &files {
        if let Ok(existing) = std::fs::read(&file.path) {
            if !emit::is_generated(&String::from_utf8_lossy(&existing)) {
                problems.push(Diagnostic::error(
                    Location {
                        file: file.display.clone(),
                        line: 1,
                        column: 1,
                        pointer: String::new(),
                    },
                    format!(
                        "{} exists and was not generated by retrygen (no `{}` line at its top); refusing to overwrite it",
                        file.display,
                        emit::GENERATED_MARKER
                    ),
                    "give the target a folder of its own, or move the file away",
                ));
            }
        }
    }
    if problems.has_errors() {
        return Err(Error::Diagnostics(problems));
    }
    if !render_errors.is_empty() {
        return Err(Error::Render(render_errors));
    }
    let orphans = write::orphans(&files);
    Ok(Plan {
        files,
        orphans,
        warnings: problems,
    })
}

/// Writes a plan: every changed file atomically (all or nothing), then removes the orphans.
pub fn write(plan: &Plan) -> Result<Vec<(String, Status)>, Error> {
    let statuses = write::write_all(&plan.files)?;
    write::remove_orphans(&plan.orphans)?;
    Ok(statuses)
}

/// Renders `config` in memory and compares it with the files on disk. Never writes.
pub fn check(config: &Config) -> Result<CheckReport, Error> {
    let plan = generate(config)?;
    Ok(CheckReport {
        stale: plan.files.iter().filter_map(write::diff).collect(),
        orphans: plan.orphans.iter().map(write::orphan_diff).collect(),
        files: plan.files.len(),
        warnings: plan.warnings,
    })
}
