//! A minimal document tree: just enough of YAML/JSON to find what retry policy needs, with the
//! position of every node kept for diagnostics. Schemas are loaded as opaque subtrees and never
//! interpreted, so 3.0/3.1 schema differences cannot break reading.

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
}

#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub key: String,
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
            Value::Map(entries) => entries.iter().find(|e| e.key == key).map(|e| &e.value),
            _ => None,
        }
    }

    pub fn entries(&self) -> &[Entry] {
        match &self.value {
            Value::Map(entries) => entries,
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
        matches!(self.value, Value::Map(_))
    }

    /// A short name of the node's kind for "expected X, found Y" messages.
    pub fn kind(&self) -> &'static str {
        match &self.value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Seq(_) => "a sequence",
            Value::Map(_) => "a mapping",
        }
    }

    /// Follows a JSON pointer's decoded tokens from this node.
    pub fn pointer<'a>(&'a self, tokens: &[String]) -> Option<&'a Node> {
        let mut node = self;
        for token in tokens {
            node = match &node.value {
                Value::Map(_) => node.get(token)?,
                Value::Seq(items) => {
                    // RFC 6901: array indices are decimal without leading zeros.
                    if token.is_empty() || (token.len() > 1 && token.starts_with('0')) {
                        return None;
                    }
                    items.get(token.parse::<usize>().ok()?)?
                }
                _ => return None,
            };
        }
        Some(node)
    }

    /// Number of nodes in this subtree (used to bound alias expansion).
    pub fn size(&self) -> usize {
        1 + match &self.value {
            Value::Seq(items) => items.iter().map(Node::size).sum(),
            Value::Map(entries) => entries.iter().map(|e| e.value.size()).sum(),
            _ => 0,
        }
    }
}

/// The keys of one mapping being built, for duplicate detection: a scan while the mapping is
/// small, a hash set once it grows, so a mapping with a million keys costs linear time.
#[derive(Debug, Default)]
pub struct KeySet {
    large: Option<std::collections::HashSet<String>>,
}

impl KeySet {
    const SCAN_LIMIT: usize = 32;

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
                    .map(|e| e.key.clone())
                    .chain([key.to_string()])
                    .collect(),
            );
        }
        true
    }
}
