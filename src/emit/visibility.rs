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

/// rustfmt's layout for a one-line `fn` signature that `pub(crate)` pushed over `max_width`
/// columns (rustfmt's default, 100): one parameter per line, each with a trailing comma, then
/// `) -> T {`. Only lines rustfmt would have kept on one line before the rewrite reach this, so
/// the simple shape (no `where` clause, the closing part short) is the only one to handle;
/// the conformance run checks the result with rustfmt itself.
pub fn wrap_long_rust_signatures(source: &str, max_width: usize) -> String {
    let mut out = String::with_capacity(source.len());
    for line in source.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        match split_signature(body).filter(|_| body.chars().count() > max_width) {
            Some((head, params, tail)) => {
                out.push_str(head);
                out.push_str("(\n");
                for param in params {
                    out.push_str("    ");
                    out.push_str(param);
                    out.push_str(",\n");
                }
                out.push(')');
                out.push_str(tail);
                out.push('\n');
            }
            None => out.push_str(line),
        }
    }
    out
}

/// `pub(crate) fn name<G>(a: A, b: B) -> R {` as (`pub(crate) fn name<G>`, [`a: A`, `b: B`],
/// ` -> R {`), when the parameters are separated by top-level commas.
fn split_signature(line: &str) -> Option<(&str, Vec<&str>, &str)> {
    if !line.starts_with("pub(crate) fn ") || !line.ends_with('{') {
        return None;
    }
    let open = line.find('(')?;
    let open = line[open + 1..].find('(').map(|i| open + 1 + i)?;
    let mut depth = 0i32;
    let mut start = open + 1;
    let mut params = Vec::new();
    for (i, c) in line.char_indices().skip_while(|(i, _)| *i <= open) {
        match c {
            '(' | '<' | '[' => depth += 1,
            '>' if line[..i].ends_with('-') => {}
            ')' | '>' | ']' if depth > 0 => depth -= 1,
            ',' if depth == 0 => {
                params.push(line[start..i].trim());
                start = i + 1;
            }
            ')' => {
                let last = line[start..i].trim();
                if !last.is_empty() {
                    params.push(last);
                }
                return Some((&line[..open], params, &line[i + 1..]));
            }
            _ => {}
        }
    }
    None
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
    fn long_signatures_are_laid_out_as_rustfmt_does() {
        let line = "pub(crate) fn decide(policy: &RetryPolicy, input: &DecisionInput<'_>) -> Result<Decision, InvalidInput> {\n    x\n}\n";
        assert_eq!(
            wrap_long_rust_signatures(line, 100),
            "pub(crate) fn decide(\n    policy: &RetryPolicy,\n    input: &DecisionInput<'_>,\n) -> Result<Decision, InvalidInput> {\n    x\n}\n"
        );
        let nested = "pub(crate) fn f<N, V>(headers: impl IntoIterator<Item = (N, V)>, names: &[&str]) -> bool {\n";
        assert_eq!(
            wrap_long_rust_signatures(nested, 80),
            "pub(crate) fn f<N, V>(\n    headers: impl IntoIterator<Item = (N, V)>,\n    names: &[&str],\n) -> bool {\n"
        );
        // Short enough, or not a signature: untouched.
        assert_eq!(wrap_long_rust_signatures(line, 200), line);
        let call = "    let decision = decide(policy, input).expect(\"valid\"); // a long comment past the width\n";
        assert_eq!(wrap_long_rust_signatures(call, 40), call);
    }

    #[test]
    fn values_are_checked() {
        let mut options = LanguageOptions::from([(OPTION.to_string(), PUBLIC.to_string())]);
        assert!(check(&options).is_ok());
        options.insert(OPTION.into(), "private".into());
        assert!(check(&options).unwrap_err().contains("\"private\""));
    }
}
