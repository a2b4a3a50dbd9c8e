//! Matching bench for the generated Rust module (see bench/README.md). Built by `cargo xtask bench`
//! in a throwaway cargo project that places the module folder beside this file as `retry_policy/` and
//! depends on the `regex` crate for the baseline scan.

#[allow(dead_code)]
mod retry_policy;

use regex::Regex;
use retry_policy::{classify, ReplayClass, BASE_PATH, OPERATIONS};
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The system allocator, counting the bytes it hands out (`classify_alloc_bytes`).
struct Counting;

static ALLOCATED: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size() as u64, Ordering::Relaxed);
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size() as u64, Ordering::Relaxed);
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATED.fetch_add(new_size as u64, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The baseline: `[method, anchored regex]` pairs of every operation, in table order.
struct Scan {
    table: Vec<(&'static str, Regex)>,
}

impl Scan {
    fn new() -> Scan {
        let table = OPERATIONS
            .iter()
            .map(|op| (op.method, Regex::new(&op.pattern()).expect("pattern compiles")))
            .collect();
        Scan { table }
    }

    fn find(&self, method: &str, path: &str) -> isize {
        let path = &path[..path.find(['?', '#']).unwrap_or(path.len())];
        let path = match path.strip_prefix(BASE_PATH) {
            Some(rest) if !BASE_PATH.is_empty() && (rest.is_empty() || rest.starts_with('/')) => {
                rest
            }
            _ => path,
        };
        for (index, (m, re)) in self.table.iter().enumerate() {
            if *m == method && re.is_match(path) {
                return index as isize;
            }
        }
        -1
    }
}

fn class_letter(class: ReplayClass) -> char {
    match class {
        ReplayClass::Idempotent => 'i',
        ReplayClass::Keyed => 'k',
        ReplayClass::NonReplayable => 'n',
        ReplayClass::NoRetry => 'r',
    }
}

fn operation_index(op: &retry_policy::Operation) -> isize {
    OPERATIONS
        .iter()
        .position(|o| std::ptr::eq(o, op))
        .map_or(-1, |i| i as isize)
}

/// Warms `pass` up for `warm`, then doubles the number of passes until one measurement lasts
/// at least `min`; returns that number.
fn calibrate(warm: Duration, min: Duration, mut pass: impl FnMut()) -> u64 {
    let start = Instant::now();
    pass();
    while start.elapsed() < warm {
        pass();
    }
    let mut rounds: u64 = 1;
    loop {
        let t = Instant::now();
        for _ in 0..rounds {
            pass();
        }
        if t.elapsed() >= min || rounds >= 1 << 24 {
            return rounds;
        }
        rounds *= 2;
    }
}

/// Nanoseconds per call of `rounds` passes over `requests` requests.
fn sample(requests: usize, rounds: u64, mut pass: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..rounds {
        pass();
    }
    t.elapsed().as_nanos() as f64 / (rounds as f64 * requests as f64)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        eprintln!("usage: bench MIXFILE WARM_MS MIN_MS SAMPLES");
        std::process::exit(2);
    }
    let text = std::fs::read_to_string(&args[1]).expect("reading the mix");
    let warm = Duration::from_millis(args[2].parse().expect("WARM_MS"));
    let min = Duration::from_millis(args[3].parse().expect("MIN_MS"));
    let samples: usize = args[4].parse().expect("SAMPLES");
    let mix: Vec<(String, String)> = text
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (m, p) = l.split_once('\t').expect("METHOD<TAB>PATH");
            (m.to_string(), p.to_string())
        })
        .collect();
    let scan = Scan::new();
    let mut sink: u64 = 0;
    let mut classify_pass = || {
        for (m, p) in &mix {
            let c = classify(black_box(m), black_box(p));
            sink += u64::from(c.operation.is_some()) + c.class as u64;
        }
    };
    let classify_rounds = calibrate(warm, min, &mut classify_pass);
    let mut scanned_total: u64 = 0;
    let mut scan_pass = || {
        for (m, p) in &mix {
            scanned_total = scanned_total.wrapping_add(scan.find(black_box(m), black_box(p)) as u64);
        }
    };
    let scan_rounds = calibrate(warm, min, &mut scan_pass);
    // Samples alternate between the two, so that both see the same machine.
    let (mut classify_samples, mut scan_samples) = (Vec::new(), Vec::new());
    for _ in 0..samples {
        classify_samples.push(sample(mix.len(), classify_rounds, &mut classify_pass));
        scan_samples.push(sample(mix.len(), scan_rounds, &mut scan_pass));
    }
    let classify_ns = median(classify_samples);
    let scan_ns = median(scan_samples);
    // After the timing: the bytes classify allocates per call, over passes of the whole mix.
    const ALLOC_PASSES: u64 = 10;
    let before = ALLOCATED.load(Ordering::Relaxed);
    for _ in 0..ALLOC_PASSES {
        classify_pass();
    }
    let allocated = ALLOCATED.load(Ordering::Relaxed) - before;
    let classify_alloc_bytes = allocated as f64 / (ALLOC_PASSES as f64 * mix.len() as f64);
    let mut ops = Vec::new();
    let mut classes = String::new();
    let mut scanned = Vec::new();
    for (m, p) in &mix {
        let c = classify(m, p);
        ops.push(c.operation.map_or(-1, operation_index).to_string());
        classes.push(class_letter(c.class));
        scanned.push(scan.find(m, p).to_string());
    }
    println!("classify_ns {classify_ns:.2}");
    println!("scan_ns {scan_ns:.2}");
    println!("classify_alloc_bytes {classify_alloc_bytes:.2}");
    println!("classify_ops {}", ops.join(","));
    println!("classify_classes {classes}");
    println!("scan_ops {}", scanned.join(","));
    println!("sink {}", sink.wrapping_add(scanned_total));
}
