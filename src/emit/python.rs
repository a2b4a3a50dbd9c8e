use super::escape::{c_like, check_identifier, push_quoted};
use super::{push_comment_line, Backend, LanguageOptions};
use crate::model::policy::Jitter;
use crate::model::ReplayClass;
use heck::ToShoutySnakeCase;
use std::fmt::Write;

pub struct Python;

impl Backend for Python {
    fn name(&self) -> &'static str {
        "python"
    }
    fn default_options(&self) -> LanguageOptions {
        LanguageOptions::from([("module".to_string(), "retry_policy".to_string())])
    }
    fn check_options(&self, options: &LanguageOptions) -> Result<(), String> {
        check_identifier("module", &options["module"], &PYTHON_KEYWORDS)
    }
    fn tables_file_name(&self, options: &LanguageOptions) -> String {
        format!("{}.py", options["module"])
    }
    fn push_string_literal(&self, out: &mut String, s: &str) {
        push_quoted(out, s, c_like, |c| match c as u32 {
            u @ 0..=0xff => format!("\\x{u:02x}"),
            u @ 0x100..=0xffff => format!("\\u{u:04x}"),
            u => format!("\\U{u:08x}"),
        })
    }
    /// A raw string `r"..."` when the pattern is printable ASCII without `"` (every backslash of
    /// a pattern then stands for itself); otherwise an ordinary escaped literal.
    fn push_regex_literal(&self, out: &mut String, pattern: &str) {
        let raw_safe = pattern
            .chars()
            .all(|c| (' '..='~').contains(&c) && c != '"')
            && pattern.chars().rev().take_while(|&c| c == '\\').count() % 2 == 0;
        if raw_safe {
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

const PYTHON_KEYWORDS: [&str; 35] = [
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regex_literals_are_raw_when_they_can_be() {
        assert_eq!(
            Python.regex_literal(r"^/a\.b/[^/]+/?$"),
            r#"r"^/a\.b/[^/]+/?$""#
        );
        assert_eq!(
            Python.regex_literal(r"^/back\\slash/?$"),
            r#"r"^/back\\slash/?$""#
        );
        // A quote, a control or a non-ASCII character needs an ordinary literal.
        assert_eq!(Python.regex_literal("^/q\"/?$"), r#""^/q\"/?$""#);
        assert_eq!(
            Python.regex_literal("^/a\nb\u{2028}/?$"),
            r#""^/a\nb\u2028/?$""#
        );
        assert_eq!(Python.regex_literal("^/\u{1F600}$"), r#""^/\U0001f600$""#);
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
