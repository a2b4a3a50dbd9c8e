use super::escape::{c_like, check_identifier, push_quoted, utf16_escape};
use super::{Backend, LanguageOptions, RuntimeFile};
use crate::model::policy::Jitter;
use crate::model::ReplayClass;
use heck::ToUpperCamelCase;

pub struct CSharp;

const DEFAULT_NAMESPACE: &str = "Retrygen.Generated";
/// The runtime's namespace declaration, a line of its own.
const NAMESPACE_LINE: &str = "\nnamespace Retrygen.Generated\n";

static RUNTIME_FILES: [RuntimeFile; 1] = [RuntimeFile {
    name: "RetryRuntime.cs",
    source: include_str!("../../runtime/csharp/RetryRuntime.cs"),
}];

impl Backend for CSharp {
    fn name(&self) -> &'static str {
        "csharp"
    }
    fn default_options(&self) -> LanguageOptions {
        LanguageOptions::from([
            ("namespace".to_string(), DEFAULT_NAMESPACE.to_string()),
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
    fn runtime_files(&self) -> &'static [RuntimeFile] {
        &RUNTIME_FILES
    }
    /// The runtime with its one namespace line renamed when the `namespace` option differs.
    fn runtime_text(&self, file: &RuntimeFile, options: &LanguageOptions) -> String {
        let namespace = &options["namespace"];
        if namespace == DEFAULT_NAMESPACE {
            return file.source.to_string();
        }
        file.source
            .replacen(NAMESPACE_LINE, &format!("\nnamespace {namespace}\n"), 1)
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

/// Names the two files declare: the namespace's types (runtime/csharp/RetryRuntime.cs and the tables
/// file), and the tables class's members (C# forbids a member named like its enclosing type).
const DECLARED_NAMES: [&str; 40] = [
    "ReplayClass",
    "Jitter",
    "DecisionReason",
    "FailureKind",
    "OverCapMode",
    "UnknownOperationClass",
    "BudgetKind",
    "InvalidInputException",
    "WireNames",
    "Operation",
    "Classification",
    "SafeListEntry",
    "OperationTable",
    "RetryPolicy",
    "Outcome",
    "DecisionInput",
    "Decision",
    "RetryRuntime",
    "Classifier",
    "BudgetAcquisition",
    "RetryBudget",
    "RetryBudgetCell",
    "RetryEvent",
    "BasePath",
    "SourceName",
    "BeyondAnyCapMs",
    "Table",
    "Operations",
    "NonReplayableOperations",
    "IdempotentMethods",
    "DefaultClassifier",
    "Classify",
    "CreateClassifier",
    "OperationById",
    "HasIdempotencyKey",
    "FindSafeListEntry",
    "IsNonReplayable",
    "Decide",
    "BackoffMs",
    "ServerDelayMs",
];

/// Framework types the two files refer to by their simple names; a class named like one would hide it.
const REFERENCED_TYPES: [&str; 28] = [
    "ArgumentException",
    "ArgumentNullException",
    "ArgumentOutOfRangeException",
    "Array",
    "CultureInfo",
    "Dictionary",
    "Encoding",
    "IEnumerable",
    "IReadOnlyCollection",
    "IReadOnlyList",
    "Interlocked",
    "KeyValuePair",
    "Lazy",
    "LazyThreadSafetyMode",
    "List",
    "Math",
    "OverflowException",
    "ReadOnlyCollection",
    "Regex",
    "RegexMatchTimeoutException",
    "RegexOptions",
    "StringBuilder",
    "StringComparer",
    "StringComparison",
    "System",
    "TimeSpan",
    "UTF8Encoding",
    "Volatile",
];

/// `LoadOperations` and its numbered chunks.
fn is_loader_name(name: &str) -> bool {
    name.strip_prefix("LoadOperations")
        .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
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

    /// Every type the runtime declares is a name the class option may not take, and the default
    /// options leave the runtime as it is while another namespace renames exactly its one line.
    #[test]
    fn runtime_names_and_namespace() {
        let source = RUNTIME_FILES[0].source;
        for line in source.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            if let Some(at) = words
                .iter()
                .position(|w| matches!(*w, "class" | "enum" | "struct"))
            {
                if words[..at].contains(&"public") {
                    let name = words[at + 1];
                    assert!(
                        DECLARED_NAMES.contains(&name),
                        "{name} is missing from DECLARED_NAMES"
                    );
                }
            }
        }
        let file = &RUNTIME_FILES[0];
        assert_eq!(CSharp.runtime_text(file, &CSharp.default_options()), source);
        assert!(source.starts_with("// <auto-generated/>\n"));
        assert!(crate::emit::is_generated(source));
        let renamed = CSharp.runtime_text(file, &options("Example.Sdk", "RetryPolicies"));
        assert_eq!(renamed.lines().count(), source.lines().count());
        let changed: Vec<(&str, &str)> = source
            .lines()
            .zip(renamed.lines())
            .filter(|(a, b)| a != b)
            .collect();
        assert_eq!(
            changed,
            [("namespace Retrygen.Generated", "namespace Example.Sdk")]
        );
        assert_eq!(source.matches(NAMESPACE_LINE).count(), 1);
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
            ("A", "LoadOperations12"),
            ("A", "OperationTable"),
            ("A", "Classifier"),
            ("A", "RetryBudgetCell"),
            ("A", "CreateClassifier"),
            ("A", "RetryRuntime"),
            ("A", "Volatile"),
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
