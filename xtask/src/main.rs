//! Project automation: `cargo xtask <command>`. See `cargo xtask help`.

mod anchors;
mod bench;
mod bless;
mod conformance;
mod conformance_v3;
mod corpus;
mod dist;
mod faults;
mod harness;
mod injection;
mod mutation;
mod registry;
mod runtime_tests;
mod shared;
mod toolchains;

use anyhow::{bail, Result};

const HELP: &str = "\
cargo xtask <command>

  bench [--quick] [--lang L[,L...]] [--corpus DIR] [--out FILE] [--skip-generation] [--skip-matching] [--skip-adapters]
        measure generation (vs the parse floor, peak memory, check mode, perf profile) and matching
        (classify vs the linear regex scan in all six languages); write docs/benchmarks.md, or with
        --quick (CI: small specs, few iterations, all cross-checks) target/xtask/bench/quick.md

  faults [--lang L[,L...]] [--only ID]... [--with-soak N [--seed S]...]
        the fault matrix (conformance/faults/): a real fault-injecting server on 127.0.0.1 (HTTP/1.1,
        h2c, HTTP/1.1 and h2 over TLS) and every language's HTTP client adapter run through the same
        scenarios over every protocol its client speaks; the server's arrival counts and each
        runner's report must equal each scenario's expectations and keep the invariants; with
        --with-soak, the soak follows over the same builds
  faults --soak N [--seed S]... [--lang L[,L...]]
        the randomized fault soak alone: N seeded requests per run, protocol and seed through one
        client, each arrival given a fault drawn by the seed; 0 violations and bounded descriptor
        and memory growth required; prints the table docs/adapters.md shows

  fault-server
        the matrix's server alone (prints its URL; stops after 120 s without a connection)

  dist [--check]
        build the packages retrygen installs from into target/dist/: the wheel (maturin), the npm
        launcher and this host's binary package, the crate (cargo package, built from the package);
        --check installs each offline (venv, empty npm project, cargo root), runs --version and
        init/generate/check with each (identical files required), and runs .pre-commit-hooks.yaml
        with pre-commit on a throwaway repository (pass, then fail on drift)

  shared-runtime [--lang L[,L...]]
        a two-spec SDK per language on one shared runtime ([[runtime]]) rendered into
        target/xtask/shared-runtime/<language>/, then formatted, linted, compiled and called;
        Go expects its `cannot share a runtime yet` diagnostic

  bless
        regenerate every file listed in retrygen.toml (the goldens under golden/)

  corpus [DIR] [--write-docs]
        read, classify and render every document in DIR (default ../shared/corpus); print the table
        (and write it to docs/corpus.md)

  conformance [--vectors PATH] [--lang L[,L...]] [--spec NAME] [--templates DIR]
        build every language's module for every spec of retrygen.toml with its real toolchain, run
        the vectors (default conformance/vectors/) and the cases derived from each spec; fail on
        any difference from the expected values or between languages

  conformance-v3 [--lang L[,L...]|none]
        contract v3 (docs/contract.md): every case of conformance/vectors/v3/ as a line
        (conformance/README.md, section Contract v3 lines), answered by the reference implementation's
        harness, then by the module of every language whose runtime implements v3 (all six: rust,
        typescript, python, go, kotlin and csharp), or of those --lang names; --lang none: the
        reference alone

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
        docs/contract.md section 3) to that language's runtime and require the v2 vectors to fail;
        then, for each language whose runtime implements contract v3, each of
        conformance/mutants/v3/<language>.toml (one per v3 anchor its vectors check: H2, R5a, R6a,
        R6b, R9a, S9, T1, Q2, E2, F1) and require a v3 vector to fail; --anchor names anchors of
        either contract; prints the kill table, a section per contract (also
        target/xtask/mutation/table.md, and FILE)

  anchors
        every runtime marks each anchored rule of docs/contract.md (`[contract R1]`...) in order

  The runtimes implement contract v2 (docs/contract.md): every vector runs, the tables are dumped
  with `T2`, the safe list is probed with `L`, and every anchor is checked. `--contract 2` (or
  RETRYGEN_CONTRACT=2) is accepted for scripts written during the migration; contract v1 is retired.

  runtime-tests [--lang L[,L...]]
        check each language's runtime (runtime/<language>/) as a plain project of that language,
        nothing rendered: formatter, linter, strict compile and its unit tests

  harness --lang L --spec SPEC --cases FILE
        render SPEC's module for L, lint it, build L's harness and run it on FILE (case-file format
        of conformance/README.md); prints the harness output
";

fn main() -> Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    // Contract v1 is retired: `--contract 2` and RETRYGEN_CONTRACT=2, from scripts written during
    // the migration, are accepted and change nothing; any other version is refused.
    if let Some(i) = args.iter().position(|a| a == "--contract") {
        let version = args.get(i + 1).cloned().unwrap_or_default();
        if version != "2" {
            bail!("--contract {version}: the runtimes implement contract v2 only");
        }
        args.drain(i..i + 2);
    }
    if let Ok(version) = std::env::var("RETRYGEN_CONTRACT") {
        if version.trim() != "2" {
            bail!("RETRYGEN_CONTRACT={version}: the runtimes implement contract v2 only");
        }
    }
    let Some(command) = args.first() else {
        print!("{HELP}");
        return Ok(());
    };
    let rest = &args[1..];
    match command.as_str() {
        "harness" => harness::main(rest),
        "conformance" => conformance::main(rest),
        "conformance-v3" => conformance_v3::main(rest),
        "injection" => injection::main(rest),
        "mutation" => mutation::main(rest),
        "runtime-tests" => runtime_tests::main(rest),
        "anchors" => anchors::main(rest),
        "corpus" => corpus::main(rest),
        "bench" => bench::main(rest),
        "faults" => faults::main(rest),
        "fault-server" => faults::server_main(rest),
        "bless" => bless::main(),
        "shared-runtime" => shared::main(rest),
        "dist" => dist::main(rest),
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
