//! The OpenAPI walk: version, base path, path items, operations, parameters and responses:
//! only what retry policy needs, every fact located.

use super::*;

impl Reader {
    /// Reads an optional boolean extension, reporting any non-boolean value.
    pub(super) fn bool_extension(
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

    pub(super) fn read_document(
        &mut self,
        root: &Rc<SourceFile>,
        source_name: String,
    ) -> Option<RawSpec> {
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
                        key: entry.key.to_string(),
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
            overlays: Vec::new(),
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
                let key: &str = &entry.key;
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
        let retry_stream = self.retry_stream(&op_file, op, &op_pointer, streaming.is_some());
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
            retry_stream,
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

    /// `x-retry-stream` (contract v3, A2): `resume` or `none`, and only on an operation that
    /// streams; anything else is a spec error.
    fn retry_stream(
        &mut self,
        file: &SourceFile,
        op: &Node,
        pointer: &str,
        streaming: bool,
    ) -> Option<Located<RetryStream>> {
        let key = "x-retry-stream";
        let value = op.get(key)?;
        let at = self.location(file, value.mark, &pointer_push(pointer, key));
        let parsed = match &value.value {
            Value::String(s) if s == "resume" => Some(RetryStream::Resume),
            Value::String(s) if s == "none" => Some(RetryStream::None),
            _ => None,
        };
        let Some(parsed) = parsed else {
            let found = match &value.value {
                Value::String(s) => format!("the string {s:?}"),
                Value::Number(n) => format!("the number {n}"),
                Value::Bool(b) => format!("the boolean {b}"),
                _ => value.kind().to_string(),
            };
            self.error(
                at,
                format!("`{key}` must be `resume` or `none`, found {found}"),
                format!("write `{key}: resume` (the server continues the stream from Last-Event-ID) or `{key}: none` (never resumed)"),
            );
            return None;
        };
        if !streaming {
            self.error(
                at,
                format!(
                    "`{key}: {}` on an operation that does not stream: no 2xx response has a `text/event-stream` media type",
                    parsed.name()
                ),
                format!("remove `{key}`, or declare the event stream (`content: {{text/event-stream: ...}}` on a 2xx response; Swagger 2.0: `produces`)"),
            );
            return None;
        }
        Some(Located { value: parsed, at })
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
pub(super) fn is_event_stream(media_type: &str) -> bool {
    media_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .eq_ignore_ascii_case("text/event-stream")
}

/// The path component of a server URL (absolute, protocol-relative or a bare path).
pub(super) fn server_url_path(url: &str) -> String {
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
pub(super) fn normalize_base_path(path: &str) -> String {
    let trimmed = path.trim().trim_end_matches('/');
    if trimmed.is_empty() {
        String::new()
    } else if trimmed.starts_with('/') {
        trimmed.to_string()
    } else {
        format!("/{trimmed}")
    }
}
