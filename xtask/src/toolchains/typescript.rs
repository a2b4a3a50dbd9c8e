use super::{Built, Toolchain};
use anyhow::{bail, Result};
use std::path::Path;

pub struct TypeScript;

impl Toolchain for TypeScript {
    fn language(&self) -> &'static str {
        "typescript"
    }
    fn lint(&self, _module: &Path, _work: &Path) -> Result<()> {
        bail!("typescript lint: not written yet")
    }
    fn build(&self, _module: &Path, _work: &Path) -> Result<Built> {
        bail!("typescript harness: not written yet")
    }
}
