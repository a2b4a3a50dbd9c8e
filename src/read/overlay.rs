//! OpenAPI Overlay Specification 1.0: an overlay document's `actions`, each a JSONPath (RFC 9535)
//! `target` with an `update` (objects deep-merged, arrays appended) or `remove: true`, applied in
//! order to the root document's located tree before the OpenAPI walk. Values an overlay brings in
//! keep the overlay file's marks, so diagnostics point into the overlay file and
//! [`Reader::location`] names them by their pointer there (`/actions/2/update/x-retry`).
//!
//! The JSONPath is evaluated by `serde_json_path` (which runs the RFC 9535 compliance suite) on a
//! serde_json copy of the tree; its normalized paths lead back to the located nodes.

use super::node::Entry;
use super::*;
use serde_json_path::JsonPath;

/// One step of a normalized path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Step {
    Name(String),
    Index(usize),
}

/// The serde_json view of a located tree, for JSONPath evaluation.
pub(super) fn to_json(node: &Node) -> serde_json::Value {
    use serde_json::Value as J;
    match &node.value {
        // Overlays apply to documents loaded in full: nothing is skipped there.
        Value::Null | Value::Skipped => J::Null,
        Value::Bool(b) => J::Bool(*b),
        Value::Number(s) => s
            .parse::<serde_json::Number>()
            .map(J::Number)
            .unwrap_or_else(|_| J::String(s.clone())),
        Value::String(s) => J::String(s.clone()),
        Value::Seq(items) => J::Array(items.iter().map(to_json).collect()),
        Value::Map(entries) | Value::PartialMap(entries) => J::Object(
            entries
                .iter()
                .map(|e| (e.key.to_string(), to_json(&e.value)))
                .collect(),
        ),
    }
}

/// The normalized paths of the nodes `path` selects in `root`.
pub(super) fn select(path: &JsonPath, root: &Node) -> Vec<Vec<Step>> {
    let json = to_json(root);
    path.query_located(&json)
        .locations()
        .map(|p| {
            p.iter()
                .map(|e| match e {
                    serde_json_path::PathElement::Name(n) => Step::Name(n.to_string()),
                    serde_json_path::PathElement::Index(i) => Step::Index(*i),
                })
                .collect()
        })
        .collect()
}

fn node_at_mut<'a>(root: &'a mut Node, path: &[Step]) -> Option<&'a mut Node> {
    let mut node = root;
    for step in path {
        node = match (&mut node.value, step) {
            (Value::Map(entries), Step::Name(name)) => {
                &mut entries.iter_mut().find(|e| &e.key == name)?.value
            }
            (Value::Seq(items), Step::Index(i)) => items.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(node)
}

/// Removes the node at `path` from its parent; false when it is the root or already gone.
pub(super) fn remove_at(root: &mut Node, path: &[Step]) -> bool {
    let Some((last, parent)) = path.split_last() else {
        return false;
    };
    let Some(parent) = node_at_mut(root, parent) else {
        return false;
    };
    match (&mut parent.value, last) {
        (Value::Map(entries), Step::Name(name)) => {
            let before = entries.len();
            entries.retain(|e| &e.key != name);
            entries.len() != before
        }
        (Value::Seq(items), Step::Index(i)) if *i < items.len() => {
            items.remove(*i);
            true
        }
        _ => false,
    }
}

/// Overlay 1.0 `update` of one selected node: an object is merged (properties of `update`
/// replace those of the same name, objects recursively, arrays appended), an array gets `update`
/// appended (its items, when `update` is an array). Err names the kind of a node that takes no
/// update (a scalar).
pub(super) fn update_at(root: &mut Node, path: &[Step], update: &Node) -> Result<(), &'static str> {
    let Some(target) = node_at_mut(root, path) else {
        return Ok(());
    };
    match (&mut target.value, &update.value) {
        (Value::Map(_), Value::Map(_)) => {
            merge(target, update);
            Ok(())
        }
        (Value::Seq(items), Value::Seq(more)) => {
            items.extend(more.iter().cloned());
            Ok(())
        }
        (Value::Seq(items), _) => {
            items.push(update.clone());
            Ok(())
        }
        _ => Err(target.kind()),
    }
}

fn merge(target: &mut Node, update: &Node) {
    match (&mut target.value, &update.value) {
        (Value::Map(entries), Value::Map(updates)) => {
            for u in updates {
                match entries.iter_mut().find(|e| e.key == u.key) {
                    Some(e) => merge(&mut e.value, &u.value),
                    None => entries.push(Entry {
                        key: u.key.clone(),
                        key_mark: u.key_mark,
                        value: u.value.clone(),
                    }),
                }
            }
        }
        (Value::Seq(items), Value::Seq(more)) => items.extend(more.iter().cloned()),
        _ => *target = update.clone(),
    }
}

/// Records the pointer inside the overlay file of every node and key under `node`.
fn record_pointers(node: &Node, pointer: &str, out: &mut HashMap<(FileId, u32, u32), String>) {
    let key = |m: Mark| (m.file, m.line, m.column);
    out.insert(key(node.mark), pointer.to_string());
    match &node.value {
        Value::Map(entries) => {
            for e in entries {
                let p = pointer_push(pointer, &e.key);
                out.entry(key(e.key_mark)).or_insert_with(|| p.clone());
                record_pointers(&e.value, &p, out);
            }
        }
        Value::Seq(items) => {
            for (i, item) in items.iter().enumerate() {
                record_pointers(item, &format!("{pointer}/{i}"), out);
            }
        }
        _ => {}
    }
}

const ACTION_FIELDS: [&str; 4] = ["target", "description", "update", "remove"];

impl Reader {
    /// Loads the overlay at `path` (always from disk) with the reader's own loaders and limits,
    /// then applies its actions to `tree`. A target that matches nothing is a warning, an error
    /// when `strict`.
    pub(super) fn apply_overlay(&mut self, tree: &mut Node, path: &Path, strict: bool) {
        let display = super::source::display_path(path);
        let canonical = match path.canonicalize() {
            Ok(c) => c,
            Err(e) => {
                self.error(
                    Self::whole_file(&display),
                    format!("cannot open the overlay: {e}"),
                    "check the path (overlays in retrygen.toml resolve against the config file's folder)",
                );
                return;
            }
        };
        let source = std::mem::take(&mut self.source);
        let loaded = self.load_file(&canonical, display, None);
        self.source = source;
        let Some(id) = loaded else { return };
        let file = self.files[id as usize].clone();
        let doc = &file.root;
        let at = |r: &Self, node: &Node, pointer: &str| r.location(&file, node.mark, pointer);
        if !doc.is_map() {
            self.error(
                at(self, doc, ""),
                format!("the overlay is {}, not an Overlay object", doc.kind()),
                "an overlay is a mapping with `overlay: 1.0.0`, `info` and `actions`",
            );
            return;
        }
        match doc.get("overlay") {
            Some(v)
                if v.as_str()
                    .is_some_and(|s| s == "1.0" || s.starts_with("1.0.")) => {}
            Some(v) => {
                self.error(
                    at(self, v, "/overlay"),
                    format!("unsupported overlay version {}", describe(v)),
                    "retrygen applies Overlay Specification 1.0 documents: write `overlay: 1.0.0`",
                );
                return;
            }
            None => {
                self.error(
                    at(self, doc, ""),
                    "the overlay has no `overlay` field",
                    "start the document with `overlay: 1.0.0`",
                );
                return;
            }
        }
        if !doc.get("info").is_some_and(Node::is_map) {
            self.error(
                at(self, doc.get("info").unwrap_or(doc), "/info"),
                "the overlay has no `info` object",
                "add `info:` with a `title` and a `version`",
            );
        }
        let actions = match doc.get("actions") {
            Some(a) if matches!(a.value, Value::Seq(_)) && !a.items().is_empty() => a,
            other => {
                self.error(
                    at(self, other.unwrap_or(doc), "/actions"),
                    "the overlay has no `actions`",
                    "list at least one action with a `target` and an `update` or `remove: true`",
                );
                return;
            }
        };
        let mut pointers = HashMap::new();
        for (i, action) in actions.items().iter().enumerate() {
            record_pointers(action, &format!("/actions/{i}"), &mut pointers);
        }
        self.overlay_pointers.extend(pointers);
        for (i, action) in actions.items().iter().enumerate() {
            let pointer = format!("/actions/{i}");
            if !action.is_map() {
                self.error(
                    at(self, action, &pointer),
                    format!(
                        "action {} is {}, not an Action object",
                        i + 1,
                        action.kind()
                    ),
                    "an action is a mapping with `target` and `update` or `remove: true`",
                );
                continue;
            }
            for e in action.entries() {
                if !ACTION_FIELDS.contains(&e.key.as_ref()) && !e.key.starts_with("x-") {
                    let p = pointer_push(&pointer, &e.key);
                    self.warning(
                        self.location(&file, e.key_mark, &p),
                        format!("unknown field `{}` in action {}", e.key, i + 1),
                        "an action has `target`, `description`, `update`, `remove` and x- extensions",
                    );
                }
            }
            let target_pointer = pointer_push(&pointer, "target");
            let Some(target) = action.get("target").and_then(Node::as_str) else {
                self.error(
                    at(
                        self,
                        action.get("target").unwrap_or(action),
                        &target_pointer,
                    ),
                    format!("action {} has no `target` string", i + 1),
                    "write a JSONPath (RFC 9535) such as `$.paths['/things'].post`",
                );
                continue;
            };
            let target_at = at(
                self,
                action.get("target").unwrap_or(action),
                &target_pointer,
            );
            let path = match JsonPath::parse(target) {
                Ok(p) => p,
                Err(e) => {
                    self.error(
                        target_at,
                        format!("action {} target {target:?} is not a JSONPath: {e}", i + 1),
                        "write an RFC 9535 JSONPath such as `$.paths[*][?@.operationId == 'x']`",
                    );
                    continue;
                }
            };
            let remove = match action.get("remove") {
                None => false,
                Some(Node {
                    value: Value::Bool(b),
                    ..
                }) => *b,
                Some(other) => {
                    self.error(
                        at(self, other, &pointer_push(&pointer, "remove")),
                        format!("`remove` must be a boolean, found {}", other.kind()),
                        "write `remove: true` or leave it out",
                    );
                    continue;
                }
            };
            let update = action.get("update");
            if !remove && update.is_none() {
                self.warning(
                    at(self, action, &pointer),
                    format!("action {} has neither `update` nor `remove: true`", i + 1),
                    "add the values to merge, or `remove: true`",
                );
                continue;
            }
            let mut matches = select(&path, tree);
            if matches.is_empty() {
                let message = format!("action {} target {target:?} matches nothing", i + 1);
                let help = "check the target against the document (an overlay for another version of the spec?)";
                if strict {
                    self.error(target_at, message, help);
                } else {
                    self.warning(target_at, message, help);
                }
                continue;
            }
            if remove {
                // Deepest and last first, so earlier removals do not shift later paths.
                matches.sort();
                for m in matches.iter().rev() {
                    if m.is_empty() {
                        self.error(
                            target_at.clone(),
                            format!("action {} would remove the whole document", i + 1),
                            "target a node inside the document",
                        );
                    } else {
                        remove_at(tree, m);
                    }
                }
                continue;
            }
            let update = update.expect("checked above");
            let copied = update.size().saturating_mul(matches.len());
            self.overlay_nodes = self.overlay_nodes.saturating_add(copied);
            if self.overlay_nodes > self.limits.max_alias_nodes {
                self.error(
                    target_at,
                    format!(
                        "overlays copy more than {} nodes into the document",
                        self.limits.max_alias_nodes
                    ),
                    "retrygen bounds what overlays (like aliases) may copy; narrow the targets",
                );
                return;
            }
            // By induction the tree stays within the nesting limit, so the recursive walks
            // over it (conversion, cloning) stay bounded.
            let nesting = depth(update);
            if let Some(m) = matches
                .iter()
                .find(|m| m.len() + nesting > self.limits.max_depth)
            {
                self.error(
                    target_at,
                    format!(
                        "the overlaid document would nest deeper than {} levels (at a target {} levels deep)",
                        self.limits.max_depth,
                        m.len()
                    ),
                    load::TOO_DEEP_HELP,
                );
                return;
            }
            for m in &matches {
                if let Err(kind) = update_at(tree, m, update) {
                    self.error(
                        target_at.clone(),
                        format!(
                            "action {} target {target:?} selects {kind}, which an update cannot change",
                            i + 1
                        ),
                        "target the object or array that holds the value, and update it with an object",
                    );
                    break;
                }
            }
        }
    }
}

/// Levels of nesting of `node` (a scalar is 0; the loaders bound it for a loaded tree).
fn depth(node: &Node) -> usize {
    match &node.value {
        Value::Seq(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Map(entries) => 1 + entries.iter().map(|e| depth(&e.value)).max().unwrap_or(0),
        _ => 0,
    }
}

fn describe(node: &Node) -> String {
    match &node.value {
        Value::String(s) | Value::Number(s) => format!("{s:?}"),
        _ => node.kind().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(yaml: &str) -> Node {
        load::load(yaml, 0, &Limits::default(), None).expect("loads")
    }

    fn apply(doc: &str, target: &str, update: Option<&str>) -> serde_json::Value {
        let mut root = tree(doc);
        let path = JsonPath::parse(target).expect("parses");
        let matches = select(&path, &root);
        match update {
            Some(u) => {
                let u = tree(u);
                for m in &matches {
                    update_at(&mut root, m, &u).expect("updatable");
                }
            }
            None => {
                let mut matches = matches;
                matches.sort();
                for m in matches.iter().rev() {
                    remove_at(&mut root, m);
                }
            }
        }
        to_json(&root)
    }

    const PETS: &str = r#"
openapi: 3.1.0
info: {title: Pets, version: "1"}
tags: [{name: a}, {name: b}]
paths:
  /pets:
    get: {operationId: listPets, parameters: [{name: limit, in: query}]}
    post: {operationId: createPet, x-internal: true}
  /pets/{id}:
    get: {operationId: getPet}
    delete: {operationId: deletePet, x-internal: true}
  /watch/pets:
    get: {operationId: watchPets}
"#;

    /// Overlay 1.0 "Structured Overlays Example": one update at the root, merged into `info`.
    #[test]
    fn structured_update_merges_objects() {
        let out = apply(
            PETS,
            "$",
            Some("info: {x-overlay-applied: structured-overlay}\npaths: {/pets: {get: {summary: Get a list of pets}}}"),
        );
        assert_eq!(out["info"]["title"], "Pets");
        assert_eq!(out["info"]["x-overlay-applied"], "structured-overlay");
        assert_eq!(
            out["paths"]["/pets"]["get"]["summary"],
            "Get a list of pets"
        );
        assert_eq!(out["paths"]["/pets"]["get"]["operationId"], "listPets");
    }

    /// Overlay 1.0 "Targeted Overlays": a quoted path name.
    #[test]
    fn targeted_update_with_quoted_names() {
        let out = apply(PETS, "$.paths['/pets'].get", Some("description: All pets"));
        assert_eq!(out["paths"]["/pets"]["get"]["description"], "All pets");
        assert!(out["paths"]["/pets/{id}"]["get"]
            .get("description")
            .is_none());
    }

    /// Overlay 1.0 "Wildcard Overlays Examples": every operation gets the update.
    #[test]
    fn wildcard_update() {
        let out = apply(PETS, "$.paths.*.*", Some("x-rate-limit: 100"));
        for (path, op) in [
            ("/pets", "get"),
            ("/pets", "post"),
            ("/pets/{id}", "delete"),
        ] {
            assert_eq!(out["paths"][path][op]["x-rate-limit"], 100);
        }
    }

    /// Overlay 1.0 "Array Modification Examples": an update appends to a selected array; a
    /// filter plus `remove: true` deletes matching items.
    #[test]
    fn arrays_append_and_filtered_remove() {
        let out = apply(PETS, "$.tags", Some("{name: c}"));
        assert_eq!(out["tags"].as_array().unwrap().len(), 3);
        assert_eq!(out["tags"][2]["name"], "c");
        let out = apply(
            PETS,
            "$.paths['/pets'].get.parameters[?@.name == 'limit']",
            None,
        );
        assert_eq!(
            out["paths"]["/pets"]["get"]["parameters"],
            serde_json::json!([])
        );
    }

    /// Overlay 1.0 "Traits Examples" style: a filter on an extension, removing what it selects.
    #[test]
    fn remove_by_filter_on_extension() {
        let out = apply(PETS, "$.paths.*[?@['x-internal'] == true]", None);
        assert!(out["paths"]["/pets"].get("post").is_none());
        assert!(out["paths"]["/pets/{id}"].get("delete").is_none());
        assert_eq!(out["paths"]["/pets"]["get"]["operationId"], "listPets");
    }

    #[test]
    fn descendants_and_search_function() {
        let out = apply(
            PETS,
            "$..[?@.operationId && search(@.operationId, '^watch')]",
            Some("x-retry: false"),
        );
        assert_eq!(out["paths"]["/watch/pets"]["get"]["x-retry"], false);
        assert!(out["paths"]["/pets"]["get"].get("x-retry").is_none());
        let out = apply(
            PETS,
            "$..[?match(@.operationId, 'get.*')]",
            Some("x-idempotent: true"),
        );
        assert_eq!(out["paths"]["/pets/{id}"]["get"]["x-idempotent"], true);
    }

    #[test]
    fn nested_arrays_in_a_merge_are_appended_and_scalars_replaced() {
        let out = apply(
            PETS,
            "$.paths['/pets'].get",
            Some("operationId: listAllPets\nparameters: [{name: offset, in: query}]"),
        );
        assert_eq!(out["paths"]["/pets"]["get"]["operationId"], "listAllPets");
        assert_eq!(
            out["paths"]["/pets"]["get"]["parameters"][1]["name"],
            "offset"
        );
    }

    #[test]
    fn merged_values_keep_the_overlay_marks() {
        let mut root = tree(PETS);
        let update = load::load("x-retry: false\n", 7, &Limits::default(), None).unwrap();
        let path = JsonPath::parse("$.paths['/watch/pets'].get").unwrap();
        for m in select(&path, &root) {
            update_at(&mut root, &m, &update).unwrap();
        }
        let op = root
            .get("paths")
            .unwrap()
            .get("/watch/pets")
            .unwrap()
            .get("get")
            .unwrap();
        let value = op.get("x-retry").unwrap();
        assert_eq!(value.mark.file, 7);
        assert_eq!((value.mark.line, value.mark.column), (1, 10));
        assert_eq!(op.mark.file, 0);
    }
}
