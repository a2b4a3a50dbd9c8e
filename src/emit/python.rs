use super::escape::{c_like, check_identifier, quoted};
use super::{Backend, LanguageOptions};
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
    fn null_literal(&self) -> &'static str {
        "None"
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
