//! Stage 3: any document retrygen accepts renders in all six languages without an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use retrygen::emit::{self, TemplateSource};
use retrygen::model::ModelOptions;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spec.yaml");
    std::fs::write(&path, data).unwrap();
    if let Ok((api, _)) = retrygen::load_api(&path, &ModelOptions::default()) {
        for backend in emit::BACKENDS {
            let options = emit::resolve_options(backend, &Default::default()).unwrap();
            emit::render(&api, backend, &options, &[], &TemplateSource::Embedded).expect("renders");
        }
    }
});
