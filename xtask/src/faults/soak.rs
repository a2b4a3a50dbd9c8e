//! `cargo xtask faults --soak N --seed S`: the randomized fault soak. Every run sends N requests,
//! drawn by the seed across the matrix spec's operations, through ONE client with its adapter;
//! the server answers each arrival with a fault drawn from its repertoire by the same seed. For
//! every request the two invariants of the matrix must hold, and a keyed request's replays must
//! carry the key of its first arrival. The runner reports its open descriptors and memory before
//! and after, which must not grow beyond a small bound.

use super::{invariants, protocol_problems, run_name, Server};
use crate::toolchains::FaultRun;
use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The attempt timeout the soak's client uses: shorter than the server's stall fault.
const ATTEMPT_TIMEOUT_MS: u64 = 1500;
/// Descriptors a runner may hold more at the end than at the start (pooled connections come and
/// go with the faults).
const FD_GROWTH_BOUND: i64 = 16;
/// Resident memory a runner may hold more at the end than at the start, in KiB.
const RSS_GROWTH_BOUND_KB: i64 = 64 * 1024;

/// splitmix64: a seeded, dependency-free generator whose sequence is the same on every machine.
pub struct SplitMix(u64);

impl SplitMix {
    pub fn new(seed: u64) -> SplitMix {
        SplitMix(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// One request of the plan and what the soak knows of its operation.
struct Planned {
    id: String,
    method: &'static str,
    path: String,
    body: Option<&'static str>,
    /// The operation takes an idempotency key the adapter mints.
    keyed: bool,
}

/// The operations of conformance/faults/spec.yaml the soak draws from (the event stream is left
/// out: its faults are the matrix's own scenarios).
fn draw(rng: &mut SplitMix, i: usize) -> Planned {
    let sandbox = format!("sb-{}", rng.below(50));
    let (method, path, body, keyed) = match rng.below(7) {
        0 => ("GET", format!("/sandboxes/{sandbox}"), None, false),
        1 => (
            "POST",
            "/sandboxes".to_string(),
            Some("{\"image\":\"base\"}"),
            false,
        ),
        2 => (
            "PUT",
            format!("/sandboxes/{sandbox}"),
            Some("{\"cpu\":2}"),
            false,
        ),
        3 => ("DELETE", format!("/sandboxes/{sandbox}"), None, false),
        4 => (
            "POST",
            format!("/sandboxes/{sandbox}/snapshots"),
            Some("{\"name\":\"s\"}"),
            true,
        ),
        5 => (
            "POST",
            format!("/sandboxes/{sandbox}/exec"),
            Some("ls"),
            false,
        ),
        _ => ("GET", "/health".to_string(), None, false),
    };
    Planned {
        id: format!("soak-{i}"),
        method,
        path,
        body,
        keyed,
    }
}

fn plan(requests: usize, seed: u64) -> Vec<Planned> {
    let mut rng = SplitMix::new(seed);
    (0..requests).map(|i| draw(&mut rng, i)).collect()
}

fn write_plan(planned: &[Planned]) -> Result<PathBuf> {
    let requests: Vec<Value> = planned
        .iter()
        .map(|p| {
            json!({
                "id": p.id,
                "method": p.method,
                "path": p.path,
                "headers": {},
                "body": p.body.map(|text| json!({"kind": "bytes", "text": text})),
            })
        })
        .collect();
    // Per process, as the matrix's scenario subsets: concurrent soaks must not share a plan.
    let path = crate::toolchains::root().join(format!(
        "target/faults/soak-plan-{}.json",
        std::process::id()
    ));
    std::fs::create_dir_all(path.parent().expect("has a parent"))?;
    std::fs::write(
        &path,
        serde_json::to_string_pretty(
            &json!({"attempt_timeout_ms": ATTEMPT_TIMEOUT_MS, "requests": requests}),
        )?,
    )?;
    Ok(path)
}

/// What one run over one protocol did in the soak.
pub struct SoakReport {
    pub run: String,
    pub seed: u64,
    pub requests: usize,
    pub arrivals: usize,
    pub refused: usize,
    pub faults: BTreeMap<String, usize>,
    pub violations: Vec<String>,
    pub start: (i64, i64),
    pub end: (i64, i64),
}

fn resources(line: &Value, key: &str) -> Option<(i64, i64)> {
    let v = line.get(key)?;
    Some((v.get("fds")?.as_i64()?, v.get("rss_kb")?.as_i64()?))
}

/// Runs the soak through `run` over `protocol` and judges it.
pub fn soak_run(
    run: &FaultRun,
    protocol: &str,
    server: &Server,
    requests: usize,
    seed: u64,
) -> Result<SoakReport> {
    let planned = plan(requests, seed);
    let plan_path = write_plan(&planned)?;
    let name = format!("{}#soak{seed}", run_name(&run.name, protocol));
    let mut env = server.env(protocol);
    env.push(("RETRYGEN_FAULT_SOAK", plan_path.display().to_string()));
    let _remove = super::RemoveOnDrop(vec![plan_path.clone()]);
    let lines = run_soak_process(run, &name, &plan_path, &env)?;
    let start = lines
        .iter()
        .find_map(|l| resources(l, "soak_start"))
        .ok_or_else(|| anyhow!("{name}: no soak_start line"))?;
    let end = lines
        .iter()
        .find_map(|l| resources(l, "soak_end"))
        .ok_or_else(|| anyhow!("{name}: no soak_end line"))?;
    let by_id: BTreeMap<&str, &Value> = lines
        .iter()
        .filter_map(|l| Some((l.get("id")?.as_str()?, l)))
        .collect();
    let mut report = SoakReport {
        run: name.clone(),
        seed,
        requests: planned.len(),
        arrivals: 0,
        refused: 0,
        faults: BTreeMap::new(),
        violations: Vec::new(),
        start,
        end,
    };
    for p in &planned {
        let arrivals = server.arrivals(&name, &p.id);
        report.arrivals += arrivals.len();
        for a in &arrivals {
            *report
                .faults
                .entry(a.fault.clone().unwrap_or_else(|| "unknown".into()))
                .or_default() += 1;
        }
        for refused in server.refused_faults(&name, &p.id) {
            report.refused += 1;
            *report.faults.entry(refused).or_default() += 1;
        }
        let Some(line) = by_id.get(p.id.as_str()) else {
            report.violations.push(format!("{}: no line printed", p.id));
            continue;
        };
        let mut problems = invariants(line, arrivals.len());
        problems.extend(protocol_problems(&arrivals, protocol));
        if line.get("error").and_then(Value::as_str) == Some("mismatch") {
            problems.push("the call's result disagrees with the finish event".into());
        }
        for (i, a) in arrivals.iter().enumerate() {
            if a.method != p.method || a.target != format!("/v1{}", p.path) {
                problems.push(format!("arrival {i}: {} {}", a.method, a.target));
            }
            // A `close_after_head` arrival's body was never read: nothing to compare.
            if a.body_read && a.body != p.body.unwrap_or("").as_bytes() {
                problems.push(format!("arrival {i}: another body"));
            }
        }
        // A replay carries the key of the first arrival; a keyed operation always carries one.
        if let Some(first) = arrivals.first() {
            if p.keyed && first.keys.len() != 1 {
                problems.push(format!("keyed request arrived with keys {:?}", first.keys));
            }
            for (i, a) in arrivals.iter().enumerate().skip(1) {
                if a.keys != first.keys {
                    problems.push(format!(
                        "arrival {i}: key {:?}, first was {:?}",
                        a.keys, first.keys
                    ));
                }
            }
        }
        for problem in problems {
            report.violations.push(format!("{}: {problem}", p.id));
        }
    }
    let (fd_growth, rss_growth) = (end.0 - start.0, end.1 - start.1);
    if fd_growth > FD_GROWTH_BOUND {
        report.violations.push(format!(
            "open descriptors grew from {} to {} (bound +{FD_GROWTH_BOUND})",
            start.0, end.0
        ));
    }
    if rss_growth > RSS_GROWTH_BOUND_KB {
        report.violations.push(format!(
            "resident memory grew from {} KiB to {} KiB (bound +{RSS_GROWTH_BOUND_KB} KiB)",
            start.1, end.1
        ));
    }
    Ok(report)
}

fn run_soak_process(
    run: &FaultRun,
    name: &str,
    plan: &Path,
    env: &[(&str, String)],
) -> Result<Vec<Value>> {
    let (lines, _) = super::run_process(run, name, plan, env)?;
    lines
        .iter()
        .map(|line| {
            serde_json::from_str(line).with_context(|| format!("{name}: not a JSON line: {line}"))
        })
        .collect()
}

/// The soak's table, in Markdown (it goes into docs/adapters.md as printed).
pub fn table(reports: &[SoakReport], requests: usize, seeds: &[u64]) -> String {
    let mut kinds: Vec<&String> = reports.iter().flat_map(|r| r.faults.keys()).collect();
    kinds.sort();
    kinds.dedup();
    let mut out = format!(
        "Soak: {requests} requests per run and seed, seeds {seeds:?}, attempt timeout {ATTEMPT_TIMEOUT_MS} ms\n\n"
    );
    out.push_str("| run | seed | requests | arrivals | refused unprocessed | violations | fds before -> after | RSS KiB before -> after |\n");
    out.push_str("|---|---|---|---|---|---|---|---|\n");
    for r in reports {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} -> {} | {} -> {} |\n",
            r.run,
            r.seed,
            r.requests,
            r.arrivals,
            r.refused,
            r.violations.len(),
            r.start.0,
            r.end.0,
            r.start.1,
            r.end.1
        ));
    }
    out.push_str("\nFaults drawn, by kind (arrivals and refused streams):\n\n| run |");
    for k in &kinds {
        out.push_str(&format!(" {k} |"));
    }
    out.push_str("\n|---|");
    for _ in &kinds {
        out.push_str("---|");
    }
    out.push('\n');
    for r in reports {
        out.push_str(&format!("| {} {} |", r.run, r.seed));
        for k in &kinds {
            out.push_str(&format!(" {} |", r.faults.get(*k).copied().unwrap_or(0)));
        }
        out.push('\n');
    }
    out
}

/// Fails when any run broke an invariant or grew.
pub fn verdict(reports: &[SoakReport]) -> Result<()> {
    let broken: Vec<&SoakReport> = reports
        .iter()
        .filter(|r| !r.violations.is_empty())
        .collect();
    if broken.is_empty() {
        return Ok(());
    }
    for r in &broken {
        eprintln!("soak: {}: {} violation(s)", r.run, r.violations.len());
        for v in r.violations.iter().take(20) {
            eprintln!("    {v}");
        }
    }
    bail!("the soak found violations in {} run(s)", broken.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan depends on the seed alone: the same seed gives the same requests on every
    /// machine, another seed others.
    #[test]
    fn the_plan_is_the_seeds() {
        let a: Vec<(String, String)> = plan(50, 7)
            .into_iter()
            .map(|p| (p.method.to_string(), p.path))
            .collect();
        let b: Vec<(String, String)> = plan(50, 7)
            .into_iter()
            .map(|p| (p.method.to_string(), p.path))
            .collect();
        let c: Vec<(String, String)> = plan(50, 8)
            .into_iter()
            .map(|p| (p.method.to_string(), p.path))
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        // splitmix64's published first output for seed 0.
        assert_eq!(SplitMix::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
    }
}
