//! Stage 1 on arbitrary bytes: the YAML and JSON loaders return a tree or located errors, never
//! panic, never run away; skipping what retry policy never reads accepts and rejects exactly
//! what the full load does, with the same diagnostics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use retrygen::read::{json, load, node::Context, Limits};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let limits = Limits::default();
    let yaml = load::load(text, 0, &limits, None);
    let json = json::load(text, 0, &limits, None);
    for root in [Context::DOCUMENT, Context::REFERENCED] {
        assert_eq!(
            load::load(text, 0, &limits, Some(root)).err(),
            yaml.as_ref().err().cloned()
        );
        assert_eq!(
            json::load(text, 0, &limits, Some(root)).err(),
            json.as_ref().err().cloned()
        );
    }
    for result in [yaml, json] {
        if let Err(errors) = result {
            assert!(!errors.is_empty());
            assert!(errors.iter().all(|e| e.line >= 1 && e.column >= 1));
        }
    }
});
