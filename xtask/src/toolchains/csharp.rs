//! C#: Debian's mono `mcs` (installed by scripts/bootstrap-toolchains.sh) compiles the module (the
//! tables file and `RetryRuntime.cs`, with the `HttpClient` adapter `RetryHandler.cs` when a target
//! opts into it) at C# 7.2, the newest level mcs accepts (the module targets 7.3 and uses nothing
//! newer than 7.2), with every warning an error and XML documentation required on public members;
//! `mono` runs the harness, the fault-matrix runner and the unit tests of the runtime and the
//! adapter.

use super::{
    code_outside_comments, command, copy_harness, copy_sources, lossy, root, run, shell, Built,
    CFamily, CommentState, FaultRun, Module, Toolchain,
};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

pub struct CSharp;

/// Flags of every compile: language level, all warnings (level 4) as errors, the base class
/// library assemblies the module uses (System.dll holds Regex).
const MCS_FLAGS: [&str; 4] = [
    "-langversion:7.2",
    "-warnaserror+",
    "-warn:4",
    "-r:System.dll",
];

/// The adapter's file; a compile that includes it references `HttpClient`'s assembly
/// (Debian: libmono-system-net-http4.0-cil, installed by scripts/bootstrap.d/csharp.sh).
const ADAPTER_FILE: &str = "RetryHandler.cs";
const HTTP_REFERENCE: &str = "-r:System.Net.Http.dll";
/// The adapter's unit tests: a runner of their own (runtime/csharp/tests/), built with the adapter.
const ADAPTER_TESTS: &str = "RetryHandlerTests.cs";

impl Toolchain for CSharp {
    fn language(&self) -> &'static str {
        "csharp"
    }

    fn lint(&self, module: &Module, work: &Path) -> Result<()> {
        for file in &module.files {
            check_style(file)?;
        }
        std::fs::create_dir_all(work)?;
        // -doc turns a public member without an XML doc comment into warning CS1591, an error here.
        let doc = format!("-doc:{}", work.join("module.xml").display());
        let out = format!("-out:{}", work.join("module.dll").display());
        mcs(
            &["-target:library".into(), doc, out],
            &module.files,
            "csharp lint: mcs",
        )
    }

    fn display_name(&self) -> &'static str {
        "C#"
    }

    fn versions(&self) -> String {
        format!(
            "{}; {}",
            shell("mcs", &["--version"]),
            shell("mono", &["--version"])
        )
    }

    fn bench_program(&self, module: &Module, work: &Path, shared: &Path) -> Result<Vec<String>> {
        let _ = shared;
        build_csharp(module, work)
    }

    /// The runtime and the adapter with the hand-written tables of their tests: the style checks,
    /// a strict library compile with XML docs required, then the two test runners
    /// (`runtime/csharp/tests/`: the runtime's, and the adapter's against a server of its own on
    /// 127.0.0.1).
    fn runtime_tests(&self, work: &Path) -> Result<()> {
        let dir = root().join("runtime/csharp");
        let runtime = dir.join("RetryRuntime.cs");
        let adapter = dir.join(ADAPTER_FILE);
        let tests = dir.join("tests");
        let mut test_sources = Vec::new();
        for entry in std::fs::read_dir(&tests).with_context(|| tests.display().to_string())? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "cs") {
                test_sources.push(path);
            }
        }
        test_sources.sort();
        check_style(&runtime)?;
        check_style(&adapter)?;
        for source in &test_sources {
            check_style(source)?;
        }
        let tables = tests.join("TestTables.cs");
        let adapter_tests = tests.join(ADAPTER_TESTS);
        mcs(
            &[
                "-target:library".into(),
                format!("-doc:{}", work.join("runtime.xml").display()),
                format!("-out:{}", work.join("runtime.dll").display()),
            ],
            &[runtime.clone(), adapter.clone(), tables.clone()],
            "csharp runtime: mcs",
        )?;
        let exe = work.join("tests.exe");
        let mut sources = vec![runtime.clone()];
        sources.extend(
            test_sources
                .iter()
                .filter(|s| **s != adapter_tests)
                .cloned(),
        );
        mcs(
            &["-target:exe".into(), format!("-out:{}", exe.display())],
            &sources,
            "csharp runtime tests: mcs",
        )?;
        let output = run(
            command("mono")
                .arg("--debug")
                .arg(&exe)
                .arg(&runtime)
                .current_dir(work),
            "csharp runtime tests",
        )?;
        print!("{output}");
        let adapter_exe = work.join("adapter-tests.exe");
        mcs(
            &[
                "-target:exe".into(),
                format!("-out:{}", adapter_exe.display()),
            ],
            &[runtime, adapter.clone(), tables, adapter_tests],
            "csharp adapter tests: mcs",
        )?;
        let output = run(
            command("mono")
                .arg("--debug")
                .arg(&adapter_exe)
                .arg(&adapter)
                .current_dir(work),
            "csharp adapter tests",
        )?;
        print!("{output}");
        // The README's snippets (issue 20 item 6): compiled with a generated module, as a user would.
        let readme = std::fs::read_to_string(dir.join("README.md"))?;
        let snippets = work.join("ReadmeSnippets.cs");
        let (program, count) = readme_snippets(&readme)?;
        std::fs::write(&snippets, program)?;
        let golden = root().join("golden/faults/csharp");
        let mut sources: Vec<PathBuf> = ["RetryPolicies.cs", "RetryRuntime.cs", ADAPTER_FILE]
            .iter()
            .map(|f| golden.join(f))
            .collect();
        sources.push(snippets);
        mcs(
            &[
                "-target:exe".into(),
                format!("-out:{}", work.join("readme-snippets.exe").display()),
            ],
            &sources,
            "csharp README snippets: mcs",
        )?;
        println!("the README's {count} C# snippets compile with golden/faults/csharp/");
        sdk_example(&golden, work)
    }

    fn build(&self, module: &Module, work: &Path) -> Result<Built> {
        copy_harness("csharp", work)?;
        let mut sources = Vec::new();
        for file in &module.files {
            let copy = work.join(file.file_name().context("module file has no name")?);
            std::fs::copy(file, &copy)?;
            sources.push(copy);
        }
        sources.push(work.join("Harness.cs"));
        let exe = work.join("harness.exe");
        mcs(
            &["-target:exe".into(), format!("-out:{}", exe.display())],
            &sources,
            "csharp harness: mcs",
        )?;
        Ok(Built {
            argv: vec!["mono".into(), "--debug".into(), exe.display().to_string()],
            cwd: work.to_path_buf(),
        })
    }

    /// `conformance/faults/harness/csharp/FaultRunner.cs` compiled with the module (tables,
    /// runtime, `RetryHandler.cs`) into one exe, run by mono: one run, `csharp`, over HTTP/1.1
    /// and HTTP/1.1 over TLS (mono's HttpClient has no HTTP/2 client: no h2c, no h2).
    fn fault_runner(&self, module: &Module, work: &Path) -> Result<Vec<FaultRun>> {
        let harness = root().join("conformance/faults/harness/csharp");
        let mut sources = module.files.clone();
        sources.push(harness.join("FaultRunner.cs"));
        let exe = work.join("fault-runner.exe");
        // Mono.Security: the runner gives mono's TLS library the test CA as its trust anchor
        // (MonoTlsSettings.TrustAnchors), as mono's X509Chain cannot read the CA's ECDSA key.
        mcs(
            &[
                "-target:exe".into(),
                "-r:Mono.Security.dll".into(),
                format!("-out:{}", exe.display()),
            ],
            &sources,
            "csharp fault runner: mcs",
        )?;
        Ok(vec![FaultRun {
            protocols: &["http1", "http1-tls"],
            name: "csharp".into(),
            built: Built {
                argv: vec!["mono".into(), "--debug".into(), lossy(&exe)],
                cwd: work.to_path_buf(),
            },
        }])
    }
}

/// The scenarios `examples/csharp/` runs through its SDK's own calls (issue 20 item 6).
const EXAMPLE_SCENARIOS: [&str; 7] = [
    "get-503-503-200",
    "get-reset-exhausted",
    "get-body-cut-read-in-loop-retried",
    "get-override-max-retries-0-once",
    "create-503-not-replayable",
    "create-reset-arrives-once",
    "snapshot-minted-key-reset",
];

/// `examples/csharp/`: a hand-written HttpClient SDK with RetryHandler installed in three lines,
/// built with the golden fault-matrix module and run against the real fault server; each scenario's
/// arrivals (the server's count, bodies, keys) and outcome must be what scenarios.json expects.
fn sdk_example(golden: &Path, work: &Path) -> Result<()> {
    let dir = root().join("examples/csharp");
    let mut sources: Vec<PathBuf> = ["RetryPolicies.cs", "RetryRuntime.cs", ADAPTER_FILE]
        .iter()
        .map(|f| golden.join(f))
        .collect();
    for entry in std::fs::read_dir(&dir).with_context(|| dir.display().to_string())? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "cs") {
            // The layout rules, without the generated-file marker: this is the SDK team's code.
            let findings = style_findings(&std::fs::read_to_string(&path)?);
            if !findings.is_empty() {
                bail!("csharp lint: {}:\n{}", path.display(), findings.join("\n"));
            }
            sources.push(path);
        }
    }
    sources.sort();
    let exe = work.join("sdk-example.exe");
    mcs(
        &["-target:exe".into(), format!("-out:{}", exe.display())],
        &sources,
        "csharp SDK example: mcs",
    )?;
    let file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(
        root().join("conformance/faults/scenarios.json"),
    )?)?;
    let scenarios = file["scenarios"]
        .as_array()
        .context("scenarios.json: no scenarios")?;
    let server = crate::faults::start_server()?;
    let run_name = "csharp-sdk-example";
    let output = run(
        command("mono")
            .arg("--debug")
            .arg(&exe)
            .args(EXAMPLE_SCENARIOS)
            .env("RETRYGEN_FAULT_URL", server.url())
            .env("RETRYGEN_FAULT_RUN", run_name)
            .current_dir(work),
        "csharp SDK example",
    )?;
    let mut problems = Vec::new();
    let mut checked = 0;
    for line in output.lines().filter(|l| !l.trim().is_empty()) {
        let got: serde_json::Value =
            serde_json::from_str(line).with_context(|| format!("SDK example: {line}"))?;
        let id = got["id"].as_str().unwrap_or_default();
        let scenario = scenarios
            .iter()
            .find(|s| s["id"] == id)
            .with_context(|| format!("SDK example: no scenario {id}"))?;
        let arrivals: Vec<ExampleArrival> = server
            .arrivals(run_name, id)
            .into_iter()
            .map(|a| ExampleArrival {
                body_read: a.body_read,
                body: a.body,
                keys: a.keys,
            })
            .collect();
        problems.extend(
            example_problems(scenario, &got, &arrivals)
                .into_iter()
                .map(|p| format!("{id}: {p}")),
        );
        checked += 1;
    }
    if checked != EXAMPLE_SCENARIOS.len() {
        problems.push(format!(
            "{checked} lines for {} scenarios",
            EXAMPLE_SCENARIOS.len()
        ));
    }
    if !problems.is_empty() {
        bail!("csharp SDK example:\n{}", problems.join("\n"));
    }
    println!(
        "the SDK example (examples/csharp/) ran {checked} fault scenarios through its own calls"
    );
    Ok(())
}

/// What the SDK example checks of one arrival the fault server recorded.
struct ExampleArrival {
    body_read: bool,
    body: Vec<u8>,
    keys: Vec<String>,
}

/// What an SDK example's line and the server's arrivals get wrong against the scenario.
fn example_problems(
    scenario: &serde_json::Value,
    got: &serde_json::Value,
    arrivals: &[ExampleArrival],
) -> Vec<String> {
    let expect = &scenario["expect"];
    let mut problems = Vec::new();
    if Some(arrivals.len() as u64) != expect["arrivals"].as_u64() {
        problems.push(format!(
            "{} arrivals, want {}",
            arrivals.len(),
            expect["arrivals"]
        ));
    }
    let body = scenario["body"]["text"].as_str().unwrap_or_default();
    for (i, a) in arrivals.iter().enumerate() {
        if a.body_read && a.body != body.as_bytes() {
            problems.push(format!(
                "arrival {i}: body {:?}",
                String::from_utf8_lossy(&a.body)
            ));
        }
    }
    match expect["status"].as_u64() {
        Some(s) if s < 300 => {
            if got["success"] != true {
                problems.push(format!("want a success ({s}), got {got}"));
            }
        }
        Some(s) => {
            if got["status"].as_u64() != Some(s) {
                problems.push(format!("want the SDK's error for {s}, got {got}"));
            }
        }
        None => {
            if got["error"] != expect["error"] {
                problems.push(format!("want error {}, got {got}", expect["error"]));
            }
        }
    }
    if expect["key"] == "minted" {
        let first = arrivals.first().map(|a| a.keys.clone()).unwrap_or_default();
        if first.len() != 1 || first[0].len() != 36 || arrivals.iter().any(|a| a.keys != first) {
            problems.push(format!(
                "want one minted key on every arrival, got {:?}",
                arrivals.iter().map(|a| &a.keys).collect::<Vec<_>>()
            ));
        }
    }
    problems
}

/// The marker line above each README snippet that `runtime-tests` compiles.
const SNIPPET_MARKER: &str = "<!-- compiled by `cargo xtask runtime-tests --lang csharp`";

/// The README's marked ```csharp blocks, in order, as one program: their `using` lines on top (once
/// each), every other line in one `Main`, so that a later snippet may use an earlier one's names.
fn readme_snippets(readme: &str) -> Result<(String, usize)> {
    let mut usings: Vec<&str> = Vec::new();
    let mut body = Vec::new();
    let mut count = 0;
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        if !line.starts_with(SNIPPET_MARKER) {
            continue;
        }
        if lines.next() != Some("```csharp") {
            bail!("runtime/csharp/README.md: a ```csharp block must follow `{line}`");
        }
        count += 1;
        for code in lines.by_ref() {
            if code == "```" {
                break;
            }
            if code.starts_with("using ") {
                // Compared without a trailing comment: `using A; // why` and `using A;` are one.
                let directive = code.split("//").next().unwrap_or(code).trim_end();
                if !usings.contains(&directive) {
                    usings.push(directive);
                }
            } else if !code.is_empty() {
                body.push(format!("        {code}"));
            }
        }
    }
    if count == 0 {
        bail!("runtime/csharp/README.md: no snippet marked `{SNIPPET_MARKER}`");
    }
    let program = format!(
        "{}\n\ninternal static class ReadmeSnippets\n{{\n    internal static void Main()\n    {{\n{}\n    }}\n}}\n",
        usings.join("\n"),
        body.join("\n")
    );
    Ok((program, count))
}

/// The style checks of one file, and the `// <auto-generated/>` first line every generated file
/// and the runtime carry (Roslyn then treats them as generated: no nullable or analyzer warnings
/// in projects that turn those into errors).
pub(crate) fn check_style(file: &Path) -> Result<()> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let mut findings = style_findings(&text);
    let generated = file.components().all(|c| c.as_os_str() != "tests");
    if generated && !text.starts_with(AUTO_GENERATED) {
        findings.push(format!("line 1: must be `{}`", AUTO_GENERATED.trim_end()));
    }
    if !findings.is_empty() {
        bail!(
            "csharp lint: {} finding(s) in {}:\n{}",
            findings.len(),
            file.display(),
            findings.join("\n")
        );
    }
    Ok(())
}

const AUTO_GENERATED: &str = "// <auto-generated/>\n";

/// Compiles `sources`; any diagnostic (warnings are errors) fails.
pub(crate) fn mcs(extra: &[String], sources: &[PathBuf], what: &str) -> Result<()> {
    let mut cmd = command("mcs");
    cmd.args(MCS_FLAGS);
    if sources
        .iter()
        .any(|s| s.file_name().is_some_and(|n| n == ADAPTER_FILE))
    {
        cmd.arg(HTTP_REFERENCE);
    }
    cmd.args(extra).args(sources);
    let output = cmd.output().with_context(|| {
        format!(
            "{what}: cannot start mcs; run `bash scripts/bootstrap-toolchains.sh` to install mono"
        )
    })?;
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

/// Layout rules mcs does not check: ASCII outside comments (every spec string arrives escaped as
/// `\uXXXX` in literals, while the `//` header and path comments keep a spec's printable non-ASCII
/// characters; `///` and `/* */` are comments too), no tabs, no trailing whitespace, `\n` line
/// endings with one final newline.
fn style_findings(text: &str) -> Vec<String> {
    let mut findings = Vec::new();
    if !text.ends_with('\n') || text.ends_with("\n\n") {
        findings.push("the file must end with exactly one newline".to_string());
    }
    let mut comments = CommentState::default();
    for (index, line) in text.split('\n').enumerate() {
        let at = index + 1;
        if !code_outside_comments(line, CFamily::CSharp, &mut comments).is_ascii() {
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
    }
    findings
}

// The bench program (bench/csharp/), built against a rendered module.

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

#[cfg(test)]
mod tests {
    use super::style_findings;

    #[test]
    fn comment_lines_may_hold_non_ascii() {
        let text = "// Code generated by retrygen from h\u{e9}llo.yaml. DO NOT EDIT.\n\nnamespace A\n{\n    /// <summary>caf\u{e9}</summary>\n    /* caf\u{e9}\n       caf\u{e9} */\n    public class B { } // caf\u{e9}\n}\n";
        let findings = style_findings(text);
        assert!(findings.is_empty(), "{findings:?}");
    }

    #[test]
    fn non_ascii_code_is_found_beside_comment_markers() {
        // A `//` inside a string literal does not start a comment.
        let findings = style_findings("var a = \" // caf\u{e9}\";\n");
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(findings[0].starts_with("line 1:"), "{findings:?}");
        // Code after a closed block comment is checked.
        let findings = style_findings("/* a\n */ var b = \"\u{e9}\";\n");
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(findings[0].starts_with("line 2:"), "{findings:?}");
    }

    /// The committed golden modules are what the templates render; none may trip the checks.
    #[test]
    fn golden_modules_have_no_findings() {
        let mut checked = 0;
        for entry in std::fs::read_dir(super::super::root().join("golden")).unwrap() {
            let dir = entry.unwrap().path().join("csharp");
            for module in std::fs::read_dir(&dir).into_iter().flatten() {
                let module = module.unwrap().path();
                if let Err(e) = super::check_style(&module) {
                    panic!("{e:#}");
                }
                checked += 1;
            }
        }
        assert!(checked >= 2, "no golden C# module found");
    }

    #[test]
    fn readme_snippets_join_in_order() {
        let readme = "x\n<!-- compiled by `cargo xtask runtime-tests --lang csharp` -->\n```csharp\nusing System;\n\nvar a = 1;\n```\ntext\n<!-- compiled by `cargo xtask runtime-tests --lang csharp` -->\n```csharp\nusing System; // again\nvar b = a;\n```\n";
        let (program, count) = super::readme_snippets(readme).unwrap();
        assert_eq!(count, 2);
        assert_eq!(program.matches("using System;").count(), 1, "{program}");
        assert!(program.find("var a = 1;").unwrap() < program.find("var b = a;").unwrap());
        assert!(super::readme_snippets("no snippet\n").is_err());
    }

    #[test]
    fn finds_layout_problems() {
        assert!(style_findings("class A { } // caf\u{e9}\n").is_empty());
        assert_eq!(style_findings("var a = \"\u{e9}\";\t\n").len(), 2);
        assert_eq!(style_findings("class A { }").len(), 1);
    }
}
