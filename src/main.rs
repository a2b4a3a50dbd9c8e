//! The `retrygen` binary: a thin shell over the library (see `retrygen::cli`).

use clap::Parser;

fn main() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    one_malloc_arena();
    let cli = retrygen::cli::Cli::parse();
    // Unlocked handles: each write takes the lock for itself, so another thread of the run can
    // never wait forever on a lock this thread holds for the whole run.
    let code = retrygen::cli::run(cli, &mut std::io::stdout(), &mut std::io::stderr());
    std::process::exit(code);
}

/// glibc gives each thread that allocates a malloc arena of its own, and what a thread frees
/// stays in its arena. Memory the tree of the document leaves behind in one arena could then not
/// serve the allocations of another thread, and each arena would keep its own high-water mark:
/// with the renders on threads of their own, Kubernetes' peak RSS was 18.2 MB, 15.7 MB with one
/// arena (docs/benchmarks.md). The renders run one after the other on the main thread, so one
/// arena's lock costs them nothing; the writer thread and the thread that frees the document
/// allocate little.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn one_malloc_arena() {
    // SAFETY: `mallopt` only changes the allocator's settings, and it runs before any other
    // thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}
