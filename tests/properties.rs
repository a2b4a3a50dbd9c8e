//! Properties over generated inputs (proptest): reading, classification and rendering never
//! panic, every diagnostic has a location, reading with skipping gives what reading every node
//! gives, and the safety invariants of classification hold.

use proptest::prelude::*;
use retrygen::cli::listed;
use retrygen::emit::{self, TemplateSource};
use retrygen::load_api;
use retrygen::model::{ModelOptions, ReplayClass};
use serde_json::{json, Map, Value};

fn check_located(d: &retrygen::diag::Diagnostics) {
    for diagnostic in d.iter() {
        let at = &diagnostic.location;
        assert!(
            at.line >= 1 && at.column >= 1 && !at.file.is_empty(),
            "unlocated: {diagnostic}"
        );
        assert!(!diagnostic.message.is_empty());
    }
}

fn read_text(text: &[u8], extension: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("spec.{extension}"));
    std::fs::write(&path, text).unwrap();
    let limits = retrygen::read::Limits::default();
    assert_eq!(
        format!("{:?}", retrygen::read::read(&path, &limits)),
        format!("{:?}", retrygen::read::read_in_full(&path, &limits)),
        "skipping changed the reading of {:?}",
        String::from_utf8_lossy(text)
    );
    match load_api(&path, &ModelOptions::default()) {
        Ok((_, warnings)) => check_located(&warnings),
        Err(errors) => {
            assert!(errors.has_errors() || !errors.is_empty());
            check_located(&errors)
        }
    }
}

/// Text that is YAML-ish: fragments that exercise the parser's corners.
fn yamlish() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        Just("openapi: 3.1.0\n".to_string()),
        Just("swagger: \"2.0\"\n".to_string()),
        Just("paths:\n".to_string()),
        Just("  /a/{x}:\n".to_string()),
        Just("    get: {responses: {}}\n".to_string()),
        Just("    post:\n      x-idempotent: false\n".to_string()),
        Just("  $ref: '#/x'\n".to_string()),
        Just("&a [*a]\n".to_string()),
        Just("? [a]\n: b\n".to_string()),
        Just("- !!binary x\n".to_string()),
        Just("definitions:\n".to_string()),
        Just("  schema: {a: 1, a: 2}\n".to_string()),
        Just("    description: &d [x]\n".to_string()),
        Just("    summary: *d\n".to_string()),
        Just("    parameters: [{name: X-K, in: header, schema: {}}]\n".to_string()),
        Just("{\"info\": {\"x\": [1, {\"x\": 2, \"x\": 3}]}, \"paths\": {}}\n".to_string()),
        Just("{\"a\": [1, {\"b\": \"\\ud800\"}]}\n".to_string()),
        "[ -~\\n\\t{}\\[\\]:,&*!|>'\"%@`#-]{0,12}",
    ];
    prop::collection::vec(fragment, 0..12).prop_map(|v| v.concat())
}

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "patch", "options", "head", "trace",
];

#[derive(Debug, Clone)]
struct GenOp {
    method: usize,
    annotation: Option<bool>,
    retry: Option<bool>,
    key_header: Option<&'static str>,
    streaming: bool,
}

#[derive(Debug, Clone)]
struct GenPath {
    segments: Vec<String>,
    annotation: Option<bool>,
    ops: Vec<GenOp>,
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{1,6}",
        Just("{id}".to_string()),
        Just("{name}.{ext}".to_string()),
        Just("v{n}".to_string()),
        Just("a%20b".to_string()),
        "[\\x20-\\x7e&&[^{}/?#]]{1,4}",
        "\\PC{1,3}".prop_filter("no template characters", |s| !s
            .contains(['{', '}', '/', '?', '#'])),
    ]
}

fn gen_op() -> impl Strategy<Value = GenOp> {
    (
        0..METHODS.len(),
        prop::option::of(any::<bool>()),
        prop::option::of(any::<bool>()),
        prop::option::of(prop_oneof![
            Just("Idempotency-Key"),
            Just("x-idempotency-key"),
            Just("X-Request-Id")
        ]),
        any::<bool>(),
    )
        .prop_map(|(method, annotation, retry, key_header, streaming)| GenOp {
            method,
            annotation,
            retry,
            key_header,
            streaming,
        })
}

fn gen_spec() -> impl Strategy<Value = (Option<bool>, Vec<GenPath>)> {
    let path = (
        prop::collection::vec(segment(), 0..4),
        prop::option::of(any::<bool>()),
        prop::collection::vec(gen_op(), 1..4),
    )
        .prop_map(|(segments, annotation, ops)| GenPath {
            segments,
            annotation,
            ops,
        });
    (
        prop::option::of(any::<bool>()),
        prop::collection::vec(path, 0..10),
    )
}

fn spec_json(root: Option<bool>, paths: &[GenPath]) -> Value {
    let mut paths_json = Map::new();
    for p in paths {
        let key = format!("/{}", p.segments.join("/"));
        let mut item = Map::new();
        if let Some(a) = p.annotation {
            item.insert("x-idempotent".into(), json!(a));
        }
        for op in &p.ops {
            let mut o = Map::new();
            if let Some(a) = op.annotation {
                o.insert("x-idempotent".into(), json!(a));
            }
            if let Some(r) = op.retry {
                o.insert("x-retry".into(), json!(r));
            }
            if let Some(h) = op.key_header {
                o.insert(
                    "parameters".into(),
                    json!([{"name": h, "in": "header", "schema": {"type": "string"}}]),
                );
            }
            let content = if op.streaming {
                json!({"text/event-stream": {}})
            } else {
                json!({"application/json": {}})
            };
            o.insert(
                "responses".into(),
                json!({"200": {"description": "ok", "content": content}}),
            );
            item.insert(METHODS[op.method].into(), Value::Object(o));
        }
        paths_json.insert(key, Value::Object(item));
    }
    let mut doc = json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "servers": [{"url": "https://x/base"}], "paths": paths_json});
    if let Some(r) = root {
        doc["x-idempotent"] = json!(r);
    }
    doc
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn reading_arbitrary_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        read_text(&bytes, "yaml");
        read_text(&bytes, "json");
    }

    #[test]
    fn reading_yamlish_text_never_panics(text in yamlish()) {
        read_text(text.as_bytes(), "yaml");
        read_text(text.as_bytes(), "json");
    }

    #[test]
    fn classification_is_safe_and_rendering_never_panics((root, paths) in gen_spec()) {
        let doc = spec_json(root, &paths);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("spec.json");
        std::fs::write(&file, serde_json::to_string(&doc).unwrap()).unwrap();
        let (api, diagnostics) = match load_api(&file, &ModelOptions::default()) {
            Ok(ok) => ok,
            Err(errors) => {
                // Equivalent templates with different classes are the one expected error here.
                check_located(&errors);
                prop_assert!(errors.iter().all(|d| !d.is_error() || d.message.contains("which matches the same requests")), "{errors}");
                return Ok(());
            }
        };
        check_located(&diagnostics);
        // Invariants per generated operation (the JSON object dedupes paths and methods: the
        // document decides which operation exists).
        for (key, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap().iter().filter(|(k, _)| METHODS.contains(&k.as_str())) {
                let upper = method.to_ascii_uppercase();
                let model = api.operations.iter().find(|o| &o.path == key && o.method == upper).expect("every operation is in the model");
                let has_key = op["parameters"].as_array().is_some_and(|ps| ps.iter().any(|p| p["name"].as_str().is_some_and(|n| n.eq_ignore_ascii_case("idempotency-key") || n.eq_ignore_ascii_case("x-idempotency-key"))));
                let unannotated = op.get("x-idempotent").is_none() && item.get("x-idempotent").is_none() && doc.get("x-idempotent").is_none();
                if unannotated && (upper == "POST" || upper == "PATCH") {
                    let allowed: &[ReplayClass] = if has_key { &[ReplayClass::Keyed, ReplayClass::NoRetry] } else { &[ReplayClass::NonReplayable, ReplayClass::NoRetry] };
                    prop_assert!(allowed.contains(&model.class), "unannotated {upper} {key} is {:?}", model.class);
                }
                if op.get("x-idempotent") == Some(&json!(false)) {
                    prop_assert!(model.class != ReplayClass::Idempotent, "operation-level false overridden at {upper} {key}");
                }
                if op.get("x-retry") == Some(&json!(false)) {
                    prop_assert_eq!(model.class, ReplayClass::NoRetry);
                }
                // Contract v3, A1-A2: an event stream is an attribute, never a class; without a
                // Last-Event-ID header parameter or x-retry-stream it is not resumable.
                let streams = op["responses"]["200"]["content"].get("text/event-stream").is_some();
                prop_assert_eq!(model.streaming(), streams, "{} {}", upper, key);
                prop_assert!(!model.resumable(), "{upper} {key} declares no resume");
            }
        }
        // `list --format json` is the operation table.
        let rows = listed(&api);
        prop_assert_eq!(rows.len(), api.operations.len());
        for (row, op) in rows.iter().zip(&api.operations) {
            prop_assert_eq!((row.method, row.path, row.operation_id, row.class), (op.method.as_str(), op.path.as_str(), op.operation_id.as_deref(), op.class.name()));
            prop_assert_eq!((row.streaming, row.resumable), (op.streaming(), op.resumable()));
        }
        // Every operation is found again through a concrete path, with the base path or without.
        for op in &api.operations {
            let concrete: String = op.template.segments.iter().map(|s| {
                use retrygen::model::path::{Piece, Segment};
                match s {
                    Segment::Literal(l) => format!("/{l}"),
                    Segment::Param(_) => "/zz9".to_string(),
                    Segment::Mixed(pieces) => format!("/{}", pieces.iter().map(|p| match p { Piece::Literal(l) => l.as_str(), Piece::Param(_) => "q" }).collect::<String>()),
                }
            }).collect();
            let found = api.classify(&op.method, &format!("/base{concrete}"));
            let matched = found.operation.map(|i| &api.operations[i]);
            prop_assert!(matched.is_some(), "{} {} not found via {concrete}", op.method, op.path);
        }
        for backend in emit::BACKENDS {
            let options = emit::resolve_options(backend, &Default::default()).unwrap();
            emit::render(&api, backend, &options, &[], &TemplateSource::Embedded).unwrap();
        }
    }
}
