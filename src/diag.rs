//! Diagnostics: every problem retrygen reports carries where it is (file, line, column and
//! JSON pointer), what is wrong and how to fix it, so a user can act on all of them in one run.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// A position in a source document. Lines and columns are 1-based.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Location {
    /// The file as the user named it (root) or relative to the root's folder (referenced files).
    pub file: String,
    pub line: usize,
    pub column: usize,
    /// JSON pointer of the offending node inside `file` (RFC 6901), "" for the whole document.
    pub pointer: String,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostic {
    pub severity: Severity,
    pub location: Location,
    pub message: String,
    pub help: String,
}

impl Diagnostic {
    pub fn error(location: Location, message: impl Into<String>, help: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            location,
            message: message.into(),
            help: help.into(),
        }
    }

    pub fn warning(
        location: Location,
        message: impl Into<String>,
        help: impl Into<String>,
    ) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            location,
            message: message.into(),
            help: help.into(),
        }
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let loc = &self.location;
        write!(
            f,
            "{kind}: {}:{}:{}: {}",
            loc.file, loc.line, loc.column, self.message
        )?;
        let pointer = if loc.pointer.is_empty() {
            "(document root)"
        } else {
            &loc.pointer
        };
        write!(f, "\n  at: {pointer}")?;
        if !self.help.is_empty() {
            write!(f, "\n  help: {}", self.help)?;
        }
        Ok(())
    }
}

/// Escapes one reference token of a JSON pointer (RFC 6901 section 3).
pub fn pointer_token(token: &str) -> std::borrow::Cow<'_, str> {
    // Readers call this for every key they pass: most need no escape and no copy.
    if token.contains(['~', '/']) {
        token.replace('~', "~0").replace('/', "~1").into()
    } else {
        token.into()
    }
}

/// Appends a token to a JSON pointer.
pub fn pointer_push(pointer: &str, token: &str) -> String {
    let mut out = String::with_capacity(pointer.len() + token.len() + 1);
    out.push_str(pointer);
    out.push('/');
    out.push_str(&pointer_token(token));
    out
}

/// A collection of diagnostics gathered over one run; sorted for deterministic output.
#[derive(Debug, Default, Clone)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    pub fn push(&mut self, d: Diagnostic) {
        self.items.push(d);
    }
    pub fn extend(&mut self, other: Diagnostics) {
        self.items.extend(other.items);
    }
    pub fn has_errors(&self) -> bool {
        self.items.iter().any(Diagnostic::is_error)
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter()
    }
    /// Stable order: by file, line, column, then message; exact duplicates dropped.
    pub fn into_sorted(mut self) -> Vec<Diagnostic> {
        self.items.sort_by(|a, b| {
            (&a.location, a.severity, &a.message).cmp(&(&b.location, b.severity, &b.message))
        });
        self.items.dedup();
        self.items
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in self.clone().into_sorted() {
            writeln!(f, "{d}")?;
        }
        Ok(())
    }
}

impl Diagnostic {
    /// The rule a code-scanning tool files this diagnostic under: one per severity, since a
    /// diagnostic's message already says what is wrong and its help how to fix it.
    fn rule_id(&self) -> &'static str {
        match self.severity {
            Severity::Error => "retrygen/spec-error",
            Severity::Warning => "retrygen/spec-warning",
        }
    }

    fn full_message(&self) -> String {
        if self.help.is_empty() {
            self.message.clone()
        } else {
            format!("{}\nhelp: {}", self.message, self.help)
        }
    }
}

/// SARIF 2.1.0, the format GitHub code scanning (`github/codeql-action/upload-sarif`) and other
/// scanners read: one result per diagnostic, its file relative to where retrygen ran, and the
/// JSON pointer as a logical location. Deterministic: no version, time or absolute path.
pub fn render_sarif(diagnostics: &[Diagnostic]) -> String {
    use serde_json::json;
    let rule = |id: &str, level: &str, text: &str| {
        json!({
            "id": id,
            "shortDescription": {"text": text},
            "defaultConfiguration": {"level": level}
        })
    };
    let results: Vec<serde_json::Value> = diagnostics
        .iter()
        .map(|d| {
            let pointer = if d.location.pointer.is_empty() {
                "/".to_string()
            } else {
                d.location.pointer.clone()
            };
            json!({
                "ruleId": d.rule_id(),
                "level": match d.severity { Severity::Error => "error", Severity::Warning => "warning" },
                "message": {"text": d.full_message()},
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": d.location.file},
                        "region": {"startLine": d.location.line, "startColumn": d.location.column}
                    },
                    "logicalLocations": [{"fullyQualifiedName": pointer, "kind": "jsonPointer"}]
                }]
            })
        })
        .collect();
    let sarif = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "retrygen",
                "rules": [
                    rule("retrygen/spec-error", "error", "The OpenAPI document breaks a rule retrygen needs to classify retries"),
                    rule("retrygen/spec-warning", "warning", "The OpenAPI document is readable, but probably not as meant"),
                ]
            }},
            "columnKind": "unicodeCodePoints",
            "results": results
        }]
    });
    let mut text = serde_json::to_string_pretty(&sarif).expect("plain data serializes");
    text.push('\n');
    text
}

/// GitHub Actions workflow commands (`::error file=...,line=...,col=...::message`): each
/// diagnostic becomes an annotation on the spec's line in the pull request. Values are escaped
/// as the runner's command parser expects (`%`, CR, LF everywhere; `:` and `,` in properties).
pub fn render_github(diagnostics: &[Diagnostic]) -> String {
    fn data(s: &str) -> String {
        s.replace('%', "%25")
            .replace('\r', "%0D")
            .replace('\n', "%0A")
    }
    fn property(s: &str) -> String {
        data(s).replace(':', "%3A").replace(',', "%2C")
    }
    let mut out = String::new();
    for d in diagnostics {
        let command = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let title = if d.location.pointer.is_empty() {
            "retrygen".to_string()
        } else {
            format!("retrygen: {}", d.location.pointer)
        };
        out.push_str(&format!(
            "::{command} file={},line={},col={},title={}::{}\n",
            property(&d.location.file),
            d.location.line,
            d.location.column,
            property(&title),
            data(&d.full_message())
        ));
    }
    out
}

#[cfg(test)]
mod render_tests {
    use super::*;

    fn diagnostic(message: &str) -> Diagnostic {
        Diagnostic::error(
            Location {
                file: "specs/a,b:c.yaml".into(),
                line: 3,
                column: 7,
                pointer: "/paths/~1x/post".into(),
            },
            message,
            "fix it",
        )
    }

    /// Newlines and percent signs cannot end or forge a workflow command; commas and colons in
    /// a file name cannot start another property.
    #[test]
    fn github_commands_are_escaped() {
        let out = render_github(&[diagnostic("50% off\n::error::forged")]);
        assert_eq!(
            out,
            "::error file=specs/a%2Cb%3Ac.yaml,line=3,col=7,title=retrygen%3A /paths/~1x/post::50%25 off%0A::error::forged%0Ahelp: fix it\n"
        );
        assert_eq!(out.lines().count(), 1);
    }

    #[test]
    fn sarif_is_valid_json_with_one_result_per_diagnostic() {
        let out = render_sarif(&[diagnostic("a"), diagnostic("b")]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["version"], "2.1.0");
        assert_eq!(v["runs"][0]["results"].as_array().unwrap().len(), 2);
        assert_eq!(
            v["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"],
            3
        );
    }
}
