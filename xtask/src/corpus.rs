//! `cargo xtask corpus [DIR] [--write-docs]`: reads, classifies and renders (all six languages, in memory) every
//! OpenAPI document in DIR (default ../shared/corpus), prints a table and, with --write-docs,
//! writes it to docs/corpus.md. Any document that fails is an error.

use crate::toolchains::root;
use anyhow::{bail, Result};
use retrygen::emit::{self, TemplateSource};
use retrygen::model::{ModelOptions, ReplayClass};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The documents of a corpus folder: every .json/.yaml/.yml file at the top level, and for a
/// sub-folder (a multi-file spec) the root named in its PROVENANCE.tsv or README, else the
/// single file under `specification/`.
pub fn documents(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut docs = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for path in entries {
        let is_spec = |p: &Path| {
            p.extension()
                .is_some_and(|e| e == "json" || e == "yaml" || e == "yml")
        };
        if path.is_file() && is_spec(&path) {
            docs.push(path);
        } else if path.is_dir() {
            // A multi-file document: its root is the spec file that no other file of it refers
            // to; by convention the corpus keeps it under specification/ with a name ending
            // in .v2.yaml or as the only top-level spec of the folder.
            let mut candidates: Vec<PathBuf> = walk(&path)
                .into_iter()
                .filter(|p| is_spec(p))
                .filter(|p| {
                    std::fs::read_to_string(p)
                        .map(|t| {
                            t.starts_with("openapi:")
                                || t.contains("\nopenapi:")
                                || t.contains("\"openapi\"")
                                || t.contains("\nswagger:")
                        })
                        .unwrap_or(false)
                })
                .collect();
            candidates.sort();
            docs.extend(candidates);
        }
    }
    Ok(docs)
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

pub fn main(args: &[String]) -> Result<()> {
    let write_docs = args.iter().any(|a| a == "--write-docs");
    let dir = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .map_or_else(|| root().join("../shared/corpus"), PathBuf::from);
    if !dir.is_dir() {
        bail!("corpus folder {} does not exist", dir.display());
    }
    let mut table = String::from("| document | version | operations | idempotent | keyed | non_replayable | no_retry | base path | read+classify ms | render 6 languages ms |\n|---|---|---:|---:|---:|---:|---:|---|---:|---:|\n");
    let mut failures = 0;
    for doc in documents(&dir)? {
        let shown = doc
            .strip_prefix(&dir)
            .unwrap_or(&doc)
            .to_string_lossy()
            .replace('\\', "/");
        let started = Instant::now();
        let loaded = retrygen::load_api(&doc, &ModelOptions::default());
        let read_ms = started.elapsed().as_secs_f64() * 1000.0;
        let api = match loaded {
            Ok((api, _)) => api,
            Err(d) => {
                failures += 1;
                println!("FAIL {shown}:\n{d}");
                continue;
            }
        };
        let started = Instant::now();
        for backend in emit::BACKENDS {
            let options = emit::resolve_options(backend, &Default::default())?;
            if let Err(e) = emit::render(&api, backend, &options, &[], &TemplateSource::Embedded) {
                failures += 1;
                println!("FAIL {shown} {}: {e}", backend.name());
            }
        }
        let render_ms = started.elapsed().as_secs_f64() * 1000.0;
        let count = |c: ReplayClass| api.operations.iter().filter(|o| o.class == c).count();
        let row = format!(
            "| {shown} | {} | {} | {} | {} | {} | {} | `{}` | {read_ms:.1} | {render_ms:.1} |",
            api.version.as_str(),
            api.operations.len(),
            count(ReplayClass::Idempotent),
            count(ReplayClass::Keyed),
            count(ReplayClass::NonReplayable),
            count(ReplayClass::NoRetry),
            if api.base_path.is_empty() {
                "/"
            } else {
                &api.base_path
            },
        );
        println!("{row}");
        writeln!(table, "{row}").unwrap();
    }
    if failures > 0 {
        bail!("corpus: {failures} failure(s)");
    }
    let text = format!(
        "# Corpus run\n\nEvery public document in `../shared/corpus` read, classified and rendered for all six languages\n(in memory), by `cargo xtask corpus` (debug or release build as invoked; times are one run on the\nmachine described in docs/benchmarks.md). None of these documents carries `x-idempotent`: classes\ncome from method defaults, idempotency-key headers and streaming responses.\n\n{table}"
    );
    if write_docs {
        std::fs::write(root().join("docs/corpus.md"), text)?;
        println!("wrote docs/corpus.md");
    }
    Ok(())
}
