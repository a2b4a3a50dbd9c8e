//! One toolchain per target language: how to lint a generated module with the language's own
//! tools and how to build the conformance harness against it. A missing tool is an error with
//! the command that installs it, never a skip.

mod csharp;
mod go;
mod kotlin;
mod python;
mod rust;
mod typescript;

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// How to run a built harness: the program and its leading arguments; the case file is appended.
#[derive(Debug, Clone)]
pub struct Built {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
}

pub trait Toolchain: Sync {
    /// Same name as the retrygen backend.
    fn language(&self) -> &'static str;
    /// Runs the language's formatter and linter (and a strict compile) over the generated module;
    /// any finding is an error.
    fn lint(&self, module: &Path, work: &Path) -> Result<()>;
    /// Builds `conformance/harness/<language>/` against `module` (rendered with default options)
    /// inside the empty folder `work`.
    fn build(&self, module: &Path, work: &Path) -> Result<Built>;
}

pub static TOOLCHAINS: [&dyn Toolchain; 6] = [
    &rust::Rust,
    &typescript::TypeScript,
    &python::Python,
    &go::Go,
    &kotlin::Kotlin,
    &csharp::CSharp,
];

pub fn toolchain(language: &str) -> Option<&'static dyn Toolchain> {
    TOOLCHAINS
        .iter()
        .copied()
        .find(|t| t.language() == language)
}

/// The repository root (xtask lives one level below it).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask is inside the workspace")
        .to_path_buf()
}

/// Where scripts/bootstrap-toolchains.sh installs what the machine lacks.
pub fn cache_bin_dirs() -> Vec<PathBuf> {
    let cache = root().join(".cache/toolchains");
    vec![cache.join("bin"), cache.join("node/node_modules/.bin")]
}

/// A command whose PATH also holds the bootstrapped toolchains.
pub fn command(program: &str) -> Command {
    let mut paths = cache_bin_dirs();
    if let Some(existing) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&existing));
    }
    let path = std::env::join_paths(paths).expect("paths without separators");
    let resolved = std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(program));
    let mut cmd = Command::new(resolved);
    cmd.env("PATH", path);
    cmd
}

/// Runs `cmd`, failing with its output when it exits non-zero or cannot start.
pub fn run(cmd: &mut Command, what: &str) -> Result<String> {
    let output = cmd.output().with_context(|| {
        format!("{what}: cannot start {:?}; run `bash scripts/bootstrap-toolchains.sh` to install the toolchains", cmd.get_program())
    })?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        bail!(
            "{what} failed ({}):\n{}{}",
            output.status,
            stdout,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(stdout)
}

/// Copies the harness sources of `language` into `work`.
pub fn copy_harness(language: &str, work: &Path) -> Result<()> {
    let src = root().join("conformance/harness").join(language);
    copy_dir(&src, work).with_context(|| format!("copying {}", src.display()))
}

fn copy_dir(src: &Path, dst: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dst)?;
    for entry in std::fs::read_dir(src)? {
        let entry = entry?;
        let to = dst.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &to)?;
        } else {
            std::fs::copy(entry.path(), to)?;
        }
    }
    Ok(())
}
