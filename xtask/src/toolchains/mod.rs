//! One toolchain per target language: how to lint a generated module with the language's own
//! tools and how to build the conformance harness against it. A missing tool is an error with
//! the command that installs it, never a skip.

pub(crate) mod csharp;
mod go;
pub(crate) mod kotlin;
pub(crate) mod python;
pub(crate) mod rust;
pub(crate) mod typescript;

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// How to run a built harness: the program and its leading arguments; the case file is appended.
#[derive(Debug, Clone)]
pub struct Built {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
}

/// A rendered target: the folder holding its files, the tables file first, then the runtime.
#[derive(Debug, Clone)]
pub struct Module {
    pub dir: PathBuf,
    pub files: Vec<PathBuf>,
}

impl Module {
    /// The per-spec tables file.
    pub fn tables(&self) -> &Path {
        &self.files[0]
    }
}

pub trait Toolchain: Sync {
    /// Same name as the retrygen backend.
    fn language(&self) -> &'static str;
    /// Runs the language's formatter and linter (and a strict compile) over the generated module;
    /// any finding is an error.
    fn lint(&self, module: &Module, work: &Path) -> Result<()>;
    /// Builds `conformance/harness/<language>/` against `module` (rendered with default options)
    /// inside the empty folder `work`.
    fn build(&self, module: &Module, work: &Path) -> Result<Built>;
    /// Checks the runtime source in `runtime/<language>/` as that language's own project, with
    /// nothing rendered: its formatter, its linter, a strict compile and its unit tests, run in
    /// the scratch folder `work`. Any finding or failing test is an error.
    fn runtime_tests(&self, work: &Path) -> Result<()>;
    /// The language's name in reports ("TypeScript", "C#").
    fn display_name(&self) -> &'static str;
    /// The versions of the tools this language runs on, for the benchmark report.
    fn versions(&self) -> String;
    /// Builds the bench program `bench/<language>/` against `module` in the empty folder `work`
    /// (`shared` is a folder every spec's build of this run may reuse); returns the command that
    /// runs it.
    fn bench_program(&self, module: &Module, work: &Path, shared: &Path) -> Result<Vec<String>>;
    /// Builds the fault-matrix runner `conformance/faults/harness/<language>/` against `module`
    /// (rendered from `conformance/faults/spec.yaml` with every adapter of the language) in the
    /// empty folder `work`; returns one run per adapter variant (conformance/faults/README.md).
    fn fault_runner(&self, module: &Module, work: &Path) -> Result<Vec<FaultRun>>;
}

/// One run of the fault matrix: its name (`x-fault-run`: the language, or `<language>-<variant>`)
/// and the command that runs it; the scenario file is appended.
#[derive(Debug, Clone)]
pub struct FaultRun {
    pub name: String,
    pub built: Built,
    /// The fault server's protocols this run's client speaks (`http1`, `h2c`, `http1-tls`, `h2`):
    /// the run is repeated once per protocol, as `<name>` for `http1` and `<name>@<protocol>` else.
    pub protocols: &'static [&'static str],
}

/// Copies the bench program sources of `language` (`bench/<language>/`) into `work`.
pub fn copy_sources(language: &str, work: &Path) -> Result<()> {
    let src = root().join("bench").join(language);
    for entry in std::fs::read_dir(&src).with_context(|| format!("reading {}", src.display()))? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            std::fs::copy(entry.path(), work.join(entry.file_name()))?;
        }
    }
    Ok(())
}

pub fn lossy(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// The first non-empty line a tool prints for `args` (its version).
pub fn shell(program: &str, args: &[&str]) -> String {
    command(program)
        .args(args)
        .output()
        .map(|o| {
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            text.lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("")
                .to_string()
        })
        .unwrap_or_else(|e| format!("unavailable ({e})"))
}

pub static TOOLCHAINS: [&dyn Toolchain; 6] = [
    &rust::Rust,
    &typescript::TypeScript,
    &python::Python,
    &go::Go,
    &kotlin::Kotlin,
    &csharp::CSharp,
];

pub fn toolchain(language: &str) -> Option<&'static dyn Toolchain> {
    TOOLCHAINS
        .iter()
        .copied()
        .find(|t| t.language() == language)
}

/// The repository root (xtask lives one level below it).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask is inside the workspace")
        .to_path_buf()
}

/// Where scripts/bootstrap-toolchains.sh installs what the machine lacks.
pub fn cache_bin_dirs() -> Vec<PathBuf> {
    let cache = root().join(".cache/toolchains");
    vec![cache.join("bin"), cache.join("node/node_modules/.bin")]
}

/// A command whose PATH also holds the bootstrapped toolchains.
pub fn command(program: &str) -> Command {
    let mut paths = cache_bin_dirs();
    if let Some(existing) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&existing));
    }
    let path = std::env::join_paths(paths).expect("paths without separators");
    let resolved = std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(program));
    let mut cmd = Command::new(resolved);
    cmd.env("PATH", path);
    cmd
}

/// Runs `cmd`, failing with its output when it exits non-zero or cannot start.
pub fn run(cmd: &mut Command, what: &str) -> Result<String> {
    let output = cmd.output().with_context(|| {
        format!("{what}: cannot start {:?}; run `bash scripts/bootstrap-toolchains.sh` to install the toolchains", cmd.get_program())
    })?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        bail!(
            "{what} failed ({}):\n{}{}",
            output.status,
            stdout,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(stdout)
}

/// Copies the harness sources of `language` into `work`.
pub fn copy_harness(language: &str, work: &Path) -> Result<()> {
    let src = root().join("conformance/harness").join(language);
    copy_dir(&src, work).with_context(|| format!("copying {}", src.display()))?;
    let renames = HARNESS_RENAMES.with(|r| r.borrow().clone());
    if !renames.is_empty() {
        rename_in_dir(work, &renames)?;
    }
    Ok(())
}

thread_local! {
    /// The names the module being built on this thread gives its package, namespace, object or
    /// class, where they differ from the defaults the harnesses are written against: `(default,
    /// name)`. Set by [`crate::harness::render_with`] before the same thread builds the harness.
    static HARNESS_RENAMES: std::cell::RefCell<Vec<(String, String)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Sets the renames [`copy_harness`] applies on this thread (empty: the harness as written).
pub fn set_harness_renames(renames: Vec<(String, String)>) {
    HARNESS_RENAMES.with(|r| *r.borrow_mut() = renames);
}

/// Every default name in the harness sources under `dir` replaced by the module's.
fn rename_in_dir(dir: &Path, renames: &[(String, String)]) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            rename_in_dir(&path, renames)?;
        } else if let Ok(mut text) = std::fs::read_to_string(&path) {
            for (from, to) in renames {
                text = text.replace(from.as_str(), to);
            }
            std::fs::write(&path, text)?;
        }
    }
    Ok(())
}

fn copy_dir(src: &Path, dst: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dst)?;
    for entry in std::fs::read_dir(src)? {
        let entry = entry?;
        let to = dst.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &to)?;
        } else {
            std::fs::copy(entry.path(), to)?;
        }
    }
    Ok(())
}

/// The C-family languages whose source lines [`code_outside_comments`] splits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CFamily {
    /// `/* */` comments nest; `"""raw"""` strings.
    Kotlin,
    /// `/* */` comments do not nest; `@"verbatim"` strings (`""` is an escaped quote).
    CSharp,
}

/// What [`code_outside_comments`] carries from one line to the next: how many `/* */` comments
/// are open (KDoc and any other block comment span lines).
#[derive(Debug, Default)]
pub struct CommentState {
    open: usize,
}

/// The code of one source `line` with its comments taken out: `//` (and so `///`) to the end of
/// the line, and `/* */` blocks, which may span lines (`state` carries them). A `//` or `/*` inside
/// a string or character literal is code, and literals stay in the result, so a style check on
/// the result sees every character outside comments. Literals are taken to end on their line
/// (generated modules escape line breaks in every literal); an unterminated one runs to the end of
/// the line and counts as code.
pub fn code_outside_comments(line: &str, language: CFamily, state: &mut CommentState) -> String {
    let chars: Vec<char> = line.chars().collect();
    let at = |i: usize, s: &str| starts_at(&chars, i, s);
    let mut code = String::new();
    let mut i = 0;
    while i < chars.len() {
        if state.open > 0 {
            if at(i, "*/") {
                state.open -= 1;
                i += 2;
                if state.open == 0 {
                    // `a/* */b` is two tokens, not `ab`.
                    code.push(' ');
                }
            } else if language == CFamily::Kotlin && at(i, "/*") {
                state.open += 1;
                i += 2;
            } else {
                i += 1;
            }
            continue;
        }
        if at(i, "//") {
            break;
        }
        if at(i, "/*") {
            state.open = 1;
            i += 2;
            continue;
        }
        let end = literal_end(&chars, i, language);
        if end > i {
            code.extend(&chars[i..end]);
            i = end;
        } else {
            code.push(chars[i]);
            i += 1;
        }
    }
    code
}

/// When a string or character literal starts at `chars[start]`: the index just after it (the end
/// of the line when it does not close there). Otherwise `start`.
fn literal_end(chars: &[char], start: usize, language: CFamily) -> usize {
    let at = |i: usize, s: &str| starts_at(chars, i, s);
    if language == CFamily::Kotlin && at(start, "\"\"\"") {
        // A raw string has no escapes and ends at the last quote of the next run of three or more.
        let mut i = start + 3;
        while i < chars.len() {
            if at(i, "\"\"\"") {
                while chars.get(i + 3) == Some(&'"') {
                    i += 1;
                }
                return i + 3;
            }
            i += 1;
        }
        return chars.len();
    }
    if language == CFamily::CSharp && at(start, "@\"") {
        // A verbatim string: `\` is an ordinary character and `""` an escaped quote.
        let mut i = start + 2;
        while i < chars.len() {
            if at(i, "\"\"") {
                i += 2;
            } else if chars[i] == '"' {
                return i + 1;
            } else {
                i += 1;
            }
        }
        return chars.len();
    }
    let quote = chars[start];
    if quote != '"' && quote != '\'' {
        return start;
    }
    let mut i = start + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    chars.len()
}

/// Whether `chars[i..]` starts with `s`.
fn starts_at(chars: &[char], i: usize, s: &str) -> bool {
    s.chars()
        .enumerate()
        .all(|(k, c)| chars.get(i + k) == Some(&c))
}

#[cfg(test)]
mod tests {
    use super::{code_outside_comments, CFamily, CommentState};

    fn code(lines: &[&str], language: CFamily) -> Vec<String> {
        let mut state = CommentState::default();
        lines
            .iter()
            .map(|line| code_outside_comments(line, language, &mut state))
            .collect()
    }

    #[test]
    fn line_comments_are_removed_wherever_they_start() {
        for language in [CFamily::Kotlin, CFamily::CSharp] {
            assert_eq!(code(&["// h\u{e9}llo.yaml"], language), [""]);
            assert_eq!(code(&["    /// <c>\u{e9}</c>"], language), ["    "]);
            assert_eq!(code(&["f(1) // \u{e9}"], language), ["f(1) "]);
            assert_eq!(code(&["f(1)// \u{e9}"], language), ["f(1)"]);
        }
    }

    #[test]
    fn comment_markers_inside_literals_are_code() {
        for language in [CFamily::Kotlin, CFamily::CSharp] {
            assert_eq!(
                code(&["a(\" // \u{e9}\") // x"], language),
                ["a(\" // \u{e9}\") "]
            );
            assert_eq!(
                code(&["a(\"\\\" /* \u{e9}\", '\"', '\\'') // x"], language),
                ["a(\"\\\" /* \u{e9}\", '\"', '\\'') "]
            );
            // Unterminated: the rest of the line is code.
            assert_eq!(code(&["a(\"// \u{e9}"], language), ["a(\"// \u{e9}"]);
        }
        assert_eq!(
            code(&["a(@\"\\\" // \u{e9}\") // x"], CFamily::CSharp),
            ["a(@\"\\\" "]
        );
        assert_eq!(
            code(&["a(@\"\\\"\" // \u{e9}\") // x"], CFamily::CSharp),
            ["a(@\"\\\"\" // \u{e9}\") "]
        );
        assert_eq!(
            code(&["a(\"\"\"\\\" // \u{e9}\"\"\"\") // x"], CFamily::Kotlin),
            ["a(\"\"\"\\\" // \u{e9}\"\"\"\") "]
        );
    }

    #[test]
    fn block_comments_span_lines() {
        let lines = [
            "/**",
            " * caf\u{e9} /* nested */ still a comment \u{e9}",
            " */",
            "val a = 1 /* \u{e9} */ + 2",
            "/* \u{e9} */ val b = \"\u{e9}\"",
        ];
        assert_eq!(
            code(&lines, CFamily::Kotlin),
            ["", "", " ", "val a = 1   + 2", "  val b = \"\u{e9}\""]
        );
        // C# block comments do not nest: the first `*/` closes.
        assert_eq!(
            code(&["/* a /* b */ c\u{e9} */"], CFamily::CSharp),
            ["  c\u{e9} */"]
        );
    }
}
