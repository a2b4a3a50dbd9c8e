//! Rust: the module is a folder (`mod.rs`, the tables, and `runtime.rs`). `rustfmt --check` must
//! pass, and the module, included as a public module of a throwaway library crate, must pass
//! `cargo clippy -D warnings` and `cargo doc -D warnings` with `missing_docs` denied. The harness
//! is one file compiled with `rustc` (no cargo), beside a copy of the module folder.
//!
//! The runtime (`runtime/rust/`, a member of the workspace) is checked as its own crate:
//! rustfmt, clippy pedantic with `-D warnings` (every `allow` explained by a comment), rustdoc,
//! and its unit, allocation and doc tests.

use super::{command, copy_harness, lossy, root, run, shell, Built, Module, Toolchain};
use anyhow::{bail, Context, Result};
use std::path::Path;
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
fn cargo(work: &Path) -> Command {
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
        let runtime = root().join("runtime/rust");
        check_allows(&runtime.join("runtime.rs"))?;
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
        Ok(())
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
