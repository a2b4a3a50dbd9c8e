//! The corpus run of `retrygen diff`: every document of the shared corpus diffed against itself
//! yields no change, and every JSON one against a seeded mutation of itself (an operation marked
//! `x-retry: false`, another removed) yields exactly those mutations. The corpus lives beside
//! the repository (`../shared/corpus`, or `RETRYGEN_CORPUS`); without it the test says so and
//! checks nothing.

use retrygen::diff::{diff, Kind, Risk};
use retrygen::{load_api, Api, ModelOptions, ReplayClass};
use std::path::{Path, PathBuf};

fn corpus() -> Option<PathBuf> {
    let dir = std::env::var_os("RETRYGEN_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    dir.is_dir().then_some(dir)
}

fn load(path: &Path) -> Option<Api> {
    load_api(path, &ModelOptions::default())
        .ok()
        .map(|(api, _)| api)
}

#[test]
fn corpus_documents_diff_to_exactly_their_mutations() {
    let Some(dir) = corpus() else {
        eprintln!("no corpus at ../shared/corpus (set RETRYGEN_CORPUS); nothing checked");
        return;
    };
    let mut docs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e == "json" || e == "yaml" || e == "yml")
        })
        .collect();
    docs.sort();
    let mut mutated = 0;
    for (seed, doc) in docs.iter().enumerate() {
        let Some(api) = load(doc) else { continue };
        let name = doc.display().to_string();
        let same = diff(&api, &api, &name, &name);
        assert!(same.changes.is_empty(), "{name}: {:?}", same.changes);
        if doc.extension().is_some_and(|e| e != "json") {
            continue;
        }
        // Seeded choice: an idempotent GET written inline, and another operation to remove.
        let mut json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(doc).unwrap()).unwrap();
        let inline = |path: &str, method: &str| {
            json["paths"][path][method.to_ascii_lowercase()].is_object()
                && json["paths"][path].get("$ref").is_none()
                && json["paths"][path].get("x-retry").is_none()
        };
        let candidates: Vec<usize> = (0..api.operations.len())
            .filter(|&i| {
                let op = &api.operations[i];
                op.method == "GET"
                    && op.class == ReplayClass::Idempotent
                    && inline(&op.path, &op.method)
            })
            .collect();
        if candidates.len() < 2 {
            continue;
        }
        let flip = &api.operations[candidates[seed % candidates.len()]];
        let gone = &api.operations[candidates[(seed + 1) % candidates.len()]];
        if flip.path == gone.path {
            continue;
        }
        json["paths"][&flip.path]["get"]["x-retry"] = serde_json::Value::Bool(false);
        json["paths"][&gone.path]
            .as_object_mut()
            .unwrap()
            .remove("get");
        let tmp = tempfile::tempdir().unwrap();
        let copy = tmp.path().join(doc.file_name().unwrap());
        std::fs::write(&copy, serde_json::to_string(&json).unwrap()).unwrap();
        let Some(new) = load(&copy) else {
            panic!("{name}: the mutated copy does not load")
        };
        let report = diff(&api, &new, &name, "mutated");
        type Entry = (Risk, Kind, String, Vec<(Risk, Kind)>);
        let got: Vec<Entry> = report
            .changes
            .iter()
            .map(|c| {
                let facets = c.facets.iter().map(|f| (f.risk, f.kind)).collect();
                (c.risk, c.kind, c.path.clone().unwrap_or_default(), facets)
            })
            .collect();
        // The flipped GET: one safer entry, its class and its deciding source as facets (the
        // annotation now decides, which is safer on its own too).
        let mut want: Vec<Entry> = vec![(
            Risk::Safer,
            Kind::Operation,
            flip.path.clone(),
            vec![
                (Risk::Safer, Kind::Class),
                (Risk::Safer, Kind::ReasonSource),
            ],
        )];
        // The removed GET's requests fall to the GET default: the same class, so neutral.
        want.push((Risk::Neutral, Kind::Removed, gone.path.clone(), Vec::new()));
        assert_eq!(got, want, "{name}");
        mutated += 1;
    }
    assert!(
        mutated > 0,
        "no JSON document of the corpus could be mutated"
    );
}
