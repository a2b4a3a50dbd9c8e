//! Python: `black --check`, `ruff check` and `mypy --strict` (all against Python 3.9), then an
//! import with warnings as errors; the harness is a plain script run by `python3`.
//!
//! The tools live in `.cache/toolchains/python`, installed there by
//! scripts/bootstrap-toolchains.sh with `pip install --target`; versions are pinned so that the
//! formatting and the findings never drift between machines. mypy stays on 1.x: 2.x no longer
//! checks code against Python 3.9.

use super::{command, copy_harness, root, run, Built, Module, Toolchain};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Python;

pub const BLACK_VERSION: &str = "26.10.1";
pub const RUFF_VERSION: &str = "0.17.6";
pub const MYPY_VERSION: &str = "1.20.2";

/// Checked with one configuration, written next to the module so that no configuration of the
/// surrounding checkout applies. E501 is left to black, as black's documentation recommends: a
/// generated table may hold a path longer than a line.
const LINT_CONFIG: &str = r#"[tool.black]
target-version = ["py39"]

[tool.ruff]
target-version = "py39"

[tool.ruff.lint]
select = ["E", "W", "F", "I", "B", "N", "A", "C4", "SIM", "RUF", "ANN", "PIE", "RET", "ARG", "FBT", "PERF", "PYI", "D"]
ignore = ["E501", "D203", "D213"]

[tool.mypy]
python_version = "3.9"
strict = true
warn_unreachable = true
"#;

fn tools_dir() -> PathBuf {
    root().join(".cache/toolchains/python")
}

fn install_hint() -> String {
    format!(
        "run `bash scripts/bootstrap-toolchains.sh`, or `python3 -m pip install --target .cache/toolchains/python \
         black=={BLACK_VERSION} ruff=={RUFF_VERSION} mypy=={MYPY_VERSION}`"
    )
}

/// `python3 -m <tool>` with the pinned tools importable.
fn tool(module: &str) -> Command {
    let mut cmd = command("python3");
    cmd.env("PYTHONPATH", tools_dir())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg("-m")
        .arg(module);
    cmd
}

fn require(module: &str, version: &str) -> Result<()> {
    let output = tool(module)
        .arg("--version")
        .output()
        .with_context(|| format!("python3 is not installed (needed for {module})"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!(
            "{module} {version} is not installed: {}; {}",
            String::from_utf8_lossy(&output.stderr).trim(),
            install_hint()
        );
    }
    // "black, 26.10.1 (compiled: yes)", "ruff 0.17.6", "mypy 1.20.2 (compiled: yes)"
    if !text
        .split(|c: char| c.is_whitespace() || c == ',')
        .any(|word| word == version)
    {
        bail!(
            "{module} {version} is required, found {:?}; {}",
            text.trim(),
            install_hint()
        );
    }
    Ok(())
}

impl Toolchain for Python {
    fn language(&self) -> &'static str {
        "python"
    }

    fn lint(&self, module: &Module, work: &Path) -> Result<()> {
        let module = module.tables();
        require("black", BLACK_VERSION)?;
        require("ruff", RUFF_VERSION)?;
        require("mypy", MYPY_VERSION)?;
        std::fs::create_dir_all(work)?;
        let name = module
            .file_name()
            .context("module without a file name")?
            .to_string_lossy()
            .into_owned();
        let stem = name
            .strip_suffix(".py")
            .context("a Python module ends in .py")?
            .to_string();
        std::fs::copy(module, work.join(&name))?;
        let config = work.join("pyproject.toml");
        std::fs::write(&config, LINT_CONFIG)?;

        run(
            tool("black")
                .args(["--check", "--diff", "--config"])
                .arg(&config)
                .arg(&name)
                .current_dir(work),
            "black --check",
        )?;
        run(
            tool("ruff")
                .args(["check", "--no-cache", "--config"])
                .arg(&config)
                .arg(&name)
                .current_dir(work),
            "ruff check",
        )?;
        run(
            tool("mypy")
                .args(["--strict", "--no-incremental", "--config-file"])
                .arg(&config)
                .arg(&name)
                .current_dir(work),
            "mypy --strict",
        )?;
        // Importing runs every `re.compile` and the table construction; -W error turns an invalid
        // escape sequence (a SyntaxWarning) or any deprecation into a failure.
        run(
            command("python3")
                .args(["-W", "error", "-c"])
                .arg(format!("import {stem}"))
                .env("PYTHONPATH", work)
                .env("PYTHONDONTWRITEBYTECODE", "1")
                .current_dir(work),
            "importing the module",
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
        copy_harness("python", work)?;
        let name = module.file_name().context("module without a file name")?;
        std::fs::copy(module, work.join(name))?;
        Ok(Built {
            argv: vec![
                "python3".into(),
                work.join("harness.py").to_string_lossy().into_owned(),
            ],
            cwd: work.to_path_buf(),
        })
    }
}
