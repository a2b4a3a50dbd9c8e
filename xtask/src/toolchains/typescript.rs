//! TypeScript: `tsc` with every strictness flag over the module (index.ts + runtime.ts),
//! `prettier --check` with prettier's defaults, the harness compiled by `tsc` and run by `node`,
//! and runtime/typescript's unit tests (`node:test`).
//!
//! Tools come from `.cache/toolchains/node` (scripts/bootstrap-toolchains.sh installs them with
//! `npm install --prefix`); versions are pinned so formatting never drifts between machines.

use super::{
    command, copy_harness, copy_sources, lossy, root, run, shell, Built, FaultRun, Module,
    Toolchain,
};
use anyhow::{anyhow, bail, Context, Result};
use retrygen::emit::{self, TemplateSource};
use retrygen::model::ModelOptions;
use serde_json::Value;
use std::path::{Path, PathBuf};

pub struct TypeScript;

pub const TYPESCRIPT_VERSION: &str = "5.9.3";
pub const TYPES_NODE_VERSION: &str = "20.19.43";
pub const PRETTIER_VERSION: &str = "3.10.1";
/// The npm undici the fault runner's h2c, TLS and HTTP/2 dispatchers come from
/// (scripts/bootstrap.d/typescript.sh; 7.x: undici 6 has no h2c, and its HTTP/2 hangs after a
/// reset).
pub const UNDICI_VERSION: &str = "7.30.3";

fn install_hint() -> String {
    format!(
        "run `bash scripts/bootstrap-toolchains.sh`, or `npm install --prefix .cache/toolchains/node --save-exact \
         typescript@{TYPESCRIPT_VERSION} @types/node@{TYPES_NODE_VERSION} prettier@{PRETTIER_VERSION}`"
    )
}

fn node_modules() -> PathBuf {
    root().join(".cache/toolchains/node/node_modules")
}

/// The fault runner's own node_modules: the pinned npm undici.
fn undici_modules() -> Result<PathBuf> {
    let modules = root().join(".cache/toolchains/node-undici/node_modules");
    let manifest = modules.join("undici/package.json");
    let text = std::fs::read_to_string(&manifest).unwrap_or_default();
    let pinned = format!("\"version\": \"{UNDICI_VERSION}\"");
    if !text.contains(&pinned) {
        bail!(
            "undici {UNDICI_VERSION} is not installed in {}; run `bash scripts/bootstrap-toolchains.sh`",
            modules.display()
        );
    }
    Ok(modules)
}

/// `work/node_modules` as a folder of links to every package of each of `sources` (the tools,
/// undici for the HTTP/2 unit tests and the fault runner, the example's packages).
fn merge_modules(work: &Path, sources: &[PathBuf]) -> Result<()> {
    let folder = work.join("node_modules");
    if let Ok(meta) = folder.symlink_metadata() {
        if meta.file_type().is_symlink() {
            std::fs::remove_file(&folder)?;
        } else {
            std::fs::remove_dir_all(&folder)?;
        }
    }
    std::fs::create_dir_all(&folder)?;
    for source in sources {
        for entry in
            std::fs::read_dir(source).with_context(|| format!("reading {}", source.display()))?
        {
            let entry = entry?;
            let link = folder.join(entry.file_name());
            if link.symlink_metadata().is_err() {
                #[cfg(unix)]
                std::os::unix::fs::symlink(entry.path(), &link)?;
                #[cfg(windows)]
                std::os::windows::fs::symlink_dir(entry.path(), &link)?;
            }
        }
    }
    Ok(())
}

/// Runs `program --version` and checks it prints `version`.
pub(crate) fn require(program: &str, version: &str) -> Result<()> {
    let output = command(program)
        .arg("--version")
        .output()
        .with_context(|| format!("{program} is not installed; {}", install_hint()))?;
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() || !text.contains(version) {
        bail!(
            "{program} {version} is required (found {:?}); {}",
            text.trim(),
            install_hint()
        );
    }
    Ok(())
}

/// The options every check of the module uses: tsc's strictest useful set, ES2020, no ambient
/// types (the module must not need Node's or the DOM's). The runtime's own `tsconfig.json`
/// (runtime/typescript/) holds the same options.
pub(crate) const MODULE_TSCONFIG: &str = r#"{
  "compilerOptions": {
    "strict": true,
    "noEmit": true,
    "noUnusedLocals": true,
    "noUnusedParameters": true,
    "noImplicitReturns": true,
    "noImplicitOverride": true,
    "noFallthroughCasesInSwitch": true,
    "noPropertyAccessFromIndexSignature": true,
    "exactOptionalPropertyTypes": true,
    "noUncheckedIndexedAccess": true,
    "isolatedModules": true,
    "target": "ES2020",
    "lib": ["ES2020"],
    "module": "ES2020",
    "moduleResolution": "bundler",
    "types": []
  },
  "files": [FILES]
}
"#;

/// The file names of `module`, tables first.
fn file_names(module: &Module) -> Result<Vec<String>> {
    module
        .files
        .iter()
        .map(|f| {
            Ok(f.file_name()
                .context("module file without a name")?
                .to_string_lossy()
                .into_owned())
        })
        .collect()
}

/// Copies every file of `module` into `work`; returns their names, tables first.
fn copy_module(module: &Module, work: &Path) -> Result<Vec<String>> {
    let names = file_names(module)?;
    for (file, name) in module.files.iter().zip(&names) {
        std::fs::copy(file, work.join(name))?;
    }
    Ok(names)
}

/// `prettier --check` with prettier's defaults over `files` in `work`: no config file, no
/// .editorconfig, and no ignore file (prettier reads .gitignore by default, which ignores
/// everything under target/).
pub(crate) fn prettier_check(work: &Path, files: &[String]) -> Result<()> {
    require("prettier", PRETTIER_VERSION)?;
    let ignore = work.join(".prettierignore-empty");
    std::fs::write(&ignore, "")?;
    let defaults = |cmd: &mut std::process::Command| {
        cmd.args(["--no-config", "--no-editorconfig", "--ignore-path"])
            .arg(&ignore)
            .current_dir(work);
    };
    let mut check = command("prettier");
    defaults(check.arg("--check"));
    let check = check
        .args(files)
        .output()
        .with_context(|| format!("prettier is not installed; {}", install_hint()))?;
    if check.status.success() {
        return Ok(());
    }
    let mut differences = String::new();
    for name in files {
        let mut format = command("prettier");
        defaults(&mut format);
        let formatted = format.arg(name).output()?;
        let original = std::fs::read_to_string(work.join(name))?;
        let formatted = String::from_utf8_lossy(&formatted.stdout);
        if original != formatted {
            differences.push_str(&format!(
                "{name}: {}\n",
                first_difference(&original, &formatted)
            ));
        }
    }
    bail!(
        "prettier --check failed:\n{}{}\n{differences}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr),
    )
}

/// `@types` of the bootstrapped toolchain (for the harness, the bench and the unit tests).
fn type_roots() -> Result<PathBuf> {
    let types = node_modules().join("@types");
    if !types.join("node/package.json").is_file() {
        bail!(
            "@types/node is not installed in {}; {}",
            types.display(),
            install_hint()
        );
    }
    Ok(types)
}

impl Toolchain for TypeScript {
    fn language(&self) -> &'static str {
        "typescript"
    }

    fn lint(&self, module: &Module, work: &Path) -> Result<()> {
        require("tsc", TYPESCRIPT_VERSION)?;
        std::fs::create_dir_all(work)?;
        let names = copy_module(module, work)?;
        let files: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
        std::fs::write(
            work.join("tsconfig.json"),
            MODULE_TSCONFIG.replace("FILES", &files.join(", ")),
        )?;
        run(
            command("tsc").arg("-p").arg(work).current_dir(work),
            "tsc --strict over the module",
        )?;
        prettier_check(work, &names)
    }

    fn display_name(&self) -> &'static str {
        "TypeScript"
    }

    fn versions(&self) -> String {
        format!(
            "{} on node {}",
            shell("tsc", &["--version"]),
            shell("node", &["--version"])
        )
    }

    fn bench_program(&self, module: &Module, work: &Path, shared: &Path) -> Result<Vec<String>> {
        let _ = shared;
        build_typescript(module, work)
    }

    /// runtime/typescript as its own project: tsc over runtime.ts and the fetch adapter
    /// (fetch.ts) with the module's options (tsconfig.json: no DOM or Node types), prettier over
    /// every .ts, then the unit tests (`node:test`, `*.test.ts`; fetch.test.ts against a local
    /// server, fetch-h2.test.ts over HTTP/2 with the pinned npm undici) compiled by tsc with
    /// Node's types and run by node. node_modules links the bootstrapped toolchain's packages
    /// (the tests read runtime.ts with the TypeScript parser) and undici.
    fn runtime_tests(&self, work: &Path) -> Result<()> {
        require("tsc", TYPESCRIPT_VERSION)?;
        let source = root().join("runtime/typescript");
        let mut sources = Vec::new();
        for entry in std::fs::read_dir(&source)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type()?.is_file() {
                std::fs::copy(entry.path(), work.join(&name))?;
                if name.ends_with(".ts") {
                    sources.push(name);
                }
            }
        }
        sources.sort();
        merge_modules(work, &[node_modules(), undici_modules()?])?;
        run(
            command("tsc")
                .args(["-p", "tsconfig.json"])
                .current_dir(work),
            "tsc --strict over runtime.ts and fetch.ts",
        )?;
        prettier_check(work, &sources)?;
        run(
            command("tsc")
                .args(["-p", "tsconfig.test.json", "--typeRoots"])
                .arg(type_roots()?)
                .current_dir(work),
            "compiling the runtime's unit tests",
        )?;
        let tests: Vec<String> = sources
            .iter()
            .filter_map(|s| s.strip_suffix(".test.ts"))
            .map(|s| format!("out/{s}.test.js"))
            .collect();
        if tests.is_empty() {
            bail!("runtime/typescript has no *.test.ts");
        }
        let output = run(
            command("node").arg("--test").args(&tests).current_dir(work),
            "node --test (the runtime's unit tests)",
        )?;
        let summary: Vec<&str> = output
            .lines()
            .filter(|l| {
                ["# tests ", "# pass ", "# fail "]
                    .iter()
                    .any(|p| l.starts_with(p))
            })
            .map(|l| l.trim_start_matches("# "))
            .collect();
        println!("runtime typescript: {}", summary.join(", "));
        let scratch = work.with_file_name("typescript-examples");
        if scratch.exists() {
            std::fs::remove_dir_all(&scratch)?;
        }
        readme_snippet(&scratch.join("readme"))?;
        example_sdk(&scratch.join("sdk"))?;
        Ok(())
    }

    fn build(&self, module: &Module, work: &Path) -> Result<Built> {
        require("tsc", TYPESCRIPT_VERSION)?;
        let types = type_roots()?;
        copy_harness("typescript", work)?;
        copy_module(module, work)?;
        run(
            command("tsc")
                .arg("-p")
                .arg(work)
                .arg("--typeRoots")
                .arg(&types)
                .current_dir(work),
            "compiling the TypeScript harness",
        )?;
        Ok(Built {
            argv: vec![
                "node".into(),
                work.join("out/harness.js").to_string_lossy().into_owned(),
            ],
            cwd: work.to_path_buf(),
        })
    }

    /// conformance/faults/harness/typescript/ (runner.ts) beside the module (index.ts,
    /// runtime.ts, fetch.ts), compiled by tsc with Node's types and run by node: one run,
    /// `typescript`, Node's own fetch (undici) through `retryingFetch`, over all four protocols:
    /// h2c and TLS through a dispatcher of the pinned npm undici (its node_modules linked into
    /// `work`): an `Agent` trusting the test CA, with `allowH2` for h2, or building undici 7's
    /// `H2CClient` for h2c.
    fn fault_runner(&self, module: &Module, work: &Path) -> Result<Vec<FaultRun>> {
        require("tsc", TYPESCRIPT_VERSION)?;
        let types = type_roots()?;
        // undici for the dispatchers, fetch-retry for the overhead mode's peer.
        merge_modules(work, &[undici_modules()?, sdk_modules()?])?;
        let harness = root().join("conformance/faults/harness/typescript");
        for name in ["runner.ts", "package.json", "tsconfig.json"] {
            std::fs::copy(harness.join(name), work.join(name))
                .with_context(|| format!("copying {}", harness.join(name).display()))?;
        }
        let names = copy_module(module, work)?;
        if !names.iter().any(|n| n == "fetch.ts") {
            bail!("the module has no fetch.ts: render it with the fetch adapter");
        }
        run(
            command("tsc")
                .arg("-p")
                .arg(work)
                .arg("--typeRoots")
                .arg(&types)
                .current_dir(work),
            "compiling the TypeScript fault runner",
        )?;
        Ok(vec![FaultRun {
            protocols: &["http1", "h2c", "http1-tls", "h2"],
            name: "typescript".into(),
            built: Built {
                argv: vec!["node".into(), lossy(&work.join("out/runner.js"))],
                cwd: work.to_path_buf(),
            },
        }])
    }
}

// The README's installation and examples/typescript/, checked by `runtime-tests`.

/// The pinned packages of examples/typescript/ and of the fault runner's overhead peer
/// (openapi-typescript, openapi-fetch, fetch-retry), installed by scripts/bootstrap.d/typescript.sh.
fn sdk_modules() -> Result<PathBuf> {
    let modules = root().join(".cache/toolchains/node-sdk/node_modules");
    for (name, version) in [
        ("openapi-typescript", "7.13.0"),
        ("openapi-fetch", "0.17.0"),
        ("fetch-retry", "6.0.0"),
    ] {
        let text =
            std::fs::read_to_string(modules.join(name).join("package.json")).unwrap_or_default();
        if !text.contains(&format!("\"version\": \"{version}\"")) {
            bail!(
                "{name} {version} is not installed in {}; run `bash scripts/bootstrap-toolchains.sh`",
                modules.display()
            );
        }
    }
    Ok(modules)
}

/// The module rendered from the fault matrix's spec with the fetch adapter, into `dir`.
fn render_fault_module(dir: &Path) -> Result<()> {
    let spec = root().join("conformance/faults/spec.yaml");
    let backend = emit::backend("typescript").context("no typescript backend")?;
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
        std::fs::write(dir.join(&file.name), file.contents)?;
    }
    Ok(())
}

/// `api.d.ts` in `work`: openapi-typescript's types for the fault matrix's spec.
fn generate_api_types(work: &Path, modules: &Path) -> Result<()> {
    let spec = root().join("conformance/faults/spec.yaml");
    run(
        command("node")
            .arg(modules.join("openapi-typescript/bin/cli.js"))
            .arg(&spec)
            .arg("-o")
            .arg(work.join("api.d.ts"))
            .current_dir(work),
        "openapi-typescript (the API document's types)",
    )?;
    Ok(())
}

/// The tsconfig of examples/typescript/ for `files`, written into `work`.
fn example_tsconfig(work: &Path, files: &[&str]) -> Result<()> {
    let text = std::fs::read_to_string(root().join("examples/typescript/tsconfig.json"))?;
    let mut config: Value = serde_json::from_str(&text)?;
    config["files"] = Value::from(files.to_vec());
    std::fs::write(
        work.join("tsconfig.json"),
        serde_json::to_string_pretty(&config)?,
    )?;
    Ok(())
}

/// The first ```ts block of the "HTTP client adapter" section of runtime/typescript/README.md:
/// a whole module (imports, base URL, openapi-fetch's client), compiled by tsc --strict beside
/// the module (`retry/`) and openapi-typescript's `api.d.ts`, as written.
fn readme_snippet(work: &Path) -> Result<()> {
    let readme = std::fs::read_to_string(root().join("runtime/typescript/README.md"))?;
    let section = readme
        .split_once("## HTTP client adapter")
        .context("runtime/typescript/README.md has no \"HTTP client adapter\" section")?
        .1;
    let snippet = section
        .split_once("```ts\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .context("no ```ts block in the README's HTTP client adapter section")?
        .0;
    let modules = sdk_modules()?;
    std::fs::create_dir_all(work)?;
    std::fs::write(work.join("snippet.ts"), snippet)?;
    std::fs::write(work.join("package.json"), "{ \"type\": \"module\" }\n")?;
    render_fault_module(&work.join("retry"))?;
    merge_modules(work, &[node_modules(), modules.clone()])?;
    generate_api_types(work, &modules)?;
    example_tsconfig(work, &["snippet.ts"])?;
    run(
        command("tsc")
            .args(["-p", "tsconfig.json", "--noEmit", "--typeRoots"])
            .arg(type_roots()?)
            .current_dir(work),
        "tsc --strict over the README's snippet",
    )?;
    println!("runtime typescript: the README's installation compiles");
    Ok(())
}

/// The scenarios examples/typescript/ runs through its SDK against the fault server: each is
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

/// examples/typescript/ in a scratch copy: openapi-typescript (pinned, from the bootstrapped
/// cache, offline) generates the API's types, the fetch adapter's module is rendered into
/// `retry/`, tsc --strict and prettier check the example, and its test runs the SDK's calls
/// against a real fault server; the server's counts must be the scenarios'.
fn example_sdk(work: &Path) -> Result<()> {
    let modules = sdk_modules()?;
    let source = root().join("examples/typescript");
    std::fs::create_dir_all(work)?;
    let mut sources = Vec::new();
    for entry in
        std::fs::read_dir(&source).with_context(|| format!("reading {}", source.display()))?
    {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            let name = entry.file_name().to_string_lossy().into_owned();
            std::fs::copy(entry.path(), work.join(&name))?;
            if name.ends_with(".ts") {
                sources.push(name);
            }
        }
    }
    sources.sort();
    prettier_check(work, &sources)?;
    render_fault_module(&work.join("retry"))?;
    merge_modules(work, &[node_modules(), modules.clone()])?;
    generate_api_types(work, &modules)?;
    run(
        command("tsc")
            .args(["-p", "tsconfig.json", "--typeRoots"])
            .arg(type_roots()?)
            .current_dir(work),
        "tsc --strict over examples/typescript",
    )?;
    let server = crate::faults::start_server()?;
    let run_name = "typescript-example";
    let report = run(
        command("node")
            .args(["--test", "out/sdk.test.js"])
            .current_dir(work)
            .envs(server.env("http1"))
            .env("RETRYGEN_FAULT_RUN", run_name)
            .env("RETRYGEN_EXAMPLE_SCENARIOS", EXAMPLE_SCENARIOS.join(",")),
        "node --test (examples/typescript against the fault server)",
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
            "examples/typescript: the server's counts differ:\n  {}\n{report}",
            problems.join("\n  ")
        );
    }
    println!(
        "runtime typescript: examples/typescript (openapi-typescript + openapi-fetch, the adapter in 3 lines): {} scenarios through the SDK agree with the fault server",
        EXAMPLE_SCENARIOS.len()
    );
    Ok(())
}

/// The first lines where `original` and `formatted` differ, for a readable failure.
fn first_difference(original: &str, formatted: &str) -> String {
    let a: Vec<&str> = original.lines().collect();
    let b: Vec<&str> = formatted.lines().collect();
    let Some(at) = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i)) else {
        return "(prettier's output is identical; check line endings)".into();
    };
    let show = |lines: &[&str], sign: char| -> String {
        lines
            .iter()
            .enumerate()
            .skip(at.saturating_sub(2))
            .take(8)
            .map(|(i, l)| format!("{sign}{:>5} {l}\n", i + 1))
            .collect()
    };
    format!(
        "first difference at line {}:\n--- generated\n{}+++ prettier\n{}",
        at + 1,
        show(&a, '-'),
        show(&b, '+')
    )
}

// The bench program (bench/typescript/), built against a rendered module.

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
