use super::{Built, Toolchain};
use anyhow::{bail, Result};
use std::path::Path;

pub struct CSharp;

impl Toolchain for CSharp {
    fn language(&self) -> &'static str {
        "csharp"
    }
    fn lint(&self, _module: &Path, _work: &Path) -> Result<()> {
        bail!("csharp lint: not written yet")
    }
    fn build(&self, _module: &Path, _work: &Path) -> Result<Built> {
        bail!("csharp harness: not written yet")
    }
}
