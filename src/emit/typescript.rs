use super::escape::{c_like, push_quoted, utf16_escape};
use super::{Backend, LanguageOptions, RuntimeFile};
use crate::model::policy::Jitter;
use crate::model::ReplayClass;

/// TypeScript: `index.ts` (the per-spec tables, rendered from `templates/typescript/tables.j2`)
/// and `runtime.ts` (`runtime/typescript/runtime.ts`, copied verbatim). ESM, `.js` imports.
pub struct TypeScript;

static RUNTIME: [RuntimeFile; 1] = [RuntimeFile {
    name: "runtime.ts",
    source: include_str!("../../runtime/typescript/runtime.ts"),
}];

impl Backend for TypeScript {
    fn name(&self) -> &'static str {
        "typescript"
    }
    fn default_options(&self) -> LanguageOptions {
        LanguageOptions::new()
    }
    fn check_options(&self, _options: &LanguageOptions) -> Result<(), String> {
        Ok(())
    }
    fn tables_file_name(&self, _options: &LanguageOptions) -> String {
        "index.ts".to_string()
    }
    fn runtime_files(&self) -> &'static [RuntimeFile] {
        &RUNTIME
    }
    fn push_string_literal(&self, out: &mut String, s: &str) {
        push_quoted(out, s, c_like, utf16_escape)
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
    use crate::emit::{is_generated, resolve_options};

    #[test]
    fn the_runtime_is_copied_byte_for_byte_and_marked_generated() {
        let options = resolve_options(&TypeScript, &LanguageOptions::new()).unwrap();
        for file in TypeScript.runtime_files() {
            assert_eq!(TypeScript.runtime_text(file, &options), file.source);
            assert!(is_generated(file.source), "{} lacks the marker", file.name);
        }
        assert_eq!(TypeScript.tables_file_name(&options), "index.ts");
    }

    #[test]
    fn the_file_name_option_is_gone() {
        let given = LanguageOptions::from([("file_name".to_string(), "x.ts".to_string())]);
        assert!(resolve_options(&TypeScript, &given).is_err());
    }
}
