//! `retrygen diff OLD NEW`: what a spec bump changes in retry behaviour. Both specs are
//! classified; operations are paired (same method and path, else the same operationId, else the
//! same method and an equivalent template), and every difference an SDK would feel is one
//! [`Change`], rated by whether it makes the SDK replay more ([`Risk::Riskier`]), less
//! ([`Risk::Safer`]) or neither. Matcher reach is checked by probing: each operation's concrete
//! path is classified by both APIs, so a request the old spec sent to one operation and the new
//! one sends elsewhere (a renamed template, a literal sibling that steals requests from a
//! parameter route) shows up even when no operation changed.

use crate::diag::Location;
use crate::model::path::{Piece, Segment};
use crate::model::policy::Policy;
use crate::model::{Api, Classification, Operation, ReplayClass};
use std::collections::{HashMap, HashSet};

/// How a change moves replay. Ordered riskiest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    Riskier,
    Safer,
    Neutral,
}

impl Risk {
    pub const ALL: [Risk; 3] = [Risk::Riskier, Risk::Safer, Risk::Neutral];

    pub fn name(self) -> &'static str {
        match self {
            Risk::Riskier => "riskier",
            Risk::Safer => "safer",
            Risk::Neutral => "neutral",
        }
    }

    /// The rating of a move from `old` to `new` on a scale where more means more replay.
    fn of<T: Ord>(old: T, new: T) -> Risk {
        match new.cmp(&old) {
            std::cmp::Ordering::Greater => Risk::Riskier,
            std::cmp::Ordering::Less => Risk::Safer,
            std::cmp::Ordering::Equal => Risk::Neutral,
        }
    }
}

/// What changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// An operation only the new spec has.
    Added,
    /// An operation only the old spec has.
    Removed,
    /// The same operation under another path template or method.
    Renamed,
    /// The same operation under another operationId.
    OperationId,
    /// Its replay class.
    Class,
    /// The idempotency key header it declares.
    IdempotencyHeader,
    /// The kind of source that decides its class (an annotation, or the method default).
    ReasonSource,
    /// Its stream attributes (contract v3, A1-A2): `none`, `streaming` or `resumable`.
    Stream,
    /// A request the old spec routed to one operation goes elsewhere in the new one.
    Reach,
    /// A retry policy value.
    Policy,
    /// The base path the matcher strips.
    BasePath,
    /// Several facets of one operation (class, key header, where its requests go, ...) rated
    /// together by their net effect; the facets are listed under it.
    Operation,
}

/// One facet of an operation's entry: what [`Change`] says, for one aspect.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Facet {
    /// The facet's own rating; the entry is rated by the net effect of its facets.
    pub risk: Risk,
    pub kind: Kind,
    pub old: Option<String>,
    pub new: Option<String>,
    pub message: String,
    pub location: Option<Location>,
}

/// One difference. `location` is in the new spec, except for removed operations (old spec).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Change {
    pub risk: Risk,
    pub kind: Kind,
    /// Upper-case method, for changes of one operation or request.
    pub method: Option<String>,
    /// The path template (new spec; old spec for removed operations) or, for `reach`, the
    /// concrete request path probed.
    pub path: Option<String>,
    pub operation_id: Option<String>,
    /// The value before and after (a class, a header name, a source, a policy value).
    pub old: Option<String>,
    pub new: Option<String>,
    /// One sentence saying what changed and what it does.
    pub message: String,
    pub location: Option<Location>,
    /// For an entry about one operation of both specs: each aspect that changed (at least one);
    /// the entry's `risk` is their net effect. Empty for the other entries (added, removed,
    /// reach from elsewhere, policy, base path).
    pub facets: Vec<Facet>,
}

impl Change {
    fn facet(&self) -> Facet {
        Facet {
            risk: self.risk,
            kind: self.kind,
            old: self.old.clone(),
            new: self.new.clone(),
            message: self.message.clone(),
            location: self.location.clone(),
        }
    }
}

/// The comparison of two classified APIs.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Report {
    pub old: String,
    pub new: String,
    /// Sorted riskiest first, then by path, method and kind.
    pub changes: Vec<Change>,
}

impl Report {
    pub fn count(&self, risk: Risk) -> usize {
        self.changes.iter().filter(|c| c.risk == risk).count()
    }
}

/// More replay is a higher rank: no_retry < non_replayable < keyed < idempotent.
fn replay_rank(class: ReplayClass) -> u8 {
    match class {
        ReplayClass::NoRetry => 0,
        ReplayClass::NonReplayable => 1,
        ReplayClass::Keyed => 2,
        ReplayClass::Idempotent => 3,
    }
}

fn class_risk(old: ReplayClass, new: ReplayClass) -> Risk {
    Risk::of(replay_rank(old), replay_rank(new))
}

/// A concrete request path for a template: parameters keep their `{name}`, which no literal
/// segment can equal, so the probe goes where any value of the parameter would.
pub fn probe_path(op: &Operation) -> String {
    if op.template.segments.is_empty() {
        return "/".into();
    }
    let mut out = String::new();
    for s in &op.template.segments {
        out.push('/');
        match s {
            Segment::Literal(l) => out.push_str(l),
            Segment::Param(p) => out.push_str(&format!("{{{p}}}")),
            Segment::Mixed(pieces) => {
                for piece in pieces {
                    match piece {
                        Piece::Literal(l) => out.push_str(l),
                        Piece::Param(p) => out.push_str(&format!("{{{p}}}")),
                    }
                }
            }
        }
    }
    out
}

/// Old and new operations paired: by method and path, then by operationId, then by method and
/// an equivalent template (a renamed parameter).
struct Pairing {
    old_to_new: Vec<Option<usize>>,
    new_to_old: Vec<Option<usize>>,
}

fn pair(old: &Api, new: &Api) -> Pairing {
    let mut p = Pairing {
        old_to_new: vec![None; old.operations.len()],
        new_to_old: vec![None; new.operations.len()],
    };
    let link = |p: &mut Pairing, o: usize, n: usize| {
        p.old_to_new[o] = Some(n);
        p.new_to_old[n] = Some(o);
    };
    let by_route: HashMap<(&str, &str), usize> = new
        .operations
        .iter()
        .enumerate()
        .map(|(i, op)| ((op.method.as_str(), op.path.as_str()), i))
        .collect();
    for (o, op) in old.operations.iter().enumerate() {
        if let Some(&n) = by_route.get(&(op.method.as_str(), op.path.as_str())) {
            if p.new_to_old[n].is_none() {
                link(&mut p, o, n);
            }
        }
    }
    let by_id: HashMap<&str, usize> = new
        .operations
        .iter()
        .enumerate()
        .filter(|(i, _)| p.new_to_old[*i].is_none())
        .filter_map(|(i, op)| op.operation_id.as_deref().map(|id| (id, i)))
        .collect();
    for (o, op) in old.operations.iter().enumerate() {
        if p.old_to_new[o].is_some() {
            continue;
        }
        if let Some(&n) = op.operation_id.as_deref().and_then(|id| by_id.get(id)) {
            if p.new_to_old[n].is_none() {
                link(&mut p, o, n);
            }
        }
    }
    let by_shape: HashMap<(&str, String), usize> = new
        .operations
        .iter()
        .enumerate()
        .filter(|(i, _)| p.new_to_old[*i].is_none())
        .map(|(i, op)| ((op.method.as_str(), op.template.shape()), i))
        .collect();
    for (o, op) in old.operations.iter().enumerate() {
        if p.old_to_new[o].is_some() {
            continue;
        }
        if let Some(&n) = by_shape.get(&(op.method.as_str(), op.template.shape())) {
            if p.new_to_old[n].is_none() {
                link(&mut p, o, n);
            }
        }
    }
    p
}

fn describe(api: &Api, c: Classification, method: &str) -> String {
    match c.operation {
        Some(i) => {
            let op = &api.operations[i];
            match &op.operation_id {
                Some(id) => format!("{id} ({} {}, {})", op.method, op.path, c.class.name()),
                None => format!("{} {} ({})", op.method, op.path, c.class.name()),
            }
        }
        None => format!(
            "no operation, so the {method} method default ({})",
            c.class.name()
        ),
    }
}

/// Compares two classified APIs. `old_name` and `new_name` are how the report names them.
pub fn diff(old: &Api, new: &Api, old_name: &str, new_name: &str) -> Report {
    let pairing = pair(old, new);
    let mut changes = Vec::new();
    // The facets of each paired operation: its own changes, then where its own requests go.
    let mut facets: Vec<Vec<Change>> = vec![Vec::new(); old.operations.len()];
    for (o, n) in pairing.old_to_new.iter().enumerate() {
        let old_op = &old.operations[o];
        match n {
            Some(n) => compare_operation(old_op, &new.operations[*n], &mut facets[o]),
            None => {
                let probe = probe_path(old_op);
                let now = new.classify(&old_op.method, &probe);
                changes.push(Change {
                    risk: class_risk(old_op.class, now.class),
                    kind: Kind::Removed,
                    method: Some(old_op.method.clone()),
                    path: Some(old_op.path.clone()),
                    operation_id: old_op.operation_id.clone(),
                    old: Some(old_op.class.name().into()),
                    new: None,
                    message: format!(
                        "removed; its requests ({} {probe}) now go to {}",
                        old_op.method,
                        describe(new, now, &old_op.method)
                    ),
                    location: Some(old_op.location.clone()),
                    facets: Vec::new(),
                });
            }
        }
    }
    for (n, o) in pairing.new_to_old.iter().enumerate() {
        if o.is_none() {
            let op = &new.operations[n];
            changes.push(Change {
                risk: Risk::Neutral,
                kind: Kind::Added,
                method: Some(op.method.clone()),
                path: Some(op.path.clone()),
                operation_id: op.operation_id.clone(),
                old: None,
                new: Some(op.class.name().into()),
                message: format!("added, {} ({})", op.class.name(), op.reason),
                location: Some(op.location.clone()),
                facets: Vec::new(),
            });
        }
    }
    for (change, own) in reach(old, new, &pairing) {
        match own {
            Some(o) => facets[o].push(change),
            None => changes.push(change),
        }
    }
    for (o, list) in facets.into_iter().enumerate() {
        if let Some(n) = pairing.old_to_new[o] {
            if !list.is_empty() {
                changes.push(entry(&old.operations[o], &new.operations[n], list));
            }
        }
    }
    if old.base_path != new.base_path {
        changes.push(Change {
            risk: Risk::Neutral,
            kind: Kind::BasePath,
            method: None,
            path: None,
            operation_id: None,
            old: Some(old.base_path.clone()),
            new: Some(new.base_path.clone()),
            message: format!(
                "base path {:?} -> {:?}: requests under the old one match no operation unless the SDK's base URL changes too",
                old.base_path, new.base_path
            ),
            location: None,
            facets: Vec::new(),
        });
    }
    compare_policy(&old.policy, &new.policy, &mut changes);
    changes.sort_by(|a, b| {
        (a.risk, &a.path, &a.method, a.kind).cmp(&(b.risk, &b.path, &b.method, b.kind))
    });
    Report {
        old: old_name.to_string(),
        new: new_name.to_string(),
        changes,
    }
}

fn compare_operation(o: &Operation, n: &Operation, changes: &mut Vec<Change>) {
    let change = |risk, kind, old: Option<String>, new: Option<String>, message: String| Change {
        risk,
        kind,
        method: Some(n.method.clone()),
        path: Some(n.path.clone()),
        operation_id: n.operation_id.clone(),
        old,
        new,
        message,
        location: Some(n.location.clone()),
        facets: Vec::new(),
    };
    if o.path != n.path || o.method != n.method {
        let how = if o.operation_id.is_some() && o.operation_id == n.operation_id {
            "matched by operationId"
        } else {
            "same requests"
        };
        changes.push(change(
            Risk::Neutral,
            Kind::Renamed,
            Some(format!("{} {}", o.method, o.path)),
            Some(format!("{} {}", n.method, n.path)),
            format!("renamed from {} {} ({how})", o.method, o.path),
        ));
    } else if o.operation_id != n.operation_id {
        changes.push(change(
            Risk::Neutral,
            Kind::OperationId,
            o.operation_id.clone(),
            n.operation_id.clone(),
            format!(
                "operationId {} -> {}; SDKs that look operations up by id must follow",
                o.operation_id.as_deref().unwrap_or("(none)"),
                n.operation_id.as_deref().unwrap_or("(none)")
            ),
        ));
    }
    if o.class != n.class {
        let mut c = change(
            class_risk(o.class, n.class),
            Kind::Class,
            Some(o.class.name().into()),
            Some(n.class.name().into()),
            format!(
                "class {} -> {}: {}",
                o.class.name(),
                n.class.name(),
                n.reason
            ),
        );
        c.location = Some(
            n.decided_by
                .at
                .clone()
                .unwrap_or_else(|| n.location.clone()),
        );
        changes.push(c);
    }
    let same_header = match (&o.idempotency_header, &n.idempotency_header) {
        (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
        (a, b) => a == b,
    };
    if !same_header {
        let (risk, message) = match (&o.idempotency_header, &n.idempotency_header) {
            (Some(a), None) => (
                Risk::Riskier,
                format!("idempotency key header {a} removed: the server no longer promises to deduplicate requests that carry it"),
            ),
            (None, Some(b)) => (
                Risk::Safer,
                format!("now declares the idempotency key header {b}"),
            ),
            (Some(a), Some(b)) => (
                Risk::Riskier,
                format!("idempotency key header {a} -> {b}: a key sent under the old name is no longer honoured"),
            ),
            (None, None) => unreachable!("equal headers were skipped"),
        };
        let mut c = change(
            risk,
            Kind::IdempotencyHeader,
            o.idempotency_header.clone(),
            n.idempotency_header.clone(),
            message,
        );
        if let Some(at) = &n.decided_by.key_at {
            c.location = Some(at.clone());
        }
        changes.push(c);
    }
    let (ostream, nstream) = (stream_name(o), stream_name(n));
    if ostream != nstream {
        // A resume re-sends the request: becoming resumable is more replay.
        let risk = Risk::of(o.resumable(), n.resumable());
        let why = match (o.resumable(), n.resumable()) {
            (false, true) => {
                "; a dropped stream is now resumed (the request is sent again with Last-Event-ID)"
            }
            (true, false) => "; a dropped stream is no longer resumed",
            _ => "",
        };
        let reason = n
            .reason
            .split_once("; streams ")
            .map_or(String::new(), |(_, words)| format!(": streams {words}"));
        let mut c = change(
            risk,
            Kind::Stream,
            Some(ostream.into()),
            Some(nstream.into()),
            format!("stream {ostream} -> {nstream}{why}{reason}"),
        );
        if let Some(stream) = &n.stream {
            c.location = Some(
                stream
                    .resume_at
                    .clone()
                    .unwrap_or_else(|| stream.at.clone()),
            );
        }
        changes.push(c);
    }
    let (os, ns) = (o.decided_by.source, n.decided_by.source);
    if os != ns {
        let risk = match (os.is_annotation(), ns.is_annotation()) {
            (true, false) => Risk::Riskier,
            (false, true) => Risk::Safer,
            _ => Risk::Neutral,
        };
        let message = if risk == Risk::Riskier {
            format!(
                "the annotation is gone ({}); the method default decides now",
                os.name()
            )
        } else {
            format!("decided by {} -> {}", os.name(), ns.name())
        };
        let mut c = change(
            risk,
            Kind::ReasonSource,
            Some(os.name().into()),
            Some(ns.name().into()),
            message,
        );
        c.location = Some(
            n.decided_by
                .at
                .clone()
                .unwrap_or_else(|| n.location.clone()),
        );
        changes.push(c);
    }
}

/// The stream attributes of an operation as one word: `none`, `streaming` or `resumable`.
fn stream_name(op: &Operation) -> &'static str {
    match (op.streaming(), op.resumable()) {
        (_, true) => "resumable",
        (true, false) => "streaming",
        (false, false) => "none",
    }
}

/// One entry for a paired operation: its only facet as it is, or several facets rated together.
fn entry(o: &Operation, n: &Operation, facets: Vec<Change>) -> Change {
    let risk = net_risk(n, &facets);
    if let [only] = facets.as_slice() {
        let mut c = only.clone();
        c.risk = risk;
        c.facets = vec![only.facet()];
        return c;
    }
    let mut what = if o.class == n.class {
        format!("class {} unchanged", n.class.name())
    } else {
        format!("class {} -> {}", o.class.name(), n.class.name())
    };
    let kinds: Vec<String> = facets
        .iter()
        .filter(|f| f.kind != Kind::Class)
        .map(|f| kind_name(f.kind))
        .collect();
    if !kinds.is_empty() {
        what.push_str(&format!("; also {}", kinds.join(", ")));
    }
    let location = facets
        .iter()
        .find(|f| f.kind == Kind::Class)
        .and_then(|f| f.location.clone())
        .or_else(|| Some(n.location.clone()));
    Change {
        risk,
        kind: Kind::Operation,
        method: Some(n.method.clone()),
        path: Some(n.path.clone()),
        operation_id: n.operation_id.clone(),
        old: Some(o.class.name().into()),
        new: Some(n.class.name().into()),
        message: format!("net {}: {what}", risk.name()),
        location,
        facets: facets.iter().map(Change::facet).collect(),
    }
}

/// What an SDK does differently, from the facets that change it: the class, the key header
/// when the operation is keyed now (SDKs send their key under it), and where the operation's own requests go. What decides the
/// class (`reason_source`) and names (`renamed`, `operation_id`) change nothing by themselves.
/// Facets pulling both ways rate riskier: when in doubt, the worst.
fn net_risk(n: &Operation, facets: &[Change]) -> Risk {
    // The header matters while SDKs send a key under it: when the operation is keyed now.
    let sends_key = n.class == ReplayClass::Keyed;
    let counted = facets.iter().filter(|f| match f.kind {
        Kind::Class | Kind::Reach | Kind::Stream => true,
        Kind::IdempotencyHeader => sends_key,
        _ => false,
    });
    let (mut riskier, mut safer) = (false, false);
    for f in counted {
        riskier |= f.risk == Risk::Riskier;
        safer |= f.risk == Risk::Safer;
    }
    match (riskier, safer) {
        (true, _) => Risk::Riskier,
        (false, true) => Risk::Safer,
        (false, false) => Risk::Neutral,
    }
}

/// Probes every operation's concrete path (old and new) in both APIs and reports requests the
/// old spec routed to an operation that the new one routes elsewhere or to the method default.
/// Each change comes with the old operation whose own request it is (its method and its own
/// probe path), when it is one: that reach is a facet of the operation's entry.
fn reach(old: &Api, new: &Api, pairing: &Pairing) -> Vec<(Change, Option<usize>)> {
    let mut changes = Vec::new();
    // Every concrete path, with every method either API knows: a literal sibling added for one
    // method also takes the other methods' requests away from the parameter route beside it.
    let mut methods: Vec<&str> = old
        .operations
        .iter()
        .chain(&new.operations)
        .map(|op| op.method.as_str())
        .collect();
    methods.sort_unstable();
    methods.dedup();
    let mut paths: Vec<String> = old
        .operations
        .iter()
        .chain(&new.operations)
        .map(probe_path)
        .collect();
    let mut seen = HashSet::new();
    paths.retain(|p| seen.insert(p.clone()));
    for path in &paths {
        for method in &methods {
            let before = old.classify(method, path);
            let after = new.classify(method, path);
            // Reach starts from an operation of the old spec; requests of removed operations
            // are reported with the removal.
            let Some(was) = before.operation else {
                continue;
            };
            let Some(expected) = pairing.old_to_new[was] else {
                continue;
            };
            if after.operation == Some(expected) {
                continue;
            }
            let location = new.operations[after.operation.unwrap_or(expected)]
                .location
                .clone();
            let own = (old.operations[was].method == *method
                && probe_path(&old.operations[was]) == *path)
                .then_some(was);
            changes.push((
                Change {
                    risk: class_risk(before.class, after.class),
                    kind: Kind::Reach,
                    method: Some(method.to_string()),
                    path: Some(path.clone()),
                    operation_id: after
                        .operation
                        .and_then(|i| new.operations[i].operation_id.clone()),
                    old: Some(before.class.name().into()),
                    new: Some(after.class.name().into()),
                    message: format!(
                        "went to {}, now goes to {}",
                        describe(old, before, method),
                        describe(new, after, method)
                    ),
                    location: Some(location),
                    facets: Vec::new(),
                },
                own,
            ));
        }
    }
    changes
}

fn statuses(list: &[u16]) -> String {
    list.iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn compare_policy(o: &Policy, n: &Policy, changes: &mut Vec<Change>) {
    let mut push = |risk, key: &str, old: String, new: String, why: &str| {
        changes.push(Change {
            risk,
            kind: Kind::Policy,
            method: None,
            path: None,
            operation_id: None,
            message: format!("x-retry-policy {key}: {old} -> {new}{why}"),
            old: Some(old),
            new: Some(new),
            location: None,
            facets: Vec::new(),
        })
    };
    if o.max_retries != n.max_retries {
        push(
            Risk::of(o.max_retries, n.max_retries),
            "max_retries",
            o.max_retries.to_string(),
            n.max_retries.to_string(),
            "",
        );
    }
    for (key, a, b, why) in [
        (
            "retryable_statuses",
            &o.retryable_statuses,
            &n.retryable_statuses,
            " (retried for replayable requests)",
        ),
        (
            "rejected_statuses",
            &o.rejected_statuses,
            &n.rejected_statuses,
            " (retried for every class but no_retry)",
        ),
    ] {
        if a != b {
            let added = b.iter().any(|s| !a.contains(s));
            let removed = a.iter().any(|s| !b.contains(s));
            let risk = if added {
                Risk::Riskier
            } else if removed {
                Risk::Safer
            } else {
                Risk::Neutral
            };
            push(risk, key, statuses(a), statuses(b), why);
        }
    }
    // Contract v3: a problem type that stopped and no longer does, or that retries now, is
    // more replay.
    for (key, a, b, more_replay_when_added, why) in [
        (
            "stop_problem_types",
            &o.stop_problem_types,
            &n.stop_problem_types,
            false,
            " (problem types that stop at once)",
        ),
        (
            "retry_problem_types",
            &o.retry_problem_types,
            &n.retry_problem_types,
            true,
            " (problem types retried for replayable requests)",
        ),
    ] {
        if a != b {
            let added = b.iter().any(|t| !a.contains(t));
            let removed = a.iter().any(|t| !b.contains(t));
            let risk = match (added, removed) {
                (true, _) if more_replay_when_added => Risk::Riskier,
                (_, true) if !more_replay_when_added => Risk::Riskier,
                (true, _) | (_, true) => Risk::Safer,
                (false, false) => Risk::Neutral,
            };
            push(risk, key, a.join(", "), b.join(", "), why);
        }
    }
    if o.throttling_statuses != n.throttling_statuses {
        push(
            Risk::Neutral,
            "throttling_statuses",
            statuses(&o.throttling_statuses),
            statuses(&n.throttling_statuses),
            " (the throttling backoff base and budget cost)",
        );
    }
    for (key, a, b) in [
        (
            "throttling_initial_backoff_ms",
            o.throttling_initial_backoff_ms,
            n.throttling_initial_backoff_ms,
        ),
        (
            "budget_throttling_cost",
            o.budget_throttling_cost,
            n.budget_throttling_cost,
        ),
    ] {
        if a != b {
            let show = |v: Option<u64>| v.map_or("none".to_string(), |v| v.to_string());
            push(Risk::Neutral, key, show(a), show(b), "");
        }
    }
    if o.idempotency_key_format != n.idempotency_key_format {
        push(
            Risk::Neutral,
            "idempotency_key_format",
            o.idempotency_key_format.name().into(),
            n.idempotency_key_format.name().into(),
            "",
        );
    }
    if o.deadline_ms != n.deadline_ms {
        // No deadline retries longest; a longer deadline allows more retries.
        let rank = |d: Option<u64>| d.unwrap_or(u64::MAX);
        let show = |d: Option<u64>| d.map_or("none".to_string(), |d| d.to_string());
        push(
            Risk::of(rank(o.deadline_ms), rank(n.deadline_ms)),
            "deadline_ms",
            show(o.deadline_ms),
            show(n.deadline_ms),
            "",
        );
    }
    if o.retry_after_cap_ms != n.retry_after_cap_ms {
        push(
            Risk::of(o.retry_after_cap_ms, n.retry_after_cap_ms),
            "retry_after_cap_ms",
            o.retry_after_cap_ms.to_string(),
            n.retry_after_cap_ms.to_string(),
            " (a higher cap retries where a lower one gives up)",
        );
    }
    for (key, a, b) in [
        (
            "initial_backoff_ms",
            o.initial_backoff_ms,
            n.initial_backoff_ms,
        ),
        ("max_backoff_ms", o.max_backoff_ms, n.max_backoff_ms),
    ] {
        if a != b {
            push(Risk::Neutral, key, a.to_string(), b.to_string(), "");
        }
    }
    if o.multiplier != n.multiplier {
        push(
            Risk::Neutral,
            "multiplier",
            o.multiplier.to_string(),
            n.multiplier.to_string(),
            "",
        );
    }
    if o.jitter != n.jitter {
        push(
            Risk::Neutral,
            "jitter",
            o.jitter.name().into(),
            n.jitter.name().into(),
            "",
        );
    }
}

/// `file:line:column #pointer`, escaped for a terminal.
fn place(at: &Location) -> String {
    let pointer = if at.pointer.is_empty() {
        "(document root)".to_string()
    } else {
        format!("#{}", at.pointer)
    };
    safe(&format!("{}:{}:{} {pointer}", at.file, at.line, at.column))
}

/// Control characters from a hostile spec are escaped so it cannot rewrite the terminal.
fn safe(s: &str) -> String {
    crate::emit::comment_safe(s)
}

fn kind_name(kind: Kind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn subject(c: &Change) -> String {
    let mut out = String::new();
    if let (Some(m), Some(p)) = (&c.method, &c.path) {
        out.push_str(&format!("{m} {p}"));
        if let Some(id) = &c.operation_id {
            out.push_str(&format!(" ({id})"));
        }
    }
    safe(&out)
}

fn summary(report: &Report) -> String {
    Risk::ALL
        .iter()
        .map(|r| format!("{} {}", report.count(*r), r.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Report {
    /// Grouped by risk, the riskiest first; each change on one line, its location (JSON
    /// pointer in the new spec, in the old one for removed operations) on the next.
    pub fn render_text(&self) -> String {
        let mut out = format!(
            "retrygen diff {} -> {}: {}\n",
            safe(&self.old),
            safe(&self.new),
            summary(self)
        );
        for risk in Risk::ALL {
            let group: Vec<&Change> = self.changes.iter().filter(|c| c.risk == risk).collect();
            if group.is_empty() {
                continue;
            }
            out.push_str(&format!("\n{} ({})\n", risk.name(), group.len()));
            for c in group {
                let kind = serde_json::to_value(c.kind).expect("plain enum");
                let kind = kind.as_str().unwrap_or_default();
                let subject = subject(c);
                if subject.is_empty() {
                    out.push_str(&format!("  {kind}: {}\n", safe(&c.message)));
                } else {
                    out.push_str(&format!("  {kind}: {subject}: {}\n", safe(&c.message)));
                }
                if let Some(at) = &c.location {
                    out.push_str(&format!("      at {}\n", place(at)));
                }
                if c.kind == Kind::Operation {
                    for f in &c.facets {
                        out.push_str(&format!(
                            "      - {} ({}): {}\n",
                            kind_name(f.kind),
                            f.risk.name(),
                            safe(&f.message)
                        ));
                    }
                } else if let [only] = c.facets.as_slice() {
                    if only.risk != c.risk {
                        out.push_str(&format!(
                            "      (this facet alone is {}; an SDK does the same as before)\n",
                            only.risk.name()
                        ));
                    }
                }
            }
        }
        if self.changes.is_empty() {
            out.push_str("no change in retry behaviour\n");
        }
        out
    }

    /// A PR comment: a summary line and one table row per change.
    pub fn render_markdown(&self) -> String {
        let md = |s: &str| safe(s).replace('|', "\\|").replace('`', "'");
        let mut out = format!(
            "### retrygen diff\n\n`{}` -> `{}`: {}\n",
            md(&self.old),
            md(&self.new),
            Risk::ALL
                .iter()
                .map(|r| {
                    let n = self.count(*r);
                    if *r == Risk::Riskier && n > 0 {
                        format!("**{n} {}**", r.name())
                    } else {
                        format!("{n} {}", r.name())
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        );
        if self.changes.is_empty() {
            out.push_str("\nNo change in retry behaviour.\n");
            return out;
        }
        out.push_str("\n| risk | change | operation | what | where |\n|---|---|---|---|---|\n");
        for c in &self.changes {
            let kind = serde_json::to_value(c.kind).expect("plain enum");
            let risk = if c.risk == Risk::Riskier {
                "**riskier**".to_string()
            } else {
                c.risk.name().to_string()
            };
            let subject = subject(c);
            let subject = if subject.is_empty() {
                "-".to_string()
            } else {
                format!("`{}`", md(&subject))
            };
            let place = c
                .location
                .as_ref()
                .map_or("-".to_string(), |at| format!("`{}`", md(&place(at))));
            let mut what = md(&c.message);
            if c.kind == Kind::Operation {
                for f in &c.facets {
                    what.push_str(&format!(
                        "<br>- {} ({}): {}",
                        kind_name(f.kind),
                        f.risk.name(),
                        md(&f.message)
                    ));
                }
            }
            out.push_str(&format!(
                "| {risk} | {} | {subject} | {what} | {place} |\n",
                kind.as_str().unwrap_or_default(),
            ));
        }
        out
    }

    /// The public JSON interface (README "retrygen diff --format json").
    pub fn render_json(&self) -> String {
        #[derive(serde::Serialize)]
        struct Summary {
            riskier: usize,
            safer: usize,
            neutral: usize,
        }
        #[derive(serde::Serialize)]
        struct Out<'a> {
            old: &'a str,
            new: &'a str,
            summary: Summary,
            changes: &'a [Change],
        }
        let mut s = serde_json::to_string_pretty(&Out {
            old: &self.old,
            new: &self.new,
            summary: Summary {
                riskier: self.count(Risk::Riskier),
                safer: self.count(Risk::Safer),
                neutral: self.count(Risk::Neutral),
            },
            changes: &self.changes,
        })
        .expect("plain data serializes");
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{build, ModelOptions};

    fn api(yaml: &str) -> Api {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spec.yaml");
        std::fs::write(&path, yaml).unwrap();
        let (raw, d) = crate::read::read(&path, &crate::read::Limits::default()).unwrap();
        assert!(!d.has_errors(), "{d:?}");
        build(&raw, "spec.yaml", &ModelOptions::default())
            .unwrap()
            .0
    }

    fn run(old: &str, new: &str) -> Vec<(Risk, Kind, String)> {
        diff(&api(old), &api(new), "old", "new")
            .changes
            .into_iter()
            .map(|c| (c.risk, c.kind, c.message))
            .collect()
    }

    /// An entry's rating and kind, with its facets' ratings and kinds.
    type Entry = (Risk, Kind, Vec<(Risk, Kind)>);

    fn entries(old: &str, new: &str) -> Vec<Entry> {
        diff(&api(old), &api(new), "old", "new")
            .changes
            .into_iter()
            .map(|c| {
                (
                    c.risk,
                    c.kind,
                    c.facets.iter().map(|f| (f.risk, f.kind)).collect(),
                )
            })
            .collect()
    }

    const BASE: &str = r#"
openapi: 3.1.0
paths:
  /things:
    post:
      operationId: createThing
      x-idempotent: false
      parameters:
        - {name: Idempotency-Key, in: header}
  /things/{id}:
    get: {operationId: getThing}
    put: {operationId: putThing, x-idempotent: false}
  /feed:
    get: {operationId: feed, x-retry: false}
"#;

    #[test]
    fn identical_specs_have_no_changes() {
        assert!(run(BASE, BASE).is_empty());
    }

    #[test]
    fn flipped_annotation_is_riskier() {
        let new = BASE.replace(
            "putThing, x-idempotent: false",
            "putThing, x-idempotent: true",
        );
        let changes = run(BASE, &new);
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert_eq!(changes[0].0, Risk::Riskier);
        assert_eq!(changes[0].1, Kind::Class);
    }

    #[test]
    fn dropped_annotation_lets_the_default_decide() {
        let new = BASE.replace("putThing, x-idempotent: false", "putThing");
        assert_eq!(
            entries(BASE, &new),
            vec![(
                Risk::Riskier,
                Kind::Operation,
                vec![
                    (Risk::Riskier, Kind::Class),
                    (Risk::Riskier, Kind::ReasonSource)
                ]
            )]
        );
    }

    #[test]
    fn dropped_key_header() {
        let new = BASE.replace(
            "      parameters:\n        - {name: Idempotency-Key, in: header}\n",
            "",
        );
        // No key and no retry any more: safer, though the header facet alone is riskier.
        assert_eq!(
            entries(BASE, &new),
            vec![(
                Risk::Safer,
                Kind::Operation,
                vec![
                    (Risk::Safer, Kind::Class),
                    (Risk::Riskier, Kind::IdempotencyHeader)
                ]
            )]
        );
    }

    #[test]
    fn no_retry_lifted_is_riskier() {
        let new = BASE.replace("feed, x-retry: false", "feed");
        let report = diff(&api(BASE), &api(&new), "old", "new");
        assert_eq!(report.changes[0].risk, Risk::Riskier);
        assert!(report.changes[0]
            .facets
            .iter()
            .any(|f| f.kind == Kind::Class && f.message.contains("no_retry -> idempotent")));
    }

    #[test]
    fn renamed_path_matched_by_operation_id_reports_where_old_requests_go() {
        let new = BASE.replace("/things:", "/v2/things:");
        let report = diff(&api(BASE), &api(&new), "old", "new");
        // One entry: the rename and where the old path's requests go now, rated by the latter.
        assert_eq!(report.changes.len(), 1, "{:?}", report.changes);
        let entry = &report.changes[0];
        assert_eq!(entry.kind, Kind::Operation);
        assert_eq!(
            entry.risk,
            Risk::Safer,
            "keyed -> POST default non_replayable"
        );
        assert!(entry.facets.iter().any(|f| f.kind == Kind::Renamed));
        let reach = entry.facets.iter().find(|f| f.kind == Kind::Reach).unwrap();
        assert!(
            reach.message.contains("POST method default"),
            "{}",
            reach.message
        );
    }

    /// The issue's case: `x-idempotent: true` removed from a POST makes it non_replayable. The
    /// annotation is gone (a riskier facet), but SDKs replay less: one safer entry.
    #[test]
    fn removing_a_true_annotation_is_one_safer_entry() {
        let old = BASE.replace("createThing, x-idempotent: false", "createThing");
        let old = old.replace(
            "      x-idempotent: false\n      parameters:\n        - {name: Idempotency-Key, in: header}\n",
            "      x-idempotent: true\n",
        );
        let new = old.replace("      x-idempotent: true\n", "");
        let got = entries(&old, &new);
        assert_eq!(
            got,
            vec![(
                Risk::Safer,
                Kind::Operation,
                vec![
                    (Risk::Safer, Kind::Class),
                    (Risk::Riskier, Kind::ReasonSource)
                ]
            )]
        );
    }

    /// An annotation removed where the method default gives the same class changes nothing an
    /// SDK does: neutral, the facet still says the annotation is gone.
    #[test]
    fn an_annotation_the_default_agrees_with_is_neutral() {
        let new = BASE.replace("getThing}", "getThing, x-idempotent: true}");
        let got = entries(&new, BASE);
        assert_eq!(
            got,
            vec![(
                Risk::Neutral,
                Kind::ReasonSource,
                vec![(Risk::Riskier, Kind::ReasonSource)]
            )]
        );
    }

    #[test]
    fn renamed_parameter_is_the_same_operation() {
        let new = BASE
            .replace("/things/{id}:", "/things/{thingID}:")
            .replace("operationId: getThing", "operationId: fetchThing");
        let kinds: Vec<_> = run(BASE, &new).into_iter().map(|c| c.1).collect();
        assert_eq!(kinds, vec![Kind::Renamed, Kind::Renamed], "GET and PUT");
    }

    #[test]
    fn literal_sibling_steals_requests() {
        let new = format!(
            "{BASE}  /things/export:\n    put: {{operationId: exportThings, x-idempotent: true}}\n"
        );
        let changes = run(BASE, &new);
        let reach = changes.iter().find(|c| c.1 == Kind::Reach).unwrap();
        assert_eq!(reach.0, Risk::Riskier);
        assert!(
            reach.2.contains("putThing") && reach.2.contains("exportThings"),
            "{}",
            reach.2
        );
        assert!(changes.iter().any(|c| c.1 == Kind::Added));
    }

    #[test]
    fn removed_operation_is_rated_by_what_its_requests_get_now() {
        let new = BASE.replace("    get: {operationId: feed, x-retry: false}\n", "");
        let new = new.replace("  /feed:\n", "");
        let changes = run(BASE, &new);
        assert_eq!(changes.len(), 1);
        assert_eq!((changes[0].0, changes[0].1), (Risk::Riskier, Kind::Removed));
    }

    #[test]
    fn policy_values() {
        let old = format!("{BASE}x-retry-policy: {{max_retries: 2, retryable_statuses: [503]}}\n");
        let new = format!(
            "{BASE}x-retry-policy: {{max_retries: 5, retryable_statuses: [502, 503], jitter: none}}\n"
        );
        let kinds: Vec<_> = run(&old, &new).into_iter().map(|c| (c.0, c.2)).collect();
        assert_eq!(kinds.len(), 3, "{kinds:?}");
        assert_eq!(kinds[0].0, Risk::Riskier);
        assert_eq!(kinds[1].0, Risk::Riskier);
        assert_eq!(kinds[2].0, Risk::Neutral);
        let back: Vec<_> = run(&new, &old).into_iter().map(|c| c.0).collect();
        assert_eq!(back, vec![Risk::Safer, Risk::Safer, Risk::Neutral]);
    }
}
