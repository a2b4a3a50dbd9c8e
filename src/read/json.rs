//! A JSON reader producing the same [`Node`] tree as the YAML loader, with positions. JSON gets
//! its own reader because YAML parsers reject the UTF-16 surrogate-pair escapes (`\ud83d\udc4d`)
//! that JSON allows and real documents use, and because it is several times faster on the
//! multi-megabyte documents retrygen is run on in every build.

use super::load::{Limits, LoadError};
use super::node::{
    mapping, sequence, Context, Entry, FileId, KeySet, MappingKeys, Mark, Node, OpenKeys,
    SkippedKeys, Value,
};
use std::borrow::Cow;

struct Reader<'a> {
    /// The document, as text for slicing strings out of it and as bytes for scanning.
    source: &'a str,
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
    Seq(Vec<Node>, Mark, usize, Context),
    Map(
        Vec<Entry>,
        Mark,
        usize,
        Option<(String, Mark)>,
        KeySet,
        Context,
        SkippedKeys,
    ),
}

/// An open container of a subtree being skipped.
enum SkipFrame<'a> {
    Seq,
    Map(MappingKeys<Cow<'a, [u8]>>),
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
            // We only stopped at ASCII bytes, which are character boundaries.
            out.push_str(&self.source[start..self.pos]);
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
        self.skip_number()?;
        let text = std::str::from_utf8(&self.text[start..self.pos]).expect("ASCII");
        Ok(Value::Number(text.to_string()))
    }

    /// Moves past a valid number, or fails where it starts.
    fn skip_number(&mut self) -> Result<(), Fail> {
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
        Ok(())
    }

    /// Moves past a string (at its opening quote) checking it as [`Reader::string`] does, and
    /// returns its content when `want` is set: the bytes as they lie when it has no escape,
    /// decoded otherwise.
    fn skip_string(&mut self, want: bool) -> Result<Option<Cow<'a, [u8]>>, ()> {
        let start = self.pos;
        self.pos += 1;
        loop {
            let Some(&b) = self.text.get(self.pos) else {
                return Err(());
            };
            match b {
                b'"' => {
                    self.pos += 1;
                    return Ok(want.then(|| Cow::Borrowed(&self.text[start + 1..self.pos - 1])));
                }
                b'\\' => break,
                0..=0x1F => return Err(()),
                _ => self.pos += 1,
            }
        }
        // An escape: decode with the building reader, which checks every escape.
        self.pos = start;
        let decoded = self.string().map_err(|_| ())?;
        Ok(want.then(|| Cow::Owned(decoded.into_bytes())))
    }

    /// Moves past the mapping or sequence at the current position, nested `depth` containers
    /// deep, checking everything the building parser checks (syntax, duplicate keys, nesting)
    /// without building anything. Fails on any problem; the caller then parses in full to report
    /// it exactly.
    fn skip_container(&mut self, depth: usize, max_depth: usize) -> Result<(), ()> {
        let mut stack: Vec<SkipFrame<'a>> = Vec::new();
        let mut keys: OpenKeys<Cow<'a, [u8]>> = OpenKeys::default();
        loop {
            self.skip_ws();
            match self.peek() {
                Some(open @ (b'{' | b'[')) => {
                    if depth + stack.len() >= max_depth {
                        return Err(());
                    }
                    self.pos += 1;
                    self.skip_ws();
                    let close = if open == b'{' { b'}' } else { b']' };
                    if self.peek() == Some(close) {
                        self.pos += 1;
                    } else if open == b'{' {
                        stack.push(SkipFrame::Map(keys.open()));
                        self.skip_key(&mut stack, &mut keys)?;
                        continue;
                    } else {
                        stack.push(SkipFrame::Seq);
                        continue;
                    }
                }
                Some(b'"') => {
                    self.skip_string(false)?;
                }
                Some(b't') => self.skip_word(b"true")?,
                Some(b'f') => self.skip_word(b"false")?,
                Some(b'n') => self.skip_word(b"null")?,
                Some(b'-' | b'0'..=b'9') => self.skip_number().map_err(|_| ())?,
                _ => return Err(()),
            }
            // A value ended: close the containers that end here.
            loop {
                self.skip_ws();
                let next = self.peek();
                match stack.last() {
                    None => return Ok(()),
                    Some(SkipFrame::Seq) => match next {
                        Some(b',') => {
                            self.pos += 1;
                            break;
                        }
                        Some(b']') => {
                            self.pos += 1;
                            stack.pop();
                        }
                        _ => return Err(()),
                    },
                    Some(SkipFrame::Map(_)) => match next {
                        Some(b',') => {
                            self.pos += 1;
                            self.skip_key(&mut stack, &mut keys)?;
                            break;
                        }
                        Some(b'}') => {
                            self.pos += 1;
                            if let Some(SkipFrame::Map(mapping)) = stack.pop() {
                                keys.close(mapping);
                            }
                        }
                        _ => return Err(()),
                    },
                }
            }
        }
    }

    /// Reads a key of the skipped mapping on top of `stack` and its `:`, failing on a duplicate.
    fn skip_key(
        &mut self,
        stack: &mut [SkipFrame<'a>],
        keys: &mut OpenKeys<Cow<'a, [u8]>>,
    ) -> Result<(), ()> {
        self.skip_ws();
        if self.peek() != Some(b'"') {
            return Err(());
        }
        let key = self.skip_string(true)?.expect("asked for the key");
        self.skip_ws();
        if self.peek() != Some(b':') {
            return Err(());
        }
        self.pos += 1;
        let Some(SkipFrame::Map(mapping)) = stack.last_mut() else {
            unreachable!("keys are read in mappings")
        };
        if keys.insert(mapping, key) {
            Ok(())
        } else {
            Err(())
        }
    }

    fn skip_word(&mut self, word: &[u8]) -> Result<(), ()> {
        if self.text[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(())
        }
    }
}

/// Parses one JSON document. Iterative, so nesting costs heap, not stack, up to `max_depth`.
/// With `skip` (the context of the root: [`Context::DOCUMENT`] or [`Context::REFERENCED`]), the
/// values [`super::node::Skip`] names are validated but not built; any problem found then makes
/// it parse again in full, so every diagnostic is the one the full parse gives.
pub fn load(
    text: &str,
    file: FileId,
    limits: &Limits,
    skip: Option<Context>,
) -> Result<Node, Vec<LoadError>> {
    let mut r = Reader {
        source: text,
        text: text.as_bytes(),
        pos: 0,
        line: 1,
        line_start: 0,
        column_at: 0,
        column: 0,
        file,
    };
    let mut pointer = String::new();
    let parsed = parse(&mut r, limits, &mut pointer, skip);
    if skip.is_some() && parsed.is_err() {
        return load(text, file, limits, None);
    }
    parsed.map_err(|(mark, message)| {
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

fn parse(
    r: &mut Reader,
    limits: &Limits,
    pointer: &mut String,
    skip: Option<Context>,
) -> Result<Node, Fail> {
    let mut stack: Vec<Frame> = Vec::new();
    loop {
        // Parse one value (or open a container).
        r.skip_ws();
        let mark = r.mark();
        // Where the value sits: the context a container opened here gets, and whether it is one
        // to skip.
        let (context, skipped) = match stack.last() {
            None => (skip.unwrap_or_default(), false),
            Some(Frame::Seq(.., outer)) => (outer.of_item(), false),
            Some(Frame::Map(_, _, _, pending, _, outer, _)) => {
                let key = &pending.as_ref().expect("a key precedes every value").0;
                (outer.of_value(key), skip.is_some() && outer.skips(key))
            }
        };
        let value = match r.peek() {
            None => return r.fail("unexpected end of input"),
            Some(b'{') | Some(b'[') if skipped => {
                if r.skip_container(stack.len(), limits.max_depth).is_err() {
                    // The full parse that follows reports the problem.
                    return r.fail("invalid skipped subtree");
                }
                Some(Value::Skipped)
            }
            Some(b'"') if skipped => {
                if r.skip_string(false).is_err() {
                    return r.fail("invalid skipped string");
                }
                Some(Value::Skipped)
            }
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
                        let mut skipped = SkippedKeys::default();
                        if skip.is_some() && context.skips(&key) {
                            skipped.insert(key.as_bytes());
                        }
                        stack.push(Frame::Map(
                            Vec::new(),
                            mark,
                            pointer.len() - 1 - crate::diag::pointer_token(&key).len(),
                            Some((key, key_mark)),
                            KeySet::default(),
                            context,
                            skipped,
                        ));
                    } else {
                        let len = pointer.len();
                        pointer.push_str("/0");
                        stack.push(Frame::Seq(Vec::new(), mark, len, context));
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
                Frame::Seq(items, _, base, _) => {
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
                Frame::Map(entries, _, base, pending, keys, context, skipped) => {
                    let (key, key_mark) = pending.take().expect("a key precedes every value");
                    // A skipped value is left out; its key is remembered by `skipped`.
                    if node.value != Value::Skipped {
                        entries.push(Entry {
                            key: super::node::key(key),
                            key_mark,
                            value: node,
                        });
                    }
                    match r.peek() {
                        Some(b',') => {
                            r.pos += 1;
                            pointer.truncate(*base);
                            let (key, key_mark) = read_key(r)?;
                            pointer_enter(pointer, &key);
                            // A key and its duplicate are skipped alike: compare each with its own.
                            let fresh = if skip.is_some() && context.skips(&key) {
                                skipped.insert(key.as_bytes())
                            } else {
                                keys.insert(entries, &key)
                            };
                            if !fresh {
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
                Frame::Seq(items, mark, base, _) => {
                    pointer.truncate(base);
                    Node {
                        value: sequence(items),
                        mark,
                    }
                }
                Frame::Map(entries, mark, base, _, _, _, skipped) => {
                    pointer.truncate(base);
                    Node {
                        value: mapping(entries, &skipped),
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
        load(text, 0, &Limits::default(), None).unwrap()
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
            None,
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
            assert!(load(bad, 0, &Limits::default(), None).is_err(), "{bad}");
        }
    }

    #[test]
    fn depth_is_bounded_without_recursion() {
        let doc = "[".repeat(100_000) + &"]".repeat(100_000);
        let errs = load(&doc, 0, &Limits::default(), None).unwrap_err();
        assert!(errs[0].message.contains("nests deeper"));
    }

    #[test]
    fn empty_containers_and_nesting() {
        let n = ok("{\"a\": {}, \"b\": [], \"c\": [[{}], {\"d\": []}]}");
        assert_eq!(n.get("c").unwrap().items().len(), 2);
    }
}
