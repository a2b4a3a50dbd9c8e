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

/// Fills one temporary file; [`write_all_with`] and [`Staging::new`] let tests replace it.
pub type Fill = dyn Fn(&mut std::fs::File, &[u8]) -> std::io::Result<()> + Sync;

/// What `generate` does to each temporary file: write the bytes and `fsync` them, so that after
/// the rename the file holds either its old or its new contents, even across a crash.
pub fn write_and_sync(temp: &mut std::fs::File, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    temp.write_all(bytes)?;
    temp.sync_all()
}

/// Writes every planned file whose contents differ, all or nothing (see [`Staging`]).
pub fn write_all(plan: &[Planned]) -> Result<Vec<(String, Status)>, WriteError> {
    write_all_with(plan, &write_and_sync)
}

/// [`write_all`] with the step that fills each temporary file supplied, so tests can make it
/// fail like a full disk would.
pub fn write_all_with(plan: &[Planned], fill: &Fill) -> Result<Vec<(String, Status)>, WriteError> {
    let mut staging = Staging::new(fill);
    for file in plan {
        staging.stage(file)?;
    }
    staging.commit()
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

/// Files staged one at a time, as they are rendered, so that the disk work of a run overlaps its
/// rendering: each changed file goes to a temporary file beside its target, filled and `fsync`ed
/// at once; [`Staging::commit`] then renames them all. Dropping a staging that was not committed
/// (a later target failed, or a rename did) removes its temporary files and every folder it
/// created: a failed run writes nothing.
pub struct Staging<'f> {
    fill: &'f Fill,
    staged: Vec<Staged>,
    statuses: Vec<(String, Status)>,
    created_dirs: Vec<PathBuf>,
    committed: bool,
}

struct Staged {
    path: PathBuf,
    display: String,
    temp: tempfile::NamedTempFile,
    /// The contents the rename replaces, to put back if a later rename fails.
    previous: Option<String>,
}

impl<'f> Staging<'f> {
    pub fn new(fill: &'f Fill) -> Staging<'f> {
        Staging {
            fill,
            staged: Vec::new(),
            statuses: Vec::new(),
            created_dirs: Vec::new(),
            committed: false,
        }
    }

    /// Stages one file: nothing when its contents are already on disk, otherwise a filled
    /// temporary file in its folder (created when missing).
    pub fn stage(&mut self, file: &Planned) -> Result<(), WriteError> {
        let previous = current(&file.path);
        if previous.as_deref() == Some(file.contents.as_str()) {
            self.statuses
                .push((file.display.clone(), Status::Unchanged));
            return Ok(());
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
            self.created_dirs.push(top);
        }
        if file.path.is_dir() {
            return Err(error("a folder is in the way".into()));
        }
        let mut temp = tempfile::Builder::new()
            .prefix(".retrygen-")
            .suffix(".tmp")
            .tempfile_in(parent)
            .map_err(|e| error(e.to_string()))?;
        (self.fill)(temp.as_file_mut(), file.contents.as_bytes())
            .map_err(|e| error(e.to_string()))?;
        self.staged.push(Staged {
            path: file.path.clone(),
            display: file.display.clone(),
            temp,
            previous,
        });
        self.statuses.push((file.display.clone(), Status::Written));
        Ok(())
    }

    /// Renames every staged file into place, in staging order; when a rename fails, the files
    /// already replaced get their old contents back (or are removed, when they were new).
    pub fn commit(mut self) -> Result<Vec<(String, Status)>, WriteError> {
        let mut done: Vec<(PathBuf, Option<String>)> = Vec::new();
        for staged in std::mem::take(&mut self.staged) {
            if let Err(e) = staged.temp.persist(&staged.path) {
                for (replaced, old) in done {
                    match old {
                        Some(old) => {
                            let _ = std::fs::write(&replaced, old);
                        }
                        None => {
                            let _ = std::fs::remove_file(&replaced);
                        }
                    }
                }
                return Err(WriteError {
                    display: staged.display,
                    message: e.error.to_string(),
                });
            }
            done.push((staged.path, staged.previous));
        }
        self.committed = true;
        Ok(std::mem::take(&mut self.statuses))
    }
}

impl Drop for Staging<'_> {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        // The temporary files go first (dropping them deletes them), then the folders.
        self.staged.clear();
        for dir in self.created_dirs.iter().rev() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// True when `path` is a file that retrygen did not write (no marker at its top): a file the
/// user keeps there, which `generate` must never overwrite.
pub fn is_foreign(path: &Path) -> bool {
    match read_head(path, MARKER_SEARCH_BYTES) {
        Ok(head) => !crate::emit::is_generated(&String::from_utf8_lossy(&head)),
        Err(_) => false,
    }
}

/// How much of a file's head is searched for retrygen's marker.
const MARKER_SEARCH_BYTES: u64 = 2048;

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
            let Ok(bytes) = read_head(&path, MARKER_SEARCH_BYTES) else {
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
