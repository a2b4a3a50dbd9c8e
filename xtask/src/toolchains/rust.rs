//! Rust: `rustfmt --check` must pass, and the module, included as a public module of a
//! throwaway library crate, must pass `cargo clippy -D warnings` and `cargo doc -D warnings`
//! with `missing_docs` denied. The harness is one file compiled with `rustc` (no cargo), beside
//! a copy of the module.

use super::{command, copy_harness, run, Built, Module, Toolchain};
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
        let module = module.tables();
        run(
            command("rustfmt")
                .args(["--check", "--edition", "2021"])
                .arg(module),
            "rustfmt --check",
        )?;
        let src = work.join("src");
        std::fs::create_dir_all(&src)?;
        std::fs::write(work.join("Cargo.toml"), LINT_MANIFEST)?;
        std::fs::write(src.join("lib.rs"), LINT_LIB)?;
        std::fs::copy(module, src.join("retry_policy.rs"))
            .with_context(|| format!("copying {}", module.display()))?;
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

    fn runtime_tests(&self, _work: &Path) -> Result<()> {
        bail!(
            "{}: the runtime is still template text; runtime/{} does not exist yet",
            self.language(),
            self.language()
        )
    }

    fn build(&self, module: &Module, work: &Path) -> Result<Built> {
        let module = module.tables();
        copy_harness("rust", work)?;
        std::fs::copy(module, work.join("retry_policy.rs"))
            .with_context(|| format!("copying {}", module.display()))?;
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
