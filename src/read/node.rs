//! A minimal document tree: just enough of YAML/JSON to find what retry policy needs, with the
//! position of every node kept for diagnostics. Schemas are never interpreted, so 3.0/3.1 schema
//! differences cannot break reading; the loaders skip them (see [`Skip`]).

/// Index of a loaded source file in [`super::Files`].
pub type FileId = u32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    pub file: FileId,
    pub line: u32,
    pub column: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    /// A number, kept as written; retrygen never needs its value from a spec except for
    /// `x-retry-policy`, which parses it where it is validated.
    Number(String),
    String(String),
    Seq(Vec<Node>),
    Map(Vec<Entry>),
    /// A mapping some of whose entries were skipped (see [`Skip`]) and left out: what is here
    /// is read as in a [`Value::Map`]; a JSON pointer to a key not here may name a left-out one.
    PartialMap(Vec<Entry>),
    /// A mapping or sequence the loader validated (syntax, duplicate keys, limits) without
    /// building it, because retry policy never reads it (see [`Skip`]). A `$ref` that reaches
    /// into one makes the reader load that file again in full.
    Skipped,
}

/// A mapping key: one of [`Skip::READ_KEYS`] without a copy of its own, which is most of the
/// keys the kept tree holds, or the key as read.
pub type Key = std::borrow::Cow<'static, str>;

/// The [`Key`] of a key as read.
pub fn key(text: String) -> Key {
    match Skip::READ_KEYS.iter().find(|k| **k == text) {
        Some(known) => Key::Borrowed(known),
        None => Key::Owned(text),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub key: Key,
    pub key_mark: Mark,
    pub value: Node,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub value: Value,
    pub mark: Mark,
}

impl Node {
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Value::Map(entries) | Value::PartialMap(entries) => {
                entries.iter().find(|e| e.key == key).map(|e| &e.value)
            }
            Value::Skipped => {
                // Reading into a skipped subtree would silently find nothing: the reader only
                // reaches skipped nodes through `$ref`, which reloads the file in full.
                debug_assert!(false, "read {key:?} inside a skipped subtree");
                None
            }
            _ => None,
        }
    }

    pub fn entries(&self) -> &[Entry] {
        match &self.value {
            Value::Map(entries) | Value::PartialMap(entries) => entries,
            _ => &[],
        }
    }

    pub fn items(&self) -> &[Node] {
        match &self.value {
            Value::Seq(items) => items,
            _ => &[],
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn is_map(&self) -> bool {
        matches!(self.value, Value::Map(_) | Value::PartialMap(_))
    }

    /// A short name of the node's kind for "expected X, found Y" messages.
    pub fn kind(&self) -> &'static str {
        match &self.value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Seq(_) => "a sequence",
            Value::Map(_) | Value::PartialMap(_) | Value::Skipped => "a mapping",
        }
    }

    /// Follows a JSON pointer's decoded tokens from this node.
    pub fn pointer<'a>(&'a self, tokens: &[String]) -> Pointed<'a> {
        let mut node = self;
        for token in tokens {
            node = match &node.value {
                Value::Map(_) => match node.get(token) {
                    Some(next) => next,
                    None => return Pointed::Missing,
                },
                Value::PartialMap(_) => match node.get(token) {
                    Some(next) => next,
                    None => return Pointed::Skipped,
                },
                Value::Seq(items) => {
                    // RFC 6901: array indices are decimal without leading zeros.
                    if token.is_empty() || (token.len() > 1 && token.starts_with('0')) {
                        return Pointed::Missing;
                    }
                    match token.parse::<usize>().ok().and_then(|i| items.get(i)) {
                        Some(next) => next,
                        None => return Pointed::Missing,
                    }
                }
                Value::Skipped => return Pointed::Skipped,
                _ => return Pointed::Missing,
            };
        }
        if node.value == Value::Skipped {
            return Pointed::Skipped;
        }
        Pointed::Found(node)
    }

    /// Number of nodes in this subtree (used to bound alias expansion).
    pub fn size(&self) -> usize {
        // A skipped subtree is never an alias target: the YAML loader loads in full when an
        // anchor or alias meets a skipped part.
        1 + match &self.value {
            Value::Seq(items) => items.iter().map(Node::size).sum(),
            Value::Map(entries) | Value::PartialMap(entries) => {
                entries.iter().map(|e| e.value.size()).sum()
            }
            _ => 0,
        }
    }
}

/// The node of a finished sequence. The kept tree lives through the read: no spare capacity.
pub fn sequence(mut items: Vec<Node>) -> Value {
    items.shrink_to_fit();
    Value::Seq(items)
}

/// The node of a finished mapping, partial when entries were left out.
pub fn mapping(mut entries: Vec<Entry>, left_out: &SkippedKeys) -> Value {
    entries.shrink_to_fit();
    if left_out.is_empty() {
        Value::Map(entries)
    } else {
        Value::PartialMap(entries)
    }
}

/// Where a JSON pointer leads.
#[derive(Debug, PartialEq)]
pub enum Pointed<'a> {
    Found(&'a Node),
    Missing,
    /// Into a subtree the loader skipped: load the file again in full and look again.
    Skipped,
}

impl<'a> Pointed<'a> {
    pub fn found(self) -> Option<&'a Node> {
        match self {
            Pointed::Found(node) => Some(node),
            _ => None,
        }
    }
}

/// Where a container sits, for [`Skip`]: whether it is the value of a named map's key, and
/// whether it lies inside an `x-` extension.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Context {
    pub named: bool,
    pub extension: bool,
}

impl Context {
    /// The root of the document: an OpenAPI object, whose keys are fixed.
    pub const DOCUMENT: Context = Context {
        named: false,
        extension: false,
    };

    /// The root of a referenced file, which may map names (a file of parameters) as well as be
    /// an object: its own keys are kept, whatever they are.
    pub const REFERENCED: Context = Context {
        named: true,
        extension: false,
    };

    /// The context of the container that is the value of `key` in a mapping with this context.
    pub fn of_value(self, key: &str) -> Context {
        Context {
            named: Skip::is_named_map(key),
            extension: self.extension || Skip::is_extension(key),
        }
    }

    /// The context of an item of a sequence with this context.
    pub fn of_item(self) -> Context {
        Context {
            named: false,
            extension: self.extension,
        }
    }

    /// Whether the container value of `key`, in a mapping with this context, is skipped.
    pub fn skips(self, key: &str) -> bool {
        Skip::value_of(key, self.named, self.extension)
    }
}

/// What the loaders skip: the value of every key the reader never asks for (schemas, examples,
/// request bodies, documentation, vendor extensions), unless it sits where keys are names the
/// document's author chose (a path, a response code, a server variable or a component called
/// `example`) or inside an `x-` extension the reader reads (`x-retry-policy`). Skipping is off
/// when overlays apply, because they address the whole tree.
///
/// The reader never asks a mapping for a key outside [`Skip::READ_KEYS`] (a test checks its
/// source), so what it reads is the same either way; a `$ref` into a skipped part reloads the
/// file in full (the slow path).
pub struct Skip;

impl Skip {
    /// Every key whose value the reader reads, in any object it walks.
    pub const READ_KEYS: [&'static str; 32] = [
        "$ref",
        "openapi",
        "swagger",
        "basePath",
        "servers",
        "url",
        "variables",
        "default",
        "paths",
        "components",
        "pathItems",
        "parameters",
        "responses",
        "content",
        "produces",
        "name",
        "in",
        "operationId",
        "x-idempotent",
        "x-retry",
        "x-retry-policy",
        "x-retry-stream",
        "additionalOperations",
        "get",
        "put",
        "post",
        "delete",
        "options",
        "head",
        "patch",
        "trace",
        "query",
    ];

    /// Keys whose value maps names chosen by the document's author to objects.
    const NAMED_MAPS: [&'static str; 20] = [
        "paths",
        "webhooks",
        "variables",
        "responses",
        "content",
        "additionalOperations",
        "parameters",
        "pathItems",
        "headers",
        "callbacks",
        "links",
        "examples",
        "schemas",
        "definitions",
        "securitySchemes",
        "securityDefinitions",
        "requestBodies",
        "encoding",
        "properties",
        "mediaTypes",
    ];

    /// Whether the value of `key` is skipped, in a mapping that is itself the value of a named
    /// map's key (`in_named_map`) or lies inside an extension (`in_extension`).
    pub fn value_of(key: &str, in_named_map: bool, in_extension: bool) -> bool {
        !in_named_map && !in_extension && !Self::READ_KEYS.contains(&key)
    }

    /// Whether the mapping that is the value of `key` maps user-chosen names.
    pub fn is_named_map(key: &str) -> bool {
        Self::NAMED_MAPS.contains(&key)
    }

    pub fn is_extension(key: &str) -> bool {
        key.starts_with("x-")
    }
}

/// The keys of the entries a mapping left out (see [`Value::PartialMap`]), kept as hashes for
/// duplicate detection: a repeated hash is a duplicate key or, rarely, a collision; either way
/// the loader loads the file again in full, which tells the two apart.
#[derive(Debug, Default)]
pub struct SkippedKeys {
    hashes: Vec<u64>,
    /// All of them once there are many, so that a mapping with a million keys stays linear.
    large: Option<std::collections::HashSet<u64>>,
}

impl SkippedKeys {
    /// Records `key`; false when its hash was seen in this mapping before.
    pub fn insert(&mut self, key: &[u8]) -> bool {
        // FNV-1a: keys are short, and a collision only costs the slow path.
        let hash = key.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        if let Some(set) = &mut self.large {
            return set.insert(hash);
        }
        if self.hashes.contains(&hash) {
            return false;
        }
        self.hashes.push(hash);
        if self.hashes.len() > KeySet::SCAN_LIMIT {
            self.large = Some(self.hashes.iter().copied().collect());
        }
        true
    }

    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }
}

/// The keys of the open mappings of a subtree being skipped, for duplicate detection without a
/// tree: one list, each mapping's keys after its parent's; a mapping that grows past a scan
/// moves its keys into a set of its own, so a mapping with a million keys costs linear time.
pub struct OpenKeys<K> {
    keys: Vec<K>,
}

/// One open mapping of [`OpenKeys`].
pub struct MappingKeys<K> {
    start: usize,
    large: Option<std::collections::HashSet<K>>,
}

impl<K> Default for OpenKeys<K> {
    fn default() -> Self {
        OpenKeys { keys: Vec::new() }
    }
}

impl<K: Eq + std::hash::Hash> OpenKeys<K> {
    /// A mapping opening inside the innermost open one.
    pub fn open(&self) -> MappingKeys<K> {
        MappingKeys {
            start: self.keys.len(),
            large: None,
        }
    }

    /// Records `key` in `mapping`, the innermost open one; false when it is already there.
    pub fn insert(&mut self, mapping: &mut MappingKeys<K>, key: K) -> bool {
        if let Some(set) = &mut mapping.large {
            return set.insert(key);
        }
        if self.keys[mapping.start..].contains(&key) {
            return false;
        }
        if self.keys.len() - mapping.start >= KeySet::SCAN_LIMIT {
            let mut set: std::collections::HashSet<K> = self.keys.drain(mapping.start..).collect();
            set.insert(key);
            mapping.large = Some(set);
        } else {
            self.keys.push(key);
        }
        true
    }

    /// The innermost open mapping ends.
    pub fn close(&mut self, mapping: MappingKeys<K>) {
        self.keys.truncate(mapping.start);
    }
}

/// The keys of one mapping being built, for duplicate detection: a scan while the mapping is
/// small, a hash set once it grows, so a mapping with a million keys costs linear time.
#[derive(Debug, Default)]
pub struct KeySet {
    large: Option<std::collections::HashSet<String>>,
}

impl KeySet {
    pub(crate) const SCAN_LIMIT: usize = 32;

    /// Records `key`; false when `entries` (the mapping so far) already holds it.
    pub fn insert(&mut self, entries: &[Entry], key: &str) -> bool {
        if let Some(set) = &mut self.large {
            return set.insert(key.to_string());
        }
        if entries.iter().any(|e| e.key == key) {
            return false;
        }
        if entries.len() >= Self::SCAN_LIMIT {
            self.large = Some(
                entries
                    .iter()
                    .map(|e| e.key.to_string())
                    .chain([key.to_string()])
                    .collect(),
            );
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key the reader's walk asks for is one the loaders keep: a key read by name that
    /// `Skip` skipped would silently read as absent.
    #[test]
    fn the_reader_reads_only_keys_the_loaders_keep() {
        let sources = [
            include_str!("openapi.rs"),
            include_str!("refs.rs"),
            include_str!("mod.rs"),
        ];
        let mut found = Vec::new();
        for source in sources {
            for pattern in [".get(\"", "\"x-", "key == \""] {
                for (at, _) in source.match_indices(pattern) {
                    let start = at + pattern.len() - 1;
                    let start = if pattern == "\"x-" { at } else { start };
                    let rest = &source[start + 1..];
                    let key = &rest[..rest.find('"').expect("a closing quote")];
                    found.push(key.to_string());
                }
            }
        }
        for method in [
            "get", "put", "post", "delete", "options", "head", "patch", "trace",
        ] {
            found.push(method.to_string());
        }
        assert!(found.len() > 20, "{found:?}");
        for key in &found {
            if key == "x-" {
                continue; // `starts_with("x-")`: the reader passes over extensions
            }
            assert!(
                Skip::READ_KEYS.contains(&key.as_str()),
                "the reader reads {key:?}, which the loaders skip"
            );
        }
    }

    #[test]
    fn named_maps_and_extensions_keep_their_values() {
        let document = Context::DOCUMENT;
        assert!(document.skips("info") && document.skips("x-codeSamples"));
        assert!(!document.skips("paths") && !document.skips("x-retry-policy"));
        let variables = document.of_value("servers").of_item().of_value("variables");
        assert!(!variables.skips("example"));
        let variable = variables.of_value("example");
        assert!(variable.skips("description") && !variable.skips("default"));
        let policy = document.of_value("x-retry-policy");
        assert!(!policy.skips("description"));
        assert!(!Context::REFERENCED.skips("schema"));
    }
}
