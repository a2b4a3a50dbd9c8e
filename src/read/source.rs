//! Where the reader takes files from: the file system, or one revision of a git repository read
//! with `git show REV:path` (no checkout, the working tree is never touched). A spec argument
//! `git:REV:path` names the second; `$ref`ed files are then read from the same revision.

use std::path::{Component, Path, PathBuf};
use std::process::Command;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum FileSource {
    #[default]
    Disk,
    /// A revision of the repository whose top-level folder is `top`.
    Git { top: PathBuf, rev: String },
}

/// A spec as the user names it: a file, or `git:REV:path` (path relative to the current folder,
/// as `git show REV:./path` reads it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecRef {
    pub source: FileSource,
    /// The path to read: as given for files, absolute (under `top`) for git revisions.
    pub path: PathBuf,
    /// How diagnostics name the root file.
    pub display: String,
}

/// A path as the user gave it, with `/` separators and without a leading `./`: how diagnostics
/// and generated headers name a file. It lives with the reader, the first stage that names files.
pub fn display_path(path: &Path) -> String {
    let s = path.to_string_lossy().replace('\\', "/");
    s.strip_prefix("./").map(str::to_string).unwrap_or(s)
}

fn git(dir: &Path, args: &[&str]) -> Result<Vec<u8>, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

fn git_line(dir: &Path, args: &[&str]) -> Result<String, String> {
    git(dir, args).map(|b| String::from_utf8_lossy(&b).trim_end().to_string())
}

/// Removes `.` and resolves `..` without touching the file system.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

impl SpecRef {
    /// Parses a spec argument. `git:REV:path` asks git (run in the current folder) where the
    /// repository is and checks that the revision exists.
    pub fn parse(arg: &str) -> Result<SpecRef, String> {
        let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
        SpecRef::parse_in(arg, &cwd)
    }

    /// [`SpecRef::parse`] with `cwd` as the current folder.
    pub fn parse_in(arg: &str, cwd: &Path) -> Result<SpecRef, String> {
        let Some(rest) = arg.strip_prefix("git:") else {
            return Ok(SpecRef::file(Path::new(arg)));
        };
        let Some((rev, path)) = rest.split_once(':') else {
            return Err(format!(
                "{arg:?} is not `git:REV:path` (for example git:HEAD~1:specs/api.yaml)"
            ));
        };
        if rev.is_empty() || path.is_empty() {
            return Err(format!(
                "{arg:?} is not `git:REV:path` (for example git:HEAD~1:specs/api.yaml)"
            ));
        }
        let top = git_line(cwd, &["rev-parse", "--show-toplevel"])
            .map_err(|e| format!("{arg}: not inside a git repository: {e}"))?;
        let prefix = git_line(cwd, &["rev-parse", "--show-prefix"]).unwrap_or_default();
        git_line(
            cwd,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("{rev}^{{commit}}"),
            ],
        )
        .map_err(|_| format!("{arg}: unknown revision {rev:?}"))?;
        let top = PathBuf::from(top);
        let path = normalize(&top.join(prefix).join(path));
        Ok(SpecRef {
            source: FileSource::Git {
                top,
                rev: rev.to_string(),
            },
            path,
            display: arg.to_string(),
        })
    }

    pub fn file(path: &Path) -> SpecRef {
        SpecRef {
            source: FileSource::Disk,
            path: path.to_path_buf(),
            display: path.to_string_lossy().replace('\\', "/"),
        }
    }
}

impl FileSource {
    fn object(top: &Path, rev: &str, path: &Path) -> Result<String, String> {
        let relative = path
            .strip_prefix(top)
            .map_err(|_| "it is outside the repository".to_string())?;
        Ok(format!(
            "{rev}:{}",
            relative.to_string_lossy().replace('\\', "/")
        ))
    }

    /// The canonical form of `path`: resolved symlinks on disk, a normalized absolute path in a
    /// revision (checked to exist there).
    pub fn canonicalize(&self, path: &Path) -> Result<PathBuf, String> {
        match self {
            FileSource::Disk => path.canonicalize().map_err(|e| e.to_string()),
            FileSource::Git { top, rev } => {
                let path = normalize(path);
                let object = Self::object(top, rev, &path)?;
                git_line(top, &["cat-file", "-e", &object])
                    .map_err(|_| format!("{object} does not exist in the repository"))?;
                Ok(path)
            }
        }
    }

    /// The bytes of a file, refusing folders and files above `max_bytes`.
    pub fn read(&self, canonical: &Path, max_bytes: u64) -> Result<Vec<u8>, String> {
        match self {
            FileSource::Disk => match std::fs::metadata(canonical) {
                Ok(meta) if meta.len() > max_bytes => Err(format!(
                    "the file is {} bytes, above the limit of {max_bytes} bytes",
                    meta.len()
                )),
                Ok(meta) if meta.is_dir() => Err("it is a folder, not a file".to_string()),
                Ok(_) => std::fs::read(canonical).map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            },
            FileSource::Git { top, rev } => {
                let object = Self::object(top, rev, canonical)?;
                match git_line(top, &["cat-file", "-t", &object])?.as_str() {
                    "blob" => {}
                    "tree" => return Err("it is a folder, not a file".to_string()),
                    other => return Err(format!("it is a git {other}, not a file")),
                }
                let size: u64 = git_line(top, &["cat-file", "-s", &object])?
                    .parse()
                    .map_err(|e| format!("git reported no size: {e}"))?;
                if size > max_bytes {
                    return Err(format!(
                        "the file is {size} bytes, above the limit of {max_bytes} bytes"
                    ));
                }
                git(top, &["show", &object])
            }
        }
    }

    /// How diagnostics name a referenced file, when the source has its own naming.
    pub fn display(&self, canonical: &Path) -> Option<String> {
        match self {
            FileSource::Disk => None,
            FileSource::Git { top, rev } => Self::object(top, rev, canonical)
                .ok()
                .map(|o| format!("git:{o}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_lexically() {
        assert_eq!(
            normalize(Path::new("/r/specs/./paths/../api.yaml")),
            PathBuf::from("/r/specs/api.yaml")
        );
    }

    #[test]
    fn plain_paths_are_files() {
        let s = SpecRef::parse_in("specs/sandbox.yaml", Path::new("/")).unwrap();
        assert_eq!(s.source, FileSource::Disk);
        assert_eq!(s.display, "specs/sandbox.yaml");
        assert!(SpecRef::parse_in("git:HEAD", Path::new("/")).is_err());
        assert!(SpecRef::parse_in("git::x.yaml", Path::new("/")).is_err());
    }

    /// A multi-file spec read from a revision takes its `$ref`ed files from that revision, not
    /// from the working tree, and names them `git:REV:path`.
    #[test]
    fn referenced_files_come_from_the_same_revision() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        let run = |args: &[&str]| {
            let ok = Command::new("git")
                .arg("-C")
                .arg(repo)
                .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
                .args(args)
                .output()
                .unwrap();
            assert!(ok.status.success(), "{ok:?}");
        };
        run(&["init", "-q"]);
        std::fs::create_dir_all(repo.join("api/paths")).unwrap();
        std::fs::write(
            repo.join("api/openapi.yaml"),
            "openapi: 3.1.0\npaths:\n  /things:\n    $ref: ./paths/things.yaml\n",
        )
        .unwrap();
        let things = "post:\n  operationId: createThing\n  x-idempotent: false\n";
        std::fs::write(repo.join("api/paths/things.yaml"), things).unwrap();
        run(&["add", "."]);
        run(&["commit", "-q", "-m", "spec"]);
        std::fs::write(
            repo.join("api/paths/things.yaml"),
            things.replace("false", "true"),
        )
        .unwrap();
        let spec = SpecRef::parse_in("git:HEAD:openapi.yaml", &repo.join("api")).unwrap();
        assert_eq!(spec.display, "git:HEAD:openapi.yaml");
        let (raw, d) = crate::read::read_spec(&spec, &crate::read::Limits::default()).unwrap();
        assert!(!d.has_errors(), "{d:?}");
        let op = &raw.operations[0];
        let annotation = op.idempotent_on_operation.as_ref().unwrap();
        assert!(
            !annotation.value,
            "the committed value, not the working tree's"
        );
        assert_eq!(annotation.at.file, "git:HEAD:api/paths/things.yaml");
        let missing = SpecRef::parse_in("git:HEAD:nope.yaml", &repo.join("api")).unwrap();
        let errors = crate::read::read_spec(&missing, &crate::read::Limits::default()).unwrap_err();
        assert!(errors.to_string().contains("does not exist"), "{errors}");
    }
}
