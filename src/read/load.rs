//! Turns YAML or JSON text into a [`Node`] tree with positions, enforcing the limits that make
//! reading untrusted documents safe: nesting depth, alias expansion, duplicate keys.

use super::node::{Entry, FileId, KeySet, Mark, Node, Value};
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// Bounds on what one document may make retrygen do. Documented in docs/limits.md.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Deepest nesting of mappings and sequences.
    pub max_depth: usize,
    /// Total nodes that alias references may copy into the tree ("billion laughs").
    pub max_alias_nodes: usize,
    /// Largest document accepted, in bytes.
    pub max_bytes: u64,
    /// Longest chain of `$ref`s followed to reach one object.
    pub max_ref_chain: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_depth: 256,
            max_alias_nodes: 100_000,
            max_bytes: 256 * 1024 * 1024,
            max_ref_chain: 64,
        }
    }
}

/// A problem found while loading, positioned in the file being loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadError {
    pub line: u32,
    pub column: u32,
    pub pointer: String,
    pub message: String,
    pub help: String,
}

pub(crate) const TOO_DEEP_HELP: &str =
    "retrygen refuses such documents to bound memory and stack use; flatten the structure or check the file is really an OpenAPI document";

enum Frame {
    Seq {
        items: Vec<Node>,
        mark: Mark,
        anchor: usize,
        pointer_len: usize,
    },
    Map {
        entries: Vec<Entry>,
        mark: Mark,
        anchor: usize,
        pending_key: Option<(String, Mark)>,
        keys: KeySet,
        pointer_len: usize,
    },
}

struct Builder {
    file: FileId,
    limits: Limits,
    stack: Vec<Frame>,
    anchors: Vec<(usize, Node)>,
    alias_nodes: usize,
    root: Option<Node>,
    /// JSON pointer of the node being built, for diagnostics.
    pointer: String,
    errors: Vec<LoadError>,
}

fn mark_of(file: FileId, m: &Marker) -> Mark {
    Mark {
        file,
        line: m.line() as u32,
        column: m.col() as u32 + 1,
    }
}

/// YAML 1.2 core schema resolution of plain scalars; quoted scalars are always strings, so the
/// string "false" never passes for a boolean.
fn plain_scalar(text: String) -> Value {
    match text.as_str() {
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        t if is_number(t) => Value::Number(text),
        _ => Value::String(text),
    }
}

fn is_number(t: &str) -> bool {
    let body = t.strip_prefix(['-', '+']).unwrap_or(t);
    if body.is_empty() {
        return false;
    }
    if matches!(body, ".inf" | ".Inf" | ".INF") || matches!(t, ".nan" | ".NaN" | ".NAN") {
        return true;
    }
    if let Some(hex) = body.strip_prefix("0x") {
        return !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit());
    }
    if let Some(oct) = body.strip_prefix("0o") {
        return !oct.is_empty() && oct.bytes().all(|b| (b'0'..=b'7').contains(&b));
    }
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (int, frac) = match mantissa.find('.') {
        Some(i) => (&mantissa[..i], Some(&mantissa[i + 1..])),
        None => (mantissa, None),
    };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if !digits(int)
        || !frac.map_or(true, digits)
        || (int.is_empty() && frac.map_or(true, str::is_empty))
    {
        return false;
    }
    match exponent {
        None => true,
        Some(e) => {
            let e = e.strip_prefix(['-', '+']).unwrap_or(e);
            !e.is_empty() && digits(e)
        }
    }
}

impl Builder {
    fn error(&mut self, mark: Mark, message: String, help: &str) {
        self.errors.push(LoadError {
            line: mark.line,
            column: mark.column,
            pointer: self.pointer.clone(),
            message,
            help: help.to_string(),
        });
    }

    fn depth_ok(&mut self, mark: Mark) -> bool {
        if self.stack.len() >= self.limits.max_depth {
            self.error(
                mark,
                format!(
                    "the document nests deeper than {} levels",
                    self.limits.max_depth
                ),
                TOO_DEEP_HELP,
            );
            return false;
        }
        true
    }

    /// Called with a key scalar or a finished value; places it into the enclosing container.
    fn finish(&mut self, node: Node, anchor: usize) {
        if anchor != 0 {
            self.anchors.push((anchor, node.clone()));
        }
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame::Seq { items, .. }) => {
                items.push(node);
                self.pop_pointer_token();
            }
            Some(Frame::Map {
                entries,
                pending_key,
                ..
            }) => match pending_key.take() {
                Some((key, key_mark)) => {
                    entries.push(Entry {
                        key,
                        key_mark,
                        value: node,
                    });
                    self.pop_pointer_token();
                }
                None => {
                    let key = match node.value {
                        Value::String(s) | Value::Number(s) => s,
                        Value::Bool(b) => b.to_string(),
                        Value::Null => String::from("null"),
                        Value::Seq(_) | Value::Map(_) => {
                            let mark = node.mark;
                            self.error(
                                mark,
                                "a mapping key is not a scalar".into(),
                                "use plain string keys",
                            );
                            String::new()
                        }
                    };
                    let key_mark = node.mark;
                    let Some(Frame::Map {
                        entries,
                        pending_key,
                        keys,
                        ..
                    }) = self.stack.last_mut()
                    else {
                        unreachable!()
                    };
                    let duplicate = !keys.insert(entries, &key);
                    *pending_key = Some((key.clone(), key_mark));
                    self.pointer.push('/');
                    self.pointer.push_str(&crate::diag::pointer_token(&key));
                    if duplicate {
                        self.error(
                            key_mark,
                            format!("duplicate mapping key {key:?}"),
                            "a duplicated key silently drops one of its values (an `x-idempotent: false` among them); merge the two entries into one",
                        );
                    }
                }
            },
        }
    }

    fn pop_pointer_token(&mut self) {
        if let Some(i) = self.pointer.rfind('/') {
            self.pointer.truncate(i);
        }
    }

    /// Before a value is started inside a sequence, extend the pointer with its index.
    fn enter_value(&mut self) {
        if let Some(Frame::Seq { items, .. }) = self.stack.last() {
            let index = items.len();
            self.pointer.push('/');
            self.pointer.push_str(&index.to_string());
        }
    }

    fn on_event(&mut self, event: Event, marker: Marker) -> bool {
        let mark = mark_of(self.file, &marker);
        match event {
            Event::Scalar(text, style, anchor, _tag) => {
                self.enter_value();
                let value = match style {
                    TScalarStyle::Plain => plain_scalar(text),
                    _ => Value::String(text),
                };
                self.finish(Node { value, mark }, anchor);
            }
            Event::SequenceStart(anchor, _) => {
                self.enter_value();
                if !self.depth_ok(mark) {
                    return false;
                }
                let pointer_len = self.pointer.len();
                self.stack.push(Frame::Seq {
                    items: Vec::new(),
                    mark,
                    anchor,
                    pointer_len,
                });
            }
            Event::MappingStart(anchor, _) => {
                self.enter_value();
                if !self.depth_ok(mark) {
                    return false;
                }
                let pointer_len = self.pointer.len();
                self.stack.push(Frame::Map {
                    entries: Vec::new(),
                    mark,
                    anchor,
                    pending_key: None,
                    keys: KeySet::default(),
                    pointer_len,
                });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (node, anchor, pointer_len) = match self.stack.pop() {
                    Some(Frame::Seq {
                        items,
                        mark,
                        anchor,
                        pointer_len,
                    }) => (
                        Node {
                            value: Value::Seq(items),
                            mark,
                        },
                        anchor,
                        pointer_len,
                    ),
                    Some(Frame::Map {
                        entries,
                        mark,
                        anchor,
                        pointer_len,
                        ..
                    }) => (
                        Node {
                            value: Value::Map(entries),
                            mark,
                        },
                        anchor,
                        pointer_len,
                    ),
                    None => return true,
                };
                self.pointer.truncate(pointer_len);
                self.finish(node, anchor);
            }
            Event::Alias(id) => {
                self.enter_value();
                let Some(target) = self
                    .anchors
                    .iter()
                    .rev()
                    .find(|(a, _)| *a == id)
                    .map(|(_, n)| n)
                else {
                    self.error(
                        mark,
                        "alias to an unknown anchor".into(),
                        "define the anchor before using it",
                    );
                    return false;
                };
                let size = target.size();
                self.alias_nodes = self.alias_nodes.saturating_add(size);
                if self.alias_nodes > self.limits.max_alias_nodes {
                    self.error(
                        mark,
                        format!("YAML aliases expand to more than {} nodes", self.limits.max_alias_nodes),
                        "this is how \"billion laughs\" documents exhaust memory; expand the anchors by hand or use $ref",
                    );
                    return false;
                }
                let mut copy = target.clone();
                copy.mark = mark;
                self.finish(copy, 0);
            }
            Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart
            | Event::DocumentEnd
            | Event::Nothing => {}
        }
        true
    }
}

/// Loads the first document of `text`. JSON is read as the YAML 1.2 subset it is.
pub fn load(text: &str, file: FileId, limits: &Limits) -> Result<Node, Vec<LoadError>> {
    let mut parser = Parser::new_from_str(text);
    let mut builder = Builder {
        file,
        limits: *limits,
        stack: Vec::new(),
        anchors: Vec::new(),
        alias_nodes: 0,
        root: None,
        pointer: String::new(),
        errors: Vec::new(),
    };
    let mut documents = 0;
    loop {
        match parser.next_token() {
            Ok((event, marker)) => {
                match event {
                    Event::StreamEnd => break,
                    Event::DocumentStart => {
                        documents += 1;
                        if documents > 1 {
                            builder.error(
                                mark_of(file, &marker),
                                "the file holds more than one YAML document".into(),
                                "an OpenAPI description is a single document; remove the `---` separator and what follows",
                            );
                            break;
                        }
                    }
                    _ => {}
                }
                if !builder.on_event(event, marker) {
                    break;
                }
            }
            Err(e) => {
                let m = e.marker();
                let mark = mark_of(file, m);
                if e.info().contains("recursion limit") {
                    // The parser's own bound on flow nesting; report it like ours.
                    builder.error(
                        mark,
                        format!(
                            "the document nests deeper than {} levels",
                            limits.max_depth.min(256)
                        ),
                        TOO_DEEP_HELP,
                    );
                } else {
                    builder.error(
                        mark,
                        format!("not valid YAML or JSON: {}", e.info()),
                        "fix the syntax at this position",
                    );
                }
                break;
            }
        }
    }
    if !builder.errors.is_empty() {
        // Dropping a deep partial tree iteratively would need care; the depth limit keeps the
        // recursive drop shallow enough.
        return Err(builder.errors);
    }
    Ok(builder.root.unwrap_or(Node {
        value: Value::Null,
        mark: Mark {
            file,
            line: 1,
            column: 1,
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_ok(text: &str) -> Node {
        load(text, 0, &Limits::default()).expect("loads")
    }

    #[test]
    fn plain_booleans_are_booleans_and_quoted_ones_are_strings() {
        let n = load_ok("a: false\nb: 'false'\nc: \"true\"\nd: yes\n");
        assert_eq!(n.get("a").unwrap().value, Value::Bool(false));
        assert_eq!(n.get("b").unwrap().value, Value::String("false".into()));
        assert_eq!(n.get("c").unwrap().value, Value::String("true".into()));
        assert_eq!(n.get("d").unwrap().value, Value::String("yes".into()));
    }

    #[test]
    fn json_reads_as_yaml() {
        let n = load_ok(r#"{"openapi": "3.1.0", "x": true, "n": 1.5e3, "s": "a\u2028b"}"#);
        assert_eq!(n.get("x").unwrap().value, Value::Bool(true));
        assert_eq!(n.get("n").unwrap().value, Value::Number("1.5e3".into()));
        assert_eq!(n.get("s").unwrap().as_str(), Some("a\u{2028}b"));
    }

    #[test]
    fn positions_are_one_based() {
        let n = load_ok("a:\n  b: 1\n");
        let b = n.get("a").unwrap().get("b").unwrap();
        assert_eq!((b.mark.line, b.mark.column), (2, 6));
    }

    #[test]
    fn duplicate_keys_are_errors_with_pointer() {
        let errs = load("paths:\n  /a: {}\n  /a: {}\n", 0, &Limits::default()).unwrap_err();
        assert_eq!(errs.len(), 1);
        assert_eq!((errs[0].line, errs[0].column), (3, 3));
        assert_eq!(errs[0].pointer, "/paths/~1a");
        assert!(errs[0].message.contains("duplicate mapping key"));
    }

    #[test]
    fn alias_expansion_is_bounded() {
        let mut doc = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            let refs = vec![format!("*a{}", i - 1); 10].join(", ");
            doc.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        let errs = load(&doc, 0, &Limits::default()).unwrap_err();
        assert!(errs[0].message.contains("aliases expand"), "{errs:?}");
    }

    #[test]
    fn nesting_is_bounded() {
        let doc = "[".repeat(10_000) + &"]".repeat(10_000);
        let errs = load(&doc, 0, &Limits::default()).unwrap_err();
        assert!(errs[0].message.contains("nests deeper"), "{errs:?}");
    }

    #[test]
    fn numbers() {
        for t in [
            "1", "-2", "1.5", ".5", "1e3", "0x1F", "0o7", ".inf", "-.inf", ".nan",
        ] {
            assert!(is_number(t), "{t}");
        }
        for t in ["", "-", "1.2.3", "e3", "0x", "abc", "1e", "."] {
            assert!(!is_number(t), "{t}");
        }
    }
}
