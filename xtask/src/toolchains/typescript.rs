//! TypeScript: `tsc` with every strictness flag over the module alone, `prettier --check` with
//! prettier's defaults, and the harness compiled by `tsc` and run by `node`.
//!
//! Tools come from `.cache/toolchains/node` (scripts/bootstrap-toolchains.sh installs them with
//! `npm install --prefix`); versions are pinned so formatting never drifts between machines.

use super::{command, copy_harness, root, run, Built, Module, Toolchain};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

pub struct TypeScript;

pub const TYPESCRIPT_VERSION: &str = "5.9.3";
pub const TYPES_NODE_VERSION: &str = "20.19.43";
pub const PRETTIER_VERSION: &str = "3.10.1";

fn install_hint() -> String {
    format!(
        "run `bash scripts/bootstrap-toolchains.sh`, or `npm install --prefix .cache/toolchains/node --save-exact \
         typescript@{TYPESCRIPT_VERSION} @types/node@{TYPES_NODE_VERSION} prettier@{PRETTIER_VERSION}`"
    )
}

fn node_modules() -> PathBuf {
    root().join(".cache/toolchains/node/node_modules")
}

/// Runs `program --version` and checks it prints `version`.
fn require(program: &str, version: &str) -> Result<()> {
    let output = command(program)
        .arg("--version")
        .output()
        .with_context(|| format!("{program} is not installed; {}", install_hint()))?;
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() || !text.contains(version) {
        bail!(
            "{program} {version} is required (found {:?}); {}",
            text.trim(),
            install_hint()
        );
    }
    Ok(())
}

/// The options every check of the module uses: tsc's strictest useful set, ES2020, no ambient
/// types (the module must not need Node's or the DOM's).
const MODULE_TSCONFIG: &str = r#"{
  "compilerOptions": {
    "strict": true,
    "noEmit": true,
    "noUnusedLocals": true,
    "noUnusedParameters": true,
    "noImplicitReturns": true,
    "noImplicitOverride": true,
    "noFallthroughCasesInSwitch": true,
    "noPropertyAccessFromIndexSignature": true,
    "exactOptionalPropertyTypes": true,
    "noUncheckedIndexedAccess": true,
    "isolatedModules": true,
    "target": "ES2020",
    "lib": ["ES2020"],
    "module": "ES2020",
    "moduleResolution": "bundler",
    "types": []
  },
  "files": ["MODULE"]
}
"#;

impl Toolchain for TypeScript {
    fn language(&self) -> &'static str {
        "typescript"
    }

    fn lint(&self, module: &Module, work: &Path) -> Result<()> {
        let module = module.tables();
        require("tsc", TYPESCRIPT_VERSION)?;
        require("prettier", PRETTIER_VERSION)?;
        std::fs::create_dir_all(work)?;
        let name = module
            .file_name()
            .context("module without a file name")?
            .to_string_lossy()
            .into_owned();
        std::fs::copy(module, work.join(&name))?;
        std::fs::write(
            work.join("tsconfig.json"),
            MODULE_TSCONFIG.replace("MODULE", &name),
        )?;
        run(
            command("tsc").arg("-p").arg(work).current_dir(work),
            "tsc --strict over the module",
        )?;

        // Prettier's defaults: no config file, no .editorconfig, and no ignore file (prettier reads
        // .gitignore by default, which ignores everything under target/).
        let ignore = work.join(".prettierignore");
        std::fs::write(&ignore, "")?;
        let check = command("prettier")
            .args([
                "--check",
                "--no-config",
                "--no-editorconfig",
                "--ignore-path",
            ])
            .arg(&ignore)
            .arg(&name)
            .current_dir(work)
            .output()
            .with_context(|| format!("prettier is not installed; {}", install_hint()))?;
        if !check.status.success() {
            let formatted = command("prettier")
                .args(["--no-config", "--no-editorconfig", "--ignore-path"])
                .arg(&ignore)
                .arg(&name)
                .current_dir(work)
                .output()?;
            let original = std::fs::read_to_string(work.join(&name))?;
            bail!(
                "prettier --check failed:\n{}{}\n{}",
                String::from_utf8_lossy(&check.stdout),
                String::from_utf8_lossy(&check.stderr),
                first_difference(&original, &String::from_utf8_lossy(&formatted.stdout))
            );
        }
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
        require("tsc", TYPESCRIPT_VERSION)?;
        let types = node_modules().join("@types");
        if !types.join("node/package.json").is_file() {
            bail!(
                "@types/node is not installed in {}; {}",
                types.display(),
                install_hint()
            );
        }
        copy_harness("typescript", work)?;
        let name = module.file_name().context("module without a file name")?;
        std::fs::copy(module, work.join(name))?;
        run(
            command("tsc")
                .arg("-p")
                .arg(work)
                .arg("--typeRoots")
                .arg(&types)
                .current_dir(work),
            "compiling the TypeScript harness",
        )?;
        Ok(Built {
            argv: vec![
                "node".into(),
                work.join("out/harness.js").to_string_lossy().into_owned(),
            ],
            cwd: work.to_path_buf(),
        })
    }
}

/// The first lines where `original` and `formatted` differ, for a readable failure.
fn first_difference(original: &str, formatted: &str) -> String {
    let a: Vec<&str> = original.lines().collect();
    let b: Vec<&str> = formatted.lines().collect();
    let Some(at) = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i)) else {
        return "(prettier's output is identical; check line endings)".into();
    };
    let show = |lines: &[&str], sign: char| -> String {
        lines
            .iter()
            .enumerate()
            .skip(at.saturating_sub(2))
            .take(8)
            .map(|(i, l)| format!("{sign}{:>5} {l}\n", i + 1))
            .collect()
    };
    format!(
        "first difference at line {}:\n--- generated\n{}+++ prettier\n{}",
        at + 1,
        show(&a, '-'),
        show(&b, '+')
    )
}
