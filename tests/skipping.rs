//! The loaders skip what retry policy never reads (src/read/node.rs, `Skip`). Reading with
//! skipping must give exactly what reading every node gives: the same operations, the same
//! diagnostics at the same file:line:column and pointer, for every kind of document, including
//! those that reach into a skipped part (the slow path) or put a problem inside one.

use retrygen::read::{self, json, load, node::Context, Limits};
use std::path::{Path, PathBuf};

/// Reads `path` both ways and requires the same result; returns it for further checks.
fn same_both_ways(path: &Path) -> String {
    let limits = Limits::default();
    let skipping = format!("{:#?}", read::read(path, &limits));
    let full = format!("{:#?}", read::read_in_full(path, &limits));
    assert_eq!(skipping, full, "{}", path.display());
    skipping
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn every_project_spec_reads_the_same_both_ways() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut specs = vec![
        root.join("specs/multifile/openapi.yaml"),
        root.join("conformance/faults/spec.yaml"),
    ];
    for dir in ["specs", "tests/fixtures", "tests/fixtures/diff"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "yaml" || e == "json") {
                specs.push(path);
            }
        }
    }
    assert!(specs.len() > 10, "{specs:?}");
    for spec in &specs {
        same_both_ways(spec);
    }
}

/// Names the reader reads, used where `Skip` would otherwise skip: a server variable, a
/// component parameter and a response called like skipped fields.
#[test]
fn user_names_that_look_like_skipped_fields_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(
        dir.path(),
        "api.yaml",
        r##"openapi: 3.1.0
info: {title: t, version: "1", description: {not: a string}}
servers:
  - url: https://api.example/{example}
    variables:
      example: {default: v9, description: the version}
paths:
  /a:
    post:
      x-idempotent: true
      parameters:
        - $ref: '#/components/parameters/schema'
        - $ref: '#/components/parameters/description'
      responses:
        "200": {$ref: '#/components/responses/example'}
components:
  parameters:
    schema: {name: Idempotency-Key, in: header, schema: {type: string}}
    description: {name: X-Trace, in: header, description: traced}
  responses:
    example:
      description: events
      content:
        text/event-stream: {schema: {type: string}}
"##,
    );
    let text = same_both_ways(&spec);
    assert!(text.contains("base_path: \"/v9\""), "{text}");
    assert!(
        text.contains("Idempotency-Key") && text.contains("X-Trace"),
        "{text}"
    );
    assert!(text.contains("streaming: Some("), "{text}");
}

/// A `$ref` into a part the loader skipped (here a path item kept under `info`, a parameter
/// under a schema, and a file whose root maps a name that is a skipped field) reloads that file
/// in full and resolves as without skipping.
#[test]
fn references_into_skipped_parts_resolve() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "shared.json",
        r##"{"schema": {"name": "X-Shared", "in": "header"},
            "examples": {"get": {"operationId": "fromExamples", "responses": {}}}}"##,
    );
    let spec = write(
        dir.path(),
        "api.json",
        r##"{"openapi": "3.0.3",
  "info": {"title": "t", "version": "1", "x-item": {"get": {"operationId": "hidden", "x-idempotent": false, "responses": {}}}},
  "paths": {
    "/hidden": {"$ref": "#/info/x-item"},
    "/p": {"x-shared": {"delete": {"operationId": "leftOut", "responses": {}}}, "get": {"parameters": [{"$ref": "#/components/schemas/S/x-param"}, {"$ref": "shared.json#/schema"}], "responses": {}}},
    "/e": {"$ref": "shared.json#/examples"},
    "/left-out": {"$ref": "#/paths/~1p/x-shared"}
  },
  "components": {"schemas": {"S": {"type": "object", "x-param": {"name": "X-Deep", "in": "header"}}}}
}"##,
    );
    let text = same_both_ways(&spec);
    for wanted in [
        "\"hidden\"",
        "X-Deep",
        "X-Shared",
        "fromExamples",
        "leftOut",
    ] {
        assert!(text.contains(wanted), "{wanted} in {text}");
    }
}

/// Problems inside skipped parts are reported exactly as the full load reports them.
#[test]
fn problems_inside_skipped_parts_are_reported_alike() {
    let limits = Limits::default();
    let nested = format!(
        "{{\"components\": {{\"schemas\": {}1{}}}}}",
        "[".repeat(300),
        "]".repeat(300)
    );
    let json_docs = [
        r#"{"components": {"schemas": {"A": {"type": "object", "type": "string"}}}}"#.to_string(),
        r#"{"components": {"schemas": {"A": {"x": "a\u00e9", "x": 1}}}}"#.to_string(),
        r#"{"definitions": {"A": [1, 2,]}}"#.to_string(),
        "{\"definitions\": {\"A\": \"tab\there\"}}".to_string(),
        r#"{"info": {"description": "bad \q escape"}}"#.to_string(),
        r#"{"definitions": {"A": 01}}"#.to_string(),
        r#"{"paths": {"/a": {"summary": "x", "get": {}, "summary": "y"}}}"#.to_string(),
        r#"{"paths": {"/a": {"get": {"tags": [], "operationId": "a", "tags": 1}}}}"#.to_string(),
        nested,
    ];
    for doc in &json_docs {
        let full = json::load(doc, 0, &limits, None).expect_err(doc);
        assert_eq!(
            json::load(doc, 0, &limits, Some(Context::DOCUMENT)).expect_err(doc),
            full,
            "{doc}"
        );
    }
    let yaml_docs = [
        "components:\n  schemas:\n    A:\n      type: object\n      type: string\n",
        "definitions:\n  A: {~: 1, null: 2}\n",
        "definitions:\n  A: {true: 1, 'true': 2}\n",
        "info:\n  description: [a, b\n",
        "definitions:\n  A:\n    - *nowhere\n",
        "paths:\n  /a:\n    summary: x\n    get: {}\n    summary: y\n",
    ];
    for doc in yaml_docs {
        let full = load::load(doc, 0, &limits, None).expect_err(doc);
        assert_eq!(
            load::load(doc, 0, &limits, Some(Context::DOCUMENT)).expect_err(doc),
            full,
            "{doc}"
        );
    }
}

/// What the skip must not reject: keys equal only before decoding, anchors and aliases that
/// cross into skipped parts, big mappings (the key set grows from a list to a hash set).
#[test]
fn valid_documents_load_alike() {
    let limits = Limits::default();
    let many: String = (0..100)
        .map(|i| format!("\"k{i}\": {i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let json_docs = [
        r#"{"definitions": {"A": {"a\u0062": 1, "abc": 2}}, "paths": {}}"#.to_string(),
        format!(r#"{{"definitions": {{{many}}}, "x": [true, false, null, -1.5e3]}}"#),
        r#"{"info": {"description": "line\nbreak \ud83d\udc4d"}}"#.to_string(),
    ];
    for doc in &json_docs {
        let full = json::load(doc, 0, &limits, None).expect(doc);
        let skipped = json::load(doc, 0, &limits, Some(Context::DOCUMENT)).expect(doc);
        assert_eq!(full.get("paths"), skipped.get("paths"), "{doc}");
    }
    let yaml_docs = [
        "definitions:\n  A: &shared {name: X-A, in: header}\nparameters:\n  p: *shared\n",
        "x-anchors:\n  - &p {name: X-B, in: header}\ninfo:\n  x-copy: *p\n",
        "definitions:\n  A: {'a': 1, \"b\": 2, c: 3}\n",
    ];
    for doc in yaml_docs {
        let full = load::load(doc, 0, &limits, None).expect(doc);
        let skipped = load::load(doc, 0, &limits, Some(Context::DOCUMENT)).expect(doc);
        assert_eq!(full.get("parameters"), skipped.get("parameters"), "{doc}");
    }
}

/// Extra checks over the public corpus when it lies beside the project (`../shared/corpus`):
/// every document, one file or many, reads the same both ways.
#[test]
fn corpus_documents_read_the_same_both_ways() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    let Ok(entries) = std::fs::read_dir(&corpus) else {
        eprintln!("no ../shared/corpus here; the project's own specs are checked above");
        return;
    };
    let mut count = 0;
    for entry in entries {
        let path = entry.unwrap().path();
        let spec = if path.is_dir() {
            // A multi-file document: its entry file.
            path.join("specification/DigitalOcean-public.v2.yaml")
        } else {
            path
        };
        if spec
            .extension()
            .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
            && spec.exists()
        {
            same_both_ways(&spec);
            count += 1;
        }
    }
    assert!(count > 0);
}
