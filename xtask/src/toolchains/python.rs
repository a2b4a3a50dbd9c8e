use super::{Built, Toolchain};
use anyhow::{bail, Result};
use std::path::Path;

pub struct Python;

impl Toolchain for Python {
    fn language(&self) -> &'static str {
        "python"
    }
    fn lint(&self, _module: &Path, _work: &Path) -> Result<()> {
        bail!("python lint: not written yet")
    }
    fn build(&self, _module: &Path, _work: &Path) -> Result<Built> {
        bail!("python harness: not written yet")
    }
}
