use super::escape::{c_like, check_identifier, push_quoted, utf16_escape};
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
            // The module's `using System...` directives sit inside the namespace, where a segment
            // named like them would be found first.
            if matches!(part, "System" | "global") {
                return Err(format!(
                    "namespace segment {part:?} would hide the `{part}` namespace the module uses"
                ));
            }
        }
        let class = &options["class"];
        check_identifier("class", class, &CSHARP_KEYWORDS)?;
        if DECLARED_NAMES.contains(&class.as_str()) || is_loader_name(class) {
            return Err(format!("class {class:?} is the name of a type or member the module declares; choose another name"));
        }
        if REFERENCED_TYPES.contains(&class.as_str()) {
            return Err(format!("class {class:?} would hide the framework type `{class}` the module uses; choose another name"));
        }
        Ok(())
    }
    fn tables_file_name(&self, options: &LanguageOptions) -> String {
        format!("{}.cs", options["class"])
    }
    /// A regular (not verbatim, not interpolated) string. `\x` is variable-length in C#, so only
    /// fixed-width `\uXXXX` escapes are used (a surrogate pair outside the BMP).
    fn push_string_literal(&self, out: &mut String, s: &str) {
        push_quoted(
            out,
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

/// Names templates/csharp/module.j2 declares: the namespace's types, and the static class's
/// members and nested types (C# forbids a member named like its enclosing type).
const DECLARED_NAMES: [&str; 58] = [
    "ReplayClass",
    "Jitter",
    "DecisionReason",
    "FailureKind",
    "WireNames",
    "Operation",
    "Classification",
    "RetryPolicy",
    "Outcome",
    "DecisionInput",
    "Decision",
    "BasePath",
    "SourceName",
    "BeyondAnyCapMs",
    "MsPerDay",
    "MaxDigits",
    "ShortDayNames",
    "LongDayNames",
    "MonthNames",
    "StrictUtf8",
    "OperationTable",
    "OperationsById",
    "NonReplayableTable",
    "WholePathPatterns",
    "IdempotentMethodSet",
    "Trie",
    "Operations",
    "NonReplayableOperations",
    "IdempotentMethods",
    "Classify",
    "OperationById",
    "IsNonReplayable",
    "Decide",
    "BackoffMs",
    "ServerDelayMs",
    "Stop",
    "ParseNumber",
    "HttpDateDelayMs",
    "TimeOfDay",
    "Digits",
    "IsLeapYear",
    "DaysInMonth",
    "DaysFromCivil",
    "YearOfDay",
    "FloorDiv",
    "FloorMod",
    "IsAsciiDigit",
    "TrimSpacesAndTabs",
    "AsciiUpperCase",
    "SegmentsOf",
    "PercentDecode",
    "HexValue",
    "Match",
    "IndexOperationIds",
    "ListNonReplayable",
    "AnchorWholePaths",
    "TrieNode",
    "MixedSegment",
];

/// Framework types the module refers to by their simple names; a class named like one would hide it.
const REFERENCED_TYPES: [&str; 27] = [
    "Array",
    "ArgumentException",
    "ArgumentNullException",
    "ArgumentOutOfRangeException",
    "CultureInfo",
    "Dictionary",
    "Encoding",
    "Exception",
    "HashSet",
    "IEnumerable",
    "IReadOnlyCollection",
    "IReadOnlyList",
    "KeyValuePair",
    "List",
    "Math",
    "Nullable",
    "Object",
    "OverflowException",
    "ReadOnlyCollection",
    "Regex",
    "RegexOptions",
    "String",
    "StringComparer",
    "StringComparison",
    "System",
    "UTF8Encoding",
    "Int64",
];

/// `LoadOperations`, `LoadTrie` and their numbered chunks.
fn is_loader_name(name: &str) -> bool {
    ["LoadOperations", "LoadTrie"].iter().any(|prefix| {
        name.strip_prefix(prefix)
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn options(namespace: &str, class: &str) -> LanguageOptions {
        LanguageOptions::from([
            ("namespace".to_string(), namespace.to_string()),
            ("class".to_string(), class.to_string()),
        ])
    }

    #[test]
    fn literals_use_fixed_width_escapes() {
        assert_eq!(
            CSharp.string_literal("a\"b\\c\n{0}$x"),
            r#""a\"b\\c\n{0}$x""#
        );
        assert_eq!(CSharp.string_literal("\0"), r#""\0""#);
        assert_eq!(
            CSharp.string_literal("\u{1}7\u{e9}\u{1F600}\u{2029}"),
            r#""\u00017\u00E9\uD83D\uDE00\u2029""#
        );
    }

    #[test]
    fn options_are_checked() {
        assert!(CSharp.check_options(&CSharp.default_options()).is_ok());
        assert!(CSharp
            .check_options(&options("Example.Sdk", "SandboxRetries"))
            .is_ok());
        for (namespace, class) in [
            ("A.class", "X"),
            ("A.System", "X"),
            ("A", "Decide"),
            ("A", "LoadTrie12"),
            ("A", "Operation"),
            ("A", "9x"),
            ("A", "Math"),
            ("A", "Regex"),
        ] {
            assert!(
                CSharp.check_options(&options(namespace, class)).is_err(),
                "{namespace} {class}"
            );
        }
    }
}
