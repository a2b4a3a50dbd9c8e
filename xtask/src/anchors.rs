//! `cargo xtask anchors`: every runtime marks where it implements each anchored rule of
//! docs/contract.md section 3 with a comment holding `[contract R1]` (and so on), and the
//! rules of contract v3 it implements beside them (`[contract R5a]`, `[contract X3]`). This
//! check reads the anchors from the contract itself and fails when a runtime lacks one, names
//! one the contract does not define, or orders one family (V, R, S, B, K) differently from the
//! contract.

use crate::toolchains::root;
use anyhow::{anyhow, bail, Result};
use regex::Regex;

/// The anchor families of the contract, in the order the contract lists them: validation,
/// rules, server delay, backoff, retry budget.
const FAMILIES: [char; 5] = ['V', 'R', 'S', 'B', 'K'];

/// Contract v3's anchors outside section 3 that every runtime marks: the module-level classify
/// (C3), the pure functions (H2, Q2, E2, F1), the throttled decision (T1) and what the adapter
/// does (Q1, X1-X8). The rest are retrygen's own (A1, A2 and the preset T2, checked by its model
/// tests) or said again by the X rules (A3-A7), which a runtime may mark but need not.
const V3_RUNTIME_ANCHORS: [&str; 15] = [
    "C3", "H2", "T1", "Q1", "Q2", "E2", "F1", "X1", "X2", "X3", "X4", "X5", "X6", "X7", "X8",
];

/// The anchors the runtimes must mark: every one of section 3 (V, R, S, B, K) in contract
/// order, then contract v3's others ([`V3_RUNTIME_ANCHORS`]).
pub fn expected_anchors() -> Vec<String> {
    let mut anchors = contract_anchors();
    anchors.extend(V3_RUNTIME_ANCHORS.iter().map(|a| a.to_string()));
    anchors
}

fn contract_text() -> String {
    std::fs::read_to_string(root().join("docs/contract.md")).unwrap_or_default()
}

/// Every anchor docs/contract.md defines: `**R1**` (or `**R5a**`) opening a list item, `B1  `
/// opening a line of the backoff block.
pub fn defined_anchors() -> Vec<String> {
    let defined =
        Regex::new(r"(?m)^(?:\s*- \*\*([A-Z]\d+[a-z]?)\*\*|(B\d+)  )").expect("valid regex");
    let mut anchors: Vec<String> = Vec::new();
    for c in defined.captures_iter(&contract_text()) {
        let a = c.get(1).or(c.get(2)).expect("one group matches").as_str();
        if !anchors.iter().any(|x| x == a) {
            anchors.push(a.to_string());
        }
    }
    anchors
}

/// Contract v2's anchors, whose mutants are `conformance/mutants/<language>.toml`'s: section 3's
/// families without v3's rules among them (R5a, R6a, R6b, R9a, S9: their mutants are v3's).
pub fn v2_anchors() -> Vec<String> {
    contract_anchors()
        .into_iter()
        .filter(|a| !crate::conformance_v3::ANCHORS.contains(&a.as_str()))
        .collect()
}

/// The anchors of section 3's families in contract order: V1..V8, R1..R18 with v3's R5a, R6a,
/// R6b and R9a in between, S1..S9, B1..B6, K1..K4.
pub fn contract_anchors() -> Vec<String> {
    let defined = defined_anchors();
    let mut anchors: Vec<String> = Vec::new();
    for family in FAMILIES {
        anchors.extend(defined.iter().filter(|a| a.starts_with(family)).cloned());
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

/// The files whose markers count: the runtime's, then its HTTP client adapters' (Q1 and X1-X8
/// are the adapter's work), as the backend embeds them.
fn marked_sources(language: &str) -> Result<Vec<(&'static str, &'static str)>> {
    let backend =
        retrygen::emit::backend(language).ok_or_else(|| anyhow!("unknown language {language}"))?;
    let mut sources = runtime_sources(language)?;
    for adapter in backend.adapters() {
        sources.extend(adapter.files.iter().map(|f| (f.name, f.source)));
    }
    Ok(sources)
}

/// The problems of one runtime and its adapters: missing anchors, markers naming no anchor of the
/// contract, and families out of contract order (by first occurrence).
pub fn problems(language: &str, expected: &[String]) -> Result<Vec<String>> {
    let marker = Regex::new(r"\[contract ([A-Z]\d+[a-z]?)\]").expect("valid regex");
    let defined = defined_anchors();
    let sources = marked_sources(language)?;
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
        if !expected.contains(a) && !defined.contains(a) {
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
    let defined = defined_anchors();
    if contract_anchors().len() < 20 {
        bail!("docs/contract.md defines only {defined:?}; anchors are `- **R1**` list items and `B1  ` backoff lines");
    }
    let undefined: Vec<&String> = expected.iter().filter(|a| !defined.contains(a)).collect();
    if !undefined.is_empty() {
        bail!("docs/contract.md does not define {undefined:?}, which the runtimes must mark");
    }
    let mut all = Vec::new();
    for backend in retrygen::emit::BACKENDS {
        all.extend(problems(backend.name(), &expected)?);
    }
    if !all.is_empty() {
        bail!("contract anchors:\n  {}", all.join("\n  "));
    }
    println!(
        "anchors: every runtime marks all {} rules of docs/contract.md it implements, section 3's in order",
        expected.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contract_defines_every_anchor_in_order() {
        let rules = (1..=18).flat_map(|i| {
            let extra: &[&str] = match i {
                5 => &["R5a"],
                6 => &["R6a", "R6b"],
                9 => &["R9a"],
                _ => &[],
            };
            std::iter::once(format!("R{i}")).chain(extra.iter().map(|a| a.to_string()))
        });
        let want: Vec<String> = (1..=8)
            .map(|i| format!("V{i}"))
            .chain(rules)
            .chain((1..=9).map(|i| format!("S{i}")))
            .chain((1..=6).map(|i| format!("B{i}")))
            .chain((1..=4).map(|i| format!("K{i}")))
            .collect();
        assert_eq!(contract_anchors(), want);
        let defined = defined_anchors();
        for a in expected_anchors() {
            assert!(defined.contains(&a), "docs/contract.md does not define {a}");
        }
    }
}
