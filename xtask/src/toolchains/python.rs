//! Python: a target is a package folder (`__init__.py` tables + `_runtime.py`, Python 3.10+).
//! `black --check`, `ruff check` and `mypy --strict` over the package, with the configuration of
//! runtime/python/pyproject.toml (the same file checks the runtime project itself), then an import
//! with warnings as errors that also proves no regular expression is compiled at import. The
//! harness is a plain script run by `python3` beside the package, imported as `retry_policy`.
//!
//! The tools live in `.cache/toolchains/python`, installed there by
//! scripts/bootstrap-toolchains.sh with `pip install --target`; versions are pinned so that the
//! formatting and the findings never drift between machines. httpx, which the adapter
//! (`runtime/python/httpx_transport.py`) needs, lives beside them in `.cache/toolchains/python-httpx`
//! (scripts/bootstrap.d/python.sh): on mypy's path, the adapter's tests' and the fault runner's.

use super::{
    command, copy_harness, copy_sources, lossy, root, run, shell, Built, FaultRun, Module,
    Toolchain,
};
use anyhow::{anyhow, bail, Context, Result};
use retrygen::emit::{self, TemplateSource};
use retrygen::model::ModelOptions;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Python;

pub const BLACK_VERSION: &str = "26.10.1";
pub const RUFF_VERSION: &str = "0.17.6";
pub const MYPY_VERSION: &str = "1.20.2";
/// The httpx the adapter is checked and run against (scripts/bootstrap.d/python.sh pins it).
pub const HTTPX_VERSION: &str = "0.28.1";

/// The name the harness, the bench and the lint import the generated package under.
const PACKAGE: &str = "retry_policy";

/// The runtime project: its pyproject.toml is the one lint configuration (black py310, ruff's
/// rule set with pyupgrade, mypy --strict for 3.10).
fn runtime_dir() -> PathBuf {
    root().join("runtime/python")
}

/// Copies the files of a rendered target into `dir/retry_policy/`; returns the package folder.
fn copy_package(module: &Module, dir: &Path) -> Result<PathBuf> {
    let package = dir.join(PACKAGE);
    std::fs::create_dir_all(&package)?;
    for file in &module.files {
        let name = file.file_name().context("module file without a name")?;
        std::fs::copy(file, package.join(name))
            .with_context(|| format!("copying {}", file.display()))?;
    }
    Ok(package)
}

fn tools_dir() -> PathBuf {
    root().join(".cache/toolchains/python")
}

/// httpx and its dependencies, apart from the tools: the package's core never imports them.
fn httpx_dir() -> PathBuf {
    root().join(".cache/toolchains/python-httpx")
}

/// openapi-python-client and its dependencies (scripts/bootstrap.d/python.sh), for examples/python/.
fn openapi_dir() -> PathBuf {
    root().join(".cache/toolchains/python-openapi")
}

/// The folder the runtime project is copied to for its checks: a package folder, so that the
/// adapter's relative import of the runtime (`from ._runtime import`) resolves; named as in the
/// repository (`runtime/python`), so the commands of runtime/python/README.md run unchanged.
const PROJECT: &str = "python";

fn install_hint() -> String {
    format!(
        "run `bash scripts/bootstrap-toolchains.sh`, or `python3 -m pip install --target .cache/toolchains/python \
         black=={BLACK_VERSION} ruff=={RUFF_VERSION} mypy=={MYPY_VERSION}`"
    )
}

/// `python3 -m <tool>` with the pinned tools importable, and httpx, whose type hints mypy reads
/// for a package that has the adapter.
pub(crate) fn tool(module: &str) -> Command {
    let path = std::env::join_paths([tools_dir(), httpx_dir()]).expect("paths without separators");
    let mut cmd = command("python3");
    cmd.env("PYTHONPATH", path)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg("-m")
        .arg(module);
    cmd
}

fn require_httpx() -> Result<()> {
    let output = command("python3")
        .args(["-c", "import httpx; print(httpx.__version__)"])
        .env("PYTHONPATH", httpx_dir())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .context("python3 is not installed (needed for httpx)")?;
    let found = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() || found.trim() != HTTPX_VERSION {
        bail!(
            "httpx {HTTPX_VERSION} is not installed in {} (found {:?}: {}); run `bash scripts/bootstrap-toolchains.sh`",
            httpx_dir().display(),
            found.trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

fn require(module: &str, version: &str) -> Result<()> {
    let output = tool(module)
        .arg("--version")
        .output()
        .with_context(|| format!("python3 is not installed (needed for {module})"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!(
            "{module} {version} is not installed: {}; {}",
            String::from_utf8_lossy(&output.stderr).trim(),
            install_hint()
        );
    }
    // "black, 26.10.1 (compiled: yes)", "ruff 0.17.6", "mypy 1.20.2 (compiled: yes)"
    if !text
        .split(|c: char| c.is_whitespace() || c == ',')
        .any(|word| word == version)
    {
        bail!(
            "{module} {version} is required, found {:?}; {}",
            text.trim(),
            install_hint()
        );
    }
    Ok(())
}

impl Toolchain for Python {
    fn language(&self) -> &'static str {
        "python"
    }

    fn lint(&self, module: &Module, work: &Path) -> Result<()> {
        require_tools()?;
        std::fs::create_dir_all(work)?;
        copy_package(module, work)?;
        let config = work.join("pyproject.toml");
        std::fs::copy(runtime_dir().join("pyproject.toml"), &config)?;
        check(work, &config, &[PACKAGE], &["-p", PACKAGE])?;
        // Importing builds the tables and the matcher; -W error turns an invalid escape sequence
        // (a SyntaxWarning) or any deprecation into a failure. Nothing may compile a regular
        // expression until NON_REPLAYABLE_OPERATIONS or an operation's pattern is read.
        run(
            command("python3")
                .args(["-W", "error", "-c"])
                .arg(IMPORT_CHECK)
                .env("PYTHONPATH", work)
                .env("PYTHONDONTWRITEBYTECODE", "1")
                .current_dir(work),
            "importing the package",
        )?;
        Ok(())
    }

    fn display_name(&self) -> &'static str {
        "Python"
    }

    fn versions(&self) -> String {
        shell("python3", &["--version"])
    }

    fn bench_program(&self, module: &Module, work: &Path, shared: &Path) -> Result<Vec<String>> {
        let _ = shared;
        build_python(module, work)
    }

    fn runtime_tests(&self, work: &Path) -> Result<()> {
        require_tools()?;
        require_httpx()?;
        let project = work.join(PROJECT);
        copy_project(&runtime_dir(), &project)
            .with_context(|| format!("copying {}", runtime_dir().display()))?;
        let config = project.join("pyproject.toml");
        // The runtime: black and ruff over the whole project (the adapter and its tests too),
        // mypy and the tests with the standard library alone, as in a package without adapters.
        check(
            &project,
            &config,
            &["."],
            &[
                "_runtime.py",
                "tests/test_runtime.py",
                "tests/test_runtime_v3.py",
            ],
        )?;
        run(
            command("python3")
                .args([
                    "-W", "error", "-m", "unittest", "discover", "-s", "tests", "-t", ".",
                ])
                .args(["-p", "test_runtime*.py"])
                .env("PYTHONDONTWRITEBYTECODE", "1")
                .env_remove("PYTHONPATH")
                .current_dir(&project),
            "python3 -m unittest (runtime/python/tests/test_runtime.py, test_runtime_v3.py)",
        )?;
        // The adapter, from the project's parent: the project is then the package the adapter
        // sits in (`python.httpx_transport` imports `python._runtime`), with httpx importable.
        run(
            tool("mypy")
                .args(["--strict", "--no-incremental", "--explicit-package-bases"])
                .arg("--config-file")
                .arg(&config)
                .arg(format!("{PROJECT}/httpx_transport.py"))
                .arg(format!("{PROJECT}/tests/test_httpx_transport.py"))
                .current_dir(work),
            "mypy --strict (the httpx adapter and its tests)",
        )?;
        run(
            command("python3")
                .args(["-W", "error", "-m", "unittest", "discover", "-t", "."])
                .arg("-s")
                .arg(format!("{PROJECT}/tests"))
                .args(["-p", "test_httpx_transport.py"])
                .env("PYTHONPATH", httpx_dir())
                .env("PYTHONDONTWRITEBYTECODE", "1")
                .current_dir(work),
            "python3 -m unittest (runtime/python/tests/test_httpx_transport.py)",
        )?;
        let scratch = work.with_file_name("python-examples");
        if scratch.exists() {
            std::fs::remove_dir_all(&scratch)?;
        }
        readme_snippet(&scratch.join("readme"))?;
        example_sdk(&scratch.join("sdk"))?;
        Ok(())
    }

    fn build(&self, module: &Module, work: &Path) -> Result<Built> {
        copy_harness("python", work)?;
        copy_package(module, work)?;
        Ok(Built {
            argv: vec![
                "python3".into(),
                work.join("harness.py").to_string_lossy().into_owned(),
            ],
            cwd: work.to_path_buf(),
        })
    }

    /// `conformance/faults/harness/python/` beside the package (`retry_policy/`, with
    /// `httpx_transport.py`): run `python` drives `AsyncRetryTransport`, run `python-sync`
    /// `RetryTransport`. Nothing to compile: black, ruff and mypy --strict check the runner
    /// first; httpx is put on the path by `main.py`. Protocols: all four (h2c as `http1=False,
    /// http2=True` on `http://`, h2 the same over TLS with the `h2` package, TLS trusting exactly
    /// the test CA).
    fn fault_runner(&self, module: &Module, work: &Path) -> Result<Vec<FaultRun>> {
        require_httpx()?;
        let harness = root().join("conformance/faults/harness/python");
        for entry in
            std::fs::read_dir(&harness).with_context(|| format!("reading {}", harness.display()))?
        {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                std::fs::copy(entry.path(), work.join(entry.file_name()))?;
            }
        }
        let package = copy_package(module, work)?;
        if !package.join("httpx_transport.py").is_file() {
            bail!("the rendered module has no httpx_transport.py (the httpx adapter)");
        }
        // The runner is checked as strictly as the runtime it drives: the other languages'
        // runners pass their compilers' strict modes, Python's has only these tools.
        require_tools()?;
        check(
            work,
            &runtime_dir().join("pyproject.toml"),
            &["main.py", "runner.py"],
            &["main.py", "runner.py"],
        )?;
        let run = |name: &str, variant: &str| FaultRun {
            protocols: &["http1", "h2c", "http1-tls", "h2"],
            name: name.to_string(),
            built: Built {
                argv: vec![
                    "python3".into(),
                    "-B".into(),
                    lossy(&work.join("main.py")),
                    "--import-path".into(),
                    lossy(&httpx_dir()),
                    variant.into(),
                ],
                cwd: work.to_path_buf(),
            },
        };
        Ok(vec![run("python", "async"), run("python-sync", "sync")])
    }
}

/// Imports the package with `re.compile` counting (after the standard library modules it uses,
/// which compile their own), classifies a few requests, and fails if any expression was compiled;
/// then reads the list.
const IMPORT_CHECK: &str = r#"
import collections.abc, dataclasses, enum, functools, math, re, typing  # the standard library's own
compiled = []
real = re.compile
def counting(pattern, flags=0):
    compiled.append(pattern)
    return real(pattern, flags)
re.compile = counting
import retry_policy as rp
for method in ("GET", "post"):
    for path in ("/", "/a/b%20c?x#y", rp.BASE_PATH + "/x/"):
        rp.classify(method, path)
assert compiled == [], f"compiled at import or by classify: {compiled!r}"
assert len(list(rp.NON_REPLAYABLE_OPERATIONS)) == len(rp.NON_REPLAYABLE_OPERATIONS)
"#;

fn require_tools() -> Result<()> {
    require("black", BLACK_VERSION)?;
    require("ruff", RUFF_VERSION)?;
    require("mypy", MYPY_VERSION)
}

/// black --check, ruff check and mypy --strict in `dir` with `config`; black and ruff get
/// `paths`, mypy `mypy_args`.
pub(crate) fn check(dir: &Path, config: &Path, paths: &[&str], mypy_args: &[&str]) -> Result<()> {
    run(
        tool("black")
            .args(["--check", "--diff", "--config"])
            .arg(config)
            .args(paths)
            .current_dir(dir),
        "black --check",
    )?;
    run(
        tool("ruff")
            .args(["check", "--no-cache", "--config"])
            .arg(config)
            .args(paths)
            .current_dir(dir),
        "ruff check",
    )?;
    run(
        tool("mypy")
            .args(["--strict", "--no-incremental", "--config-file"])
            .arg(config)
            .args(mypy_args)
            .current_dir(dir),
        "mypy --strict",
    )?;
    Ok(())
}

/// Copies the runtime project, leaving out caches (`__pycache__`, `.mypy_cache`...).
fn copy_project(src: &Path, dst: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dst)?;
    for entry in std::fs::read_dir(src)? {
        let entry = entry?;
        let name = entry.file_name();
        let text = name.to_string_lossy();
        if text.starts_with('.') || text == "__pycache__" {
            continue;
        }
        if entry.file_type()?.is_dir() {
            copy_project(&entry.path(), &dst.join(&name))?;
        } else {
            std::fs::copy(entry.path(), dst.join(&name))?;
        }
    }
    Ok(())
}

// The README's installation and examples/python/, checked by `runtime-tests`.

/// The package rendered from the fault matrix's spec with the httpx adapter, into `dir/`.
fn render_fault_package(dir: &Path) -> Result<()> {
    let spec = root().join("conformance/faults/spec.yaml");
    let backend = emit::backend("python").context("no python backend")?;
    let (api, _) = retrygen::load_api(&spec, &ModelOptions::default())
        .map_err(|d| anyhow!("{}: {d}", spec.display()))?;
    let options = emit::resolve_options(backend, &Default::default())?;
    let adapters: Vec<&'static emit::Adapter> = backend.adapters().iter().collect();
    let rendered = emit::render(
        &api,
        backend,
        &options,
        &adapters,
        &TemplateSource::Embedded,
    )?;
    std::fs::create_dir_all(dir)?;
    for file in rendered {
        let name = Path::new(&file.name)
            .file_name()
            .context("a rendered file has no name")?;
        std::fs::write(dir.join(name), file.contents)?;
    }
    if !dir.join("httpx_transport.py").is_file() {
        bail!("the rendered package has no httpx_transport.py");
    }
    Ok(())
}

/// The first ```python block of the "HTTP client adapter" section of runtime/python/README.md,
/// as written, beside a package `<sdk>.retry_policy` rendered with the adapter (the snippet's
/// `from <sdk> import retry_policy` names it): black, ruff (its docstring rule for modules
/// aside: a snippet is not a module of its own) and mypy --strict, then run.
fn readme_snippet(work: &Path) -> Result<()> {
    let readme = std::fs::read_to_string(runtime_dir().join("README.md"))?;
    let section = readme
        .split_once("## HTTP client adapter")
        .context("runtime/python/README.md has no \"HTTP client adapter\" section")?
        .1;
    let snippet = section
        .split_once("```python\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .context("no ```python block in the README's HTTP client adapter section")?
        .0;
    let sdk = snippet
        .lines()
        .filter_map(|l| {
            l.trim()
                .strip_prefix("from ")?
                .strip_suffix(" import retry_policy")
        })
        .next()
        .context("the README's snippet does not import retry_policy from a package")?;
    std::fs::create_dir_all(work.join(sdk))?;
    std::fs::write(work.join(sdk).join("__init__.py"), "")?;
    render_fault_package(&work.join(sdk).join(PACKAGE))?;
    std::fs::write(work.join("snippet.py"), snippet)?;
    let config = runtime_dir().join("pyproject.toml");
    run(
        tool("black")
            .args(["--check", "--diff", "--config"])
            .arg(&config)
            .arg("snippet.py")
            .current_dir(work),
        "black --check (README snippet)",
    )?;
    run(
        tool("ruff")
            .args(["check", "--no-cache", "--ignore", "D100", "--config"])
            .arg(&config)
            .arg("snippet.py")
            .current_dir(work),
        "ruff check (README snippet)",
    )?;
    run(
        tool("mypy")
            .args(["--strict", "--no-incremental", "--config-file"])
            .arg(&config)
            .arg("snippet.py")
            .current_dir(work),
        "mypy --strict (README snippet)",
    )?;
    run(
        command("python3")
            .args(["-W", "error", "snippet.py"])
            .env("PYTHONPATH", httpx_dir())
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .current_dir(work),
        "python3 (README snippet)",
    )?;
    println!(
        "runtime python: the README's installation passes black, ruff, mypy --strict and runs"
    );
    Ok(())
}

/// The scenarios examples/python/ runs through its generated SDK against the fault server: each
/// is also checked here by the server's count.
const EXAMPLE_SCENARIOS: &[&str] = &[
    "get-503-503-200",
    "create-503-not-replayable",
    "create-reset-arrives-once",
    "kill-reset-arrives-twice",
    "snapshot-minted-key-reset",
    "get-body-cut-read-in-loop-retried",
    "get-override-max-retries-0-once",
    "get-attempt-header-counts-earlier-attempts",
];

/// examples/python/ in a scratch copy: openapi-python-client (pinned, from
/// .cache/toolchains/python-openapi, offline) generates the SDK `sandbox_client` from the fault
/// matrix's spec, retrygen's package with the httpx adapter goes inside it as
/// `sandbox_client.retry_policy`, and its test makes the SDK's calls against a real fault server;
/// the server's counts must be the scenarios'.
fn example_sdk(work: &Path) -> Result<()> {
    let generator = openapi_dir();
    if !generator.join("openapi_python_client").is_dir() {
        bail!(
            "openapi-python-client is not installed in {}; run `bash scripts/bootstrap-toolchains.sh`",
            generator.display()
        );
    }
    let source = root().join("examples/python");
    std::fs::create_dir_all(work)?;
    let mut files = Vec::new();
    for entry in
        std::fs::read_dir(&source).with_context(|| format!("reading {}", source.display()))?
    {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            std::fs::copy(entry.path(), work.join(entry.file_name()))?;
            if entry.path().extension().is_some_and(|e| e == "py") {
                files.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
    }
    files.sort();
    let path = std::env::join_paths([generator, httpx_dir()]).expect("paths without separators");
    run(
        command("python3")
            .args(["-m", "openapi_python_client", "generate", "--meta", "none"])
            .arg("--path")
            .arg(root().join("conformance/faults/spec.yaml"))
            .args(["--config", "openapi-python-client.yaml"])
            .args(["--output-path", "sandbox_client"])
            .env("PYTHONPATH", &path)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .current_dir(work),
        "openapi-python-client generate (examples/python)",
    )?;
    render_fault_package(&work.join("sandbox_client").join(PACKAGE))?;
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    // openapi-python-client's code needs Python 3.11 (typing.Self): mypy reads it as such.
    let mypy_args: Vec<&str> = ["--python-version", "3.11"]
        .into_iter()
        .chain(files.iter().copied())
        .collect();
    check(
        work,
        &runtime_dir().join("pyproject.toml"),
        &files,
        &mypy_args,
    )?;

    let server = crate::faults::start_server()?;
    let run_name = "python-example";
    let report = run(
        command("python3")
            .args(["-m", "unittest", "-v", "test_sdk"])
            .env("PYTHONPATH", httpx_dir())
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .envs(server.env("http1"))
            .env("RETRYGEN_FAULT_RUN", run_name)
            .env("RETRYGEN_EXAMPLE_SCENARIOS", EXAMPLE_SCENARIOS.join(","))
            .current_dir(work),
        "python3 -m unittest (examples/python against the fault server)",
    )?;
    let scenarios: Value =
        serde_json::from_str(&std::fs::read_to_string(crate::faults::scenario_file())?)?;
    let mut problems = Vec::new();
    for id in EXAMPLE_SCENARIOS {
        let scenario = scenarios["scenarios"]
            .as_array()
            .and_then(|all| all.iter().find(|s| s["id"] == *id))
            .with_context(|| format!("scenario {id} is not in scenarios.json"))?;
        let expect = &scenario["expect"];
        let arrivals = server.arrivals(run_name, id);
        if Some(arrivals.len() as u64) != expect["arrivals"].as_u64() {
            problems.push(format!(
                "{id}: {} arrivals, want {}",
                arrivals.len(),
                expect["arrivals"]
            ));
        }
        if expect["key"] == "minted" {
            let first = arrivals.first().map(|a| a.keys.clone()).unwrap_or_default();
            if first.len() != 1 || arrivals.iter().any(|a| a.keys != first) {
                problems.push(format!(
                    "{id}: keys {:?}, want one minted key on every arrival",
                    arrivals.iter().map(|a| &a.keys).collect::<Vec<_>>()
                ));
            }
        }
        if let (Some(name), Some(want)) = (
            scenario["attempt_header"].as_str(),
            expect["attempt_header_values"].as_array(),
        ) {
            let name = name.to_ascii_lowercase();
            let got: Vec<Value> = arrivals
                .iter()
                .map(|a| {
                    a.headers
                        .iter()
                        .find(|(n, _)| *n == name)
                        .map_or(Value::Null, |(_, v)| Value::from(v.clone()))
                })
                .collect();
            if &got != want {
                problems.push(format!("{id}: attempt header {got:?}, want {want:?}"));
            }
        }
    }
    if !problems.is_empty() {
        bail!(
            "examples/python: the server's counts differ:\n  {}\n{report}",
            problems.join("\n  ")
        );
    }
    println!(
        "runtime python: examples/python (openapi-python-client SDK, the adapter in 3 lines for its sync and async clients, asyncio and trio): {} scenarios through the SDK agree with the fault server",
        EXAMPLE_SCENARIOS.len()
    );
    Ok(())
}

// The bench program (bench/python/), built against a rendered module.

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
