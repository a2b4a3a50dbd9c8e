//! Render, lint, build and run one language's harness: the unit that `conformance` repeats for
//! every language and spec.

use crate::toolchains::{self, Built, Module};
use anyhow::{anyhow, Context, Result};
use retrygen::emit::{self, LanguageOptions, TemplateSource};
use retrygen::model::ModelOptions;
use std::path::Path;

/// Runtime files that replace the rendered ones of the same name (the mutation check's altered
/// copies): `(language, file name, text)`. Set only by `cargo xtask mutation`, which runs one
/// conformance suite at a time.
static RUNTIME_OVERRIDE: std::sync::Mutex<Vec<(String, String, String)>> =
    std::sync::Mutex::new(Vec::new());

/// Replaces the runtime files `files` (`(name, text)`) of `language` in every module rendered
/// until the next call; an empty list restores the embedded runtime.
pub fn override_runtime(language: &str, files: Vec<(String, String)>) {
    let mut slot = RUNTIME_OVERRIDE.lock().unwrap_or_else(|e| e.into_inner());
    *slot = files
        .into_iter()
        .map(|(name, text)| (language.to_string(), name, text))
        .collect();
}

/// Renders `spec` for `language` with default options into `work/module/`.
pub fn render(
    language: &str,
    spec: &Path,
    work: &Path,
    templates: &TemplateSource,
) -> Result<Module> {
    render_with(language, spec, work, templates, &LanguageOptions::new())
}

/// [`render`] with language options (a retrygen.toml target's). A package, namespace, object or
/// class name other than the default is also given to [`toolchains::copy_harness`], so the
/// harness this thread builds next names the module's.
pub fn render_with(
    language: &str,
    spec: &Path,
    work: &Path,
    templates: &TemplateSource,
    given: &LanguageOptions,
) -> Result<Module> {
    let backend = emit::backend(language).ok_or_else(|| anyhow!("unknown language {language}"))?;
    let (api, _) = retrygen::load_api(spec, &ModelOptions::default())
        .map_err(|d| anyhow!("{}: {d}", spec.display()))?;
    let options = emit::resolve_options(backend, given)?;
    let defaults = backend.default_options();
    let renames = ["package", "namespace", "object", "class"]
        .iter()
        .filter_map(|key| {
            let (default, chosen) = (defaults.get(*key)?, options.get(*key)?);
            (default != chosen).then(|| (default.clone(), chosen.clone()))
        })
        .collect();
    toolchains::set_harness_renames(renames);
    let rendered = emit::render(&api, backend, &options, &[], templates)?;
    let dir = work.join("module");
    std::fs::create_dir_all(&dir)?;
    let mut files = Vec::new();
    let overrides = RUNTIME_OVERRIDE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    for file in rendered {
        let path = dir.join(&file.name);
        let replaced = overrides
            .iter()
            .find(|(l, name, _)| l == language && *name == file.name)
            .map(|(_, _, text)| text.clone());
        std::fs::write(&path, replaced.unwrap_or(file.contents))?;
        files.push(path);
    }
    Ok(Module { dir, files })
}

/// Renders, lints and builds; returns how to run the harness.
pub fn prepare(language: &str, spec: &Path, work: &Path) -> Result<Built> {
    prepare_with(language, spec, work, &TemplateSource::Embedded)
}

/// [`prepare`] with templates from anywhere (the mutation check uses altered copies).
pub fn prepare_with(
    language: &str,
    spec: &Path,
    work: &Path,
    templates: &TemplateSource,
) -> Result<Built> {
    let toolchain =
        toolchains::toolchain(language).ok_or_else(|| anyhow!("no toolchain for {language}"))?;
    if work.exists() {
        std::fs::remove_dir_all(work)?;
    }
    std::fs::create_dir_all(work)?;
    let module = render(language, spec, work, templates)?;
    toolchain
        .lint(&module, &work.join("lint"))
        .with_context(|| format!("{language}: lint of {}", module.dir.display()))?;
    toolchain
        .build(&module, &work.join("build"))
        .with_context(|| format!("{language}: building the harness"))
}

/// Runs a built harness on a case file and returns its standard output.
pub fn execute(built: &Built, cases: &Path) -> Result<String> {
    let (program, args) = built
        .argv
        .split_first()
        .ok_or_else(|| anyhow!("empty harness command"))?;
    let mut cmd = toolchains::command(program);
    cmd.args(args).arg(cases).current_dir(&built.cwd);
    toolchains::run(&mut cmd, "running the harness")
}

pub fn main(args: &[String]) -> Result<()> {
    let language = crate::flag(args, "--lang").ok_or_else(|| anyhow!("--lang is required"))?;
    let spec = crate::flag(args, "--spec").ok_or_else(|| anyhow!("--spec is required"))?;
    let cases = crate::flag(args, "--cases").ok_or_else(|| anyhow!("--cases is required"))?;
    let work = toolchains::root()
        .join("target/xtask/harness")
        .join(language);
    let built = prepare(language, Path::new(spec), &work)?;
    let cases = std::fs::canonicalize(cases)?;
    print!("{}", execute(&built, &cases)?);
    Ok(())
}
