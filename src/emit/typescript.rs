use super::escape::{c_like, push_quoted, utf16_escape};
use super::{Backend, LanguageOptions};
use crate::model::policy::Jitter;
use crate::model::ReplayClass;

pub struct TypeScript;

impl Backend for TypeScript {
    fn name(&self) -> &'static str {
        "typescript"
    }
    fn default_options(&self) -> LanguageOptions {
        LanguageOptions::from([("file_name".to_string(), "retryPolicy.gen.ts".to_string())])
    }
    fn check_options(&self, options: &LanguageOptions) -> Result<(), String> {
        let name = &options["file_name"];
        if !name.ends_with(".ts") || name.contains(['/', '\\']) {
            return Err(format!(
                "file_name {name:?} must be a bare file name ending in .ts"
            ));
        }
        Ok(())
    }
    fn tables_file_name(&self, options: &LanguageOptions) -> String {
        options["file_name"].clone()
    }
    fn push_string_literal(&self, out: &mut String, s: &str) {
        push_quoted(out, s, c_like, utf16_escape)
    }
    /// A regex literal `/.../`: `/` is escaped (it would end the literal) and so is any character
    /// outside printable ASCII; `\uXXXX` means the same inside a regex.
    fn push_regex_literal(&self, out: &mut String, pattern: &str) {
        out.push('/');
        for c in pattern.chars() {
            match c {
                '/' => out.push_str("\\/"),
                ' '..='~' => out.push(c),
                _ => out.push_str(&utf16_escape(c)),
            }
        }
        out.push('/');
    }
    fn null_literal(&self) -> &'static str {
        "null"
    }
    fn class_ident(&self, class: ReplayClass) -> String {
        self.string_literal(class.name())
    }
    fn jitter_ident(&self, jitter: Jitter) -> String {
        self.string_literal(jitter.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regex_literals_escape_slashes_and_non_ascii() {
        assert_eq!(
            TypeScript.regex_literal(r"^/a\.b/[^/]+/?$"),
            r"/^\/a\.b\/[^\/]+\/?$/"
        );
        assert_eq!(
            TypeScript.regex_literal("^/\u{2028}\u{1F600}$"),
            r"/^\/\u2028\uD83D\uDE00$/"
        );
    }

    #[test]
    fn file_name_must_be_a_bare_ts_file() {
        let with =
            |name: &str| LanguageOptions::from([("file_name".to_string(), name.to_string())]);
        assert!(TypeScript
            .check_options(&with("retryPolicy.gen.ts"))
            .is_ok());
        assert!(TypeScript.check_options(&with("retryPolicy.js")).is_err());
        assert!(TypeScript
            .check_options(&with("src/retryPolicy.ts"))
            .is_err());
    }
}
