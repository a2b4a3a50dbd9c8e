//! Adapter overhead: each language's HTTP client adapter against the bare client on a keep-alive
//! loopback request that succeeds at once, measured by the fault-matrix runner's overhead mode
//! (conformance/faults/README.md) against the fault server.

use crate::faults;
use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;

pub struct OverheadRow {
    pub run: String,
    pub requests: u64,
    pub bare_us: f64,
    pub adapter_us: f64,
    pub overhead_us: f64,
    pub overhead_pct: f64,
    pub allocated_bytes: Option<f64>,
    pub counter: String,
}

/// Builds every language's runner and runs each run's overhead mode with `rounds` rounds.
pub fn measure(languages: &[String], rounds: u64) -> Result<Vec<OverheadRow>> {
    let (server, mut env) = faults::start_server()?;
    env.push(("RETRYGEN_FAULT_BENCH", rounds.to_string()));
    let mut rows = Vec::new();
    for language in languages {
        eprintln!("bench: building the {language} adapter runner");
        let runs = faults::build_runs(language, "bench")
            .with_context(|| format!("building the {language} fault runner"))?;
        for run in &runs {
            eprintln!("bench: adapter overhead of {}", run.name);
            let lines = faults::run_lines(run, &faults::scenario_file(), &env)?;
            let bench = lines
                .iter()
                .find_map(|l| l.get("bench"))
                .ok_or_else(|| anyhow!("{}: printed no bench line", run.name))?;
            let number = |key: &str| -> Result<f64> {
                bench
                    .get(key)
                    .and_then(Value::as_f64)
                    .ok_or_else(|| anyhow!("{}: bench.{key} missing", run.name))
            };
            let row = OverheadRow {
                run: run.name.clone(),
                requests: number("requests")? as u64,
                bare_us: number("bare_us")?,
                adapter_us: number("adapter_us")?,
                overhead_us: number("overhead_us")?,
                overhead_pct: number("overhead_pct")?,
                allocated_bytes: bench
                    .get("allocated_bytes_per_request")
                    .and_then(Value::as_f64),
                counter: bench
                    .get("allocation_counter")
                    .and_then(Value::as_str)
                    .unwrap_or("none")
                    .to_string(),
            };
            if !(row.bare_us > 0.0 && row.adapter_us > 0.0) {
                bail!("{}: implausible timings {bench}", run.name);
            }
            rows.push(row);
        }
    }
    drop(server);
    Ok(rows)
}
