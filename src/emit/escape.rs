//! Shared pieces of string-literal escaping. Each backend decides the syntax; the rule is the
//! same everywhere: printable ASCII stays as written, everything else becomes an escape, so no
//! generated file holds a raw control, separator, bidi or non-ASCII character from a spec.

/// Builds the body of a double-quoted literal: `special` handles characters with a short escape
/// in the language (quotes, backslash, `$`...), `escape` renders any other non-printable or
/// non-ASCII character.
pub fn quoted(
    s: &str,
    special: impl Fn(char) -> Option<&'static str>,
    escape: impl Fn(char) -> String,
) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if let Some(short) = special(c) {
            out.push_str(short);
        } else if (' '..='~').contains(&c) {
            out.push(c);
        } else {
            out.push_str(&escape(c));
        }
    }
    out.push('"');
    out
}

/// `\uXXXX`, with a UTF-16 surrogate pair outside the BMP (JavaScript, Kotlin/Java, C#).
pub fn utf16_escape(c: char) -> String {
    let mut buf = [0u16; 2];
    c.encode_utf16(&mut buf)
        .iter()
        .map(|u| format!("\\u{u:04X}"))
        .collect()
}

/// The usual escapes shared by C-family languages.
pub fn c_like(c: char) -> Option<&'static str> {
    match c {
        '"' => Some("\\\""),
        '\\' => Some("\\\\"),
        '\n' => Some("\\n"),
        '\r' => Some("\\r"),
        '\t' => Some("\\t"),
        _ => None,
    }
}

/// Checks an identifier option: ASCII letters, digits and `_`, not starting with a digit, and
/// not one of `keywords`.
pub fn check_identifier(what: &str, value: &str, keywords: &[&str]) -> Result<(), String> {
    let valid = value
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && value.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(format!("{what} {value:?} is not a valid identifier (ASCII letters, digits and `_`, not starting with a digit)"));
    }
    if keywords.contains(&value) {
        return Err(format!("{what} {value:?} is a reserved word"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surrogate_pairs() {
        assert_eq!(utf16_escape('\u{1F600}'), "\\uD83D\\uDE00");
        assert_eq!(utf16_escape('\u{2028}'), "\\u2028");
    }
}
