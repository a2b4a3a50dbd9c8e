//! Contract v3 (docs/contract.md) case lines: the vector kinds of
//! `conformance/vectors/v3/` (`decide3`, `invalid`, `budget`, `precondition`, `problem`, `sse`,
//! `key_format`) as the lines `D3`, `K3`, `HP`, `Q`, `SE` and `F` of conformance/README.md
//! ("Contract v3 lines").
//!
//! `cargo xtask conformance-v3` writes them and runs the reference implementation's own harness
//! (conformance/reference/harness_v3.py) on them, which proves the line format carries every
//! case's inputs intact, then builds the module and harness of every language whose runtime
//! implements v3 ([`implemented`], or those `--lang` names) and compares their lines too.

use crate::conformance::v2::{b, double, int_field};
use crate::conformance::{bits, hex, opt_hex, run_suite, Probe, Suite};
use crate::toolchains::{self, root};
use anyhow::{anyhow, bail, Context, Result};
use retrygen::emit::TemplateSource;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// The languages whose runtime and harness implement contract v3's decision and pure functions
/// (the vectors): since Python's runtime, every language of the registry (`retrygen::BACKENDS`).
pub fn implemented() -> Vec<&'static str> {
    retrygen::BACKENDS.iter().map(|b| b.name()).collect()
}

/// The v3 anchors of docs/contract.md whose rules the v3 vectors check: the precondition (H2),
/// then the others in the contract's order:
/// each runtime marks them `[contract H2]` (and so on), and `cargo xtask mutation` changes
/// each in every implementing runtime (conformance/mutants/v3/). The contract's other anchors
/// are the adapters' (A, Q1, X), retrygen's (T2), classify's (C3, which the v3 vectors do not
/// probe), or v2 rules that v3 extends (V1, V2, K2, R14, R17), whose mutants are v2's.
pub const ANCHORS: [&str; 10] = [
    "H2", "R5a", "R6a", "R6b", "R9a", "S9", "T1", "Q2", "E2", "F1",
];

/// The policy keys in the order of the `P3` fields: v2's 19, then v3's six.
pub const KEYS: [&str; 25] = [
    "max_retries",
    "initial_backoff_ms",
    "max_backoff_ms",
    "multiplier",
    "jitter",
    "retryable_statuses",
    "rejected_statuses",
    "retry_after_cap_ms",
    "deadline_ms",
    "retry_only_with_server_delay",
    "key_in_flight_statuses",
    "key_reused_statuses",
    "server_directive_headers",
    "retry_after_over_cap",
    "unknown_operation_class",
    "budget_capacity",
    "budget_retry_cost",
    "budget_timeout_cost",
    "budget_success_refund",
    "throttling_statuses",
    "throttling_initial_backoff_ms",
    "budget_throttling_cost",
    "stop_problem_types",
    "retry_problem_types",
    "idempotency_key_format",
];

const QUOTA_EXCEEDED: &str = "https://iana.org/assignments/http-problem-types#quota-exceeded";
const ABNORMAL_USAGE: &str =
    "https://iana.org/assignments/http-problem-types#abnormal-usage-detected";

/// The v3 defaults (docs/contract.md, section 3's policy table).
fn default_policy() -> Map<String, Value> {
    let v = serde_json::json!({
        "max_retries": 3, "initial_backoff_ms": 500, "max_backoff_ms": 30000, "multiplier": 2.0,
        "jitter": "full", "retryable_statuses": [408, 425, 429, 500, 502, 503, 504],
        "rejected_statuses": [429], "retry_after_cap_ms": 60000, "deadline_ms": null,
        "retry_only_with_server_delay": [], "key_in_flight_statuses": [409],
        "key_reused_statuses": [422], "server_directive_headers": ["x-should-retry"],
        "retry_after_over_cap": "refuse", "unknown_operation_class": "method_default",
        "budget_capacity": 500, "budget_retry_cost": 5, "budget_timeout_cost": 10,
        "budget_success_refund": 1, "throttling_statuses": [429],
        "throttling_initial_backoff_ms": null, "budget_throttling_cost": null,
        "stop_problem_types": [QUOTA_EXCEEDED, ABNORMAL_USAGE], "retry_problem_types": [],
        "idempotency_key_format": "uuid",
    });
    v.as_object().cloned().expect("an object")
}

/// A list of strings as hex joined by `,`, `-` for the empty list.
fn hex_list(v: &Value, what: &str) -> Result<String> {
    let items = v
        .as_array()
        .ok_or_else(|| anyhow!("{what} must be a list"))?;
    if items.is_empty() {
        return Ok("-".into());
    }
    Ok(items
        .iter()
        .map(|n| n.as_str().map(hex).ok_or_else(|| anyhow!("{what}: {n}")))
        .collect::<Result<Vec<_>>>()?
        .join(","))
}

/// The 25 `P3` fields from a vector's policy overrides, written as given (invalid values too).
pub fn policy_fields(overrides: &Value) -> Result<String> {
    let mut p = default_policy();
    if let Some(o) = overrides.as_object() {
        for (k, v) in o {
            if !p.contains_key(k) {
                bail!("unknown policy key {k}");
            }
            p.insert(k.clone(), v.clone());
        }
    }
    let mut fields = Vec::new();
    for k in KEYS {
        let v = &p[k];
        let field = match k {
            "multiplier" => bits(double(v).ok_or_else(|| anyhow!("multiplier: {v}"))?),
            "jitter"
            | "retry_after_over_cap"
            | "unknown_operation_class"
            | "idempotency_key_format" => v
                .as_str()
                .ok_or_else(|| anyhow!("{k} must be a string"))?
                .to_string(),
            "server_directive_headers" | "stop_problem_types" | "retry_problem_types" => {
                hex_list(v, k)?
            }
            k if k.ends_with("statuses") || k == "retry_only_with_server_delay" => {
                let items = v.as_array().ok_or_else(|| anyhow!("{k} must be a list"))?;
                items
                    .iter()
                    .map(|i| int_field(i, k))
                    .collect::<Result<Vec<_>>>()?
                    .join(",")
            }
            k => int_field(v, k)?,
        };
        fields.push(field);
    }
    Ok(fields.join("\t"))
}

fn hex_field(v: &Value) -> String {
    v.as_str().map_or_else(|| "-".to_string(), str::to_string)
}

fn decide_line(n: &str, case: &Value) -> Result<String> {
    let i = &case["input"];
    let o = &i["outcome"];
    let (kind, status) = match o.get("failure").and_then(Value::as_str) {
        Some(f) => (f.to_string(), "-".to_string()),
        None => ("status".to_string(), int_field(&o["status"], "status")?),
    };
    let opt = |v: &Value| opt_hex(v.as_str());
    Ok(format!(
        "D3\t{n}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{kind}\t{status}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
        policy_fields(&case["policy"])?,
        i["class"].as_str().ok_or_else(|| anyhow!("input.class"))?,
        b(&i["has_idempotency_key"]),
        b(&i["has_precondition"]),
        b(&i["resumable"]),
        b(&i["has_last_event_id"]),
        hex_field(&i["stream_retry_hex"]),
        hex_field(&i["problem_type_hex"]),
        opt(&o["retry_after"]),
        opt(&o["retry_after_ms"]),
        opt(&o["directive"]),
        int_field(&i["retries_used"], "retries_used")?,
        int_field(&i["elapsed_ms"], "elapsed_ms")?,
        int_field(&i["previous_delay_ms"], "previous_delay_ms")?,
        int_field(&i["now_ms"], "now_ms")?,
        bits(double(&i["random"]).ok_or_else(|| anyhow!("input.random"))?),
        int_field(&i["budget_tokens"], "budget_tokens")?,
        b(&i["timed_out"]),
    ))
}

fn budget_line(n: &str, case: &Value) -> Result<String> {
    let mut events = Vec::new();
    for ev in case["events"].as_array().ok_or_else(|| anyhow!("events"))? {
        let what = ev[0].as_str().unwrap_or_default();
        events.push(match (what, &ev[1]) {
            ("acquire", Value::String(k)) if k == "retry" => "r".to_string(),
            ("acquire", Value::String(k)) if k == "timeout" => "t".to_string(),
            ("acquire", Value::String(k)) if k == "throttling" => "h".to_string(),
            ("acquire", Value::String(k)) => format!("a{}", hex(k)),
            ("success", Value::Number(n)) if n.is_i64() => format!("s{n}"),
            _ => bail!("bad budget event {ev}"),
        });
    }
    Ok(format!(
        "K3\t{n}\t{}\t{}",
        policy_fields(&case["policy"])?,
        events.join(",")
    ))
}

/// One v3 vector case as a probe.
pub fn vector_probe(case: &Value, origin: String) -> Result<Probe> {
    let name = case["name"].as_str().unwrap_or_default();
    let n = hex(name);
    let e = &case["expect"];
    let err = |m: anyhow::Error| anyhow!("{origin}: {m}");
    let kind = case["kind"].as_str().unwrap_or_default();
    let (input, expected) = match kind {
        "decide3" => (
            decide_line(&n, case).map_err(err)?,
            format!(
                "D3\t{n}\t{}\t{}\t{}\t{}\t{}\t{}",
                b(&e["retry"]),
                e["delay_ms"]
                    .as_u64()
                    .ok_or_else(|| anyhow!("{origin}: expect.delay_ms"))?,
                e["reason"].as_str().unwrap_or_default(),
                int_field(&e["budget_tokens"], "expect.budget_tokens").map_err(err)?,
                b(&e["throttled"]),
                int_field(&e["server_delay_ms"], "expect.server_delay_ms").map_err(err)?,
            ),
        ),
        "invalid" => {
            let input = match case["call"].as_str() {
                Some("decide") => decide_line(&n, case).map_err(err)?,
                Some("budget") => budget_line(&n, case).map_err(err)?,
                other => bail!("{origin}: unknown call {other:?}"),
            };
            let key = e["key"]
                .as_str()
                .ok_or_else(|| anyhow!("{origin}: expect.key"))?;
            (input, format!("X\t{n}\t{key}"))
        }
        "budget" => {
            let mut results = Vec::new();
            for a in e["after"]
                .as_array()
                .ok_or_else(|| anyhow!("{origin}: expect.after"))?
            {
                let tokens = a["tokens"].as_u64().unwrap_or_default();
                results.push(match a.get("allowed").and_then(Value::as_bool) {
                    Some(true) => format!("y{tokens}"),
                    Some(false) => format!("n{tokens}"),
                    None => format!("s{tokens}"),
                });
            }
            (
                budget_line(&n, case).map_err(err)?,
                format!("K3\t{n}\t{}\t{}", e["initial"], results.join(",")),
            )
        }
        "precondition" => {
            let mut line = format!("HP\t{n}");
            for pair in case["headers_hex"].as_array().into_iter().flatten() {
                write!(
                    line,
                    "\t{}\t{}",
                    pair[0].as_str().unwrap_or_default(),
                    pair[1].as_str().unwrap_or_default()
                )
                .unwrap();
            }
            (line, format!("HP\t{n}\t{}", b(e)))
        }
        "problem" => (
            format!(
                "Q\t{n}\t{}\t{}\t{}",
                opt_hex(case["content_type"].as_str()),
                b(&case["complete"]),
                case["body_hex"].as_str().unwrap_or_default()
            ),
            format!("Q\t{n}\t{}", hex_field(&e["problem_type_hex"])),
        ),
        "sse" => (
            format!(
                "SE\t{n}\t{}",
                case["stream_hex"].as_str().unwrap_or_default()
            ),
            format!(
                "SE\t{n}\t{}\t{}\t{}",
                e["complete_bytes"],
                hex_field(&e["last_event_id_hex"]),
                hex_field(&e["retry_hex"])
            ),
        ),
        "key_format" => (
            format!(
                "F\t{n}\t{}\t{}",
                case["format"].as_str().unwrap_or_default(),
                hex(case["uuid"].as_str().unwrap_or_default())
            ),
            format!("F\t{n}\t{}", hex(e.as_str().unwrap_or_default())),
        ),
        other => bail!("{origin}: unknown v3 kind {other:?}"),
    };
    Ok(Probe {
        input,
        expected,
        origin,
    })
}

/// Every case of conformance/vectors/v3/ as a probe, in file and case order.
pub fn probes() -> Result<Vec<Probe>> {
    let dir = root().join("conformance/vectors/v3");
    let mut probes = Vec::new();
    for (file, case) in crate::conformance::load_vectors(&dir)? {
        if case["contract"].as_u64() != Some(3) {
            bail!("{file}: {}: not marked \"contract\": 3", case["name"]);
        }
        let origin = format!("{file}: {}", case["name"].as_str().unwrap_or_default());
        probes.push(vector_probe(&case, origin)?);
    }
    Ok(probes)
}

/// Runs the reference's harness on the probes; returns the number of mismatching lines.
fn run_reference(probes: &[Probe], work: &Path) -> Result<usize> {
    std::fs::create_dir_all(work)?;
    let cases = work.join("cases-v3.txt");
    let input: String = probes.iter().map(|p| format!("{}\n", p.input)).collect();
    std::fs::write(&cases, input)?;
    let mut cmd = toolchains::command("python3");
    cmd.arg(root().join("conformance/reference/harness_v3.py"))
        .arg(&cases)
        .current_dir(root());
    let output = toolchains::run(&mut cmd, "running the reference's v3 harness")?;
    let got: Vec<&str> = output.lines().collect();
    let mut failures = 0;
    for (i, p) in probes.iter().enumerate() {
        let have = got.get(i).copied().unwrap_or("<missing>");
        if have != p.expected {
            failures += 1;
            if failures <= 20 {
                println!(
                    "FAIL reference [{}]\n  expected: {}\n  got:      {have}",
                    p.origin, p.expected
                );
            }
        }
    }
    if got.len() != probes.len() {
        failures += 1;
        println!(
            "FAIL reference: {} output lines for {} cases",
            got.len(),
            probes.len()
        );
    }
    Ok(failures)
}

pub fn main(args: &[String]) -> Result<()> {
    // Every language that implements v3 unless --lang names some (`--lang none`: the reference
    // harness alone, no toolchain needed).
    let languages: Vec<String> = match crate::flag(args, "--lang") {
        Some("none") => Vec::new(),
        Some(list) => list.split(',').map(str::to_string).collect(),
        None => implemented().iter().map(|l| l.to_string()).collect(),
    };
    let implemented = implemented();
    if let Some(l) = languages
        .iter()
        .find(|l| !implemented.contains(&l.as_str()))
    {
        bail!(
            "--lang {l}: no runtime of that name implements contract v3 (docs/contract.md; \
             implemented: {})",
            implemented.join(", ")
        );
    }
    let probes = probes()?;
    let work = root().join("target/xtask/conformance-v3");
    let mut failures = run_reference(&probes, &work).context("the reference harness")?;
    println!(
        "conformance-v3: the reference harness answers {} v3 lines{}",
        probes.len(),
        if failures == 0 {
            " as the vectors expect"
        } else {
            ""
        }
    );
    if !languages.is_empty() {
        let suite = Suite {
            name: "v3".into(),
            spec: root().join("specs/sandbox.yaml"),
            probes,
            options: BTreeMap::new(),
        };
        let results = run_suite(
            &suite,
            &languages,
            &TemplateSource::Embedded,
            &work,
            &languages,
            &mut |line| println!("{line}"),
        )?;
        failures += results.iter().map(|r| r.failures).sum::<usize>();
    }
    if failures > 0 {
        bail!("conformance-v3: {failures} failure(s)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contract_defines_every_anchor_in_order() {
        let text = std::fs::read_to_string(root().join("docs/contract.md")).unwrap();
        // Where each anchor is defined (`- **R6a** ...`): the decision's rules (R5a..S9) in the
        // rules' order, then the pure functions in their sections' order (H2, the precondition,
        // comes first here as the mutant files list it; its section follows the rules').
        let place = |a: &str| {
            text.find(&format!("\n- **{a}**"))
                .unwrap_or_else(|| panic!("docs/contract.md lists no `- **{a}**`"))
        };
        let rules: Vec<usize> = ANCHORS[1..].iter().map(|a| place(a)).collect();
        assert!(
            rules.windows(2).all(|w| w[0] < w[1]),
            "{:?} are not in the contract's order",
            &ANCHORS[1..]
        );
        assert!(place("H2") > place("S9"));
    }

    #[test]
    fn every_v3_vector_becomes_a_line_with_the_fields_of_its_kind() {
        let probes = probes().unwrap();
        assert!(probes.len() > 600, "{} probes", probes.len());
        for p in &probes {
            let fields = p.input.split('\t').count();
            let want = match p.input.split('\t').next().unwrap() {
                "D3" => 2 + 25 + 19,
                "K3" => 2 + 25 + 1,
                "Q" => 5,
                "SE" => 3,
                "F" => 4,
                "HP" => fields, // pairs of name and value, checked below
                other => panic!("{}: unknown line {other}", p.origin),
            };
            assert_eq!(fields, want, "{}: {}", p.origin, p.input);
            if p.input.starts_with("HP\t") {
                assert_eq!(fields % 2, 0, "{}", p.origin);
            }
        }
    }
}
