use super::{Built, Toolchain};
use anyhow::{bail, Result};
use std::path::Path;

pub struct Kotlin;

impl Toolchain for Kotlin {
    fn language(&self) -> &'static str {
        "kotlin"
    }
    fn lint(&self, _module: &Path, _work: &Path) -> Result<()> {
        bail!("kotlin lint: not written yet")
    }
    fn build(&self, _module: &Path, _work: &Path) -> Result<Built> {
        bail!("kotlin harness: not written yet")
    }
}
