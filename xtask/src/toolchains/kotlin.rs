//! Kotlin/JVM: `kotlinc` (installed by scripts/bootstrap-toolchains.sh) compiles the module with
//! warnings as errors and explicit API mode; the harness runs on `java` with the Kotlin stdlib.

use super::{command, copy_harness, root, Built, Toolchain};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

pub struct Kotlin;

/// Flags of every compile: warnings are errors, and every public declaration states its
/// visibility and type as library code must.
const KOTLINC_FLAGS: [&str; 2] = ["-Werror", "-Xexplicit-api=strict"];

impl Toolchain for Kotlin {
    fn language(&self) -> &'static str {
        "kotlin"
    }

    fn lint(&self, module: &Path, work: &Path) -> Result<()> {
        let text = std::fs::read_to_string(module)
            .with_context(|| format!("reading {}", module.display()))?;
        let findings = style_findings(&text);
        if !findings.is_empty() {
            bail!(
                "kotlin lint: {} finding(s) in {}:\n{}",
                findings.len(),
                module.display(),
                findings.join("\n")
            );
        }
        std::fs::create_dir_all(work)?;
        kotlinc(
            &[module.to_path_buf()],
            &work.join("classes"),
            "kotlin lint: kotlinc",
        )
    }

    fn build(&self, module: &Path, work: &Path) -> Result<Built> {
        copy_harness("kotlin", work)?;
        let module_copy = work.join(module.file_name().context("module path has no file name")?);
        std::fs::copy(module, &module_copy)?;
        let classes = work.join("classes");
        kotlinc(
            &[module_copy, work.join("Harness.kt")],
            &classes,
            "kotlin harness: kotlinc",
        )?;
        let classpath = format!("{}:{}", classes.display(), stdlib()?.display());
        Ok(Built {
            argv: vec!["java".into(), "-cp".into(), classpath, "HarnessKt".into()],
            cwd: work.to_path_buf(),
        })
    }
}

/// Compiles `sources` into `out`; any diagnostic (warnings are errors) fails.
fn kotlinc(sources: &[PathBuf], out: &Path, what: &str) -> Result<()> {
    let mut cmd = command("kotlinc");
    cmd.args(KOTLINC_FLAGS).arg("-d").arg(out).args(sources);
    let output = cmd.output().with_context(|| format!("{what}: cannot start kotlinc; run `bash scripts/bootstrap-toolchains.sh` to install it"))?;
    let diagnostics = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if !output.status.success() || !diagnostics.trim().is_empty() {
        bail!("{what} failed ({}):\n{diagnostics}", output.status);
    }
    Ok(())
}

/// The Kotlin stdlib jar the bootstrap script records in `.cache/toolchains/kotlin-classpath`.
fn stdlib() -> Result<PathBuf> {
    let file = root().join(".cache/toolchains/kotlin-classpath");
    let text = std::fs::read_to_string(&file).with_context(|| {
        format!(
            "reading {}; run `bash scripts/bootstrap-toolchains.sh` to install Kotlin",
            file.display()
        )
    })?;
    let jar = PathBuf::from(text.trim());
    if !jar.is_file() {
        bail!(
            "{} names {}, which does not exist; run `bash scripts/bootstrap-toolchains.sh`",
            file.display(),
            jar.display()
        );
    }
    Ok(jar)
}

/// Layout rules kotlinc does not check: ASCII outside comments (every spec string arrives
/// escaped), no tabs,
/// no trailing whitespace, `\n` line endings with a final newline, and a KDoc comment on every
/// public declaration (constructor properties are documented by their class's `@property`).
fn style_findings(text: &str) -> Vec<String> {
    let mut findings = Vec::new();
    if !text.ends_with('\n') || text.ends_with("\n\n") {
        findings.push("the file must end with exactly one newline".to_string());
    }
    let lines: Vec<&str> = text.split('\n').collect();
    for (index, line) in lines.iter().enumerate() {
        let at = index + 1;
        let code_part = line.rfind(" // ").map_or(*line, |comment| &line[..comment]);
        if !code_part.is_ascii() {
            findings.push(format!(
                "line {at}: raw non-ASCII character outside a comment"
            ));
        }
        if line.contains('\t') || line.contains('\r') {
            findings.push(format!("line {at}: tab or carriage return"));
        }
        if line.ends_with(' ') {
            findings.push(format!("line {at}: trailing whitespace"));
        }
        let code = line.trim_start();
        if code.starts_with("public ") && !code.ends_with(',') {
            let documented = lines[..index]
                .iter()
                .rev()
                .map(|l| l.trim())
                .find(|l| !l.starts_with('@'))
                .is_some_and(|l| l.ends_with("*/"));
            if !documented {
                findings.push(format!(
                    "line {at}: public declaration without a KDoc comment: {code}"
                ));
            }
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::style_findings;

    #[test]
    fn finds_undocumented_public_declarations() {
        let text = "/** Doc. */\n@JvmField\npublic val a: Int = 1\n\npublic val b: Int = 2\n";
        let findings = style_findings(text);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(findings[0].starts_with("line 5:"));
    }

    #[test]
    fn finds_layout_problems() {
        assert_eq!(style_findings("val a = \"\u{e9}\" \n").len(), 2);
        assert_eq!(style_findings("val a = 1").len(), 1);
    }
}
