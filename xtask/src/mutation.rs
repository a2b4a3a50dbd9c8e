//! `cargo xtask mutation [--lang L,...]`: proves the conformance run can fail. For each language
//! it copies the templates, changes one rule of the contract (the exhaustion check `>=` becomes
//! `>`: one retry too many, the 2-versus-4-attempt drift the seeds describe), and runs the
//! conformance cases of specs/sandbox.yaml with the altered templates for that language alone.
//! The command fails unless every mutant is caught.

use crate::conformance::{self, project_specs};
use crate::toolchains::root;
use anyhow::{bail, Context, Result};
use retrygen::emit::TemplateSource;

/// The exhaustion rule as each template writes it.
const MUTANTS: [(&str, &str); 6] = [
    ("rust", "input.retries_used >= policy.max_retries"),
    ("typescript", "input.retriesUsed >= policy.maxRetries"),
    ("python", "inputs.retries_used >= policy.max_retries"),
    ("go", "in.RetriesUsed >= p.MaxRetries"),
    ("kotlin", "input.retriesUsed >= policy.maxRetries"),
    ("csharp", "input.RetriesUsed >= policy.MaxRetries"),
];

pub fn main(args: &[String]) -> Result<()> {
    let only: Option<Vec<&str>> = crate::flag(args, "--lang").map(|l| l.split(',').collect());
    let specs: Vec<_> = project_specs()?
        .into_iter()
        .filter(|(name, _)| name == "sandbox")
        .collect();
    let mut survivors = Vec::new();
    for (language, rule) in MUTANTS {
        if only.as_ref().is_some_and(|o| !o.contains(&language)) {
            continue;
        }
        let dir = root().join("target/xtask/mutation").join(language);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        let templates = dir.join("templates").join(language);
        std::fs::create_dir_all(&templates)?;
        for entry in std::fs::read_dir(root().join("templates").join(language))? {
            let entry = entry?;
            let text = std::fs::read_to_string(entry.path())?;
            std::fs::write(templates.join(entry.file_name()), text)?;
        }
        let entry = templates.join("module.j2");
        let text = std::fs::read_to_string(&entry).with_context(|| entry.display().to_string())?;
        if text.matches(rule).count() != 1 {
            bail!("{language}: the rule {rule:?} is no longer written exactly once in templates/{language}/module.j2; update MUTANTS");
        }
        std::fs::write(&entry, text.replace(rule, &rule.replace(">=", ">")))?;
        println!(
            "mutant {language}: `{rule}` -> `{}`",
            rule.replace(">=", ">")
        );
        let failures = conformance::run(&conformance::Options {
            vectors: root().join("conformance/vectors"),
            languages: vec![language.to_string()],
            templates: TemplateSource::Folder(dir.join("templates")),
            specs: specs.clone(),
        })?;
        if failures == 0 {
            survivors.push(language);
            println!("mutant {language}: SURVIVED");
        } else {
            println!("mutant {language}: caught by {failures} failing case(s)");
        }
    }
    if !survivors.is_empty() {
        bail!("mutation: the conformance run did not notice a changed rule in {survivors:?}");
    }
    println!("mutation: every mutant was caught");
    Ok(())
}
