use super::escape::{c_like, push_quoted};
use super::{visibility, Adapter, Backend, LanguageOptions, LinkRequest, RuntimeFile};
use crate::model::policy::Jitter;
use crate::model::ReplayClass;
use heck::ToUpperCamelCase;

pub struct Rust;

impl Backend for Rust {
    fn name(&self) -> &'static str {
        "rust"
    }
    /// One option, `visibility`: the target is a module folder (`out = "src/retry_policy/"`),
    /// named by the folder, which the SDK declares with `mod retry_policy;`; `internal` makes its
    /// items `pub(crate)`.
    fn default_options(&self) -> LanguageOptions {
        LanguageOptions::from([(
            visibility::OPTION.to_string(),
            visibility::PUBLIC.to_string(),
        )])
    }
    fn check_options(&self, options: &LanguageOptions) -> Result<(), String> {
        visibility::check(options)
    }
    /// Items of the module start a line with `pub `.
    fn internal_declarations(&self) -> Option<(&'static str, &'static str)> {
        Some(("pub ", "pub(crate) "))
    }
    fn tables_file_name(&self, _options: &LanguageOptions) -> String {
        "mod.rs".into()
    }
    fn runtime_files(&self) -> &'static [RuntimeFile] {
        &RUNTIME_FILES
    }
    /// A shared runtime is a module folder too: `mod.rs` declares `runtime.rs` (and the adapter)
    /// and holds the one `impl Default for RetryPolicy`.
    fn runtime_entry_file(&self) -> Option<&'static str> {
        Some("mod.rs")
    }
    /// The target's `runtime_path` option, a Rust path (`crate::retry_runtime`,
    /// `super::retry_runtime`): folders alone do not say where a module is declared.
    fn runtime_link(&self, link: &LinkRequest<'_>) -> Result<String, String> {
        let path = link
            .runtime_path
            .ok_or("a Rust target with a shared runtime needs the option `runtime_path`")?;
        let valid = !path.is_empty()
            && path.split("::").all(|segment| {
                segment
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && segment
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_')
            });
        if !valid {
            return Err(format!(
                "runtime_path {path:?} is not a Rust path such as `crate::retry_runtime`"
            ));
        }
        Ok(path.to_string())
    }
    /// `reqwest`: `RetryMiddleware`, a `reqwest_middleware::Middleware`, in `reqwest_adapter.rs`
    /// (declared by `mod.rs` as `pub mod reqwest_adapter;`).
    fn adapters(&self) -> &'static [Adapter] {
        &ADAPTERS
    }
    /// NUL is written `\u{0}`, never `\0`: followed by a digit, `\0` looks like an octal escape,
    /// which clippy's `octal_escapes` warns about (an error under `-D warnings`).
    fn push_string_literal(&self, out: &mut String, s: &str) {
        push_quoted(out, s, c_like, |c| format!("\\u{{{:x}}}", c as u32))
    }
    /// A raw string when the pattern has backslashes to spare and nothing a raw string cannot hold.
    fn push_regex_literal(&self, out: &mut String, pattern: &str) {
        if pattern.contains('\\')
            && pattern
                .chars()
                .all(|c| (' '..='~').contains(&c) && c != '"')
        {
            out.push_str("r\"");
            out.push_str(pattern);
            out.push('"');
        } else {
            self.push_string_literal(out, pattern)
        }
    }
    fn null_literal(&self) -> &'static str {
        "None"
    }
    fn class_ident(&self, class: ReplayClass) -> String {
        format!("ReplayClass::{}", class.name().to_upper_camel_case())
    }
    fn jitter_ident(&self, jitter: Jitter) -> String {
        format!("Jitter::{}", jitter.name().to_upper_camel_case())
    }
}

/// `runtime/rust/runtime.rs`, emitted verbatim beside the tables (`mod runtime;` in `mod.rs`).
static RUNTIME_FILES: [RuntimeFile; 1] = [RuntimeFile {
    name: "runtime.rs",
    source: include_str!("../../runtime/rust/runtime.rs"),
}];

/// `runtime/rust/reqwest_adapter.rs`, emitted verbatim when a target lists `adapters = ["reqwest"]`.
static ADAPTERS: [Adapter; 1] = [Adapter {
    name: "reqwest",
    requires: "reqwest 0.13, reqwest-middleware 0.5, http 1, tokio 1 (feature `time`), uuid 1 (feature `v4`)",
    files: &[RuntimeFile {
        name: "reqwest_adapter.rs",
        source: include_str!("../../runtime/rust/reqwest_adapter.rs"),
    }],
}];

#[cfg(test)]
mod tests {
    use super::*;

    /// `runtime_path` is a Rust path; the thin tables `pub use` it and give the API's policy as
    /// `default_policy()`, and the runtime's `mod.rs` holds the one `impl Default`.
    #[test]
    fn thin_tables_use_the_runtime_path() {
        let options = Rust.default_options();
        let link = |path: Option<&str>| {
            Rust.runtime_link(&LinkRequest {
                tables_dir: std::path::Path::new("src/a"),
                runtime_dir: std::path::Path::new("src/rt"),
                tables_options: &options,
                runtime_options: &options,
                runtime_path: path,
            })
        };
        assert_eq!(link(Some("crate::rt")).unwrap(), "crate::rt");
        assert!(link(None).is_err());
        assert!(link(Some("crate::rt;")).is_err());
        assert!(link(Some("crate::")).is_err());
        let spec = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("specs/matching.yaml");
        let (api, _) = crate::load_api(&spec, &Default::default()).expect("spec loads");
        let templates = super::super::TemplateSource::Embedded;
        let thin =
            super::super::render_thin_tables(&api, &Rust, &options, &[], "crate::rt", &templates)
                .expect("renders");
        assert!(thin.contents.contains("\npub use crate::rt::*;\n"));
        assert!(thin
            .contents
            .contains("\npub fn default_policy() -> RetryPolicy {\n"));
        assert!(!thin.contents.contains("impl Default") && !thin.contents.contains("mod runtime;"));
        let runtime = super::super::render_runtime(&Rust, &options, &[], &templates).unwrap();
        assert_eq!(runtime[0].name, "mod.rs");
        assert!(runtime[0]
            .contents
            .contains("\nmod runtime;\n\npub use runtime::*;\n"));
        assert!(runtime[0]
            .contents
            .contains("\nimpl Default for RetryPolicy {\n"));
    }

    #[test]
    fn nul_is_never_octal_looking() {
        assert_eq!(Rust.string_literal("\0\x00\u{1}7"), r#""\u{0}\u{0}\u{1}7""#);
    }

    /// The runtime is emitted byte for byte as it is in the repository, and it carries the marker
    /// `check` looks for.
    #[test]
    fn runtime_is_copied_verbatim() {
        let options = Rust.default_options();
        assert_eq!(options.keys().collect::<Vec<_>>(), ["visibility"]);
        let files = Rust.runtime_files();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].name, "runtime.rs");
        let on_disk = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/rust/runtime.rs"),
        )
        .expect("runtime source");
        assert_eq!(Rust.runtime_text(&files[0], &options), on_disk);
        assert!(super::super::is_generated(&on_disk));
    }

    /// The reqwest adapter is emitted byte for byte, beside the runtime, and declared by the
    /// tables only when the target opts into it.
    #[test]
    fn reqwest_adapter_is_copied_verbatim() {
        let options = Rust.default_options();
        let adapters = Rust.adapters();
        assert_eq!(adapters.len(), 1);
        assert_eq!(adapters[0].name, "reqwest");
        assert_eq!(adapters[0].files.len(), 1);
        let file = &adapters[0].files[0];
        assert_eq!(file.name, "reqwest_adapter.rs");
        let on_disk = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("runtime/rust/reqwest_adapter.rs"),
        )
        .expect("adapter source");
        assert_eq!(Rust.runtime_text(file, &options), on_disk);
        assert!(super::super::is_generated(&on_disk));
    }

    /// `mod.rs` declares `pub mod reqwest_adapter;` exactly when the target lists the adapter,
    /// and the adapter file comes after the runtime; without it the tables are unchanged.
    #[test]
    fn tables_declare_the_adapter_only_when_chosen() {
        let spec =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/faults/spec.yaml");
        let (api, _) = crate::load_api(&spec, &Default::default()).expect("fault spec loads");
        let options = Rust.default_options();
        let render = |adapters: &[&'static Adapter]| {
            super::super::render(
                &api,
                &Rust,
                &options,
                adapters,
                &super::super::TemplateSource::Embedded,
            )
            .expect("renders")
        };
        let plain = render(&[]);
        let with = render(&[&Rust.adapters()[0]]);
        let names = |files: &[super::super::RenderedFile]| {
            files.iter().map(|f| f.name.clone()).collect::<Vec<_>>()
        };
        assert_eq!(names(&plain), ["mod.rs", "runtime.rs"]);
        assert_eq!(names(&with), ["mod.rs", "runtime.rs", "reqwest_adapter.rs"]);
        let added = "//!\n//! [`reqwest_adapter::RetryMiddleware`] is the retry loop for reqwest (a \
                     `reqwest-middleware`\n//! middleware); unlike the rest of the module, it needs \
                     reqwest, reqwest-middleware, http, tokio\n//! and uuid.\n\n\
                     pub mod reqwest_adapter;\n";
        assert!(!plain[0].contents.contains("reqwest_adapter"));
        assert!(with[0].contents.contains(&format!("{added}mod runtime;\n")));
        assert_eq!(with[0].contents.replacen(added, "\n", 1), plain[0].contents);
        assert_eq!(with[2].contents, Rust.adapters()[0].files[0].source);
    }
}
