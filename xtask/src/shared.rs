//! `cargo xtask shared-runtime`: one SDK per language built on a shared runtime (`[[runtime]]` in
//! retrygen.toml, README "Shared runtimes"). A two-spec config (specs/sandbox.yaml and
//! specs/matching.yaml) is rendered into target/xtask/shared-runtime/<language>/ with one runtime
//! per language, with the language's HTTP client adapter, and two thin tables files using it;
//! then each language's formatter, linter and compiler run over the whole layout as the
//! conformance run runs them over one module, and (Rust, Python, Go) a test or an import calls
//! both APIs' tables through the one runtime. Go's layout is a module of its own (go.mod, the
//! runtime package and one package per API importing it by its import path).

use crate::toolchains::{self, command, root, run};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// Every language of the registry, in its order.
fn languages() -> Vec<String> {
    retrygen::BACKENDS
        .iter()
        .map(|b| b.name().to_string())
        .collect()
}

/// The two APIs of every layout: the tables folder name and the spec.
const SPECS: [(&str, &str); 2] = [
    ("sandbox", "specs/sandbox.yaml"),
    ("matching", "specs/matching.yaml"),
];

pub fn main(args: &[String]) -> Result<()> {
    let all = languages();
    let mut languages = all.clone();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--lang" => {
                let list = rest.next().context("--lang needs a list")?;
                languages = list.split(',').map(str::to_string).collect();
                if let Some(bad) = languages.iter().find(|l| !all.contains(l)) {
                    bail!("--lang: unknown language {bad:?}");
                }
            }
            other => bail!("shared-runtime: unknown argument {other:?}"),
        }
    }
    let work = root().join("target/xtask/shared-runtime");
    let mut failed = Vec::new();
    for language in &languages {
        let dir = work.join(language);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir_all(&dir)?;
        match layout(language, &dir) {
            Ok(what) => println!("shared-runtime {language}: ok ({what})"),
            Err(e) => {
                println!("shared-runtime {language}: FAILED\n{e:#}");
                failed.push(language.clone());
            }
        }
    }
    if !failed.is_empty() {
        bail!("shared-runtime failed for {}", failed.join(", "));
    }
    Ok(())
}

/// The config of one language's layout: the `[[runtime]]` and one target per spec naming it.
/// Folders are relative to `dir` (the config's folder); specs are absolute.
fn config_text(language: &str) -> String {
    let (runtime_out, tables_out, runtime_options, adapters): (&str, &str, &str, &str) =
        match language {
            "rust" => ("src/retry_runtime/", "src/", "", "\"reqwest\""),
            "python" => ("sdk/retry_runtime/", "sdk/", "", "\"httpx\""),
            "typescript" => ("src/retry_runtime/", "src/", "", "\"fetch\""),
            "go" => ("retrypolicy/", "", "", "\"net/http\""),
            "kotlin" => (
                "src/runtime/",
                "src/",
                "package = \"com.example.retry\"",
                "\"okhttp\"",
            ),
            _ => (
                "src/Runtime/",
                "src/",
                "namespace = \"Example.Retry\"",
                "\"httpclient\"",
            ),
        };
    let mut text = format!(
        "[[runtime]]\nlanguage = \"{language}\"\nout = \"{runtime_out}\"\nadapters = [{adapters}]\noptions = {{ {runtime_options} }}\n"
    );
    for (name, spec) in SPECS {
        let upper = format!("{}{}", name[..1].to_uppercase(), &name[1..]);
        let options = tables_options(language, name, &upper);
        let spec = root().join(spec);
        text.push_str(&format!(
            "\n[[job]]\nspec = {spec:?}\n\n[[job.target]]\nlanguage = \"{language}\"\nout = \"{tables_out}{name}/\"\nruntime = \"{runtime_out}\"\noptions = {{ {options} }}\n",
            spec = spec.to_string_lossy()
        ));
    }
    text
}

/// Renders the layout of `language` into `dir` with retrygen's library (as `retrygen generate`
/// does), then builds and checks it. Returns what was checked.
fn layout(language: &str, dir: &Path) -> Result<String> {
    let config_path = dir.join("retrygen.toml");
    std::fs::write(&config_path, config_text(language))?;
    let config = retrygen::config::load(&config_path).map_err(|d| anyhow::anyhow!("{d}"))?;
    let plan =
        retrygen::generate(&config).map_err(|e| anyhow::anyhow!("retrygen generate:\n{e}"))?;
    retrygen::write(&plan).map_err(|e| anyhow::anyhow!("{e}"))?;
    let runtimes = plan
        .files
        .iter()
        .filter(|f| f.path.starts_with(&config.runtimes[0].out))
        .count();
    let files: Vec<PathBuf> = plan.files.iter().map(|f| f.path.clone()).collect();
    let checked = match language {
        "rust" => rust(dir)?,
        "python" => python(dir)?,
        "typescript" => typescript(dir, &files)?,
        "go" => go(dir, &files)?,
        "kotlin" => kotlin(dir, &files)?,
        _ => csharp(dir, &files)?,
    };
    Ok(format!(
        "{} files, {runtimes} of them the one runtime; {checked}",
        files.len()
    ))
}

fn rust(dir: &Path) -> Result<String> {
    // The reqwest adapter's dependencies, as the fault runner locks them (fetched once by
    // scripts/bootstrap.d/rust.sh; the build is offline).
    let runner = root().join("conformance/faults/harness/rust");
    let manifest = std::fs::read_to_string(runner.join("Cargo.toml"))?;
    let dependencies = manifest
        .split("\n[dependencies]\n")
        .nth(1)
        .and_then(|rest| rest.split("\n[").next())
        .context("the fault runner's Cargo.toml has no [dependencies]")?;
    std::fs::write(
        dir.join("Cargo.toml"),
        format!("[package]\nname = \"retrygen-fault-runner\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n[lib]\npath = \"src/lib.rs\"\n\n[dependencies]\n{dependencies}\n\n# Not a member of the retrygen workspace this folder sits in.\n[workspace]\n"),
    )?;
    std::fs::copy(runner.join("Cargo.lock"), dir.join("Cargo.lock"))?;
    std::fs::write(
        dir.join("src/lib.rs"),
        r#"//! An SDK of two APIs whose tables share one retry runtime.

#![deny(missing_docs)]

pub mod matching;
pub mod retry_runtime;
pub mod sandbox;

#[cfg(test)]
mod tests {
    /// Both APIs' tables run on the one runtime: the same types, each API's own operations and
    /// policy.
    #[test]
    fn two_apis_one_runtime() {
        let a: crate::retry_runtime::Classification =
            crate::sandbox::classify("POST", "/v1/sandboxes");
        assert_eq!(a.class, crate::retry_runtime::ReplayClass::NonReplayable);
        assert_ne!(
            crate::sandbox::OPERATIONS.len(),
            crate::matching::OPERATIONS.len()
        );
        let contract = crate::retry_runtime::RetryPolicy::default();
        crate::sandbox::default_policy().validate().expect("valid");
        crate::matching::default_policy().validate().expect("valid");
        contract.validate().expect("valid");
        // The adapter lives with the runtime; each API's tables give it their table and policy.
        let _middleware = crate::retry_runtime::reqwest_adapter::RetryMiddleware::builder(
            &crate::sandbox::OPERATION_TABLE,
        )
        .policy(crate::sandbox::default_policy())
        .build()
        .expect("valid");
    }
}
"#,
    )?;
    // Kept across runs (the layout folder is not): the adapter's dependencies compile once.
    let target = root().join("target/xtask/shared-runtime-cargo");
    let cargo = || {
        let mut cmd = toolchains::rust::cargo(dir);
        cmd.env("CARGO_TARGET_DIR", &target);
        cmd
    };
    run(
        command("rustfmt")
            .args(["--check", "--edition", "2021", "src/lib.rs"])
            .current_dir(dir),
        "rustfmt --check",
    )?;
    run(
        cargo().args([
            "clippy",
            "--quiet",
            "--offline",
            "--locked",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]),
        "cargo clippy -D warnings",
    )?;
    run(
        cargo().args(["test", "--quiet", "--offline", "--locked"]),
        "cargo test",
    )?;
    Ok("rustfmt, clippy -D warnings, a test over both APIs and the reqwest adapter".into())
}

fn python(dir: &Path) -> Result<String> {
    std::fs::write(
        dir.join("sdk/__init__.py"),
        "\"\"\"An SDK of two APIs whose tables share one retry runtime.\"\"\"\n",
    )?;
    let config = dir.join("pyproject.toml");
    std::fs::copy(root().join("runtime/python/pyproject.toml"), &config)?;
    toolchains::python::check(dir, &config, &["sdk"], &["-p", "sdk"])?;
    run(
        command("python3")
            .args(["-W", "error", "-c"])
            .arg(
                "import sdk.sandbox as s, sdk.matching as m, sdk.retry_runtime._runtime as r\n\
                 assert s.classify('POST', '/v1/sandboxes').replay_class is r.ReplayClass.NON_REPLAYABLE\n\
                 assert s.Operation is m.Operation is r.Operation\n\
                 assert len(s.OPERATIONS) != len(m.OPERATIONS)\n",
            )
            .env("PYTHONPATH", dir)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .current_dir(dir),
        "importing both tables packages",
    )?;
    Ok("black, ruff, mypy --strict, both packages imported".into())
}

/// Paths of `files` relative to `dir`, as strings.
fn relative(dir: &Path, files: &[PathBuf]) -> Result<Vec<String>> {
    files
        .iter()
        .map(|f| {
            let rel = f
                .strip_prefix(dir)
                .with_context(|| format!("{} is outside {}", f.display(), dir.display()))?;
            Ok(rel.to_string_lossy().replace('\\', "/"))
        })
        .collect()
}

fn typescript(dir: &Path, files: &[PathBuf]) -> Result<String> {
    toolchains::typescript::require("tsc", toolchains::typescript::TYPESCRIPT_VERSION)?;
    let names = relative(dir, files)?;
    let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    std::fs::write(
        dir.join("tsconfig.json"),
        toolchains::typescript::MODULE_TSCONFIG.replace("FILES", &quoted.join(", ")),
    )?;
    run(
        command("tsc").arg("-p").arg(dir).current_dir(dir),
        "tsc --strict over the layout",
    )?;
    toolchains::typescript::prettier_check(dir, &names)?;
    Ok("tsc --strict, prettier --check".into())
}

/// The Go module of the layout: `example.com/sdk`, the runtime package `retrypolicy/`, the
/// tables packages `sandbox/` (package sandbox) and `matching/` (the default package name,
/// retrypolicy, the same as the runtime's: the import is then what tells them apart).
const GO_MODULE: &str = "example.com/sdk";

/// A test of the Go layout's module: both APIs through the one runtime package, its types shared,
/// each API's operations, base path and policy its own, and a RoundTripper of each against a
/// real local server.
const GO_TEST: &str = r#"package sdk_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	// The matching API's tables keep the default package name, the runtime's.
	matching "example.com/sdk/matching"
	"example.com/sdk/retrypolicy"
	"example.com/sdk/sandbox"
)

func TestTwoAPIsOneRuntime(t *testing.T) {
	// One runtime: the tables' results are the runtime package's types.
	var a retrypolicy.Classification
	a, err := sandbox.Classify("POST", "/v1/sandboxes")
	if err != nil || a.Class != retrypolicy.ClassNonReplayable || !a.Matched {
		t.Fatalf("sandbox: %+v %v", a, err)
	}
	var api *retrypolicy.API = matching.Tables()
	if len(api.Operations()) == len(sandbox.Operations()) || api.BasePath() != matching.BasePath {
		t.Errorf("the two APIs' tables: %d and %d operations", len(api.Operations()), len(sandbox.Operations()))
	}
	if err := sandbox.DefaultPolicy().Validate(); err != nil {
		t.Error(err)
	}
	if err := matching.DefaultPolicy().Validate(); err != nil {
		t.Error(err)
	}
	var arrivals atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		arrivals.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer server.Close()
	// POST /sandboxes is non_replayable in the sandbox API: a 500, which may follow applied
	// work, is returned after one attempt.
	retries, err := sandbox.NewRoundTripper(retrypolicy.WithBaseURL(server.URL + sandbox.BasePath))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: retries}).Post(server.URL+"/v1/sandboxes", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	finish, ok := retrypolicy.FinishOf(resp, nil)
	if n := arrivals.Load(); n != 1 || !ok || finish.OperationID != "createSandbox" {
		t.Errorf("sandbox: %d arrivals, finish %+v", n, finish)
	}
	// Each API's adapter is built from its own tables, the same constructor for both.
	if _, err := matching.Tables().NewRoundTripper(retrypolicy.WithNext(http.DefaultTransport)); err != nil {
		t.Fatal(err)
	}
}
"#;

/// `go` kept local and offline, as the Go toolchain's commands run it.
fn go_command(dir: &Path) -> std::process::Command {
    let mut cmd = command("go");
    cmd.current_dir(dir)
        .env("GOTOOLCHAIN", "local")
        .env("GOPROXY", "off")
        .env("GOWORK", "off")
        .env("GOFLAGS", "")
        .env("CGO_ENABLED", "0");
    cmd
}

fn go(dir: &Path, files: &[PathBuf]) -> Result<String> {
    std::fs::write(
        dir.join("go.mod"),
        format!("module {GO_MODULE}\n\ngo 1.24\n"),
    )?;
    std::fs::write(dir.join("sdk_test.go"), GO_TEST)?;
    let mut go_files: Vec<PathBuf> = files.to_vec();
    go_files.push(dir.join("sdk_test.go"));
    let unformatted = run(
        command("gofmt").arg("-l").args(&go_files).current_dir(dir),
        "gofmt -l",
    )?;
    if !unformatted.trim().is_empty() {
        bail!("gofmt would reformat {}", unformatted.trim());
    }
    run(go_command(dir).args(["vet", "./..."]), "go vet ./...")?;
    run(
        go_command(dir).args(["test", "-count=1", "./..."]),
        "go test ./...",
    )?;
    let goldens = golden_go_module(&dir.join("golden"))?;
    Ok(format!("gofmt, go vet, go test calling both APIs and each one's net/http adapter; the {goldens} committed Go golden packages vetted as the module retrygen.example/golden"))
}

/// The project's Go goldens (retrygen.toml) as the module they are written for:
/// golden/runtime/go/ and every golden/<spec>/go/ copied into `work` under go.mod `module
/// retrygen.example/golden`, then `go vet ./...`: every committed tables file, hostile.yaml's
/// among them, compiles against the shared runtime. Returns the number of packages.
fn golden_go_module(work: &Path) -> Result<usize> {
    let golden = root().join("golden");
    let mut packages = 0;
    for entry in std::fs::read_dir(&golden)? {
        let folder = entry?.path().join("go");
        if !folder.is_dir() {
            continue;
        }
        let name = folder
            .parent()
            .and_then(Path::file_name)
            .context("golden folder name")?;
        let into = work.join(name).join("go");
        std::fs::create_dir_all(&into)?;
        for file in std::fs::read_dir(&folder)? {
            let file = file?.path();
            if file.extension().is_some_and(|e| e == "go") {
                std::fs::copy(&file, into.join(file.file_name().context("file name")?))?;
            }
        }
        packages += 1;
    }
    std::fs::write(
        work.join("go.mod"),
        "module retrygen.example/golden\n\ngo 1.24\n",
    )?;
    run(
        go_command(work).args(["vet", "./..."]),
        "go vet (the Go goldens)",
    )?;
    Ok(packages)
}

fn kotlin(dir: &Path, files: &[PathBuf]) -> Result<String> {
    toolchains::kotlin::ktlint(files, &dir.join("ktlint"))?;
    toolchains::kotlin::kotlinc(
        files,
        &dir.join("classes"),
        "kotlinc over the layout",
        toolchains::kotlin::OkHttp::V4,
    )?;
    Ok("ktlint, kotlinc -Werror -Xexplicit-api=strict".into())
}

fn csharp(dir: &Path, files: &[PathBuf]) -> Result<String> {
    for file in files {
        toolchains::csharp::check_style(file)?;
    }
    let doc = format!("-doc:{}", dir.join("sdk.xml").display());
    let out = format!("-out:{}", dir.join("sdk.dll").display());
    toolchains::csharp::mcs(
        &["-target:library".into(), doc, out],
        files,
        "mcs over the layout",
    )?;
    Ok("style, mcs -warnaserror with XML docs".into())
}

/// The options of the tables target of API `name` (`upper`: capitalised) in `language`.
fn tables_options(language: &str, name: &str, upper: &str) -> String {
    match language {
        "rust" => "runtime_path = \"crate::retry_runtime\"".to_string(),
        "go" if name == "matching" => format!("runtime_import = \"{GO_MODULE}/retrypolicy\""),
        "go" => format!("package = \"{name}\", runtime_import = \"{GO_MODULE}/retrypolicy\""),
        "kotlin" => format!("package = \"com.example.{name}\", object = \"{upper}Retries\""),
        "csharp" => format!("namespace = \"Example.{upper}\", class = \"{upper}Retries\""),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every layout's config loads: one runtime, one target per spec naming it.
    #[test]
    fn every_config_loads() {
        let dir = std::env::temp_dir().join(format!("retrygen-shared-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temporary folder");
        for language in languages() {
            let path = dir.join(format!("{language}.toml"));
            std::fs::write(&path, config_text(&language)).expect("config");
            let config = retrygen::config::load(&path).unwrap_or_else(|d| panic!("{d}"));
            assert_eq!(config.runtimes.len(), 1, "{language}");
            assert_eq!(config.jobs.len(), 2, "{language}");
            assert!(config
                .jobs
                .iter()
                .all(|j| j.targets.iter().all(|t| t.runtime == Some(0))));
        }
    }
}
