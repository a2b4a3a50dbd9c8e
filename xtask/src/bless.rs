//! `cargo xtask bless`: regenerate every file of the project's retrygen.toml (the goldens), the
//! same as `make codegen`.

use crate::toolchains::root;
use anyhow::{anyhow, Result};

pub fn main() -> Result<()> {
    let config =
        retrygen::config::load(&root().join("retrygen.toml")).map_err(|d| anyhow!("{d}"))?;
    let plan = retrygen::generate(&config).map_err(|e| anyhow!("{e}"))?;
    let statuses = retrygen::write(&plan).map_err(|e| anyhow!("{e}"))?;
    let written = statuses
        .iter()
        .filter(|(_, s)| *s == retrygen::Status::Written)
        .count();
    println!(
        "bless: {} files, {written} written, {} orphans removed",
        statuses.len(),
        plan.orphans.len()
    );
    Ok(())
}
