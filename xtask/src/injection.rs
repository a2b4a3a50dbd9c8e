//! `cargo xtask injection [--seed S] [--specs N] [--ops N] [--lang L,...]`: the injection
//! property of issue 4. A seeded generator writes specs whose path templates, operationIds,
//! server URL path and spec file name are made of fragments that break out of string literals,
//! comments, templates and lines in some language (quotes, backslash escapes, `*/`, `${`, `{{`,
//! `%`, controls, U+2028/2029, bidi controls, non-BMP characters...). Every language's module
//! must pass its lint and build, and its harness must print every string back exactly (the `T`
//! table dump) and classify every operation as retrygen's model does.
//!
//! The only spec strings that reach comments are the spec file name (every module's header) and
//! the path templates (per-operation comments in Go, Kotlin and C#), so both are generated.
//! Descriptions and titles never reach a module; they are hostile anyway, to prove it.
//!
//! The generator is a splitmix64 PRNG: the same seed writes the same specs on every machine, and
//! a failure names the seed that reproduces it.

use crate::conformance::{self, classify_probe, derived_probes, hex, opt_hex, shown, Probe, Suite};
use crate::toolchains::root;
use anyhow::{bail, Context, Result};
use retrygen::emit::TemplateSource;
use retrygen::model::path::PathTemplate;
use retrygen::model::{Api, ModelOptions};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

/// splitmix64 (Steele, Lea, Flood 2014): tiny, fast and good enough to pick fragments.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (the modulo bias is irrelevant here).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn range(&mut self, low: usize, high: usize) -> usize {
        low + self.below(high - low + 1)
    }

    fn percent(&mut self, p: usize) -> bool {
        self.below(100) < p
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// What the strings are made of: each fragment is dangerous in at least one of the six
/// languages, their comments, the template engine or a terminal.
#[rustfmt::skip]
const FRAGMENTS: &[&str] = &[
    // Quotes, string prefixes and escape sequences written out literally.
    "\"", "'", "`", "\\", "\\\\", "\\\"", "\\'", "\"\"\"", "'''", "@\"", "r\"", "r#\"", "\"#",
    "b\"", "f\"", "$\"", "u8\"", "\\u0000", "\\u{0}", "\\x00", "\\0", "\\101", "\\U0001F600",
    "\\N{BULLET}", "\\n", "\\t", "\\$", "\\\n", "\\\r\n", "\\ ", "\\u2028", "\\uD83D",
    // Comments and markup.
    "*/", "/*", "//", "#", "--", "<!--", "-->", "]]>", "<?", "?>", "*", "**",
    // Interpolation and format strings of every language and of the template engine.
    "${", "${x}", "$", "$x", "$$", "#{", "#{x}", "{{", "}}", "{{ 7*7 }}", "{%", "%}", "{#", "#}",
    "{0}", "{}", "%", "%s", "%d", "%n", "%v", "%1$s", "%%", "@{x}",
    // Percent-encoding, valid and not: literal segments are decoded at generation time.
    "%41", "%2F", "%2f", "%25", "%zz", "%4", "%C3%A9", "%FF", "%E2%80%A8", "%00",
    // Controls.
    "\0", "\u{1}", "\u{7}", "\u{8}", "\t", "\n", "\u{b}", "\u{c}", "\r", "\r\n", "\u{1b}",
    "\u{1b}[31m", "\u{7f}", "\u{80}", "\u{85}", "\u{9f}",
    // Whitespace, separators, bidi controls and invisible characters.
    "\u{a0}", "\u{ad}", "\u{61c}", "\u{180e}", "\u{200b}", "\u{200c}", "\u{200d}", "\u{200e}",
    "\u{200f}", "\u{2028}", "\u{2029}", "\u{202a}", "\u{202e}", "\u{2060}", "\u{2066}",
    "\u{2069}", "\u{3000}", "\u{feff}", "\u{fffe}", "\u{ffff}", "\u{fffd}",
    // Beyond ASCII: combining marks, case-mapping oddities and confusables (the Kelvin sign),
    // right-to-left and non-BMP text.
    "\u{e9}", "e\u{301}", "\u{301}", "\u{df}", "\u{130}", "\u{212a}", "\u{fb00}",
    "\u{4e2d}\u{6587}", "\u{65e5}\u{672c}", "\u{d55c}", "\u{627}\u{644}\u{639}", "\u{5e2}\u{5d1}",
    "\u{1F600}", "\u{1F44D}\u{1F3FD}", "\u{1F468}\u{200d}\u{1F469}\u{200d}\u{1F467}",
    "\u{1F1FA}\u{1F1F3}", "\u{1D11E}", "\u{10ffff}", "\u{e0001}", "\u{e000}", "\u{fdfa}",
    // Plain text between them.
    " ", "  ", "a", "Z", "0", "9", "-", "_", ".", "..", "~", ":", ";", ",", "=", "&", "+", "!",
    "(", ")", "[", "]", "<", ">", "|", "^", "@",
];

/// Characters a literal piece of a path template cannot hold: `/` splits segments, braces
/// delimit parameters, and `?`/`#` start a suffix no request carries.
const NOT_IN_PATH_TEXT: &[char] = &['/', '{', '}', '?', '#'];

fn hostile(rng: &mut Rng, min: usize, max: usize) -> String {
    (0..rng.range(min, max))
        .map(|_| *rng.pick(FRAGMENTS))
        .collect()
}

/// A non-empty literal piece of a path template.
fn path_text(rng: &mut Rng) -> String {
    let mut s: String = hostile(rng, 1, 4)
        .chars()
        .filter(|c| !NOT_IN_PATH_TEXT.contains(c))
        .collect();
    if s.is_empty() {
        s.push('x');
    }
    s
}

/// A parameter name: anything a path template allows, with something besides whitespace.
fn param_name(rng: &mut Rng) -> String {
    let mut s = path_text(rng);
    if s.trim().is_empty() {
        s.push('p');
    }
    format!("{{{s}}}")
}

/// One segment: literal, parameter, or literal text mixed with parameters (never two
/// parameters side by side). Mixed segments often put `$`, `%`, `@`, `\` or `"` right before a
/// parameter, which writes `${name}`-, `%{name}`- or `@{name}`-like text into the path literal.
fn segment(rng: &mut Rng) -> String {
    match rng.below(10) {
        0..=5 => path_text(rng),
        6 => param_name(rng),
        _ => {
            let mut s = String::new();
            let params = rng.range(1, 2);
            let lead = rng.percent(60);
            if lead {
                s.push_str(&path_text(rng));
                if rng.percent(40) {
                    let mark = *rng.pick(&["$", "%", "@", "\\", "\""]);
                    s.push_str(mark);
                }
            }
            for i in 0..params {
                if i > 0 {
                    s.push_str(&path_text(rng));
                }
                s.push_str(&param_name(rng));
            }
            if !lead || rng.percent(50) {
                s.push_str(&path_text(rng));
            }
            s
        }
    }
}

fn template(rng: &mut Rng) -> String {
    let mut path: String = (0..rng.range(1, 4))
        .map(|_| format!("/{}", segment(rng)))
        .collect();
    if rng.percent(10) {
        path.push('/');
    }
    path
}

/// Characters a spec file name cannot hold on Linux: `/` and NUL. A `\` is an ordinary character
/// there, and the source name keeps it (src/read/mod.rs, `source_name`).
const NOT_IN_FILE_NAME: &[char] = &['/', '\0'];

/// A spec file name: hostile, valid on Linux (at most 255 bytes).
fn file_name(rng: &mut Rng, index: usize) -> String {
    let mut name: String = hostile(rng, 4, 10)
        .chars()
        .filter(|c| !NOT_IN_FILE_NAME.contains(c))
        .collect();
    while name.len() > 180 {
        name.pop();
    }
    // The index keeps the names of one seed apart.
    format!("{name}-{index}.json")
}

/// The server URL's path: hostile, but something retrygen keeps exactly as the base path (no
/// braces, which are server variables, no `?`/`#`, no surrounding whitespace or slash).
fn base_path(rng: &mut Rng) -> String {
    let mut base: String = (0..rng.range(1, 2))
        .map(|_| format!("/{}", path_text(rng)))
        .collect();
    if base.ends_with(char::is_whitespace) {
        base.push('b');
    }
    base
}

/// What a generated spec must come back as.
struct Generated {
    file_name: String,
    base_path: String,
    /// (upper-case method, path) -> operationId.
    operations: BTreeMap<(String, String), Option<String>>,
    document: Value,
}

const METHODS: [&str; 8] = [
    "get", "put", "post", "patch", "delete", "head", "options", "trace",
];

const POLICY_MULTIPLIERS: [f64; 6] = [
    1.0,
    1.1,
    1.5,
    2.0,
    3.333_333_333_333_333_5,
    9.999_999_999_999_998,
];

fn generate(rng: &mut Rng, index: usize, operation_count: usize) -> Generated {
    let file_name = file_name(rng, index);
    let base_path = base_path(rng);
    let mut shapes = HashSet::new();
    let mut ids = HashSet::new();
    let mut operations = BTreeMap::new();
    let mut paths = Map::new();
    while operations.len() < operation_count {
        let path = template(rng);
        let Ok(parsed) = PathTemplate::parse(&path) else {
            continue;
        };
        // Templates that match the same requests are a (tested elsewhere) warning; here every
        // template must be reachable.
        if !shapes.insert(parsed.shape()) {
            continue;
        }
        let mut item = Map::new();
        for _ in 0..rng.range(1, 2) {
            let method = *rng.pick(&METHODS);
            if item.contains_key(method) || operations.len() >= operation_count {
                continue;
            }
            let mut op = Map::new();
            let id = if rng.percent(85) {
                let id = if ids.is_empty() && rng.percent(30) {
                    String::new()
                } else {
                    hostile(rng, 1, 6)
                };
                ids.insert(id.clone()).then_some(id)
            } else {
                None
            };
            if let Some(id) = &id {
                op.insert("operationId".into(), json!(id));
            }
            op.insert("summary".into(), json!(hostile(rng, 1, 6)));
            op.insert("description".into(), json!(hostile(rng, 2, 12)));
            let mut content = Map::new();
            match rng.below(20) {
                0..=2 => {
                    op.insert("x-retry".into(), json!(false));
                }
                3 => {
                    content.insert("text/event-stream".into(), json!({}));
                }
                4..=6 => {
                    op.insert("x-idempotent".into(), json!(rng.percent(50)));
                }
                _ => {}
            }
            if rng.percent(30) {
                let header =
                    *rng.pick(&["Idempotency-Key", "x-idempotency-key", "IDEMPOTENCY-KEY"]);
                op.insert(
                    "parameters".into(),
                    json!([{"name": header, "in": "header", "schema": {"type": "string"}}]),
                );
            }
            let mut ok = json!({"description": hostile(rng, 1, 4)});
            if !content.is_empty() {
                ok["content"] = Value::Object(content);
            }
            op.insert("responses".into(), json!({ "200": ok }));
            item.insert(method.into(), Value::Object(op));
            operations.insert((method.to_ascii_uppercase(), path.clone()), id);
        }
        paths.insert(path, Value::Object(item));
    }
    let initial = *rng.pick(&[1u64, 100, 500, 1234]);
    let mut policy = json!({
        "max_retries": rng.below(11),
        "initial_backoff_ms": initial,
        "max_backoff_ms": initial + rng.below(100_000) as u64,
        "multiplier": *rng.pick(&POLICY_MULTIPLIERS),
        "jitter": *rng.pick(&["full", "equal", "decorrelated", "none"]),
        "retryable_statuses": [408, 500 + rng.below(100)],
        "rejected_statuses": [429, 503],
        "retry_after_cap_ms": rng.below(86_400_001),
    });
    if rng.percent(50) {
        policy["deadline_ms"] = json!(1 + rng.below(86_400_000));
    }
    let document = json!({
        "openapi": "3.1.0",
        "info": {"title": hostile(rng, 2, 8), "version": "1", "description": hostile(rng, 4, 16)},
        "servers": [{"url": format!("https://h.example{base_path}"), "description": hostile(rng, 1, 4)}],
        "x-retry-policy": policy,
        "paths": paths,
    });
    Generated {
        file_name,
        base_path,
        operations,
        document,
    }
}

/// Every byte outside the unreserved set percent-encoded, slashes kept: the request an SDK that
/// encodes everything sends.
fn percent_encoded(path: &str) -> String {
    path.bytes()
        .map(|b| match b {
            b'/' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            b if b.is_ascii_alphanumeric() => (b as char).to_string(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

/// Compares the model with what was generated: a string the model altered never reached the
/// modules, so the round trip would prove nothing about it.
fn model_mismatches(api: &Api, g: &Generated) -> Vec<String> {
    let mut problems = Vec::new();
    if api.source_name != g.file_name {
        problems.push(format!(
            "source name: file {:?}, model {:?}",
            g.file_name, api.source_name
        ));
    }
    if api.base_path != g.base_path {
        problems.push(format!(
            "base path: server URL path {:?}, model {:?}",
            g.base_path, api.base_path
        ));
    }
    let model: BTreeMap<(String, String), Option<String>> = api
        .operations
        .iter()
        .map(|o| ((o.method.clone(), o.path.clone()), o.operation_id.clone()))
        .collect();
    if model != g.operations {
        for (key, id) in &g.operations {
            match model.get(key) {
                Some(m) if m == id => {}
                other => problems.push(format!(
                    "operation {} {:?} with id {:?}: model has {:?}",
                    key.0, key.1, id, other
                )),
            }
        }
        if model.len() != g.operations.len() {
            problems.push(format!(
                "{} operations generated, {} in the model",
                g.operations.len(),
                model.len()
            ));
        }
    }
    problems
}

/// Probes beyond the derived ones: the percent-encoded form of every request, a trailing
/// newline (which `$` must not accept in any language), and lookups of near-miss ids.
fn extra_probes(api: &Api) -> Result<Vec<Probe>> {
    let safe = crate::conformance::v2::safe_list(api)?;
    let by_id: BTreeMap<&str, &retrygen::model::Operation> = api
        .operations
        .iter()
        .filter_map(|o| o.operation_id.as_deref().map(|id| (id, o)))
        .collect();
    let mut probes = Vec::new();
    for (i, op) in api.operations.iter().enumerate() {
        let path = conformance::concrete_path(op);
        let label = format!("op{i} {} {}", op.method, op.path);
        probes.push(classify_probe(
            api,
            &format!("{label} percent-encoded"),
            &op.method,
            &format!("{}{}", api.base_path, percent_encoded(&path)),
        ));
        let newline = format!("{path}\n");
        probes.push(classify_probe(
            api,
            &format!("{label} trailing newline"),
            &op.method,
            &newline,
        ));
        let n = hex(&format!("{label} list with trailing newline"));
        // The safe list (contract v2, L1-L2).
        let (listed, header) =
            crate::conformance::v2::safe_list_match(api, &safe, &op.method, &newline);
        probes.push(Probe {
            input: format!("L\t{n}\t{}\t{}", hex(&op.method), hex(&newline)),
            expected: format!(
                "L\t{n}\t{}\t{}",
                u8::from(listed),
                opt_hex(header.as_deref())
            ),
            origin: format!(
                "injection: {} safe list with trailing newline",
                shown(&label)
            ),
        });
        if let Some(id) = &op.operation_id {
            for near in [format!("{id}\0"), format!("{id}\n"), format!(" {id}")] {
                let n = hex(&format!("{label} lookup {near:?}"));
                let found = by_id.get(near.as_str());
                probes.push(Probe {
                    input: format!("I\t{n}\t{}", hex(&near)),
                    expected: format!(
                        "I\t{n}\t{}\t{}",
                        opt_hex(found.map(|o| o.method.as_str())),
                        opt_hex(found.map(|o| o.path.as_str()))
                    ),
                    origin: format!("injection: lookup of {}", shown(&near)),
                });
            }
        }
    }
    Ok(probes)
}

pub fn main(args: &[String]) -> Result<()> {
    let number = |name: &str, default: u64| -> Result<u64> {
        crate::flag(args, name).map_or(Ok(default), |v| {
            v.parse()
                .with_context(|| format!("{name} takes a number, not {v:?}"))
        })
    };
    let seed = number("--seed", 1)?;
    let spec_count = number("--specs", 4)? as usize;
    let operation_count = number("--ops", 40)?.max(1) as usize;
    let languages = conformance::languages_flag(args)?;
    let templates = crate::flag(args, "--templates").map_or(TemplateSource::Embedded, |d| {
        TemplateSource::Folder(d.into())
    });
    let lint = conformance::LintScope::parse(crate::flag(args, "--lint").unwrap_or("all"))?
        .languages(&languages);
    println!(
        "injection: seed {seed}, {spec_count} specs of {operation_count} operations, languages {}",
        languages.join(",")
    );
    let dir = root().join("target/xtask/injection").join(seed.to_string());
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    let started = Instant::now();
    let mut rng = Rng(seed);
    let mut failures = 0;
    let mut strings = 0;
    let mut seconds: BTreeMap<String, f64> = BTreeMap::new();
    for index in 0..spec_count {
        let generated = generate(&mut rng, index, operation_count);
        let spec = dir.join(&generated.file_name);
        std::fs::write(
            &spec,
            serde_json::to_string_pretty(&generated.document)? + "\n",
        )
        .with_context(|| format!("writing {}", spec.display()))?;
        let name = format!("seed{seed}/spec{index}");
        println!("{name}: {}", shown(&spec.to_string_lossy()));
        let api = match retrygen::load_api(&spec, &ModelOptions::default()) {
            Ok((api, _)) => api,
            Err(d) => {
                failures += 1;
                println!("FAIL {name}: retrygen rejects the generated spec:\n{d}");
                continue;
            }
        };
        let problems = model_mismatches(&api, &generated);
        for p in &problems {
            println!(
                "FAIL {name}: the model does not keep a string: {}",
                shown(p)
            );
        }
        failures += problems.len();
        let mut probes = derived_probes(&api)?;
        probes.extend(extra_probes(&api)?);
        let suite = Suite {
            name: name.clone(),
            spec: spec.clone(),
            probes,
            options: Default::default(),
        };
        let results = conformance::run_suite(
            &suite,
            &languages,
            &templates,
            &dir.join("work").join(index.to_string()),
            &lint,
            &mut |line| println!("{line}"),
        )?;
        // Paths, operationIds, the base path and the source name.
        let per_spec = 2
            + api.operations.len()
            + api
                .operations
                .iter()
                .filter(|o| o.operation_id.is_some())
                .count();
        for r in &results {
            failures += r.failures;
            *seconds.entry(r.language.clone()).or_default() += r.seconds();
            if r.failures == 0 {
                strings += per_spec;
            }
        }
    }
    let total = started.elapsed().as_secs_f64();
    let timing: Vec<String> = seconds
        .iter()
        .map(|(l, s)| format!("{l} {s:.1}s"))
        .collect();
    println!("injection: {} ({total:.1}s in all)", timing.join(", "));
    if failures > 0 {
        bail!(
            "injection: {failures} failure(s) with seed {seed}; the specs are in {}; rerun with `cargo xtask injection --seed {seed} --specs {spec_count} --ops {operation_count}`",
            dir.display()
        );
    }
    println!(
        "injection: {strings} hostile strings round-tripped (string x language) with seed {seed}"
    );
    Ok(())
}
