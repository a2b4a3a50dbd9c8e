use super::escape::{c_like, push_quoted, utf16_escape};
use super::{relative_components, Adapter, Backend, LanguageOptions, LinkRequest, RuntimeFile};
use crate::model::policy::Jitter;
use crate::model::ReplayClass;

/// TypeScript: `index.ts` (the per-spec tables, rendered from `templates/typescript/tables.j2`)
/// and `runtime.ts` (`runtime/typescript/runtime.ts`, copied verbatim). ESM, `.js` imports.
/// The `fetch` adapter adds `fetch.ts` (`runtime/typescript/fetch.ts`, verbatim too).
pub struct TypeScript;

static RUNTIME: [RuntimeFile; 1] = [RuntimeFile {
    name: "runtime.ts",
    source: include_str!("../../runtime/typescript/runtime.ts"),
}];

static ADAPTERS: [Adapter; 1] = [Adapter {
    name: "fetch",
    requires: "a global fetch (Node 20+, Bun, Deno, browsers, workers); no package",
    files: &[RuntimeFile {
        name: "fetch.ts",
        source: include_str!("../../runtime/typescript/fetch.ts"),
    }],
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
    fn adapters(&self) -> &'static [Adapter] {
        &ADAPTERS
    }
    /// The shared runtime's folder relative to the tables' (`../retry_runtime`): the tables
    /// import `<it>/runtime.js` (and `<it>/fetch.js` with the fetch adapter).
    fn runtime_link(&self, link: &LinkRequest<'_>) -> Result<String, String> {
        let steps = relative_components(link.tables_dir, link.runtime_dir)
            .filter(|steps| !steps.is_empty())
            .ok_or_else(|| {
                format!(
                    "the shared runtime's folder {:?} cannot be imported relatively from {:?}",
                    link.runtime_dir.display(),
                    link.tables_dir.display()
                )
            })?;
        if let Some(bad) = steps.iter().find(|s| {
            s.chars()
                .any(|c| c.is_control() || matches!(c, '"' | '\\' | '/'))
        }) {
            return Err(format!(
                "the shared runtime's folder name {bad:?} cannot be written in an import"
            ));
        }
        let path = steps.join("/");
        Ok(if steps[0] == ".." {
            path
        } else {
            format!("./{path}")
        })
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
    fn the_fetch_adapter_is_copied_byte_for_byte_and_marked_generated() {
        let options = resolve_options(&TypeScript, &LanguageOptions::new()).unwrap();
        let [fetch] = TypeScript.adapters() else {
            panic!("TypeScript has one adapter");
        };
        assert_eq!(fetch.name, "fetch");
        let [file] = fetch.files else {
            panic!("the fetch adapter is one file");
        };
        assert_eq!(file.name, "fetch.ts");
        assert_eq!(
            file.source,
            include_str!("../../runtime/typescript/fetch.ts")
        );
        assert_eq!(TypeScript.runtime_text(file, &options), file.source);
        assert!(is_generated(file.source), "fetch.ts lacks the marker");
    }

    #[test]
    fn the_tables_export_what_the_fetch_adapter_takes_only_when_chosen() {
        let spec =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/faults/spec.yaml");
        let (api, _) = crate::load_api(&spec, &Default::default()).expect("spec loads");
        let options = resolve_options(&TypeScript, &LanguageOptions::new()).unwrap();
        let templates = crate::emit::TemplateSource::Embedded;
        let plain = crate::emit::render(&api, &TypeScript, &options, &[], &templates).unwrap();
        let chosen = crate::emit::resolve_adapters(&TypeScript, &["fetch".to_string()]).unwrap();
        let with = crate::emit::render(&api, &TypeScript, &options, &chosen, &templates).unwrap();
        let names = |files: &[crate::emit::RenderedFile]| -> Vec<String> {
            files.iter().map(|f| f.name.clone()).collect()
        };
        assert_eq!(names(&plain), ["index.ts", "runtime.ts"]);
        assert_eq!(names(&with), ["index.ts", "runtime.ts", "fetch.ts"]);
        assert!(!plain[0].contents.contains("fetch.js"));
        assert!(!plain[0].contents.contains("RETRY_TABLES"));
        assert!(with[0]
            .contents
            .contains("export const RETRY_TABLES: RetryTables = TABLES;"));
        assert!(with[0]
            .contents
            .contains("  retryingFetch,\n} from \"./fetch.js\";"));
        assert_eq!(
            with[2].contents,
            include_str!("../../runtime/typescript/fetch.ts")
        );
    }

    #[test]
    fn runtime_link_is_the_relative_folder() {
        let options = LanguageOptions::new();
        let link = |tables: &str, runtime: &str| {
            TypeScript.runtime_link(&LinkRequest {
                tables_dir: std::path::Path::new(tables),
                runtime_dir: std::path::Path::new(runtime),
                tables_options: &options,
                runtime_options: &options,
                runtime_path: None,
            })
        };
        assert_eq!(
            link("src/a/", "src/retry_runtime/").unwrap(),
            "../retry_runtime"
        );
        assert_eq!(link("src/", "src/rt/").unwrap(), "./rt");
        assert!(link("src/", "src/").is_err());
        assert!(link("/abs/", "rel/").is_err());
    }

    #[test]
    fn the_file_name_option_is_gone() {
        let given = LanguageOptions::from([("file_name".to_string(), "x.ts".to_string())]);
        assert!(resolve_options(&TypeScript, &given).is_err());
    }
}
