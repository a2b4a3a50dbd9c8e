//! Turns YAML or JSON text into a [`Node`] tree with positions, enforcing the limits that make
//! reading untrusted documents safe: nesting depth, alias expansion, duplicate keys.

use super::node::{
    mapping, sequence, Context, Entry, FileId, KeySet, MappingKeys, Mark, Node, OpenKeys,
    SkippedKeys, Value,
};
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
        context: Context,
    },
    Map {
        entries: Vec<Entry>,
        mark: Mark,
        anchor: usize,
        pending_key: Option<(String, Mark)>,
        keys: KeySet,
        pointer_len: usize,
        context: Context,
        /// The keys of the entries left out because their values were skipped.
        skipped: SkippedKeys,
    },
}

/// A container being skipped (see [`super::node::Skip`]): its events are checked for what the
/// building loader would report (duplicate keys, nesting) and dropped.
struct Skipping {
    mark: Mark,
    frames: Vec<SkipFrame>,
    keys: OpenKeys<String>,
}

enum SkipFrame {
    Seq,
    Map {
        keys: MappingKeys<String>,
        expecting_key: bool,
    },
}

/// Why a skipping load stopped: the document needs the building loader (an anchor, an alias or
/// a complex key in a skipped part, or a problem it must report exactly).
struct LoadInFull;

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
    /// The context of the root when the values [`super::node::Skip`] names are skipped.
    skip: Option<Context>,
    skipping: Option<Skipping>,
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

/// The text of a mapping key as duplicates are found by; None for a mapping or sequence.
fn key_text(value: Value) -> Option<String> {
    match value {
        Value::String(s) | Value::Number(s) => Some(s),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => Some(String::from("null")),
        Value::Seq(_) | Value::Map(_) | Value::PartialMap(_) | Value::Skipped => None,
    }
}

/// [`key_text`] of a scalar without resolving it first: only the null and boolean spellings of
/// a plain scalar change; a number keeps its text.
fn plain_key_text(text: String, style: TScalarStyle) -> String {
    if style != TScalarStyle::Plain {
        return text;
    }
    match text.as_str() {
        "" | "~" | "null" | "Null" | "NULL" => String::from("null"),
        "true" | "True" | "TRUE" => String::from("true"),
        "false" | "False" | "FALSE" => String::from("false"),
        _ => text,
    }
}

fn scalar_value(text: String, style: TScalarStyle) -> Value {
    match style {
        TScalarStyle::Plain => plain_scalar(text),
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
                    // A skipped value is left out; its key is remembered by `skipped`.
                    if node.value != Value::Skipped {
                        entries.push(Entry {
                            key: super::node::key(key),
                            key_mark,
                            value: node,
                        });
                    }
                    self.pop_pointer_token();
                }
                None => {
                    let mark = node.mark;
                    let key = key_text(node.value).unwrap_or_else(|| {
                        self.error(
                            mark,
                            "a mapping key is not a scalar".into(),
                            "use plain string keys",
                        );
                        String::new()
                    });
                    let key_mark = node.mark;
                    let skip = self.skip.is_some();
                    let Some(Frame::Map {
                        entries,
                        pending_key,
                        keys,
                        context,
                        skipped,
                        ..
                    }) = self.stack.last_mut()
                    else {
                        unreachable!()
                    };
                    // A key and its duplicate are skipped alike: compare each with its own. A
                    // repeated hash (duplicate or collision) is reported, and the skipping load
                    // then loads in full, which reports only a real duplicate.
                    let duplicate = if skip && context.skips(&key) {
                        !skipped.insert(key.as_bytes())
                    } else {
                        !keys.insert(entries, &key)
                    };
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

    /// Where a value starting now sits (the context it gives a container), and whether it is
    /// one to skip.
    fn container_context(&self) -> (Context, bool) {
        match self.stack.last() {
            None => (self.skip.unwrap_or_default(), false),
            Some(Frame::Seq { context, .. }) => (context.of_item(), false),
            Some(Frame::Map {
                pending_key: Some((key, _)),
                context,
                ..
            }) => (
                context.of_value(key),
                self.skip.is_some() && context.skips(key),
            ),
            // A container as a key: the building loader reports it.
            Some(Frame::Map { .. }) => (Context::default(), false),
        }
    }

    /// One event inside a skipped container; the end of the outermost one finishes the
    /// skipped node.
    fn skip_event(&mut self, event: Event) -> Result<(), LoadInFull> {
        let max_depth = self.limits.max_depth;
        let open = self.stack.len();
        let skipping = self.skipping.as_mut().expect("called while skipping");
        let opens = match event {
            Event::Scalar(text, style, anchor, _) => {
                if anchor != 0 {
                    return Err(LoadInFull);
                }
                if let Some(SkipFrame::Map {
                    keys,
                    expecting_key,
                }) = skipping.frames.last_mut()
                {
                    if *expecting_key && !skipping.keys.insert(keys, plain_key_text(text, style)) {
                        return Err(LoadInFull);
                    }
                    *expecting_key = !*expecting_key;
                }
                return Ok(());
            }
            Event::SequenceStart(anchor, _) => (anchor, SkipFrame::Seq),
            Event::MappingStart(anchor, _) => (
                anchor,
                SkipFrame::Map {
                    keys: skipping.keys.open(),
                    expecting_key: true,
                },
            ),
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some(SkipFrame::Map { keys, .. }) = skipping.frames.pop() {
                    skipping.keys.close(keys);
                }
                if skipping.frames.is_empty() {
                    let mark = skipping.mark;
                    self.skipping = None;
                    self.finish(
                        Node {
                            value: Value::Skipped,
                            mark,
                        },
                        0,
                    );
                }
                return Ok(());
            }
            _ => return Err(LoadInFull),
        };
        let (anchor, frame) = opens;
        if anchor != 0 || open + skipping.frames.len() >= max_depth {
            return Err(LoadInFull);
        }
        if let Some(SkipFrame::Map { expecting_key, .. }) = skipping.frames.last_mut() {
            if *expecting_key {
                return Err(LoadInFull); // a complex key
            }
            *expecting_key = true;
        }
        skipping.frames.push(frame);
        Ok(())
    }

    /// Starts skipping the container whose start event is at `mark`; the caller checked that
    /// its place is one to skip.
    fn start_skipping(&mut self, mark: Mark, map: bool) {
        let keys = OpenKeys::default();
        self.skipping = Some(Skipping {
            mark,
            frames: vec![if map {
                SkipFrame::Map {
                    keys: keys.open(),
                    expecting_key: true,
                }
            } else {
                SkipFrame::Seq
            }],
            keys,
        });
    }

    fn on_event(&mut self, event: Event, marker: Marker) -> Result<bool, LoadInFull> {
        if self.skipping.is_some() {
            self.skip_event(event)?;
            return Ok(true);
        }
        let mark = mark_of(self.file, &marker);
        match event {
            Event::Scalar(text, style, anchor, _tag) => {
                let skipped = anchor == 0 && self.container_context().1;
                self.enter_value();
                let value = if skipped {
                    Value::Skipped
                } else {
                    scalar_value(text, style)
                };
                self.finish(Node { value, mark }, anchor);
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                let map = matches!(event, Event::MappingStart(..));
                let (context, skipped) = self.container_context();
                self.enter_value();
                if !self.depth_ok(mark) {
                    return Ok(false);
                }
                if skipped {
                    if anchor != 0 {
                        return Err(LoadInFull);
                    }
                    self.start_skipping(mark, map);
                    return Ok(true);
                }
                let pointer_len = self.pointer.len();
                self.stack.push(if map {
                    Frame::Map {
                        entries: Vec::new(),
                        mark,
                        anchor,
                        pending_key: None,
                        keys: KeySet::default(),
                        pointer_len,
                        context,
                        skipped: SkippedKeys::default(),
                    }
                } else {
                    Frame::Seq {
                        items: Vec::new(),
                        mark,
                        anchor,
                        pointer_len,
                        context,
                    }
                });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (node, anchor, pointer_len) = match self.stack.pop() {
                    Some(Frame::Seq {
                        items,
                        mark,
                        anchor,
                        pointer_len,
                        ..
                    }) => (
                        Node {
                            value: sequence(items),
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
                        skipped,
                        ..
                    }) => (
                        Node {
                            value: mapping(entries, &skipped),
                            mark,
                        },
                        anchor,
                        pointer_len,
                    ),
                    None => return Ok(true),
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
                    if self.skip.is_some() {
                        // The anchor may lie in a skipped part.
                        return Err(LoadInFull);
                    }
                    self.error(
                        mark,
                        "alias to an unknown anchor".into(),
                        "define the anchor before using it",
                    );
                    return Ok(false);
                };
                let size = target.size();
                self.alias_nodes = self.alias_nodes.saturating_add(size);
                if self.alias_nodes > self.limits.max_alias_nodes {
                    self.error(
                        mark,
                        format!("YAML aliases expand to more than {} nodes", self.limits.max_alias_nodes),
                        "this is how \"billion laughs\" documents exhaust memory; expand the anchors by hand or use $ref",
                    );
                    return Ok(false);
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
        Ok(true)
    }
}

/// Loads the first document of `text`. JSON is read as the YAML 1.2 subset it is. With `skip`
/// (the context of the root), the values [`super::node::Skip`] names are checked but not built;
/// an anchor, an alias or a complex key in them, or any problem, makes it load again in full,
/// so every diagnostic is the one the full load gives.
pub fn load(
    text: &str,
    file: FileId,
    limits: &Limits,
    skip: Option<Context>,
) -> Result<Node, Vec<LoadError>> {
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
        skip,
        skipping: None,
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
                match builder.on_event(event, marker) {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(LoadInFull) => return load(text, file, limits, None),
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
    if skip.is_some() && !builder.errors.is_empty() {
        return load(text, file, limits, None);
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
        load(text, 0, &Limits::default(), None).expect("loads")
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
        let errs = load("paths:\n  /a: {}\n  /a: {}\n", 0, &Limits::default(), None).unwrap_err();
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
        let errs = load(&doc, 0, &Limits::default(), None).unwrap_err();
        assert!(errs[0].message.contains("aliases expand"), "{errs:?}");
    }

    #[test]
    fn nesting_is_bounded() {
        let doc = "[".repeat(10_000) + &"]".repeat(10_000);
        let errs = load(&doc, 0, &Limits::default(), None).unwrap_err();
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
