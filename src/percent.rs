//! Percent-decoding, the one decoder of the crate.

use std::borrow::Cow;

/// Percent-decodes `%XX` escapes (two hex digits, either case); any other `%` stays, and the
/// input comes back unchanged when the decoded bytes are not UTF-8. This is the contract's
/// classify step 7 (docs/contract.md section 2) that every runtime implements, applied by the
/// model to path template literals and request path segments; changing it changes the contract.
/// The reader uses the same decoding for `$ref` file parts and fragments (URI references).
/// Borrows the input when there is nothing to decode.
pub fn percent_decode(s: &str) -> Cow<'_, str> {
    if !s.contains('%') {
        return Cow::Borrowed(s);
    }
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    match String::from_utf8(out) {
        Ok(decoded) => Cow::Owned(decoded),
        Err(_) => Cow::Borrowed(s),
    }
}
