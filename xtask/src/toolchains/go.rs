//! Go: `gofmt -l` must print nothing, `go vet` must pass and no package-level variable may be
//! exported (issue 9: no mutable exported tables). The harness is a `main` package in its own
//! module (no requirements, so it builds offline) that imports the generated package, the
//! tables file and `runtime.go`, from a subfolder; the fault-matrix runner
//! (`conformance/faults/harness/go/`) is built the same way, with `roundtripper.go` beside them.
//! The runtime's own tests (`runtime/go/`) cover the net/http adapter too.

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

pub struct Go;

/// The folder, inside the harness module, that holds the generated package; the harness
/// imports `retrygen.example/harness/retrypolicy` (the fault runner
/// `retrygen.example/faultrunner/retrypolicy`).
const PACKAGE_DIR: &str = "retrypolicy";

/// `go` with the environment that keeps it local and reproducible: no toolchain download, no
/// module proxy, no workspace file from a parent folder.
fn go(work: &Path) -> Command {
    let mut cmd = command("go");
    cmd.current_dir(work)
        .env("GOTOOLCHAIN", "local")
        .env("GOPROXY", "off")
        .env("GOWORK", "off")
        .env("GOFLAGS", "")
        .env("CGO_ENABLED", "0");
    cmd
}

/// Copies every file of `module` into `dir`.
fn place_module(module: &Module, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    for file in &module.files {
        let name = file.file_name().context("a module file has no name")?;
        std::fs::copy(file, dir.join(name))
            .with_context(|| format!("copying {}", file.display()))?;
    }
    Ok(())
}

/// `gofmt -l` over `files`: an error with gofmt's diff when any would change.
fn gofmt_check(files: &[&Path]) -> Result<()> {
    let unformatted = run(command("gofmt").arg("-l").args(files), "gofmt -l")?;
    if !unformatted.trim().is_empty() {
        let diff = command("gofmt")
            .arg("-d")
            .args(files)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        bail!("gofmt would reformat {}:\n{diff}", unformatted.trim());
    }
    Ok(())
}

/// The exported package-level variables of a gofmt-formatted Go file: `var Name` at the start
/// of a line, or a name at the first indentation level of a `var (` block. Tables stay
/// unexported behind accessor functions that return copies.
pub fn exported_vars(source: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut in_block = false;
    for line in source.lines() {
        let declared = if in_block {
            if line == ")" {
                in_block = false;
                continue;
            }
            line.strip_prefix('\t')
                .filter(|rest| !rest.starts_with('\t'))
        } else if line == "var (" {
            in_block = true;
            continue;
        } else {
            line.strip_prefix("var ")
        };
        let Some(name) = declared.and_then(|d| d.split([' ', ',', '=']).next()) else {
            continue;
        };
        if name.starts_with(|c: char| c.is_uppercase()) {
            found.push(name.to_string());
        }
    }
    found
}

/// Fails when any of `files` declares an exported package-level variable.
fn no_exported_vars(files: &[&Path]) -> Result<()> {
    for file in files {
        let text = std::fs::read_to_string(file)?;
        let exported = exported_vars(&text);
        if !exported.is_empty() {
            bail!(
                "{} exports package-level variables {exported:?}: tables must be unexported, behind functions that return copies",
                file.display()
            );
        }
    }
    Ok(())
}

impl Toolchain for Go {
    fn language(&self) -> &'static str {
        "go"
    }

    fn lint(&self, module: &Module, work: &Path) -> Result<()> {
        let files: Vec<&Path> = module.files.iter().map(|f| f.as_path()).collect();
        gofmt_check(&files)?;
        no_exported_vars(&files)?;
        std::fs::create_dir_all(work)?;
        // The runtime needs Go 1.21; the net/http adapter Go 1.24 (http.Protocols): the lint
        // module declares the least the files need, so that vet rejects any newer API.
        let adapter = files
            .iter()
            .any(|f| f.file_name().is_some_and(|n| n == "roundtripper.go"));
        let version = if adapter { "1.24" } else { "1.21" };
        std::fs::write(
            work.join("go.mod"),
            format!("module retrygen.example/lint\n\ngo {version}\n"),
        )?;
        place_module(module, &work.join(PACKAGE_DIR))?;
        run(go(work).args(["vet", "./..."]), "go vet")?;
        Ok(())
    }

    fn display_name(&self) -> &'static str {
        "Go"
    }

    fn versions(&self) -> String {
        shell("go", &["version"])
    }

    fn bench_program(&self, module: &Module, work: &Path, shared: &Path) -> Result<Vec<String>> {
        let _ = shared;
        build_go(module, work)
    }

    fn runtime_tests(&self, work: &Path) -> Result<()> {
        let source = root().join("runtime/go");
        let mut files = Vec::new();
        for entry in
            std::fs::read_dir(&source).with_context(|| format!("reading {}", source.display()))?
        {
            let path = entry?.path();
            if path.is_file() {
                std::fs::copy(&path, work.join(path.file_name().context("file name")?))?;
                files.push(work.join(path.file_name().context("file name")?));
            }
        }
        files.sort();
        let go_files: Vec<&Path> = files
            .iter()
            .map(|f| f.as_path())
            .filter(|f| f.extension().is_some_and(|e| e == "go"))
            .collect();
        gofmt_check(&go_files)?;
        no_exported_vars(&go_files)?;
        run(go(work).args(["vet", "./..."]), "go vet (runtime)")?;
        run(go(work).args(["build", "./..."]), "go build (runtime)")?;
        let report = run(
            go(work).args(["test", "-count=1", "./..."]),
            "go test (runtime)",
        )?;
        print!("{report}");
        let scratch = work.with_file_name("go-examples");
        if scratch.exists() {
            std::fs::remove_dir_all(&scratch)?;
        }
        readme_snippet(&scratch.join("readme"))?;
        example_sdk(&scratch.join("sdk"))?;
        Ok(())
    }

    /// The runner of `conformance/faults/harness/go/`, a `main` package in its own module with
    /// the module rendered with the net/http adapter in its `retrypolicy` folder, built in
    /// `work/runner`. One run: Go has one adapter.
    fn fault_runner(&self, module: &Module, work: &Path) -> Result<Vec<FaultRun>> {
        let runner = work.join("runner");
        let source = root().join("conformance/faults/harness/go");
        std::fs::create_dir_all(&runner)?;
        for entry in
            std::fs::read_dir(&source).with_context(|| format!("reading {}", source.display()))?
        {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                std::fs::copy(entry.path(), runner.join(entry.file_name()))?;
            }
        }
        place_module(module, &runner.join(PACKAGE_DIR))?;
        let go_files: Vec<PathBuf> = [runner.join("main.go")]
            .into_iter()
            .chain(module.files.iter().map(|f| {
                runner
                    .join(PACKAGE_DIR)
                    .join(f.file_name().unwrap_or_default())
            }))
            .collect();
        let go_files: Vec<&Path> = go_files.iter().map(PathBuf::as_path).collect();
        gofmt_check(&go_files)?;
        // The overhead mode's peer (hashicorp/go-retryablehttp) comes from the module cache.
        let cache = module_cache()?;
        run(
            go(&runner).env("GOMODCACHE", &cache).args(["vet", "./..."]),
            "go vet (fault runner)",
        )?;
        run(
            go(&runner)
                .env("GOMODCACHE", &cache)
                .args(["build", "-trimpath", "-o", "runner", "."]),
            "go build (fault runner)",
        )?;
        Ok(vec![FaultRun {
            protocols: &["http1", "h2c", "http1-tls", "h2"],
            name: "go".to_string(),
            built: Built {
                argv: vec![lossy(&runner.join("runner"))],
                cwd: runner,
            },
        }])
    }

    fn build(&self, module: &Module, work: &Path) -> Result<Built> {
        copy_harness("go", work)?;
        place_module(module, &work.join(PACKAGE_DIR))?;
        run(
            go(work).args(["build", "-trimpath", "-o", "harness", "."]),
            "go build",
        )?;
        Ok(Built {
            argv: vec![work.join("harness").to_string_lossy().into_owned()],
            cwd: work.to_path_buf(),
        })
    }
}

// The README's installation and examples/go/, checked by `runtime-tests`.

/// The module rendered from the fault matrix's spec with the net/http adapter, into
/// `work/module/`.
fn render_fault_module(work: &Path) -> Result<Module> {
    let spec = root().join("conformance/faults/spec.yaml");
    let backend = emit::backend("go").context("no go backend")?;
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
    let dir = work.join("module");
    std::fs::create_dir_all(&dir)?;
    let mut files = Vec::new();
    for file in rendered {
        let path = dir.join(&file.name);
        std::fs::write(&path, file.contents)?;
        files.push(path);
    }
    Ok(Module { dir, files })
}

/// The first ```go block of the "HTTP client adapter" section of runtime/go/README.md: a whole
/// file (package clause, imports, base URL), compiled and vetted as written, in a module named
/// after its import of the generated package.
fn readme_snippet(work: &Path) -> Result<()> {
    let readme = std::fs::read_to_string(root().join("runtime/go/README.md"))?;
    let section = readme
        .split_once("## HTTP client adapter")
        .context("runtime/go/README.md has no \"HTTP client adapter\" section")?
        .1;
    let snippet = section
        .split_once("```go\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .context("no ```go block in the README's HTTP client adapter section")?
        .0;
    let import = snippet
        .lines()
        .filter_map(|l| l.trim().strip_prefix('"')?.strip_suffix("/retrypolicy\""))
        .next()
        .context("the README's snippet does not import a .../retrypolicy package")?;
    std::fs::create_dir_all(work)?;
    std::fs::write(work.join("go.mod"), format!("module {import}\n\ngo 1.24\n"))?;
    std::fs::write(work.join("snippet.go"), snippet)?;
    let module = render_fault_module(work)?;
    place_module(&module, &work.join(PACKAGE_DIR))?;
    gofmt_check(&[&work.join("snippet.go")])?;
    run(go(work).args(["vet", "./..."]), "go vet (README snippet)")?;
    println!("runtime go: the README's installation compiles");
    Ok(())
}

/// The scenarios examples/go/ runs through its generated SDK against the fault server: each is
/// also checked here by the server's count.
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

/// Go's module cache for examples/go/ (oapi-codegen and its runtime) and the fault runner's peer
/// (hashicorp/go-retryablehttp), filled by scripts/bootstrap.d/go.sh.
fn module_cache() -> Result<PathBuf> {
    let cache = root().join(".cache/go-mod");
    if !cache.is_dir() {
        bail!(
            "{} is missing: run scripts/bootstrap-toolchains.sh (scripts/bootstrap.d/go.sh fetches the Go modules)",
            cache.display()
        );
    }
    Ok(cache)
}

/// examples/go/ in a scratch copy: oapi-codegen (the version go.mod pins, from the module cache,
/// offline) generates the client, the net/http adapter's package is rendered beside it, and its
/// test runs the SDK's calls against a real fault server; the server's counts must be the
/// scenarios'.
fn example_sdk(work: &Path) -> Result<()> {
    let cache = module_cache()?;
    let source = root().join("examples/go");
    std::fs::create_dir_all(work)?;
    for entry in
        std::fs::read_dir(&source).with_context(|| format!("reading {}", source.display()))?
    {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            std::fs::copy(entry.path(), work.join(entry.file_name()))?;
        }
    }
    let with_cache = |cmd: &mut Command| {
        cmd.env("GOMODCACHE", &cache)
            .env("GOFLAGS", "-mod=readonly");
    };
    let spec = root().join("conformance/faults/spec.yaml");
    let mut generate = go(work);
    with_cache(&mut generate);
    run(
        generate
            .args(["tool", "oapi-codegen", "-config", "oapi-codegen.yaml"])
            .arg(&spec),
        "oapi-codegen (examples/go)",
    )?;
    let module = render_fault_module(&work.join("target"))?;
    place_module(&module, &work.join(PACKAGE_DIR))?;
    std::fs::remove_dir_all(work.join("target"))?;
    let go_files: Vec<PathBuf> = ["sdk.go", "sdk_test.go", "telemetry.go", "telemetry_test.go"]
        .iter()
        .map(|f| work.join(f))
        .collect();
    let go_files: Vec<&Path> = go_files.iter().map(PathBuf::as_path).collect();
    gofmt_check(&go_files)?;
    let mut vet = go(work);
    with_cache(&mut vet);
    run(vet.args(["vet", "./..."]), "go vet (examples/go)")?;

    let server = crate::faults::start_server()?;
    let run_name = "go-example";
    let mut test = go(work);
    with_cache(&mut test);
    test.args(["test", "-count=1", "-v", "./..."])
        .envs(server.env("http1"))
        .env("RETRYGEN_FAULT_RUN", run_name)
        .env("RETRYGEN_EXAMPLE_SCENARIOS", EXAMPLE_SCENARIOS.join(","));
    let report = run(&mut test, "go test (examples/go against the fault server)")?;
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
            "examples/go: the server's counts differ:\n  {}\n{report}",
            problems.join("\n  ")
        );
    }
    println!(
        "runtime go: examples/go (oapi-codegen client, the adapter in 3 lines, otelhttp resend_count): {} scenarios through the SDK agree with the fault server",
        EXAMPLE_SCENARIOS.len()
    );
    Ok(())
}

// The bench program (bench/go/), built against a rendered module.

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

#[cfg(test)]
mod tests {
    use super::exported_vars;

    #[test]
    fn finds_exported_package_variables() {
        let source = "package p\n\nvar Operations = []int{}\nvar table = 1\n\nvar (\n\tShared, other = 1, 2\n\tquiet int\n)\n\nfunc f() {\n\tvar Local = 1\n\t_ = Local\n}\n";
        assert_eq!(exported_vars(source), ["Operations", "Shared"]);
    }
}
