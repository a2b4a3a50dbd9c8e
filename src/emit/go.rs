use super::escape::{c_like, check_identifier, push_quoted};
use super::{Backend, LanguageOptions};
use crate::model::policy::Jitter;
use crate::model::ReplayClass;
use heck::ToUpperCamelCase;

pub struct Go;

impl Backend for Go {
    fn name(&self) -> &'static str {
        "go"
    }
    fn default_options(&self) -> LanguageOptions {
        LanguageOptions::from([("package".to_string(), "retrypolicy".to_string())])
    }
    fn check_options(&self, options: &LanguageOptions) -> Result<(), String> {
        let package = &options["package"];
        check_identifier("package", package, &GO_KEYWORDS)?;
        if package.chars().any(|c| c.is_ascii_uppercase() || c == '_') {
            return Err(format!("package {package:?}: Go package names are short lower-case words without underscores"));
        }
        Ok(())
    }
    fn tables_file_name(&self, _options: &LanguageOptions) -> String {
        "retry_policy.go".into()
    }
    fn push_string_literal(&self, out: &mut String, s: &str) {
        push_quoted(out, s, c_like, |c| match c as u32 {
            u @ 0..=0xffff => format!("\\u{u:04x}"),
            u => format!("\\U{u:08x}"),
        })
    }
    /// Go writes regular expressions as raw strings when it can.
    fn push_regex_literal(&self, out: &mut String, pattern: &str) {
        if pattern
            .chars()
            .all(|c| (' '..='~').contains(&c) && c != '`')
        {
            out.push('`');
            out.push_str(pattern);
            out.push('`');
        } else {
            self.push_string_literal(out, pattern)
        }
    }
    fn null_literal(&self) -> &'static str {
        "\"\""
    }
    fn class_ident(&self, class: ReplayClass) -> String {
        format!("Class{}", class.name().to_upper_camel_case())
    }
    fn jitter_ident(&self, jitter: Jitter) -> String {
        format!("Jitter{}", jitter.name().to_upper_camel_case())
    }
}

const GO_KEYWORDS: [&str; 25] = [
    "break",
    "case",
    "chan",
    "const",
    "continue",
    "default",
    "defer",
    "else",
    "fallthrough",
    "for",
    "func",
    "go",
    "goto",
    "if",
    "import",
    "interface",
    "map",
    "package",
    "range",
    "return",
    "select",
    "struct",
    "switch",
    "type",
    "var",
];
