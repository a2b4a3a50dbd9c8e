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
    // Every job targets every language of the registry, once; but golden/internal/, the
    // languages with the `visibility` option.
    let internal = |job: &config::Job| {
        job.targets
            .iter()
            .any(|t| t.out.parent().and_then(Path::file_name) == Some("internal".as_ref()))
    };
    for job in config.jobs.iter().filter(|job| !internal(job)) {
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
    // A self-contained target is its tables file plus the backend's runtime files and its
    // adapters' files; a target on a shared runtime is its tables file only, and each shared
    // runtime its entry file, runtime files and adapters' files.
    let copies = |language: &str, adapters: &[String], entry: bool| {
        let backend = retrygen::emit::backend(language).expect("registered");
        let adapters = retrygen::emit::resolve_adapters(backend, adapters)
            .expect("the config names known adapters");
        usize::from(entry && backend.runtime_entry_file().is_some())
            + backend.runtime_files().len()
            + adapters.iter().map(|a| a.files.len()).sum::<usize>()
    };
    let expected: usize = config
        .jobs
        .iter()
        .flat_map(|job| &job.targets)
        .map(|target| match target.runtime {
            Some(_) => 1,
            None => 1 + copies(&target.language, &target.adapters, false),
        })
        .sum::<usize>()
        + config
            .runtimes
            .iter()
            .map(|runtime| copies(&runtime.language, &runtime.adapters, true))
            .sum::<usize>();
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
                // `visibility = "internal"` rewrites the declarations (src/emit/visibility.rs).
                .filter(|f| !f.path.starts_with("golden/internal"))
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

/// golden/runtime/ holds one shared runtime per language, each with the language's adapter, and
/// every spec's target uses it, except the self-contained golden/internal/ and golden/faults/.
#[test]
fn goldens_share_one_runtime_per_language() {
    let config = config::load(Path::new("retrygen.toml")).expect("the project's config loads");
    let languages: Vec<&str> = config
        .runtimes
        .iter()
        .map(|r| r.language.as_str())
        .collect();
    let sharing: Vec<&str> = BACKENDS.iter().map(|b| b.name()).collect();
    assert_eq!(languages, sharing);
    for runtime in &config.runtimes {
        assert!(
            runtime
                .out
                .ends_with(format!("golden/runtime/{}", runtime.language)),
            "{}",
            runtime.out.display()
        );
        assert_eq!(runtime.adapters.len(), 1, "{}", runtime.language);
    }
    for job in &config.jobs {
        for target in &job.targets {
            let folder = target
                .out
                .parent()
                .and_then(Path::file_name)
                .expect("golden/<spec>/");
            let self_contained = folder == "internal" || folder == "faults";
            assert_eq!(
                target.runtime.is_none(),
                self_contained,
                "{}",
                target.out.display()
            );
            if let Some(index) = target.runtime {
                assert_eq!(config.runtimes[index].language, target.language);
            }
        }
    }
    // The thin tables reach the shared runtime.
    let plan = plan();
    let tables = |path: &str| {
        &plan
            .files
            .iter()
            .find(|f| f.path == Path::new(path))
            .unwrap_or_else(|| panic!("{path} is planned"))
            .contents
    };
    assert!(tables("golden/sandbox/python/__init__.py")
        .contains("\nfrom ...runtime.python._runtime import (\n"));
    assert!(tables("golden/sandbox/typescript/index.ts")
        .contains("from \"../../runtime/typescript/runtime.js\";"));
    assert!(tables("golden/sandbox/rust/mod.rs").contains("\npub use crate::retry_runtime::*;\n"));
    assert!(tables("golden/sandbox/go/operations.go")
        .contains("\nimport retrypolicy \"retrygen.example/golden/runtime/go\"\n"));
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
