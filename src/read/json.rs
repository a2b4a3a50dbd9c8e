//! A JSON reader producing the same [`Node`] tree as the YAML loader, with positions. JSON gets
//! its own reader because YAML parsers reject the UTF-16 surrogate-pair escapes (`\ud83d\udc4d`)
//! that JSON allows and real documents use, and because it is several times faster on the
//! multi-megabyte documents retrygen is run on in every build.

use super::load::{Limits, LoadError};
use super::node::{Entry, FileId, KeySet, Mark, Node, Value};

struct Reader<'a> {
    text: &'a [u8],
    pos: usize,
    line: u32,
    line_start: usize,
    /// The column of `column_at` on the current line: columns are counted from the last mark
    /// forward, so a document on one long line costs linear time, not quadratic.
    column_at: usize,
    column: usize,
    file: FileId,
}

enum Frame {
    Seq(Vec<Node>, Mark, usize),
    Map(Vec<Entry>, Mark, usize, Option<(String, Mark)>, KeySet),
}

type Fail = (Mark, String);

impl<'a> Reader<'a> {
    fn mark(&mut self) -> Mark {
        // Columns count characters (UTF-8 lead bytes), not bytes.
        if self.column_at < self.line_start || self.column_at > self.pos {
            self.column_at = self.line_start;
            self.column = 0;
        }
        self.column += self.text[self.column_at..self.pos]
            .iter()
            .filter(|&&b| b & 0xC0 != 0x80)
            .count();
        self.column_at = self.pos;
        Mark {
            file: self.file,
            line: self.line,
            column: self.column as u32 + 1,
        }
    }

    fn fail<T>(&mut self, message: impl Into<String>) -> Result<T, Fail> {
        Err((self.mark(), message.into()))
    }

    fn skip_ws(&mut self) {
        while let Some(&b) = self.text.get(self.pos) {
            match b {
                b' ' | b'\t' | b'\r' => self.pos += 1,
                b'\n' => {
                    self.pos += 1;
                    self.line += 1;
                    self.line_start = self.pos;
                }
                _ => break,
            }
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn expect_word(&mut self, word: &str, value: Value) -> Result<Value, Fail> {
        if self.text[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            self.fail("unexpected character; expected a JSON value")
        }
    }

    fn hex4(&mut self) -> Result<u32, Fail> {
        let digits = self
            .text
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| (self.mark(), "truncated \\u escape".to_string()))?;
        let s = std::str::from_utf8(digits)
            .ok()
            .filter(|s| s.bytes().all(|b| b.is_ascii_hexdigit()));
        let Some(s) = s else {
            return self.fail("invalid \\u escape");
        };
        self.pos += 4;
        Ok(u32::from_str_radix(s, 16).expect("checked hex digits"))
    }

    fn string(&mut self) -> Result<String, Fail> {
        self.pos += 1; // opening quote
        let mut out = String::new();
        loop {
            let start = self.pos;
            while let Some(&b) = self.text.get(self.pos) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            // The input is valid UTF-8 and we only stopped at ASCII bytes.
            out.push_str(std::str::from_utf8(&self.text[start..self.pos]).expect("input is UTF-8"));
            match self.peek() {
                None => return self.fail("unterminated string"),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let Some(e) = self.peek() else {
                        return self.fail("unterminated string");
                    };
                    self.pos += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let first = self.hex4()?;
                            let c = if (0xD800..0xDC00).contains(&first)
                                && self.text[self.pos..].starts_with(b"\\u")
                            {
                                let save = self.pos;
                                self.pos += 2;
                                let second = self.hex4()?;
                                if (0xDC00..0xE000).contains(&second) {
                                    char::from_u32(
                                        0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00),
                                    )
                                } else {
                                    self.pos = save;
                                    None
                                }
                            } else {
                                char::from_u32(first)
                            };
                            // A lone surrogate cannot be held in a Rust string; it becomes U+FFFD.
                            out.push(c.unwrap_or('\u{FFFD}'));
                        }
                        _ => return self.fail("invalid escape in string"),
                    }
                }
                Some(_) => return self.fail("control character in string; escape it"),
            }
        }
    }

    fn number(&mut self) -> Result<Value, Fail> {
        let start = self.pos;
        while let Some(&b) = self.text.get(self.pos) {
            if b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E') {
                self.pos += 1;
            } else {
                break;
            }
        }
        let text = std::str::from_utf8(&self.text[start..self.pos]).expect("ASCII");
        let valid = {
            let t = text.strip_prefix('-').unwrap_or(text);
            let int_end = t.find(['.', 'e', 'E']).unwrap_or(t.len());
            let int = &t[..int_end];
            !int.is_empty()
                && int.bytes().all(|b| b.is_ascii_digit())
                && (int == "0" || !int.starts_with('0'))
                && text.parse::<f64>().is_ok()
        };
        if !valid {
            self.pos = start;
            return self.fail(format!("invalid number {text:?}"));
        }
        Ok(Value::Number(text.to_string()))
    }
}

/// Parses one JSON document. Iterative, so nesting costs heap, not stack, up to `max_depth`.
pub fn load(text: &str, file: FileId, limits: &Limits) -> Result<Node, Vec<LoadError>> {
    let mut r = Reader {
        text: text.as_bytes(),
        pos: 0,
        line: 1,
        line_start: 0,
        column_at: 0,
        column: 0,
        file,
    };
    let mut pointer = String::new();
    parse(&mut r, limits, &mut pointer).map_err(|(mark, message)| {
        vec![LoadError {
            line: mark.line,
            column: mark.column,
            pointer,
            help: if message.starts_with("duplicate") {
                "a duplicated key silently drops one of its values (an `x-idempotent: false` among them); merge the two entries into one".into()
            } else if message.starts_with("the document nests") {
                super::load::TOO_DEEP_HELP.into()
            } else {
                "fix the JSON syntax at this position".into()
            },
            message: if message.starts_with("duplicate") || message.starts_with("the document nests") { message } else { format!("not valid JSON: {message}") },
        }]
    })
}

fn parse(r: &mut Reader, limits: &Limits, pointer: &mut String) -> Result<Node, Fail> {
    let mut stack: Vec<Frame> = Vec::new();
    loop {
        // Parse one value (or open a container).
        r.skip_ws();
        let mark = r.mark();
        let value = match r.peek() {
            None => return r.fail("unexpected end of input"),
            Some(b'{') | Some(b'[') => {
                if stack.len() >= limits.max_depth {
                    return r.fail(format!(
                        "the document nests deeper than {} levels",
                        limits.max_depth
                    ));
                }
                let is_map = r.peek() == Some(b'{');
                r.pos += 1;
                r.skip_ws();
                let close = if is_map { b'}' } else { b']' };
                if r.peek() == Some(close) {
                    r.pos += 1;
                    Some(if is_map {
                        Value::Map(Vec::new())
                    } else {
                        Value::Seq(Vec::new())
                    })
                } else {
                    if is_map {
                        let (key, key_mark) = read_key(r)?;
                        pointer_enter(pointer, &key);
                        stack.push(Frame::Map(
                            Vec::new(),
                            mark,
                            pointer.len() - 1 - crate::diag::pointer_token(&key).len(),
                            Some((key, key_mark)),
                            KeySet::default(),
                        ));
                    } else {
                        let len = pointer.len();
                        pointer.push_str("/0");
                        stack.push(Frame::Seq(Vec::new(), mark, len));
                    }
                    None
                }
            }
            Some(b'"') => Some(Value::String(r.string()?)),
            Some(b't') => Some(r.expect_word("true", Value::Bool(true))?),
            Some(b'f') => Some(r.expect_word("false", Value::Bool(false))?),
            Some(b'n') => Some(r.expect_word("null", Value::Null)?),
            Some(b'-' | b'0'..=b'9') => Some(r.number()?),
            Some(_) => return r.fail("unexpected character; expected a JSON value"),
        };
        let Some(value) = value else { continue };
        let mut node = Node { value, mark };
        // Attach the finished value, closing as many containers as end here.
        loop {
            let Some(frame) = stack.last_mut() else {
                r.skip_ws();
                if r.pos < r.text.len() {
                    return r.fail("unexpected content after the JSON document");
                }
                return Ok(node);
            };
            r.skip_ws();
            match frame {
                Frame::Seq(items, _, base) => {
                    items.push(node);
                    match r.peek() {
                        Some(b',') => {
                            r.pos += 1;
                            pointer.truncate(*base);
                            pointer.push('/');
                            pointer.push_str(&items.len().to_string());
                            break;
                        }
                        Some(b']') => r.pos += 1,
                        _ => return r.fail("expected `,` or `]`"),
                    }
                }
                Frame::Map(entries, _, base, pending, keys) => {
                    let (key, key_mark) = pending.take().expect("a key precedes every value");
                    entries.push(Entry {
                        key,
                        key_mark,
                        value: node,
                    });
                    match r.peek() {
                        Some(b',') => {
                            r.pos += 1;
                            pointer.truncate(*base);
                            let (key, key_mark) = read_key(r)?;
                            pointer_enter(pointer, &key);
                            if !keys.insert(entries, &key) {
                                return Err((key_mark, format!("duplicate mapping key {key:?}")));
                            }
                            *pending = Some((key, key_mark));
                            break;
                        }
                        Some(b'}') => r.pos += 1,
                        _ => return r.fail("expected `,` or `}`"),
                    }
                }
            }
            // The container closed: it becomes the value to attach next.
            node = match stack.pop().expect("non-empty") {
                Frame::Seq(items, mark, base) => {
                    pointer.truncate(base);
                    Node {
                        value: Value::Seq(items),
                        mark,
                    }
                }
                Frame::Map(entries, mark, base, _, _) => {
                    pointer.truncate(base);
                    Node {
                        value: Value::Map(entries),
                        mark,
                    }
                }
            };
        }
    }
}

fn pointer_enter(pointer: &mut String, key: &str) {
    pointer.push('/');
    pointer.push_str(&crate::diag::pointer_token(key));
}

fn read_key(r: &mut Reader) -> Result<(String, Mark), Fail> {
    r.skip_ws();
    let mark = r.mark();
    if r.peek() != Some(b'"') {
        return r.fail("expected a string key");
    }
    let key = r.string()?;
    r.skip_ws();
    if r.peek() != Some(b':') {
        return r.fail("expected `:` after the key");
    }
    r.pos += 1;
    Ok((key, mark))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Node {
        load(text, 0, &Limits::default()).unwrap()
    }

    #[test]
    fn reads_values_with_positions() {
        let n = ok("{\n  \"a\": [1, -2.5e3, true, null],\n  \"b\": {\"c\": \"\\ud83d\\udc4d \\u00e9\\n\"}\n}");
        assert_eq!(
            n.get("b").unwrap().get("c").unwrap().as_str(),
            Some("\u{1F44D} \u{e9}\n")
        );
        let a = n.get("a").unwrap();
        assert_eq!(a.items()[1].value, Value::Number("-2.5e3".into()));
        assert_eq!((a.mark.line, a.mark.column), (2, 8));
        assert_eq!(n.entries()[1].key_mark.line, 3);
    }

    #[test]
    fn duplicate_keys_are_reported_with_pointer() {
        let errs = load(
            "{\"paths\": {\"/a\": {}, \"/a\": {}}}",
            0,
            &Limits::default(),
        )
        .unwrap_err();
        assert!(errs[0].message.contains("duplicate"), "{errs:?}");
        assert_eq!(errs[0].pointer, "/paths/~1a");
    }

    #[test]
    fn rejects_bad_json() {
        for bad in [
            "",
            "{",
            "{\"a\" 1}",
            "[1,]",
            "{\"a\":1}x",
            "01",
            "\"\\x\"",
            "[tru]",
        ] {
            assert!(load(bad, 0, &Limits::default()).is_err(), "{bad}");
        }
    }

    #[test]
    fn depth_is_bounded_without_recursion() {
        let doc = "[".repeat(100_000) + &"]".repeat(100_000);
        let errs = load(&doc, 0, &Limits::default()).unwrap_err();
        assert!(errs[0].message.contains("nests deeper"));
    }

    #[test]
    fn empty_containers_and_nesting() {
        let n = ok("{\"a\": {}, \"b\": [], \"c\": [[{}], {\"d\": []}]}");
        assert_eq!(n.get("c").unwrap().items().len(), 2);
    }
}
