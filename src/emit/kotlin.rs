use super::escape::{c_like, check_identifier, push_quoted, utf16_escape};
use super::{Backend, LanguageOptions, RuntimeFile};
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
            ("package".to_string(), DEFAULT_PACKAGE.to_string()),
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
    fn runtime_files(&self) -> &'static [RuntimeFile] {
        &RUNTIME
    }
    /// The runtime's one `package retrygen.generated` line names the `package` option instead.
    fn runtime_text(&self, file: &RuntimeFile, options: &LanguageOptions) -> String {
        let package = &options["package"];
        if package == DEFAULT_PACKAGE {
            return file.source.to_string();
        }
        file.source.replacen(
            &format!("\npackage {DEFAULT_PACKAGE}\n"),
            &format!("\npackage {package}\n"),
            1,
        )
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

/// The package the runtime source declares (`runtime/kotlin/RetryRuntime.kt`).
const DEFAULT_PACKAGE: &str = "retrygen.generated";

/// The spec-independent runtime, copied beside every tables file.
static RUNTIME: [RuntimeFile; 1] = [RuntimeFile {
    name: "RetryRuntime.kt",
    source: include_str!("../../runtime/kotlin/RetryRuntime.kt"),
}];

/// `_`, `__`, ... are reserved in Kotlin.
fn check_not_underscores(what: &str, value: &str) -> Result<(), String> {
    if value.chars().all(|c| c == '_') {
        return Err(format!("{what} {value:?} is reserved in Kotlin"));
    }
    Ok(())
}

/// The top-level types runtime/kotlin/RetryRuntime.kt declares, and the file name it takes: an
/// object (and its `<object>.kt`) named like one would clash with it.
const DECLARED_TYPES: [&str; 20] = [
    "BudgetAcquisition",
    "BudgetKind",
    "Classifier",
    "OverCapMode",
    "RetryBudgetCell",
    "RetryEvent",
    "RetryInputException",
    "SafeListEntry",
    "UnknownOperationClass",
    "ReplayClass",
    "Jitter",
    "DecisionReason",
    "Operation",
    "Classification",
    "RetryPolicy",
    "Outcome",
    "DecisionInput",
    "Decision",
    "OperationTable",
    "RetryRuntime",
];

/// Types nested in a declared type and referred to by their simple names only inside it, where
/// the nesting scope wins over any package-level name.
#[cfg(test)]
const NESTED_TYPES: [&str; 7] = [
    "Status",
    "Connect",
    "Transport",
    "Aborted",
    "Node",
    "MixedChild",
    "OperationChunk",
];

/// Platform types the runtime and the tables refer to by their simple names; an object named like
/// one would hide it (package members win over default imports). A unit test keeps the list whole.
const REFERENCED_TYPES: [&str; 42] = [
    "AtomicLong",
    "IllegalArgumentException",
    "Iterable",
    "Any",
    "Array",
    "ArrayDeque",
    "ArrayList",
    "ArithmeticException",
    "Boolean",
    "ByteArray",
    "ByteBuffer",
    "Byte",
    "Char",
    "CharArray",
    "CharacterCodingException",
    "Character",
    "Charsets",
    "CodingErrorAction",
    "Collections",
    "Comparator",
    "Double",
    "HashMap",
    "Int",
    "JvmField",
    "JvmName",
    "JvmOverloads",
    "JvmStatic",
    "LinkedHashSet",
    "List",
    "Long",
    "Map",
    "Math",
    "MutableList",
    "Pair",
    "Regex",
    "Set",
    "String",
    "StringBuilder",
    "Suppress",
    "Unit",
    "Nothing",
    "Lazy",
];

/// `OperationChunk<n>`, the nested objects that load the operations.
fn is_chunk_name(name: &str) -> bool {
    name.strip_prefix("OperationChunk")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
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
            ("a", "OperationChunk3"),
            ("a", "OperationTable"),
            ("a", "RetryRuntime"),
            ("a", "Collections"),
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
        assert!(Kotlin
            .check_options(&options("a", "OperationChunks"))
            .is_ok());
        assert!(Kotlin.check_options(&options("a", "TrieChunk3")).is_ok());
    }
    #[test]
    fn runtime_is_copied_verbatim_with_default_options() {
        let file = &Kotlin.runtime_files()[0];
        assert_eq!(file.name, "RetryRuntime.kt");
        assert_eq!(
            Kotlin.runtime_text(file, &Kotlin.default_options()),
            file.source
        );
        assert_eq!(
            file.source
                .matches(&format!("\npackage {DEFAULT_PACKAGE}\n"))
                .count(),
            1
        );
        assert!(super::super::is_generated(file.source));
    }

    #[test]
    fn runtime_package_line_follows_the_option() {
        let file = &Kotlin.runtime_files()[0];
        let text = Kotlin.runtime_text(file, &options("com.example.sdk", "X"));
        assert!(text.contains("\npackage com.example.sdk\n"));
        assert!(!text.contains(DEFAULT_PACKAGE));
        // Only that line differs.
        let (a, b): (Vec<&str>, Vec<&str>) =
            (file.source.lines().collect(), text.lines().collect());
        assert_eq!(a.len(), b.len());
        assert_eq!(a.iter().zip(&b).filter(|(x, y)| x != y).count(), 1);
    }

    /// Every capitalised name the runtime and the tables template use in code is declared by the
    /// runtime, nested in one of its types, or a platform type that `check_options` protects.
    #[test]
    fn every_type_name_in_code_is_known() {
        let runtime = Kotlin.runtime_files()[0].source;
        let tables = include_str!("../../templates/kotlin/tables.j2");
        let mut unknown = std::collections::BTreeSet::new();
        let names = capitalised_names_in_code(runtime);
        for expected in ["OperationTable", "Collections", "Regex", "Node"] {
            assert!(names.iter().any(|n| n == expected), "{expected} not found");
        }
        for text in [runtime, tables] {
            for name in capitalised_names_in_code(text) {
                let known = DECLARED_TYPES.contains(&name.as_str())
                    || NESTED_TYPES.contains(&name.as_str())
                    || REFERENCED_TYPES.contains(&name.as_str());
                if !known {
                    unknown.insert(name);
                }
            }
        }
        assert!(unknown.is_empty(), "add to REFERENCED_TYPES: {unknown:?}");
    }

    /// Names that start upper-case and hold a lower-case letter (so not `MS_PER_DAY` or `GET`), in
    /// code: comments (`//`, `/* */`, `{# #}`), string literals and template tags left out.
    fn capitalised_names_in_code(text: &str) -> Vec<String> {
        let mut code = String::new();
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            let skip_to = |rest: &str, open: &str, close: &str| -> Option<usize> {
                rest.strip_prefix(open)
                    .map(|r| open.len() + r.find(close).map_or(r.len(), |i| i + close.len()))
            };
            let skipped = skip_to(rest, "//", "\n")
                .or_else(|| skip_to(rest, "/*", "*/"))
                .or_else(|| skip_to(rest, "{#", "#}"))
                .or_else(|| skip_to(rest, "{{", "}}"))
                .or_else(|| skip_to(rest, "{%", "%}"))
                .or_else(|| skip_to(rest, "'\\", "'"))
                .or_else(|| skip_to(rest, "'", "'"));
            if let Some(n) = skipped {
                code.push(' ');
                rest = &rest[n..];
                continue;
            }
            if c == '"' {
                // A string literal, escapes included.
                let mut end = 1;
                let bytes = rest.as_bytes();
                while end < bytes.len() && bytes[end] != b'"' {
                    end += if bytes[end] == b'\\' { 2 } else { 1 };
                }
                code.push(' ');
                rest = &rest[(end + 1).min(rest.len())..];
                continue;
            }
            code.push(c);
            rest = &rest[c.len_utf8()..];
        }
        code.split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .filter(|w| {
                w.starts_with(|c: char| c.is_ascii_uppercase())
                    && w.contains(|c: char| c.is_ascii_lowercase())
            })
            .map(|w| w.trim_end_matches(|c: char| c.is_ascii_digit()).to_string())
            .collect()
    }
}
