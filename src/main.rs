//! The `retrygen` binary: a thin shell over the library (see `retrygen::cli`).

use clap::Parser;

fn main() {
    let cli = retrygen::cli::Cli::parse();
    // Unlocked handles: each write takes the lock for itself, so a worker thread (the renders
    // run in parallel) can never wait forever on a lock this thread holds for the whole run.
    let code = retrygen::cli::run(cli, &mut std::io::stdout(), &mut std::io::stderr());
    std::process::exit(code);
}
