//! The `retrygen` binary: a thin shell over the library (see `retrygen::cli`).

use clap::Parser;

fn main() {
    let cli = retrygen::cli::Cli::parse();
    let code = retrygen::cli::run(
        cli,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    std::process::exit(code);
}
