use super::escape::{c_like, check_identifier, quoted};
use super::{comment_line, Backend, LanguageOptions};
use crate::model::policy::Jitter;
use crate::model::ReplayClass;
use heck::ToShoutySnakeCase;

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
    fn default_file_name(&self, options: &LanguageOptions) -> String {
        format!("{}.py", options["module"])
    }
    fn string_literal(&self, s: &str) -> String {
        quoted(s, c_like, |c| match c as u32 {
            u @ 0..=0xff => format!("\\x{u:02x}"),
            u @ 0x100..=0xffff => format!("\\u{u:04x}"),
            u => format!("\\U{u:08x}"),
        })
    }
    /// A raw string `r"..."` when the pattern is printable ASCII without `"` (every backslash of
    /// a pattern then stands for itself); otherwise an ordinary escaped literal.
    fn regex_literal(&self, pattern: &str) -> String {
        let raw_safe = pattern
            .chars()
            .all(|c| (' '..='~').contains(&c) && c != '"')
            && pattern.chars().rev().take_while(|&c| c == '\\').count() % 2 == 0;
        if raw_safe {
            format!("r\"{pattern}\"")
        } else {
            self.string_literal(pattern)
        }
    }
    fn null_literal(&self) -> &'static str {
        "None"
    }
    /// Only ASCII: ruff's RUF003 flags any character in a comment that looks like an ASCII one
    /// (the Kelvin sign, Cyrillic and full-width letters...), a list that grows with each release.
    fn comment_text(&self, s: &str) -> String {
        comment_line(s)
            .chars()
            .map(|c| {
                if c.is_ascii() {
                    c.to_string()
                } else {
                    format!("\\u{{{:x}}}", c as u32)
                }
            })
            .collect()
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
