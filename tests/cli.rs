//! The command line end to end: `list` output and diagnostics as insta snapshots, exit codes,
//! generate/check round trips, and that a failed run writes nothing.

use clap::Parser;
use retrygen::cli::{run, Cli};
use std::path::Path;

/// Runs retrygen in-process; returns (exit code, stdout, stderr).
fn retrygen(args: &[&str]) -> (i32, String, String) {
    let cli = Cli::try_parse_from(std::iter::once("retrygen").chain(args.iter().copied()))
        .expect("valid arguments");
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run(cli, &mut out, &mut err);
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

#[test]
fn list_table() {
    let (code, out, err) = retrygen(&["list", "--spec", "specs/sandbox.yaml"]);
    assert_eq!((code, err.as_str()), (0, ""));
    insta::assert_snapshot!(out);
}

#[test]
fn list_markdown() {
    let (code, out, _) = retrygen(&[
        "list",
        "--spec",
        "specs/swagger2.json",
        "--format",
        "markdown",
    ]);
    assert_eq!(code, 0);
    insta::assert_snapshot!(out);
}

#[test]
fn list_json_is_the_public_interface() {
    let (code, out, _) = retrygen(&[
        "list",
        "--spec",
        "specs/annotations.yaml",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    for row in rows.as_array().unwrap() {
        assert!(row["method"]
            .as_str()
            .unwrap()
            .chars()
            .all(|c| !c.is_ascii_lowercase()));
        assert!(["idempotent", "keyed", "non_replayable", "no_retry"]
            .contains(&row["class"].as_str().unwrap()));
        assert!(row["operation_id"].is_string() || row["operation_id"].is_null());
        assert!(!row["reason"].as_str().unwrap().is_empty());
    }
    insta::assert_snapshot!(out);
}

#[test]
fn list_multifile_names_the_referenced_files() {
    let (code, out, _) = retrygen(&["list", "--spec", "specs/multifile/openapi.yaml"]);
    assert_eq!(code, 0);
    insta::assert_snapshot!(out);
}

/// Contract v3, A1-A2: the STREAM column and the JSON's `streaming` and `resumable`.
#[test]
fn list_streams() {
    let (code, out, err) = retrygen(&["list", "--spec", "specs/streams.yaml"]);
    assert_eq!((code, err.as_str()), (0, ""));
    insta::assert_snapshot!(out);
    let (code, out, _) = retrygen(&["list", "--spec", "specs/streams.yaml", "--format", "json"]);
    assert_eq!(code, 0);
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    let attributes: Vec<(&str, &str, bool, bool)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["operation_id"].as_str().unwrap(),
                row["class"].as_str().unwrap(),
                row["streaming"].as_bool().unwrap(),
                row["resumable"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        attributes,
        [
            ("listFeeds", "idempotent", false, false),
            ("createFeed", "keyed", false, false),
            ("attachConsole", "no_retry", true, false),
            ("streamFeedEvents", "idempotent", true, true),
            ("publishAndFollow", "non_replayable", true, true),
            ("watchFeedLive", "idempotent", true, false),
            ("streamFeedSnapshot", "idempotent", true, false),
            ("tailFeed", "idempotent", true, true),
        ]
    );
}

/// `x-retry-stream` with a bad value or on an operation that does not stream, and every v3
/// policy key out of range, in one run.
#[test]
fn stream_and_v3_policy_errors() {
    let (code, out, err) = retrygen(&["lint", "--spec", "tests/fixtures/stream-errors.yaml"]);
    assert_eq!(code, 1, "{out}{err}");
    insta::assert_snapshot!(err);
}

#[test]
fn every_error_in_one_run() {
    let (code, out, err) = retrygen(&["lint", "--spec", "tests/fixtures/many-errors.yaml"]);
    assert_eq!(code, 1, "{out}{err}");
    insta::assert_snapshot!(err);
}

#[test]
fn generate_reports_spec_errors_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.ts");
    let (code, _, err) = retrygen(&[
        "generate",
        "--spec",
        "tests/fixtures/many-errors.yaml",
        "--lang",
        "typescript",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("`x-idempotent` must be a boolean, found the string \"false\""),
        "{err}"
    );
    assert!(!out.exists(), "nothing is written when the spec has errors");
}

#[test]
fn duplicate_keys_are_errors() {
    let (code, _, err) = retrygen(&["lint", "--spec", "tests/fixtures/duplicate-keys.yaml"]);
    assert_eq!(code, 1);
    insta::assert_snapshot!("duplicate_keys_yaml", err);
    let (code, _, err) = retrygen(&["lint", "--spec", "tests/fixtures/duplicate-keys.json"]);
    assert_eq!(code, 1);
    insta::assert_snapshot!("duplicate_keys_json", err);
}

#[test]
fn version_errors_name_the_field() {
    let (_, _, err) = retrygen(&["lint", "--spec", "tests/fixtures/no-version.yaml"]);
    assert!(err.contains("neither `openapi` nor `swagger`"), "{err}");
    let (_, _, err) = retrygen(&["lint", "--spec", "tests/fixtures/numeric-version.yaml"]);
    assert!(
        err.contains("`openapi` must be a string, found 3.1"),
        "{err}"
    );
}

#[test]
fn strict_mode() {
    let (code, _, _) = retrygen(&["lint", "--spec", "tests/fixtures/unannotated.yaml"]);
    assert_eq!(code, 0);
    let (code, _, err) = retrygen(&[
        "lint",
        "--spec",
        "tests/fixtures/unannotated.yaml",
        "--strict",
    ]);
    assert_eq!(code, 1);
    insta::assert_snapshot!(err);
}

#[test]
fn equivalent_paths_with_different_classes_are_errors() {
    let (code, _, err) = retrygen(&["lint", "--spec", "tests/fixtures/equivalent-paths.yaml"]);
    assert_eq!(code, 1);
    insta::assert_snapshot!(err);
}

#[test]
fn missing_spec_is_a_usage_error() {
    let (code, _, err) = retrygen(&["lint", "--spec", "tests/fixtures/does-not-exist.yaml"]);
    assert_eq!(code, 2, "{err}");
}

fn write_config(dir: &Path) -> std::path::PathBuf {
    let spec = std::fs::canonicalize("specs/sandbox.yaml").unwrap();
    std::fs::write(
        dir.join("retrygen.toml"),
        format!("[[job]]\nspec = {:?}\n\n[[job.target]]\nlanguage = \"python\"\nout = \"sdk/python/\"\n\n[[job.target]]\nlanguage = \"typescript\"\nout = \"sdk/ts/src/retry/\"\n", spec.to_str().unwrap()),
    )
    .unwrap();
    dir.join("retrygen.toml")
}

#[test]
fn generate_then_check_then_drift() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path());
    let config = config.to_str().unwrap();
    let (code, out, err) = retrygen(&["check", "--config", config]);
    assert_eq!(code, 1, "missing files are drift: {out}{err}");
    assert!(out.contains("missing: "), "{out}");

    let (code, out, err) = retrygen(&["generate", "--config", config]);
    assert_eq!(code, 0, "{err}");
    let written = out.lines().filter(|l| l.starts_with("wrote ")).count();
    assert!(written >= 2, "{out}");
    let python_files = |dir: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(dir.join("sdk/python"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let written_python = python_files(dir.path());
    let py = dir.path().join("sdk/python").join(&written_python[0]);
    assert!(dir.path().join("sdk/ts/src/retry").is_dir());

    let (code, _, _) = retrygen(&["check", "--config", config]);
    assert_eq!(code, 0);
    let (code, out, _) = retrygen(&["generate", "--config", config]);
    assert_eq!(
        (
            code,
            out.lines().filter(|l| l.starts_with("unchanged ")).count()
        ),
        (0, written),
        "unchanged files are not rewritten"
    );

    // A generated file the run no longer writes (an older layout's) is an orphan: check reports
    // it, generate removes it; a hand-written file beside it is never touched.
    let orphan = dir.path().join("sdk/python/old_policy.py");
    std::fs::write(
        &orphan,
        "# Code generated by retrygen from x.yaml. DO NOT EDIT.\nX = 1\n",
    )
    .unwrap();
    let mine = dir.path().join("sdk/python/mine.py");
    std::fs::write(&mine, "# written by hand\n").unwrap();
    let (code, out, _) = retrygen(&["check", "--config", config]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("orphaned: ") && out.contains("old_policy.py") && !out.contains("mine.py"),
        "{out}"
    );
    let (code, out, err) = retrygen(&["generate", "--config", config]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("removed ") && !orphan.exists() && mine.is_file(),
        "{out}"
    );
    std::fs::remove_file(&mine).unwrap();
    assert_eq!(python_files(dir.path()), written_python);

    // A file retrygen did not write is never overwritten: the run fails and changes nothing.
    let theirs = dir.path().join("sdk/ts/src/retry").join(
        std::fs::read_dir(dir.path().join("sdk/ts/src/retry"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .file_name(),
    );
    let generated = std::fs::read_to_string(&theirs).unwrap();
    std::fs::write(&theirs, "// my own code\n").unwrap();
    let (code, _, err) = retrygen(&["generate", "--config", config]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("refusing to overwrite"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&theirs).unwrap(),
        "// my own code\n"
    );
    std::fs::write(&theirs, generated).unwrap();

    let original = std::fs::read_to_string(&py).unwrap();
    std::fs::write(&py, original.replacen('\n', "\n# hand edit\n", 1)).unwrap();
    let before = std::fs::read_to_string(&py).unwrap();
    let (code, out, err) = retrygen(&["check", "--config", config]);
    assert_eq!(code, 1, "{err}");
    assert!(
        out.contains("-# hand edit"),
        "check prints a unified diff: {out}"
    );
    assert_eq!(
        std::fs::read_to_string(&py).unwrap(),
        before,
        "check never writes"
    );
}

#[test]
fn config_errors_have_positions() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("retrygen.toml"),
        "[[job]]\nspec = \"x.yaml\"\ncolour = \"blue\"\n",
    )
    .unwrap();
    let (code, _, err) = retrygen(&[
        "generate",
        "--config",
        dir.path().join("retrygen.toml").to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("retrygen.toml:3:1") && err.contains("colour"),
        "{err}"
    );
}

const SANDBOX_BUMP: &str = "tests/fixtures/diff/sandbox-2.5.0.yaml";

#[test]
fn diff_text_of_a_spec_bump() {
    let (code, out, err) = retrygen(&["diff", "specs/sandbox.yaml", SANDBOX_BUMP]);
    assert_eq!((code, err.as_str()), (0, ""));
    insta::assert_snapshot!(out);
}

/// Removing `x-idempotent: true` from a POST makes SDKs replay it less: one safer entry (the
/// annotation's removal is a facet under it), and `--fail-on riskier` lets the bump through.
#[test]
fn diff_rates_an_operation_by_its_net_effect() {
    let (code, out, err) = retrygen(&[
        "diff",
        "specs/sandbox.yaml",
        "tests/fixtures/diff/sandbox-pause-unannotated.yaml",
        "--fail-on",
        "riskier",
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    insta::assert_snapshot!(out);
}

#[test]
fn diff_markdown_of_a_spec_bump() {
    let (code, out, _) = retrygen(&[
        "diff",
        "specs/sandbox.yaml",
        SANDBOX_BUMP,
        "--format",
        "markdown",
    ]);
    assert_eq!(code, 0);
    insta::assert_snapshot!(out);
}

#[test]
fn diff_json_is_a_public_interface() {
    let (code, out, _) = retrygen(&[
        "diff",
        "specs/sandbox.yaml",
        SANDBOX_BUMP,
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let changes = report["changes"].as_array().unwrap();
    assert_eq!(
        report["summary"]["riskier"].as_u64().unwrap() as usize,
        changes.iter().filter(|c| c["risk"] == "riskier").count()
    );
    for c in changes {
        assert!(["riskier", "safer", "neutral"].contains(&c["risk"].as_str().unwrap()));
        assert!(!c["message"].as_str().unwrap().is_empty());
        if c["risk"] == "riskier" && c["kind"] != "policy" {
            assert!(c["location"]["pointer"]
                .as_str()
                .unwrap()
                .starts_with("/paths/"));
            assert_eq!(c["location"]["file"], SANDBOX_BUMP);
        }
    }
    insta::assert_snapshot!(out);
}

#[test]
fn diff_fail_on() {
    let riskier = retrygen(&[
        "diff",
        "specs/sandbox.yaml",
        SANDBOX_BUMP,
        "--fail-on",
        "riskier",
    ]);
    assert_eq!(riskier.0, 1);
    // Going back is riskier too: the renamed no_retry route and the key header come back.
    let back = retrygen(&["diff", SANDBOX_BUMP, "specs/sandbox.yaml"]);
    assert_eq!(back.0, 0, "without --fail-on a diff exits 0");
    assert!(
        back.1.contains(": 2 riskier, 3 safer, 1 neutral"),
        "{}",
        back.1
    );
    let same = retrygen(&[
        "diff",
        "specs/sandbox.yaml",
        "specs/sandbox.yaml",
        "--fail-on",
        "riskier",
    ]);
    assert_eq!(same.0, 0);
    assert_eq!(
        retrygen(&[
            "diff",
            SANDBOX_BUMP,
            "specs/sandbox.yaml",
            "--fail-on",
            "any"
        ])
        .0,
        1
    );
    let same = retrygen(&[
        "diff",
        "specs/sandbox.yaml",
        "specs/sandbox.yaml",
        "--fail-on",
        "any",
    ]);
    assert_eq!(same.0, 0);
    assert!(
        same.1.contains("no change in retry behaviour"),
        "{}",
        same.1
    );
}

#[test]
fn diff_spec_errors_exit_2() {
    let (code, _, err) = retrygen(&[
        "diff",
        "specs/sandbox.yaml",
        "tests/fixtures/many-errors.yaml",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("many-errors.yaml:"), "{err}");
    let (code, _, err) = retrygen(&["diff", "specs/sandbox.yaml", "git:HEAD"]);
    assert_eq!(code, 2);
    assert!(err.contains("git:REV:path"), "{err}");
    let (code, _, err) = retrygen(&[
        "diff",
        "specs/sandbox.yaml",
        "git:no-such-rev-xyz:specs/sandbox.yaml",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown revision"), "{err}");
}

/// `git:REV:path` reads the committed spec without a checkout.
#[test]
fn diff_against_a_git_revision() {
    let (code, out, err) = retrygen(&[
        "diff",
        "git:HEAD:specs/multifile/openapi.yaml",
        "specs/multifile/openapi.yaml",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("retrygen diff git:HEAD:specs/multifile/openapi.yaml -> "),
        "{out}"
    );
}

#[test]
fn explain_a_keyed_create_by_url() {
    let (code, out, err) = retrygen(&[
        "explain",
        "--spec",
        "specs/sandbox.yaml",
        "POST",
        "https://api.eu.sandbox.example/v1/v2/sandboxes?dry_run=1",
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    insta::assert_snapshot!(out);
}

#[test]
fn explain_a_resumable_stream() {
    let (code, out, err) = retrygen(&[
        "explain",
        "--spec",
        "specs/streams.yaml",
        "GET",
        "https://events.example/api/feeds/f1/tail",
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    insta::assert_snapshot!(out);
    let (code, out, _) = retrygen(&[
        "explain",
        "--spec",
        "specs/streams.yaml",
        "POST",
        "/api/feeds/f1/events",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let e: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(e["class"], "non_replayable");
    assert_eq!(
        (&e["streaming"], &e["resumable"]),
        (&true.into(), &true.into())
    );
    assert_eq!(e["resume"], "x_retry_stream_resume");
    assert_eq!(
        e["resume_at"]["pointer"],
        "/paths/~1feeds~1{feedID}~1events/post/x-retry-stream"
    );
}

/// Becoming resumable is riskier (a resume re-sends the request), stopping safer.
#[test]
fn diff_rates_stream_attributes() {
    let (code, out, err) = retrygen(&[
        "diff",
        "specs/streams.yaml",
        "tests/fixtures/diff/streams-1.1.0.yaml",
        "--fail-on",
        "riskier",
    ]);
    assert_eq!((code, err.as_str()), (1, ""));
    insta::assert_snapshot!(out);
    let (_, out, _) = retrygen(&[
        "diff",
        "tests/fixtures/diff/streams-1.1.0.yaml",
        "specs/streams.yaml",
        "--format",
        "json",
    ]);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let streams: Vec<(&str, &str, &str, &str)> = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kind"] == "stream")
        .map(|c| {
            (
                c["risk"].as_str().unwrap(),
                c["operation_id"].as_str().unwrap(),
                c["old"].as_str().unwrap(),
                c["new"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        streams,
        [
            ("riskier", "streamFeedEvents", "streaming", "resumable"),
            ("safer", "watchFeedLive", "resumable", "streaming"),
        ]
    );
}

/// T2 in retrygen.toml: `preset` in `[job.policy]`, the keys beside it winning; the tables
/// carry the resolved values.
#[test]
fn a_preset_in_the_job_policy() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("retrygen.toml");
    let spec = std::fs::canonicalize("specs/sandbox.yaml").unwrap();
    std::fs::write(
        &config,
        format!(
            "[[job]]\nspec = {spec:?}\n[job.policy]\nmax_retries = 5\npreset = \"aws-2026\"\n\
             idempotency_key_format = \"sf-string\"\n\n[[job.target]]\nlanguage = \"typescript\"\nout = \"out/\"\n"
        ),
    )
    .unwrap();
    let (code, _, err) = retrygen(&["generate", "--config", config.to_str().unwrap()]);
    assert_eq!((code, err.as_str()), (0, ""));
    let tables = std::fs::read_to_string(dir.path().join("out/index.ts")).unwrap();
    for line in [
        "  maxRetries: 5,",
        "  initialBackoffMs: 50,",
        "  maxBackoffMs: 20000,",
        "  jitter: \"full\",",
        "  budgetRetryCost: 14,",
        "  throttlingInitialBackoffMs: 1000,",
        "  budgetThrottlingCost: 5,",
        "  idempotencyKeyFormat: \"sf-string\",",
    ] {
        assert!(tables.contains(line), "{line} in\n{tables}");
    }
    std::fs::write(
        &config,
        format!("[[job]]\nspec = {spec:?}\n[job.policy]\npreset = \"aws\"\n\n[[job.target]]\nlanguage = \"typescript\"\nout = \"out/\"\n"),
    )
    .unwrap();
    let (code, _, err) = retrygen(&["generate", "--config", config.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("unknown `preset` \"aws\"; use one of aws-2026"),
        "{err}"
    );
}

#[test]
fn explain_json() {
    let (code, out, _) = retrygen(&[
        "explain",
        "--spec",
        "specs/sandbox.yaml",
        "get",
        "/sandboxes/sbx-1/logs",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let e: serde_json::Value = serde_json::from_str(&out).unwrap();
    // Contract v3, A1: the stream keeps the class the method gives it.
    assert_eq!(e["class"], "idempotent");
    assert_eq!(e["decided_by"], "method_default");
    assert_eq!(
        (&e["streaming"], &e["resumable"]),
        (&true.into(), &false.into())
    );
    assert_eq!(e["stream_at"]["line"], 106);
    assert_eq!(e["resume"], "undeclared");
    insta::assert_snapshot!(out);
}

#[test]
fn explain_unmatched_request_and_errors() {
    let (code, out, _) = retrygen(&[
        "explain",
        "--spec",
        "specs/sandbox.yaml",
        "PATCH",
        "/nowhere",
    ]);
    assert_eq!(code, 0);
    assert!(
        out.contains("none matches") && out.contains("non_replayable"),
        "{out}"
    );
    let (code, _, err) = retrygen(&[
        "explain",
        "--spec",
        "tests/fixtures/many-errors.yaml",
        "GET",
        "/",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("error:"), "{err}");
}

#[test]
fn list_with_an_overlay_names_the_deciding_action() {
    let (code, out, err) = retrygen(&[
        "list",
        "--spec",
        "specs/sandbox.yaml",
        "--overlay",
        "tests/fixtures/overlay/annotate.yaml",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(
        "x-idempotent: false from overlay tests/fixtures/overlay/annotate.yaml action 3"
    ));
    insta::assert_snapshot!("list_with_an_overlay", out);
    insta::assert_snapshot!("list_with_an_overlay_warnings", err);
}

#[test]
fn overlay_targets_matching_nothing_are_errors_with_strict() {
    let (code, _, err) = retrygen(&[
        "lint",
        "--strict",
        "--spec",
        "specs/annotations.yaml",
        "--overlay",
        "tests/fixtures/overlay/annotate.yaml",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("error: tests/fixtures/overlay/annotate.yaml:16:13: action 4 target"));
}

#[test]
fn overlay_diagnostics_point_into_the_overlay() {
    let (code, out, err) = retrygen(&[
        "lint",
        "--spec",
        "specs/sandbox.yaml",
        "--overlay",
        "tests/fixtures/overlay/errors.yaml",
        "--overlay",
        "tests/fixtures/overlay/duplicate-keys.yaml",
        "--overlay",
        "tests/fixtures/overlay/missing.yaml",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    insta::assert_snapshot!("overlay_diagnostics", err);
}

#[test]
fn overlays_apply_to_both_sides_of_a_diff_and_to_explain() {
    let overlay = "tests/fixtures/overlay/annotate.yaml";
    let (code, out, _) = retrygen(&[
        "diff",
        "specs/sandbox.yaml",
        "specs/sandbox.yaml",
        "--overlay",
        overlay,
        "--fail-on",
        "any",
    ]);
    assert_eq!(code, 0, "{out}");
    let (code, out, _) = retrygen(&[
        "explain",
        "--spec",
        "specs/sandbox.yaml",
        "--overlay",
        overlay,
        "POST",
        "/v1/sandboxes/abc/timeout",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("tests/fixtures/overlay/annotate.yaml:15:21"),
        "{out}"
    );
}

#[test]
fn job_overlays_resolve_against_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(root.join("specs/sandbox.yaml"), dir.path().join("api.yaml")).unwrap();
    std::fs::copy(
        root.join("tests/fixtures/overlay/annotate.yaml"),
        dir.path().join("annotate.yaml"),
    )
    .unwrap();
    let config = dir.path().join("retrygen.toml");
    std::fs::write(
        &config,
        "[[job]]\nspec = \"api.yaml\"\noverlays = [\"annotate.yaml\", \"missing.yaml\"]\n[[job.target]]\nlanguage = \"python\"\nout = \"out/\"\n",
    )
    .unwrap();
    let config = config.to_string_lossy().into_owned();
    let (code, _, err) = retrygen(&["generate", "--config", &config]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("missing.yaml:1:1: cannot open the overlay"),
        "{err}"
    );
    // The first overlay was found beside the config and applied: its unmatched target warns.
    assert!(
        err.contains("annotate.yaml:16:13: action 4 target"),
        "{err}"
    );
}

/// The README's example: one action marks every `watch*` operation of the Kubernetes API (long
/// lived streams the spec does not declare as event streams) `x-retry: false`.
#[test]
fn kubernetes_watch_overlay() {
    let spec = "/work/shared/corpus/kubernetes-swagger-2.0.json";
    if !Path::new(spec).exists() {
        return;
    }
    let (code, out, err) = retrygen(&[
        "list",
        "--spec",
        spec,
        "--overlay",
        "examples/kubernetes-watch.overlay.yaml",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    let mut watches = 0;
    for row in rows.as_array().unwrap() {
        let id = row["operation_id"].as_str().unwrap_or("");
        if id.starts_with("watch") {
            watches += 1;
            assert_eq!(row["class"], "no_retry", "{id}");
            assert_eq!(
                row["reason"],
                "x-retry: false from overlay examples/kubernetes-watch.overlay.yaml action 1"
            );
        } else {
            assert_ne!(row["class"], "no_retry", "{id}");
        }
    }
    assert!(watches > 100, "{watches}");
}

#[test]
fn overlays_cannot_nest_the_document_past_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let nest = |n: usize| format!("{}1{}", "{n: ".repeat(n), "}".repeat(n));
    let overlay = dir.path().join("deep.yaml");
    std::fs::write(
        &overlay,
        format!(
            "overlay: 1.0.0\ninfo: {{title: deep, version: 1}}\nactions:\n  - target: $.info\n    update: {}\n  - target: $.info{}\n    update: {}\n",
            nest(240),
            ".n".repeat(239),
            nest(240)
        ),
    )
    .unwrap();
    let overlay = overlay.to_string_lossy().into_owned();
    let (code, _, err) = retrygen(&[
        "list",
        "--spec",
        "specs/sandbox.yaml",
        "--overlay",
        &overlay,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("deep.yaml:6:13: the overlaid document would nest deeper than 256 levels"),
        "{err}"
    );
}

/// `lint --format sarif`: one SARIF 2.1.0 result per diagnostic, nothing else on stdout.
#[test]
fn lint_sarif() {
    let (code, out, err) = retrygen(&[
        "lint",
        "--spec",
        "tests/fixtures/many-errors.yaml",
        "--format",
        "sarif",
    ]);
    assert_eq!((code, err.as_str()), (1, ""));
    let sarif: serde_json::Value = serde_json::from_str(&out).expect("stdout is SARIF");
    assert_eq!(sarif["version"], "2.1.0");
    insta::assert_snapshot!(out);
}

/// `lint --format github`: workflow commands that annotate the spec's lines in a pull request.
#[test]
fn lint_github_annotations() {
    let (code, out, err) = retrygen(&[
        "lint",
        "--spec",
        "tests/fixtures/unannotated.yaml",
        "--strict",
        "--format",
        "github",
    ]);
    assert_eq!((code, err.as_str()), (1, ""));
    assert!(out.lines().all(|l| l.starts_with("::error ")), "{out}");
    insta::assert_snapshot!(out);
}

/// From nothing to a gated SDK: `init` writes a config that generates and checks clean, the
/// suggested overlay makes `lint --strict` pass and changes no class.
#[test]
fn init_then_suggest_overlay_then_generate() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::copy("tests/fixtures/unannotated.yaml", root.join("api.yaml")).unwrap();
    let p = |name: &str| root.join(name).display().to_string();
    let (config, spec, overlay) = (p("retrygen.toml"), p("api.yaml"), p("retry-overlay.yaml"));
    let (code, out, err) = retrygen(&[
        "init",
        "--spec",
        &spec,
        "--lang",
        "python,go",
        "--lang",
        "typescript",
        "--config",
        &config,
        "--out-dir",
        &p("retry"),
    ]);
    assert_eq!((code, err.as_str()), (0, ""), "{out}");
    assert!(
        out.contains("3 target(s)") && out.contains("2 POST/PATCH"),
        "{out}"
    );
    let text = std::fs::read_to_string(&config).unwrap();
    insta::assert_snapshot!("init_config", text);
    // A second init refuses to replace it.
    let again = retrygen(&["init", "--spec", &spec, "--lang", "go", "--config", &config]);
    assert_eq!(again.0, 2);
    assert!(again.2.contains("--force"), "{}", again.2);

    let (code, out, _) = retrygen(&["lint", "--spec", &spec, "--suggest-overlay", &overlay]);
    assert_eq!(code, 0, "{out}");
    let suggested = std::fs::read_to_string(&overlay).unwrap();
    insta::assert_snapshot!("suggested_overlay", suggested.replace(&spec, "api.yaml"));
    assert_eq!(retrygen(&["lint", "--spec", &spec, "--strict"]).0, 1);
    let (code, _, err) = retrygen(&["lint", "--spec", &spec, "--strict", "--overlay", &overlay]);
    assert_eq!((code, err.as_str()), (0, ""));
    let classes = |extra: &[&str]| {
        let mut args = vec!["list", "--spec", spec.as_str(), "--format", "json"];
        args.extend_from_slice(extra);
        let rows: serde_json::Value = serde_json::from_str(&retrygen(&args).1).unwrap();
        rows.as_array()
            .unwrap()
            .iter()
            .map(|r| r["class"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(classes(&[]), classes(&["--overlay", &overlay]));

    assert_eq!(retrygen(&["generate", "--config", &config]).0, 0);
    let (code, out, _) = retrygen(&["check", "--config", &config]);
    assert_eq!(code, 0, "{out}");
    assert!(root.join("retry/python").is_dir() && root.join("retry/typescript").is_dir());
}

/// `lint` without `--spec` lints every job's spec of the config with that job's overlays and
/// strictness (what the pre-commit hook runs): a job marked strict fails on its unannotated POST,
/// and its overlay that annotates them makes it pass.
#[test]
fn lint_without_a_spec_lints_every_job_of_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(
        root.join("tests/fixtures/unannotated.yaml"),
        dir.path().join("api.yaml"),
    )
    .unwrap();
    let config = dir.path().join("retrygen.toml");
    std::fs::write(
        &config,
        "[[job]]\nspec = \"api.yaml\"\nstrict = true\n[[job.target]]\nlanguage = \"python\"\nout = \"out/\"\n",
    )
    .unwrap();
    let config_arg = config.to_string_lossy().into_owned();
    let (code, out, err) = retrygen(&["lint", "--config", &config_arg]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("api.yaml: ") && !out.contains(": 0 error(s)"),
        "{out}"
    );
    assert!(err.contains("x-idempotent"), "{err}");

    // The overlay --suggest-overlay writes, added to the job, annotates every POST: clean.
    let overlay = dir.path().join("annotate.yaml");
    let overlay_arg = overlay.to_string_lossy().into_owned();
    let spec_arg = dir.path().join("api.yaml").to_string_lossy().into_owned();
    let (code, _, err) = retrygen(&[
        "lint",
        "--spec",
        &spec_arg,
        "--suggest-overlay",
        &overlay_arg,
    ]);
    assert_eq!(code, 0, "{err}");
    std::fs::write(
        &config,
        "[[job]]\nspec = \"api.yaml\"\nstrict = true\noverlays = [\"annotate.yaml\"]\n[[job.target]]\nlanguage = \"python\"\nout = \"out/\"\n",
    )
    .unwrap();
    let (code, out, err) = retrygen(&["lint", "--config", &config_arg]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("api.yaml: 0 error(s)"), "{out}");

    // --suggest-overlay writes for one document: without --spec it is a usage error.
    let (code, _, err) = retrygen(&[
        "lint",
        "--config",
        &config_arg,
        "--suggest-overlay",
        &overlay_arg,
    ]);
    assert_eq!(code, 2, "{err}");
}
