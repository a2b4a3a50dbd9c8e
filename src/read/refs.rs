//! `$ref` resolution: loading the root and referenced files (relative paths only; remote URLs
//! and cycles are errors) and following a reference to the node it names.

use super::*;

impl Reader {
    pub(super) fn load_root(&mut self, path: &Path, display: &str) -> Option<FileId> {
        match self.source.canonicalize(path) {
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
    pub(super) fn load_file(
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
        let text = match self.read_text(canonical) {
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
        let id = self.files.len() as FileId;
        let root = if referrer.is_some() {
            Context::REFERENCED
        } else {
            Context::DOCUMENT
        };
        let loaded = Self::parse_text(
            canonical,
            &text,
            id,
            &self.limits,
            self.skip.then_some(root),
        );
        match loaded {
            Ok(root) => {
                self.files.push(Rc::new(SourceFile {
                    path: canonical.to_path_buf(),
                    display,
                    root,
                    bytes: text.len(),
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

    /// The file's text, without a byte-order mark.
    fn read_text(&self, canonical: &Path) -> Result<String, String> {
        let mut text = self
            .source
            .read(canonical, self.limits.max_bytes)
            .and_then(|bytes| {
                String::from_utf8(bytes).map_err(|e| {
                    format!(
                        "it is not UTF-8 text (invalid byte at offset {})",
                        e.utf8_error().valid_up_to()
                    )
                })
            })?;
        if text.starts_with('\u{feff}') {
            text.drain(..'\u{feff}'.len_utf8());
        }
        Ok(text)
    }

    fn parse_text(
        canonical: &Path,
        text: &str,
        id: FileId,
        limits: &Limits,
        skip: Option<Context>,
    ) -> Result<Node, Vec<load::LoadError>> {
        let is_json = canonical
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        if is_json {
            json::load(text, id, limits, skip)
        } else {
            load::load(text, id, limits, skip)
        }
    }

    /// The slow path of skipping: a `$ref` reached into a subtree the loader skipped, so the
    /// file is loaded again in full (same file id, same positions) and replaces the partial tree.
    /// Holders of the partial tree keep it; nothing they read lies in a skipped part.
    fn load_in_full(&mut self, id: FileId) -> Option<Rc<SourceFile>> {
        let partial = self.files[id as usize].clone();
        let text = self.read_text(&partial.path).ok()?;
        // It loaded once with the same checks, so it loads again.
        let root = Self::parse_text(&partial.path, &text, id, &self.limits, None).ok()?;
        let full = Rc::new(SourceFile {
            path: partial.path.clone(),
            display: partial.display.clone(),
            root,
            bytes: partial.bytes,
        });
        self.files[id as usize] = full.clone();
        Some(full)
    }

    /// Follows `$ref`s starting at `node` (in `file`, at `pointer`) until a non-reference node.
    /// Returns None when `node` is not a reference; Some(Err) after reporting a broken chain.
    pub(super) fn follow(
        &mut self,
        file: &Rc<SourceFile>,
        node: &Node,
        pointer: &str,
    ) -> Option<Result<Target, ()>> {
        let reference = node.get("$ref")?;
        let mut current_file = file.clone();
        let mut current_ref = reference.clone();
        let mut current_pointer = pointer_push(pointer, "$ref");
        // Chains are short (at most `max_ref_chain`): a list is cheaper than a set.
        let mut seen: Vec<(FileId, String)> = Vec::new();
        let mut hops = 0usize;
        loop {
            // Located only when needed: most references resolve without a word.
            let at =
                |reader: &Self| reader.location(&current_file, current_ref.mark, &current_pointer);
            let Some(text) = current_ref.as_str() else {
                self.error(
                    at(self),
                    format!("`$ref` must be a string, found {}", current_ref.kind()),
                    "write the reference as a string such as \"#/components/parameters/Name\"",
                );
                return Some(Err(()));
            };
            hops += 1;
            if hops > self.limits.max_ref_chain {
                self.error(
                    at(self),
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
                self.error(at(self), format!("remote reference {text:?} is not supported"), "download the referenced document next to the spec and refer to it by a relative path");
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
                let joined = base.join(relative.as_ref());
                let canonical = match self.source.canonicalize(&joined) {
                    Ok(c) => c,
                    Err(e) => {
                        self.error(at(self), format!("cannot resolve {text:?}: {e}"), "check the relative path; it resolves against the folder of the file that contains the `$ref`");
                        return Some(Err(()));
                    }
                };
                let display = self.source.display(&canonical).unwrap_or_else(|| {
                    self.root_display_dir
                        .join(relative_path(&self.root_dir, &canonical))
                        .to_string_lossy()
                        .replace('\\', "/")
                });
                let referrer = at(self);
                match self.load_file(&canonical, display, Some(&referrer)) {
                    Some(id) => self.files[id as usize].clone(),
                    None => return Some(Err(())),
                }
            };
            let fragment = percent_decode(fragment).into_owned();
            if !fragment.is_empty() && !fragment.starts_with('/') {
                self.error(
                    at(self),
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
                    .map(|t| {
                        if t.contains('~') {
                            t.replace("~1", "/").replace("~0", "~")
                        } else {
                            t.to_string()
                        }
                    })
                    .collect()
            };
            let target_id = target_file.root.mark.file;
            if seen
                .iter()
                .any(|(id, f)| *id == target_id && *f == fragment)
            {
                self.error(at(self), format!("`$ref` cycle: {text:?} leads back to a reference already followed"), "break the cycle; a path item, operation, parameter or response must end in an object");
                return Some(Err(()));
            }
            seen.push((target_id, fragment.clone()));
            let mut target_file = target_file;
            let mut pointed = target_file.root.pointer(&tokens);
            if pointed == Pointed::Skipped {
                if let Some(full) = self.load_in_full(target_id) {
                    target_file = full;
                    pointed = target_file.root.pointer(&tokens);
                }
            }
            let Pointed::Found(target) = pointed else {
                self.error(
                    at(self),
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
}
