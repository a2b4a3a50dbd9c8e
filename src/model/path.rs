//! Path templates: parsing, the equivalence used to find templates that match the same requests,
//! and the anchored regular expression for the seed-compatible non-replayable list.

use crate::percent::percent_decode;

/// One piece of a segment that mixes literal text and parameters, like `{name}.{ext}`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(tag = "kind", content = "text", rename_all = "snake_case")]
pub enum Piece {
    Literal(String),
    Param(String),
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Segment {
    Literal(String),
    Param(String),
    Mixed(Vec<Piece>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathTemplate {
    pub segments: Vec<Segment>,
}

impl PathTemplate {
    /// Parses a path template as written in `paths` (without any `?`/`#` suffix, see
    /// [`split_suffix`]). A trailing slash is dropped, as `classify` drops it from requests.
    pub fn parse(path: &str) -> Result<PathTemplate, String> {
        let Some(rest) = path.strip_prefix('/') else {
            return Err("a path template must start with `/`".into());
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.is_empty() {
            return Ok(PathTemplate {
                segments: Vec::new(),
            });
        }
        let segments = rest
            .split('/')
            .map(parse_segment)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(PathTemplate { segments })
    }

    /// A key equal for templates that match exactly the same concrete paths
    /// (`/a/{x}` and `/a/{y}`), whatever their parameter names.
    pub fn shape(&self) -> String {
        let mut out = String::new();
        for s in &self.segments {
            out.push('/');
            match s {
                Segment::Literal(l) => push_shape_literal(l, &mut out),
                Segment::Param(_) => out.push_str("{}"),
                Segment::Mixed(pieces) => {
                    for p in pieces {
                        match p {
                            Piece::Literal(l) => push_shape_literal(l, &mut out),
                            Piece::Param(_) => out.push_str("{}"),
                        }
                    }
                }
            }
        }
        out
    }

    /// Anchored regular expression over the request path without base path and query, accepting
    /// one optional trailing slash. Only syntax characters are escaped, which every engine of the
    /// six languages reads the same way.
    pub fn regex(&self) -> String {
        if self.segments.is_empty() {
            return "^/$".into();
        }
        let mut out = String::from("^");
        for s in &self.segments {
            out.push('/');
            match s {
                Segment::Literal(l) => escape_regex(l, &mut out),
                Segment::Param(_) => out.push_str("[^/]+"),
                Segment::Mixed(pieces) => {
                    for p in pieces {
                        match p {
                            Piece::Literal(l) => escape_regex(l, &mut out),
                            Piece::Param(_) => out.push_str("[^/]+"),
                        }
                    }
                }
            }
        }
        out.push_str("/?$");
        out
    }
}

impl PathTemplate {
    /// Contract v2's safe-list expression (docs/contract.md section 2, L1): like [`Self::regex`],
    /// but each literal character also matches the percent-encoding of its UTF-8 bytes (either
    /// hex case), so the list agrees with `classify` on encoded requests (`/api-k%65ys`); a
    /// decoded `/` matches only encoded; the root accepts one trailing slash.
    pub fn safe_regex(&self) -> String {
        if self.segments.is_empty() {
            return "^//?$".into();
        }
        let mut out = String::from("^");
        for s in &self.segments {
            out.push('/');
            match s {
                Segment::Literal(l) => {
                    encoded_alternatives(&crate::percent::percent_decode(l), &mut out)
                }
                Segment::Param(_) => out.push_str("[^/]+"),
                Segment::Mixed(pieces) => {
                    for p in pieces {
                        match p {
                            Piece::Literal(l) => {
                                encoded_alternatives(&crate::percent::percent_decode(l), &mut out)
                            }
                            Piece::Param(_) => out.push_str("[^/]+"),
                        }
                    }
                }
            }
        }
        out.push_str("/?$");
        out
    }
}

fn hex_digit_class(d: u8, out: &mut String) {
    let c = char::from_digit(u32::from(d), 16).expect("a nibble");
    if c.is_ascii_digit() {
        out.push(c);
    } else {
        out.push('[');
        out.push(c.to_ascii_uppercase());
        out.push(c);
        out.push(']');
    }
}

fn encoded_alternatives(text: &str, out: &mut String) {
    let mut buf = [0u8; 4];
    for c in text.chars() {
        let mut encoded = String::new();
        for b in c.encode_utf8(&mut buf).bytes() {
            encoded.push('%');
            hex_digit_class(b >> 4, &mut encoded);
            hex_digit_class(b & 15, &mut encoded);
        }
        if c == '/' {
            out.push_str(&encoded);
        } else {
            out.push_str("(?:");
            escape_regex(c.encode_utf8(&mut buf), out);
            out.push('|');
            out.push_str(&encoded);
            out.push(')');
        }
    }
}

/// Splits `/oauth2/token#refresh` into the part a request can match and the suffix some
/// documents append to keep two path items for one URL apart. Requests never carry it.
pub fn split_suffix(path: &str) -> (&str, Option<&str>) {
    match path.bytes().position(|b| b == b'?' || b == b'#') {
        Some(i) => (&path[..i], Some(&path[i..])),
        None => (path, None),
    }
}

/// A literal decoded, with `\` and `{` escaped so that no literal reads like a parameter's `{}`.
fn push_shape_literal(literal: &str, out: &mut String) {
    let decoded = percent_decode(literal);
    if !decoded.contains(['\\', '{']) {
        out.push_str(&decoded);
        return;
    }
    for c in decoded.chars() {
        if matches!(c, '\\' | '{') {
            out.push('\\');
        }
        out.push(c);
    }
}

fn escape_regex(literal: &str, out: &mut String) {
    for c in literal.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
}

fn parse_segment(segment: &str) -> Result<Segment, String> {
    if !segment.contains(['{', '}']) {
        return Ok(Segment::Literal(segment.to_string()));
    }
    let mut pieces = Vec::new();
    let mut rest = segment;
    while !rest.is_empty() {
        match rest.find(['{', '}']) {
            Some(i) if rest.as_bytes()[i] == b'}' => {
                return Err(format!("unbalanced `}}` in segment {segment:?}"));
            }
            Some(i) => {
                if i > 0 {
                    pieces.push(Piece::Literal(rest[..i].to_string()));
                }
                let after = &rest[i + 1..];
                let close = after
                    .find('}')
                    .ok_or_else(|| format!("unclosed `{{` in segment {segment:?}"))?;
                let name = &after[..close];
                if name.contains('{') {
                    return Err(format!("nested `{{` in segment {segment:?}"));
                }
                if name.trim().is_empty() {
                    return Err(format!("empty parameter name in segment {segment:?}"));
                }
                if matches!(pieces.last(), Some(Piece::Param(_))) {
                    return Err(format!("two parameters without literal text between them in segment {segment:?}; no request can tell where one ends"));
                }
                pieces.push(Piece::Param(name.to_string()));
                rest = &after[close + 1..];
            }
            None => {
                pieces.push(Piece::Literal(rest.to_string()));
                rest = "";
            }
        }
    }
    Ok(match pieces.as_slice() {
        [Piece::Param(name)] => Segment::Param(name.clone()),
        _ => Segment::Mixed(pieces),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_segments() {
        let t = PathTemplate::parse("/files/{name}.{ext}/v{n}/raw/").unwrap();
        assert_eq!(
            t.segments,
            vec![
                Segment::Literal("files".into()),
                Segment::Mixed(vec![
                    Piece::Param("name".into()),
                    Piece::Literal(".".into()),
                    Piece::Param("ext".into())
                ]),
                Segment::Mixed(vec![Piece::Literal("v".into()), Piece::Param("n".into())]),
                Segment::Literal("raw".into()),
            ]
        );
        assert_eq!(t.regex(), r"^/files/[^/]+\.[^/]+/v[^/]+/raw/?$");
        assert_eq!(PathTemplate::parse("/").unwrap().regex(), "^/$");
    }

    #[test]
    fn equivalent_templates_share_a_shape() {
        let a = PathTemplate::parse("/a/{x}").unwrap();
        let b = PathTemplate::parse("/a/{y}/").unwrap();
        assert_eq!(a.shape(), b.shape());
        assert_ne!(a.shape(), PathTemplate::parse("/a/x").unwrap().shape());
    }

    #[test]
    fn rejects_malformed_templates() {
        for bad in ["a", "/a/{", "/a/}", "/a/{}", "/a/{x}{y}", "/a/{x{y}}"] {
            assert!(PathTemplate::parse(bad).is_err(), "{bad}");
        }
    }
}
