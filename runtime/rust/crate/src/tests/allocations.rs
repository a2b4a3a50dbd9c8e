//! `classify` allocates nothing once the matcher is built: no upper-cased method, no list of
//! decoded segments (issue 9). A counting global allocator for this test binary counts the
//! allocations of the current thread while a test asks it to.

use super::matcher::TABLE;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    if COUNTING.try_with(Cell::get).unwrap_or(false) {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
    }
}

// SAFETY: every call is forwarded to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The allocations `f` makes on this thread.
fn allocations(f: impl FnOnce()) -> usize {
    ALLOCATIONS.with(|n| n.set(0));
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCATIONS.with(Cell::get)
}

const REQUESTS: [(&str, &str); 14] = [
    ("get", "/api/items"),
    ("Get", "/items/special/parts/exact?x=1#frag"),
    ("delete", "/api/items/42/"),
    ("GET", "/caf%C3%A9"),
    ("GET", "/caf%E9"),
    ("get", "/a%2Fb"),
    ("GET", "/files/x%2Etar.gz"),
    ("GET", "/files/report.tar.gz"),
    ("GET", "/files/x.json.json"),
    ("GET", "/emoji/a\u{ff61}zb\u{1f600}c"),
    ("post", "/keyed"),
    ("query", "/nothing/at/all"),
    ("PATCH", "/items"),
    ("GET", ""),
];

#[test]
fn classify_allocates_nothing() {
    // The counter works: a String is one allocation.
    assert_eq!(
        allocations(|| drop(std::hint::black_box("GET".to_lowercase()))),
        1
    );
    // The first call builds the matcher.
    let _ = TABLE.classify("GET", "/");
    let mut found = 0;
    let n = allocations(|| {
        for _ in 0..100 {
            for (method, path) in REQUESTS {
                let c = TABLE.classify(std::hint::black_box(method), std::hint::black_box(path));
                found += usize::from(c.operation.is_some());
            }
        }
    });
    assert_eq!(n, 0, "classify allocated {n} times");
    assert_eq!(found, 100 * 11);
}

#[test]
fn a_classifier_and_decide_allocate_nothing() {
    use crate::{decide, Classifier, DecisionInput, Outcome, ReplayClass, UnknownOperationClass};
    let proxy = Classifier::new(
        &TABLE,
        Some("https://gw.example/proxy/api/"),
        UnknownOperationClass::NoRetry,
    );
    let _ = proxy.classify("GET", "/");
    let policy = super::decide::policy();
    let mut found = 0;
    let n = allocations(|| {
        for _ in 0..100 {
            for (method, path) in REQUESTS {
                let c = proxy.classify(std::hint::black_box(method), std::hint::black_box(path));
                found += usize::from(c.operation.is_some());
                let full = proxy.classify(method, "https://h.example:8443/proxy/api/items?q=1");
                found += usize::from(full.operation.is_some());
            }
            let outcome = Outcome::Status {
                status: 503,
                retry_after: Some("Sun, 06 Nov 1994 08:49:47 GMT"),
                retry_after_ms: None,
                directive: Some(" true "),
            };
            let input = DecisionInput {
                budget_tokens: Some(500),
                ..DecisionInput::new(ReplayClass::Idempotent, outcome, 784_111_777_000, 0.5)
            };
            let d = decide(&policy, std::hint::black_box(&input)).expect("valid");
            assert!(d.retry);
        }
    });
    assert_eq!(n, 0, "classify or decide allocated {n} times");
    assert!(found > 0);
}
