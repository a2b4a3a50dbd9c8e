use super::escape::{c_like, check_identifier, push_quoted, utf16_escape};
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
        let package = &options["package"];
        for part in package.split('.') {
            check_identifier("package segment", part, &KOTLIN_KEYWORDS)?;
            check_not_underscores("package segment", part)?;
        }
        if let Some(first @ ("kotlin" | "java")) = package.split('.').next() {
            return Err(format!(
                "package {package:?} is inside `{first}`, which only the platform may define"
            ));
        }
        let object = &options["object"];
        check_identifier("object", object, &KOTLIN_KEYWORDS)?;
        check_not_underscores("object", object)?;
        if DECLARED_TYPES.contains(&object.as_str()) || is_chunk_name(object) {
            return Err(format!(
                "object {object:?} is the name of a type the module declares; choose another name"
            ));
        }
        if REFERENCED_TYPES.contains(&object.as_str()) {
            return Err(format!("object {object:?} would hide the platform type `{object}` the module uses; choose another name"));
        }
        Ok(())
    }
    fn tables_file_name(&self, options: &LanguageOptions) -> String {
        format!("{}.kt", options["object"])
    }
    /// A plain string: `$` is escaped (it would start a string template), every character outside
    /// printable ASCII becomes a `\uXXXX` escape (a surrogate pair outside the BMP).
    fn push_string_literal(&self, out: &mut String, s: &str) {
        push_quoted(
            out,
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

/// `_`, `__`, ... are reserved in Kotlin.
fn check_not_underscores(what: &str, value: &str) -> Result<(), String> {
    if value.chars().all(|c| c == '_') {
        return Err(format!("{what} {value:?} is reserved in Kotlin"));
    }
    Ok(())
}

/// The types templates/kotlin/module.j2 declares at the top level and inside the object.
const DECLARED_TYPES: [&str; 11] = [
    "ReplayClass",
    "Jitter",
    "DecisionReason",
    "Operation",
    "Classification",
    "RetryPolicy",
    "Outcome",
    "DecisionInput",
    "Decision",
    "TrieNode",
    "MixedSegment",
];

/// Platform types the module refers to by their simple names; an object named like one would hide it.
const REFERENCED_TYPES: [&str; 29] = [
    "Any",
    "Array",
    "ArrayList",
    "ArithmeticException",
    "Boolean",
    "ByteArray",
    "ByteBuffer",
    "Byte",
    "Char",
    "CharArray",
    "CharacterCodingException",
    "Charsets",
    "CodingErrorAction",
    "Double",
    "HashMap",
    "Int",
    "JvmField",
    "JvmStatic",
    "List",
    "Long",
    "Map",
    "Math",
    "MutableList",
    "Pair",
    "Regex",
    "Set",
    "String",
    "Unit",
    "Nothing",
];

/// `OperationChunk<n>` and `TrieChunk<n>`, the objects that load the tables.
fn is_chunk_name(name: &str) -> bool {
    ["OperationChunk", "TrieChunk"].iter().any(|prefix| {
        name.strip_prefix(prefix)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn options(package: &str, object: &str) -> LanguageOptions {
        LanguageOptions::from([
            ("package".to_string(), package.to_string()),
            ("object".to_string(), object.to_string()),
        ])
    }

    #[test]
    fn literals_escape_templates_and_non_ascii() {
        assert_eq!(Kotlin.string_literal("${x}$y\"\\\n"), r#""\${x}\$y\"\\\n""#);
        assert_eq!(
            Kotlin.string_literal("caf\u{e9}\u{1F600}\u{2028}\u{202e}\0"),
            r#""caf\u00E9\uD83D\uDE00\u2028\u202E\u0000""#
        );
        assert_eq!(Kotlin.string_literal("*/ /* {{x}}"), r#""*/ /* {{x}}""#);
    }

    #[test]
    fn options_are_checked() {
        assert!(Kotlin.check_options(&Kotlin.default_options()).is_ok());
        assert!(Kotlin
            .check_options(&options("com.example.sdk", "SandboxRetries"))
            .is_ok());
        for (package, object) in [
            ("a.fun", "X"),
            ("kotlin.x", "X"),
            ("java", "X"),
            ("a", "Operation"),
            ("a", "TrieChunk3"),
            ("a", "_"),
            ("a.b-c", "X"),
            ("a", "Math"),
            ("a", "Regex"),
        ] {
            assert!(
                Kotlin.check_options(&options(package, object)).is_err(),
                "{package} {object}"
            );
        }
        assert!(Kotlin.check_options(&options("a", "TrieChunks")).is_ok());
    }
}
