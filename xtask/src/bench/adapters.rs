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
    /// The language's most used retry layer on the same request, where the runner measures one
    /// (issue 20 item 7): the bench line's `peers`.
    pub peers: Vec<PeerRow>,
}

pub struct PeerRow {
    pub name: String,
    pub overhead_us: f64,
    pub overhead_pct: f64,
    pub allocated_bytes: Option<f64>,
}

/// Pins the calling thread, and so the threads and processes it starts afterwards, to CPU 0.
/// A loopback request is a handoff between the client's thread and the server's; across two
/// CPUs of a virtual machine the wake-up costs tens of microseconds and varies per connection,
/// which drowned the differences measured here (the bare client of a run could be 4x slower
/// than the adapted one). On one CPU both clients pay the same handoff.
fn pin_to_one_cpu() -> Result<()> {
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes inside it; pid 0 is this thread.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        bail!("sched_setaffinity: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// Builds every language's runner and runs each run's overhead mode with `rounds` rounds, the
/// server and the runner on one CPU.
pub fn measure(languages: &[String], rounds: u64) -> Result<Vec<OverheadRow>> {
    let mut runs = Vec::new();
    for language in languages {
        eprintln!("bench: building the {language} adapter runner");
        runs.extend(
            faults::build_runs(language, "bench")
                .with_context(|| format!("building the {language} fault runner"))?,
        );
    }
    // Pinned only now: the builds above use every CPU. This thread is the bench's last work.
    pin_to_one_cpu()?;
    let server = faults::start_server()?;
    let mut env = server.env("http1");
    env.push(("RETRYGEN_FAULT_BENCH", rounds.to_string()));
    let mut rows = Vec::new();
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
            peers: bench
                .get("peers")
                .and_then(Value::as_array)
                .map(|peers| {
                    peers
                        .iter()
                        .map(|p| PeerRow {
                            name: p["name"].as_str().unwrap_or("?").to_string(),
                            overhead_us: p["overhead_us"].as_f64().unwrap_or(f64::NAN),
                            overhead_pct: p["overhead_pct"].as_f64().unwrap_or(f64::NAN),
                            allocated_bytes: p["allocated_bytes_per_request"].as_f64(),
                        })
                        .collect()
                })
                .unwrap_or_default(),
        };
        if !(row.bare_us > 0.0 && row.adapter_us > 0.0) {
            bail!("{}: implausible timings {bench}", run.name);
        }
        rows.push(row);
    }
    drop(server);
    Ok(rows)
}
