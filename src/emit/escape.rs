//! Shared pieces of string-literal escaping. Each backend decides the syntax; the rule is the
//! same everywhere: printable ASCII stays as written, everything else becomes an escape, so no
//! generated file holds a raw control, separator, bidi or non-ASCII character from a spec.

/// Appends a double-quoted literal to `out`: `special` handles characters with a short escape in
/// the language (quotes, backslash, `$`...), `escape` renders any other non-printable or
/// non-ASCII character.
pub fn push_quoted(
    out: &mut String,
    s: &str,
    special: impl Fn(char) -> Option<&'static str>,
    escape: impl Fn(char) -> String,
) {
    out.reserve(s.len() + 2);
    out.push('"');
    let mut rest = s;
    loop {
        let plain = plain_prefix(rest.as_bytes());
        out.push_str(&rest[..plain]);
        rest = &rest[plain..];
        let Some(c) = rest.chars().next() else { break };
        if let Some(short) = special(c) {
            out.push_str(short);
        } else if (' '..='~').contains(&c) {
            out.push(c);
        } else {
            out.push_str(&escape(c));
        }
        rest = &rest[c.len_utf8()..];
    }
    out.push('"');
}

/// The length of the longest prefix of `bytes` that certainly stands for itself in a literal of
/// any language: printable ASCII but the characters some language escapes (the quote, the
/// backslash, `$`). Copying that run in one go is most of the work for most spec strings; it is
/// scanned 16 bytes at a time, in a loop the compiler vectorizes.
fn plain_prefix(bytes: &[u8]) -> usize {
    let stops = |b: u8| !(b' '..=b'~').contains(&b) || matches!(b, b'"' | b'\\' | b'$');
    let mut start = 0;
    for chunk in bytes.chunks(16) {
        if chunk.iter().fold(false, |any, &b| any | stops(b)) {
            break;
        }
        start += chunk.len();
    }
    start
        + bytes[start..]
            .iter()
            .position(|&b| stops(b))
            .unwrap_or(bytes.len() - start)
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

/// Replaces every character that could end a line comment or change how a line displays
/// (line and paragraph separators, bidi controls, other control and format characters) with a
/// visible `\u{...}` escape.
pub fn comment_safe(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if is_unsafe_in_source(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// [`comment_safe`] for a line comment of generated code, which must also survive the
/// language's formatter unchanged: rustfmt, gofmt and black trim trailing whitespace, Unicode
/// whitespace such as U+3000 included. So whitespace other than the ASCII space is escaped
/// wherever it is, and spaces at the end are too.
pub fn comment_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_comment_line(&mut out, s);
    out
}

/// [`comment_line`], appended to `out`.
pub fn push_comment_line(out: &mut String, s: &str) {
    let kept = s.trim_end_matches(' ').len();
    if s.bytes().all(|b| (b' '..=b'~').contains(&b)) {
        // Printable ASCII: only the trailing spaces change.
        out.push_str(&s[..kept]);
        for _ in kept..s.len() {
            out.push_str("\\u{20}");
        }
        return;
    }
    for (i, c) in s.char_indices() {
        if is_unsafe_in_source(c) || (c.is_whitespace() && (c != ' ' || i >= kept)) {
            push_code_point(out, c);
        } else {
            out.push(c);
        }
    }
}

/// Appends `\u{...}`, the code point of `c` in hexadecimal.
fn push_code_point(out: &mut String, c: char) {
    use std::fmt::Write;
    write!(out, "\\u{{{:x}}}", c as u32).expect("writing to a String cannot fail");
}

/// Characters no generated file contains raw: controls, line/paragraph separators, and the
/// bidi and zero-width format characters behind "Trojan Source" (CVE-2021-42574).
pub fn is_unsafe_in_source(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{85}' | '\u{feff}' | '\u{061c}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}')
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
