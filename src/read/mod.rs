//! Stage 1, read: an OpenAPI 2.0/3.0/3.1/3.2 document (YAML or JSON, one file or many) becomes
//! [`RawSpec`]: the operations with everything retry policy needs, `$ref`s resolved and every
//! fact carrying its source location. Nothing here decides a class; see [`crate::model`].

pub mod json;
pub mod load;
pub mod node;
pub mod policy;

use crate::diag::{pointer_push, Diagnostic, Diagnostics, Location};
use crate::percent::percent_decode;
pub use load::Limits;
use node::{FileId, Mark, Node, Value};
use policy::{raw_value, RawPolicy, RawPolicyEntry};
use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum SpecVersion {
    #[serde(rename = "2.0")]
    Swagger2,
    #[serde(rename = "3.0")]
    OpenApi30,
    #[serde(rename = "3.1")]
    OpenApi31,
    #[serde(rename = "3.2")]
    OpenApi32,
}

impl SpecVersion {
    pub fn as_str(self) -> &'static str {
        match self {
            SpecVersion::Swagger2 => "2.0",
            SpecVersion::OpenApi30 => "3.0",
            SpecVersion::OpenApi31 => "3.1",
            SpecVersion::OpenApi32 => "3.2",
        }
    }
}

/// A value found in the document together with where it was found.
#[derive(Debug, Clone, PartialEq)]
pub struct Located<T> {
    pub value: T,
    pub at: Location,
}

/// One operation as the document states it.
#[derive(Debug, Clone)]
pub struct RawOperation {
    /// Upper-case HTTP method.
    pub method: String,
    /// The path template exactly as written in the document.
    pub path: String,
    pub path_at: Location,
    pub at: Location,
    pub operation_id: Option<Located<String>>,
    pub idempotent_on_operation: Option<Located<bool>>,
    pub idempotent_on_path: Option<Located<bool>>,
    pub retry_on_operation: Option<Located<bool>>,
    pub retry_on_path: Option<Located<bool>>,
    /// The first 2xx response (or 2.0 `produces`) that streams `text/event-stream`.
    pub streaming: Option<Location>,
    /// Header parameters of the operation and its path item (names as written).
    pub header_parameters: Vec<Located<String>>,
}

#[derive(Debug, Clone)]
pub struct RawSpec {
    /// File name of the root document, without folders (it goes into generated headers).
    pub source_name: String,
    pub version: SpecVersion,
    pub base_path: String,
    pub idempotent_on_root: Option<Located<bool>>,
    /// The document-level `x-retry-policy` object, validated by the model.
    pub retry_policy: Option<RawPolicy>,
    pub operations: Vec<RawOperation>,
}

pub struct SourceFile {
    pub path: PathBuf,
    pub display: String,
    pub root: Node,
}

const FIXED_METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

struct Reader {
    limits: Limits,
    files: Vec<Rc<SourceFile>>,
    by_path: HashMap<PathBuf, FileId>,
    failed: HashSet<PathBuf>,
    root_dir: PathBuf,
    root_display_dir: PathBuf,
    diagnostics: Diagnostics,
    version: SpecVersion,
}

/// Where a `$ref` chain ends.
struct Target {
    file: Rc<SourceFile>,
    tokens: Vec<String>,
    pointer: String,
}

impl Target {
    fn node(&self) -> &Node {
        self.file
            .root
            .pointer(&self.tokens)
            .expect("target pointer was checked when resolved")
    }
}

/// Reads and resolves the document at `path`. Returns the spec with every problem found
/// (errors included: check [`Diagnostics::has_errors`]), or only the problems when the document
/// cannot be read as an OpenAPI document at all.
pub fn read(path: &Path, limits: &Limits) -> Result<(RawSpec, Diagnostics), Diagnostics> {
    let display = path.to_string_lossy().replace('\\', "/");
    let mut reader = Reader {
        limits: *limits,
        files: Vec::new(),
        by_path: HashMap::new(),
        failed: HashSet::new(),
        root_dir: PathBuf::new(),
        root_display_dir: Path::new(&display)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
        diagnostics: Diagnostics::default(),
        version: SpecVersion::OpenApi30,
    };
    let Some(root_id) = reader.load_root(path, &display) else {
        return Err(reader.diagnostics);
    };
    let root = reader.files[root_id as usize].clone();
    // With a readable root the spec comes back even beside errors, so the model can report its
    // own problems in the same run; callers check `has_errors`.
    match reader.read_document(&root, source_name(path)) {
        Some(spec) => Ok((spec, reader.diagnostics)),
        None => Err(reader.diagnostics),
    }
}

/// The file name of the spec at `path` as the OS splits it, for generated headers: taken from
/// `path` itself rather than from the display form, whose `\` became `/` (on Linux `a\b.json` is
/// one file name, not a folder `a` and a file `b.json`).
fn source_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Lexical relative path from `base` to `target` (both absolute and canonical).
fn relative_path(base: &Path, target: &Path) -> PathBuf {
    let base: Vec<Component> = base.components().collect();
    let target_c: Vec<Component> = target.components().collect();
    let common = base
        .iter()
        .zip(&target_c)
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = PathBuf::new();
    for _ in common..base.len() {
        out.push("..");
    }
    for c in &target_c[common..] {
        out.push(c.as_os_str());
    }
    out
}

impl Reader {
    fn location(&self, file: &SourceFile, mark: Mark, pointer: &str) -> Location {
        Location {
            file: file.display.clone(),
            line: mark.line as usize,
            column: mark.column as usize,
            pointer: pointer.to_string(),
        }
    }

    fn error(&mut self, at: Location, message: impl Into<String>, help: impl Into<String>) {
        self.diagnostics.push(Diagnostic::error(at, message, help));
    }

    fn warning(&mut self, at: Location, message: impl Into<String>, help: impl Into<String>) {
        self.diagnostics
            .push(Diagnostic::warning(at, message, help));
    }

    fn whole_file(display: &str) -> Location {
        Location {
            file: display.to_string(),
            line: 1,
            column: 1,
            pointer: String::new(),
        }
    }

    fn load_root(&mut self, path: &Path, display: &str) -> Option<FileId> {
        match path.canonicalize() {
            Ok(canonical) => {
                self.root_dir = canonical
                    .parent()
                    .map(Path::to_path_buf)
                    .unwrap_or_default();
                self.load_file(&canonical, display.to_string(), None)
            }
            Err(e) => {
                self.error(Self::whole_file(display), format!("cannot open the spec: {e}"), "check the path (relative paths in retrygen.toml resolve against the config file's folder)");
                None
            }
        }
    }

    /// Loads a file once; `referrer` locates the `$ref` that asked for it.
    fn load_file(
        &mut self,
        canonical: &Path,
        display: String,
        referrer: Option<&Location>,
    ) -> Option<FileId> {
        if let Some(&id) = self.by_path.get(canonical) {
            return Some(id);
        }
        if self.failed.contains(canonical) {
            return None;
        }
        let at = referrer
            .cloned()
            .unwrap_or_else(|| Self::whole_file(&display));
        let text = match std::fs::metadata(canonical) {
            Ok(meta) if meta.len() > self.limits.max_bytes => Err(format!(
                "the file is {} bytes, above the limit of {} bytes",
                meta.len(),
                self.limits.max_bytes
            )),
            Ok(meta) if meta.is_dir() => Err("it is a folder, not a file".to_string()),
            Ok(_) => match std::fs::read(canonical) {
                Ok(bytes) => String::from_utf8(bytes).map_err(|e| {
                    format!(
                        "it is not UTF-8 text (invalid byte at offset {})",
                        e.utf8_error().valid_up_to()
                    )
                }),
                Err(e) => Err(e.to_string()),
            },
            Err(e) => Err(e.to_string()),
        };
        let text = match text {
            Ok(t) => t,
            Err(why) => {
                let what = if referrer.is_some() {
                    format!("cannot read the referenced file {display}: {why}")
                } else {
                    format!("cannot read the spec: {why}")
                };
                self.error(
                    at,
                    what,
                    "OpenAPI documents are UTF-8 YAML or JSON files; check the path",
                );
                self.failed.insert(canonical.to_path_buf());
                return None;
            }
        };
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let id = self.files.len() as FileId;
        let is_json = canonical
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        let loaded = if is_json {
            json::load(text, id, &self.limits)
        } else {
            load::load(text, id, &self.limits)
        };
        match loaded {
            Ok(root) => {
                self.files.push(Rc::new(SourceFile {
                    path: canonical.to_path_buf(),
                    display,
                    root,
                }));
                self.by_path.insert(canonical.to_path_buf(), id);
                Some(id)
            }
            Err(errors) => {
                for e in errors {
                    let at = Location {
                        file: display.clone(),
                        line: e.line as usize,
                        column: e.column as usize,
                        pointer: e.pointer,
                    };
                    self.error(at, e.message, e.help);
                }
                self.failed.insert(canonical.to_path_buf());
                None
            }
        }
    }

    /// Follows `$ref`s starting at `node` (in `file`, at `pointer`) until a non-reference node.
    /// Returns None when `node` is not a reference; Some(Err) after reporting a broken chain.
    fn follow(
        &mut self,
        file: &Rc<SourceFile>,
        node: &Node,
        pointer: &str,
    ) -> Option<Result<Target, ()>> {
        let reference = node.get("$ref")?;
        let mut current_file = file.clone();
        let mut current_ref = reference.clone();
        let mut current_pointer = pointer_push(pointer, "$ref");
        let mut seen: HashSet<(FileId, String)> = HashSet::new();
        let mut hops = 0usize;
        loop {
            let at = self.location(&current_file, current_ref.mark, &current_pointer);
            let Some(text) = current_ref.as_str() else {
                self.error(
                    at,
                    format!("`$ref` must be a string, found {}", current_ref.kind()),
                    "write the reference as a string such as \"#/components/parameters/Name\"",
                );
                return Some(Err(()));
            };
            hops += 1;
            if hops > self.limits.max_ref_chain {
                self.error(
                    at,
                    format!(
                        "`$ref` chain longer than {} references",
                        self.limits.max_ref_chain
                    ),
                    "point the reference at its final target",
                );
                return Some(Err(()));
            }
            let (file_part, fragment) = text.split_once('#').unwrap_or((text, ""));
            if file_part.contains("://") || file_part.starts_with("//") {
                self.error(at, format!("remote reference {text:?} is not supported"), "download the referenced document next to the spec and refer to it by a relative path");
                return Some(Err(()));
            }
            let target_file = if file_part.is_empty() {
                current_file.clone()
            } else {
                let relative = percent_decode(file_part);
                let base = current_file
                    .path
                    .parent()
                    .map(Path::to_path_buf)
                    .unwrap_or_default();
                let joined = base.join(&relative);
                let canonical = match joined.canonicalize() {
                    Ok(c) => c,
                    Err(e) => {
                        self.error(at, format!("cannot resolve {text:?}: {e}"), "check the relative path; it resolves against the folder of the file that contains the `$ref`");
                        return Some(Err(()));
                    }
                };
                let display = self
                    .root_display_dir
                    .join(relative_path(&self.root_dir, &canonical))
                    .to_string_lossy()
                    .replace('\\', "/");
                match self.load_file(&canonical, display, Some(&at)) {
                    Some(id) => self.files[id as usize].clone(),
                    None => return Some(Err(())),
                }
            };
            let fragment = percent_decode(fragment);
            if !fragment.is_empty() && !fragment.starts_with('/') {
                self.error(
                    at,
                    format!("unsupported reference fragment {fragment:?}"),
                    "use a JSON pointer fragment such as \"#/components/schemas/Name\"",
                );
                return Some(Err(()));
            }
            let tokens: Vec<String> = if fragment.is_empty() {
                Vec::new()
            } else {
                fragment[1..]
                    .split('/')
                    .map(|t| t.replace("~1", "/").replace("~0", "~"))
                    .collect()
            };
            let target_id = self.by_path[&target_file.path];
            if !seen.insert((target_id, fragment.clone())) {
                self.error(at, format!("`$ref` cycle: {text:?} leads back to a reference already followed"), "break the cycle; a path item, operation, parameter or response must end in an object");
                return Some(Err(()));
            }
            let Some(target) = target_file.root.pointer(&tokens) else {
                self.error(
                    at,
                    format!(
                        "`$ref` target {text:?} does not exist in {}",
                        target_file.display
                    ),
                    "check the JSON pointer after `#`",
                );
                return Some(Err(()));
            };
            match target.get("$ref") {
                Some(next) => {
                    current_ref = next.clone();
                    current_pointer = pointer_push(&fragment, "$ref");
                    current_file = target_file.clone();
                }
                None => {
                    return Some(Ok(Target {
                        file: target_file.clone(),
                        tokens,
                        pointer: fragment,
                    }))
                }
            }
        }
    }

    /// Reads an optional boolean extension, reporting any non-boolean value.
    fn bool_extension(
        &mut self,
        file: &SourceFile,
        node: &Node,
        pointer: &str,
        key: &str,
    ) -> Option<Located<bool>> {
        let value = node.get(key)?;
        let p = pointer_push(pointer, key);
        let at = self.location(file, value.mark, &p);
        match value.value {
            Value::Bool(b) => Some(Located { value: b, at }),
            _ => {
                let found = match &value.value {
                    Value::String(s) => format!("the string {s:?}"),
                    _ => value.kind().to_string(),
                };
                self.error(
                    at,
                    format!("`{key}` must be a boolean, found {found}"),
                    format!("write `{key}: true` or `{key}: false` without quotes"),
                );
                None
            }
        }
    }

    fn read_document(&mut self, root: &Rc<SourceFile>, source_name: String) -> Option<RawSpec> {
        let doc = &root.root;
        if !doc.is_map() {
            self.error(
                self.location(root, doc.mark, ""),
                format!("the document is {}, not an OpenAPI object", doc.kind()),
                "an OpenAPI document is a mapping with an `openapi` (or `swagger`) field",
            );
            return None;
        }
        self.version = self.read_version(root)?;
        let base_path = self.read_base_path(root);
        let idempotent_on_root = self.bool_extension(root, doc, "", "x-idempotent");
        let retry_policy = doc.get("x-retry-policy").map(|n| RawPolicy {
            at: self.location(root, n.mark, "/x-retry-policy"),
            entries: if n.is_map() {
                Ok(n.entries()
                    .iter()
                    .map(|entry| RawPolicyEntry {
                        key: entry.key.clone(),
                        value: raw_value(&entry.value),
                        at: self.location(
                            root,
                            entry.value.mark,
                            &pointer_push("/x-retry-policy", &entry.key),
                        ),
                    })
                    .collect())
            } else {
                Err(n.kind().to_string())
            },
        });
        let mut operations = Vec::new();
        if let Some(paths) = doc.get("paths") {
            if !paths.is_map() && paths.value != Value::Null {
                self.error(
                    self.location(root, paths.mark, "/paths"),
                    format!("`paths` must be a mapping, found {}", paths.kind()),
                    "map each path template to its path item",
                );
            }
            for entry in paths.entries() {
                if entry.key.starts_with("x-") {
                    continue;
                }
                let pointer = pointer_push("/paths", &entry.key);
                let path_at = self.location(root, entry.key_mark, &pointer);
                self.read_path_item(
                    root,
                    &entry.key,
                    path_at,
                    &entry.value,
                    &pointer,
                    &mut operations,
                );
            }
        }
        Some(RawSpec {
            source_name,
            version: self.version,
            base_path,
            idempotent_on_root,
            retry_policy,
            operations,
        })
    }

    fn read_version(&mut self, root: &Rc<SourceFile>) -> Option<SpecVersion> {
        let doc = &root.root;
        let (field, node) = match (doc.get("openapi"), doc.get("swagger")) {
            (Some(n), _) => ("openapi", n),
            (None, Some(n)) => ("swagger", n),
            (None, None) => {
                self.error(
                    self.location(root, doc.mark, ""),
                    "missing version field: neither `openapi` nor `swagger` is present",
                    "add `openapi: 3.1.0` (or `swagger: \"2.0\"` for Swagger 2.0) at the top level",
                );
                return None;
            }
        };
        let at = self.location(root, node.mark, &format!("/{field}"));
        let Some(text) = node.as_str() else {
            let shown = match &node.value {
                Value::Number(n) => n.clone(),
                _ => node.kind().to_string(),
            };
            self.error(
                at,
                format!("`{field}` must be a string, found {shown}"),
                format!("quote the version: `{field}: \"{shown}\"`"),
            );
            return None;
        };
        let version = match (field, text) {
            ("swagger", "2.0") => Some(SpecVersion::Swagger2),
            ("openapi", t) if t.starts_with("3.0.") || t == "3.0" => Some(SpecVersion::OpenApi30),
            ("openapi", t) if t.starts_with("3.1.") || t == "3.1" => Some(SpecVersion::OpenApi31),
            ("openapi", t) if t.starts_with("3.2.") || t == "3.2" => Some(SpecVersion::OpenApi32),
            _ => None,
        };
        if version.is_none() {
            self.error(
                at,
                format!("unsupported `{field}` version {text:?}"),
                "retrygen reads Swagger 2.0 and OpenAPI 3.0.x, 3.1.x and 3.2.x",
            );
        }
        version
    }

    fn read_base_path(&mut self, root: &Rc<SourceFile>) -> String {
        let doc = &root.root;
        if self.version == SpecVersion::Swagger2 {
            return match doc.get("basePath") {
                Some(n) => match n.as_str() {
                    Some(s) => normalize_base_path(s),
                    None => {
                        self.error(
                            self.location(root, n.mark, "/basePath"),
                            format!("`basePath` must be a string, found {}", n.kind()),
                            "write it like `basePath: /v1`",
                        );
                        String::new()
                    }
                },
                None => String::new(),
            };
        }
        let Some(server) = doc.get("servers").and_then(|s| s.items().first()) else {
            return String::new();
        };
        let Some(url_node) = server.get("url") else {
            return String::new();
        };
        let Some(url) = url_node.as_str() else {
            self.error(
                self.location(root, url_node.mark, "/servers/0/url"),
                format!("server `url` must be a string, found {}", url_node.kind()),
                "write the server URL as a string",
            );
            return String::new();
        };
        let mut resolved = String::new();
        let mut rest = url;
        while let Some(open) = rest.find('{') {
            resolved.push_str(&rest[..open]);
            let Some(close) = rest[open..].find('}') else {
                resolved.push_str(&rest[open..]);
                rest = "";
                break;
            };
            let name = &rest[open + 1..open + close];
            let default = server
                .get("variables")
                .and_then(|v| v.get(name))
                .and_then(|v| v.get("default"))
                .and_then(|d| match &d.value {
                    Value::String(s) | Value::Number(s) => Some(s.clone()),
                    _ => None,
                });
            match default {
                Some(d) => resolved.push_str(&d),
                None => {
                    self.warning(
                        self.location(root, url_node.mark, "/servers/0/url"),
                        format!("server variable {name:?} has no default; the base path is taken as empty"),
                        format!("declare `variables: {{{name}: {{default: ...}}}}` on the server"),
                    );
                    return String::new();
                }
            }
            rest = &rest[open + close + 1..];
        }
        resolved.push_str(rest);
        normalize_base_path(&server_url_path(&resolved))
    }

    fn read_path_item(
        &mut self,
        file: &Rc<SourceFile>,
        path: &str,
        path_at: Location,
        item: &Node,
        pointer: &str,
        out: &mut Vec<RawOperation>,
    ) {
        // A path item may itself be a reference (3.1 components/pathItems, or another file);
        // sibling keys beside `$ref` are read from the referring object and take precedence.
        let target = match self.follow(file, item, pointer) {
            Some(Ok(t)) => Some(t),
            Some(Err(())) => return,
            None => None,
        };
        let (item_file, item_node, item_pointer) = match &target {
            Some(t) => (t.file.clone(), t.node(), t.pointer.clone()),
            None => (file.clone(), item, pointer.to_string()),
        };
        if !item_node.is_map() {
            self.error(
                self.location(&item_file, item_node.mark, &item_pointer),
                format!("a path item must be a mapping, found {}", item_node.kind()),
                "map HTTP methods to operations",
            );
            return;
        }
        let local = target
            .as_ref()
            .map(|_| (file.clone(), item, pointer.to_string()));
        // The layers of the path item, most specific first.
        let mut layers: Vec<(Rc<SourceFile>, &Node, String)> = Vec::new();
        if let Some((f, n, p)) = &local {
            layers.push((f.clone(), *n, p.clone()));
        }
        layers.push((item_file.clone(), item_node, item_pointer.clone()));

        let mut idempotent_on_path = None;
        let mut retry_on_path = None;
        let mut path_params = Vec::new();
        for (f, n, p) in layers.iter().rev() {
            if let Some(v) = self.bool_extension(f, n, p, "x-idempotent") {
                idempotent_on_path = Some(v);
            }
            if let Some(v) = self.bool_extension(f, n, p, "x-retry") {
                retry_on_path = Some(v);
            }
            if let Some(params) = n.get("parameters") {
                self.read_parameters(f, params, &pointer_push(p, "parameters"), &mut path_params);
            }
        }
        let mut seen_methods: Vec<String> = Vec::new();
        for (f, n, p) in &layers {
            for entry in n.entries() {
                let key = entry.key.as_str();
                let method_pointer = pointer_push(p, key);
                if FIXED_METHODS.contains(&key) || key == "query" {
                    if key == "query" && self.version != SpecVersion::OpenApi32 {
                        self.warning(self.location(f, entry.key_mark, &method_pointer), "`query` is an OpenAPI 3.2 method; this document declares an older version", "set `openapi: 3.2.0` or remove the operation");
                    }
                    let method = key.to_ascii_uppercase();
                    if seen_methods.contains(&method) {
                        continue; // the referring object's sibling overrides the referenced one
                    }
                    seen_methods.push(method.clone());
                    if let Some(op) = self.read_operation(
                        f,
                        &method,
                        path,
                        &path_at,
                        &entry.value,
                        &method_pointer,
                        &path_params,
                        &idempotent_on_path,
                        &retry_on_path,
                    ) {
                        out.push(op);
                    }
                } else if key == "additionalOperations" {
                    for extra in entry.value.entries() {
                        let method = extra.key.to_ascii_uppercase();
                        let extra_pointer = pointer_push(&method_pointer, &extra.key);
                        let at = self.location(f, extra.key_mark, &extra_pointer);
                        if method.is_empty()
                            || !method.bytes().all(|b| {
                                b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
                            })
                        {
                            self.error(
                                at,
                                format!("{:?} is not a valid HTTP method name", extra.key),
                                "use an RFC 9110 token such as `LINK`",
                            );
                            continue;
                        }
                        if seen_methods.contains(&method) {
                            self.error(at, format!("method {method} is declared twice on this path"), "declare the standard methods only as fixed fields, not in additionalOperations");
                            continue;
                        }
                        seen_methods.push(method.clone());
                        if let Some(op) = self.read_operation(
                            f,
                            &method,
                            path,
                            &path_at,
                            &extra.value,
                            &extra_pointer,
                            &path_params,
                            &idempotent_on_path,
                            &retry_on_path,
                        ) {
                            out.push(op);
                        }
                    }
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn read_operation(
        &mut self,
        file: &Rc<SourceFile>,
        method: &str,
        path: &str,
        path_at: &Location,
        node: &Node,
        pointer: &str,
        path_params: &[(String, String, Located<String>)],
        idempotent_on_path: &Option<Located<bool>>,
        retry_on_path: &Option<Located<bool>>,
    ) -> Option<RawOperation> {
        let target = match self.follow(file, node, pointer) {
            Some(Ok(t)) => Some(t),
            Some(Err(())) => return None,
            None => None,
        };
        let (op_file, op, op_pointer) = match &target {
            Some(t) => (t.file.clone(), t.node(), t.pointer.clone()),
            None => (file.clone(), node, pointer.to_string()),
        };
        let at = self.location(&op_file, op.mark, &op_pointer);
        if !op.is_map() {
            self.error(
                at,
                format!("an operation must be a mapping, found {}", op.kind()),
                "describe the operation as an object with `responses`",
            );
            return None;
        }
        let operation_id = match op.get("operationId") {
            None => None,
            Some(n) => {
                let id_at =
                    self.location(&op_file, n.mark, &pointer_push(&op_pointer, "operationId"));
                match n.as_str() {
                    Some(s) => Some(Located {
                        value: s.to_string(),
                        at: id_at,
                    }),
                    None => {
                        self.error(
                            id_at,
                            format!("`operationId` must be a string, found {}", n.kind()),
                            "quote the operationId",
                        );
                        None
                    }
                }
            }
        };
        let idempotent_on_operation =
            self.bool_extension(&op_file, op, &op_pointer, "x-idempotent");
        let retry_on_operation = self.bool_extension(&op_file, op, &op_pointer, "x-retry");
        let mut params: Vec<(String, String, Located<String>)> = Vec::new();
        if let Some(p) = op.get("parameters") {
            self.read_parameters(
                &op_file,
                p,
                &pointer_push(&op_pointer, "parameters"),
                &mut params,
            );
        }
        // Operation parameters override path-item parameters with the same name and location.
        for inherited in path_params {
            if !params
                .iter()
                .any(|(n, i, _)| n == &inherited.0 && i == &inherited.1)
            {
                params.push(inherited.clone());
            }
        }
        let header_parameters = params
            .into_iter()
            .filter(|(_, location, _)| location == "header")
            .map(|(_, _, named)| named)
            .collect();
        let streaming = self.find_streaming(&op_file, op, &op_pointer);
        Some(RawOperation {
            method: method.to_string(),
            path: path.to_string(),
            path_at: path_at.clone(),
            at,
            operation_id,
            idempotent_on_operation,
            idempotent_on_path: idempotent_on_path.clone(),
            retry_on_operation,
            retry_on_path: retry_on_path.clone(),
            streaming,
            header_parameters,
        })
    }

    /// Collects (name, in, located name) of each parameter, following references.
    fn read_parameters(
        &mut self,
        file: &Rc<SourceFile>,
        list: &Node,
        pointer: &str,
        out: &mut Vec<(String, String, Located<String>)>,
    ) {
        if !matches!(list.value, Value::Seq(_)) {
            self.error(
                self.location(file, list.mark, pointer),
                format!("`parameters` must be a sequence, found {}", list.kind()),
                "list the parameters with `- name: ...`",
            );
            return;
        }
        for (i, param) in list.items().iter().enumerate() {
            let p = pointer_push(pointer, &i.to_string());
            let target = match self.follow(file, param, &p) {
                Some(Ok(t)) => Some(t),
                Some(Err(())) => continue,
                None => None,
            };
            let (pf, pn, pp) = match &target {
                Some(t) => (t.file.clone(), t.node(), t.pointer.clone()),
                None => (file.clone(), param, p),
            };
            let (Some(name), Some(location)) = (
                pn.get("name").and_then(Node::as_str),
                pn.get("in").and_then(Node::as_str),
            ) else {
                continue; // not a parameter retry policy can use; schema validators report it
            };
            let at = self.location(&pf, pn.mark, &pp);
            out.push((
                name.to_string(),
                location.to_string(),
                Located {
                    value: name.to_string(),
                    at,
                },
            ));
        }
    }

    fn find_streaming(
        &mut self,
        file: &Rc<SourceFile>,
        op: &Node,
        pointer: &str,
    ) -> Option<Location> {
        if self.version == SpecVersion::Swagger2 {
            // 2.0 has no per-response media types: the operation's `produces`, else the root's.
            let root = self.files[0].clone();
            let (f, list, p) = match op.get("produces") {
                Some(n) => (file.clone(), n, pointer_push(pointer, "produces")),
                None => (
                    root.clone(),
                    root.root.get("produces")?,
                    "/produces".to_string(),
                ),
            };
            let hit = list
                .items()
                .iter()
                .position(|m| m.as_str().is_some_and(is_event_stream))?;
            return Some(self.location(
                &f,
                list.items()[hit].mark,
                &pointer_push(&p, &hit.to_string()),
            ));
        }
        let responses = op.get("responses")?;
        let responses_pointer = pointer_push(pointer, "responses");
        for entry in responses.entries() {
            if !entry.key.starts_with('2') {
                continue;
            }
            let rp = pointer_push(&responses_pointer, &entry.key);
            let target = match self.follow(file, &entry.value, &rp) {
                Some(Ok(t)) => Some(t),
                Some(Err(())) => continue,
                None => None,
            };
            let (rf, rn, rptr) = match &target {
                Some(t) => (t.file.clone(), t.node(), t.pointer.clone()),
                None => (file.clone(), &entry.value, rp),
            };
            if let Some(content) = rn.get("content") {
                for media in content.entries() {
                    if is_event_stream(&media.key) {
                        let mp = pointer_push(&pointer_push(&rptr, "content"), &media.key);
                        return Some(self.location(&rf, media.key_mark, &mp));
                    }
                }
            }
        }
        None
    }
}

/// `text/event-stream`, ignoring case and media-type parameters.
fn is_event_stream(media_type: &str) -> bool {
    media_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .eq_ignore_ascii_case("text/event-stream")
}

/// The path component of a server URL (absolute, protocol-relative or a bare path).
fn server_url_path(url: &str) -> String {
    let without_scheme = match url.find("://") {
        Some(i) => Some(&url[i + 3..]),
        None => url.strip_prefix("//"),
    };
    let path = match without_scheme {
        Some(rest) => rest.find('/').map_or("", |i| &rest[i..]),
        None => url,
    };
    let end = path.find(['?', '#']).unwrap_or(path.len());
    path[..end].to_string()
}

/// "" for the root, otherwise a leading slash and no trailing one.
fn normalize_base_path(path: &str) -> String {
    let trimmed = path.trim().trim_end_matches('/');
    if trimmed.is_empty() {
        String::new()
    } else if trimmed.starts_with('/') {
        trimmed.to_string()
    } else {
        format!("/{trimmed}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_paths_from_server_urls() {
        assert_eq!(
            normalize_base_path(&server_url_path("https://api.example.com/v1/")),
            "/v1"
        );
        assert_eq!(
            normalize_base_path(&server_url_path("https://api.example.com")),
            ""
        );
        assert_eq!(
            normalize_base_path(&server_url_path("//host/api/v10?x=1")),
            "/api/v10"
        );
        assert_eq!(normalize_base_path(&server_url_path("/2.0")), "/2.0");
        assert_eq!(normalize_base_path(&server_url_path("v2")), "/v2");
    }

    #[test]
    fn event_stream_media_types() {
        assert!(is_event_stream("text/event-stream"));
        assert!(is_event_stream("Text/Event-Stream; charset=utf-8"));
        assert!(!is_event_stream("application/json"));
    }

    fn read_source_name(dir: &Path, relative: &str) -> String {
        let path = dir.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, r#"{"openapi": "3.1.0", "paths": {}}"#).unwrap();
        let (spec, diagnostics) = read(&path, &Limits::default()).expect("the spec reads");
        assert!(!diagnostics.has_errors());
        spec.source_name
    }

    #[test]
    fn source_name_is_the_file_name() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_source_name(dir.path(), "api.json"), "api.json");
        assert_eq!(
            read_source_name(dir.path(), "nested/h\u{e9}llo.yaml"),
            "h\u{e9}llo.yaml"
        );
    }

    /// Outside Windows `\` is an ordinary character of a file name, not a folder separator.
    #[cfg(unix)]
    #[test]
    fn source_name_keeps_backslashes_of_the_file_name() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_source_name(dir.path(), "a\\b.json"), "a\\b.json");
    }

    #[test]
    fn percent_decoding_keeps_invalid_escapes() {
        assert_eq!(percent_decode("a%20b%zz%"), "a b%zz%");
        assert_eq!(percent_decode("%C3%A9"), "é");
    }
}
