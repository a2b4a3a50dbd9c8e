//! Builds each language's bench program (bench/<language>/) against the module retrygen renders
//! for one spec, with the language's real toolchain, and runs it.

use crate::harness;
use crate::toolchains::{self, command, root, run, Module};
use anyhow::{anyhow, bail, Context, Result};
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
    pub classify_ops: Vec<i64>,
    pub classify_classes: Vec<char>,
    pub scan_ops: Vec<i64>,
}

fn copy_sources(language: &str, work: &Path) -> Result<()> {
    let src = root().join("bench").join(language);
    for entry in std::fs::read_dir(&src).with_context(|| format!("reading {}", src.display()))? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            std::fs::copy(entry.path(), work.join(entry.file_name()))?;
        }
    }
    Ok(())
}

fn lossy(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// The cargo project of the Rust program. Every spec's build shares one target folder, so the
/// `regex` crate is compiled once; each gets its own package name, so that cargo never takes one
/// spec's program for another's (a shared name gives the same unit hash, and cargo's mtime check
/// then sees sources copied while another build ran as already built).
fn rust_manifest(name: &str) -> String {
    format!(
        r#"[package]
name = "{name}"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
regex = "1"

[profile.release]
codegen-units = 1

# Not a member of the retrygen workspace this folder sits in.
[workspace]
"#
    )
}

fn build_rust(
    module: &Module,
    work: &Path,
    shared_target: &Path,
    name: &str,
) -> Result<Vec<String>> {
    let src = work.join("src");
    let folder = src.join("retry_policy");
    std::fs::create_dir_all(&folder)?;
    std::fs::write(work.join("Cargo.toml"), rust_manifest(name))?;
    std::fs::copy(root().join("bench/rust/main.rs"), src.join("main.rs"))?;
    // The module folder: the tables (`mod.rs`) and the runtime.
    for file in &module.files {
        std::fs::copy(
            file,
            folder.join(file.file_name().context("module file name")?),
        )?;
    }
    let cargo = |offline: bool| {
        let mut cmd = command("cargo");
        cmd.current_dir(work)
            .env("CARGO_TARGET_DIR", shared_target)
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("CARGO_BUILD_RUSTFLAGS")
            .args(["build", "--release", "--quiet"]);
        if offline {
            cmd.arg("--offline");
        }
        cmd
    };
    // One Rust build at a time: they share the target folder and the binary's name.
    static SHARED_TARGET: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = SHARED_TARGET.lock().unwrap_or_else(|e| e.into_inner());
    // The regex crate is normally in the local registry already (xtask depends on it).
    if run(&mut cargo(true), "cargo build (Rust bench, offline)").is_err() {
        run(&mut cargo(false), "cargo build (Rust bench)")?;
    }
    let binary = work.join("bench");
    std::fs::copy(shared_target.join("release").join(name), &binary)?;
    Ok(vec![lossy(&binary)])
}

fn build_typescript(module: &Module, work: &Path) -> Result<Vec<String>> {
    copy_sources("typescript", work)?;
    for file in &module.files {
        std::fs::copy(file, work.join(file.file_name().context("module name")?))?;
    }
    let types = root().join(".cache/toolchains/node/node_modules/@types");
    run(
        command("tsc")
            .arg("-p")
            .arg(work)
            .arg("--typeRoots")
            .arg(&types)
            .current_dir(work),
        "tsc (TypeScript bench)",
    )?;
    Ok(vec!["node".into(), lossy(&work.join("out/bench.js"))])
}

fn build_python(module: &Module, work: &Path) -> Result<Vec<String>> {
    copy_sources("python", work)?;
    // The target is a package folder, imported by bench.py as `retry_policy`.
    let package = work.join("retry_policy");
    std::fs::create_dir_all(&package)?;
    for file in &module.files {
        std::fs::copy(file, package.join(file.file_name().context("module name")?))?;
    }
    // Compile once here so that no run pays for it.
    run(
        command("python3")
            .args(["-m", "compileall", "-q", "."])
            .current_dir(work),
        "python3 -m compileall (Python bench)",
    )?;
    Ok(vec!["python3".into(), lossy(&work.join("bench.py"))])
}

fn build_go(module: &Module, work: &Path) -> Result<Vec<String>> {
    copy_sources("go", work)?;
    let package = work.join("retrypolicy");
    std::fs::create_dir_all(&package)?;
    for file in &module.files {
        std::fs::copy(
            file,
            package.join(file.file_name().context("module file name")?),
        )?;
    }
    run(
        command("go")
            .current_dir(work)
            .env("GOTOOLCHAIN", "local")
            .env("GOPROXY", "off")
            .env("GOWORK", "off")
            .env("GOFLAGS", "")
            .env("CGO_ENABLED", "0")
            .args(["build", "-trimpath", "-o", "bench", "."]),
        "go build (Go bench)",
    )?;
    Ok(vec![lossy(&work.join("bench"))])
}

fn kotlin_stdlib() -> Result<PathBuf> {
    let file = root().join(".cache/toolchains/kotlin-classpath");
    let text = std::fs::read_to_string(&file).with_context(|| {
        format!(
            "reading {}; run `bash scripts/bootstrap-toolchains.sh`",
            file.display()
        )
    })?;
    Ok(PathBuf::from(text.trim()))
}

fn build_kotlin(module: &Module, work: &Path) -> Result<Vec<String>> {
    copy_sources("kotlin", work)?;
    let mut sources = Vec::new();
    for file in &module.files {
        let copy = work.join(file.file_name().context("module name")?);
        std::fs::copy(file, &copy)?;
        sources.push(copy);
    }
    let classes = work.join("classes");
    run(
        command("kotlinc")
            .arg("-nowarn")
            .arg("-d")
            .arg(&classes)
            .args(&sources)
            .arg(work.join("Bench.kt"))
            .current_dir(work),
        "kotlinc (Kotlin bench)",
    )?;
    let classpath = format!("{}:{}", classes.display(), kotlin_stdlib()?.display());
    Ok(vec![
        "java".into(),
        "-Xss16m".into(),
        "-cp".into(),
        classpath,
        "BenchKt".into(),
    ])
}

fn build_csharp(module: &Module, work: &Path) -> Result<Vec<String>> {
    copy_sources("csharp", work)?;
    let mut sources = Vec::new();
    for file in &module.files {
        let copy = work.join(file.file_name().context("module file name")?);
        std::fs::copy(file, &copy)?;
        sources.push(copy);
    }
    sources.push(work.join("Bench.cs"));
    let exe = work.join("bench.exe");
    run(
        command("mcs")
            .args([
                "-langversion:7.2",
                "-optimize+",
                "-nowarn:1591",
                "-r:System.dll",
                "-target:exe",
            ])
            .arg(format!("-out:{}", exe.display()))
            .args(&sources)
            .current_dir(work),
        "mcs (C# bench)",
    )?;
    Ok(vec!["mono".into(), lossy(&exe)])
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
    let argv = match language {
        "rust" => {
            // The name of the spec's folder (a slug) makes the package name unique.
            let spec_dir = work
                .parent()
                .and_then(Path::file_name)
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let name: String = format!("retrygen-bench-{spec_dir}")
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect();
            build_rust(&module, work, &shared.join("cargo-target"), &name)?
        }
        "typescript" => build_typescript(&module, work)?,
        "python" => build_python(&module, work)?,
        "go" => build_go(&module, work)?,
        "kotlin" => build_kotlin(&module, work)?,
        "csharp" => build_csharp(&module, work)?,
        other => bail!("no bench program for {other}"),
    };
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
        classify_ops: list("classify_ops")?,
        classify_classes: field("classify_classes")?.trim().chars().collect(),
        scan_ops: list("scan_ops")?,
    })
}
