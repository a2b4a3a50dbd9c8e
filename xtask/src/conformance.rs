//! `cargo xtask conformance`: every language's generated module, built with its real toolchain,
//! runs the same cases; any difference from the expected values (or between languages) fails.
//!
//! Cases come from `conformance/vectors/*.json` (data) and are also derived from every spec of
//! retrygen.toml: each operation exercised through concrete paths, its operationId looked up, the
//! non-replayable list probed, and the tables dumped, with the expected values computed by
//! retrygen's own model.

use crate::harness;
use crate::toolchains::root;
use anyhow::{anyhow, bail, Context, Result};
use retrygen::emit::{self, TemplateSource};
use retrygen::model::policy::{Policy, RawValue};
use retrygen::model::{Api, ModelOptions, ReplayClass};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

pub fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn opt_hex(s: Option<&str>) -> String {
    s.map_or_else(|| "-".to_string(), hex)
}

fn bits(f: f64) -> String {
    format!("{:016x}", f.to_bits())
}

fn csv(statuses: &[u16]) -> String {
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
fn vector_probe(case: &Value, file: &str, spec_key: &str) -> Result<Option<Probe>> {
    let name = case["name"]
        .as_str()
        .ok_or_else(|| anyhow!("{file}: a case without a name"))?;
    let origin = format!("{file}: {name}");
    let kind = case["kind"].as_str().unwrap_or("decide");
    let e = &case["expect"];
    let s = |v: &Value| v.as_str().map(str::to_string);
    if kind != "decide" && case["spec"].as_str() != Some(spec_key) {
        return Ok(None);
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
        "non_replayable" => Probe {
            input: format!(
                "N\t{n}\t{}\t{}",
                hex(case["method"].as_str().unwrap_or_default()),
                hex(case["path"].as_str().unwrap_or_default())
            ),
            expected: format!(
                "N\t{n}\t{}",
                if e["listed"].as_bool().unwrap_or(false) {
                    1
                } else {
                    0
                }
            ),
            origin,
        },
        other => bail!("{origin}: unknown case kind {other:?}"),
    };
    Ok(Some(probe))
}

/// A concrete request path for an operation's template.
fn concrete_path(op: &retrygen::model::Operation) -> String {
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

fn classify_probe(api: &Api, name: &str, method: &str, path: &str) -> Probe {
    let c = api.classify(method, path);
    let id = c
        .operation
        .and_then(|i| api.operations[i].operation_id.as_deref());
    let n = hex(name);
    Probe {
        input: format!("C\t{n}\t{}\t{}", hex(method), hex(path)),
        expected: format!("C\t{n}\t{}\t{}", c.class.name(), opt_hex(id)),
        origin: format!("derived: {name}"),
    }
}

/// Cases derived from the model of one spec, expected values from retrygen itself.
fn derived_probes(api: &Api) -> Result<Vec<Probe>> {
    let mut probes = Vec::new();
    let patterns: Vec<(String, regex::Regex)> = api
        .operations
        .iter()
        .filter(|o| o.class == ReplayClass::NonReplayable)
        .map(|o| Ok((o.method.clone(), regex::Regex::new(&o.pattern)?)))
        .collect::<Result<_>>()?;
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
                origin: format!("derived: {label} lookup"),
            });
        }
        for method in [op.method.as_str(), "POST", "GET"] {
            let n = hex(&format!("{label} non-replayable list as {method}"));
            let listed = patterns
                .iter()
                .any(|(m, re)| m == method && re.is_match(&path));
            probes.push(Probe {
                input: format!("N\t{n}\t{}\t{}", hex(method), hex(&path)),
                expected: format!("N\t{n}\t{}", u8::from(listed)),
                origin: format!("derived: {label} list"),
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
    // The table dump.
    let mut expected = format!(
        "B\t{}\t{}\nP\t{}",
        hex(&api.base_path),
        hex(&api.source_name),
        policy_fields(&api.policy)
    );
    for (i, op) in api.operations.iter().enumerate() {
        write!(
            expected,
            "\nO\t{i}\t{}\t{}\t{}\t{}\t{}",
            hex(&op.method),
            hex(&op.path),
            opt_hex(op.operation_id.as_deref()),
            op.class.name(),
            hex(&op.pattern)
        )
        .unwrap();
    }
    probes.push(Probe {
        input: "T".into(),
        expected,
        origin: "derived: table dump".into(),
    });
    Ok(probes)
}

fn load_vectors(path: &Path) -> Result<Vec<(String, Value)>> {
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
    pub specs: Vec<(String, PathBuf)>,
}

/// Runs everything; returns the number of failures (and prints them).
pub fn run(options: &Options) -> Result<usize> {
    let vectors = load_vectors(&options.vectors)?;
    let mut failures = 0;
    let mut table =
        String::from("| spec | language | cases | result | seconds |\n|---|---|---:|---|---:|\n");
    let mut outputs: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (name, spec) in &options.specs {
        let (api, _) = retrygen::cli::load_api(spec, &ModelOptions::default())
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
        probes.extend(derived_probes(&api)?);
        let input: String = probes.iter().map(|p| format!("{}\n", p.input)).collect();
        let expected: Vec<String> = probes
            .iter()
            .flat_map(|p| p.expected.lines().map(str::to_string).collect::<Vec<_>>())
            .collect();
        let origins: Vec<&str> = probes
            .iter()
            .flat_map(|p| p.expected.lines().map(|_| p.origin.as_str()))
            .collect();
        let work = root().join("target/xtask/conformance").join(name);
        std::fs::create_dir_all(&work)?;
        let cases_file = work.join("cases.txt");
        std::fs::write(&cases_file, &input)?;
        for language in &options.languages {
            let started = Instant::now();
            let result =
                harness::prepare_with(language, spec, &work.join(language), &options.templates)
                    .and_then(|built| harness::execute(&built, &cases_file));
            let seconds = started.elapsed().as_secs_f64();
            let (status, count) = match result {
                Err(e) => {
                    failures += 1;
                    println!("FAIL {name} {language}: {e:#}");
                    ("build or run failed".to_string(), 0)
                }
                Ok(output) => {
                    let got: Vec<String> = output.lines().map(str::to_string).collect();
                    let mut bad = 0;
                    for (i, want) in expected.iter().enumerate() {
                        let have = got.get(i).map(String::as_str).unwrap_or("<missing>");
                        if have != want {
                            bad += 1;
                            if bad <= 20 {
                                println!("FAIL {name} {language} [{}]\n  expected: {want}\n  got:      {have}", origins[i]);
                            }
                        }
                    }
                    if got.len() > expected.len() {
                        bad += 1;
                        println!(
                            "FAIL {name} {language}: {} extra output lines",
                            got.len() - expected.len()
                        );
                    }
                    failures += bad;
                    outputs.insert((name.clone(), language.clone()), got);
                    (
                        if bad == 0 {
                            "pass".to_string()
                        } else {
                            format!("{bad} failed")
                        },
                        probes.len(),
                    )
                }
            };
            writeln!(
                table,
                "| {name} | {language} | {count} | {status} | {seconds:.1} |"
            )
            .unwrap();
            println!("{name:<12} {language:<10} {count:>5} cases  {status}  ({seconds:.1}s)");
        }
    }
    // Pairwise agreement: with every language equal to the expected lines this is implied, but
    // it names the languages when a vector itself is wrong.
    for (name, _) in &options.specs {
        let per_lang: Vec<(&String, &Vec<String>)> = options
            .languages
            .iter()
            .filter_map(|l| outputs.get(&(name.clone(), l.clone())).map(|o| (l, o)))
            .collect();
        if let Some((first_lang, first)) = per_lang.first() {
            for (lang, out) in &per_lang[1..] {
                if out != first {
                    println!("DISAGREE {name}: {first_lang} and {lang} print different results");
                }
            }
        }
    }
    std::fs::write(root().join("target/xtask/conformance/summary.md"), &table)?;
    Ok(failures)
}

pub fn main(args: &[String]) -> Result<()> {
    let vectors = crate::flag(args, "--vectors")
        .map_or_else(|| root().join("conformance/vectors"), PathBuf::from);
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
    let templates = crate::flag(args, "--templates").map_or(TemplateSource::Embedded, |d| {
        TemplateSource::Folder(PathBuf::from(d))
    });
    let mut specs = project_specs()?;
    if let Some(only) = crate::flag(args, "--spec") {
        specs.retain(|(name, path)| name == only || path.ends_with(only));
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
