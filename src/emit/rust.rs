use super::escape::{c_like, check_identifier, push_quoted};
use super::{Backend, LanguageOptions};
use crate::model::policy::Jitter;
use crate::model::ReplayClass;
use heck::ToUpperCamelCase;

pub struct Rust;

impl Backend for Rust {
    fn name(&self) -> &'static str {
        "rust"
    }
    fn default_options(&self) -> LanguageOptions {
        LanguageOptions::from([("module".to_string(), "retry_policy".to_string())])
    }
    fn check_options(&self, options: &LanguageOptions) -> Result<(), String> {
        check_identifier("module", &options["module"], &RUST_KEYWORDS)
    }
    fn tables_file_name(&self, options: &LanguageOptions) -> String {
        format!("{}.rs", options["module"])
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

const RUST_KEYWORDS: [&str; 52] = [
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_is_never_octal_looking() {
        assert_eq!(Rust.string_literal("\0\x00\u{1}7"), r#""\u{0}\u{0}\u{1}7""#);
    }
}
