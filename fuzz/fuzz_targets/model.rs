//! Stages 1-2 on arbitrary documents: reading with `$ref` resolution, classification and the
//! matcher never panic, and every diagnostic is located.
#![no_main]

use libfuzzer_sys::fuzz_target;
use retrygen::model::ModelOptions;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let json = data.first().is_some_and(|b| b & 1 == 1);
    let path = dir.path().join(if json { "spec.json" } else { "spec.yaml" });
    std::fs::write(&path, data).unwrap();
    let diagnostics = match retrygen::load_api(&path, &ModelOptions::default()) {
        Ok((api, d)) => {
            for op in &api.operations {
                let _ = api.classify(&op.method, &op.path);
            }
            d
        }
        Err(d) => d,
    };
    for d in diagnostics.iter() {
        assert!(d.location.line >= 1 && d.location.column >= 1, "{d}");
    }
});
