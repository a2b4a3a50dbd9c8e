use super::{Built, Toolchain};
use anyhow::{bail, Result};
use std::path::Path;

pub struct Rust;

impl Toolchain for Rust {
    fn language(&self) -> &'static str {
        "rust"
    }
    fn lint(&self, _module: &Path, _work: &Path) -> Result<()> {
        bail!("rust lint: not written yet")
    }
    fn build(&self, _module: &Path, _work: &Path) -> Result<Built> {
        bail!("rust harness: not written yet")
    }
}
