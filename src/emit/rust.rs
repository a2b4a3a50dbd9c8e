use super::escape::{c_like, push_quoted};
use super::{Backend, LanguageOptions, RuntimeFile};
use crate::model::policy::Jitter;
use crate::model::ReplayClass;
use heck::ToUpperCamelCase;

pub struct Rust;

impl Backend for Rust {
    fn name(&self) -> &'static str {
        "rust"
    }
    /// No options: the target is a module folder (`out = "src/retry_policy/"`), named by the
    /// folder, which the SDK declares with `mod retry_policy;`.
    fn default_options(&self) -> LanguageOptions {
        LanguageOptions::new()
    }
    fn check_options(&self, _options: &LanguageOptions) -> Result<(), String> {
        Ok(())
    }
    fn tables_file_name(&self, _options: &LanguageOptions) -> String {
        "mod.rs".into()
    }
    fn runtime_files(&self) -> &'static [RuntimeFile] {
        &RUNTIME_FILES
    }
    /// NUL is written `\u{0}`, never `\0`: followed by a digit, `\0` looks like an octal escape,
    /// which clippy's `octal_escapes` warns about (an error under `-D warnings`).
    fn push_string_literal(&self, out: &mut String, s: &str) {
        push_quoted(out, s, c_like, |c| format!("\\u{{{:x}}}", c as u32))
    }
    /// A raw string when the pattern has backslashes to spare and nothing a raw string cannot hold.
    fn push_regex_literal(&self, out: &mut String, pattern: &str) {
        if pattern.contains('\\')
            && pattern
                .chars()
                .all(|c| (' '..='~').contains(&c) && c != '"')
        {
            out.push_str("r\"");
            out.push_str(pattern);
            out.push('"');
        } else {
            self.push_string_literal(out, pattern)
        }
    }
    fn null_literal(&self) -> &'static str {
        "None"
    }
    fn class_ident(&self, class: ReplayClass) -> String {
        format!("ReplayClass::{}", class.name().to_upper_camel_case())
    }
    fn jitter_ident(&self, jitter: Jitter) -> String {
        format!("Jitter::{}", jitter.name().to_upper_camel_case())
    }
}

/// `runtime/rust/runtime.rs`, emitted verbatim beside the tables (`mod runtime;` in `mod.rs`).
static RUNTIME_FILES: [RuntimeFile; 1] = [RuntimeFile {
    name: "runtime.rs",
    source: include_str!("../../runtime/rust/runtime.rs"),
}];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_is_never_octal_looking() {
        assert_eq!(Rust.string_literal("\0\x00\u{1}7"), r#""\u{0}\u{0}\u{1}7""#);
    }

    /// The runtime is emitted byte for byte as it is in the repository, and it carries the marker
    /// `check` looks for.
    #[test]
    fn runtime_is_copied_verbatim() {
        let options = Rust.default_options();
        assert!(options.is_empty());
        let files = Rust.runtime_files();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].name, "runtime.rs");
        let on_disk = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/rust/runtime.rs"),
        )
        .expect("runtime source");
        assert_eq!(Rust.runtime_text(&files[0], &options), on_disk);
        assert!(super::super::is_generated(&on_disk));
    }
}
