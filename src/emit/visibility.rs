//! The `visibility` option of the Kotlin, C# and Rust targets: `public` (the default: today's
//! output) or `internal`, for a module vendored into an SDK whose public API must not grow by
//! retrygen's types, and whose types must not meet another SDK's copy of them on the JVM or in one
//! .NET process. Kotlin and C# declare them `internal`, Rust `pub(crate)`.
//!
//! The runtime sources declare every top-level item public in one regular way (Kotlin: `public `
//! at the start of a line; C#: `public ` indented once, inside the namespace; Rust: `pub ` at the
//! start of a line), so the option rewrites exactly those modifiers. Members keep theirs: their
//! visibility is bounded by their type's.

use super::LanguageOptions;

pub const OPTION: &str = "visibility";
pub const PUBLIC: &str = "public";
pub const INTERNAL: &str = "internal";

/// The option's value is one of the two.
pub fn check(options: &LanguageOptions) -> Result<(), String> {
    match value(options) {
        PUBLIC | INTERNAL => Ok(()),
        other => Err(format!(
            "visibility {other:?} is neither \"public\" nor \"internal\""
        )),
    }
}

pub fn is_internal(options: &LanguageOptions) -> bool {
    value(options) == INTERNAL
}

/// The option's value; absent (options built by hand, not resolved) is the default.
fn value(options: &LanguageOptions) -> &str {
    options.get(OPTION).map_or(PUBLIC, String::as_str)
}

/// `source` with every line that starts with `marker` (a top-level declaration's modifier)
/// starting with `replacement` instead; line endings and every other byte kept.
pub fn rewrite_declarations(source: &str, marker: &str, replacement: &str) -> String {
    let mut out = String::with_capacity(source.len() + source.len() / 64);
    for line in source.split_inclusive('\n') {
        match line.strip_prefix(marker) {
            Some(rest) => {
                out.push_str(replacement);
                out.push_str(rest);
            }
            None => out.push_str(line),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_line_starts_are_rewritten() {
        let source = "public class A {\n    public fun b() = \"public \"\n}\n/** public x */\npublic object C\n";
        assert_eq!(
            rewrite_declarations(source, "public ", "internal "),
            "internal class A {\n    public fun b() = \"public \"\n}\n/** public x */\ninternal object C\n"
        );
    }

    #[test]
    fn values_are_checked() {
        let mut options = LanguageOptions::from([(OPTION.to_string(), PUBLIC.to_string())]);
        assert!(check(&options).is_ok());
        options.insert(OPTION.into(), "private".into());
        assert!(check(&options).unwrap_err().contains("\"private\""));
    }
}
