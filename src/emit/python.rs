use super::escape::{c_like, push_quoted};
use super::{
    push_comment_line, relative_components, Adapter, Backend, LanguageOptions, LinkRequest,
    RuntimeFile,
};
use crate::model::policy::Jitter;
use crate::model::ReplayClass;
use heck::ToShoutySnakeCase;
use std::fmt::Write;

/// A target is a package folder: `__init__.py` (the tables and the public names, rendered from
/// `templates/python/tables.j2`) and `_runtime.py` (runtime/python/, copied verbatim). The
/// folder's name is the package's: there are no options.
pub struct Python;

static RUNTIME_FILES: [RuntimeFile; 1] = [RuntimeFile {
    name: "_runtime.py",
    source: include_str!("../../runtime/python/_runtime.py"),
}];

/// The httpx adapter (docs/adapters.md): `RetryTransport` and `AsyncRetryTransport`, the only
/// module of a target that imports a third-party package.
static ADAPTERS: [Adapter; 1] = [Adapter {
    name: "httpx",
    requires: "httpx 0.28 (tested with 0.28.1)",
    files: &[RuntimeFile {
        name: "httpx_transport.py",
        source: include_str!("../../runtime/python/httpx_transport.py"),
    }],
}];

impl Backend for Python {
    fn name(&self) -> &'static str {
        "python"
    }
    fn default_options(&self) -> LanguageOptions {
        LanguageOptions::new()
    }
    fn check_options(&self, _options: &LanguageOptions) -> Result<(), String> {
        Ok(())
    }
    fn tables_file_name(&self, _options: &LanguageOptions) -> String {
        "__init__.py".to_string()
    }
    fn runtime_files(&self) -> &'static [RuntimeFile] {
        &RUNTIME_FILES
    }
    fn adapters(&self) -> &'static [Adapter] {
        &ADAPTERS
    }
    /// A relative import of the shared runtime's `_runtime` module: one dot for the tables'
    /// package and one more per folder up, then the folders down (`..retry_runtime._runtime`).
    /// Both folders are packages of one package tree, which the import cannot leave.
    fn runtime_link(&self, link: &LinkRequest<'_>) -> Result<String, String> {
        let steps = relative_components(link.tables_dir, link.runtime_dir)
            .filter(|steps| !steps.is_empty())
            .ok_or_else(|| {
                format!(
                    "the shared runtime's folder {:?} cannot be imported relatively from {:?}",
                    link.runtime_dir.display(),
                    link.tables_dir.display()
                )
            })?;
        let up = steps.iter().take_while(|s| *s == "..").count();
        let mut module = ".".repeat(up + 1);
        for folder in &steps[up..] {
            let identifier = folder
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && folder
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !identifier || folder == ".." {
                return Err(format!(
                    "the shared runtime's folder {:?} is not a Python package path from {:?} ({folder:?} is not an identifier)",
                    link.runtime_dir.display(),
                    link.tables_dir.display()
                ));
            }
            module.push_str(folder);
            module.push('.');
        }
        module.push_str("_runtime");
        Ok(module)
    }
    /// A shared runtime's folder is a package of its own: an `__init__.py` that only says so.
    fn runtime_entry_file(&self) -> Option<&'static str> {
        Some("__init__.py")
    }
    fn push_string_literal(&self, out: &mut String, s: &str) {
        push_quoted(out, s, c_like, |c| match c as u32 {
            u @ 0..=0xff => format!("\\x{u:02x}"),
            u @ 0x100..=0xffff => format!("\\u{u:04x}"),
            u => format!("\\U{u:08x}"),
        })
    }
    fn null_literal(&self) -> &'static str {
        "None"
    }
    /// Only ASCII: ruff's RUF003 flags any character in a comment that looks like an ASCII one
    /// (the Kelvin sign, Cyrillic and full-width letters...), a list that grows with each release.
    fn push_comment_text(&self, out: &mut String, s: &str) {
        let start = out.len();
        push_comment_line(out, s);
        if out[start..].is_ascii() {
            return;
        }
        let line = out.split_off(start);
        for c in line.chars() {
            if c.is_ascii() {
                out.push(c);
            } else {
                write!(out, "\\u{{{:x}}}", c as u32).expect("writing to a String cannot fail");
            }
        }
    }
    fn class_ident(&self, class: ReplayClass) -> String {
        format!("ReplayClass.{}", class.name().to_shouty_snake_case())
    }
    fn jitter_ident(&self, jitter: Jitter) -> String {
        format!("Jitter.{}", jitter.name().to_shouty_snake_case())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The runtime is emitted byte for byte, carrying the generated marker in its first lines.
    #[test]
    fn runtime_is_copied_verbatim() {
        let options = LanguageOptions::new();
        let files = Python.runtime_files();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].name, "_runtime.py");
        assert_eq!(Python.runtime_text(&files[0], &options), files[0].source);
        assert!(crate::emit::is_generated(files[0].source));
        assert_eq!(Python.tables_file_name(&options), "__init__.py");
    }

    /// The httpx adapter is emitted byte for byte too: it imports the runtime relatively
    /// (`from ._runtime import`), so nothing in it names the package.
    #[test]
    fn httpx_adapter_is_copied_verbatim() {
        let options = LanguageOptions::new();
        let adapters = Python.adapters();
        assert_eq!(adapters.len(), 1);
        assert_eq!(adapters[0].name, "httpx");
        assert_eq!(adapters[0].files.len(), 1);
        let file = &adapters[0].files[0];
        assert_eq!(file.name, "httpx_transport.py");
        assert_eq!(Python.runtime_text(file, &options), file.source);
        assert!(crate::emit::is_generated(file.source));
        assert!(file.source.contains("\nfrom ._runtime import ("));
    }

    /// The relative import of a shared runtime, from the tables' folder.
    #[test]
    fn runtime_link_is_a_relative_import() {
        let options = LanguageOptions::new();
        let link = |tables: &str, runtime: &str| {
            Python.runtime_link(&LinkRequest {
                tables_dir: std::path::Path::new(tables),
                runtime_dir: std::path::Path::new(runtime),
                tables_options: &options,
                runtime_options: &options,
                runtime_path: None,
            })
        };
        assert_eq!(
            link("sdk/control/", "sdk/retry_runtime/").unwrap(),
            "..retry_runtime._runtime"
        );
        assert_eq!(
            link("golden/sandbox/python/", "golden/runtime/python/").unwrap(),
            "...runtime.python._runtime"
        );
        assert_eq!(link("sdk/", "sdk/rt/").unwrap(), ".rt._runtime");
        assert!(link("sdk/a/", "sdk/a/").is_err());
        assert!(link("sdk/a/", "sdk/retry-runtime/")
            .unwrap_err()
            .contains("identifier"));
    }

    #[test]
    fn the_module_option_is_gone() {
        let given = LanguageOptions::from([("module".to_string(), "x".to_string())]);
        assert!(crate::emit::resolve_options(&Python, &given).is_err());
        assert!(crate::emit::resolve_options(&Python, &LanguageOptions::new()).is_ok());
    }

    #[test]
    fn comments_are_ascii() {
        assert_eq!(
            Python.comment_text("from \u{212a}caf\u{e9}\u{1F600} .json "),
            "from \\u{212a}caf\\u{e9}\\u{1f600} .json\\u{20}"
        );
    }

    #[test]
    fn string_literals_escape_everything_unusual() {
        assert_eq!(
            Python.string_literal("a\"b\\c\u{7}\u{e9}"),
            r#""a\"b\\c\x07\xe9""#
        );
    }
}
