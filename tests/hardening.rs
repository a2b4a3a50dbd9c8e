//! Issue 4's guarantees as tests: atomic writes (a failed run changes no file), concurrent runs
//! never tear a file, and output that does not depend on locale, time zone, current folder or
//! environment.

use clap::Parser;
use retrygen::cli::{run, Cli};
use retrygen::write::{write_all, write_all_with, Planned};
use std::path::{Path, PathBuf};
use std::process::Command;

fn retrygen(args: &[&str]) -> (i32, String, String) {
    let cli = Cli::try_parse_from(std::iter::once("retrygen").chain(args.iter().copied())).unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run(cli, &mut out, &mut err);
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

fn sandbox_spec() -> String {
    std::fs::canonicalize("specs/sandbox.yaml")
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// Every language of the backend registry.
fn languages() -> Vec<&'static str> {
    retrygen::BACKENDS.iter().map(|b| b.name()).collect()
}

/// A config with six targets under `dir/out/<language>/`, the third of which (python) is
/// redirected to `python_out` when given.
fn six_target_config(dir: &Path, python_out: Option<&str>, max_retries: u32) -> PathBuf {
    let mut text = format!(
        "[[job]]\nspec = {:?}\n[job.policy]\nmax_retries = {max_retries}\n",
        sandbox_spec()
    );
    for language in languages() {
        let out = match (language, python_out) {
            ("python", Some(p)) => p.to_string(),
            _ => format!("out/{language}/"),
        };
        text.push_str(&format!(
            "\n[[job.target]]\nlanguage = \"{language}\"\nout = {out:?}\n"
        ));
    }
    let path = dir.join(format!("retrygen-{max_retries}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                files.push((e.path(), std::fs::read(e.path()).unwrap()));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn a_target_whose_parent_is_a_file_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let good = six_target_config(dir.path(), None, 3);
    assert_eq!(
        retrygen(&["generate", "--config", good.to_str().unwrap()]).0,
        0
    );
    std::fs::write(dir.path().join("blocker"), "a file").unwrap();
    let before = snapshot(dir.path());
    // Same targets with a different policy (so every file would change), python's parent a file.
    let bad = six_target_config(dir.path(), Some("blocker/python/"), 5);
    let before_bad = std::fs::read(&bad).unwrap();
    let (code, _, err) = retrygen(&["generate", "--config", bad.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("blocker/python/"), "names the file: {err}");
    let mut after = snapshot(dir.path());
    after.retain(|(p, _)| p != &bad);
    let mut expected = before;
    expected.retain(|(p, _)| p != &bad);
    assert_eq!(after, expected, "every target keeps its previous content");
    assert_eq!(std::fs::read(&bad).unwrap(), before_bad);
}

/// `generate` writes each file to a temporary file as soon as it is rendered; a refusal found
/// on the last target must still leave nothing behind: no new folder, no temporary file.
#[test]
fn a_foreign_file_in_the_last_target_leaves_no_folder_behind() {
    let rendered = tempfile::tempdir().unwrap();
    let config = six_target_config(rendered.path(), None, 3);
    let planned = retrygen::generate(&retrygen::config::load(&config).unwrap()).unwrap();
    let last = planned.files.last().unwrap();
    let last_name = last.path.file_name().unwrap().to_owned();
    let last_folder = last.path.parent().unwrap().file_name().unwrap().to_owned();

    let dir = tempfile::tempdir().unwrap();
    let config = six_target_config(dir.path(), None, 3);
    let theirs = dir.path().join("out").join(&last_folder).join(&last_name);
    std::fs::create_dir_all(theirs.parent().unwrap()).unwrap();
    std::fs::write(&theirs, "// my own code\n").unwrap();
    let before = snapshot(dir.path());
    let (code, out, err) = retrygen(&["generate", "--config", config.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("refusing to overwrite"), "{err}");
    assert_eq!(
        snapshot(dir.path()),
        before,
        "only the user's file is there"
    );
    let folders: Vec<_> = std::fs::read_dir(dir.path().join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        folders,
        vec![last_folder],
        "the other targets' folders are gone"
    );
}

/// The specs' warnings are shown even when writing then fails.
#[test]
fn warnings_are_shown_when_writing_fails() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("blocker"), "a file").unwrap();
    let spec = std::fs::canonicalize("specs/hostile.yaml").unwrap();
    let config = dir.path().join("retrygen.toml");
    std::fs::write(
        &config,
        format!(
            "[[job]]\nspec = {:?}\n\n[[job.target]]\nlanguage = \"go\"\nout = \"blocker/go/\"\n",
            spec.to_string_lossy()
        ),
    )
    .unwrap();
    let (code, _, err) = retrygen(&["generate", "--config", config.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("which no request contains"),
        "the warning: {err}"
    );
    assert!(err.contains("blocker/go/"), "the write error: {err}");
}

#[test]
fn an_unwritable_folder_changes_nothing() {
    // /proc refuses new files even for root, unlike permission bits.
    let dir = tempfile::tempdir().unwrap();
    let good = six_target_config(dir.path(), None, 3);
    assert_eq!(
        retrygen(&["generate", "--config", good.to_str().unwrap()]).0,
        0
    );
    let before = snapshot(&dir.path().join("out"));
    let bad = six_target_config(dir.path(), Some("/proc/retrygen-test/python/"), 5);
    let (code, _, err) = retrygen(&["generate", "--config", bad.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("/proc/retrygen-test/python/"), "{err}");
    assert_eq!(snapshot(&dir.path().join("out")), before);
}

#[test]
fn a_full_disk_on_the_third_of_six_targets_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let plan_for = |marker: &str| -> Vec<Planned> {
        languages()
            .iter()
            .map(|l| Planned {
                path: dir.path().join("gen").join(l).join("module.txt"),
                display: format!("gen/{l}/module.txt"),
                contents: format!("{l} {marker}\n"),
            })
            .collect()
    };
    write_all(&plan_for("v1")).unwrap();
    let before = snapshot(dir.path());
    // The failure is tied to a file, not to a call order.
    let full_disk = |_: &mut std::fs::File, bytes: &[u8]| -> std::io::Result<()> {
        if bytes.starts_with(b"python ") {
            return Err(std::io::Error::from_raw_os_error(28)); // ENOSPC
        }
        Ok(())
    };
    // A target in a new folder first (its folder must go again), then the six; the third of the
    // six finds the disk full.
    let mut plan = vec![Planned {
        path: dir.path().join("new/sub/file.txt"),
        display: "new/sub/file.txt".into(),
        contents: "x".into(),
    }];
    plan.extend(plan_for("v2"));
    let err = write_all_with(&plan, &full_disk).unwrap_err();
    assert_eq!(err.display, "gen/python/module.txt");
    assert!(err.message.contains("No space left"), "{}", err.message);
    assert_eq!(
        snapshot(dir.path()),
        before,
        "no file changed, no temporary file or new folder left"
    );
}

#[test]
fn concurrent_runs_never_tear_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let a = six_target_config(dir.path(), None, 3);
    let b = six_target_config(dir.path(), None, 7);
    let render = |config: &Path| -> Vec<Planned> {
        retrygen::generate(&retrygen::config::load(config).unwrap())
            .unwrap()
            .files
    };
    let (plan_a, plan_b) = (render(&a), render(&b));
    for round in 0..15 {
        let spawn = |config: &Path| {
            Command::new(env!("CARGO_BIN_EXE_retrygen"))
                .args(["generate", "--config"])
                .arg(config)
                .spawn()
                .unwrap()
        };
        let (mut one, mut two) = (spawn(&a), spawn(&b));
        assert!(one.wait().unwrap().success() && two.wait().unwrap().success());
        for (pa, pb) in plan_a.iter().zip(&plan_b) {
            let on_disk = std::fs::read_to_string(&pa.path).unwrap();
            assert!(
                on_disk == pa.contents || on_disk == pb.contents,
                "round {round}: {} is torn",
                pa.display
            );
        }
    }
    let leftovers: Vec<_> = snapshot(dir.path())
        .into_iter()
        .filter(|(p, _)| p.to_string_lossy().contains(".retrygen-"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn check_never_writes() {
    let dir = tempfile::tempdir().unwrap();
    let config = six_target_config(dir.path(), None, 3);
    assert_eq!(
        retrygen(&["check", "--config", config.to_str().unwrap()]).0,
        1
    );
    assert!(!dir.path().join("out").exists(), "check created nothing");
    assert_eq!(
        retrygen(&["generate", "--config", config.to_str().unwrap()]).0,
        0
    );
    let ts = std::fs::read_dir(dir.path().join("out/typescript"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let stale = std::fs::read_to_string(&ts).unwrap() + "// stale\n";
    std::fs::write(&ts, stale).unwrap();
    let before = snapshot(dir.path());
    assert_eq!(
        retrygen(&["check", "--config", config.to_str().unwrap()]).0,
        1
    );
    assert_eq!(snapshot(dir.path()), before);
}

/// Output does not depend on locale, time zone, current folder, environment or how the config
/// was named (relative or absolute), and holds no absolute path.
#[test]
fn output_is_independent_of_the_environment() {
    let base = tempfile::tempdir().unwrap();
    let generate =
        |name: &str, env: &[(&str, &str)], cwd_is_dir: bool| -> Vec<(PathBuf, Vec<u8>)> {
            let dir = base.path().join(name);
            std::fs::create_dir_all(&dir).unwrap();
            let config = six_target_config(&dir, None, 3);
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_retrygen"));
            cmd.arg("generate").arg("--config");
            if cwd_is_dir {
                cmd.arg(config.file_name().unwrap()).current_dir(&dir);
            } else {
                cmd.arg(&config).current_dir("/");
            }
            for (k, v) in env {
                cmd.env(k, v);
            }
            assert!(cmd.status().unwrap().success());
            snapshot(&dir.join("out"))
                .into_iter()
                .map(|(p, b)| (p.strip_prefix(&dir).unwrap().to_path_buf(), b))
                .collect()
        };
    let reference = generate("a", &[], true);
    let files_per_spec: usize = retrygen::BACKENDS
        .iter()
        .map(|b| 1 + b.runtime_files().len())
        .sum();
    assert_eq!(reference.len(), files_per_spec);
    let variants = [
        generate(
            "b",
            &[
                ("LC_ALL", "tr_TR.UTF-8"),
                ("LANG", "tr_TR.UTF-8"),
                ("TZ", "Pacific/Kiritimati"),
            ],
            false,
        ),
        generate(
            "c",
            &[
                ("LC_ALL", "C"),
                ("TZ", "America/St_Johns"),
                ("HOME", "/nonexistent"),
                ("RETRYGEN_UNRELATED", "1"),
            ],
            true,
        ),
    ];
    for variant in variants {
        assert_eq!(variant, reference);
    }
    for (path, bytes) in &reference {
        let text = String::from_utf8_lossy(bytes);
        assert!(
            !text.contains(&*base.path().to_string_lossy()) && !text.contains("/work/"),
            "{} holds an absolute path",
            path.display()
        );
    }
}

/// A later job that fails leaves no file, temporary file or folder of the earlier jobs behind
/// (a guard for any future change that writes a job's files before every job is planned).
#[test]
fn a_failing_later_job_leaves_nothing_of_the_earlier_ones() {
    let dir = tempfile::tempdir().unwrap();
    let config = six_target_config(dir.path(), None, 3);
    let broken = dir.path().join("broken.yaml");
    std::fs::write(&broken, "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    post:\n      x-idempotent: \"yes\"\n").unwrap();
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "\n[[job]]\nspec = {:?}\n\n[[job.target]]\nlanguage = \"go\"\nout = \"later/go/\"\n",
        broken.to_string_lossy()
    ));
    std::fs::write(&config, text).unwrap();
    let before = snapshot(dir.path());
    let (code, out, err) = retrygen(&["generate", "--config", config.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("x-idempotent"), "{err}");
    assert_eq!(
        snapshot(dir.path()),
        before,
        "nothing written, nothing left over"
    );
    assert!(
        !dir.path().join("out").exists(),
        "the first job's folders are gone again"
    );
}
