//! Kotlin/JVM: `ktlint` (the Kotlin ecosystem's linter and formatter) must report nothing on the
//! module's files (tables and runtime), and `kotlinc` compiles them with warnings as errors and
//! explicit API mode; a Java caller of the tables object (conformance/harness/kotlin/java/) is
//! compiled with `javac -Werror -Xlint:all` and run against them. The harness runs on `java` with
//! the Kotlin stdlib. The runtime (runtime/kotlin/) is checked alone by [`Toolchain::runtime_tests`]:
//! the same ktlint and kotlinc flags, its unit tests (a `main` runner, no test library), and its
//! Java callers. The OkHttp adapter (runtime/kotlin/RetryInterceptor.kt) is checked with the
//! runtime, in the same compile, against the OkHttp and Okio jars scripts/bootstrap.d/kotlin.sh
//! installs (OkHttp 4.12 and, compiled and unit-tested again, OkHttp 5), and drives the fault
//! matrix's runner (conformance/faults/harness/kotlin/) once per OkHttp line. ktlint and
//! kotlinc are installed by scripts/bootstrap-toolchains.sh; versions are pinned so findings never
//! drift between machines.

use super::{
    code_outside_comments, command, copy_harness, copy_sources, root, run, shell, Built, CFamily,
    CommentState, FaultRun, Module, Toolchain,
};
use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub struct Kotlin;

/// Flags of every compile: warnings are errors, and every public declaration states its
/// visibility and type as library code must.
const KOTLINC_FLAGS: [&str; 2] = ["-Werror", "-Xexplicit-api=strict"];

/// The ktlint release scripts/bootstrap-toolchains.sh installs (KTLINT_VERSION there).
pub const KTLINT_VERSION: &str = "1.8.0";

/// The `.editorconfig` ktlint runs with, written next to the copy of the module so that no
/// `.editorconfig` of the surrounding checkout applies (`root = true` stops the search upwards).
///
/// Code style `ktlint_official`: ktlint's default since 1.0, so it is what an SDK gets when it adds
/// ktlint and configures nothing, and the strictest about layout (multi-line wrapping, trailing
/// commas, 140 columns). The module happens to pass `intellij_idea` as well; `android_studio`
/// (100 columns, no trailing commas) contradicts `ktlint_official`, so one style has to be
/// chosen. Every rule keeps its default: a generated file must not need exemptions from the SDK
/// that vendors it.
const KTLINT_EDITORCONFIG: &str = "root = true

[*.{kt,kts}]
ktlint_code_style = ktlint_official
";

fn ktlint_install_hint() -> String {
    format!("run `bash scripts/bootstrap-toolchains.sh` to install ktlint {KTLINT_VERSION}")
}

impl Toolchain for Kotlin {
    fn language(&self) -> &'static str {
        "kotlin"
    }

    fn lint(&self, module: &Module, work: &Path) -> Result<()> {
        for file in &module.files {
            layout(file)?;
        }
        std::fs::create_dir_all(work)?;
        ktlint(&module.files, &work.join("ktlint"))?;
        let classes = work.join("classes");
        kotlinc(&module.files, &classes, "kotlin lint: kotlinc", OkHttp::V4)?;
        java_callers(module, &classes, &work.join("java"))
    }

    fn display_name(&self) -> &'static str {
        "Kotlin"
    }

    fn versions(&self) -> String {
        format!(
            "{} on {}",
            shell("kotlinc", &["-version"]).replace("info: ", ""),
            shell("java", &["-version"])
        )
    }

    fn bench_program(&self, module: &Module, work: &Path, shared: &Path) -> Result<Vec<String>> {
        let _ = shared;
        build_kotlin(module, work)
    }

    /// The runtime and the OkHttp adapter (`RetryInterceptor.kt`), with their unit tests, in one
    /// compile against OkHttp (the runtime itself uses none of it).
    fn runtime_tests(&self, work: &Path) -> Result<()> {
        let dir = root().join("runtime/kotlin");
        let runtime = dir.join("RetryRuntime.kt");
        let adapter = dir.join(ADAPTER_FILE);
        let tests = dir.join("test/RetryRuntimeTest.kt");
        let adapter_tests = dir.join("test/RetryInterceptorTest.kt");
        let editorconfig = std::fs::read_to_string(dir.join(".editorconfig"))
            .context("reading runtime/kotlin/.editorconfig")?;
        if editorconfig != KTLINT_EDITORCONFIG {
            bail!("runtime/kotlin/.editorconfig differs from KTLINT_EDITORCONFIG in xtask/src/toolchains/kotlin.rs; keep them equal");
        }
        layout(&runtime)?;
        layout(&adapter)?;
        let sources = [
            runtime.clone(),
            adapter.clone(),
            tests,
            adapter_tests.clone(),
        ];
        ktlint(&sources, &work.join("ktlint"))?;
        let classes = work.join("classes");
        kotlinc(&sources, &classes, "kotlin runtime: kotlinc", OkHttp::V4)?;
        let classpath = format!(
            "{}:{}:{}",
            classes.display(),
            okhttp_classpath(OkHttp::V4)?,
            stdlib()?.display()
        );
        // The adapter and its tests again on OkHttp 5: the same source must compile warning-free and
        // behave the same on both lines.
        let classes5 = work.join("classes-okhttp5");
        kotlinc(
            &[runtime.clone(), adapter.clone(), adapter_tests],
            &classes5,
            "kotlin runtime (OkHttp 5): kotlinc",
            OkHttp::V5,
        )?;
        let classpath5 = format!(
            "{}:{}:{}",
            classes5.display(),
            okhttp_classpath(OkHttp::V5)?,
            stdlib()?.display()
        );
        let printed = run(
            command("java").args([
                "-cp",
                &classpath5,
                "retrygen.adaptertest.RetryInterceptorTestKt",
            ]),
            "kotlin OkHttp adapter unit tests (OkHttp 5)",
        )?;
        print!("OkHttp 5: {printed}");
        for (main, what) in [
            (
                "retrygen.generated.RetryRuntimeTestKt",
                "kotlin runtime unit tests",
            ),
            (
                "retrygen.adaptertest.RetryInterceptorTestKt",
                "kotlin OkHttp adapter unit tests",
            ),
        ] {
            let printed = run(command("java").args(["-cp", &classpath, main]), what)?;
            print!("{printed}");
        }
        // The README's snippets compile as a user copies them, with a spec's tables object.
        readme_snippets(
            &dir.join("README.md"),
            &[runtime.clone(), adapter.clone()],
            &work.join("readme"),
        )?;
        // examples/kotlin: OpenAPI Generator's Kotlin client with the adapter, against the server.
        example_sdk(&work.join("example"))?;
        let java = work.join("java");
        javac(
            &[
                dir.join("test/JavaCallers.java"),
                dir.join("test/InterceptorFromJava.java"),
            ],
            &classpath,
            &java,
        )?;
        for main in [
            "retrygen.javacallers.JavaCallers",
            "retrygen.javacallers.InterceptorFromJava",
        ] {
            let printed = run(
                command("java").args(["-cp", &format!("{}:{classpath}", java.display()), main]),
                "kotlin runtime: Java callers",
            )?;
            print!("{printed}");
        }
        Ok(())
    }

    /// `conformance/faults/harness/kotlin/FaultRunner.kt` compiled with the module (its
    /// `RetryInterceptor` included) against OkHttp, run on `java`.
    fn fault_runner(&self, module: &Module, work: &Path) -> Result<Vec<FaultRun>> {
        let src = work.join("src");
        std::fs::create_dir_all(&src)?;
        let mut sources = Vec::new();
        for file in &module.files {
            let copy = src.join(file.file_name().context("module path has no file name")?);
            std::fs::copy(file, &copy)?;
            sources.push(copy);
        }
        if !sources.iter().any(|s| s.ends_with(ADAPTER_FILE)) {
            bail!("kotlin faults: the module has no {ADAPTER_FILE} (render it with the okhttp adapter)");
        }
        let runner = src.join("FaultRunner.kt");
        std::fs::copy(
            root().join("conformance/faults/harness/kotlin/FaultRunner.kt"),
            &runner,
        )
        .context("copying conformance/faults/harness/kotlin/FaultRunner.kt")?;
        sources.push(runner);
        let mut runs = Vec::new();
        for (okhttp, name, classes) in [
            (OkHttp::V4, "kotlin", "classes"),
            (OkHttp::V5, "kotlin-okhttp5", "classes-okhttp5"),
        ] {
            let classes = work.join(classes);
            // resilience4j-retry: the peer the overhead mode measures beside the adapter.
            let peer = resilience4j_classpath()?;
            kotlinc_with(
                &sources,
                &classes,
                &format!("{name} faults: kotlinc"),
                okhttp,
                Some(&peer),
            )?;
            let classpath = format!(
                "{}:{}:{peer}:{}",
                classes.display(),
                okhttp_classpath(okhttp)?,
                stdlib()?.display()
            );
            runs.push(FaultRun {
                protocols: &["http1", "h2c", "http1-tls", "h2"],
                name: name.to_string(),
                built: Built {
                    argv: vec![
                        "java".into(),
                        "-cp".into(),
                        classpath,
                        "FaultRunnerKt".into(),
                    ],
                    cwd: work.to_path_buf(),
                },
            });
        }
        Ok(runs)
    }

    fn build(&self, module: &Module, work: &Path) -> Result<Built> {
        copy_harness("kotlin", work)?;
        let mut sources = Vec::new();
        for file in &module.files {
            let copy = work.join(file.file_name().context("module path has no file name")?);
            std::fs::copy(file, &copy)?;
            sources.push(copy);
        }
        sources.push(work.join("Harness.kt"));
        let classes = work.join("classes");
        kotlinc(&sources, &classes, "kotlin harness: kotlinc", OkHttp::V4)?;
        let classpath = format!("{}:{}", classes.display(), stdlib()?.display());
        Ok(Built {
            argv: vec!["java".into(), "-cp".into(), classpath, "HarnessKt".into()],
            cwd: work.to_path_buf(),
        })
    }
}

/// [`style_findings`] of one file; any finding fails.
fn layout(file: &Path) -> Result<()> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let findings = style_findings(&text);
    if !findings.is_empty() {
        bail!(
            "kotlin lint: {} finding(s) in {}:\n{}",
            findings.len(),
            file.display(),
            findings.join("\n")
        );
    }
    Ok(())
}

/// Compiles and runs `conformance/harness/kotlin/java/TablesFromJava.java` against the compiled
/// module: a Java caller of the tables object (static functions and fields, `@JvmOverloads`
/// constructors, unmodifiable tables). The package and object are the module's.
fn java_callers(module: &Module, classes: &Path, work: &Path) -> Result<()> {
    let tables = std::fs::read_to_string(module.tables())?;
    let package = tables
        .lines()
        .find_map(|l| l.strip_prefix("package "))
        .context("the tables file declares no package")?;
    let object = module
        .tables()
        .file_stem()
        .context("module path has no file name")?
        .to_string_lossy()
        .into_owned();
    let source = std::fs::read_to_string(
        root().join("conformance/harness/kotlin/java/TablesFromJava.java"),
    )?
    .replace("retrygen.generated", package)
    .replace("RetryPolicies", &object);
    let src = work.join("src");
    std::fs::create_dir_all(&src)?;
    let java_file = src.join("TablesFromJava.java");
    std::fs::write(&java_file, source)?;
    let classpath = format!("{}:{}", classes.display(), stdlib()?.display());
    let out = work.join("classes");
    javac(&[java_file], &classpath, &out)?;
    run(
        command("java").args([
            "-cp",
            &format!("{}:{classpath}", out.display()),
            "retrygen.javacallers.TablesFromJava",
        ]),
        "kotlin lint: Java caller of the tables",
    )?;
    Ok(())
}

/// The scenarios examples/kotlin/ runs through its generated SDK against the fault server
/// (SdkTest.kt knows each one's call and result); the server's counts are checked here.
const EXAMPLE_SCENARIOS: &[&str] = &[
    "get-503-503-200",
    "create-503-not-replayable",
    "create-reset-arrives-once",
    "kill-reset-arrives-twice",
    "snapshot-minted-key-reset",
    "get-body-cut-read-in-loop-retried",
];

/// examples/kotlin/ in `work`: OpenAPI Generator's CLI (scripts/bootstrap.d/kotlin.sh pins it)
/// generates the Kotlin client (`jvm-okhttp4`, Gson) from conformance/faults/spec.yaml, compiled
/// as generated (its warnings are the generator's); the example's own files, ktlint-clean and
/// compiled with warnings as errors beside the fault module (golden/faults/kotlin/), install the
/// adapter and run the scenarios through the generated API against a real fault server, whose
/// arrivals must be the scenarios'.
fn example_sdk(work: &Path) -> Result<()> {
    let jars = std::fs::read_to_string(root().join(".cache/toolchains/openapi-generator-classpath"))
        .context("reading .cache/toolchains/openapi-generator-classpath; run `bash scripts/bootstrap-toolchains.sh`")?;
    let mut jars = jars.trim().split(':');
    let (cli, gson) = match (jars.next(), jars.next()) {
        (Some(cli), Some(gson)) => (cli.to_string(), gson.to_string()),
        _ => bail!("openapi-generator-classpath names no CLI and Gson jars"),
    };
    if work.exists() {
        std::fs::remove_dir_all(work)?;
    }
    let generated = work.join("generated");
    run(
        command("java")
            .args(["-jar", &cli, "generate", "-g", "kotlin", "-i"])
            .arg(root().join("conformance/faults/spec.yaml"))
            .arg("-o")
            .arg(&generated)
            .arg("--additional-properties=library=jvm-okhttp4,serializationLibrary=gson,packageName=retrygen.example.sdk,omitGradleWrapper=true"),
        "openapi-generator (examples/kotlin)",
    )?;
    let mut sources = Vec::new();
    collect_kotlin(&generated.join("src/main/kotlin"), &mut sources)?;
    let okhttp = okhttp_classpath(OkHttp::V5)?;
    let generated_classes = work.join("generated-classes");
    run(
        kotlinc_command()
            .arg("-nowarn")
            .arg("-cp")
            .arg(format!("{okhttp}:{gson}"))
            .arg("-d")
            .arg(&generated_classes)
            .args(&sources),
        "kotlinc (examples/kotlin: the generated client)",
    )?;
    let example = root().join("examples/kotlin");
    let files = vec![example.join("Sdk.kt"), example.join("SdkTest.kt")];
    ktlint(&files, &work.join("ktlint"))?;
    let module = root().join("golden/faults/kotlin");
    let mut all = vec![
        module.join("RetryRuntime.kt"),
        module.join(ADAPTER_FILE),
        module.join("RetryPolicies.kt"),
    ];
    all.extend(files);
    let classes = work.join("classes");
    let extra = format!("{}:{gson}", generated_classes.display());
    kotlinc_with(
        &all,
        &classes,
        "kotlinc (examples/kotlin)",
        OkHttp::V5,
        Some(&extra),
    )?;
    let server = crate::faults::start_server()?;
    let run_name = "kotlin-example";
    let classpath = format!(
        "{}:{extra}:{okhttp}:{}",
        classes.display(),
        stdlib()?.display()
    );
    let report = run(
        command("java")
            .args(["-cp", &classpath, "retrygen.example.SdkTestKt"])
            .envs(server.env("http1"))
            .env("RETRYGEN_FAULT_RUN", run_name)
            .env("RETRYGEN_EXAMPLE_SCENARIOS", EXAMPLE_SCENARIOS.join(",")),
        "examples/kotlin against the fault server",
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
    }
    if !problems.is_empty() {
        bail!(
            "examples/kotlin: the server's counts differ:\n  {}\n{report}",
            problems.join("\n  ")
        );
    }
    println!(
        "runtime kotlin: examples/kotlin (OpenAPI Generator's jvm-okhttp4 client, the adapter in 3 lines): {} scenarios through the SDK agree with the fault server",
        EXAMPLE_SCENARIOS.len()
    );
    Ok(())
}

/// Every `.kt` file under `dir`, in a stable order.
fn collect_kotlin(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .collect::<std::io::Result<_>>()?;
    entries.sort_by_key(std::fs::DirEntry::path);
    for entry in entries {
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            collect_kotlin(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "kt") {
            out.push(path);
        }
    }
    Ok(())
}

/// The marker line before each ` ```kotlin ` block of runtime/kotlin/README.md that must compile.
const README_MARKER: &str = "<!-- compiled by runtime-tests (xtask/src/toolchains/kotlin.rs) -->";

/// Compiles the README's marked snippets, in order, as one function (their imports at the top)
/// with the runtime and adapter `sources` and the fault spec's tables object
/// (golden/faults/kotlin/RetryPolicies.kt), warnings as errors: an install that does not compile
/// as written fails the runtime tests. The snippets are compiled, not run (they name
/// api.example.com).
fn readme_snippets(readme: &Path, sources: &[PathBuf], work: &Path) -> Result<()> {
    let text =
        std::fs::read_to_string(readme).with_context(|| format!("reading {}", readme.display()))?;
    let mut imports = Vec::new();
    let mut body = Vec::new();
    let mut blocks = 0;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() != README_MARKER {
            continue;
        }
        if lines.next().map(str::trim) != Some("```kotlin") {
            bail!(
                "{}: a snippet marker not followed by ```kotlin",
                readme.display()
            );
        }
        blocks += 1;
        for line in lines.by_ref() {
            if line.trim_start().starts_with("```") {
                break;
            }
            if line.starts_with("import ") {
                if !imports.contains(&line) {
                    imports.push(line);
                }
            } else {
                body.push(line);
            }
        }
    }
    if blocks < 2 {
        bail!(
            "{}: expected the install and the per-request snippets marked with {README_MARKER}",
            readme.display()
        );
    }
    imports.sort_unstable();
    let mut source = String::from("package retrygen.readme\n\n");
    for import in &imports {
        source.push_str(import);
        source.push('\n');
    }
    source.push_str(
        "\n/** The runtime README's snippets, in order. */\npublic fun readmeSnippets() {\n",
    );
    for line in &body {
        if !line.is_empty() {
            source.push_str("    ");
            source.push_str(line);
        }
        source.push('\n');
    }
    source.push_str("}\n");
    std::fs::create_dir_all(work)?;
    let file = work.join("ReadmeSnippets.kt");
    std::fs::write(&file, source)?;
    let mut all = sources.to_vec();
    all.push(root().join("golden/faults/kotlin/RetryPolicies.kt"));
    all.push(file);
    kotlinc(
        &all,
        &work.join("classes"),
        "kotlin runtime: the README's snippets",
        OkHttp::V4,
    )
}

/// Compiles Java `sources` against `classpath` into `out`, every lint on and warnings as errors.
fn javac(sources: &[PathBuf], classpath: &str, out: &Path) -> Result<()> {
    run(
        command("javac")
            .args(["-Werror", "-Xlint:all", "-cp", classpath, "-d"])
            .arg(out)
            .args(sources),
        "javac (Java callers)",
    )?;
    Ok(())
}

/// Runs ktlint (default rules, [`KTLINT_EDITORCONFIG`]) over copies of `files` in `dir`; any
/// finding fails, and the error lists every finding line (`File.kt:LINE:COL: message (rule)`).
pub(crate) fn ktlint(files: &[PathBuf], dir: &Path) -> Result<()> {
    let version = command("ktlint")
        .arg("--version")
        .output()
        .with_context(|| {
            format!(
                "kotlin lint: ktlint is not installed; {}",
                ktlint_install_hint()
            )
        })?;
    let printed = String::from_utf8_lossy(&version.stdout);
    // "ktlint version 1.8.0"
    if !version.status.success() || printed.split_whitespace().last() != Some(KTLINT_VERSION) {
        bail!(
            "kotlin lint: ktlint {KTLINT_VERSION} is required (`ktlint --version` printed {:?}{}); {}",
            printed.trim(),
            if version.status.success() { String::new() } else { format!(", {}", version.status) },
            ktlint_install_hint()
        );
    }
    std::fs::create_dir_all(dir)?;
    let mut names = Vec::new();
    for file in files {
        let name = file
            .file_name()
            .context("module path has no file name")?
            .to_string_lossy()
            .into_owned();
        std::fs::copy(file, dir.join(&name))?;
        names.push(name);
    }
    std::fs::write(dir.join(".editorconfig"), KTLINT_EDITORCONFIG)?;
    // Files are named relative to `dir`, so findings read `RetryPolicies.kt:12:5: ...`.
    let output = command("ktlint")
        .args(["--relative", "--reporter=plain", "--log-level=error"])
        .args(&names)
        .current_dir(dir)
        .output()
        .with_context(|| {
            format!(
                "kotlin lint: cannot start ktlint; {}",
                ktlint_install_hint()
            )
        })?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let findings: Vec<&str> = stdout
        .lines()
        .filter(|line| {
            names
                .iter()
                .any(|name| line.starts_with(&format!("{name}:")))
        })
        .collect();
    if !findings.is_empty() {
        bail!(
            "kotlin lint: ktlint {KTLINT_VERSION} found {} problem(s) in {} (`ktlint --format` shows the expected layout):\n{}",
            findings.len(),
            names.join(", "),
            findings.join("\n")
        );
    }
    if !output.status.success() {
        bail!(
            "kotlin lint: ktlint failed ({}):\n{stdout}{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(())
}

/// Compiles `sources` into `out`; any diagnostic (warnings are errors) fails. Sources that hold
/// the OkHttp adapter ([`ADAPTER_FILE`]) compile against `okhttp`.
pub(crate) fn kotlinc(sources: &[PathBuf], out: &Path, what: &str, okhttp: OkHttp) -> Result<()> {
    kotlinc_with(sources, out, what, okhttp, None)
}

/// [`kotlinc`] with `extra` jars (joined by `:`) on the classpath too.
fn kotlinc_with(
    sources: &[PathBuf],
    out: &Path,
    what: &str,
    okhttp: OkHttp,
    extra: Option<&str>,
) -> Result<()> {
    let mut cmd = kotlinc_command();
    cmd.args(KOTLINC_FLAGS);
    if sources.iter().any(|s| s.ends_with(ADAPTER_FILE)) {
        let mut classpath = okhttp_classpath(okhttp)?;
        if let Some(extra) = extra {
            classpath = format!("{classpath}:{extra}");
        }
        cmd.arg("-cp").arg(classpath);
    }
    cmd.arg("-d").arg(out).args(sources);
    let output = cmd.output().with_context(|| format!("{what}: cannot start kotlinc; run `bash scripts/bootstrap-toolchains.sh` to install it"))?;
    let diagnostics = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if !output.status.success() || !diagnostics.trim().is_empty() {
        bail!("{what} failed ({}):\n{diagnostics}", output.status);
    }
    Ok(())
}

/// `kotlinc` with room for its JIT's code: the launcher's default, C1 only
/// (`-XX:TieredStopAtLevel=1`), sizes the code cache at 48 MB, which the runtime, the adapter and
/// their tests in one compile filled now and then (the JVM then stops compiling and fails with
/// `Out of space in CodeCache`). A `KOTLINC_JAVA_OPTS` of the caller's is kept.
fn kotlinc_command() -> std::process::Command {
    let mut cmd = command("kotlinc");
    if std::env::var_os("KOTLINC_JAVA_OPTS").is_none() {
        cmd.env(
            "KOTLINC_JAVA_OPTS",
            "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m",
        );
    }
    cmd
}

/// The OkHttp adapter's file name (runtime/kotlin/, and in a module rendered with `okhttp`).
const ADAPTER_FILE: &str = "RetryInterceptor.kt";

/// The two OkHttp lines the adapter supports: 4.12 (`okhttp`) and 5 (`okhttp-jvm`).
#[derive(Clone, Copy)]
pub(crate) enum OkHttp {
    V4,
    V5,
}

/// The OkHttp and Okio jars of `okhttp` scripts/bootstrap.d/kotlin.sh records in
/// `.cache/toolchains/okhttp-classpath` (4.12) or `okhttp5-classpath` (5), joined by `:`.
fn okhttp_classpath(okhttp: OkHttp) -> Result<String> {
    let name = match okhttp {
        OkHttp::V4 => "okhttp-classpath",
        OkHttp::V5 => "okhttp5-classpath",
    };
    let file = root().join(".cache/toolchains").join(name);
    let hint = "run `bash scripts/bootstrap-toolchains.sh` to install OkHttp";
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("reading {}; {hint}", file.display()))?;
    let classpath = text.trim().to_string();
    for jar in classpath.split(':') {
        if !Path::new(jar).is_file() {
            bail!(
                "{} names {jar}, which does not exist; {hint}",
                file.display()
            );
        }
    }
    Ok(classpath)
}

/// The resilience4j-retry jars scripts/bootstrap.d/kotlin.sh records in
/// `.cache/toolchains/resilience4j-classpath` (the fault runner's bench peer), joined by `:`.
fn resilience4j_classpath() -> Result<String> {
    let file = root().join(".cache/toolchains/resilience4j-classpath");
    let hint = "run `bash scripts/bootstrap-toolchains.sh` to install resilience4j-retry";
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("reading {}; {hint}", file.display()))?;
    let classpath = text.trim().to_string();
    for jar in classpath.split(':') {
        if !Path::new(jar).is_file() {
            bail!(
                "{} names {jar}, which does not exist; {hint}",
                file.display()
            );
        }
    }
    Ok(classpath)
}

/// The Kotlin stdlib jar the bootstrap script records in `.cache/toolchains/kotlin-classpath`.
fn stdlib() -> Result<PathBuf> {
    let file = root().join(".cache/toolchains/kotlin-classpath");
    let text = std::fs::read_to_string(&file).with_context(|| {
        format!(
            "reading {}; run `bash scripts/bootstrap-toolchains.sh` to install Kotlin",
            file.display()
        )
    })?;
    let jar = PathBuf::from(text.trim());
    if !jar.is_file() {
        bail!(
            "{} names {}, which does not exist; run `bash scripts/bootstrap-toolchains.sh`",
            file.display(),
            jar.display()
        );
    }
    Ok(jar)
}

/// Layout rules kotlinc does not check: ASCII outside comments (every spec string arrives
/// escaped in literals, while the `//` header and path comments keep a spec's printable non-ASCII
/// characters; `/* */` and KDoc blocks are comments too), no tabs, no trailing whitespace, `\n`
/// line endings with a final newline, and a KDoc comment on every public declaration (constructor
/// properties are documented by their class's `@property`).
fn style_findings(text: &str) -> Vec<String> {
    let mut findings = Vec::new();
    if !text.ends_with('\n') || text.ends_with("\n\n") {
        findings.push("the file must end with exactly one newline".to_string());
    }
    let lines: Vec<&str> = text.split('\n').collect();
    // The indentation of the `class X(` line whose primary constructor is open, laid out one
    // parameter per line until the `)` at that same indentation.
    let mut constructor: Option<usize> = None;
    let mut comments = CommentState::default();
    for (index, line) in lines.iter().enumerate() {
        let at = index + 1;
        if !code_outside_comments(line, CFamily::Kotlin, &mut comments).is_ascii() {
            findings.push(format!(
                "line {at}: raw non-ASCII character outside a comment"
            ));
        }
        if line.contains('\t') || line.contains('\r') {
            findings.push(format!("line {at}: tab or carriage return"));
        }
        if line.ends_with(' ') {
            findings.push(format!("line {at}: trailing whitespace"));
        }
        let code = line.trim_start();
        let indent = line.len() - code.len();
        if let Some(open) = constructor {
            if indent == open && code.starts_with(')') {
                constructor = None;
            }
            continue;
        }
        if code.contains("class ") && code.ends_with('(') {
            constructor = Some(indent);
        }
        if code.starts_with("public ") && !code.ends_with(',') {
            let documented = lines[..index]
                .iter()
                .rev()
                .map(|l| l.trim())
                .find(|l| !l.starts_with('@'))
                .is_some_and(|l| l.ends_with("*/"));
            if !documented {
                findings.push(format!(
                    "line {at}: public declaration without a KDoc comment: {code}"
                ));
            }
        }
    }
    findings
}

// The bench program (bench/kotlin/), built against a rendered module.

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
        kotlinc_command()
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

#[cfg(test)]
mod tests {
    use super::style_findings;

    #[test]
    fn finds_undocumented_public_declarations() {
        let text = "/** Doc. */\n@JvmField\npublic val a: Int = 1\n\npublic val b: Int = 2\n";
        let findings = style_findings(text);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(findings[0].starts_with("line 5:"));
    }

    #[test]
    fn wrapped_constructor_properties_need_no_kdoc() {
        let text = "/** Doc. */\npublic class A(\n    public val b: Set<Int> =\n        setOf(\n            1,\n        ),\n    public val c: Set<Int> =\n        setOf(),\n) {\n    public fun d(\n        e: Int,\n    ): Int = e\n}\n";
        let findings = style_findings(text);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(findings[0].starts_with("line 10:"), "{findings:?}");
    }

    #[test]
    fn comment_lines_may_hold_non_ascii() {
        let text = "// Code generated by retrygen from h\u{e9}llo.yaml. DO NOT EDIT.\n\npackage a\n\n/**\n * Caf\u{e9}.\n */\npublic val b: Int = 1 // caf\u{e9}\n\n/** Caf\u{e9}. */\npublic val c: Int =\n    listOf(\n        // /caf\u{e9}\n        1,\n    ).size\n";
        let findings = style_findings(text);
        assert!(findings.is_empty(), "{findings:?}");
    }

    #[test]
    fn non_ascii_code_is_found_beside_comment_markers() {
        // A `//` inside a string literal does not start a comment.
        let findings = style_findings("val a = \" // caf\u{e9}\"\n");
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(findings[0].starts_with("line 1:"), "{findings:?}");
        // Code after a closed KDoc block is checked.
        let findings = style_findings("/**\n * A.\n */ val b = \"\u{e9}\"\n");
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(findings[0].starts_with("line 3:"), "{findings:?}");
    }

    /// The committed golden modules are what the templates render; none may trip the checks.
    #[test]
    fn golden_modules_have_no_findings() {
        let mut checked = 0;
        for entry in std::fs::read_dir(super::root().join("golden")).unwrap() {
            let dir = entry.unwrap().path().join("kotlin");
            for module in std::fs::read_dir(&dir).into_iter().flatten() {
                let module = module.unwrap().path();
                let findings = style_findings(&std::fs::read_to_string(&module).unwrap());
                assert!(findings.is_empty(), "{}: {findings:?}", module.display());
                checked += 1;
            }
        }
        assert!(checked > 0, "no golden Kotlin module found");
    }

    #[test]
    fn finds_layout_problems() {
        assert_eq!(style_findings("val a = \"\u{e9}\" \n").len(), 2);
        assert_eq!(style_findings("val a = 1").len(), 1);
    }
}
