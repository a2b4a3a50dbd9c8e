//! The segment trie that `classify` walks. Built once here, emitted as data into every language,
//! so matching costs one map lookup per path segment whatever the size of the API.

use super::path::{Piece, Segment};
use super::Operation;
use crate::percent::percent_decode;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct MatchNode {
    /// Decoded literal segment -> child node, sorted by bytes.
    pub literals: Vec<(String, usize)>,
    /// Mixed segments (`{name}.{ext}`) in match order: more literal text first, then by bytes.
    pub mixed: Vec<(Vec<Piece>, usize)>,
    /// The child for a whole-segment parameter.
    pub param: Option<usize>,
    /// Method -> index into the operation table, for paths that end here.
    pub operations: Vec<(String, usize)>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Matcher {
    pub nodes: Vec<MatchNode>,
}

#[derive(Default)]
struct Building {
    literals: BTreeMap<String, usize>,
    mixed: Vec<(Vec<Piece>, usize)>,
    param: Option<usize>,
    operations: BTreeMap<String, usize>,
}

/// Mixed pieces with literal text decoded and parameter names blanked, so equivalent segments
/// share a node.
fn mixed_key(pieces: &[Piece]) -> Vec<Piece> {
    pieces
        .iter()
        .map(|p| match p {
            Piece::Literal(l) => Piece::Literal(percent_decode(l).into_owned()),
            Piece::Param(_) => Piece::Param(String::new()),
        })
        .collect()
}

fn literal_len(pieces: &[Piece]) -> usize {
    pieces
        .iter()
        .map(|p| {
            if let Piece::Literal(l) = p {
                l.len()
            } else {
                0
            }
        })
        .sum()
}

impl Matcher {
    /// Builds the trie. Operations come in table order; when two claim the same node and method
    /// (equivalent templates, reported as an error by the model) the first wins.
    pub fn build(operations: &[Operation]) -> Matcher {
        let mut nodes: Vec<Building> = vec![Building::default()];
        for (index, op) in operations.iter().enumerate() {
            let mut at = 0;
            for segment in &op.template.segments {
                let next = nodes.len();
                let node = &mut nodes[at];
                let (child, created) = match segment {
                    Segment::Literal(l) => {
                        let key = percent_decode(l);
                        match node.literals.get(key.as_ref()) {
                            Some(&c) => (c, false),
                            None => {
                                node.literals.insert(key.into_owned(), next);
                                (next, true)
                            }
                        }
                    }
                    Segment::Param(_) => match node.param {
                        Some(c) => (c, false),
                        None => {
                            node.param = Some(next);
                            (next, true)
                        }
                    },
                    Segment::Mixed(pieces) => {
                        let key = mixed_key(pieces);
                        match node.mixed.iter().find(|(k, _)| *k == key) {
                            Some(&(_, c)) => (c, false),
                            None => {
                                node.mixed.push((key, next));
                                (next, true)
                            }
                        }
                    }
                };
                if created {
                    nodes.push(Building::default());
                }
                at = child;
            }
            nodes[at]
                .operations
                .entry(op.method.clone())
                .or_insert(index);
        }
        let nodes = nodes
            .into_iter()
            .map(|mut b| {
                b.mixed.sort_by(|a, b| {
                    literal_len(&b.0)
                        .cmp(&literal_len(&a.0))
                        .then_with(|| a.0.cmp(&b.0))
                });
                MatchNode {
                    literals: b.literals.into_iter().collect(),
                    mixed: b.mixed,
                    param: b.param,
                    operations: b.operations.into_iter().collect(),
                }
            })
            .collect();
        Matcher { nodes }
    }
}

/// A mixed segment matches when its literal pieces appear in order and each parameter covers at
/// least one character (docs/contract.md section 2, step 8.2).
pub fn mixed_matches(segment: &str, pieces: &[Piece]) -> bool {
    fn at(seg: &str, pieces: &[Piece]) -> bool {
        match pieces.split_first() {
            None => seg.is_empty(),
            Some((Piece::Literal(l), rest)) => {
                seg.strip_prefix(l.as_str()).is_some_and(|r| at(r, rest))
            }
            Some((Piece::Param(_), rest)) => {
                // Try every split that leaves the parameter at least one character.
                seg.char_indices()
                    .skip(1)
                    .map(|(i, _)| i)
                    .chain([seg.len()])
                    .filter(|&i| i > 0)
                    .any(|i| at(&seg[i..], rest))
            }
        }
    }
    at(segment, pieces)
}

impl Matcher {
    /// The node where a request path ends, trying literal, then mixed, then parameter children,
    /// depth first with backtracking.
    pub fn find(&self, segments: &[String]) -> Option<usize> {
        self.find_from(0, segments)
    }

    fn find_from(&self, node: usize, segments: &[String]) -> Option<usize> {
        let n = &self.nodes[node];
        let Some((first, rest)) = segments.split_first() else {
            return (!n.operations.is_empty()).then_some(node);
        };
        if let Ok(i) = n.literals.binary_search_by(|(k, _)| k.as_str().cmp(first)) {
            if let Some(found) = self.find_from(n.literals[i].1, rest) {
                return Some(found);
            }
        }
        for (pieces, child) in &n.mixed {
            if mixed_matches(first, pieces) {
                if let Some(found) = self.find_from(*child, rest) {
                    return Some(found);
                }
            }
        }
        match n.param {
            Some(child) if !first.is_empty() => self.find_from(child, rest),
            _ => None,
        }
    }
}
