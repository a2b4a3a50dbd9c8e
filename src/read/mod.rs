//! Stage 1, read: an OpenAPI 2.0/3.0/3.1/3.2 document (YAML or JSON, one file or many) becomes
//! [`RawSpec`]: the operations with everything retry policy needs, `$ref`s resolved and every
//! fact carrying its source location. Nothing here decides a class; see [`crate::model`].

pub mod json;
pub mod load;
pub mod node;
mod openapi;
mod overlay;
pub mod policy;
mod refs;
pub mod source;

use crate::diag::{pointer_push, Diagnostic, Diagnostics, Location};
use crate::percent::percent_decode;
pub use load::Limits;
use node::{Context, FileId, Mark, Node, Pointed, Value};
use policy::{raw_value, RawPolicy, RawPolicyEntry};
pub use source::{FileSource, SpecRef};
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
    /// `x-retry-stream` on the operation (contract v3, A2), when it is valid: `resume` or
    /// `none` on a streaming operation (anything else is reported and left out).
    pub retry_stream: Option<Located<RetryStream>>,
    /// Header parameters of the operation and its path item (names as written).
    pub header_parameters: Vec<Located<String>>,
}

/// A valid `x-retry-stream` value (contract v3, A2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryStream {
    /// `resume`: the server continues the stream from `Last-Event-ID`.
    Resume,
    /// `none`: the stream is never resumed, whatever the operation declares.
    None,
}

impl RetryStream {
    pub fn name(self) -> &'static str {
        match self {
            RetryStream::Resume => "resume",
            RetryStream::None => "none",
        }
    }
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
    /// The overlays applied to the document, as diagnostics name them, in order.
    pub overlays: Vec<String>,
}

pub struct SourceFile {
    pub path: PathBuf,
    pub display: String,
    pub root: Node,
    /// The size of the file's text, to decide where its tree is freed.
    pub bytes: usize,
}

/// Returns the pages of the freed trees to the system (glibc keeps freed memory for later
/// allocations otherwise). The rest of the run needs far less than the tree held, so the peak
/// RSS of the process stays the tree's: Kubernetes 15.5 to about 14 MB (docs/benchmarks.md).
fn give_back_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only releases free memory; it takes the allocator's own locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Above this many bytes of input, the loaded trees are freed on a thread of their own.
const FREE_IN_BACKGROUND_BYTES: usize = 1 << 20;

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
    source: FileSource,
    /// Pointer inside its overlay file of every node and key an overlay brought in.
    overlay_pointers: HashMap<(FileId, u32, u32), String>,
    /// Nodes overlays copied into the document so far (bounded like alias expansion).
    overlay_nodes: usize,
    /// Whether the loaders skip what retry policy never reads ([`node::Skip`]).
    skip: bool,
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
            .found()
            .expect("target pointer was checked when resolved")
    }
}

/// Reads and resolves the document at `path`. Returns the spec with every problem found
/// (errors included: check [`Diagnostics::has_errors`]), or only the problems when the document
/// cannot be read as an OpenAPI document at all.
pub fn read(path: &Path, limits: &Limits) -> Result<(RawSpec, Diagnostics), Diagnostics> {
    read_spec(&SpecRef::file(path), limits)
}

/// [`read`] for a spec on disk or in a git revision (see [`SpecRef`]).
pub fn read_spec(spec: &SpecRef, limits: &Limits) -> Result<(RawSpec, Diagnostics), Diagnostics> {
    read_spec_with_overlays(spec, limits, &[], false)
}

/// [`read_spec`] with OpenAPI Overlay 1.0 documents (files on disk) applied in order to the
/// root document before it is walked. A target matching nothing is a warning, an error when
/// `strict`.
pub fn read_spec_with_overlays(
    spec: &SpecRef,
    limits: &Limits,
    overlays: &[PathBuf],
    strict: bool,
) -> Result<(RawSpec, Diagnostics), Diagnostics> {
    read_with(spec, limits, overlays, strict, true)
}

/// [`read`] building every node of every file: what reading gives without skipping, for the
/// tests and the corpus check that compare both ways.
pub fn read_in_full(path: &Path, limits: &Limits) -> Result<(RawSpec, Diagnostics), Diagnostics> {
    read_with(&SpecRef::file(path), limits, &[], false, false)
}

fn read_with(
    spec: &SpecRef,
    limits: &Limits,
    overlays: &[PathBuf],
    strict: bool,
    skip: bool,
) -> Result<(RawSpec, Diagnostics), Diagnostics> {
    let path = spec.path.as_path();
    let display = spec.display.clone();
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
        source: spec.source.clone(),
        overlay_pointers: HashMap::new(),
        overlay_nodes: 0,
        // Overlays address the whole tree (JSONPath), so they need every node built.
        skip: overlays.is_empty() && skip,
    };
    let Some(root_id) = reader.load_root(path, &display) else {
        return Err(reader.diagnostics);
    };
    let mut overlay_names = Vec::new();
    if !overlays.is_empty() {
        let mut tree = std::mem::replace(
            &mut Rc::get_mut(&mut reader.files[root_id as usize])
                .expect("only the reader holds the root yet")
                .root,
            Node {
                value: Value::Null,
                mark: Mark {
                    file: root_id,
                    line: 1,
                    column: 1,
                },
            },
        );
        for path in overlays {
            reader.apply_overlay(&mut tree, path, strict);
            overlay_names.push(source::display_path(path));
        }
        Rc::get_mut(&mut reader.files[root_id as usize])
            .expect("only the reader holds the root yet")
            .root = tree;
    }
    let root = reader.files[root_id as usize].clone();
    // With a readable root the spec comes back even beside errors, so the model can report its
    // own problems in the same run; callers check `has_errors`.
    let read = reader.read_document(&root, source_name(path));
    drop(root);
    reader.free_trees();
    match read {
        Some(mut spec) => {
            spec.overlays = overlay_names;
            Ok((spec, reader.diagnostics))
        }
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
    /// Frees the loaded trees, which nothing after reading needs. Freeing millions of nodes is
    /// about a fifth of reading a multi-megabyte document (profile in docs/benchmarks.md), so
    /// large inputs are freed on a thread of their own while the model and the renders run.
    fn free_trees(&mut self) {
        let files = std::mem::take(&mut self.files);
        let bytes: usize = files.iter().map(|f| f.bytes).sum();
        let trees: Vec<Node> = files
            .into_iter()
            .filter_map(|f| Rc::try_unwrap(f).ok())
            .map(|f| f.root)
            .collect();
        if bytes >= FREE_IN_BACKGROUND_BYTES {
            // If the thread cannot start, the closure is dropped here and the trees with it.
            let _ = std::thread::Builder::new()
                .name("retrygen-free".into())
                .spawn(move || {
                    drop(trees);
                    give_back_free_memory();
                });
        }
    }

    fn location(&self, file: &SourceFile, mark: Mark, pointer: &str) -> Location {
        // A value an overlay brought in is located in the overlay file, by its pointer there.
        if let Some(at) = self
            .overlay_pointers
            .get(&(mark.file, mark.line, mark.column))
        {
            return Location {
                file: self.files[mark.file as usize].display.clone(),
                line: mark.line as usize,
                column: mark.column as usize,
                pointer: at.clone(),
            };
        }
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
}

#[cfg(test)]
mod tests {
    use super::openapi::{is_event_stream, normalize_base_path, server_url_path};
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
