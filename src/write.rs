//! Stage 4, write or check. `generate` writes only files whose content changed, each through a
//! temporary file in the same folder and a rename, and writes nothing at all when any target
//! fails. `check` never writes: it reports a unified diff per stale or missing file.

use std::path::{Path, PathBuf};

/// One file retrygen wants on disk.
#[derive(Debug, Clone)]
pub struct Planned {
    pub path: PathBuf,
    /// How to show the path to the user (relative to where they pointed us).
    pub display: String,
    pub contents: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Unchanged,
    Written,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot write {display}: {message}")]
pub struct WriteError {
    pub display: String,
    pub message: String,
}

fn current(path: &Path) -> Option<String> {
    std::fs::read(path)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// Fills one temporary file; [`write_all_with`] lets tests replace it.
pub type Fill = dyn Fn(&mut std::fs::File, &[u8]) -> std::io::Result<()> + Sync;

/// Writes every planned file whose contents differ. All temporary files are prepared first (each
/// written and `fsync`ed, in parallel: the waits for the disk overlap); the renames happen only
/// when every one of them succeeded, and a rename that fails puts back the files already
/// replaced. Folders created for a failed run are removed again.
pub fn write_all(plan: &[Planned]) -> Result<Vec<(String, Status)>, WriteError> {
    write_all_with(plan, &|temp, bytes| {
        use std::io::Write;
        temp.write_all(bytes)?;
        temp.sync_all()
    })
}

/// The first missing ancestor of `dir` (what `create_dir_all` would create first).
fn first_missing(dir: &Path) -> Option<PathBuf> {
    let mut missing = None;
    let mut at = Some(dir);
    while let Some(d) = at {
        if d.as_os_str().is_empty() || d.exists() {
            break;
        }
        missing = Some(d.to_path_buf());
        at = d.parent();
    }
    missing
}

/// [`write_all`] with the step that fills each temporary file supplied, so tests can make it
/// fail like a full disk would.
pub fn write_all_with(plan: &[Planned], fill: &Fill) -> Result<Vec<(String, Status)>, WriteError> {
    let mut created_dirs: Vec<PathBuf> = Vec::new();
    let result = stage_and_persist(plan, fill, &mut created_dirs);
    if result.is_err() {
        for dir in created_dirs.iter().rev() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    result
}

fn stage_and_persist(
    plan: &[Planned],
    fill: &Fill,
    created_dirs: &mut Vec<PathBuf>,
) -> Result<Vec<(String, Status)>, WriteError> {
    let mut staged = Vec::new();
    let mut statuses = Vec::new();
    for file in plan {
        let previous = current(&file.path);
        if previous.as_deref() == Some(file.contents.as_str()) {
            statuses.push((file.display.clone(), Status::Unchanged));
            continue;
        }
        let error = |message: String| WriteError {
            display: file.display.clone(),
            message,
        };
        let parent = file
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if let Some(top) = first_missing(parent) {
            std::fs::create_dir_all(parent)
                .map_err(|e| error(format!("cannot create folder {}: {e}", parent.display())))?;
            created_dirs.push(top);
        }
        if file.path.is_dir() {
            return Err(error("a folder is in the way".into()));
        }
        let temp = tempfile::Builder::new()
            .prefix(".retrygen-")
            .suffix(".tmp")
            .tempfile_in(parent)
            .map_err(|e| error(e.to_string()))?;
        staged.push((file, temp, previous));
        statuses.push((file.display.clone(), Status::Written));
    }
    fill_all(&mut staged, fill)?;
    let mut done: Vec<(&Planned, Option<String>)> = Vec::new();
    for (file, temp, previous) in staged {
        if let Err(e) = temp.persist(&file.path) {
            for (replaced, old) in done {
                match old {
                    Some(old) => {
                        let _ = std::fs::write(&replaced.path, old);
                    }
                    None => {
                        let _ = std::fs::remove_file(&replaced.path);
                    }
                }
            }
            return Err(WriteError {
                display: file.display.clone(),
                message: e.error.to_string(),
            });
        }
        done.push((file, previous));
    }
    Ok(statuses)
}

/// Fills every staged temporary file, one thread per file; on failure, the error of the first
/// failing file in plan order (the temporary files go when `staged` is dropped).
fn fill_all(
    staged: &mut [(&Planned, tempfile::NamedTempFile, Option<String>)],
    fill: &Fill,
) -> Result<(), WriteError> {
    let errors: Vec<Option<WriteError>> = std::thread::scope(|scope| {
        let workers: Vec<_> = staged
            .iter_mut()
            .map(|(file, temp, _)| {
                let file: &Planned = file;
                scope.spawn(move || {
                    fill(temp.as_file_mut(), file.contents.as_bytes())
                        .err()
                        .map(|e| WriteError {
                            display: file.display.clone(),
                            message: e.to_string(),
                        })
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join().unwrap_or_else(|_| {
                    Some(WriteError {
                        display: String::new(),
                        message: "a writer thread panicked".into(),
                    })
                })
            })
            .collect()
    });
    match errors.into_iter().flatten().next() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// A unified diff from the file on disk to the planned contents, or None when they match.
pub fn diff(file: &Planned) -> Option<String> {
    let old = current(&file.path);
    if old.as_deref() == Some(file.contents.as_str()) {
        return None;
    }
    let old_text = old.as_deref().unwrap_or("");
    let old_name = if old.is_some() {
        format!("a/{}", file.display)
    } else {
        "/dev/null".to_string()
    };
    let diff = similar::TextDiff::from_lines(old_text, &file.contents);
    let mut out = diff
        .unified_diff()
        .context_radius(3)
        .header(&old_name, &format!("b/{}", file.display))
        .to_string();
    if old.is_none() {
        out.insert_str(0, &format!("missing: {}\n", file.display));
    }
    Some(out)
}
