//! Hostile and huge documents (docs/limits.md): each ends in a clear error, or for the large but
//! legal ones in success, within the documented time and memory bounds. The binary runs as a
//! child under /usr/bin/time so its own peak memory and CPU time are measured. The bounds are
//! generous ceilings that only a regression in kind (exponential blow-up, unbounded recursion)
//! can cross, not timings: they bound CPU time (user + system), which other processes on a busy
//! machine do not inflate as they do wall time, and a debug build (`cargo test`) gets four times
//! the release bound.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

struct Run {
    code: i32,
    stderr: String,
    seconds: f64,
    peak_kib: u64,
}

fn lint(spec: &Path) -> Run {
    let report = spec.with_extension("time");
    let out = Command::new("/usr/bin/time")
        .args(["-f", "%U %S %M", "-o"])
        .arg(&report)
        .arg(env!("CARGO_BIN_EXE_retrygen"))
        .args(["lint", "--spec"])
        .arg(spec)
        .output()
        .expect("/usr/bin/time runs retrygen");
    let measured = std::fs::read_to_string(&report).unwrap();
    // The last line: a child killed by a signal gets a "Command terminated" line first.
    let mut fields = measured
        .split_whitespace()
        .rev()
        .take(3)
        .collect::<Vec<_>>();
    fields.reverse();
    let cpu = |f: &str| f.parse::<f64>().unwrap();
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        seconds: cpu(fields[0]) + cpu(fields[1]),
        peak_kib: fields[2].parse().unwrap(),
    };
    eprintln!(
        "{}: exit {} in {:.2} s of CPU, peak {} MiB",
        spec.file_name().unwrap().to_string_lossy(),
        run.code,
        run.seconds,
        run.peak_kib / 1024
    );
    run
}

fn within(run: &Run, seconds: u64, mib: u64) {
    let seconds = if cfg!(debug_assertions) {
        seconds * 4
    } else {
        seconds
    };
    assert!(
        run.seconds < Duration::from_secs(seconds).as_secs_f64(),
        "took {} s of CPU, bound {seconds} s",
        run.seconds
    );
    assert!(
        run.peak_kib < mib * 1024,
        "peak {} KiB, bound {mib} MiB",
        run.peak_kib
    );
}

const HEAD: &str = "openapi: 3.0.3\ninfo: {title: t, version: '1'}\n";

#[test]
fn billion_laughs_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut doc = String::from(HEAD);
    doc.push_str("x-bomb:\n  a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..10 {
        doc.push_str(&format!(
            "  a{i}: &a{i} [{}]\n",
            vec![format!("*a{}", i - 1); 10].join(", ")
        ));
    }
    doc.push_str("paths: {}\n");
    let spec = dir.path().join("laughs.yaml");
    std::fs::write(&spec, doc).unwrap();
    let run = lint(&spec);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("aliases expand to more than 100000 nodes"),
        "{}",
        run.stderr
    );
    within(&run, 5, 64);
}

#[test]
fn deep_nesting_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (name, doc) in [
        (
            "deep.yaml",
            format!(
                "{HEAD}x-deep: {}{}\npaths: {{}}\n",
                "[".repeat(10_000),
                "]".repeat(10_000)
            ),
        ),
        ("deep-block.yaml", {
            let mut d = String::from(HEAD);
            d.push_str("x-deep:\n");
            for i in 0..10_000 {
                d.push_str(&format!("{}k:\n", " ".repeat(i + 1)));
            }
            d
        }),
        (
            "deep.json",
            format!(
                "{{\"openapi\": \"3.0.3\", \"x-deep\": {}{}, \"paths\": {{}}}}",
                "[".repeat(10_000),
                "]".repeat(10_000)
            ),
        ),
    ] {
        let spec = dir.path().join(name);
        std::fs::write(&spec, doc).unwrap();
        let run = lint(&spec);
        assert_eq!(run.code, 1, "{name}: {}", run.stderr);
        assert!(
            run.stderr.contains("nests deeper than"),
            "{name}: {}",
            run.stderr
        );
        within(&run, 5, 64);
    }
}

/// A legal 100 MB document (most of it schemas retrygen loads but never interprets) reads.
#[test]
fn hundred_megabyte_document_reads() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("huge.json");
    let mut doc = String::with_capacity(105 << 20);
    doc.push_str("{\"openapi\": \"3.1.0\", \"info\": {\"title\": \"huge\", \"version\": \"1\"}, \"paths\": {");
    for i in 0..2000 {
        if i > 0 {
            doc.push(',');
        }
        doc.push_str(&format!("\"/r{i}/{{id}}\": {{\"get\": {{\"operationId\": \"get{i}\", \"responses\": {{}}}}, \"post\": {{\"x-idempotent\": false, \"responses\": {{}}}}}}"));
    }
    doc.push_str("}, \"components\": {\"schemas\": {");
    let mut i = 0;
    while doc.len() < 100 << 20 {
        if i > 0 {
            doc.push(',');
        }
        doc.push_str(&format!("\"S{i}\": {{\"type\": \"object\", \"description\": \"{}\", \"properties\": {{\"a\": {{\"type\": [\"string\", \"null\"]}}}}}}", "x".repeat(200)));
        i += 1;
    }
    doc.push_str("}}}");
    std::fs::write(&spec, &doc).unwrap();
    let run = lint(&spec);
    assert_eq!(run.code, 0, "{}", run.stderr);
    within(&run, 30, 2048);
}

#[test]
fn a_million_keys_read() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("keys.yaml");
    let mut doc = String::from(HEAD);
    doc.push_str("paths:\n  /a: {get: {responses: {}}}\ncomponents:\n  schemas:\n    Big:\n      properties:\n");
    for i in 0..1_000_000 {
        doc.push_str(&format!("        p{i}: {{}}\n"));
    }
    std::fs::write(&spec, doc).unwrap();
    let run = lint(&spec);
    assert_eq!(run.code, 0, "{}", run.stderr);
    within(&run, 60, 2048);
}

#[test]
fn a_ten_thousand_long_ref_chain_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("chain.yaml");
    let mut doc = String::from(HEAD);
    doc.push_str(
        "paths:\n  /a:\n    $ref: '#/components/pathItems/P0'\ncomponents:\n  pathItems:\n",
    );
    for i in 0..10_000 {
        doc.push_str(&format!(
            "    P{i}: {{$ref: '#/components/pathItems/P{}'}}\n",
            i + 1
        ));
    }
    doc.push_str("    P10000: {get: {responses: {}}}\n");
    std::fs::write(&spec, doc).unwrap();
    let run = lint(&spec);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("`$ref` chain longer than 64 references"),
        "{}",
        run.stderr
    );
    within(&run, 5, 64);
}

#[test]
fn a_ref_cycle_through_files_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("root.yaml"),
        format!("{HEAD}paths:\n  /a:\n    $ref: './a.yaml#/item'\n"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("a.yaml"),
        "item:\n  $ref: './b.yaml#/item'\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("b.yaml"),
        "item:\n  $ref: './a.yaml#/item'\n",
    )
    .unwrap();
    let run = lint(&dir.path().join("root.yaml"));
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("`$ref` cycle"), "{}", run.stderr);
    within(&run, 5, 64);
}
