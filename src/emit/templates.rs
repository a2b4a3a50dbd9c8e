//! Where templates come from (embedded, or a `--templates` folder) and their compilation: embedded
//! templates are compiled once per process, under a strict environment.

use super::EmitError;
use include_dir::{include_dir, Dir};
use minijinja::Environment;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

static EMBEDDED_TEMPLATES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/templates");

/// Where templates come from: the embedded defaults or a folder given with `--templates`.
#[derive(Debug, Clone, Default)]
pub enum TemplateSource {
    #[default]
    Embedded,
    Folder(PathBuf),
}

impl TemplateSource {
    /// All templates of one language, as (name relative to its folder, text).
    pub(super) fn load(&self, language: &str) -> Result<Vec<(String, String)>, EmitError> {
        match self {
            TemplateSource::Embedded => {
                let dir =
                    EMBEDDED_TEMPLATES
                        .get_dir(language)
                        .ok_or_else(|| EmitError::Template {
                            template: format!("{language}/"),
                            message: "no embedded templates for this language".into(),
                        })?;
                let mut out = Vec::new();
                collect_embedded(dir, language, &mut out);
                Ok(out)
            }
            TemplateSource::Folder(root) => {
                let dir = root.join(language);
                if !dir.is_dir() {
                    // A folder that overrides some languages leaves the others embedded.
                    return TemplateSource::Embedded.load(language);
                }
                let mut out = Vec::new();
                collect_folder(&dir, &dir, &mut out).map_err(|e| EmitError::TemplateDir {
                    path: dir.clone(),
                    message: e.to_string(),
                })?;
                out.sort();
                Ok(out)
            }
        }
    }
}

/// The compiled templates of one language.
pub(super) struct Compiled {
    pub(super) env: Environment<'static>,
}

impl Compiled {
    fn new(templates: Vec<(String, String)>) -> Result<Compiled, EmitError> {
        Ok(Compiled {
            env: environment(templates)?,
        })
    }
}

/// The compiled embedded templates of each language, compiled on first use: a run that renders
/// several specs (retrygen.toml, `check`) compiles each language's templates once.
static EMBEDDED_TEMPLATES_COMPILED: Mutex<Vec<(&'static str, Arc<Compiled>)>> =
    Mutex::new(Vec::new());

impl TemplateSource {
    /// The compiled templates of one language. Templates from a folder are read and compiled on
    /// every call, so that edits to them show up; embedded ones are compiled once.
    pub(super) fn compiled(&self, language: &'static str) -> Result<Arc<Compiled>, EmitError> {
        let embedded = match self {
            TemplateSource::Embedded => true,
            TemplateSource::Folder(root) => !root.join(language).is_dir(),
        };
        if !embedded {
            return Ok(Arc::new(Compiled::new(self.load(language)?)?));
        }
        let cached = |cache: &[(&str, Arc<Compiled>)]| {
            cache
                .iter()
                .find(|(name, _)| *name == language)
                .map(|(_, env)| env.clone())
        };
        let lock = || {
            EMBEDDED_TEMPLATES_COMPILED
                .lock()
                .unwrap_or_else(|e| e.into_inner())
        };
        if let Some(compiled) = cached(&lock()) {
            return Ok(compiled);
        }
        // Compiled without holding the lock; if two threads race, both results are the same.
        let compiled = Arc::new(Compiled::new(TemplateSource::Embedded.load(language)?)?);
        let mut cache = lock();
        if let Some(compiled) = cached(&cache) {
            return Ok(compiled);
        }
        cache.push((language, compiled.clone()));
        Ok(compiled)
    }
}

fn collect_embedded(dir: &Dir<'static>, language: &str, out: &mut Vec<(String, String)>) {
    for file in dir.files() {
        let name = file
            .path()
            .strip_prefix(language)
            .unwrap_or(file.path())
            .to_string_lossy()
            .replace('\\', "/");
        out.push((name, file.contents_utf8().unwrap_or_default().to_string()));
    }
    for sub in dir.dirs() {
        collect_embedded(sub, language, out);
    }
    out.sort();
}

fn collect_folder(base: &Path, dir: &Path, out: &mut Vec<(String, String)>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_folder(base, &path, out)?;
        } else {
            let name = path
                .strip_prefix(base)
                .unwrap_or(&path)
                .to_string_lossy()
                .replace('\\', "/");
            out.push((name, std::fs::read_to_string(&path)?));
        }
    }
    Ok(())
}

/// The entry template of every language: it renders the per-spec tables file.
pub const ENTRY_TEMPLATE: &str = "tables.j2";

/// A template environment that fails on any undefined value, so a typo in a template is an
/// error, never silently empty output.
pub(super) fn environment(
    templates: Vec<(String, String)>,
) -> Result<minijinja::Environment<'static>, EmitError> {
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    let syntax = minijinja::syntax::SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .keep_trailing_newline(true)
        .build()
        .expect("default delimiters are valid");
    env.set_syntax(syntax);
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    for (name, source) in templates {
        env.add_template_owned(name.clone(), source)
            .map_err(|e| EmitError::Template {
                template: name,
                message: format!("{e:#}"),
            })?;
    }
    Ok(env)
}
