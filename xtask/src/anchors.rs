//! `cargo xtask anchors`: every runtime marks where it implements each anchored rule of
//! docs/contract.md section 3 with a comment holding `[contract R1]` (and so on). This check
//! reads the anchors from the contract itself and fails when a runtime lacks one or orders one
//! family (V, R, S, B, K) differently from the contract.

use crate::toolchains::root;
use anyhow::{anyhow, bail, Result};
use regex::Regex;

/// The anchor families of the contract, in the order the contract lists them: validation,
/// rules, server delay, backoff, retry budget.
const FAMILIES: [char; 5] = ['V', 'R', 'S', 'B', 'K'];

/// The anchors the runtimes must mark: every one docs/contract.md defines.
pub fn expected_anchors() -> Vec<String> {
    contract_anchors()
}

/// The anchors docs/contract.md defines (`**R1**` in a list, `B1  ` in the backoff block), in
/// contract order: V1..V8, R1..R18, S1..S8, B1..B6, K1..K4.
pub fn contract_anchors() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("docs/contract.md")).unwrap_or_default();
    let defined = Regex::new(r"(?m)^(?:\s*- \*\*([VRSK]\d+)\*\*|([B]\d+)  )").expect("valid regex");
    let mut anchors: Vec<String> = Vec::new();
    for family in FAMILIES {
        for c in defined.captures_iter(&text) {
            let a = c.get(1).or(c.get(2)).expect("one group matches").as_str();
            if a.starts_with(family) && !anchors.iter().any(|x| x == a) {
                anchors.push(a.to_string());
            }
        }
    }
    anchors
}

/// The runtime files of `language` as the backend embeds them: `(name, text)`.
pub fn runtime_sources(language: &str) -> Result<Vec<(&'static str, &'static str)>> {
    let backend =
        retrygen::emit::backend(language).ok_or_else(|| anyhow!("unknown language {language}"))?;
    Ok(backend
        .runtime_files()
        .iter()
        .map(|f| (f.name, f.source))
        .collect())
}

/// The problems of one runtime: missing anchors, and families out of contract order (by first
/// occurrence).
pub fn problems(language: &str, expected: &[String]) -> Result<Vec<String>> {
    let marker = Regex::new(r"\[contract ([VRSBK]\d+)\]").expect("valid regex");
    let sources = runtime_sources(language)?;
    if sources.is_empty() {
        return Ok(vec![format!("{language}: no runtime files")]);
    }
    let mut found: Vec<String> = Vec::new();
    for (_, text) in &sources {
        for c in marker.captures_iter(text) {
            let a = c[1].to_string();
            if !found.contains(&a) {
                found.push(a);
            }
        }
    }
    let mut problems = Vec::new();
    for a in expected {
        if !found.contains(a) {
            problems.push(format!("{language}: no `[contract {a}]` comment"));
        }
    }
    for a in &found {
        if !expected.contains(a) {
            problems.push(format!(
                "{language}: `[contract {a}]` names no rule of docs/contract.md"
            ));
        }
    }
    for family in FAMILIES {
        let want: Vec<&String> = expected.iter().filter(|a| a.starts_with(family)).collect();
        let have: Vec<&String> = found
            .iter()
            .filter(|a| a.starts_with(family) && expected.contains(a))
            .collect();
        if have.len() == want.len() && have != want {
            problems.push(format!(
                "{language}: the {family} anchors appear in the order {have:?}, the contract's is {want:?}"
            ));
        }
    }
    Ok(problems)
}

pub fn main(_args: &[String]) -> Result<()> {
    let expected = expected_anchors();
    if expected.len() < 20 {
        bail!("docs/contract.md defines only {expected:?}; anchors are `- **R1**` list items and `B1  ` backoff lines");
    }
    let mut all = Vec::new();
    for backend in retrygen::emit::BACKENDS {
        all.extend(problems(backend.name(), &expected)?);
    }
    if !all.is_empty() {
        bail!("contract anchors:\n  {}", all.join("\n  "));
    }
    println!(
        "anchors: every runtime marks all {} rules of docs/contract.md section 3, in order",
        expected.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contract_defines_every_anchor_in_order() {
        let want: Vec<String> = (1..=8)
            .map(|i| format!("V{i}"))
            .chain((1..=18).map(|i| format!("R{i}")))
            .chain((1..=8).map(|i| format!("S{i}")))
            .chain((1..=6).map(|i| format!("B{i}")))
            .chain((1..=4).map(|i| format!("K{i}")))
            .collect();
        assert_eq!(contract_anchors(), want);
    }
}
