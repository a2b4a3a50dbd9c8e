//! The library's entry points: what `retrygen generate`, `check`, `list` and `lint` compute,
//! without printing anything. The binary (src/cli.rs) only parses arguments, calls these, prints
//! and maps the result to an exit code; xtask and the tests call them too.

use crate::config::{Config, Job};
use crate::diag::{Diagnostic, Diagnostics, Location};
use crate::emit::{self, EmitError, TemplateSource};
use crate::model::{self, Api, ModelOptions};
pub use crate::read::source::display_path;
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

/// `retrygen lint --suggest-overlay`: the starting overlay for `spec` (after `overlays`), and how
/// many operations it annotates.
pub fn suggest_overlay(
    spec: &Path,
    overlays: &[std::path::PathBuf],
) -> Result<(String, usize), Diagnostics> {
    let spec = read::SpecRef::file(spec);
    let (raw, _) = read::read_spec_with_overlays(&spec, &Limits::default(), overlays, false)?;
    Ok(crate::suggest::overlay(&raw, &spec.display))
}

/// Writes `text` to `path` through a temporary file in the same folder and a rename: a reader
/// never sees half a file, and a failed write leaves the old one.
pub fn write_file_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(text.as_bytes())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
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

/// Where a `[[runtime]]` of the config is, for its diagnostics.
fn runtime_location(config: &Config, runtime: usize) -> Location {
    Location {
        file: config
            .path
            .as_deref()
            .map_or_else(|| "<command line>".to_string(), display_path),
        line: 1,
        column: 1,
        pointer: format!("/runtime/{runtime}"),
    }
}

/// Renders every target of every job of `config` in memory. Nothing is written.
pub fn generate(config: &Config) -> Result<Plan, Error> {
    let mut files = Vec::new();
    let warnings = render_files(config, &mut |file| files.push(file))?;
    let orphans = write::orphans(&files);
    Ok(Plan {
        files,
        orphans,
        warnings,
    })
}

/// What `retrygen generate` does: [`generate`], with every file handed to a writer thread as
/// soon as it is rendered, so that writing and `fsync` overlap the rendering of the next files;
/// the renames wait until every target rendered and every file is staged (all or nothing), then
/// the orphans go. `on_warnings` gets the specs' warnings once everything rendered, before
/// anything is renamed, so that they are shown even when writing then fails. Returns the plan
/// and what happened to each file.
pub fn generate_and_write(
    config: &Config,
    on_warnings: &mut dyn FnMut(&Diagnostics),
) -> Result<(Plan, Vec<(String, Status)>), Error> {
    let (files_to_stage, staged_files) = std::sync::mpsc::channel::<Planned>();
    std::thread::scope(|scope| {
        let writer = scope.spawn(move || {
            let mut staging = write::Staging::new(&write::write_and_sync);
            let mut files = Vec::new();
            let mut failed = None;
            for file in staged_files {
                if failed.is_none() {
                    failed = staging.stage(&file).err();
                }
                files.push(file);
            }
            (files, staging, failed)
        });
        let rendered = render_files(config, &mut |file| {
            // Only a panicked writer hangs up; its join below reports it.
            let _ = files_to_stage.send(file);
        });
        drop(files_to_stage);
        let (files, staging, failed) = writer.join().map_err(|_| WriteError {
            display: String::new(),
            message: "the writer thread panicked".into(),
        })?;
        // On any error `staging` is dropped uncommitted: its temporary files and folders go.
        let warnings = rendered?;
        on_warnings(&warnings);
        if let Some(e) = failed {
            return Err(Error::Write(e));
        }
        let orphans = write::orphans(&files);
        let statuses = staging.commit()?;
        write::remove_orphans(&orphans)?;
        Ok((
            Plan {
                files,
                orphans,
                warnings,
            },
            statuses,
        ))
    })
}

/// Renders every target of every job, one after the other (the renders allocate heavily, and
/// with one malloc arena, see src/main.rs, rendering on several threads is no faster), and
/// hands each file to `sink` in plan order. Returns the warnings, or every problem found.
fn render_files(config: &Config, sink: &mut dyn FnMut(Planned)) -> Result<Diagnostics, Error> {
    let mut problems = Diagnostics::default();
    let mut render_errors = Vec::new();
    // The shared runtimes first, each written once; their options and adapters are the targets'.
    let mut runtimes = Vec::new();
    for (index, runtime) in config.runtimes.iter().enumerate() {
        let at = || runtime_location(config, index);
        let Some(backend) = emit::backend(&runtime.language) else {
            problems.push(Diagnostic::error(
                at(),
                format!("unknown language {:?}", runtime.language),
                format!("known: {}", emit::language_names().join(", ")),
            ));
            runtimes.push(None);
            continue;
        };
        match emit::resolve_options(backend, &runtime.options)
            .and_then(|options| Ok((options, emit::resolve_adapters(backend, &runtime.adapters)?)))
        {
            Ok((options, adapters)) => {
                match emit::render_runtime(backend, &options, &adapters, &TemplateSource::Embedded)
                {
                    Ok(files) => {
                        for file in files {
                            plan_file(&runtime.out, file, &mut problems, sink);
                        }
                    }
                    Err(e) => render_errors.push(e),
                }
                runtimes.push(Some((options, adapters)));
            }
            Err(e) => {
                problems.push(Diagnostic::error(
                    at(),
                    e.to_string(),
                    "see the language options in README.md",
                ));
                runtimes.push(None);
            }
        }
    }
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
        // Targets are checked first (cheap, reported in order); then each one is rendered.
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
                Ok((options, adapters)) => {
                    accepted.push((target_index, target, backend, options, adapters))
                }
                Err(e) => problems.push(Diagnostic::error(
                    at(),
                    e.to_string(),
                    "see the language options in README.md",
                )),
            }
        }
        for (target_index, target, backend, options, adapters) in &accepted {
            let Some(shared) = target.runtime else {
                match emit::render(&api, *backend, options, adapters, &templates) {
                    Ok(rendered) => {
                        for file in rendered {
                            plan_file(&target.out, file, &mut problems, sink);
                        }
                    }
                    Err(e) => render_errors.push(e),
                }
                continue;
            };
            // A thin tables file: the runtime is the shared one's, and so are the adapters.
            let runtime = &config.runtimes[shared];
            let Some(Some((runtime_options, runtime_adapters))) = runtimes.get(shared) else {
                continue; // its problem is reported above
            };
            let link = backend.runtime_link(&emit::LinkRequest {
                tables_dir: &target.out,
                runtime_dir: &runtime.out,
                tables_options: options,
                runtime_options,
                runtime_path: target.runtime_path.as_deref(),
            });
            // Public tables cannot show a crate-private (internal) runtime's types.
            let internal =
                |o: &emit::LanguageOptions| o.get("visibility").is_some_and(|v| v == "internal");
            let link = if internal(runtime_options) && !internal(options) {
                Err(format!(
                    "the shared runtime {:?} is `visibility = \"internal\"`: its targets must be internal too",
                    display_path(&runtime.out)
                ))
            } else {
                link
            };
            let link = match link {
                Ok(link) => link,
                Err(message) => {
                    problems.push(Diagnostic::error(
                        target_location(config, job_index, *target_index),
                        message,
                        "see \"Shared runtimes\" in README.md",
                    ));
                    continue;
                }
            };
            match emit::render_thin_tables(
                &api,
                *backend,
                options,
                runtime_adapters,
                &link,
                &templates,
            ) {
                Ok(file) => plan_file(&target.out, file, &mut problems, sink),
                Err(e) => render_errors.push(e),
            }
        }
    }
    if problems.has_errors() {
        return Err(Error::Diagnostics(problems));
    }
    if !render_errors.is_empty() {
        return Err(Error::Render(render_errors));
    }
    Ok(problems)
}

/// Hands one rendered file of the folder `out` to `sink`, unless a file that retrygen did not
/// write is in its way (the user's: never overwritten).
fn plan_file(
    out: &Path,
    file: emit::RenderedFile,
    problems: &mut Diagnostics,
    sink: &mut dyn FnMut(Planned),
) {
    let path = out.join(&file.name);
    let display = display_path(&path);
    if write::is_foreign(&path) {
        problems.push(Diagnostic::error(
            Location {
                file: display.clone(),
                line: 1,
                column: 1,
                pointer: String::new(),
            },
            format!(
                "{display} exists and was not generated by retrygen (no `{}` line at its top); refusing to overwrite it",
                emit::GENERATED_MARKER
            ),
            "give the target a folder of its own, or move the file away",
        ));
        return;
    }
    sink(Planned {
        display,
        path,
        contents: file.contents,
    });
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
