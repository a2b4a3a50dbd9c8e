//! The request mix every language's bench program times: concrete method and path pairs made
//! from a spec's operations, with what `classify` and the baseline scan must return for each.

use anyhow::{bail, Context, Result};
use regex::Regex;
use retrygen::model::path::{Piece, Segment};
use retrygen::model::{Api, Operation, ReplayClass};

/// splitmix64: a small deterministic generator, so every run times the same requests.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// An id-like value: a letter, then lower-case letters and digits.
    pub fn token(&mut self) -> String {
        const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
        let len = 6 + self.below(7);
        let mut s = String::with_capacity(len);
        s.push((b'a' + self.below(26) as u8) as char);
        for _ in 1..len {
            s.push(CHARS[self.below(CHARS.len())] as char);
        }
        s
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A random operation with concrete parameter values.
    Hit,
    /// An operation whose path has a literal segment where a parameter would also match
    /// (`/users/me` beside `/users/{id}`).
    Tie,
    /// A random operation, with the base path in front and a query string behind.
    BasePath,
    /// Unknown paths, extra segments and methods a path does not declare.
    Miss,
}

pub struct Request {
    pub method: String,
    pub path: String,
    pub kind: Kind,
    /// What `classify` must return: the operation index, and the class.
    pub operation: Option<usize>,
    pub class: ReplayClass,
    /// What the baseline scan must return.
    pub scanned: Option<usize>,
}

pub struct Mix {
    pub requests: Vec<Request>,
    /// Candidate requests on which the table-order scan and `classify` disagree about
    /// non-replayability; left out of the mix (see docs/benchmarks.md).
    pub excluded: Vec<(String, String)>,
    /// Operations with a literal-versus-parameter tie.
    pub tie_candidates: usize,
    /// The class of every operation of the table.
    pub operation_classes: Vec<ReplayClass>,
    pub base_path: String,
}

impl Mix {
    pub fn count(&self, kind: Kind) -> usize {
        self.requests.iter().filter(|r| r.kind == kind).count()
    }

    pub fn matched(&self) -> usize {
        self.requests
            .iter()
            .filter(|r| r.operation.is_some())
            .count()
    }

    /// Mean number of path segments per request, without query and base path.
    pub fn average_segments(&self) -> f64 {
        let total: usize = self
            .requests
            .iter()
            .map(|r| {
                let path = &r.path[..r.path.find(['?', '#']).unwrap_or(r.path.len())];
                let path = match path.strip_prefix(self.base_path.as_str()) {
                    Some(rest)
                        if !self.base_path.is_empty()
                            && (rest.is_empty() || rest.starts_with('/')) =>
                    {
                        rest
                    }
                    _ => path,
                };
                path.split('/').filter(|s| !s.is_empty()).count()
            })
            .sum();
        total as f64 / self.requests.len().max(1) as f64
    }

    /// The mix file the programs read: `METHOD<TAB>PATH` per line.
    pub fn file_text(&self) -> String {
        let mut s = String::new();
        for r in &self.requests {
            s.push_str(&r.method);
            s.push('\t');
            s.push_str(&r.path);
            s.push('\n');
        }
        s
    }
}

/// The baseline every SDK uses today, in Rust: `[method, anchored regex]` of every operation in
/// table order, first match wins, on the path without query, fragment and base path.
pub struct Scan {
    base_path: String,
    table: Vec<(String, Regex)>,
}

impl Scan {
    pub fn new(api: &Api) -> Result<Scan> {
        let table = api
            .operations
            .iter()
            .map(|op| {
                Regex::new(&op.pattern())
                    .map(|re| (op.method.clone(), re))
                    .with_context(|| format!("pattern {:?}", op.pattern()))
            })
            .collect::<Result<_>>()?;
        Ok(Scan {
            base_path: api.base_path.clone(),
            table,
        })
    }

    pub fn find(&self, method: &str, path: &str) -> Option<usize> {
        let path = &path[..path.find(['?', '#']).unwrap_or(path.len())];
        let path = match path.strip_prefix(self.base_path.as_str()) {
            Some(rest)
                if !self.base_path.is_empty() && (rest.is_empty() || rest.starts_with('/')) =>
            {
                rest
            }
            _ => path,
        };
        self.table
            .iter()
            .position(|(m, re)| m == method && re.is_match(path))
    }
}

fn concrete(op: &Operation, rng: &mut Rng, replace_literal: Option<usize>) -> String {
    if op.template.segments.is_empty() {
        return "/".into();
    }
    let mut out = String::new();
    for (i, segment) in op.template.segments.iter().enumerate() {
        out.push('/');
        match segment {
            _ if replace_literal == Some(i) => out.push_str(&format!("zq{}", rng.token())),
            Segment::Literal(l) => out.push_str(l),
            Segment::Param(_) => out.push_str(&rng.token()),
            Segment::Mixed(pieces) => {
                for piece in pieces {
                    match piece {
                        Piece::Literal(l) => out.push_str(l),
                        Piece::Param(_) => out.push_str(&rng.token()),
                    }
                }
            }
        }
    }
    out
}

/// Operations with a literal segment at a place where a parameter (or mixed) sibling would
/// also take the request: replacing the literal by an unknown value still finds an operation.
fn tie_candidates(api: &Api, rng: &mut Rng) -> Vec<usize> {
    api.operations
        .iter()
        .enumerate()
        .filter(|(_, op)| {
            op.template.segments.iter().enumerate().any(|(i, s)| {
                matches!(s, Segment::Literal(_))
                    && api
                        .classify(&op.method, &concrete(op, rng, Some(i)))
                        .operation
                        .is_some()
            })
        })
        .map(|(i, _)| i)
        .collect()
}

const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/// Builds `size` requests: 70% hits, 10% ties, 10% with base path and query, 10% misses,
/// shuffled. A candidate on which the table-order scan and `classify` disagree about whether
/// the request is non-replayable is recorded and replaced, so the mix times both on the same
/// answers.
pub fn build(api: &Api, size: usize, seed: u64) -> Result<Mix> {
    if api.operations.is_empty() {
        bail!("the spec has no operations");
    }
    let mut rng = Rng::new(seed);
    let scan = Scan::new(api)?;
    let ties = tie_candidates(api, &mut rng);
    let mut kinds: Vec<Kind> = (0..size)
        .map(|i| match i % 10 {
            7 if !ties.is_empty() => Kind::Tie,
            8 => Kind::BasePath,
            9 => Kind::Miss,
            _ => Kind::Hit,
        })
        .collect();
    for i in (1..kinds.len()).rev() {
        kinds.swap(i, rng.below(i + 1));
    }
    let ops = &api.operations;
    let mut requests = Vec::with_capacity(size);
    let mut excluded = Vec::new();
    let mut misses = 0usize;
    for kind in kinds {
        let mut attempts = 0;
        loop {
            attempts += 1;
            if attempts > 200 {
                bail!("cannot make a {kind:?} request on which the scan and classify agree");
            }
            let (method, path) = match kind {
                Kind::Hit => {
                    let op = &ops[rng.below(ops.len())];
                    (op.method.clone(), concrete(op, &mut rng, None))
                }
                Kind::Tie => {
                    let op = &ops[ties[rng.below(ties.len())]];
                    (op.method.clone(), concrete(op, &mut rng, None))
                }
                Kind::BasePath => {
                    let op = &ops[rng.below(ops.len())];
                    let path = concrete(op, &mut rng, None);
                    let path = if path == "/" && !api.base_path.is_empty() {
                        String::new()
                    } else {
                        path
                    };
                    (
                        op.method.clone(),
                        format!(
                            "{}{path}?limit=50&starting_after={}",
                            api.base_path,
                            rng.token()
                        ),
                    )
                }
                Kind::Miss => {
                    misses += 1;
                    let op = &ops[rng.below(ops.len())];
                    let missing: Vec<&str> = METHODS
                        .iter()
                        .copied()
                        .filter(|m| !ops.iter().any(|o| o.path == op.path && o.method == *m))
                        .collect();
                    match misses % 3 {
                        0 => (
                            METHODS[rng.below(METHODS.len())].to_string(),
                            format!("/zz-{}/{}", rng.token(), rng.token()),
                        ),
                        1 if !missing.is_empty() => (
                            missing[rng.below(missing.len())].to_string(),
                            concrete(op, &mut rng, None),
                        ),
                        _ => (
                            op.method.clone(),
                            format!("{}/no-such-{}", concrete(op, &mut rng, None), rng.token()),
                        ),
                    }
                }
            };
            let found = api.classify(&method, &path);
            let scanned = scan.find(&method, &path);
            let scan_class =
                scanned.map_or_else(|| ReplayClass::method_default(&method), |i| ops[i].class);
            let nr = |c: ReplayClass| c == ReplayClass::NonReplayable;
            if nr(found.class) != nr(scan_class) {
                excluded.push((method, path));
                continue;
            }
            requests.push(Request {
                method,
                path,
                kind,
                operation: found.operation,
                class: found.class,
                scanned,
            });
            break;
        }
    }
    Ok(Mix {
        requests,
        excluded,
        tie_candidates: ties.len(),
        operation_classes: ops.iter().map(|o| o.class).collect(),
        base_path: api.base_path.clone(),
    })
}

pub fn class_letter(class: ReplayClass) -> char {
    match class {
        ReplayClass::Idempotent => 'i',
        ReplayClass::Keyed => 'k',
        ReplayClass::NonReplayable => 'n',
        ReplayClass::NoRetry => 'r',
    }
}

#[cfg(test)]
mod tests {
    use super::{build, Kind, Scan};
    use retrygen::model::{ModelOptions, ReplayClass};

    #[test]
    fn the_mix_is_deterministic_and_checked() {
        let dir = std::env::temp_dir().join(format!("retrygen-mix-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("synthetic-100.json");
        let text = serde_json::to_string(&super::super::synth::document(100)).unwrap();
        std::fs::write(&path, text).unwrap();
        let (api, _) = retrygen::load_api(&path, &ModelOptions::default()).unwrap();
        let a = build(&api, 1000, 7).unwrap();
        let b = build(&api, 1000, 7).unwrap();
        assert_eq!(a.file_text(), b.file_text());
        assert_eq!(a.requests.len(), 1000);
        for kind in [Kind::Hit, Kind::Tie, Kind::BasePath, Kind::Miss] {
            assert!(a.count(kind) >= 90, "{kind:?}: {}", a.count(kind));
        }
        assert!(a.matched() < 1000 && a.matched() > 800);
        let scan = Scan::new(&api).unwrap();
        for r in &a.requests {
            let found = api.classify(&r.method, &r.path);
            assert_eq!((found.operation, found.class), (r.operation, r.class));
            assert_eq!(scan.find(&r.method, &r.path), r.scanned);
            let scan_class = r.scanned.map_or_else(
                || ReplayClass::method_default(&r.method),
                |i| api.operations[i].class,
            );
            assert_eq!(
                scan_class == ReplayClass::NonReplayable,
                r.class == ReplayClass::NonReplayable,
                "{} {}",
                r.method,
                r.path
            );
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
