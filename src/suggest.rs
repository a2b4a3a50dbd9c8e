//! `retrygen lint --suggest-overlay FILE`: a starting OpenAPI Overlay 1.0 for a spec the team
//! cannot edit. One action per `POST` and `PATCH` that carries no `x-idempotent` on the
//! operation or its path item (exactly what `--strict` reports), setting `x-idempotent: false`:
//! what the method default already does, now written down for a reviewer to confirm or flip.
//! Each action's target is the RFC 9535 normalized path of the operation, built from its JSON
//! pointer, with the operation and where it is written in a comment above it.

use crate::read::RawSpec;

/// One operation the overlay annotates.
struct Suggestion {
    target: String,
    comment: String,
}

/// The normalized JSONPath (RFC 9535 section 2.7) of a JSON pointer: `/paths/~1a/post` is
/// `$['paths']['/a']['post']`, written with member shorthands where the name allows it.
pub fn json_path_of_pointer(pointer: &str) -> String {
    let mut out = String::from("$");
    for token in pointer.split('/').skip(1) {
        let name = token.replace("~1", "/").replace("~0", "~");
        let shorthand = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if shorthand {
            out.push('.');
            out.push_str(&name);
            continue;
        }
        out.push_str("['");
        for c in name.chars() {
            match c {
                '\'' => out.push_str("\\'"),
                '\\' => out.push_str("\\\\"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push_str("']");
    }
    out
}

/// A YAML double-quoted scalar holding exactly `s`.
fn yaml_quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' || ('\u{80}'..='\u{9f}').contains(&c) => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            '\u{2028}' | '\u{2029}' | '\u{feff}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A comment line's text: nothing from the spec can end the comment or hide text.
fn comment(s: &str) -> String {
    crate::emit::comment_safe(s)
}

/// The overlay for `raw` (read from `root`, as diagnostics name it), and how many operations it
/// annotates. Operations written in other files than the root are listed in a comment: an
/// overlay applies to the root document, so the team annotates those where they live.
pub fn overlay(raw: &RawSpec, root: &str) -> (String, usize) {
    let mut suggestions = Vec::new();
    let mut elsewhere = Vec::new();
    for op in &raw.operations {
        let unannotated = matches!(op.method.as_str(), "POST" | "PATCH")
            && op.idempotent_on_operation.is_none()
            && op.idempotent_on_path.is_none();
        if !unannotated {
            continue;
        }
        let what = match &op.operation_id {
            Some(id) => format!("{} ({} {})", id.value, op.method, op.path),
            None => format!("{} {}", op.method, op.path),
        };
        let at = format!("{}:{}:{}", op.at.file, op.at.line, op.at.column);
        if op.at.file != root {
            elsewhere.push(format!("{what} at {at}"));
            continue;
        }
        suggestions.push(Suggestion {
            target: json_path_of_pointer(&op.at.pointer),
            comment: format!("{what} at {at}"),
        });
    }
    let mut out = String::new();
    out.push_str(&format!(
        "# Written by `retrygen lint --suggest-overlay` for {}: one action per POST and PATCH\n",
        comment(root)
    ));
    out.push_str(
        "# without `x-idempotent`. Each sets `x-idempotent: false`, what the method default does\n\
         # already, so nothing changes until a reviewer flips an action to `true` where the server\n\
         # deduplicates or the operation is safe to repeat. Apply it with `--overlay` or a job's\n\
         # `overlays = [...]` in retrygen.toml; `retrygen lint --strict --overlay` then passes.\n",
    );
    out.push_str("overlay: 1.0.0\ninfo:\n");
    out.push_str(&format!(
        "  title: {}\n",
        yaml_quoted(&format!("x-idempotent for {root}"))
    ));
    out.push_str("  version: 1.0.0\n");
    if suggestions.is_empty() {
        out.push_str("actions: []\n");
    } else {
        out.push_str("actions:\n");
        for s in &suggestions {
            out.push_str(&format!("  # {}\n", comment(&s.comment)));
            out.push_str(&format!("  - target: {}\n", yaml_quoted(&s.target)));
            out.push_str("    update:\n      x-idempotent: false\n");
        }
    }
    if !elsewhere.is_empty() {
        out.push_str(
            "# Written in referenced files, which an overlay on the root document cannot reach:\n",
        );
        for e in &elsewhere {
            out.push_str(&format!("#   {}\n", comment(e)));
        }
    }
    (out, suggestions.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_become_normalized_paths() {
        assert_eq!(
            json_path_of_pointer("/paths/~1sandboxes~1{id}/post"),
            "$.paths['/sandboxes/{id}'].post"
        );
        assert_eq!(
            json_path_of_pointer("/paths/~1it's~0a\\b/patch"),
            "$.paths['/it\\'s~a\\\\b'].patch"
        );
        assert_eq!(json_path_of_pointer("/a/0b/_c1"), "$.a['0b']._c1");
        assert_eq!(json_path_of_pointer("/x\n"), "$['x\\n']");
    }

    #[test]
    fn yaml_scalars_hold_anything() {
        assert_eq!(yaml_quoted("a\"b\\c\u{1}"), "\"a\\\"b\\\\c\\u0001\"");
    }
}
