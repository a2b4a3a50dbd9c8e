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

/// A generated file that no planned file replaces: it carries retrygen's marker
/// ([`crate::emit::is_generated`]) and sits in a folder the plan writes into, but the current
/// run would not write it (a file of an older layout, or of an option since renamed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Orphan {
    pub path: PathBuf,
    pub display: String,
}

/// Every orphan in the folders `plan` writes into, sorted by path. Folders are not searched
/// recursively: a target's files live directly in its folder.
pub fn orphans(plan: &[Planned]) -> Vec<Orphan> {
    use std::collections::BTreeSet;
    let planned: BTreeSet<&Path> = plan.iter().map(|f| f.path.as_path()).collect();
    let folders: BTreeSet<(&Path, String)> = plan
        .iter()
        .filter_map(|f| {
            let parent = f.path.parent()?;
            let shown = f.display.rsplit_once('/').map_or("", |(dir, _)| dir);
            Some((parent, shown.to_string()))
        })
        .collect();
    let mut found = Vec::new();
    let mut seen = BTreeSet::new();
    for (folder, shown) in folders {
        let dir = if folder.as_os_str().is_empty() {
            Path::new(".")
        } else {
            folder
        };
        if !seen.insert(dir.to_path_buf()) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = folder.join(entry.file_name());
            // Another run's temporary files are its own business.
            let temporary = entry
                .file_name()
                .to_string_lossy()
                .starts_with(".retrygen-");
            if temporary || planned.contains(path.as_path()) || !path.is_file() {
                continue;
            }
            // Only the head is read: the marker is in the first lines.
            let Ok(bytes) = read_head(&path, 2048) else {
                continue;
            };
            if crate::emit::is_generated(&String::from_utf8_lossy(&bytes)) {
                let name = entry.file_name().to_string_lossy().into_owned();
                let display = if shown.is_empty() {
                    name
                } else {
                    format!("{shown}/{name}")
                };
                found.push(Orphan { path, display });
            }
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found
}

fn read_head(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(limit)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The unified diff that deletes `orphan`.
pub fn orphan_diff(orphan: &Orphan) -> String {
    let old = current(&orphan.path).unwrap_or_default();
    let diff = similar::TextDiff::from_lines(old.as_str(), "");
    let mut out = format!("orphaned: {} (generated by retrygen, no longer written; delete it, or run `retrygen generate`)\n", orphan.display);
    out.push_str(
        &diff
            .unified_diff()
            .context_radius(3)
            .header(&format!("a/{}", orphan.display), "/dev/null")
            .to_string(),
    );
    out
}

/// Removes the orphans `generate` leaves behind once every planned file is written.
pub fn remove_orphans(orphans: &[Orphan]) -> Result<(), WriteError> {
    for orphan in orphans {
        match std::fs::remove_file(&orphan.path) {
            // A concurrent run removed it first.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(WriteError {
                    display: orphan.display.clone(),
                    message: format!("cannot remove the orphaned generated file: {e}"),
                })
            }
            Ok(()) => {}
        }
    }
    Ok(())
}
