use super::escape::{c_like, check_identifier, quoted, utf16_escape};
use super::{Backend, LanguageOptions};
use crate::model::policy::Jitter;
use crate::model::ReplayClass;
use heck::ToUpperCamelCase;

pub struct CSharp;

impl Backend for CSharp {
    fn name(&self) -> &'static str {
        "csharp"
    }
    fn default_options(&self) -> LanguageOptions {
        LanguageOptions::from([
            ("namespace".to_string(), "Retrygen.Generated".to_string()),
            ("class".to_string(), "RetryPolicies".to_string()),
        ])
    }
    fn check_options(&self, options: &LanguageOptions) -> Result<(), String> {
        for part in options["namespace"].split('.') {
            check_identifier("namespace segment", part, &CSHARP_KEYWORDS)?;
        }
        check_identifier("class", &options["class"], &CSHARP_KEYWORDS)
    }
    fn default_file_name(&self, options: &LanguageOptions) -> String {
        format!("{}.cs", options["class"])
    }
    /// `\x` is variable-length in C#, so only fixed-width `\uXXXX` escapes are used.
    fn string_literal(&self, s: &str) -> String {
        quoted(
            s,
            |c| if c == '\0' { Some("\\0") } else { c_like(c) },
            utf16_escape,
        )
    }
    fn null_literal(&self) -> &'static str {
        "null"
    }
    fn class_ident(&self, class: ReplayClass) -> String {
        format!("ReplayClass.{}", class.name().to_upper_camel_case())
    }
    fn jitter_ident(&self, jitter: Jitter) -> String {
        format!("Jitter.{}", jitter.name().to_upper_camel_case())
    }
}

const CSHARP_KEYWORDS: [&str; 77] = [
    "abstract",
    "as",
    "base",
    "bool",
    "break",
    "byte",
    "case",
    "catch",
    "char",
    "checked",
    "class",
    "const",
    "continue",
    "decimal",
    "default",
    "delegate",
    "do",
    "double",
    "else",
    "enum",
    "event",
    "explicit",
    "extern",
    "false",
    "finally",
    "fixed",
    "float",
    "for",
    "foreach",
    "goto",
    "if",
    "implicit",
    "in",
    "int",
    "interface",
    "internal",
    "is",
    "lock",
    "long",
    "namespace",
    "new",
    "null",
    "object",
    "operator",
    "out",
    "override",
    "params",
    "private",
    "protected",
    "public",
    "readonly",
    "ref",
    "return",
    "sbyte",
    "sealed",
    "short",
    "sizeof",
    "stackalloc",
    "static",
    "string",
    "struct",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "typeof",
    "uint",
    "ulong",
    "unchecked",
    "unsafe",
    "ushort",
    "using",
    "virtual",
    "void",
    "volatile",
    "while",
];
