//! The committed files under golden/ are exactly what retrygen renders for the specs in specs/
//! (the project's retrygen.toml): every spec in every language of the backend registry, each
//! target a thin tables file plus the verbatim runtime. Fails with a unified diff;
//! `cargo xtask bless` (or `RETRYGEN_BLESS=1 cargo test --test golden`) rewrites them.

use retrygen::{config, generate, write, BACKENDS};
use std::collections::BTreeSet;
use std::path::Path;

fn plan() -> retrygen::Plan {
    let config = config::load(Path::new("retrygen.toml")).expect("the project's config loads");
    generate(&config).unwrap_or_else(|e| panic!("retrygen failed:\n{e}"))
}

#[test]
fn goldens_match_rendered_output() {
    let config = config::load(Path::new("retrygen.toml")).expect("the project's config loads");
    let plan = plan();
    // Every job targets every language of the registry, once.
    for job in &config.jobs {
        let languages: BTreeSet<&str> = job.targets.iter().map(|t| t.language.as_str()).collect();
        let registry: BTreeSet<&str> = BACKENDS.iter().map(|b| b.name()).collect();
        assert_eq!(
            languages,
            registry,
            "{}: one target per language",
            job.spec.display()
        );
        assert_eq!(job.targets.len(), registry.len(), "{}", job.spec.display());
    }
    // Each target is its tables file plus the backend's runtime files and its adapters' files.
    let expected: usize = config
        .jobs
        .iter()
        .flat_map(|job| &job.targets)
        .map(|target| {
            let backend = retrygen::emit::backend(&target.language).expect("registered");
            let adapters = retrygen::emit::resolve_adapters(backend, &target.adapters)
                .expect("the config names known adapters");
            1 + backend.runtime_files().len()
                + adapters.iter().map(|a| a.files.len()).sum::<usize>()
        })
        .sum();
    assert_eq!(plan.files.len(), expected);
    if std::env::var_os("RETRYGEN_BLESS").is_some() {
        retrygen::write(&plan).expect("writing goldens");
        return;
    }
    let diffs: Vec<String> = plan.files.iter().filter_map(write::diff).collect();
    let orphans: Vec<String> = plan.orphans.iter().map(write::orphan_diff).collect();
    assert!(
        diffs.is_empty() && orphans.is_empty(),
        "{} golden file(s) are stale, {} orphaned; run `cargo xtask bless`:\n{}{}",
        diffs.len(),
        orphans.len(),
        diffs.join("\n"),
        orphans.join("\n")
    );
}

/// The runtime and adapter files of every golden target are byte for byte the sources of the
/// repository (default options rename no package), and every adapter has a golden copy.
#[test]
fn goldens_hold_the_verbatim_runtime() {
    let plan = plan();
    for backend in BACKENDS {
        let adapter_files = backend.adapters().iter().flat_map(|a| a.files.iter());
        for runtime in backend.runtime_files().iter().chain(adapter_files) {
            let copies: Vec<_> = plan
                .files
                .iter()
                .filter(|f| f.path.file_name().is_some_and(|n| n == runtime.name))
                .filter(|f| f.path.parent().is_some_and(|p| p.ends_with(backend.name())))
                .collect();
            assert!(
                !copies.is_empty(),
                "{}: no copy of {}",
                backend.name(),
                runtime.name
            );
            for copy in copies {
                assert_eq!(
                    copy.contents, runtime.source,
                    "{} is not verbatim",
                    copy.display
                );
            }
        }
    }
}

#[test]
fn rendering_is_deterministic() {
    let (first, second) = (plan(), plan());
    for (a, b) in first.files.iter().zip(&second.files) {
        assert_eq!(
            a.contents, b.contents,
            "{} differs between two runs",
            a.display
        );
        assert!(
            !a.contents.contains("/work/") && !a.contents.contains(env!("CARGO_MANIFEST_DIR")),
            "{} holds an absolute path",
            a.display
        );
    }
}
