//! Stage 1 on arbitrary bytes: the YAML and JSON loaders return a tree or located errors, never
//! panic, never run away.
#![no_main]

use libfuzzer_sys::fuzz_target;
use retrygen::read::{json, load, Limits};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let limits = Limits::default();
    for result in [load::load(text, 0, &limits), json::load(text, 0, &limits)] {
        if let Err(errors) = result {
            assert!(!errors.is_empty());
            assert!(errors.iter().all(|e| e.line >= 1 && e.column >= 1));
        }
    }
});
