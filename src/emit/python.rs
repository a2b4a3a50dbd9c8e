use super::escape::{c_like, push_quoted};
use super::{push_comment_line, Adapter, Backend, LanguageOptions, RuntimeFile};
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
