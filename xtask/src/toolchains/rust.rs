//! Rust: the module is a folder (`mod.rs`, the tables, and `runtime.rs`). `rustfmt --check` must
//! pass, and the module, included as a public module of a throwaway library crate, must pass
//! `cargo clippy -D warnings` and `cargo doc -D warnings` with `missing_docs` denied. The harness
//! is one file compiled with `rustc` (no cargo), beside a copy of the module folder.
//!
//! The runtime (`runtime/rust/`, a member of the workspace) is checked as its own crate:
//! rustfmt, clippy pedantic with `-D warnings` (every `allow` explained by a comment), rustdoc,
//! and its unit, allocation and doc tests.
//!
//! The reqwest adapter (`runtime/rust/reqwest_adapter.rs`) needs reqwest and tokio, which the
//! workspace must not build, so it lives in a cargo project of its own,
//! `conformance/faults/harness/rust/` (its own `[workspace]` and lock file): the fault-matrix
//! runner and the adapter's unit tests, compiled against the module rendered from
//! `conformance/faults/spec.yaml` with the adapter. Both [`Toolchain::fault_runner`] and
//! `runtime_tests` build a copy of it, offline and locked (scripts/bootstrap.d/rust.sh fetched
//! the crates), in one persistent target folder, so reqwest and tokio compile once per machine.

use super::{command, copy_harness, lossy, root, run, shell, Built, FaultRun, Module, Toolchain};
use anyhow::{anyhow, bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Rust;

const LINT_MANIFEST: &str = r#"[package]
name = "retry_policy_lint"
version = "0.0.0"
edition = "2021"
publish = false

[lib]
path = "src/lib.rs"

# Not a member of the retrygen workspace this folder sits in.
[workspace]
"#;

const LINT_LIB: &str = "//! Includes the generated module the way an SDK crate does.\n\n#![deny(missing_docs)]\n\npub mod retry_policy;\n";

/// `cargo` working in `work` only: its own target folder, no network, no inherited flags.
pub(crate) fn cargo(work: &Path) -> Command {
    let mut cmd = command("cargo");
    cmd.current_dir(work)
        .env("CARGO_TARGET_DIR", work.join("target"))
        .env_remove("RUSTFLAGS")
        .env_remove("RUSTDOCFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS");
    cmd
}

impl Toolchain for Rust {
    fn language(&self) -> &'static str {
        "rust"
    }

    fn lint(&self, module: &Module, work: &Path) -> Result<()> {
        // rustfmt follows `mod runtime;` from the tables into the runtime.
        run(
            command("rustfmt")
                .args(["--check", "--edition", "2021"])
                .arg(module.tables()),
            "rustfmt --check",
        )?;
        let src = work.join("src");
        std::fs::create_dir_all(&src)?;
        std::fs::write(work.join("Cargo.toml"), LINT_MANIFEST)?;
        std::fs::write(src.join("lib.rs"), LINT_LIB)?;
        copy_module(module, &src.join("retry_policy"))?;
        run(
            cargo(work).args(["clippy", "--offline", "--quiet", "--", "-D", "warnings"]),
            "cargo clippy",
        )?;
        run(
            cargo(work)
                .args(["doc", "--offline", "--quiet", "--no-deps"])
                .env("RUSTDOCFLAGS", "-D warnings"),
            "cargo doc",
        )?;
        Ok(())
    }

    fn display_name(&self) -> &'static str {
        "Rust"
    }

    fn versions(&self) -> String {
        shell("rustc", &["--version"])
    }

    fn bench_program(&self, module: &Module, work: &Path, shared: &Path) -> Result<Vec<String>> {
        // The name of the spec's folder (a slug) makes the package name unique.
        let spec_dir = work
            .parent()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name: String = format!("retrygen-bench-{spec_dir}")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        build_rust(module, work, &shared.join("cargo-target"), &name)
    }

    fn runtime_tests(&self, work: &Path) -> Result<()> {
        // The crate's manifest sits in crate/, beside (not above) runtime.rs: a folder holding a
        // Cargo.toml is left out of retrygen's own package, which embeds runtime.rs.
        let runtime = root().join("runtime/rust/crate");
        check_allows(&root().join("runtime/rust/runtime.rs"))?;
        // rustfmt follows the `mod`s of lib.rs: runtime.rs and the tests.
        run(
            command("rustfmt")
                .args(["--check", "--edition", "2021"])
                .arg(runtime.join("src/lib.rs")),
            "rustfmt --check (runtime)",
        )?;
        let manifest = runtime.join("Cargo.toml");
        let cargo = |args: &[&str]| {
            let mut cmd = cargo(work);
            cmd.current_dir(&runtime)
                .args(args)
                .arg("--manifest-path")
                .arg(&manifest)
                .args(["--offline", "--quiet"]);
            cmd
        };
        // Pedantic comes from the crate's `[lints]`; `-D warnings` makes every finding an error.
        run(
            cargo(&["clippy", "--all-targets"]).args(["--", "-D", "warnings"]),
            "cargo clippy (runtime, pedantic)",
        )?;
        run(
            cargo(&["doc", "--no-deps"]).env("RUSTDOCFLAGS", "-D warnings"),
            "cargo doc (runtime)",
        )?;
        run(&mut cargo(&["test"]), "cargo test (runtime)")?;
        adapter_tests(work)?;
        readme_snippet(work)?;
        example_sdk(work)
    }

    fn fault_runner(&self, module: &Module, work: &Path) -> Result<Vec<FaultRun>> {
        let project = work.join("runner");
        adapter_project(module, &project)?;
        let _guard = ADAPTER_TARGET.lock().unwrap_or_else(|e| e.into_inner());
        run(
            &mut adapter_cargo(&project, &["build", "--release", "--bin", RUNNER]),
            "cargo build --release --locked --offline (Rust fault runner; `bash scripts/bootstrap-toolchains.sh` fetches its crates)",
        )?;
        // Out of the shared target folder, which the next build overwrites.
        let binary = work.join(RUNNER);
        std::fs::copy(adapter_target().join("release").join(RUNNER), &binary)
            .context("copying the Rust fault runner")?;
        Ok(vec![FaultRun {
            protocols: &["http1", "h2c", "http1-tls", "h2"],
            name: "rust".into(),
            built: Built {
                argv: vec![lossy(&binary)],
                cwd: work.to_path_buf(),
            },
        }])
    }

    fn build(&self, module: &Module, work: &Path) -> Result<Built> {
        copy_harness("rust", work)?;
        copy_module(module, &work.join("retry_policy"))?;
        let binary = work.join("harness");
        run(
            command("rustc")
                .current_dir(work)
                .args(["--edition", "2021", "-O", "--crate-name", "harness", "-o"])
                .arg(&binary)
                .arg("main.rs"),
            "rustc (harness)",
        )?;
        Ok(Built {
            argv: vec![binary.to_string_lossy().into_owned()],
            cwd: work.to_path_buf(),
        })
    }
}

/// Copies the files of the module folder into `to` (created), which becomes `mod retry_policy`.
fn copy_module(module: &Module, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for file in &module.files {
        let name = file.file_name().context("module file name")?;
        std::fs::copy(file, to.join(name))
            .with_context(|| format!("copying {}", file.display()))?;
    }
    Ok(())
}

// The reqwest adapter's project (conformance/faults/harness/rust/).

/// The runner's binary (and package) name.
const RUNNER: &str = "retrygen-fault-runner";

/// One adapter build at a time in this process: they share the target folder and the binary.
static ADAPTER_TARGET: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The adapter project's target folder, kept between runs like the bootstrapped toolchains.
fn adapter_target() -> PathBuf {
    root().join(".cache/toolchains/rust-adapter-target")
}

/// A copy of `conformance/faults/harness/rust/` in `to` with `module` as `src/retry_policy/`.
fn adapter_project(module: &Module, to: &Path) -> Result<()> {
    let harness = root().join("conformance/faults/harness/rust");
    std::fs::create_dir_all(to.join("src"))?;
    for name in ["Cargo.toml", "Cargo.lock", "clippy.toml"] {
        std::fs::copy(harness.join(name), to.join(name))
            .with_context(|| format!("copying {}", harness.join(name).display()))?;
    }
    for entry in std::fs::read_dir(harness.join("src"))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "rs") {
            std::fs::copy(
                &path,
                to.join("src").join(path.file_name().context("file name")?),
            )?;
        }
    }
    copy_module(module, &to.join("src/retry_policy"))
}

/// `cargo ARGS --locked --offline` in the adapter project `project`, in the shared target folder.
fn adapter_cargo(project: &Path, args: &[&str]) -> Command {
    let mut cmd = command("cargo");
    cmd.current_dir(project)
        .env("CARGO_TARGET_DIR", adapter_target())
        .env_remove("RUSTFLAGS")
        .env_remove("RUSTDOCFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .args(args)
        .args(["--locked", "--offline", "--quiet"]);
    cmd
}

/// The module of `conformance/faults/spec.yaml` with the reqwest adapter, rendered into `dir`.
fn render_adapter_module(dir: &Path) -> Result<Module> {
    use retrygen::emit;
    let spec = root().join("conformance/faults/spec.yaml");
    let backend = emit::backend("rust").ok_or_else(|| anyhow!("no rust backend"))?;
    let (api, _) = retrygen::load_api(&spec, &Default::default())
        .map_err(|d| anyhow!("{}: {d}", spec.display()))?;
    let options = emit::resolve_options(backend, &Default::default())?;
    let adapters = emit::resolve_adapters(backend, &["reqwest".to_string()])?;
    let rendered = emit::render(
        &api,
        backend,
        &options,
        &adapters,
        &emit::TemplateSource::Embedded,
    )?;
    std::fs::create_dir_all(dir)?;
    let mut files = Vec::new();
    for file in rendered {
        let path = dir.join(&file.name);
        std::fs::write(&path, file.contents)?;
        files.push(path);
    }
    Ok(Module {
        dir: dir.to_path_buf(),
        files,
    })
}

/// The adapter checked like the runtime, in a copy of its project: rustfmt over the adapter,
/// the runner and the unit tests, clippy pedantic with `-D warnings` (from the project's
/// `[lints]`), clippy's `incompatible_msrv` against Rust 1.80 over the module, rustdoc with
/// `-D warnings`, and the unit tests against local servers.
fn adapter_tests(work: &Path) -> Result<()> {
    check_allows(&root().join("runtime/rust/reqwest_adapter.rs"))?;
    let module = render_adapter_module(&work.join("adapter-module"))?;
    let project = work.join("adapter");
    adapter_project(&module, &project)?;
    // rustfmt follows the `mod`s of lib.rs into the module (with the adapter) and the tests.
    run(
        command("rustfmt")
            .args(["--check", "--edition", "2021"])
            .arg(project.join("src/lib.rs"))
            .arg(project.join("src/main.rs")),
        "rustfmt --check (reqwest adapter and its project; the files are copies of runtime/rust/reqwest_adapter.rs and conformance/faults/harness/rust/src/)",
    )?;
    let _guard = ADAPTER_TARGET.lock().unwrap_or_else(|e| e.into_inner());
    run(
        adapter_cargo(&project, &["clippy", "--all-targets"]).args(["--", "-D", "warnings"]),
        "cargo clippy --locked --offline (reqwest adapter, pedantic; `bash scripts/bootstrap-toolchains.sh` fetches its crates)",
    )?;
    // The module (tables, runtime, adapter) supports Rust 1.80, older than what the project's
    // locked crates need (its `rust-version`): clippy checks every standard-library item the
    // library uses against 1.80 (`incompatible_msrv`; no 1.80 toolchain is installed here).
    let msrv = work.join("clippy-msrv");
    std::fs::create_dir_all(&msrv)?;
    std::fs::write(
        msrv.join("clippy.toml"),
        "doc-valid-idents = [\"OpenAPI\", \"..\"]\nmsrv = \"1.80\"\n",
    )?;
    run(
        adapter_cargo(&project, &["clippy", "--lib"])
            .env("CLIPPY_CONF_DIR", &msrv)
            .args(["--", "-D", "warnings", "-D", "clippy::incompatible_msrv"]),
        "cargo clippy (the module against Rust 1.80, its declared MSRV: clippy::incompatible_msrv)",
    )?;
    run(
        adapter_cargo(&project, &["doc", "--no-deps", "--lib"]).env("RUSTDOCFLAGS", "-D warnings"),
        "cargo doc (reqwest adapter)",
    )?;
    run(
        &mut adapter_cargo(&project, &["test"]),
        "cargo test (reqwest adapter)",
    )?;
    Ok(())
}

// The README's installation and examples/rust/, checked by `runtime-tests`.

/// The first ```toml and ```rust blocks of the "HTTP client adapter (reqwest)" section of
/// runtime/rust/README.md, compiled as written: a crate whose `[dependencies]` are the toml
/// block's and whose `src/sdk.rs` is the rust block, beside the module rendered from the fault
/// matrix's spec with the adapter, offline, starting from examples/rust/Cargo.lock (the same
/// crates). A dependency or a feature the README forgets fails this build.
fn readme_snippet(work: &Path) -> Result<()> {
    let readme = std::fs::read_to_string(root().join("runtime/rust/README.md"))?;
    let section = readme
        .split_once("## HTTP client adapter (reqwest)")
        .context("runtime/rust/README.md has no \"HTTP client adapter (reqwest)\" section")?
        .1;
    let block = |fence: &str| -> Result<String> {
        Ok(section
            .split_once(fence)
            .and_then(|(_, rest)| rest.split_once("```"))
            .with_context(|| format!("no {fence} block in the README's adapter section"))?
            .0
            .to_string())
    };
    let (toml, rust) = (block("```toml\n")?, block("```rust\n")?);
    let project = work.join("readme");
    std::fs::create_dir_all(project.join("src"))?;
    std::fs::write(
        project.join("Cargo.toml"),
        format!(
            "[package]\nname = \"readme-snippet\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n{toml}\n[workspace]\n"
        ),
    )?;
    std::fs::copy(
        root().join("examples/rust/Cargo.lock"),
        project.join("Cargo.lock"),
    )?;
    std::fs::write(
        project.join("src/lib.rs"),
        "//! The runtime README's installation, as an SDK crate holds it.\n\npub mod retry_policy;\npub mod sdk;\n",
    )?;
    std::fs::write(project.join("src/sdk.rs"), &rust)?;
    let module = render_adapter_module(&work.join("readme-module"))?;
    copy_module(&module, &project.join("src/retry_policy"))?;
    run(
        command("rustfmt")
            .args(["--check", "--edition", "2021"])
            .arg(project.join("src/sdk.rs")),
        "rustfmt --check (the README's Rust snippet)",
    )?;
    let _guard = ADAPTER_TARGET.lock().unwrap_or_else(|e| e.into_inner());
    let mut build = command("cargo");
    build
        .current_dir(&project)
        .env("CARGO_TARGET_DIR", adapter_target())
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        // Not --locked: the lock file is examples/rust's, whose package name differs.
        .args(["build", "--offline", "--quiet"]);
    run(
        &mut build,
        "cargo build (the README's Cargo.toml and Rust snippet; `bash scripts/bootstrap-toolchains.sh` fetches examples/rust's crates)",
    )?;
    println!("runtime rust: the README's installation (Cargo.toml and snippet) compiles");
    Ok(())
}

/// The scenarios examples/rust/ runs through its SDK against the fault server: each is also
/// checked here by the server's count.
const EXAMPLE_SCENARIOS: &[&str] = &[
    "get-503-503-200",
    "create-503-not-replayable",
    "create-reset-arrives-once",
    "kill-reset-arrives-twice",
    "snapshot-minted-key-reset",
    "get-body-cut-read-in-loop-retried",
    "get-override-max-retries-0-once",
    "get-attempt-header-counts-earlier-attempts",
];

/// examples/rust/ in a scratch copy, with the module rendered from the fault matrix's spec as
/// its `src/retry_policy/`: rustfmt, clippy pedantic, then its tests against a real fault server
/// (`--locked --offline`: scripts/bootstrap.d/rust.sh fetched the crates of its lock file); the
/// server's counts must be the scenarios'.
fn example_sdk(work: &Path) -> Result<()> {
    let source = root().join("examples/rust");
    let project = work.join("example");
    std::fs::create_dir_all(project.join("src"))?;
    std::fs::create_dir_all(project.join("tests"))?;
    for name in [
        "Cargo.toml",
        "Cargo.lock",
        "clippy.toml",
        "src/lib.rs",
        "tests/scenarios.rs",
    ] {
        std::fs::copy(source.join(name), project.join(name))
            .with_context(|| format!("copying examples/rust/{name}"))?;
    }
    let module = render_adapter_module(&work.join("example-module"))?;
    copy_module(&module, &project.join("src/retry_policy"))?;
    run(
        command("rustfmt")
            .args(["--check", "--edition", "2021"])
            .arg(project.join("src/lib.rs"))
            .arg(project.join("tests/scenarios.rs")),
        "rustfmt --check (examples/rust)",
    )?;
    let _guard = ADAPTER_TARGET.lock().unwrap_or_else(|e| e.into_inner());
    run(
        adapter_cargo(&project, &["clippy", "--all-targets"]).args(["--", "-D", "warnings"]),
        "cargo clippy --locked --offline (examples/rust, pedantic)",
    )?;
    let server = crate::faults::start_server()?;
    let run_name = "rust-example";
    let mut test = adapter_cargo(&project, &["test", "--test", "scenarios"]);
    test.envs(server.env("http1"))
        .env("RETRYGEN_FAULT_RUN", run_name)
        .env("RETRYGEN_EXAMPLE_SCENARIOS", EXAMPLE_SCENARIOS.join(","));
    let report = run(
        &mut test,
        "cargo test (examples/rust against the fault server)",
    )?;
    let scenarios: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(crate::faults::scenario_file())?)?;
    let mut problems = Vec::new();
    for id in EXAMPLE_SCENARIOS {
        let scenario = scenarios["scenarios"]
            .as_array()
            .and_then(|all| all.iter().find(|s| s["id"] == *id))
            .with_context(|| format!("scenario {id} is not in scenarios.json"))?;
        let expect = &scenario["expect"];
        let arrivals = server.arrivals(run_name, id);
        if Some(arrivals.len() as u64) != expect["arrivals"].as_u64() {
            problems.push(format!(
                "{id}: {} arrivals, want {}",
                arrivals.len(),
                expect["arrivals"]
            ));
        }
        if expect["key"] == "minted" {
            let first = arrivals.first().map(|a| a.keys.clone()).unwrap_or_default();
            if first.len() != 1 || arrivals.iter().any(|a| a.keys != first) {
                problems.push(format!(
                    "{id}: keys {:?}, want one minted key on every arrival",
                    arrivals.iter().map(|a| &a.keys).collect::<Vec<_>>()
                ));
            }
        }
        if let (Some(name), Some(want)) = (
            scenario["attempt_header"].as_str(),
            expect["attempt_header_values"].as_array(),
        ) {
            let name = name.to_ascii_lowercase();
            let got: Vec<serde_json::Value> = arrivals
                .iter()
                .map(|a| {
                    a.headers
                        .iter()
                        .find(|(n, _)| *n == name)
                        .map_or(serde_json::Value::Null, |(_, v)| v.clone().into())
                })
                .collect();
            if &got != want {
                problems.push(format!("{id}: attempt header {got:?}, want {want:?}"));
            }
        }
    }
    if !problems.is_empty() {
        bail!(
            "examples/rust: the server's counts differ:\n  {}\n{report}",
            problems.join("\n  ")
        );
    }
    println!(
        "runtime rust: examples/rust (a reqwest + reqwest-middleware SDK, the adapter in 3 lines, resend_count below it): {} scenarios through the SDK agree with the fault server",
        EXAMPLE_SCENARIOS.len()
    );
    Ok(())
}

/// Every lint the runtime allows is allowed on purpose: each `#[allow(...)]` follows a comment
/// that gives the reason (the module supports Rust 1.80, older than `reason = "..."`).
fn check_allows(runtime: &Path) -> Result<()> {
    let text = std::fs::read_to_string(runtime).with_context(|| runtime.display().to_string())?;
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        if code.starts_with("#[allow(") || code.starts_with("#![allow(") {
            let explained = i > 0 && lines[i - 1].trim_start().starts_with("// ");
            if !explained {
                bail!(
                    "{}:{}: an `allow` without a comment giving its reason on the line before",
                    runtime.display(),
                    i + 1
                );
            }
        }
    }
    Ok(())
}

// The bench program (bench/rust/), built against a rendered module.

/// The cargo project of the Rust program. Every spec's build shares one target folder, so the
/// `regex` crate is compiled once; each gets its own package name, so that cargo never takes one
/// spec's program for another's (a shared name gives the same unit hash, and cargo's mtime check
/// then sees sources copied while another build ran as already built).
fn rust_manifest(name: &str) -> String {
    format!(
        r#"[package]
name = "{name}"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
regex = "1"

[profile.release]
codegen-units = 1

# Not a member of the retrygen workspace this folder sits in.
[workspace]
"#
    )
}

fn build_rust(
    module: &Module,
    work: &Path,
    shared_target: &Path,
    name: &str,
) -> Result<Vec<String>> {
    let src = work.join("src");
    let folder = src.join("retry_policy");
    std::fs::create_dir_all(&folder)?;
    std::fs::write(work.join("Cargo.toml"), rust_manifest(name))?;
    std::fs::copy(root().join("bench/rust/main.rs"), src.join("main.rs"))?;
    // The module folder: the tables (`mod.rs`) and the runtime.
    for file in &module.files {
        std::fs::copy(
            file,
            folder.join(file.file_name().context("module file name")?),
        )?;
    }
    let cargo = |offline: bool| {
        let mut cmd = command("cargo");
        cmd.current_dir(work)
            .env("CARGO_TARGET_DIR", shared_target)
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("CARGO_BUILD_RUSTFLAGS")
            .args(["build", "--release", "--quiet"]);
        if offline {
            cmd.arg("--offline");
        }
        cmd
    };
    // One Rust build at a time: they share the target folder and the binary's name.
    static SHARED_TARGET: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = SHARED_TARGET.lock().unwrap_or_else(|e| e.into_inner());
    // The regex crate is normally in the local registry already (xtask depends on it).
    if run(&mut cargo(true), "cargo build (Rust bench, offline)").is_err() {
        run(&mut cargo(false), "cargo build (Rust bench)")?;
    }
    let binary = work.join("bench");
    std::fs::copy(shared_target.join("release").join(name), &binary)?;
    Ok(vec![lossy(&binary)])
}
