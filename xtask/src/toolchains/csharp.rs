//! C#: Debian's mono `mcs` (installed by scripts/bootstrap-toolchains.sh) compiles the module at
//! C# 7.2, the newest level mcs accepts (the module targets 7.3 and uses nothing newer than 7.2),
//! with every warning an error and XML documentation required on public members; `mono` runs the
//! harness.

use super::{command, copy_harness, Built, Toolchain};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

pub struct CSharp;

/// Flags of every compile: language level, all warnings (level 4) as errors, the base class
/// library assemblies the module uses (System.dll holds Regex).
const MCS_FLAGS: [&str; 4] = [
    "-langversion:7.2",
    "-warnaserror+",
    "-warn:4",
    "-r:System.dll",
];

impl Toolchain for CSharp {
    fn language(&self) -> &'static str {
        "csharp"
    }

    fn lint(&self, module: &Path, work: &Path) -> Result<()> {
        let text = std::fs::read_to_string(module)
            .with_context(|| format!("reading {}", module.display()))?;
        let findings = style_findings(&text);
        if !findings.is_empty() {
            bail!(
                "csharp lint: {} finding(s) in {}:\n{}",
                findings.len(),
                module.display(),
                findings.join("\n")
            );
        }
        std::fs::create_dir_all(work)?;
        // -doc turns a public member without an XML doc comment into warning CS1591, an error here.
        let doc = format!("-doc:{}", work.join("module.xml").display());
        let out = format!("-out:{}", work.join("module.dll").display());
        mcs(
            &["-target:library".into(), doc, out],
            &[module.to_path_buf()],
            "csharp lint: mcs",
        )
    }

    fn build(&self, module: &Path, work: &Path) -> Result<Built> {
        copy_harness("csharp", work)?;
        let module_copy = work.join(module.file_name().context("module path has no file name")?);
        std::fs::copy(module, &module_copy)?;
        let exe = work.join("harness.exe");
        mcs(
            &["-target:exe".into(), format!("-out:{}", exe.display())],
            &[module_copy, work.join("Harness.cs")],
            "csharp harness: mcs",
        )?;
        Ok(Built {
            argv: vec!["mono".into(), "--debug".into(), exe.display().to_string()],
            cwd: work.to_path_buf(),
        })
    }
}

/// Compiles `sources`; any diagnostic (warnings are errors) fails.
fn mcs(extra: &[String], sources: &[PathBuf], what: &str) -> Result<()> {
    let mut cmd = command("mcs");
    cmd.args(MCS_FLAGS).args(extra).args(sources);
    let output = cmd.output().with_context(|| {
        format!(
            "{what}: cannot start mcs; run `bash scripts/bootstrap-toolchains.sh` to install mono"
        )
    })?;
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

/// Layout rules mcs does not check: ASCII outside comments (every spec string arrives escaped as
/// `\uXXXX`), no tabs, no trailing whitespace, `\n` line endings with one final newline.
fn style_findings(text: &str) -> Vec<String> {
    let mut findings = Vec::new();
    if !text.ends_with('\n') || text.ends_with("\n\n") {
        findings.push("the file must end with exactly one newline".to_string());
    }
    for (index, line) in text.split('\n').enumerate() {
        let at = index + 1;
        let code = line.rfind(" // ").map_or(line, |comment| &line[..comment]);
        if !code.is_ascii() {
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
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::style_findings;

    #[test]
    fn finds_layout_problems() {
        assert!(style_findings("class A { } // caf\u{e9}\n").is_empty());
        assert_eq!(style_findings("var a = \"\u{e9}\";\t\n").len(), 2);
        assert_eq!(style_findings("class A { }").len(), 1);
    }
}
