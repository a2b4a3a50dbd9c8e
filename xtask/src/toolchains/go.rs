use super::{Built, Toolchain};
use anyhow::{bail, Result};
use std::path::Path;

pub struct Go;

impl Toolchain for Go {
    fn language(&self) -> &'static str {
        "go"
    }
    fn lint(&self, _module: &Path, _work: &Path) -> Result<()> {
        bail!("go lint: not written yet")
    }
    fn build(&self, _module: &Path, _work: &Path) -> Result<Built> {
        bail!("go harness: not written yet")
    }
}
