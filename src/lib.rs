//! retrygen: reads an OpenAPI document, decides for every operation whether a failed attempt may
//! be replayed, and emits the same retry policy as source code for six SDK languages.
//!
//! The pipeline flows one way: [`read`] (document -> raw operations) -> [`model`] (classes and
//! policy, no language knowledge) -> [`emit`] (one backend per language) -> [`write`]
//! (atomic writes, or a diff in check mode).

pub mod cli;
pub mod config;
pub mod decide;
pub mod diag;
pub mod diff;
pub mod emit;
pub mod explain;
mod facade;
pub mod init;
pub mod model;
pub mod percent;
pub mod read;
pub mod suggest;
pub mod write;

pub use config::Config;
pub use diag::{Diagnostic, Diagnostics, Location};
pub use emit::{Backend, BACKENDS};
pub use facade::{
    check, diff as diff_specs, display_path, generate, load_api, load_spec, model_options, write,
    CheckReport, Error, Plan,
};
pub use model::{Api, ModelOptions, ReplayClass};
pub use write::{Orphan, Planned, Status};

#[cfg(test)]
mod layering {
    use std::path::Path;

    /// The `crate::` modules the files of one stage's folder name in code (doc comments aside).
    fn named_modules(folder: &str) -> Vec<(String, String)> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("src")
            .join(folder);
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&dir).expect("the stage folder") {
            let path = entry.expect("an entry").path();
            let text = std::fs::read_to_string(&path).expect("a source file");
            for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
                for (i, _) in line.match_indices("crate::") {
                    let name: String = line[i + 7..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    found.push((path.display().to_string(), name));
                }
            }
        }
        found
    }

    /// Data flows one way: read names only the shared helpers, model only read and them.
    #[test]
    fn no_stage_reaches_back_up() {
        for (folder, allowed) in [
            ("read", &["diag", "percent", "read"][..]),
            ("model", &["diag", "percent", "read", "model"][..]),
        ] {
            for (file, name) in named_modules(folder) {
                assert!(
                    allowed.contains(&name.as_str()),
                    "{file} names crate::{name}, a later stage"
                );
            }
        }
    }
}
