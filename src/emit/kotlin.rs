use super::escape::{c_like, check_identifier, quoted, utf16_escape};
use super::{Backend, LanguageOptions};
use crate::model::policy::Jitter;
use crate::model::ReplayClass;
use heck::ToShoutySnakeCase;

pub struct Kotlin;

impl Backend for Kotlin {
    fn name(&self) -> &'static str {
        "kotlin"
    }
    fn default_options(&self) -> LanguageOptions {
        LanguageOptions::from([
            ("package".to_string(), "retrygen.generated".to_string()),
            ("object".to_string(), "RetryPolicies".to_string()),
        ])
    }
    fn check_options(&self, options: &LanguageOptions) -> Result<(), String> {
        for part in options["package"].split('.') {
            check_identifier("package segment", part, &KOTLIN_KEYWORDS)?;
        }
        check_identifier("object", &options["object"], &KOTLIN_KEYWORDS)
    }
    fn default_file_name(&self, options: &LanguageOptions) -> String {
        format!("{}.kt", options["object"])
    }
    fn string_literal(&self, s: &str) -> String {
        quoted(
            s,
            |c| if c == '$' { Some("\\$") } else { c_like(c) },
            utf16_escape,
        )
    }
    fn null_literal(&self) -> &'static str {
        "null"
    }
    fn class_ident(&self, class: ReplayClass) -> String {
        format!("ReplayClass.{}", class.name().to_shouty_snake_case())
    }
    fn jitter_ident(&self, jitter: Jitter) -> String {
        format!("Jitter.{}", jitter.name().to_shouty_snake_case())
    }
}

const KOTLIN_KEYWORDS: [&str; 28] = [
    "as",
    "break",
    "class",
    "continue",
    "do",
    "else",
    "false",
    "for",
    "fun",
    "if",
    "in",
    "interface",
    "is",
    "null",
    "object",
    "package",
    "return",
    "super",
    "this",
    "throw",
    "true",
    "try",
    "typealias",
    "typeof",
    "val",
    "var",
    "when",
    "while",
];
