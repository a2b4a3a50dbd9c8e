//! `cargo xtask conformance`: every language's generated module, built with its real toolchain,
//! runs the same cases; any difference from the expected values (or between languages) fails.
//!
//! Cases come from `conformance/vectors/*.json` (data) and are also derived from every spec of
//! retrygen.toml: each operation exercised through concrete paths, its operationId looked up, the
//! non-replayable list probed, and the tables dumped, with the expected values computed by
//! retrygen's own model.

use crate::harness;
use crate::toolchains::{self, root, Built};
use anyhow::{anyhow, bail, Context, Result};
use retrygen::emit::{self, LanguageOptions, TemplateSource};
use retrygen::model::policy::{Policy, RawValue};
use retrygen::model::{Api, ModelOptions};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[path = "conformance_v2.rs"]
pub mod v2;

pub fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

pub fn opt_hex(s: Option<&str>) -> String {
    s.map_or_else(|| "-".to_string(), hex)
}

pub(crate) fn bits(f: f64) -> String {
    format!("{:016x}", f.to_bits())
}

pub(crate) fn csv(statuses: &[u16]) -> String {
    statuses
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn raw_value(v: &Value) -> RawValue {
    match v {
        Value::Number(n) => n
            .as_i64()
            .map(RawValue::Integer)
            .unwrap_or_else(|| RawValue::Float(n.as_f64().unwrap_or(f64::NAN))),
        Value::String(s) => RawValue::Text(s.clone()),
        Value::Array(items) => RawValue::List(items.iter().map(raw_value).collect()),
        _ => RawValue::Other("a JSON value of another kind"),
    }
}

fn policy_fields(p: &Policy) -> String {
    format!(
        "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
        p.max_retries,
        p.initial_backoff_ms,
        p.max_backoff_ms,
        bits(p.multiplier),
        p.jitter.name(),
        csv(&p.retryable_statuses),
        csv(&p.rejected_statuses),
        p.retry_after_cap_ms,
        p.deadline_ms
            .map_or_else(|| "-".to_string(), |d| d.to_string())
    )
}

/// One line for the harness and the line it must print back.
#[derive(Debug, Clone)]
pub struct Probe {
    pub input: String,
    pub expected: String,
    /// Where the case came from, for failure messages.
    pub origin: String,
}

/// Turns one vector case into a probe; `spec` filters classify-like cases.
pub fn vector_probe(case: &Value, file: &str, spec_key: &str) -> Result<Option<Probe>> {
    let name = case["name"]
        .as_str()
        .ok_or_else(|| anyhow!("{file}: a case without a name"))?;
    let origin = format!("{file}: {name}");
    let kind = case["kind"].as_str().unwrap_or("decide");
    let e = &case["expect"];
    let s = |v: &Value| v.as_str().map(str::to_string);
    if case["contract"].as_u64().unwrap_or(1) > 2 {
        bail!(
            "{origin}: a case of contract {}; the runtimes implement v2",
            case["contract"]
        );
    }
    if case.get("spec").is_some_and(|v| !v.is_null()) && case["spec"].as_str() != Some(spec_key) {
        return Ok(None);
    }
    if kind != "decide" && case["spec"].is_null() && !v2::SPEC_FREE.contains(&kind) {
        return Ok(None);
    }
    if v2::KINDS.contains(&kind) {
        return v2::vector_probe(case, kind, origin).map(Some);
    }
    let n = hex(name);
    let probe = match kind {
        "decide" => {
            let mut policy = Policy::default();
            if let Some(overrides) = case["policy"].as_object() {
                for (k, v) in overrides {
                    if k == "deadline_ms" && v.is_null() {
                        policy.deadline_ms = None;
                        continue;
                    }
                    policy
                        .set(k, &raw_value(v))
                        .map_err(|m| anyhow!("{origin}: {m}"))?;
                }
                policy.check().map_err(|m| anyhow!("{origin}: {m}"))?;
            }
            let i = &case["input"];
            let outcome = &i["outcome"];
            let (kind, status, ra, ram) = match outcome.get("failure").and_then(Value::as_str) {
                // Failures may carry header values too; the decision must ignore them.
                Some(f) => (
                    f.to_string(),
                    "-".to_string(),
                    opt_hex(outcome.get("retry_after").and_then(Value::as_str)),
                    opt_hex(outcome.get("retry_after_ms").and_then(Value::as_str)),
                ),
                None => (
                    "status".to_string(),
                    outcome["status"]
                        .as_u64()
                        .ok_or_else(|| anyhow!("{origin}: outcome needs status or failure"))?
                        .to_string(),
                    opt_hex(outcome.get("retry_after").and_then(Value::as_str)),
                    opt_hex(outcome.get("retry_after_ms").and_then(Value::as_str)),
                ),
            };
            let int = |k: &str| {
                i[k].as_i64()
                    .ok_or_else(|| anyhow!("{origin}: input.{k} must be an integer"))
            };
            let input = format!(
                "D\t{n}\t{}\t{}\t{}\t{kind}\t{status}\t{ra}\t{ram}\t{}\t{}\t{}\t{}\t{}",
                policy_fields(&policy),
                s(&i["class"]).ok_or_else(|| anyhow!("{origin}: input.class"))?,
                if i["has_idempotency_key"].as_bool().unwrap_or(false) {
                    1
                } else {
                    0
                },
                int("retries_used")?,
                int("elapsed_ms")?,
                int("previous_delay_ms")?,
                int("now_ms")?,
                bits(
                    i["random"]
                        .as_f64()
                        .ok_or_else(|| anyhow!("{origin}: input.random"))?
                ),
            );
            let expected = format!(
                "D\t{n}\t{}\t{}\t{}",
                if e["retry"]
                    .as_bool()
                    .ok_or_else(|| anyhow!("{origin}: expect.retry"))?
                {
                    1
                } else {
                    0
                },
                e["delay_ms"]
                    .as_u64()
                    .ok_or_else(|| anyhow!("{origin}: expect.delay_ms"))?,
                s(&e["reason"]).ok_or_else(|| anyhow!("{origin}: expect.reason"))?
            );
            Probe {
                input,
                expected,
                origin,
            }
        }
        "classify" => Probe {
            input: format!(
                "C\t{n}\t{}\t{}",
                hex(case["method"].as_str().unwrap_or_default()),
                hex(case["path"].as_str().unwrap_or_default())
            ),
            expected: format!(
                "C\t{n}\t{}\t{}",
                s(&e["class"]).unwrap_or_default(),
                opt_hex(e["operation_id"].as_str())
            ),
            origin,
        },
        "lookup" => Probe {
            input: format!(
                "I\t{n}\t{}",
                hex(case["operation_id"].as_str().unwrap_or_default())
            ),
            expected: format!(
                "I\t{n}\t{}\t{}",
                opt_hex(e["method"].as_str()),
                opt_hex(e["path"].as_str())
            ),
            origin,
        },
        other => bail!("{origin}: unknown case kind {other:?}"),
    };
    Ok(Some(probe))
}

/// A concrete request path for an operation's template.
pub fn concrete_path(op: &retrygen::model::Operation) -> String {
    use retrygen::model::path::{Piece, Segment};
    let mut out = String::new();
    for (i, s) in op.template.segments.iter().enumerate() {
        out.push('/');
        match s {
            Segment::Literal(l) => out.push_str(l),
            Segment::Param(_) => write!(out, "p{i}-zq").unwrap(),
            Segment::Mixed(pieces) => {
                for p in pieces {
                    match p {
                        Piece::Literal(l) => out.push_str(l),
                        Piece::Param(_) => write!(out, "m{i}").unwrap(),
                    }
                }
            }
        }
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

pub fn classify_probe(api: &Api, name: &str, method: &str, path: &str) -> Probe {
    let c = api.classify(method, path);
    let id = c
        .operation
        .and_then(|i| api.operations[i].operation_id.as_deref());
    let n = hex(name);
    Probe {
        input: format!("C\t{n}\t{}\t{}", hex(method), hex(path)),
        expected: format!("C\t{n}\t{}\t{}", c.class.name(), opt_hex(id)),
        origin: format!("derived: {}", shown(name)),
    }
}

/// Cases derived from the model of one spec, expected values from retrygen itself.
pub fn derived_probes(api: &Api) -> Result<Vec<Probe>> {
    let mut probes = Vec::new();
    for (i, op) in api.operations.iter().enumerate() {
        let path = concrete_path(op);
        let label = format!("op{i} {} {}", op.method, op.path);
        probes.push(classify_probe(
            api,
            &format!("{label} bare"),
            &op.method,
            &path,
        ));
        probes.push(classify_probe(
            api,
            &format!("{label} with base path"),
            &op.method,
            &format!("{}{path}", api.base_path),
        ));
        probes.push(classify_probe(
            api,
            &format!("{label} lower-case method, trailing slash, query"),
            &op.method.to_ascii_lowercase(),
            &format!("{}{path}/?q=1#f", api.base_path),
        ));
        if let Some(id) = &op.operation_id {
            let n = hex(&format!("{label} lookup"));
            probes.push(Probe {
                input: format!("I\t{n}\t{}", hex(id)),
                expected: format!("I\t{n}\t{}\t{}", hex(&op.method), hex(&op.path)),
                origin: format!("derived: {} lookup", shown(&label)),
            });
        }
    }
    let missing = hex("unknown operationId");
    probes.push(Probe {
        input: format!("I\t{missing}\t{}", hex("no such operation \u{1F600}")),
        expected: format!("I\t{missing}\t-\t-"),
        origin: "derived: unknown id".into(),
    });
    for method in ["GET", "PUT", "DELETE", "POST", "PATCH", "PURGE"] {
        probes.push(classify_probe(
            api,
            &format!("unknown path {method}"),
            method,
            "/definitely/not/a/known/path/zq",
        ));
    }
    probes.extend(v2::derived_probes(api)?);
    Ok(probes)
}

pub fn load_vectors(path: &Path) -> Result<Vec<(String, Value)>> {
    let files: Vec<PathBuf> = if path.is_dir() {
        let mut f: Vec<PathBuf> = std::fs::read_dir(path)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        f.sort();
        f
    } else {
        vec![path.to_path_buf()]
    };
    let mut cases = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        let doc: Value =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", file.display()))?;
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        for case in doc["cases"]
            .as_array()
            .ok_or_else(|| anyhow!("{name}: no `cases` array"))?
        {
            cases.push((name.clone(), case.clone()));
        }
    }
    Ok(cases)
}

/// A job of the project's retrygen.toml as a conformance suite: its short name, its spec, and
/// the languages it has targets for with their options.
pub struct ProjectSuite {
    pub name: String,
    pub spec: PathBuf,
    pub options: BTreeMap<String, LanguageOptions>,
}

/// Every job of the project's retrygen.toml, named like [`project_specs`].
pub fn project_suites() -> Result<Vec<ProjectSuite>> {
    let config =
        retrygen::config::load(&root().join("retrygen.toml")).map_err(|d| anyhow!("{d}"))?;
    Ok(config
        .jobs
        .iter()
        .zip(project_specs()?)
        .map(|(job, (name, spec))| ProjectSuite {
            name,
            spec,
            options: job
                .targets
                .iter()
                .map(|t| (t.language.clone(), t.options.clone()))
                .collect(),
        })
        .collect())
}

/// The specs of the project's retrygen.toml with a short name for each (its golden folder).
pub fn project_specs() -> Result<Vec<(String, PathBuf)>> {
    let config =
        retrygen::config::load(&root().join("retrygen.toml")).map_err(|d| anyhow!("{d}"))?;
    Ok(config
        .jobs
        .iter()
        .map(|job| {
            let name = job
                .targets
                .first()
                .and_then(|t| t.out.parent().and_then(Path::file_name))
                .map_or_else(|| "spec".to_string(), |n| n.to_string_lossy().into_owned());
            (name, job.spec.clone())
        })
        .collect())
}

pub struct Options {
    pub vectors: PathBuf,
    pub languages: Vec<String>,
    pub templates: TemplateSource,
    pub specs: Vec<ProjectSuite>,
}

/// One spec and the probes every language's module must answer for it.
pub struct Suite {
    /// Short name for output and the work folder's contents.
    pub name: String,
    pub spec: PathBuf,
    pub probes: Vec<Probe>,
    /// Language options by language (a retrygen.toml job's targets'); defaults for the others.
    pub options: BTreeMap<String, LanguageOptions>,
}

/// How one language did on one suite.
pub struct LanguageResult {
    pub language: String,
    pub cases: usize,
    pub failures: usize,
    pub status: String,
    /// Seconds spent rendering and linting (0 when the lint was skipped), building the harness,
    /// and running it.
    pub lint_seconds: f64,
    pub build_seconds: f64,
    pub run_seconds: f64,
}

impl LanguageResult {
    pub fn seconds(&self) -> f64 {
        self.lint_seconds + self.build_seconds + self.run_seconds
    }
}

/// [`harness::prepare_with`] with the lint optional and each step timed: the corpus run builds
/// every document in every language but may lint only some of them.
#[allow(clippy::too_many_arguments)]
fn prepare_timed(
    language: &str,
    spec: &Path,
    work: &Path,
    templates: &TemplateSource,
    options: &LanguageOptions,
    lint: bool,
    result: &mut LanguageResult,
) -> Result<Built> {
    let toolchain =
        toolchains::toolchain(language).ok_or_else(|| anyhow!("no toolchain for {language}"))?;
    if work.exists() {
        std::fs::remove_dir_all(work)?;
    }
    std::fs::create_dir_all(work)?;
    // Times are recorded before any error is returned, so that a failure still shows its cost.
    let started = Instant::now();
    let module = harness::render_with(language, spec, work, templates, options)?;
    let linted = if lint {
        toolchain
            .lint(&module, &work.join("lint"))
            .with_context(|| format!("{language}: lint of {}", module.dir.display()))
    } else {
        Ok(())
    };
    result.lint_seconds = started.elapsed().as_secs_f64();
    linted?;
    let started = Instant::now();
    let built = toolchain
        .build(&module, &work.join("build"))
        .with_context(|| format!("{language}: building the harness"));
    result.build_seconds = started.elapsed().as_secs_f64();
    built
}

/// A mismatching output line, with every differing hex field decoded so that the offending
/// string is readable (and shown escaped: it may hold controls or bidi characters).
fn describe_mismatch(want: &str, have: &str) -> String {
    let mut out = format!("  expected: {}\n  got:      {}", shown(want), shown(have));
    let (w, h): (Vec<&str>, Vec<&str>) = (want.split('\t').collect(), have.split('\t').collect());
    for (i, (a, b)) in w.iter().zip(&h).enumerate() {
        if a != b {
            if let (Some(a), Some(b)) = (unhex(a), unhex(b)) {
                write!(out, "\n  field {i}: expected {a:?}, got {b:?}").unwrap();
            }
        }
    }
    out
}

/// `s` as is when it is printable ASCII (tabs allowed), else Rust-escaped.
pub fn shown(s: &str) -> String {
    if s.chars().all(|c| c == '\t' || (' '..='~').contains(&c)) {
        s.to_string()
    } else {
        format!("{s:?}")
    }
}

/// Decodes a hex field of the case-file format; None when it is not hex of UTF-8.
pub fn unhex(s: &str) -> Option<String> {
    let bytes: Option<Vec<u8>> = s
        .as_bytes()
        .chunks(2)
        .map(|pair| match pair {
            [h, l] => {
                Some((char::from(*h).to_digit(16)? * 16 + char::from(*l).to_digit(16)?) as u8)
            }
            _ => None,
        })
        .collect();
    String::from_utf8(bytes?).ok()
}

/// Builds `suite.spec` in every language (linting those in `lint`), runs the probes and compares
/// each output line with the expected one; prints every failure and a line per language.
/// The work happens in `work/<language>`.
pub fn run_suite(
    suite: &Suite,
    languages: &[String],
    templates: &TemplateSource,
    work: &Path,
    lint: &[String],
    log: &mut dyn FnMut(String),
) -> Result<Vec<LanguageResult>> {
    let name = &suite.name;
    let input: String = suite
        .probes
        .iter()
        .map(|p| format!("{}\n", p.input))
        .collect();
    let expected: Vec<&str> = suite
        .probes
        .iter()
        .flat_map(|p| p.expected.lines())
        .collect();
    let origins: Vec<&str> = suite
        .probes
        .iter()
        .flat_map(|p| p.expected.lines().map(|_| p.origin.as_str()))
        .collect();
    std::fs::create_dir_all(work)?;
    let cases_file = work.join("cases.txt");
    std::fs::write(&cases_file, &input)?;
    let mut results = Vec::new();
    let mut outputs: Vec<(&String, Vec<String>)> = Vec::new();
    for language in languages {
        let mut result = LanguageResult {
            language: language.clone(),
            cases: 0,
            failures: 0,
            status: String::new(),
            lint_seconds: 0.0,
            build_seconds: 0.0,
            run_seconds: 0.0,
        };
        let built = prepare_timed(
            language,
            &suite.spec,
            &work.join(language),
            templates,
            suite
                .options
                .get(language)
                .unwrap_or(&LanguageOptions::new()),
            lint.contains(language),
            &mut result,
        );
        let started = Instant::now();
        let output = built.and_then(|built| harness::execute(&built, &cases_file));
        result.run_seconds = started.elapsed().as_secs_f64();
        match output {
            Err(e) => {
                result.failures = 1;
                result.status = "build or run failed".into();
                log(format!("FAIL {name} {language}: {e:#}"));
            }
            Ok(output) => {
                let got: Vec<String> = output.lines().map(str::to_string).collect();
                for (i, want) in expected.iter().enumerate() {
                    let have = got.get(i).map_or("<missing>", String::as_str);
                    if have != *want {
                        result.failures += 1;
                        if result.failures <= 20 {
                            log(format!(
                                "FAIL {name} {language} [{}]\n{}",
                                origins[i],
                                describe_mismatch(want, have)
                            ));
                        }
                    }
                }
                if got.len() > expected.len() {
                    result.failures += 1;
                    log(format!(
                        "FAIL {name} {language}: {} extra output lines",
                        got.len() - expected.len()
                    ));
                }
                result.cases = suite.probes.len();
                result.status = if result.failures == 0 {
                    "pass".into()
                } else {
                    format!("{} failed", result.failures)
                };
                outputs.push((language, got));
            }
        }
        log(format!(
            "{name:<12} {language:<10} {:>5} cases  {}  ({:.1}s)",
            result.cases,
            result.status,
            result.seconds()
        ));
        results.push(result);
    }
    // Pairwise agreement: with every language equal to the expected lines this is implied, but
    // it names the languages when a vector itself is wrong.
    if let Some(((first_lang, first), rest)) = outputs.split_first() {
        for (lang, out) in rest {
            if out != first {
                log(format!(
                    "DISAGREE {name}: {first_lang} and {lang} print different results"
                ));
            }
        }
    }
    Ok(results)
}

/// Runs everything; returns the number of failures (and prints them).
pub fn run(options: &Options) -> Result<usize> {
    let vectors = load_vectors(&options.vectors)?;
    let mut failures = 0;
    let mut table =
        String::from("| spec | language | cases | result | seconds |\n|---|---|---:|---|---:|\n");
    for ProjectSuite {
        name,
        spec,
        options: target_options,
    } in &options.specs
    {
        let (api, _) = retrygen::load_api(spec, &ModelOptions::default())
            .map_err(|d| anyhow!("{}:\n{d}", spec.display()))?;
        let spec_key = spec
            .strip_prefix(root())
            .unwrap_or(spec)
            .to_string_lossy()
            .replace('\\', "/");
        let mut probes = Vec::new();
        for (file, case) in &vectors {
            if let Some(p) = vector_probe(case, file, &spec_key)? {
                probes.push(p);
            }
        }
        // Vectors that name this spec must agree with retrygen's own model too.
        for (file, case) in &vectors {
            if case["kind"].as_str() == Some("classify")
                && case["spec"].as_str() == Some(spec_key.as_str())
            {
                let c = api.classify(
                    case["method"].as_str().unwrap_or_default(),
                    case["path"].as_str().unwrap_or_default(),
                );
                let id = c
                    .operation
                    .and_then(|i| api.operations[i].operation_id.as_deref());
                if c.class.name() != case["expect"]["class"].as_str().unwrap_or_default()
                    || id != case["expect"]["operation_id"].as_str()
                {
                    failures += 1;
                    println!(
                        "MODEL {file}: {}: retrygen's model gives {} {:?}",
                        case["name"],
                        c.class.name(),
                        id
                    );
                }
            }
        }
        for (file, case) in &vectors {
            if case["spec"].as_str() == Some(spec_key.as_str()) {
                if let Some(problem) = v2::model_check(&api, case)? {
                    failures += 1;
                    println!("MODEL {file}: {}: {problem}", case["name"]);
                }
            }
        }
        probes.extend(derived_probes(&api)?);
        let suite = Suite {
            name: name.clone(),
            spec: spec.clone(),
            probes,
            options: target_options.clone(),
        };
        // A job's targets say which languages it is built in (every job of the project's but
        // golden/internal/ has all six), each with its target's options.
        let languages: Vec<String> = options
            .languages
            .iter()
            .filter(|l| target_options.contains_key(*l))
            .cloned()
            .collect();
        let work = root().join("target/xtask/conformance").join(name);
        let results = run_suite(
            &suite,
            &languages,
            &options.templates,
            &work,
            &options.languages,
            &mut |line| println!("{line}"),
        )?;
        for r in &results {
            failures += r.failures;
            writeln!(
                table,
                "| {name} | {} | {} | {} | {:.1} |",
                r.language,
                r.cases,
                r.status,
                r.seconds()
            )
            .unwrap();
        }
    }
    std::fs::write(root().join("target/xtask/conformance/summary.md"), &table)?;
    Ok(failures)
}

/// Which languages a run lints (formatters and linters) beside building and running them:
/// `--lint all|none|L,...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LintScope {
    All,
    None,
    Languages(Vec<String>),
}

impl LintScope {
    pub fn parse(s: &str) -> Result<LintScope> {
        Ok(match s {
            "all" => LintScope::All,
            "none" => LintScope::None,
            list => {
                let langs: Vec<String> = list.split(',').map(str::to_string).collect();
                if let Some(bad) = langs.iter().find(|l| emit::backend(l).is_none()) {
                    bail!("--lint: unknown language {bad:?} (all, none or a list of languages)");
                }
                LintScope::Languages(langs)
            }
        })
    }

    pub fn languages(&self, all: &[String]) -> Vec<String> {
        match self {
            LintScope::All => all.to_vec(),
            LintScope::None => Vec::new(),
            LintScope::Languages(l) => l.clone(),
        }
    }
}

/// `conformance --corpus DIR`: every document of the corpus rendered in every language, built
/// with each harness and probed on every operation (the derived cases and the table dump), so
/// every real document is classified identically in all six languages. `jobs` documents are
/// worked on at once (the toolchains are mostly single-threaded, and a compiler's start-up,
/// not the document, dominates each build). Returns the number of failures.
pub fn run_corpus(
    dir: &Path,
    languages: &[String],
    templates: &TemplateSource,
    lint: &LintScope,
    only: Option<&str>,
    jobs: usize,
) -> Result<usize> {
    let started = Instant::now();
    let lint = lint.languages(languages);
    let base = root().join("target/xtask/corpus");
    let documents: Vec<(usize, PathBuf, String)> = crate::corpus::documents(dir)?
        .into_iter()
        .enumerate()
        .map(|(index, doc)| {
            let shown = doc
                .strip_prefix(dir)
                .unwrap_or(&doc)
                .to_string_lossy()
                .replace('\\', "/");
            (index, doc, shown)
        })
        .filter(|(_, _, shown)| match only {
            Some(o) => shown.contains(o),
            None => true,
        })
        .collect();
    // Each document: (operations, results) or the reason it could not be read; printed as one
    // block when done so that parallel documents do not interleave.
    type Outcome = Result<(usize, Vec<LanguageResult>), String>;
    let outcomes: std::sync::Mutex<BTreeMap<usize, Outcome>> = Default::default();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || -> Result<()> {
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let Some((index, doc, shown)) = documents.get(i) else {
                return Ok(());
            };
            let mut log = String::new();
            let outcome = match retrygen::load_api(doc, &ModelOptions::default()) {
                Err(d) => Err(format!("FAIL {shown}: cannot be read:\n{d}")),
                Ok((api, _)) => {
                    let suite = Suite {
                        name: shown.clone(),
                        spec: doc.clone(),
                        probes: derived_probes(&api)?,
                        options: BTreeMap::new(),
                    };
                    let results = run_suite(
                        &suite,
                        languages,
                        templates,
                        &base.join(format!("doc{index:02}")),
                        &lint,
                        &mut |line| {
                            log.push_str(&line);
                            log.push('\n');
                        },
                    )?;
                    Ok((api.operations.len(), results))
                }
            };
            match &outcome {
                Err(message) => println!("{message}"),
                Ok(_) => print!("{log}"),
            }
            outcomes.lock().unwrap().insert(*index, outcome);
        }
    };
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..jobs.max(1)).map(|_| scope.spawn(work)).collect();
        workers
            .into_iter()
            .try_for_each(|w| w.join().expect("a corpus worker panicked"))
    })?;

    let mut failures = 0;
    let mut per_language: BTreeMap<String, [f64; 3]> = BTreeMap::new();
    let mut table = String::from(
        "| document | operations | language | cases | result | lint s | build s | run s |\n|---|---:|---|---:|---|---:|---:|---:|\n",
    );
    let outcomes = outcomes.into_inner().unwrap();
    for (index, _, shown) in &documents {
        let (operations, results) = match &outcomes[index] {
            Err(_) => {
                failures += 1;
                continue;
            }
            Ok(ok) => ok,
        };
        for r in results {
            failures += r.failures;
            let t = per_language.entry(r.language.clone()).or_default();
            t[0] += r.lint_seconds;
            t[1] += r.build_seconds;
            t[2] += r.run_seconds;
            writeln!(
                table,
                "| {shown} | {operations} | {} | {} | {} | {:.1} | {:.1} | {:.1} |",
                r.language, r.cases, r.status, r.lint_seconds, r.build_seconds, r.run_seconds
            )
            .unwrap();
        }
    }
    let mut totals =
        String::from("| language | render and lint s | build s | run s |\n|---|---:|---:|---:|\n");
    for (language, [l, b, r]) in &per_language {
        writeln!(totals, "| {language} | {l:.1} | {b:.1} | {r:.1} |").unwrap();
    }
    let total = started.elapsed().as_secs_f64();
    println!(
        "\n{totals}\ncorpus conformance: {} documents, {total:.1}s in all ({jobs} at a time, lint: {})",
        documents.len(),
        if lint.is_empty() { "none".to_string() } else { lint.join(",") }
    );
    std::fs::create_dir_all(&base)?;
    std::fs::write(
        base.join("summary.md"),
        format!("{table}\n{totals}\ntotal: {total:.1}s with {jobs} job(s)\n"),
    )?;
    Ok(failures)
}

/// `--lang L,...` or every language.
pub fn languages_flag(args: &[String]) -> Result<Vec<String>> {
    let languages: Vec<String> = match crate::flag(args, "--lang") {
        Some(list) => list.split(',').map(str::to_string).collect(),
        None => emit::language_names()
            .iter()
            .map(|s| s.to_string())
            .collect(),
    };
    for l in &languages {
        if emit::backend(l).is_none() {
            bail!("unknown language {l:?}");
        }
    }
    Ok(languages)
}

pub fn main(args: &[String]) -> Result<()> {
    let vectors = crate::flag(args, "--vectors")
        .map_or_else(|| root().join("conformance/vectors"), PathBuf::from);
    let languages = languages_flag(args)?;
    let templates = crate::flag(args, "--templates").map_or(TemplateSource::Embedded, |d| {
        TemplateSource::Folder(PathBuf::from(d))
    });
    if let Some(dir) = crate::flag(args, "--corpus") {
        let dir = PathBuf::from(dir);
        if !dir.is_dir() {
            bail!("corpus folder {} does not exist", dir.display());
        }
        let lint = LintScope::parse(crate::flag(args, "--lint").unwrap_or("all"))?;
        let jobs = match crate::flag(args, "--jobs") {
            Some(n) => n
                .parse()
                .with_context(|| format!("--jobs takes a number, not {n:?}"))?,
            None => std::thread::available_parallelism().map_or(1, usize::from),
        };
        let failures = run_corpus(
            &dir,
            &languages,
            &templates,
            &lint,
            crate::flag(args, "--spec"),
            jobs,
        )?;
        if failures > 0 {
            bail!("corpus conformance: {failures} failure(s)");
        }
        println!("corpus conformance: every document builds and agrees in every language");
        return Ok(());
    }
    let mut specs = project_suites()?;
    if let Some(only) = crate::flag(args, "--spec") {
        specs.retain(|s| s.name == only || s.spec.ends_with(only));
    }
    let failures = run(&Options {
        vectors,
        languages,
        templates,
        specs,
    })?;
    if failures > 0 {
        bail!("conformance: {failures} failure(s)");
    }
    println!("conformance: every language agrees on every case");
    Ok(())
}
