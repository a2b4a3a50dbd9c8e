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
