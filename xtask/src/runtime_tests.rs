//! `cargo xtask runtime-tests [--lang L,...]`: each language's runtime (`runtime/<language>/`)
//! checked as a plain project of that language, nothing rendered: formatter, linter, strict
//! compile and unit tests, through [`Toolchain::runtime_tests`](crate::toolchains::Toolchain).

use crate::toolchains::{root, TOOLCHAINS};
use anyhow::{bail, Result};
use std::time::Instant;

pub fn main(args: &[String]) -> Result<()> {
    let only: Option<Vec<&str>> = crate::flag(args, "--lang").map(|l| l.split(',').collect());
    let mut failed = Vec::new();
    for toolchain in TOOLCHAINS {
        let language = toolchain.language();
        if only.as_ref().is_some_and(|o| !o.contains(&language)) {
            continue;
        }
        let work = root().join("target/xtask/runtime-tests").join(language);
        if work.exists() {
            std::fs::remove_dir_all(&work)?;
        }
        std::fs::create_dir_all(&work)?;
        let started = Instant::now();
        match toolchain.runtime_tests(&work) {
            Ok(()) => println!(
                "runtime {language}: format, lint, compile and unit tests pass ({:.1} s)",
                started.elapsed().as_secs_f64()
            ),
            Err(e) => {
                println!("runtime {language}: FAILED\n{e:#}");
                failed.push(language);
            }
        }
    }
    if !failed.is_empty() {
        bail!("runtime tests failed for {failed:?}");
    }
    Ok(())
}
