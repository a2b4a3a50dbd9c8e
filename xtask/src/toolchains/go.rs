//! Go: `gofmt -l` must print nothing and `go vet` must pass; the harness is a `main` package in
//! its own module (no requirements, so it builds offline) that imports the generated package
//! from a subfolder.

use super::{command, copy_harness, run, Built, Module, Toolchain};
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::Command;

pub struct Go;

/// The folder, inside the harness module, that holds the generated package; the harness
/// imports `retrygen.example/harness/retrypolicy`.
const PACKAGE_DIR: &str = "retrypolicy";

/// `go` with the environment that keeps it local and reproducible: no toolchain download, no
/// module proxy, no workspace file from a parent folder.
fn go(work: &Path) -> Command {
    let mut cmd = command("go");
    cmd.current_dir(work)
        .env("GOTOOLCHAIN", "local")
        .env("GOPROXY", "off")
        .env("GOWORK", "off")
        .env("GOFLAGS", "")
        .env("CGO_ENABLED", "0");
    cmd
}

/// Places `module` as the only file of `dir`.
fn place_module(module: &Path, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let name = module
        .file_name()
        .context("the module path has no file name")?;
    std::fs::copy(module, dir.join(name))
        .with_context(|| format!("copying {}", module.display()))?;
    Ok(())
}

impl Toolchain for Go {
    fn language(&self) -> &'static str {
        "go"
    }

    fn lint(&self, module: &Module, work: &Path) -> Result<()> {
        let module = module.tables();
        let unformatted = run(command("gofmt").arg("-l").arg(module), "gofmt -l")?;
        if !unformatted.trim().is_empty() {
            let diff = command("gofmt")
                .arg("-d")
                .arg(module)
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            bail!("gofmt would reformat {}:\n{diff}", module.display());
        }
        std::fs::create_dir_all(work)?;
        std::fs::write(
            work.join("go.mod"),
            "module retrygen.example/lint\n\ngo 1.21\n",
        )?;
        place_module(module, &work.join(PACKAGE_DIR))?;
        run(go(work).args(["vet", "./..."]), "go vet")?;
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
        copy_harness("go", work)?;
        place_module(module, &work.join(PACKAGE_DIR))?;
        run(
            go(work).args(["build", "-trimpath", "-o", "harness", "."]),
            "go build",
        )?;
        Ok(Built {
            argv: vec![work.join("harness").to_string_lossy().into_owned()],
            cwd: work.to_path_buf(),
        })
    }
}
