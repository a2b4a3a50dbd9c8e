//! The committed files under golden/ are exactly what retrygen renders for the specs in specs/
//! (the project's retrygen.toml). Fails with a unified diff; `cargo xtask bless` (or
//! `RETRYGEN_BLESS=1 cargo test --test golden`) rewrites them.

use retrygen::cli::{plan, GenerateArgs};
use retrygen::write;

#[test]
fn goldens_match_rendered_output() {
    let args = GenerateArgs {
        config: Some("retrygen.toml".into()),
        spec: None,
        lang: None,
        out: None,
        options: Vec::new(),
        strict: false,
        templates: None,
    };
    let mut err = Vec::new();
    let planned = plan(&args, &mut err).unwrap_or_else(|code| {
        panic!(
            "retrygen failed with {code}:\n{}",
            String::from_utf8_lossy(&err)
        )
    });
    assert_eq!(planned.len(), 36, "six specs times six languages");
    if std::env::var_os("RETRYGEN_BLESS").is_some() {
        write::write_all(&planned).expect("writing goldens");
        return;
    }
    let diffs: Vec<String> = planned.iter().filter_map(write::diff).collect();
    assert!(
        diffs.is_empty(),
        "{} golden file(s) are stale; run `cargo xtask bless`:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

#[test]
fn rendering_is_deterministic() {
    let args = GenerateArgs {
        config: Some("retrygen.toml".into()),
        spec: None,
        lang: None,
        out: None,
        options: Vec::new(),
        strict: false,
        templates: None,
    };
    let first = plan(&args, &mut Vec::new()).expect("renders");
    let second = plan(&args, &mut Vec::new()).expect("renders");
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(
            a.contents, b.contents,
            "{} differs between two runs",
            a.display
        );
        assert!(
            !a.contents.contains("/work/") && !a.contents.contains(env!("CARGO_MANIFEST_DIR")),
            "{} holds an absolute path",
            a.display
        );
    }
}
