//! `retrygen init`: a commented retrygen.toml for one spec and the languages given, so a team
//! starts from a config that generates at once and says what each knob does.

use crate::emit;
use std::path::{Component, Path, PathBuf};

/// `path` as seen from the folder `base`, both relative to the current folder or both absolute;
/// otherwise `path` as it is.
pub fn relative_to(path: &Path, base: &Path) -> PathBuf {
    if path.is_absolute() != base.is_absolute() {
        return path.to_path_buf();
    }
    let clean = |p: &Path| -> Vec<String> {
        p.components()
            .filter(|c| !matches!(c, Component::CurDir))
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect()
    };
    let (p, b) = (clean(path), clean(base));
    if b.iter().any(|c| c == "..") {
        return path.to_path_buf();
    }
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &p[common..] {
        out.push(c);
    }
    out
}

/// A TOML basic string holding exactly `s`.
fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The config text. `spec` and `out_dir` are as the config file should name them (relative to
/// its folder); `languages` are backend names, already checked.
pub fn config_text(spec: &str, languages: &[&str], out_dir: &str) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "# retrygen.toml, written by `retrygen init` for {}.\n",
        crate::emit::comment_safe(spec)
    ));
    out.push_str(
        "# `retrygen generate` writes every target below; `retrygen check` (in CI) fails when a\n\
         # committed file is stale. Paths are relative to this file.\n\n",
    );
    out.push_str("[[job]]\n");
    out.push_str(&format!("spec = {}\n", toml_string(spec)));
    out.push_str(
        "# Overlays applied to the spec in order, for annotations the API repository does not\n\
         # carry yet. Start one with:\n",
    );
    out.push_str(&format!(
        "#   retrygen lint --spec {} --suggest-overlay retry-overlay.yaml\n",
        crate::emit::comment_safe(spec)
    ));
    out.push_str("# overlays = [\"retry-overlay.yaml\"]\n");
    out.push_str(
        "# Fail when a POST or PATCH has no x-idempotent (what `retrygen lint --strict` checks).\n\
         # strict = true\n\
         # Policy values that override the spec's x-retry-policy (docs/contract.md, \"Policy\").\n\
         # [job.policy]\n\
         # max_retries = 3\n",
    );
    for language in languages {
        let Some(backend) = emit::backend(language) else {
            continue;
        };
        out.push_str("\n[[job.target]]\n");
        out.push_str(&format!("language = {}\n", toml_string(language)));
        out.push_str(&format!(
            "out = {}\n",
            toml_string(&format!("{}/{language}/", out_dir.trim_end_matches('/')))
        ));
        for adapter in backend.adapters() {
            out.push_str(&format!(
                "# The retry loop around the HTTP client (docs/adapters.md); needs {}.\n",
                adapter.requires
            ));
            out.push_str(&format!("# adapters = [{}]\n", toml_string(adapter.name)));
        }
        let defaults = backend.default_options();
        if !defaults.is_empty() {
            out.push_str("# Language options, with their defaults:\n");
            out.push_str("# [job.target.options]\n");
            for (key, value) in &defaults {
                out.push_str(&format!("# {key} = {}\n", toml_string(value)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_made_relative_to_the_config() {
        assert_eq!(
            relative_to(Path::new("api/openapi.yaml"), Path::new("")),
            Path::new("api/openapi.yaml")
        );
        assert_eq!(
            relative_to(Path::new("api/openapi.yaml"), Path::new("sdk")),
            Path::new("../api/openapi.yaml")
        );
        assert_eq!(
            relative_to(Path::new("./sdk/x.yaml"), Path::new("sdk/")),
            Path::new("x.yaml")
        );
        assert_eq!(
            relative_to(Path::new("/w/api/a.yaml"), Path::new("/w/sdk")),
            Path::new("../api/a.yaml")
        );
    }

    /// The text is a config retrygen reads, with every language's target.
    #[test]
    fn the_config_parses() {
        let text = config_text("a \"b\".yaml", &["python", "go"], "gen");
        let value: toml::Value = toml::from_str(&text).unwrap();
        let job = &value["job"][0];
        assert_eq!(job["spec"].as_str(), Some("a \"b\".yaml"));
        assert_eq!(job["target"][1]["out"].as_str(), Some("gen/go/"));
    }
}
