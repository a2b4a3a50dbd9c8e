//! Project automation: `cargo xtask <command>`. See `cargo xtask help`.

mod anchors;
mod bench;
mod bless;
mod conformance;
mod corpus;
mod harness;
mod injection;
mod mutation;
mod registry;
mod runtime_tests;
mod toolchains;

use anyhow::{bail, Result};

const HELP: &str = "\
cargo xtask <command>

  bench [--quick] [--lang L[,L...]] [--corpus DIR] [--out FILE] [--skip-generation] [--skip-matching]
        measure generation (vs the parse floor, peak memory, check mode, perf profile) and matching
        (classify vs the linear regex scan in all six languages); write docs/benchmarks.md, or with
        --quick (CI: small specs, few iterations, all cross-checks) target/xtask/bench/quick.md

  bless
        regenerate every file listed in retrygen.toml (the goldens under golden/)

  corpus [DIR] [--write-docs]
        read, classify and render every document in DIR (default ../shared/corpus); print the table
        (and write it to docs/corpus.md)

  conformance [--vectors PATH] [--lang L[,L...]] [--spec NAME] [--templates DIR]
        build every language's module for every spec of retrygen.toml with its real toolchain, run
        the vectors (default conformance/vectors/) and the cases derived from each spec; fail on
        any difference from the expected values or between languages

  conformance --corpus DIR [--lang L[,L...]] [--lint all|none|L[,L...]] [--jobs N] [--spec TEXT]
        every document of DIR (e.g. ../shared/corpus) rendered, built and run in every language on
        the cases derived from each of its operations and the table dump; --lint names the
        languages also linted (default all); N documents at a time (default: one per CPU); --spec
        keeps the documents whose path contains TEXT; timings in target/xtask/corpus/summary.md

  injection [--seed S] [--specs N] [--ops N] [--lang L[,L...]] [--lint all|none|L[,L...]] [--templates DIR]
        generate N specs (default 4) of N operations (default 40) whose paths, operationIds, server
        URL and file name are made of hostile fragments (quotes, escapes, comment and template
        delimiters, controls, separators, bidi, non-BMP), seeded by S (default 1); every language's
        module must lint, build and print each string back exactly

  mutation [--lang L[,L...]] [--anchor A[,A...]] [--out FILE]
        apply each mutant of conformance/mutants/<language>.toml (one per anchored rule of
        docs/contract.md section 3) to that language's runtime and require the vectors to fail;
        prints the kill table (also target/xtask/mutation/table.md, and FILE)

  anchors
        every runtime marks each anchored rule of docs/contract.md (`[contract R1]`...) in order

  Every command takes --contract 1|2 (or the environment variable RETRYGEN_CONTRACT): the contract
  version the runtimes implement. 1 (the default until the six runtimes implement v2) leaves the
  v2 vectors (cases with contract: 2) out and checks the v1 anchors; 2 runs every vector, retires the
  `N` probes for `L`, dumps the tables with `T2` and checks every anchor of docs/contract.md.

  runtime-tests [--lang L[,L...]]
        check each language's runtime (runtime/<language>/) as a plain project of that language,
        nothing rendered: formatter, linter, strict compile and its unit tests

  harness --lang L --spec SPEC --cases FILE
        render SPEC's module for L, lint it, build L's harness and run it on FILE (case-file format
        of conformance/README.md); prints the harness output
";

/// The contract version the runtimes implement: `--contract N`, else `RETRYGEN_CONTRACT`, else 1.
static CONTRACT: std::sync::OnceLock<u32> = std::sync::OnceLock::new();

pub fn contract_version() -> u32 {
    *CONTRACT.get_or_init(|| {
        std::env::var("RETRYGEN_CONTRACT")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(1)
    })
}

fn main() -> Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--contract") {
        let Some(v) = args.get(i + 1).and_then(|v| v.parse::<u32>().ok()) else {
            bail!("--contract takes 1 or 2");
        };
        if !(1..=2).contains(&v) {
            bail!("--contract takes 1 or 2, not {v}");
        }
        let _ = CONTRACT.set(v);
        args.drain(i..i + 2);
    }
    if !(1..=2).contains(&contract_version()) {
        bail!("RETRYGEN_CONTRACT must be 1 or 2");
    }
    let Some(command) = args.first() else {
        print!("{HELP}");
        return Ok(());
    };
    let rest = &args[1..];
    match command.as_str() {
        "harness" => harness::main(rest),
        "conformance" => conformance::main(rest),
        "injection" => injection::main(rest),
        "mutation" => mutation::main(rest),
        "runtime-tests" => runtime_tests::main(rest),
        "anchors" => anchors::main(rest),
        "corpus" => corpus::main(rest),
        "bench" => bench::main(rest),
        "bless" => bless::main(),
        "help" | "--help" | "-h" => {
            print!("{HELP}");
            Ok(())
        }
        other => bail!("unknown command {other:?}\n\n{HELP}"),
    }
}

/// `--flag value` from a list of arguments.
pub fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}
