use super::escape::{c_like, check_identifier, push_quoted, utf16_escape};
use super::{visibility, Adapter, Backend, LanguageOptions, LinkRequest, RuntimeFile};
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

/// `RetryHandler`, the `HttpClient` adapter (docs/adapters.md): a `DelegatingHandler` in the
/// runtime's namespace, built from the tables file's `Tables` property.
static ADAPTERS: [Adapter; 1] = [Adapter {
    name: "httpclient",
    requires: "System.Net.Http (HttpClient; in the box on .NET, libmono-system-net-http4.0-cil on Debian's mono)",
    files: &[RuntimeFile {
        name: "RetryHandler.cs",
        source: include_str!("../../runtime/csharp/RetryHandler.cs"),
    }],
}];

impl Backend for CSharp {
    fn name(&self) -> &'static str {
        "csharp"
    }
    fn default_options(&self) -> LanguageOptions {
        LanguageOptions::from([
            ("namespace".to_string(), DEFAULT_NAMESPACE.to_string()),
            ("class".to_string(), "RetryPolicies".to_string()),
            (
                visibility::OPTION.to_string(),
                visibility::PUBLIC.to_string(),
            ),
        ])
    }
    fn check_options(&self, options: &LanguageOptions) -> Result<(), String> {
        visibility::check(options)?;
        if visibility::is_internal(options) && options["namespace"] == DEFAULT_NAMESPACE {
            return Err(format!(
                "visibility \"internal\" needs a namespace of the SDK's own (the option `namespace`), not the default {DEFAULT_NAMESPACE:?}"
            ));
        }
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
        if REFERENCED_TYPES.contains(&class.as_str())
            || ADAPTER_REFERENCED_TYPES.contains(&class.as_str())
        {
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
    fn adapters(&self) -> &'static [Adapter] {
        &ADAPTERS
    }
    /// A shared runtime's folder also declares the `RetryPolicy` constructor with the contract's
    /// defaults (a self-contained target's tables declare it with the spec's).
    fn runtime_entry_file(&self) -> Option<&'static str> {
        Some("RetryPolicyDefaults.cs")
    }
    /// The shared runtime's namespace (its `namespace` option): the tables add `using` it when
    /// their own namespace is another.
    fn runtime_link(&self, link: &LinkRequest<'_>) -> Result<String, String> {
        Ok(link.runtime_options["namespace"].clone())
    }
    /// The runtime (or the adapter) with its one namespace line renamed when the `namespace`
    /// option differs.
    fn runtime_text(&self, file: &RuntimeFile, options: &LanguageOptions) -> String {
        let namespace = &options["namespace"];
        if namespace == DEFAULT_NAMESPACE {
            return file.source.to_string();
        }
        file.source
            .replacen(NAMESPACE_LINE, &format!("\nnamespace {namespace}\n"), 1)
    }
    /// Types sit one indent inside the namespace block; nested types and members deeper.
    fn internal_declarations(&self) -> Option<(&'static str, &'static str)> {
        Some(("    public ", "    internal "))
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

/// Names the files declare: the namespace's types (runtime/csharp/RetryRuntime.cs, the adapter
/// runtime/csharp/RetryHandler.cs and the tables file), and the tables class's members (C# forbids
/// a member named like its enclosing type).
const DECLARED_NAMES: [&str; 50] = [
    "ReplayClass",
    "Jitter",
    "DecisionReason",
    "FailureKind",
    "OverCapMode",
    "UnknownOperationClass",
    "BudgetKind",
    "IdempotencyKeyFormat",
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
    "ProblemScanner",
    "EventStreamScanner",
    "RetryEvent",
    "RetryHandlerOptions",
    "RetryFinishEvent",
    "RetryHandler",
    "RetryStreamException",
    "RetryOverrides",
    "RetryRequestExtensions",
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
    "Tables",
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

/// Framework types the adapter (runtime/csharp/RetryHandler.cs) refers to by their simple names;
/// refused whether or not a target opts into the adapter, so that adding it never breaks a build.
const ADAPTER_REFERENCED_TYPES: [&str; 39] = [
    "Action",
    "AggregateException",
    "AuthenticationException",
    "BindingFlags",
    "ByteArrayContent",
    "CancellationToken",
    "CancellationTokenSource",
    "DateTimeOffset",
    "DelegatingHandler",
    "Exception",
    "ExceptionDispatchInfo",
    "FieldInfo",
    "HttpClient",
    "HttpClientHandler",
    "HttpContent",
    "HttpMessageHandler",
    "HttpMethod",
    "HttpRequestMessage",
    "HttpResponseMessage",
    "IOException",
    "InvalidOperationException",
    "MemberAccessException",
    "MultipartContent",
    "NotSupportedException",
    "OperationCanceledException",
    "PropertyInfo",
    "Random",
    "RandomNumberGenerator",
    "SocketError",
    "SocketException",
    "Stopwatch",
    "StreamContent",
    "Task",
    "TaskCanceledException",
    "TimeoutException",
    "Uri",
    "Version",
    "WebException",
    "WebExceptionStatus",
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

    /// Every type the runtime and the adapter declare is a name the class option may not take.
    #[test]
    fn declared_names_are_reserved() {
        let sources = [RUNTIME_FILES[0].source, ADAPTERS[0].files[0].source];
        for line in sources.iter().flat_map(|s| s.lines()) {
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
    }

    /// The default options leave the runtime as it is while another namespace renames exactly its
    /// one line.
    #[test]
    fn runtime_names_and_namespace() {
        let source = RUNTIME_FILES[0].source;
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

    fn fault_api() -> crate::model::Api {
        let spec =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/faults/spec.yaml");
        let (raw, _) = crate::read::read(&spec, &Default::default()).expect("spec reads");
        let options = crate::model::ModelOptions {
            strict: false,
            idempotency_headers: vec!["Idempotency-Key".into()],
            policy_overrides: vec![],
            overrides_at: None,
            overlays: vec![],
        };
        crate::model::build(&raw, "spec.yaml", &options)
            .expect("spec builds")
            .0
    }

    /// `--adapter httpclient` emits RetryHandler.cs byte for byte beside the runtime (its namespace
    /// line renamed like the runtime's), and the tables then expose `Tables` for it.
    #[test]
    fn adapter_is_emitted_verbatim() {
        let api = fault_api();
        let templates = crate::emit::TemplateSource::Embedded;
        let adapter: Vec<&'static Adapter> = CSharp.adapters().iter().collect();
        assert_eq!(adapter[0].name, "httpclient");
        let source = adapter[0].files[0].source;
        assert!(source.starts_with("// <auto-generated/>\n"));
        assert!(crate::emit::is_generated(source));
        assert_eq!(source.matches(NAMESPACE_LINE).count(), 1);

        let files = crate::emit::render(
            &api,
            &CSharp,
            &CSharp.default_options(),
            &adapter,
            &templates,
        )
        .expect("renders");
        let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            ["RetryPolicies.cs", "RetryRuntime.cs", "RetryHandler.cs"]
        );
        assert_eq!(files[2].contents, source);
        assert!(files[0]
            .contents
            .contains("public static OperationTable Tables => Table;"));

        let renamed = crate::emit::render(
            &api,
            &CSharp,
            &options("Example.Sdk", "SandboxRetries"),
            &adapter,
            &templates,
        )
        .expect("renders");
        assert_eq!(
            renamed[2].contents,
            source.replacen(NAMESPACE_LINE, "\nnamespace Example.Sdk\n", 1)
        );

        let without =
            crate::emit::render(&api, &CSharp, &CSharp.default_options(), &[], &templates)
                .expect("renders");
        assert_eq!(without.len(), 2);
        assert!(!without[0].contents.contains(" Tables "));
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
