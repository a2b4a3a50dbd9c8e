//! `cargo xtask mutation [--lang L,...] [--anchor A,...] [--out FILE]`: proves the vectors can
//! fail. `conformance/mutants/<language>.toml` holds one mutant per anchored rule of
//! docs/contract.md section 3 (`R1`...`R12`, `S1`...`S8`, `B1`...`B6`): a small change of that
//! language's runtime source at the place the anchor marks. Each mutant replaces the runtime in
//! the rendered module of specs/sandbox.yaml, which is then built (no lint: a lint finding must
//! not count as a kill) and run on the vectors. A mutant is killed when some vector's answer
//! changes; one that does not build is reported as not viable, which fails the run like a
//! survivor. The kill table goes to target/xtask/mutation/table.md (and `--out FILE`).

use crate::anchors::{expected_anchors, runtime_sources};
use crate::conformance::{self, load_vectors, project_specs, vector_probe, Suite};
use crate::harness;
use crate::toolchains::{root, TOOLCHAINS};
use anyhow::{anyhow, bail, Context, Result};
use retrygen::emit::TemplateSource;
use std::fmt::Write as _;

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct MutantFile {
    mutant: Vec<Mutant>,
}

#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mutant {
    pub anchor: String,
    /// A runtime file of the language, by its name in `runtime/<language>/`.
    pub file: String,
    pub find: String,
    pub replace: String,
}

/// The mutants of one language, checked against its runtime: one per anchor, in anchor order,
/// each `find` written exactly once in its file.
pub fn mutants(language: &str) -> Result<Vec<Mutant>> {
    let path = root()
        .join("conformance/mutants")
        .join(format!("{language}.toml"));
    let text = std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;
    let file: MutantFile =
        toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let sources = runtime_sources(language)?;
    let anchors: Vec<String> = file.mutant.iter().map(|m| m.anchor.clone()).collect();
    if anchors != expected_anchors() {
        bail!(
            "{}: mutants must be exactly one per anchor, in order {:?}; found {anchors:?}",
            path.display(),
            expected_anchors()
        );
    }
    for m in &file.mutant {
        let (_, text) = sources
            .iter()
            .find(|(name, _)| *name == m.file)
            .ok_or_else(|| {
                anyhow!(
                    "{}: mutant {}: no runtime file {:?}",
                    path.display(),
                    m.anchor,
                    m.file
                )
            })?;
        let count = text.matches(m.find.as_str()).count();
        if count != 1 {
            bail!(
                "{}: mutant {}: {:?} occurs {count} times in {} (must be exactly once)",
                path.display(),
                m.anchor,
                m.find,
                m.file
            );
        }
        if m.find == m.replace {
            bail!("{}: mutant {} changes nothing", path.display(), m.anchor);
        }
    }
    Ok(file.mutant)
}

pub fn main(args: &[String]) -> Result<()> {
    let only: Option<Vec<&str>> = crate::flag(args, "--lang").map(|l| l.split(',').collect());
    let only_anchors: Option<Vec<&str>> =
        crate::flag(args, "--anchor").map(|l| l.split(',').collect());
    let (spec_name, spec) = project_specs()?
        .into_iter()
        .find(|(name, _)| name == "sandbox")
        .ok_or_else(|| anyhow!("retrygen.toml has no sandbox spec"))?;
    let spec_key = spec
        .strip_prefix(root())
        .unwrap_or(&spec)
        .to_string_lossy()
        .replace('\\', "/");
    let mut probes = Vec::new();
    for (file, case) in load_vectors(&root().join("conformance/vectors"))? {
        if let Some(p) = vector_probe(&case, &file, &spec_key)? {
            probes.push(p);
        }
    }
    let suite = Suite {
        name: spec_name,
        spec,
        probes,
        options: Default::default(),
    };
    let languages: Vec<&str> = TOOLCHAINS
        .iter()
        .map(|t| t.language())
        .filter(|l| only.as_ref().is_none_or(|o| o.contains(l)))
        .collect();
    let anchors: Vec<String> = expected_anchors()
        .into_iter()
        .filter(|a| {
            only_anchors
                .as_ref()
                .is_none_or(|o| o.contains(&a.as_str()))
        })
        .collect();
    // rows[anchor][language] = failing vectors, or an error word.
    let mut cells: Vec<Vec<String>> = vec![Vec::new(); anchors.len()];
    let mut bad = Vec::new();
    for language in &languages {
        let sources = runtime_sources(language)?;
        let all = mutants(language)?;
        for (row, anchor) in anchors.iter().enumerate() {
            let m = all
                .iter()
                .find(|m| &m.anchor == anchor)
                .expect("mutants() checked one per anchor");
            let files: Vec<(String, String)> = sources
                .iter()
                .map(|(name, text)| {
                    let text = if *name == m.file {
                        text.replacen(m.find.as_str(), &m.replace, 1)
                    } else {
                        text.to_string()
                    };
                    (name.to_string(), text)
                })
                .collect();
            harness::override_runtime(language, files);
            let work = root().join("target/xtask/mutation").join(language);
            let results = conformance::run_suite(
                &suite,
                &[language.to_string()],
                &TemplateSource::Embedded,
                &work,
                &[],
                &mut |_| {},
            );
            harness::override_runtime(language, Vec::new());
            let result = results?
                .into_iter()
                .next()
                .ok_or_else(|| anyhow!("no result"))?;
            let cell = if result.status == "build or run failed" {
                bad.push(format!("{language} {anchor} (does not build)"));
                "not viable".to_string()
            } else if result.failures == 0 {
                bad.push(format!("{language} {anchor} (survived)"));
                "SURVIVED".to_string()
            } else {
                format!("{}", result.failures)
            };
            println!(
                "mutant {language} {anchor}: `{}` -> `{}`: {cell}",
                m.find, m.replace
            );
            cells[row].push(cell);
        }
    }
    let mut table = format!(
        "Mutation table: failing vector cases per mutant (`cargo xtask mutation`, {} decide \
         and classify cases on specs/sandbox.yaml; a number is a kill).\n\n| anchor | {} |\n|---|{}\n",
        suite.probes.len(),
        languages.join(" | "),
        "---:|".repeat(languages.len())
    );
    for (anchor, row) in anchors.iter().zip(&cells) {
        writeln!(table, "| {anchor} | {} |", row.join(" | ")).expect("writing to a String");
    }
    let dir = root().join("target/xtask/mutation");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("table.md"), &table)?;
    if let Some(out) = crate::flag(args, "--out") {
        std::fs::write(out, &table)?;
    }
    print!("\n{table}");
    if !bad.is_empty() {
        bail!("mutation: not every mutant was killed: {bad:?}");
    }
    println!("mutation: every mutant was killed");
    Ok(())
}
