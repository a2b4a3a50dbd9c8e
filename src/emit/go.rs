use super::escape::{c_like, check_identifier, push_quoted};
use super::{Adapter, Backend, LanguageOptions, LinkRequest, RuntimeFile};
use crate::model::policy::Jitter;
use crate::model::ReplayClass;
use heck::ToUpperCamelCase;

pub struct Go;

/// The package the runtime source declares, and the `package` option's default.
const DEFAULT_PACKAGE: &str = "retrypolicy";

/// The spec-independent runtime, copied beside the tables file.
static RUNTIME_FILES: [RuntimeFile; 1] = [RuntimeFile {
    name: "runtime.go",
    source: include_str!("../../runtime/go/runtime.go"),
}];

/// The net/http adapter (docs/adapters.md): `RoundTripper`, in the runtime's package.
static ADAPTERS: [Adapter; 1] = [Adapter {
    name: "net/http",
    requires: "the standard library only (Go 1.24 or later)",
    files: &[RuntimeFile {
        name: "roundtripper.go",
        source: include_str!("../../runtime/go/roundtripper.go"),
    }],
}];

impl Backend for Go {
    fn name(&self) -> &'static str {
        "go"
    }
    fn default_options(&self) -> LanguageOptions {
        LanguageOptions::from([("package".to_string(), DEFAULT_PACKAGE.to_string())])
    }
    fn check_options(&self, options: &LanguageOptions) -> Result<(), String> {
        let package = &options["package"];
        check_identifier("package", package, &GO_KEYWORDS)?;
        if package.chars().any(|c| c.is_ascii_uppercase() || c == '_') {
            return Err(format!("package {package:?}: Go package names are short lower-case words without underscores"));
        }
        Ok(())
    }
    fn tables_file_name(&self, _options: &LanguageOptions) -> String {
        "operations.go".into()
    }
    fn runtime_files(&self) -> &'static [RuntimeFile] {
        &RUNTIME_FILES
    }
    fn adapters(&self) -> &'static [Adapter] {
        &ADAPTERS
    }
    /// The target's `runtime_import` option, the shared runtime package's import path: what the
    /// template sees is "<the runtime's package name> <import spec>", the spec aliased when the
    /// path's last element is not the package name. The tables are a package of their own, so
    /// they need a folder of their own.
    fn runtime_link(&self, link: &LinkRequest<'_>) -> Result<String, String> {
        let path = link
            .runtime_path
            .ok_or("a Go target with a shared runtime needs the option `runtime_import`")?;
        check_import_path(path)?;
        if link.tables_dir == link.runtime_dir {
            return Err("a Go target's tables are a package of their own: give them a folder apart from the shared runtime's".into());
        }
        let package = &link.runtime_options["package"];
        // The import's name shares the file's scope with the tables' own declarations.
        if package == "tables" {
            return Err("a shared Go runtime cannot be package `tables`: the tables file that imports it declares `tables`; give the [[runtime]] another `package`".into());
        }
        let last = path.rsplit('/').next().unwrap_or(path);
        Ok(if last == package {
            format!("{package} {path:?}")
        } else {
            format!("{package} {package} {path:?}")
        })
    }
    /// The `package retrypolicy` clause of the runtime and of the adapter names the `package`
    /// option instead.
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
    fn push_string_literal(&self, out: &mut String, s: &str) {
        push_quoted(out, s, c_like, |c| match c as u32 {
            u @ 0..=0xffff => format!("\\u{u:04x}"),
            u => format!("\\U{u:08x}"),
        })
    }
    /// Go writes regular expressions as raw strings when it can.
    fn push_regex_literal(&self, out: &mut String, pattern: &str) {
        if pattern
            .chars()
            .all(|c| (' '..='~').contains(&c) && c != '`')
        {
            out.push('`');
            out.push_str(pattern);
            out.push('`');
        } else {
            self.push_string_literal(out, pattern)
        }
    }
    fn null_literal(&self) -> &'static str {
        "\"\""
    }
    fn class_ident(&self, class: ReplayClass) -> String {
        format!("Class{}", class.name().to_upper_camel_case())
    }
    fn jitter_ident(&self, jitter: Jitter) -> String {
        format!("Jitter{}", jitter.name().to_upper_camel_case())
    }
}

/// An import path as `go` accepts one in a module (golang.org/x/mod/module.CheckImportPath):
/// elements of ASCII letters, digits and `-._~+`, separated by single slashes, none empty, none
/// starting with a dot.
fn check_import_path(path: &str) -> Result<(), String> {
    let bad = || {
        format!(
            "runtime_import {path:?} is not a Go import path such as `example.com/sdk/retrypolicy`"
        )
    };
    for element in path.split('/') {
        if element.is_empty()
            || element.starts_with('.')
            || !element
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-._~+".contains(c))
        {
            return Err(bad());
        }
    }
    Ok(())
}

const GO_KEYWORDS: [&str; 25] = [
    "break",
    "case",
    "chan",
    "const",
    "continue",
    "default",
    "defer",
    "else",
    "fallthrough",
    "for",
    "func",
    "go",
    "goto",
    "if",
    "import",
    "interface",
    "map",
    "package",
    "range",
    "return",
    "select",
    "struct",
    "switch",
    "type",
    "var",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn options(package: &str) -> LanguageOptions {
        LanguageOptions::from([("package".to_string(), package.to_string())])
    }

    /// With the default package the runtime is emitted byte for byte; another package changes
    /// exactly the package clause, the one line that declares it.
    #[test]
    fn runtime_text_rewrites_only_the_package_clause() {
        let file = &Go.runtime_files()[0];
        assert_eq!(file.name, "runtime.go");
        assert_eq!(Go.runtime_text(file, &Go.default_options()), file.source);
        let clauses = |text: &str| {
            text.lines()
                .filter(|line| line.starts_with("package "))
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(clauses(file.source), ["package retrypolicy"]);
        let renamed = Go.runtime_text(file, &options("sdkretry"));
        assert_eq!(clauses(&renamed), ["package sdkretry"]);
        let changed: Vec<(&str, &str)> = file
            .source
            .lines()
            .zip(renamed.lines())
            .filter(|(a, b)| a != b)
            .collect();
        assert_eq!(changed, [("package retrypolicy", "package sdkretry")]);
        assert_eq!(file.source.lines().count(), renamed.lines().count());
    }

    fn link(path: Option<&str>, runtime_package: &str) -> Result<String, String> {
        Go.runtime_link(&LinkRequest {
            tables_dir: std::path::Path::new("sdk/sandbox"),
            runtime_dir: std::path::Path::new("sdk/retrypolicy"),
            tables_options: &options("sandbox"),
            runtime_options: &options(runtime_package),
            runtime_path: path,
        })
    }

    /// The link is the runtime's package name and the import spec, aliased only when the path
    /// does not end in the package name; a path `go` would refuse is an error.
    #[test]
    fn runtime_link_is_the_import_path() {
        assert_eq!(
            link(Some("example.com/sdk/retrypolicy"), "retrypolicy").as_deref(),
            Ok("retrypolicy \"example.com/sdk/retrypolicy\"")
        );
        assert_eq!(
            link(Some("example.com/sdk/retry"), "sdkretry").as_deref(),
            Ok("sdkretry sdkretry \"example.com/sdk/retry\"")
        );
        for bad in [
            "",
            "/abs",
            "example.com//x",
            "example.com/x/",
            "example.com/.x",
            "example.com/x y",
            "example.com/\"x",
        ] {
            assert!(link(Some(bad), "retrypolicy").is_err(), "{bad:?}");
        }
        assert!(link(None, "retrypolicy").is_err());
        assert!(link(Some("example.com/sdk/tables"), "tables").is_err());
        let same = Go.runtime_link(&LinkRequest {
            tables_dir: std::path::Path::new("sdk/retrypolicy"),
            runtime_dir: std::path::Path::new("sdk/retrypolicy"),
            tables_options: &options("retrypolicy"),
            runtime_options: &options("retrypolicy"),
            runtime_path: Some("example.com/sdk/retrypolicy"),
        });
        assert!(same.is_err());
    }

    /// The runtime and the adapter carry the generated-file marker in their first lines, so
    /// `check` knows them.
    #[test]
    fn runtime_is_marked_generated() {
        assert!(crate::emit::is_generated(Go.runtime_files()[0].source));
        assert!(crate::emit::is_generated(Go.adapters()[0].files[0].source));
    }

    /// `adapters = ["net/http"]` emits roundtripper.go byte for byte beside the runtime, and
    /// another package renames exactly its package clause.
    #[test]
    fn the_adapter_is_emitted_verbatim() {
        let adapters = crate::emit::resolve_adapters(&Go, &["net/http".to_string()])
            .expect("net/http is Go's adapter");
        assert_eq!(adapters.len(), 1);
        let file = &adapters[0].files[0];
        assert_eq!(file.name, "roundtripper.go");
        assert_eq!(
            file.source,
            include_str!("../../runtime/go/roundtripper.go")
        );
        assert_eq!(Go.runtime_text(file, &Go.default_options()), file.source);
        let renamed = Go.runtime_text(file, &options("sdkretry"));
        let changed: Vec<(&str, &str)> = file
            .source
            .lines()
            .zip(renamed.lines())
            .filter(|(a, b)| a != b)
            .collect();
        assert_eq!(changed, [("package retrypolicy", "package sdkretry")]);
    }
}
