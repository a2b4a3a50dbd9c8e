use super::escape::{c_like, check_identifier, push_quoted, utf16_escape};
use super::{visibility, Adapter, Backend, LanguageOptions, LinkRequest, RuntimeFile};
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
            (
                visibility::OPTION.to_string(),
                visibility::PUBLIC.to_string(),
            ),
        ])
    }
    fn check_options(&self, options: &LanguageOptions) -> Result<(), String> {
        visibility::check(options)?;
        let package = &options["package"];
        // Internal declarations of two SDKs in one default package would still be one package:
        // an internal module names its own.
        if visibility::is_internal(options) && package == DEFAULT_PACKAGE {
            return Err(format!(
                "visibility \"internal\" needs a package of the SDK's own (the option `package`), not the default {DEFAULT_PACKAGE:?}"
            ));
        }
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
    /// The shared runtime's package (its `package` option): the tables import the runtime's
    /// names from it when their own package is another.
    fn runtime_link(&self, link: &LinkRequest<'_>) -> Result<String, String> {
        Ok(link.runtime_options["package"].clone())
    }
    fn adapters(&self) -> &'static [Adapter] {
        &ADAPTERS
    }
    /// The runtime's (and the adapter's) one `package retrygen.generated` line names the
    /// `package` option instead.
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
    /// Top-level declarations start a line with `public `.
    fn internal_declarations(&self) -> Option<(&'static str, &'static str)> {
        Some(("public ", "internal "))
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

/// The HTTP client adapters (docs/adapters.md): OkHttp 4's `RetryInterceptor`, same package as
/// the runtime.
static ADAPTERS: [Adapter; 1] = [Adapter {
    name: "okhttp",
    requires: "com.squareup.okhttp3:okhttp 4.12.x or 5.x (okhttp-jvm on the JVM)",
    files: &[RuntimeFile {
        name: "RetryInterceptor.kt",
        source: include_str!("../../runtime/kotlin/RetryInterceptor.kt"),
    }],
}];

/// `_`, `__`, ... are reserved in Kotlin.
fn check_not_underscores(what: &str, value: &str) -> Result<(), String> {
    if value.chars().all(|c| c == '_') {
        return Err(format!("{what} {value:?} is reserved in Kotlin"));
    }
    Ok(())
}

/// The top-level types runtime/kotlin/RetryRuntime.kt and the adapter (RetryInterceptor.kt)
/// declare, and the file names they take: an object (and its `<object>.kt`) named like one would
/// clash with it.
const DECLARED_TYPES: [&str; 31] = [
    "BudgetAcquisition",
    "BudgetKind",
    "IdempotencyKeyFormat",
    "EventStreamScanner",
    "ProblemScanner",
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
    "RetryInterceptor",
    "RetryListener",
    "FinishListener",
    "RetryFinish",
    "RetryOverrides",
    "RetryAttempt",
    "StreamResumeException",
    "StreamBody",
];

/// Types nested in a declared type and referred to by their simple names only inside it, where
/// the nesting scope wins over any package-level name.
#[cfg(test)]
const NESTED_TYPES: [&str; 23] = [
    "Builder",
    "FinishSlot",
    "AsyncRetry",
    "Attached",
    "Loop",
    "RetryCall",
    "RetryScheduled",
    "Attempt",
    "ExchangeGuard",
    "StaleConnectionException",
    "Certificate",
    "DecodeBuffer",
    "Status",
    "Connect",
    "Transport",
    "Aborted",
    "Dropped",
    "Node",
    "MixedChild",
    "OperationChunk",
    "ResumeSend",
    "ResumableStream",
    "Problem",
];

/// Platform types the runtime and the tables refer to by their simple names; an object named like
/// one would hide it (package members win over default imports). A unit test keeps the list whole.
const REFERENCED_TYPES: [&str; 55] = [
    "AtomicLong",
    "IllegalStateException",
    "Request",
    "Volatile",
    "BooleanArray",
    "CharSequence",
    "LinkedHashMap",
    "ThreadLocal",
    "Thread",
    "System",
    "InterruptedException",
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
    "Throwable",
    "Triple",
    "Exception",
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

    /// Every capitalised name the runtime, the tables template and the adapter use in code is
    /// declared by the runtime or the adapter, nested in one of their types, or a platform type
    /// that `check_options` protects. The adapter's imported names need no protection: an explicit
    /// import wins over a declaration of the same package.
    #[test]
    fn every_type_name_in_code_is_known() {
        let runtime = Kotlin.runtime_files()[0].source;
        let tables = include_str!("../../templates/kotlin/tables.j2");
        let adapter = ADAPTERS[0].files[0].source;
        let mut unknown = std::collections::BTreeSet::new();
        let names = capitalised_names_in_code(runtime);
        for expected in ["OperationTable", "Collections", "Regex", "Node"] {
            assert!(names.iter().any(|n| n == expected), "{expected} not found");
        }
        let imported: Vec<&str> = adapter
            .lines()
            .filter_map(|l| l.strip_prefix("import "))
            .filter_map(|l| l.rsplit('.').next())
            .collect();
        assert!(imported.contains(&"Interceptor") && imported.contains(&"UUID"));
        // Reached through their outer type (`Interceptor.Chain`, `OkHttpClient.Builder`).
        let qualified = ["Chain", "Builder", "Factory"];
        for text in [runtime, tables, adapter] {
            for name in capitalised_names_in_code(text) {
                let known = DECLARED_TYPES.contains(&name.as_str())
                    || NESTED_TYPES.contains(&name.as_str())
                    || REFERENCED_TYPES.contains(&name.as_str())
                    || (text == adapter
                        && (imported.contains(&name.as_str())
                            || qualified.contains(&name.as_str())));
                if !known {
                    unknown.insert(name);
                }
            }
        }
        assert!(unknown.is_empty(), "add to REFERENCED_TYPES: {unknown:?}");
    }

    #[test]
    fn okhttp_adapter_is_emitted_verbatim_beside_the_runtime() {
        let adapters = Kotlin.adapters();
        assert_eq!(adapters.len(), 1);
        assert_eq!(adapters[0].name, "okhttp");
        let file = &adapters[0].files[0];
        assert_eq!(file.name, "RetryInterceptor.kt");
        assert_eq!(
            file.source,
            include_str!("../../runtime/kotlin/RetryInterceptor.kt")
        );
        assert!(super::super::is_generated(file.source));
        // Default options: byte for byte.
        assert_eq!(
            Kotlin.runtime_text(file, &Kotlin.default_options()),
            file.source
        );
        // Another package: only the package line differs, as in the runtime.
        let text = Kotlin.runtime_text(file, &options("com.example.sdk", "X"));
        assert!(text.contains("\npackage com.example.sdk\n"));
        assert!(!text.contains(DEFAULT_PACKAGE));
        let (a, b): (Vec<&str>, Vec<&str>) =
            (file.source.lines().collect(), text.lines().collect());
        assert_eq!(a.len(), b.len());
        assert_eq!(a.iter().zip(&b).filter(|(x, y)| x != y).count(), 1);
        // An object named like an adapter type would clash with it.
        assert!(Kotlin
            .check_options(&options("a", "RetryInterceptor"))
            .is_err());
    }

    /// `render` emits the tables file, the runtime, then the adapter, byte for byte.
    #[test]
    fn render_emits_the_adapter_file() {
        let spec = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("specs/matching.yaml");
        let (raw, _) = crate::read::read(&spec, &Default::default()).expect("spec reads");
        let model_options = crate::model::ModelOptions {
            strict: false,
            idempotency_headers: vec!["Idempotency-Key".into()],
            policy_overrides: vec![],
            overrides_at: None,
            overlays: vec![],
        };
        let api = crate::model::build(&raw, "matching.yaml", &model_options)
            .expect("spec builds")
            .0;
        let files = super::super::render(
            &api,
            &Kotlin,
            &Kotlin.default_options(),
            &[&ADAPTERS[0]],
            &super::super::TemplateSource::Embedded,
        )
        .unwrap();
        let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            ["RetryPolicies.kt", "RetryRuntime.kt", "RetryInterceptor.kt"]
        );
        assert_eq!(files[2].contents, ADAPTERS[0].files[0].source);
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
