//! The `retrygen` binary: a thin shell over the library (see `retrygen::cli`).

use clap::Parser;

fn main() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    one_malloc_arena();
    let cli = retrygen::cli::Cli::parse();
    // Unlocked handles: each write takes the lock for itself, so a worker thread (the renders
    // run in parallel) can never wait forever on a lock this thread holds for the whole run.
    let code = retrygen::cli::run(cli, &mut std::io::stdout(), &mut std::io::stderr());
    std::process::exit(code);
}

/// glibc gives each thread that allocates a malloc arena of its own, and what a thread frees
/// stays in its arena. The six renders run on threads of their own, so each arena would keep
/// its own high-water mark on top of the document's: one arena keeps the peak at what the run
/// needs (Kubernetes: 18.2 to 15.7 MB peak RSS, docs/benchmarks.md). The renders allocate
/// little next to the read, so sharing one arena's lock costs nothing measurable.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn one_malloc_arena() {
    // SAFETY: `mallopt` only changes the allocator's settings, and it runs before any other
    // thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}
