//! Generation timing: the whole `retrygen generate` process for all six languages against the
//! parse floor (a process that only reads the same document with the same reader), the
//! in-process breakdown, peak memory, `retrygen check`, and a `perf` profile.

use crate::toolchains::root;
use anyhow::{bail, Context, Result};
use retrygen::emit::{self, TemplateSource};
use retrygen::model::{self, ModelOptions};
use retrygen::read::{self, Limits};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// Every language of the backend registry.
pub fn languages() -> Vec<&'static str> {
    emit::BACKENDS.iter().map(|b| b.name()).collect()
}

pub struct GenSpec {
    pub label: String,
    pub path: PathBuf,
    /// Bytes of every file the document consists of.
    pub input_bytes: u64,
    pub input_note: String,
    /// One of the documents the targets name (Stripe, Kubernetes, DigitalOcean).
    pub judged: bool,
}

pub struct Phases {
    pub read_ms: f64,
    pub model_ms: f64,
    /// One per language of [`languages`], each rendered alone.
    pub render_ms: Vec<f64>,
}

impl Phases {
    /// The six renders one after the other, as `generate` renders them.
    pub fn render_total(&self) -> f64 {
        self.render_ms.iter().sum()
    }
    /// The stages as `generate` runs them (wall-clock).
    pub fn total(&self) -> f64 {
        self.read_ms + self.model_ms + self.render_total()
    }
}

pub struct GenResult {
    pub spec: GenSpec,
    pub operations: usize,
    pub generate: Vec<Run>,
    pub floor: Vec<Run>,
    pub check: Vec<Run>,
    /// `generate` again on its own output: nothing to write.
    pub unchanged: Vec<Run>,
    pub generate_rss_kb: u64,
    pub floor_rss_kb: u64,
    pub check_rss_kb: u64,
    pub output_bytes: u64,
    pub phases: Phases,
    /// The external floors that apply (`external_floors_for`), each with its runs and peak RSS.
    pub externals: Vec<(&'static str, Vec<Run>, u64)>,
}

pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// `cargo xtask bench --floor SPEC`: only what "parsing" means here, `retrygen::read::read`
/// (YAML/JSON parse, `$ref` resolution, extraction of the operations), in its own process.
pub fn floor(spec: &Path) -> Result<()> {
    match read::read(spec, &Limits::default()) {
        Ok((raw, _)) => {
            println!("{} operations", raw.operations.len());
            Ok(())
        }
        Err(d) => bail!("{}: {d}", spec.display()),
    }
}

/// The external floors: what mainstream parsers take to read the same bytes, so the reader is
/// judged against them and not only against itself.
pub const EXTERNAL_FLOORS: [(&str, &str); 3] = [
    ("serde-value", "serde_json::from_slice::<serde_json::Value>"),
    (
        "serde-ignored",
        "serde_json::from_slice::<serde::de::IgnoredAny>",
    ),
    ("yaml-events", "yaml-rust2's event parser, no tree"),
];

/// The external floors that apply to a document: serde_json's two for JSON, yaml-rust2's
/// events for YAML.
pub fn external_floors_for(spec: &Path) -> &'static [(&'static str, &'static str)] {
    match spec.extension().and_then(|e| e.to_str()) {
        Some("json") => &EXTERNAL_FLOORS[..2],
        Some("yaml" | "yml") => &EXTERNAL_FLOORS[2..],
        _ => &[],
    }
}

/// `cargo xtask bench --floor-external KIND SPEC`: one external parser over the document's bytes
/// in its own process, as `--floor` runs retrygen's reader.
pub fn external_floor(kind: &str, spec: &Path) -> Result<()> {
    let bytes = std::fs::read(spec).with_context(|| format!("reading {}", spec.display()))?;
    match kind {
        "serde-value" => {
            let value: serde_json::Value = serde_json::from_slice(&bytes)?;
            println!("{}", value.as_object().map_or(0, serde_json::Map::len));
        }
        "serde-ignored" => {
            let _: serde::de::IgnoredAny = serde_json::from_slice(&bytes)?;
        }
        "yaml-events" => {
            struct Count(usize);
            impl yaml_rust2::parser::EventReceiver for Count {
                fn on_event(&mut self, _: yaml_rust2::Event) {
                    self.0 += 1;
                }
            }
            let text = std::str::from_utf8(&bytes)?;
            let mut count = Count(0);
            yaml_rust2::parser::Parser::new_from_str(text)
                .load(&mut count, false)
                .map_err(|e| anyhow::anyhow!("{}: {e}", spec.display()))?;
            println!("{} events", count.0);
        }
        other => bail!("unknown external floor {other:?}"),
    }
    Ok(())
}

fn config_text(spec: &Path, out: &Path) -> String {
    let mut text = format!(
        "# Written by `cargo xtask bench`.\n[[job]]\nspec = {:?}\n",
        spec.to_string_lossy()
    );
    for language in languages() {
        text.push_str(&format!(
            "\n[[job.target]]\nlanguage = \"{language}\"\nout = {:?}\n",
            format!("{}/{language}/", out.to_string_lossy())
        ));
    }
    text
}

/// CPU time (user + system) of all waited-for children so far, in milliseconds, from
/// `getrusage(RUSAGE_CHILDREN)`: on a shared machine it moves far less than wall-clock time.
fn children_cpu_ms() -> f64 {
    extern "C" {
        fn getrusage(who: i32, usage: *mut i64) -> i32;
    }
    const RUSAGE_CHILDREN: i32 = -1;
    // struct rusage on 64-bit Linux: two struct timeval {i64 sec, i64 usec} and 14 longs;
    // the buffer is larger than that.
    let mut usage = [0i64; 32];
    // SAFETY: the buffer outlives the call and is larger than struct rusage.
    let rc = unsafe { getrusage(RUSAGE_CHILDREN, usage.as_mut_ptr()) };
    if rc != 0 {
        return f64::NAN;
    }
    let ms = |sec: i64, usec: i64| sec as f64 * 1000.0 + usec as f64 / 1000.0;
    ms(usage[0], usage[1]) + ms(usage[2], usage[3])
}

/// One run of a process: wall-clock and CPU milliseconds.
#[derive(Debug, Clone, Copy)]
pub struct Run {
    pub wall_ms: f64,
    pub cpu_ms: f64,
}

/// Runs `program args` once, output discarded; fails on a non-zero exit.
fn time_process(program: &Path, args: &[&str]) -> Result<Run> {
    let cpu_before = children_cpu_ms();
    let started = Instant::now();
    let status = Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .with_context(|| format!("starting {}", program.display()))?;
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    let cpu_ms = children_cpu_ms() - cpu_before;
    if !status.success() {
        bail!("{} {args:?} failed ({status})", program.display());
    }
    Ok(Run { wall_ms, cpu_ms })
}

pub fn wall(runs: &[Run]) -> f64 {
    median(&runs.iter().map(|r| r.wall_ms).collect::<Vec<_>>())
}

pub fn cpu(runs: &[Run]) -> f64 {
    median(&runs.iter().map(|r| r.cpu_ms).collect::<Vec<_>>())
}

/// Peak resident set size in KiB of one run, from GNU time.
fn peak_rss_kb(program: &Path, args: &[&str], work: &Path) -> Result<u64> {
    let report = work.join("time.txt");
    let status = Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&report)
        .arg(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .context("starting /usr/bin/time (GNU time)")?;
    if !status.success() {
        bail!("{} {args:?} under /usr/bin/time failed", program.display());
    }
    let text = std::fs::read_to_string(&report)?;
    text.lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .with_context(|| format!("unexpected GNU time output {text:?}"))
}

fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                total += dir_bytes(&p);
            } else if let Ok(m) = p.metadata() {
                total += m.len();
            }
        }
    }
    total
}

/// In-process medians of each stage, after one warm-up round.
fn phases(spec: &Path, reps: usize) -> Result<Phases> {
    let root_file = spec.to_string_lossy().replace('\\', "/");
    let mut read_ms = Vec::new();
    let mut model_ms = Vec::new();
    let mut render_ms: Vec<Vec<f64>> = vec![Vec::new(); languages().len()];
    let mut options = Vec::new();
    for language in languages() {
        let backend = emit::backend(language).context("backend")?;
        options.push((
            backend,
            emit::resolve_options(backend, &Default::default())?,
        ));
    }
    for rep in 0..=reps {
        let t = Instant::now();
        let (raw, _) = read::read(spec, &Limits::default()).map_err(|d| anyhow::anyhow!("{d}"))?;
        let t_read = t.elapsed().as_secs_f64() * 1000.0;
        let t = Instant::now();
        let (api, _) = model::build(&raw, &root_file, &ModelOptions::default())
            .map_err(|d| anyhow::anyhow!("{d}"))?;
        let t_model = t.elapsed().as_secs_f64() * 1000.0;
        let mut t_render = Vec::new();
        for (backend, options) in &options {
            let t = Instant::now();
            let text = emit::render(&api, *backend, options, &[], &TemplateSource::Embedded)?;
            t_render.push(t.elapsed().as_secs_f64() * 1000.0);
            std::hint::black_box(text);
        }
        if rep > 0 {
            read_ms.push(t_read);
            model_ms.push(t_model);
            for (i, t) in t_render.into_iter().enumerate() {
                render_ms[i].push(t);
            }
        }
    }
    Ok(Phases {
        read_ms: median(&read_ms),
        model_ms: median(&model_ms),
        render_ms: render_ms.iter().map(|v| median(v)).collect(),
    })
}

/// Measures one spec. `xtask` is this program's release binary (for the floor).
pub fn measure(
    spec: GenSpec,
    retrygen: &Path,
    xtask: &Path,
    work: &Path,
    reps: usize,
) -> Result<GenResult> {
    std::fs::create_dir_all(work)?;
    let out = work.join("out");
    let config = work.join("retrygen.toml");
    std::fs::write(&config, config_text(&spec.path, &out))?;
    let config_s = config.to_string_lossy().into_owned();
    let spec_s = spec.path.to_string_lossy().into_owned();
    let generate = ["generate", "--config", config_s.as_str()];
    let check = ["check", "--config", config_s.as_str()];
    let floor_args = ["bench", "--floor", spec_s.as_str()];
    let clean = || -> Result<()> {
        if out.exists() {
            std::fs::remove_dir_all(&out)?;
        }
        Ok(())
    };
    // Warm-up: page cache, and a first check that every command works.
    clean()?;
    time_process(retrygen, &generate)?;
    time_process(retrygen, &check)?;
    time_process(xtask, &floor_args)?;
    let (mut generate_runs, mut floor_runs, mut check_runs) = (Vec::new(), Vec::new(), Vec::new());
    let mut unchanged_runs = Vec::new();
    // External floors only for single-file documents: they parse one file.
    let single_file = std::fs::metadata(&spec.path).is_ok_and(|m| m.len() == spec.input_bytes);
    let external_kinds: Vec<&'static str> = if single_file {
        external_floors_for(&spec.path)
            .iter()
            .map(|(k, _)| *k)
            .collect()
    } else {
        Vec::new()
    };
    let external_args = |kind: &'static str| ["bench", "--floor-external", kind, spec_s.as_str()];
    for kind in &external_kinds {
        time_process(xtask, &external_args(kind))?;
    }
    let mut external_runs: Vec<Vec<Run>> = vec![Vec::new(); external_kinds.len()];
    for _ in 0..reps {
        for (kind, runs) in external_kinds.iter().zip(&mut external_runs) {
            runs.push(time_process(xtask, &external_args(kind))?);
        }
        floor_runs.push(time_process(xtask, &floor_args)?);
        clean()?;
        generate_runs.push(time_process(retrygen, &generate)?);
        check_runs.push(time_process(retrygen, &check)?);
        unchanged_runs.push(time_process(retrygen, &generate)?);
    }
    let output_bytes = dir_bytes(&out);
    clean()?;
    let generate_rss_kb = peak_rss_kb(retrygen, &generate, work)?;
    let check_rss_kb = peak_rss_kb(retrygen, &check, work)?;
    let floor_rss_kb = peak_rss_kb(xtask, &floor_args, work)?;
    let mut externals = Vec::new();
    for (kind, runs) in external_kinds.iter().zip(external_runs) {
        externals.push((*kind, runs, peak_rss_kb(xtask, &external_args(kind), work)?));
    }
    let (api, _) = retrygen::load_api(&spec.path, &ModelOptions::default())
        .map_err(|d| anyhow::anyhow!("{d}"))?;
    let phases = phases(&spec.path, reps)?;
    Ok(GenResult {
        operations: api.operations.len(),
        spec,
        generate: generate_runs,
        floor: floor_runs,
        check: check_runs,
        unchanged: unchanged_runs,
        generate_rss_kb,
        floor_rss_kb,
        check_rss_kb,
        output_bytes,
        phases,
        externals,
    })
}

/// `retrygen --version`: process start and exit alone.
pub fn process_start(retrygen: &Path, reps: usize) -> Result<Vec<Run>> {
    time_process(retrygen, &["--version"])?;
    (0..reps)
        .map(|_| time_process(retrygen, &["--version"]))
        .collect()
}

/// Input size of a document: the file, or for a multi-file document every YAML/JSON file under
/// its root's folder.
pub fn input_size(path: &Path, multi_file: bool) -> (u64, String) {
    if !multi_file {
        let bytes = path.metadata().map(|m| m.len()).unwrap_or(0);
        return (bytes, "one file".into());
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut files = 0;
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        if let Ok(entries) = std::fs::read_dir(&d) {
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p
                    .extension()
                    .is_some_and(|x| x == "yaml" || x == "yml" || x == "json")
                {
                    files += 1;
                    total += p.metadata().map(|m| m.len()).unwrap_or(0);
                }
            }
        }
    }
    (total, format!("{files} files"))
}

/// One `perf record` of generation and the summary of its report: inclusive shares of the
/// pipeline's stages and the top self-time symbols.
pub struct Profile {
    pub command: String,
    pub samples: String,
    pub stages: Vec<(String, f64)>,
    pub top_self: Vec<(f64, String)>,
}

const STAGES: [(&str, &str); 9] = [
    (
        "retrygen::facade::generate",
        "plan (everything but writing)",
    ),
    ("retrygen::read::read", "read (parse + $ref resolution)"),
    ("retrygen::read::json::load", "  JSON parser"),
    ("retrygen::read::load::load", "  YAML parser"),
    ("retrygen::model::build", "model"),
    ("retrygen::emit::render", "render (six languages)"),
    (
        "minijinja::environment::Environment::add_template_owned",
        "  template compile",
    ),
    ("retrygen::write::write_all", "write"),
    ("retrygen::write::diff", "check's diff"),
];

pub fn profile(retrygen: &Path, config: &Path, work: &Path) -> Result<Profile> {
    let data = work.join("perf.data");
    let record = Command::new("perf")
        .args(["record", "-F", "4999", "--call-graph", "dwarf", "-o"])
        .arg(&data)
        .arg("--")
        .arg(retrygen)
        .args(["generate", "--config"])
        .arg(config)
        .stdout(Stdio::null())
        .output()
        .context("starting perf")?;
    if !record.status.success() {
        bail!(
            "perf record failed: {}",
            String::from_utf8_lossy(&record.stderr)
        );
    }
    let stderr = String::from_utf8_lossy(&record.stderr);
    let samples = stderr
        .lines()
        .find_map(|l| {
            let at = l.find('(')?;
            let end = l[at..].find(" samples")?;
            Some(format!("{} samples at 4999 Hz", &l[at + 1..at + end]))
        })
        .unwrap_or_else(|| "samples unknown".into());
    let report = |extra: &[&str]| -> Result<String> {
        let out = Command::new("perf")
            .arg("report")
            .arg("-i")
            .arg(&data)
            .args(["--stdio", "--sort", "symbol", "-g", "none"])
            .args(extra)
            .stderr(Stdio::null())
            .output()
            .context("starting perf report")?;
        if !out.status.success() {
            bail!("perf report failed");
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let children = report(&["--children", "--percent-limit", "0.5"])?;
    let mut stages = Vec::new();
    for (symbol, label) in STAGES {
        let share = children
            .lines()
            .filter(|l| !l.starts_with('#'))
            .find_map(|l| {
                let fields: Vec<&str> = l.split_whitespace().collect();
                (fields.len() >= 4 && fields[3] == symbol)
                    .then(|| fields[0].trim_end_matches('%').parse::<f64>().ok())
                    .flatten()
            })
            .unwrap_or(0.0);
        stages.push((label.to_string(), share));
    }
    let selfs = report(&["--no-children", "--percent-limit", "1.5"])?;
    let top_self = selfs
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains('%'))
        .filter_map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            let share = fields.first()?.trim_end_matches('%').parse::<f64>().ok()?;
            let at = l.find("] ")? + 2;
            let name = l[at..].trim();
            let name = name.strip_suffix('-').unwrap_or(name).trim();
            let name = name.strip_suffix('-').unwrap_or(name).trim();
            Some((share, name.to_string()))
        })
        .take(15)
        .collect();
    Ok(Profile {
        command: format!(
            "perf record -F 4999 --call-graph dwarf -- target/release/retrygen generate --config {}; perf report --children|--no-children --sort symbol -g none",
            config
                .strip_prefix(root())
                .unwrap_or(config)
                .display()
        ),
        samples,
        stages,
        top_self,
    })
}
