//! Builds each language's bench program (bench/<language>/) against the module retrygen renders
//! for one spec, with the language's real toolchain, and runs it.

use crate::harness;
use crate::toolchains::{self, run};
use anyhow::{anyhow, Context, Result};
use retrygen::emit::TemplateSource;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// How to run a built program; the mix file and the timing arguments are appended.
pub struct Program {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// Seconds the build took (render included).
    pub build_seconds: f64,
}

/// What one run printed.
#[derive(Debug, Clone)]
pub struct Measured {
    pub classify_ns: f64,
    pub scan_ns: f64,
    /// Bytes `classify` allocated per call (`classify_alloc_bytes`; `-` or absent: the language
    /// has no counter).
    pub classify_alloc_bytes: Option<f64>,
    pub classify_ops: Vec<i64>,
    pub classify_classes: Vec<char>,
    pub scan_ops: Vec<i64>,
}

/// Renders `spec` for `language` and builds the bench program in `work` (emptied first).
pub fn build(language: &str, spec: &Path, work: &Path, shared: &Path) -> Result<Program> {
    let started = Instant::now();
    if work.exists() {
        std::fs::remove_dir_all(work)?;
    }
    std::fs::create_dir_all(work)?;
    let module = harness::render(language, spec, work, &TemplateSource::Embedded)
        .with_context(|| format!("rendering {} for {language}", spec.display()))?;
    let toolchain =
        toolchains::toolchain(language).ok_or_else(|| anyhow!("no toolchain for {language}"))?;
    let argv = toolchain.bench_program(&module, work, shared)?;
    Ok(Program {
        argv,
        cwd: work.to_path_buf(),
        build_seconds: started.elapsed().as_secs_f64(),
    })
}

/// Runs a built program on `mix` with the timing parameters.
pub fn execute(
    program: &Program,
    mix: &Path,
    warm_ms: u64,
    min_ms: u64,
    samples: usize,
) -> Result<Measured> {
    let (first, rest) = program
        .argv
        .split_first()
        .ok_or_else(|| anyhow!("empty command"))?;
    let mut cmd: Command = toolchains::command(first);
    cmd.args(rest)
        .arg(mix)
        .arg(warm_ms.to_string())
        .arg(min_ms.to_string())
        .arg(samples.to_string())
        .current_dir(&program.cwd)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let out = run(&mut cmd, "running the bench program")?;
    parse(&out)
}

fn parse(out: &str) -> Result<Measured> {
    let field = |name: &str| -> Result<&str> {
        out.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(' ')))
            .or_else(|| {
                // An empty list prints the name alone.
                out.lines().find(|l| *l == name).map(|_| "")
            })
            .ok_or_else(|| anyhow!("the program printed no `{name}` line:\n{out}"))
    };
    let number = |name: &str| -> Result<f64> {
        field(name)?
            .trim()
            .parse()
            .with_context(|| format!("`{name}` is not a number"))
    };
    let list = |name: &str| -> Result<Vec<i64>> {
        let text = field(name)?.trim();
        if text.is_empty() {
            return Ok(Vec::new());
        }
        text.split(',')
            .map(|v| v.parse().with_context(|| format!("`{name}` holds {v:?}")))
            .collect()
    };
    Ok(Measured {
        classify_ns: number("classify_ns")?,
        scan_ns: number("scan_ns")?,
        classify_alloc_bytes: match field("classify_alloc_bytes").map(str::trim) {
            Err(_) | Ok("-") => None,
            Ok(text) => Some(
                text.parse()
                    .with_context(|| format!("`classify_alloc_bytes` is {text:?}"))?,
            ),
        },
        classify_ops: list("classify_ops")?,
        classify_classes: field("classify_classes")?.trim().chars().collect(),
        scan_ops: list("scan_ops")?,
    })
}
