//! The backend registry (`retrygen::BACKENDS`) is the only list of languages. Everything else
//! that is per language is found by the language's name: its toolchain here
//! ([`crate::toolchains::TOOLCHAINS`], looked up by name), and its folders:
//! `templates/<language>/tables.j2`, `runtime/<language>/`, `conformance/harness/<language>/`,
//! `conformance/faults/harness/<language>/`,
//! `conformance/mutants/<language>.toml` and `bench/<language>/`. Adding a language is those
//! artefacts and nothing else; the tests below count them, and fail on any other list of
//! languages in the project's code.

/// What a language needs beside its backend: the paths, relative to the repository root.
#[cfg(test)]
pub fn artefacts(language: &str) -> Vec<String> {
    vec![
        format!("templates/{language}/tables.j2"),
        format!("runtime/{language}"),
        format!("conformance/harness/{language}"),
        format!("conformance/faults/harness/{language}"),
        format!("conformance/mutants/{language}.toml"),
        format!("bench/{language}"),
    ]
}

#[cfg(test)]
mod tests {
    use super::artefacts;
    use crate::toolchains::{root, TOOLCHAINS};
    use std::path::Path;

    #[test]
    fn every_backend_has_its_artefacts_and_nothing_else_exists() {
        let backends: Vec<&str> = retrygen::BACKENDS.iter().map(|b| b.name()).collect();
        let toolchains: Vec<&str> = TOOLCHAINS.iter().map(|t| t.language()).collect();
        assert_eq!(
            toolchains, backends,
            "one toolchain per backend, in registry order"
        );
        for language in &backends {
            for path in artefacts(language) {
                assert!(root().join(&path).exists(), "{language}: {path} is missing");
            }
            let backend = retrygen::emit::backend(language).expect("registered");
            for file in backend.runtime_files() {
                assert!(
                    root()
                        .join("runtime")
                        .join(language)
                        .join(file.name)
                        .is_file()
                        || std::fs::read_dir(root().join("runtime").join(language))
                            .into_iter()
                            .flatten()
                            .flatten()
                            .any(|e| e.path().is_dir() && e.path().join(file.name).is_file()),
                    "{language}: the runtime file {} is not under runtime/{language}/",
                    file.name
                );
            }
        }
        // No folder of a language the registry does not know.
        for folder in [
            "templates",
            "runtime",
            "conformance/harness",
            "conformance/faults/harness",
            "bench",
        ] {
            for entry in std::fs::read_dir(root().join(folder)).expect("folder exists") {
                let entry = entry.expect("entry");
                let name = entry.file_name().to_string_lossy().into_owned();
                // Tool caches (`.mypy_cache`, `.pytest_cache`) are not languages.
                if entry.path().is_dir() && !name.starts_with('.') {
                    assert!(
                        backends.contains(&name.as_str()),
                        "{folder}/{name}: no backend named {name}"
                    );
                }
            }
        }
    }

    /// Source files of the project that could hold a list of languages.
    fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("readable").flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !matches!(name.as_str(), "target" | "node_modules" | ".cache" | ".git") {
                    sources(&path, out);
                }
            } else if matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("rs" | "sh" | "toml")
            ) || name == "Makefile"
            {
                out.push(path);
            }
        }
    }

    /// No code lists the languages: a run of 25 lines naming every registered language as a
    /// quoted string (or a Makefile/shell word list) is a list the registry should have given.
    #[test]
    fn the_registry_is_the_only_list_of_languages() {
        let languages: Vec<&str> = retrygen::BACKENDS.iter().map(|b| b.name()).collect();
        let mut files = Vec::new();
        for dir in ["src", "xtask/src", "tests", "scripts", ".ci"] {
            sources(&root().join(dir), &mut files);
        }
        files.push(root().join("Makefile"));
        let mut lists = Vec::new();
        for file in files {
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            let lines: Vec<&str> = text.lines().collect();
            for start in 0..lines.len() {
                let window = lines[start..(start + 25).min(lines.len())].join("\n");
                let named = languages
                    .iter()
                    .filter(|l| {
                        window.contains(&format!("\"{l}\""))
                            || window.contains(&format!("{l},"))
                                && window.contains(&format!(",{l}"))
                    })
                    .count();
                if named == languages.len() {
                    lists.push(format!(
                        "{}:{}",
                        file.strip_prefix(root()).unwrap_or(&file).display(),
                        start + 1
                    ));
                    break;
                }
            }
        }
        assert!(
            lists.is_empty(),
            "lists of every language outside the registry (derive them from retrygen::BACKENDS): {lists:?}"
        );
    }
}
