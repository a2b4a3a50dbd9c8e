//! `cargo xtask mutation [--lang L,...] [--anchor A,...] [--out FILE]`: proves the vectors can
//! fail. `conformance/mutants/<language>.toml` holds one mutant per anchored rule of contract v2
//! (docs/contract.md section 3: `V1`...`V8`, `R1`...`R18`, `S1`...`S8`, `B1`...`B6`,
//! `K1`...`K4`), and `conformance/mutants/v3/<language>.toml`, for every language whose runtime
//! implements v3 ([`conformance_v3::implemented`]: all six), one per v3 anchor of
//! docs/contract.md that its vectors check ([`conformance_v3::ANCHORS`]): a small change of
//! that language's runtime source at the place the anchor marks. Each mutant replaces the
//! runtime in the rendered module of specs/sandbox.yaml, which is then built (no lint: a lint
//! finding must not count as a kill) and run on its contract's vectors: v2's decide and classify
//! cases on that spec, as `cargo xtask conformance` runs them, or every v3 case, as `cargo xtask
//! conformance-v3` does. A mutant is killed when some vector's answer changes; one that does not
//! build is reported as not viable, which fails the run like a survivor. `--anchor` names anchors
//! of either contract. The kill table, a section per contract, goes to
//! target/xtask/mutation/table.md (and `--out FILE`).

use crate::anchors::{runtime_sources, v2_anchors};
use crate::conformance::{self, load_vectors, project_specs, vector_probe, Suite};
use crate::conformance_v3;
use crate::harness;
use crate::toolchains::{root, TOOLCHAINS};
use anyhow::{anyhow, bail, Context, Result};
use retrygen::emit::TemplateSource;
use std::fmt::Write as _;
use std::path::PathBuf;

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

/// One contract's mutants: one per anchor in each of its languages.
pub struct Contract {
    /// `v2` or `v3`: the table's section and the work folder.
    pub name: &'static str,
    /// The section's title in the kill table.
    title: &'static str,
    /// The folder of its mutant files, `<language>.toml`.
    dir: PathBuf,
    /// Its anchors, in the contract's order.
    pub anchors: Vec<String>,
    /// The languages that must have a mutant file.
    pub languages: Vec<String>,
}

/// Contract v2's anchors and v3's that its vectors check (every language that implements v3:
/// all six).
pub fn contracts() -> Vec<Contract> {
    let mutants = root().join("conformance/mutants");
    vec![
        Contract {
            name: "v2",
            title: "Contract v2",
            dir: mutants.clone(),
            anchors: v2_anchors(),
            languages: TOOLCHAINS
                .iter()
                .map(|t| t.language().to_string())
                .collect(),
        },
        Contract {
            name: "v3",
            title: "Contract v3",
            dir: mutants.join("v3"),
            anchors: conformance_v3::ANCHORS.map(str::to_string).to_vec(),
            languages: conformance_v3::implemented()
                .iter()
                .map(|l| l.to_string())
                .collect(),
        },
    ]
}

impl Contract {
    /// The mutants of one language, checked against its runtime: one per anchor, in anchor
    /// order, each `find` written exactly once in its file and replaced by something else.
    pub fn mutants(&self, language: &str) -> Result<Vec<Mutant>> {
        let path = self.dir.join(format!("{language}.toml"));
        let text = std::fs::read_to_string(&path).with_context(|| {
            format!(
                "{}: {language} has no mutants for contract {} (one per anchor: {})",
                path.display(),
                self.name,
                self.anchors.join(", ")
            )
        })?;
        let file: MutantFile =
            toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        let sources = runtime_sources(language)?;
        let anchors: Vec<String> = file.mutant.iter().map(|m| m.anchor.clone()).collect();
        if anchors != self.anchors {
            bail!(
                "{}: mutants must be exactly one per anchor, in order {:?}; found {anchors:?}",
                path.display(),
                self.anchors
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

    /// The vectors a mutant of this contract must fail, on specs/sandbox.yaml: v2's decide and
    /// classify cases (as `cargo xtask conformance` runs them for that spec), or every v3 case
    /// (as `cargo xtask conformance-v3` does).
    fn suite(&self) -> Result<Suite> {
        let (name, spec) = project_specs()?
            .into_iter()
            .find(|(name, _)| name == "sandbox")
            .ok_or_else(|| anyhow!("retrygen.toml has no sandbox spec"))?;
        let probes = if self.name == "v3" {
            conformance_v3::probes()?
        } else {
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
            probes
        };
        Ok(Suite {
            name: format!("{name} {}", self.name),
            spec,
            probes,
            options: Default::default(),
        })
    }

    /// The section's opening words: what its numbers count.
    fn caption(&self, cases: usize) -> String {
        let anchors = match self.name {
            "v2" => "anchored rule of docs/contract.md (`V1`-`V8`, `R1`-`R18`, `S1`-`S8`, \
                     `B1`-`B6`, `K1`-`K4`)"
                .to_string(),
            _ => format!(
                "contract v3 anchor of docs/contract.md that its vectors check ({})",
                self.anchors
                    .iter()
                    .map(|a| format!("`{a}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let (file, vectors) = match self.name {
            "v2" => (
                "<language>.toml",
                "decide and classify vector cases on specs/sandbox.yaml",
            ),
            _ => (
                "v3/<language>.toml",
                "v3 vector cases (`cargo xtask conformance-v3`'s lines, module of \
                 specs/sandbox.yaml)",
            ),
        };
        format!(
            "One mutant per {anchors} in each language, from `conformance/mutants/{file}`, applied \
             to that language's runtime; each number is how many of the {cases} {vectors} fail \
             with the mutant (a kill)."
        )
    }
}

/// Applies the mutant of each of `anchors` to each language's runtime, builds the module and
/// runs `suite` on it. Returns the kill table's rows (`[anchor][language]`: the failing cases,
/// `SURVIVED` or `not viable`) and adds each mutant that was not killed to `bad`.
fn kill(
    contract: &Contract,
    suite: &Suite,
    languages: &[&str],
    anchors: &[&String],
    bad: &mut Vec<String>,
) -> Result<Vec<Vec<String>>> {
    let mut cells: Vec<Vec<String>> = vec![Vec::new(); anchors.len()];
    for language in languages {
        let sources = runtime_sources(language)?;
        let all = contract.mutants(language)?;
        for (row, anchor) in anchors.iter().enumerate() {
            let m = all
                .iter()
                .find(|m| &m.anchor == *anchor)
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
            let work = root()
                .join("target/xtask/mutation")
                .join(contract.name)
                .join(language);
            let results = conformance::run_suite(
                suite,
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
            let which = format!("{language} {} {anchor}", contract.name);
            let cell = if result.status == "build or run failed" {
                bad.push(format!("{which} (does not build)"));
                "not viable".to_string()
            } else if result.failures == 0 {
                bad.push(format!("{which} (survived)"));
                "SURVIVED".to_string()
            } else {
                format!("{}", result.failures)
            };
            println!("mutant {which}: `{}` -> `{}`: {cell}", m.find, m.replace);
            cells[row].push(cell);
        }
    }
    Ok(cells)
}

pub fn main(args: &[String]) -> Result<()> {
    let only: Option<Vec<&str>> = crate::flag(args, "--lang").map(|l| l.split(',').collect());
    let only_anchors: Option<Vec<&str>> =
        crate::flag(args, "--anchor").map(|l| l.split(',').collect());
    let contracts = contracts();
    if let Some(unknown) = only_anchors
        .iter()
        .flatten()
        .find(|a| !contracts.iter().any(|c| c.anchors.iter().any(|x| x == *a)))
    {
        bail!("--anchor {unknown}: no anchor of contract v2 or v3 has that name");
    }
    // Every mutant file is checked against its runtime, whatever the filters: a runtime change
    // that moves a mutant's place fails here, not only in the run that would apply it.
    for contract in &contracts {
        for language in &contract.languages {
            contract.mutants(language)?;
        }
    }
    let mut table = format!(
        "# Mutation table\n\nEach number is how many vector cases fail with one mutant of a \
         contract anchor in one language's runtime: a kill; `SURVIVED` or `not viable` fails the \
         run. Written by `cargo xtask mutation{}`. `make mutation-full` (`cargo xtask mutation \
         --out docs/mutation.md`) rewrites docs/mutation.md from one run of every mutant; `make \
         test` runs a sample of anchors of both contracts (`MUTATION_SAMPLE` in the Makefile).\n",
        args.iter().map(|a| format!(" {a}")).collect::<String>()
    );
    let mut bad = Vec::new();
    for contract in &contracts {
        let languages: Vec<&str> = contract
            .languages
            .iter()
            .map(String::as_str)
            .filter(|l| only.as_ref().is_none_or(|o| o.contains(l)))
            .collect();
        let anchors: Vec<&String> = contract
            .anchors
            .iter()
            .filter(|a| {
                only_anchors
                    .as_ref()
                    .is_none_or(|o| o.contains(&a.as_str()))
            })
            .collect();
        if languages.is_empty() || anchors.is_empty() {
            continue;
        }
        let suite = contract.suite()?;
        let cells = kill(contract, &suite, &languages, &anchors, &mut bad)?;
        write!(
            table,
            "\n## {}\n\n{}\n\n| anchor | {} |\n|---|{}\n",
            contract.title,
            contract.caption(suite.probes.len()),
            languages.join(" | "),
            "---:|".repeat(languages.len())
        )
        .expect("writing to a String");
        for (anchor, row) in anchors.iter().zip(&cells) {
            writeln!(table, "| {anchor} | {} |", row.join(" | ")).expect("writing to a String");
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs without a toolchain: a runtime change that moves a mutant's place, or a contract or
    /// an implementing language without its mutants, fails `cargo test`, not only a mutation run.
    #[test]
    fn every_mutant_file_fits_its_runtime() {
        for contract in contracts() {
            assert!(!contract.anchors.is_empty(), "contract {}", contract.name);
            for language in &contract.languages {
                let mutants = contract.mutants(language).unwrap();
                assert_eq!(mutants.len(), contract.anchors.len());
            }
        }
    }
}
