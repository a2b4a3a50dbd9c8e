//! `cargo xtask bless`: regenerate every file of the project's retrygen.toml (the goldens), the
//! same as `make codegen`.

use crate::toolchains::root;
use anyhow::{bail, Result};
use retrygen::cli::{generate, GenerateArgs};

pub fn main() -> Result<()> {
    std::env::set_current_dir(root())?;
    let args = GenerateArgs {
        config: Some("retrygen.toml".into()),
        spec: None,
        lang: None,
        out: None,
        options: Vec::new(),
        strict: false,
        templates: None,
    };
    let code = generate(&args, &mut std::io::stdout(), &mut std::io::stderr());
    if code != 0 {
        bail!("retrygen generate exited with {code}");
    }
    Ok(())
}
