//! `cargo xtask faults`: the fault matrix (conformance/faults/README.md). One scenario file, one
//! real fault-injecting server on 127.0.0.1, every language's adapter; what each runner saw and
//! what the server counted must equal the scenario's expectations.
//!
//! `cargo xtask fault-server` runs the server alone for a runner under development.

mod h2;
mod server;
mod soak;
mod tls;

use crate::toolchains::{self, FaultRun, Module};
use anyhow::{anyhow, bail, Context, Result};
use retrygen::emit::{self, TemplateSource};
use retrygen::model::ModelOptions;
use serde::Deserialize;
use serde_json::Value;
use server::{Arrival, Server};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// No run of the matrix lasts longer; the server stops by itself after it.
const SERVER_LIFETIME: Duration = Duration::from_secs(20 * 60);
/// One runner (all scenarios of one run) is killed after this.
const RUN_TIMEOUT: Duration = Duration::from_secs(300);
/// `fault-server` alone stops after this long without a connection.
const IDLE_STOP: Duration = Duration::from_secs(120);

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    spec: String,
    base_path: String,
    #[allow(dead_code)]
    note: String,
    scenarios: Vec<Scenario>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub id: String,
    method: String,
    path: String,
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    body: Option<Body>,
    #[serde(default)]
    mint_keys: Option<bool>,
    #[serde(default)]
    attempt_timeout_ms: Option<u64>,
    #[serde(default)]
    abort_after_ms: Option<u64>,
    /// The runner reads the event stream until it holds this many complete events (blank-line
    /// ended), then closes the body its language's way (contract v3 X4: the caller ends a
    /// stream while reading it).
    #[serde(default)]
    close_after_events: Option<u32>,
    #[serde(default)]
    warm: bool,
    /// The warm-up asks the server to close its connection right after answering (a stale pooled
    /// connection); the runner then waits `warm_pause_ms` before the scenario's request.
    #[serde(default)]
    warm_close: bool,
    #[serde(default)]
    warm_pause_ms: Option<u64>,
    /// The protocols this scenario is run over (all when absent).
    #[serde(default)]
    protocols: Option<Vec<String>>,
    /// Languages whose client cannot express the scenario, and why; their runners may print
    /// `unsupported` for it (in the main run too), every other language must run it.
    #[serde(default)]
    unsupported_in: BTreeMap<String, String>,
    /// Why the scenario is not run yet: the adapter or runner work it needs is open (an issue
    /// number and what is missing). The matrix prints every pending scenario and its reason on
    /// each run, so none is forgotten; `--only ID` runs it anyway.
    #[serde(default)]
    pending: Option<String>,
    /// Like `pending`, for some runs only: a run over one protocol (`python@h2c`), a run
    /// (`python-sync`, every protocol) or a language (all of its runs) -> why. Every other run is
    /// judged on the scenario as usual.
    #[serde(default)]
    pending_in: BTreeMap<String, String>,
    /// Retry overrides the runner puts on this request (docs/adapters.md P1): `max_retries`,
    /// `attempt_timeout_ms`, `read_body_max_bytes` (P6).
    #[serde(default)]
    overrides: Option<Overrides>,
    /// The attempt header the runner's adapter is built with for this request (P3).
    #[serde(default)]
    attempt_header: Option<String>,
    /// The adapter's body-read bound for this request (P6), set as an adapter option.
    #[serde(default)]
    read_body_max_bytes: Option<u64>,
    /// Policy keys the runner replaces in the module's default policy for this scenario's
    /// client (contract v3: keys a spec sets, such as the idempotency key's format).
    #[serde(default)]
    policy: Option<ScenarioPolicy>,
    pub script: Vec<Step>,
    expect: Expect,
}

/// The protocols the fault server speaks, in the order the matrix runs them.
pub const PROTOCOLS: [&str; 4] = ["http1", "h2c", "http1-tls", "h2"];

impl Scenario {
    /// Why the scenario is not judged for the run `run` of `language` over the protocol that
    /// makes it `name` (`python@h2c`), if it is pending there.
    fn pending_for(&self, language: &str, run: &str, name: &str) -> Option<&str> {
        self.pending_in
            .get(name)
            .or_else(|| self.pending_in.get(run))
            .or_else(|| self.pending_in.get(language))
            .map(String::as_str)
    }

    fn runs_over(&self, protocol: &str) -> bool {
        self.protocols
            .as_ref()
            .is_none_or(|list| list.iter().any(|p| p == protocol))
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Overrides {
    // Read by the runners; parsed here so a typo or a value out of range fails the file.
    #[serde(default)]
    max_retries: Option<u64>,
    #[serde(default)]
    attempt_timeout_ms: Option<u64>,
    #[serde(default)]
    read_body_max_bytes: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioPolicy {
    /// `uuid` or `sf-string` (contract v3 F1); a minted key is then expected in that form.
    #[serde(default)]
    idempotency_key_format: Option<String>,
}

impl Scenario {
    /// Whether a key the adapter mints is written as an RFC 9651 String (`"<uuid>"`).
    fn mints_sf_string_keys(&self) -> bool {
        self.policy
            .as_ref()
            .and_then(|p| p.idempotency_key_format.as_deref())
            == Some("sf-string")
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Body {
    kind: String,
    text: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Step {
    // An action first: a status step has no `action` tag, so it falls through to `Status`, while
    // an action with a `status` field never reads as a plain status.
    Action(Action),
    Status {
        status: u16,
        #[serde(default, deserialize_with = "header_list")]
        headers: Vec<(String, String)>,
        /// The response body as written (default: `ok` for a 2xx, `status N` otherwise); a
        /// `Content-Type` among `headers` replaces the default `text/plain`.
        #[serde(default)]
        body: Option<String>,
    },
}

impl Step {
    /// The body a status step answers with.
    pub(crate) fn status_body(status: u16, body: Option<&str>) -> Vec<u8> {
        match body {
            Some(text) => text.as_bytes().to_vec(),
            None if (200..300).contains(&status) => b"ok".to_vec(),
            None => format!("status {status}").into_bytes(),
        }
    }
}

/// The chunks of an `sse_events` answer and whether the stream drops after them (contract v3
/// streams): events `id: N` numbered from 1 over the whole call, starting after the request's
/// `Last-Event-ID` (a resume), at most `drop_after` of them in this response, then a drop when
/// events remain; the first event of each response carries `retry: retry_ms` when given.
pub(crate) fn sse_plan(
    last_event_id: Option<&str>,
    events: u32,
    drop_after: Option<u32>,
    retry_ms: Option<u64>,
) -> (Vec<String>, bool) {
    let start = last_event_id
        .and_then(|v| v.trim().parse::<u32>().ok())
        .map_or(1, |last| last.saturating_add(1));
    let mut chunks = Vec::new();
    let mut n = start;
    while n <= events && drop_after.is_none_or(|max| chunks.len() < max as usize) {
        let retry = match (chunks.is_empty(), retry_ms) {
            (true, Some(ms)) => format!("retry: {ms}\n"),
            _ => String::new(),
        };
        chunks.push(format!("{retry}id: {n}\ndata: line {n}\n\n"));
        n += 1;
    }
    (chunks, n <= events)
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    Reset,
    Close,
    CloseAfterHeaders {
        status: u16,
    },
    Stall {
        ms: u64,
    },
    Sse {
        events: u32,
    },
    SseDrop {
        events: u32,
    },
    /// An event stream with `id:` fields that resumes after `Last-Event-ID` ([`sse_plan`]).
    SseEvents {
        events: u32,
        #[serde(default)]
        drop_after: Option<u32>,
        #[serde(default)]
        retry_ms: Option<u64>,
        /// After this many events of the response, the server holds the stream open (at most
        /// 10 s) until the client goes away, then sends the rest: a caller that closes its body
        /// mid-stream is seen by the adapter while reading, never as the stream's end.
        #[serde(default)]
        hold_after: Option<u32>,
    },
    /// HTTP/2 only: RST_STREAM with this code (`PROTOCOL_ERROR`, ...) after the whole request.
    RstStream {
        code: String,
    },
    RefusedStream,
    GoawayUnprocessed,
    CloseAfterHead,
}

fn header_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<(String, String)>, D::Error> {
    // Kept in the file's order, so the server answers with the headers as written.
    let map: serde_json::Map<String, Value> = Deserialize::deserialize(d)?;
    map.into_iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k, s)),
            other => Err(serde::de::Error::custom(format!(
                "header {k}: {other} is not a string"
            ))),
        })
        .collect()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    arrivals: usize,
    #[serde(default)]
    status: Option<u16>,
    #[serde(default)]
    error: Option<String>,
    events: Vec<(String, u64)>,
    finish: ExpectFinish,
    operation: ExpectOperation,
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    body_text: Option<String>,
    #[serde(default)]
    body_error: bool,
    #[serde(default)]
    max_elapsed_ms: Option<u64>,
    #[serde(default)]
    min_elapsed_ms: Option<u64>,
    /// The sum over the call's finish events of `attempts + redirects` (when given).
    #[serde(default)]
    reported_arrivals: Option<u64>,
    /// The value of the scenario's `attempt_header` on each arrival, in order (null: absent).
    #[serde(default)]
    attempt_header_values: Option<Vec<Option<String>>>,
    /// Request header values on each arrival, in order, by lower-case name (null: absent), e.g.
    /// `{"last-event-id": [null, "3"]}` for a stream resumed after event 3.
    #[serde(default)]
    arrival_headers: Option<std::collections::BTreeMap<String, Vec<Option<String>>>>,
    /// The runner must print `finish_from_result`: the finish event read from what the call
    /// returned or raised (P5), which must equal `finish`.
    #[serde(default)]
    finish_from_result: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectFinish {
    reason: String,
    attempts: u64,
    outcome: String,
    timed_out: bool,
    /// The delay the server asked for when the last decision refused it as over the cap
    /// (contract v3 X8); checked when given.
    #[serde(default)]
    server_delay_ms: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectOperation {
    method: String,
    path_template: Option<String>,
    operation_id: Option<String>,
}

/// The scenario file every runner is given.
pub fn scenario_file() -> PathBuf {
    faults_dir().join("scenarios.json")
}

fn faults_dir() -> PathBuf {
    toolchains::root().join("conformance/faults")
}

fn load() -> Result<ScenarioFile> {
    let path = faults_dir().join("scenarios.json");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let file: ScenarioFile =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let mut seen = std::collections::HashSet::new();
    for s in &file.scenarios {
        if !seen.insert(s.id.clone()) {
            bail!("scenario id {} appears twice", s.id);
        }
        if s.script.is_empty() {
            bail!("scenario {} has an empty script", s.id);
        }
        if s.expect.status.is_some() == s.expect.error.is_some() {
            bail!("scenario {}: expect exactly one of status and error", s.id);
        }
        if let Some(o) = &s.overrides {
            // The runners pass these to the adapter, which must refuse them out of range
            // (docs/adapters.md P1): a scenario holds valid ones only.
            if o.max_retries.is_some_and(|n| n > 100)
                || o.attempt_timeout_ms == Some(0)
                || o.read_body_max_bytes.is_some_and(|n| n > 1 << 20)
            {
                bail!("scenario {}: overrides out of range", s.id);
            }
        }
        if s.read_body_max_bytes.is_some_and(|n| n > 1 << 20) {
            bail!("scenario {}: read_body_max_bytes over 1 MiB", s.id);
        }
        if s.expect.attempt_header_values.is_some() != s.attempt_header.is_some() {
            bail!(
                "scenario {}: attempt_header and expect.attempt_header_values go together",
                s.id
            );
        }
        if let Some(target) = &s.target {
            let known = [
                "server",
                "closed_port",
                "unresolvable",
                "other_origin",
                "untrusted_tls",
                "tls_mismatch",
            ];
            if !known.contains(&target.as_str()) {
                bail!("scenario {}: unknown target {target:?}", s.id);
            }
            if !["server", "other_origin"].contains(&target.as_str())
                && (s.warm || s.expect.arrivals != 0)
            {
                bail!(
                    "scenario {}: a {target} scenario cannot warm up or arrive",
                    s.id
                );
            }
            let tls_only = ["untrusted_tls", "tls_mismatch"].contains(&target.as_str());
            if tls_only
                && PROTOCOLS
                    .iter()
                    .any(|p| !p.ends_with("tls") && *p != "h2" && s.runs_over(p))
            {
                bail!(
                    "scenario {}: a {target} scenario runs over TLS only: set protocols",
                    s.id
                );
            }
        }
        if let Some(list) = &s.protocols {
            if list.is_empty() || list.iter().any(|p| !PROTOCOLS.contains(&p.as_str())) {
                bail!("scenario {}: protocols must be some of {PROTOCOLS:?}", s.id);
            }
        }
        // The runner stops after that many events and reports what it read: the expectation must
        // say what that is, or a runner reading the whole stream would pass.
        if s.close_after_events.is_some()
            && (s.close_after_events == Some(0) || s.expect.body_text.is_none())
        {
            bail!(
                "scenario {}: close_after_events must be at least 1 and needs expect.body_text",
                s.id
            );
        }
        if (s.warm_close || s.warm_pause_ms.is_some()) && !s.warm {
            bail!("scenario {}: warm_close and warm_pause_ms need warm", s.id);
        }
        for language in s.unsupported_in.keys() {
            if emit::backend(language).is_none() {
                bail!(
                    "scenario {}: unsupported_in names no language: {language}",
                    s.id
                );
            }
        }
        for step in &s.script {
            if let Step::Action(Action::RstStream { code }) = step {
                if h2::reason(code).is_none() {
                    bail!("scenario {}: unknown RST_STREAM code {code:?}", s.id);
                }
            }
        }
        if let Some(body) = &s.body {
            if !["bytes", "stream"].contains(&body.kind.as_str()) {
                bail!("scenario {}: unknown body kind {:?}", s.id, body.kind);
            }
        }
        if s.headers
            .keys()
            .any(|h| h.to_ascii_lowercase().starts_with("x-fault-"))
        {
            bail!("scenario {}: x-fault-* headers are the runner's", s.id);
        }
        let runner_limits = [s.attempt_timeout_ms, s.abort_after_ms];
        if runner_limits
            .iter()
            .flatten()
            .any(|ms| *ms == 0 || *ms > 10_000)
        {
            bail!("scenario {}: timeouts are 1-10000 ms", s.id);
        }
        if s.mint_keys == Some(false) && s.expect.key.as_deref() == Some("minted") {
            bail!("scenario {}: expects a minted key with minting off", s.id);
        }
        if let Some(format) = s
            .policy
            .as_ref()
            .and_then(|p| p.idempotency_key_format.as_deref())
        {
            if !["uuid", "sf-string"].contains(&format) {
                bail!(
                    "scenario {}: idempotency_key_format {format:?} is not uuid or sf-string",
                    s.id
                );
            }
        }
    }
    Ok(file)
}

/// A port nothing listens on: bound, then released.
fn closed_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

pub fn server_main(_args: &[String]) -> Result<()> {
    let file = load()?;
    let server = Server::start(file.scenarios, SERVER_LIFETIME)?;
    println!("{}", server.url());
    println!("closed port: http://127.0.0.1:{}", closed_port()?);
    for protocol in server.protocols() {
        println!("\n# {protocol}");
        for (name, value) in server.env(protocol) {
            println!("{name}={value}");
        }
    }
    eprintln!(
        "fault server: serving {} scenarios; stops after {} s without a connection",
        load()?.scenarios.len(),
        IDLE_STOP.as_secs()
    );
    let started = Instant::now();
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let last = server.last_activity().unwrap_or(started);
        if last.elapsed() > IDLE_STOP || started.elapsed() > SERVER_LIFETIME {
            eprintln!("fault server: stopping");
            return Ok(());
        }
    }
}

struct Args {
    languages: Vec<String>,
    only: Vec<String>,
    /// `--soak N`: the soak with N requests per run instead of the matrix.
    soak: Option<usize>,
    /// `--with-soak N`: the matrix, then the soak with N requests per run over the same builds.
    with_soak: Option<usize>,
    /// `--seed S` (repeatable): the soak's seeds.
    seeds: Vec<u64>,
}

fn parse_args(args: &[String]) -> Result<Args> {
    let mut parsed = Args {
        languages: emit::language_names()
            .into_iter()
            .map(String::from)
            .collect(),
        only: Vec::new(),
        soak: None,
        with_soak: None,
        seeds: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--lang" => {
                let value = it.next().ok_or_else(|| anyhow!("--lang needs a value"))?;
                parsed.languages = value.split(',').map(String::from).collect();
            }
            // Repeated or comma-separated: `--only a,b` is `--only a --only b`.
            "--only" => parsed.only.extend(
                it.next()
                    .ok_or_else(|| anyhow!("--only needs a value"))?
                    .split(',')
                    .filter(|id| !id.is_empty())
                    .map(str::to_string),
            ),
            "--soak" => {
                let value = it.next().ok_or_else(|| anyhow!("--soak needs a count"))?;
                parsed.soak = Some(
                    value
                        .parse()
                        .map_err(|_| anyhow!("--soak {value:?}: not a count"))?,
                );
            }
            "--with-soak" => {
                let value = it
                    .next()
                    .ok_or_else(|| anyhow!("--with-soak needs a count"))?;
                parsed.with_soak = Some(
                    value
                        .parse()
                        .map_err(|_| anyhow!("--with-soak {value:?}: not a count"))?,
                );
            }
            "--seed" => {
                let value = it.next().ok_or_else(|| anyhow!("--seed needs a value"))?;
                parsed.seeds.push(
                    value
                        .parse()
                        .map_err(|_| anyhow!("--seed {value:?}: not an integer"))?,
                );
            }
            other => bail!("faults: unknown argument {other:?}"),
        }
    }
    for language in &parsed.languages {
        if emit::backend(language).is_none() {
            bail!("unknown language {language:?}");
        }
    }
    let soaking = parsed.soak.is_some() || parsed.with_soak.is_some();
    if parsed.soak.is_some() && parsed.with_soak.is_some() {
        bail!("--soak (the soak alone) and --with-soak (the matrix, then the soak) exclude each other");
    }
    if soaking && parsed.seeds.is_empty() {
        parsed.seeds.push(1);
    }
    if !soaking && !parsed.seeds.is_empty() {
        bail!("--seed goes with --soak or --with-soak");
    }
    if parsed.soak.is_some() && !parsed.only.is_empty() {
        bail!("--only selects matrix scenarios; the soak draws its own requests");
    }
    Ok(parsed)
}

/// Renders the matrix's spec for `language` with every adapter of the language into `work/module`.
fn render_module(language: &str, spec: &Path, work: &Path) -> Result<Module> {
    let backend = emit::backend(language).ok_or_else(|| anyhow!("unknown language {language}"))?;
    let (api, _) = retrygen::load_api(spec, &ModelOptions::default())
        .map_err(|d| anyhow!("{}: {d}", spec.display()))?;
    let options = emit::resolve_options(backend, &Default::default())?;
    let adapters: Vec<&'static emit::Adapter> = backend.adapters().iter().collect();
    if adapters.is_empty() {
        bail!("{language} has no HTTP client adapter (Backend::adapters is empty)");
    }
    let rendered = emit::render(
        &api,
        backend,
        &options,
        &adapters,
        &TemplateSource::Embedded,
    )?;
    let dir = work.join("module");
    std::fs::create_dir_all(&dir)?;
    let mut files = Vec::new();
    for file in rendered {
        let path = dir.join(&file.name);
        std::fs::write(&path, file.contents)?;
        files.push(path);
    }
    Ok(Module { dir, files })
}

/// Renders the matrix's module for `language` into a fresh `target/faults/<language>/` (or
/// `<sub>` below it) and builds its runner(s).
pub fn build_runs(language: &str, sub: &str) -> Result<Vec<FaultRun>> {
    let file = load()?;
    let toolchain =
        toolchains::toolchain(language).ok_or_else(|| anyhow!("no toolchain for {language}"))?;
    let work = toolchains::root()
        .join("target/faults")
        .join(sub)
        .join(language);
    if work.exists() {
        std::fs::remove_dir_all(&work)?;
    }
    std::fs::create_dir_all(&work)?;
    let module = render_module(language, &faults_dir().join(&file.spec), &work)?;
    toolchain.fault_runner(&module, &work)
}

/// A running fault server with the matrix's scenarios; [`Server::env`] gives a runner's variables.
pub fn start_server() -> Result<Server> {
    let file = load()?;
    let server = Server::start(file.scenarios, SERVER_LIFETIME)?;
    Ok(server)
}

/// Runs `run` once with `env` and returns its non-empty stdout lines as JSON (the runner must
/// exit with 0).
pub fn run_lines(run: &FaultRun, arg: &Path, env: &[(&str, String)]) -> Result<Vec<Value>> {
    let (lines, _) = run_process(run, &run.name, arg, env)?;
    lines
        .iter()
        .map(|line| {
            serde_json::from_str(line)
                .with_context(|| format!("{}: not a JSON line: {line}", run.name))
        })
        .collect()
}

/// What a runner printed for one scenario.
type Lines = BTreeMap<String, Value>;

fn run_one(
    run: &FaultRun,
    name: &str,
    scenario_file: &Path,
    env: &[(&str, String)],
) -> Result<(Lines, Duration)> {
    let (lines, elapsed) = run_process(run, name, scenario_file, env)?;
    let mut by_id = Lines::new();
    for line in &lines {
        let value: Value = serde_json::from_str(line)
            .with_context(|| format!("{}: not a JSON line: {line}", run.name))?;
        let id = value
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| anyhow!("{}: a line without an id: {line}", run.name))?
            .to_string();
        if by_id.insert(id.clone(), value).is_some() {
            bail!("{}: scenario {id} reported twice", run.name);
        }
    }
    Ok((by_id, elapsed))
}

/// Runs a runner to its end (killed after [`RUN_TIMEOUT`]); its non-empty stdout lines.
fn run_process(
    run: &FaultRun,
    name: &str,
    scenario_file: &Path,
    env: &[(&str, String)],
) -> Result<(Vec<String>, Duration)> {
    let started = Instant::now();
    let (program, args) = run
        .built
        .argv
        .split_first()
        .ok_or_else(|| anyhow!("{}: empty command", run.name))?;
    let mut child = toolchains::command(program)
        .args(args)
        .arg(scenario_file)
        .current_dir(&run.built.cwd)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env("RETRYGEN_FAULT_RUN", name)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("{}: starting {}", run.name, run.built.argv.join(" ")))?;
    let stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stdout).lines() {
            match line {
                Ok(l) => lines.push(l),
                Err(_) => break,
            }
        }
        lines
    });
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() > RUN_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "{}: the runner did not finish within {} s",
                run.name,
                RUN_TIMEOUT.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let lines = reader
        .join()
        .map_err(|_| anyhow!("stdout reader panicked"))?;
    let stderr_text = errors
        .join()
        .map_err(|_| anyhow!("stderr reader panicked"))?;
    if !status.success() {
        bail!(
            "{}: the runner exited with {status}\n{}",
            run.name,
            tail(&stderr_text, 40)
        );
    }
    let lines = lines.into_iter().filter(|l| !l.trim().is_empty()).collect();
    Ok((lines, started.elapsed()))
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

const UUID_V4: &str = "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$";

fn expect_eq(problems: &mut Vec<String>, what: &str, got: &Value, want: &Value) {
    if got != want {
        problems.push(format!("{what}: got {got}, want {want}"));
    }
}

/// Every difference between what a run reported (and the server counted) and the scenario.
fn check(
    base_path: &str,
    scenario: &Scenario,
    line: &Value,
    arrivals: &[Arrival],
    uuid: &regex::Regex,
) -> Vec<String> {
    let e = &scenario.expect;
    let mut problems = Vec::new();
    let null = Value::Null;
    let field = |v: &Value, k: &str| v.get(k).cloned().unwrap_or(Value::Null);
    expect_eq(
        &mut problems,
        "arrivals (server)",
        &Value::from(arrivals.len()),
        &Value::from(e.arrivals),
    );
    expect_eq(
        &mut problems,
        "status",
        &field(line, "status"),
        &e.status.map_or(null.clone(), Value::from),
    );
    expect_eq(
        &mut problems,
        "error",
        &field(line, "error"),
        &e.error.clone().map_or(null.clone(), Value::from),
    );
    expect_eq(
        &mut problems,
        "body_error",
        &field(line, "body_error"),
        &Value::from(e.body_error),
    );
    let operation = |v: &Value, what: &str, problems: &mut Vec<String>| {
        for (key, want) in [
            ("method", Value::from(e.operation.method.clone())),
            (
                "path_template",
                e.operation
                    .path_template
                    .clone()
                    .map_or(Value::Null, Value::from),
            ),
            (
                "operation_id",
                e.operation
                    .operation_id
                    .clone()
                    .map_or(Value::Null, Value::from),
            ),
        ] {
            let got = v.get(key).cloned().unwrap_or(Value::Null);
            if got != want {
                problems.push(format!("{what}.{key}: got {got}, want {want}"));
            }
        }
    };
    let events = line
        .get("events")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if events.len() != e.events.len() {
        problems.push(format!(
            "events: got {} ({}), want {} ({:?})",
            events.len(),
            Value::from(events.clone()),
            e.events.len(),
            e.events
        ));
    } else {
        for (i, (event, (reason, delay))) in events.iter().zip(&e.events).enumerate() {
            for (key, want) in [
                ("attempt", Value::from(i + 1)),
                ("reason", Value::from(reason.clone())),
                ("delay_ms", Value::from(*delay)),
            ] {
                let got = event.get(key).cloned().unwrap_or(Value::Null);
                if got != want {
                    problems.push(format!("events[{i}].{key}: got {got}, want {want}"));
                }
            }
            operation(event, &format!("events[{i}]"), &mut problems);
        }
    }
    match line.get("finish") {
        Some(finish) if finish.is_object() => {
            for (key, want) in [
                ("reason", Value::from(e.finish.reason.clone())),
                ("attempts", Value::from(e.finish.attempts)),
                ("outcome", Value::from(e.finish.outcome.clone())),
                ("timed_out", Value::from(e.finish.timed_out)),
                ("status", e.status.map_or(Value::Null, Value::from)),
            ] {
                let got = finish.get(key).cloned().unwrap_or(Value::Null);
                if got != want {
                    problems.push(format!("finish.{key}: got {got}, want {want}"));
                }
            }
            if let Some(want) = e.finish.server_delay_ms {
                let got = finish
                    .get("server_delay_ms")
                    .cloned()
                    .unwrap_or(Value::Null);
                if got != want {
                    problems.push(format!("finish.server_delay_ms: got {got}, want {want}"));
                }
            }
            operation(finish, "finish", &mut problems);
        }
        _ => problems.push("no finish event".into()),
    }
    let want_body = scenario.body.as_ref().map_or("", |b| b.text.as_str());
    for (i, arrival) in arrivals.iter().enumerate() {
        // A `close_after_head` arrival's body was never read: nothing to compare.
        if arrival.body_read && arrival.body != want_body.as_bytes() {
            problems.push(format!(
                "arrival {i}: body {:?}, want {want_body:?}",
                String::from_utf8_lossy(&arrival.body)
            ));
        }
        if arrival.method != scenario.method {
            problems.push(format!("arrival {i}: method {}", arrival.method));
        }
        // The request target as sent: the base path, then the scenario's path untouched.
        let want_target = format!("{base_path}{}", scenario.path);
        if arrival.target != want_target {
            problems.push(format!(
                "arrival {i}: target {:?}, want {want_target:?}",
                arrival.target
            ));
        }
    }
    match e.key.as_deref() {
        None => {}
        Some("none") => {
            if let Some((i, a)) = arrivals
                .iter()
                .enumerate()
                .find(|(_, a)| !a.keys.is_empty())
            {
                problems.push(format!("arrival {i}: carries key {:?}, want none", a.keys));
            }
        }
        Some("minted") => {
            let first = arrivals.first().map(|a| a.keys.clone()).unwrap_or_default();
            // An sf-string key is the UUID as an RFC 9651 String: the same UUID in quotes.
            let minted = |key: &str| match scenario.mints_sf_string_keys() {
                true => key
                    .strip_prefix('"')
                    .and_then(|k| k.strip_suffix('"'))
                    .is_some_and(|k| uuid.is_match(k)),
                false => uuid.is_match(key),
            };
            match first.as_slice() {
                [key] if minted(key) => {
                    for (i, a) in arrivals.iter().enumerate() {
                        if a.keys != first {
                            problems.push(format!(
                                "arrival {i}: key {:?}, first was {first:?}",
                                a.keys
                            ));
                        }
                    }
                }
                other => problems.push(format!(
                    "arrival 0: key {other:?}, want one minted UUID v4{}",
                    if scenario.mints_sf_string_keys() {
                        " in quotes"
                    } else {
                        ""
                    }
                )),
            }
        }
        Some(value) => {
            for (i, a) in arrivals.iter().enumerate() {
                if a.keys != [value.to_string()] {
                    problems.push(format!("arrival {i}: key {:?}, want [{value:?}]", a.keys));
                }
            }
        }
    }
    for (name, want) in e.arrival_headers.iter().flatten() {
        let got: Vec<Option<String>> = arrivals
            .iter()
            .map(|a| {
                a.headers
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(name))
                    .map(|(_, v)| v.clone())
            })
            .collect();
        if &got != want {
            problems.push(format!("{name} on the arrivals: {got:?}, want {want:?}"));
        }
    }
    if let Some(want) = &e.attempt_header_values {
        let name = scenario
            .attempt_header
            .as_deref()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let got: Vec<Value> = arrivals
            .iter()
            .map(|a| {
                a.headers
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map_or(Value::Null, |(_, v)| Value::from(v.clone()))
            })
            .collect();
        let want: Vec<Value> = want
            .iter()
            .map(|v| v.clone().map_or(Value::Null, Value::from))
            .collect();
        expect_eq(
            &mut problems,
            &format!("attempt header {name:?} per arrival"),
            &Value::from(got),
            &Value::from(want),
        );
    }
    // P5: what the call returned or raised carries the finish the callback got.
    match line.get("finish_from_result") {
        Some(from_result) => expect_eq(
            &mut problems,
            "finish_from_result",
            from_result,
            &field(line, "finish"),
        ),
        None if e.finish_from_result => {
            problems.push("no finish_from_result (the finish read from the result)".into());
        }
        None => {}
    }
    // P4: the delays the call slept, when the runner reports them.
    if let Some(total) = line
        .get("finish")
        .and_then(|f| f.get("total_delay_ms"))
        .and_then(Value::as_u64)
    {
        let slept: u64 = events
            .iter()
            .filter_map(|ev| ev.get("delay_ms").and_then(Value::as_u64))
            .sum();
        if e.finish.reason != "aborted" && total != slept {
            problems.push(format!(
                "finish.total_delay_ms: got {total}, want {slept} (the events' delays)"
            ));
        }
    }
    if let Some(want) = e.reported_arrivals {
        expect_eq(
            &mut problems,
            "reported_arrivals",
            &field(line, "reported_arrivals"),
            &Value::from(want),
        );
    }
    if let Some(text) = &e.body_text {
        expect_eq(
            &mut problems,
            "body",
            &field(line, "body"),
            &Value::from(text.clone()),
        );
    }
    let elapsed = line.get("elapsed_ms").and_then(Value::as_u64);
    if let Some(max) = e.max_elapsed_ms {
        match elapsed {
            Some(ms) if ms <= max => {}
            other => problems.push(format!("elapsed_ms {other:?}, want at most {max}")),
        }
    }
    if let Some(min) = e.min_elapsed_ms {
        match elapsed {
            Some(ms) if ms >= min => {}
            other => problems.push(format!("elapsed_ms {other:?}, want at least {min}")),
        }
    }
    problems
}

/// The outcome of one run over one protocol: scenario id -> arrivals counted (None: not run) and
/// problems.
struct RunReport {
    name: String,
    elapsed: Duration,
    arrivals: BTreeMap<String, Option<usize>>,
    failures: Vec<(String, Vec<String>)>,
    unsupported: Vec<(String, String)>,
}

/// The run's name as the server counts it: `go` over HTTP/1.1, `go@h2c` over the others.
pub fn run_name(run: &str, protocol: &str) -> String {
    if protocol == "http1" {
        run.to_string()
    } else {
        format!("{run}@{protocol}")
    }
}

/// Removes this process's files when the run ends, however it ends.
pub struct RemoveOnDrop(pub Vec<PathBuf>);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Writes the scenario file of `protocol`: the selected scenarios that run over it. None when no
/// selected scenario does.
fn write_protocol_file(selected: &[&Scenario], protocol: &str) -> Result<Option<PathBuf>> {
    let mut subset: Value = serde_json::from_str(&std::fs::read_to_string(
        faults_dir().join("scenarios.json"),
    )?)?;
    let mut kept = 0;
    if let Some(list) = subset.get_mut("scenarios").and_then(Value::as_array_mut) {
        list.retain(|s| {
            s.get("id")
                .and_then(Value::as_str)
                .is_some_and(|id| selected.iter().any(|t| t.id == id && t.runs_over(protocol)))
        });
        kept = list.len();
    }
    if kept == 0 {
        return Ok(None);
    }
    // Per process: concurrent `cargo xtask faults` runs (say, `--only` beside a full run) must
    // not overwrite each other's subsets between writing and the runner's reading.
    let path = toolchains::root().join(format!(
        "target/faults/scenarios-{protocol}-{}.json",
        std::process::id()
    ));
    std::fs::create_dir_all(path.parent().expect("has a parent"))?;
    std::fs::write(&path, serde_json::to_string_pretty(&subset)?)?;
    Ok(Some(path))
}

pub fn main(args: &[String]) -> Result<()> {
    let args = parse_args(args)?;
    if let Some(requests) = args.soak {
        return soak_main(&args, requests);
    }
    let file = load()?;
    let selected: Vec<&Scenario> = file
        .scenarios
        .iter()
        .filter(|s| {
            if args.only.is_empty() {
                s.pending.is_none()
            } else {
                args.only.contains(&s.id)
            }
        })
        .collect();
    if selected.is_empty() {
        bail!("no scenario matches {:?}", args.only);
    }
    if args.only.is_empty() {
        for s in file.scenarios.iter().filter(|s| s.pending.is_some()) {
            eprintln!(
                "faults: PENDING, not run: {}: {}",
                s.id,
                s.pending.as_deref().unwrap_or_default()
            );
        }
    }
    // The runners read the selected scenarios of their protocol only.
    let mut protocol_files = BTreeMap::new();
    for protocol in PROTOCOLS {
        if let Some(path) = write_protocol_file(&selected, protocol)? {
            protocol_files.insert(protocol, path);
        }
    }
    let _remove = RemoveOnDrop(protocol_files.values().cloned().collect());

    let server = start_server()?;
    eprintln!(
        "faults: server {} ; {} scenarios ; languages {}",
        server.url(),
        selected.len(),
        args.languages.join(",")
    );
    let uuid = regex::Regex::new(UUID_V4).expect("valid regex");
    let mut reports = Vec::new();
    let mut build_errors = Vec::new();
    let mut built = Vec::new();
    for language in &args.languages {
        let t0 = Instant::now();
        let runs = build_runs(language, "");
        let runs = match runs {
            Ok(runs) => runs,
            Err(e) => {
                eprintln!("faults: {language}: build failed: {e:#}");
                build_errors.push(format!("{language}: {e:#}"));
                continue;
            }
        };
        eprintln!(
            "faults: {language}: built {} run(s) in {:.1} s",
            runs.len(),
            t0.elapsed().as_secs_f64()
        );
        for run in &runs {
            for protocol in run.protocols {
                let Some(scenario_path) = protocol_files.get(protocol) else {
                    continue;
                };
                let name = run_name(&run.name, protocol);
                // A scenario pending for this run is still in the runner's file (shared by every
                // run of the protocol); its line is set aside, not judged. `--only` judges it.
                let mut set_aside = BTreeSet::new();
                let scenarios: Vec<&Scenario> = selected
                    .iter()
                    .copied()
                    .filter(|s| s.runs_over(protocol))
                    .filter(|s| match s.pending_for(language, &run.name, &name) {
                        Some(why) if args.only.is_empty() => {
                            eprintln!("faults: {name}: PENDING here, not judged: {}: {why}", s.id);
                            set_aside.insert(s.id.clone());
                            false
                        }
                        _ => true,
                    })
                    .collect();
                let env = server.env(protocol);
                let (lines, elapsed) = match run_one(run, &name, scenario_path, &env) {
                    Ok(result) => result,
                    Err(e) => {
                        eprintln!("faults: {name}: {e:#}");
                        build_errors.push(format!("{name}: {e:#}"));
                        continue;
                    }
                };
                let report = judge(
                    &file.base_path,
                    language,
                    run.name != *language,
                    &name,
                    elapsed,
                    &scenarios,
                    &set_aside,
                    &lines,
                    &server,
                    &uuid,
                );
                reports.push(report);
            }
        }
        built.extend(runs);
    }
    print_table(&selected, &reports);
    let failed: usize = reports.iter().map(|r| r.failures.len()).sum();
    if !build_errors.is_empty() || failed > 0 {
        bail!(
            "fault matrix failed: {failed} scenario failure(s){}",
            if build_errors.is_empty() {
                String::new()
            } else {
                format!("; {}", build_errors.join("; "))
            }
        );
    }
    eprintln!(
        "faults: every run agrees with all {} scenarios ({} runs over their protocols)",
        selected.len(),
        reports.len()
    );
    match args.with_soak {
        Some(requests) => soak_over(&args, &server, &built, requests),
        None => Ok(()),
    }
}

/// The soak: every run of every language over every protocol it speaks, once per seed.
fn soak_main(args: &Args, requests: usize) -> Result<()> {
    let server = start_server()?;
    let mut runs = Vec::new();
    for language in &args.languages {
        runs.extend(build_runs(language, "").with_context(|| format!("building {language}"))?);
    }
    soak_over(args, &server, &runs, requests)
}

/// The soak over runs already built.
fn soak_over(args: &Args, server: &Server, runs: &[FaultRun], requests: usize) -> Result<()> {
    let mut reports = Vec::new();
    let mut errors = Vec::new();
    for run in runs {
        for protocol in run.protocols {
            for seed in &args.seeds {
                server.enable_soak(*seed);
                match soak::soak_run(run, protocol, server, requests, *seed) {
                    Ok(report) => {
                        eprintln!(
                            "soak: {} seed {seed}: {} requests, {} arrivals, {} violations",
                            report.run,
                            report.requests,
                            report.arrivals,
                            report.violations.len()
                        );
                        reports.push(report);
                    }
                    Err(e) => errors.push(format!("{} over {protocol}: {e:#}", run.name)),
                }
            }
        }
    }
    println!("{}", soak::table(&reports, requests, &args.seeds));
    if !errors.is_empty() {
        bail!("soak failed: {}", errors.join("; "));
    }
    soak::verdict(&reports)
}

/// Compares what one run printed, and what the server counted for it, with every scenario.
#[allow(clippy::too_many_arguments)]
fn judge(
    base_path: &str,
    language: &str,
    variant: bool,
    name: &str,
    elapsed: Duration,
    scenarios: &[&Scenario],
    set_aside: &BTreeSet<String>,
    lines: &Lines,
    server: &Server,
    uuid: &regex::Regex,
) -> RunReport {
    let mut report = RunReport {
        name: name.to_string(),
        elapsed,
        arrivals: BTreeMap::new(),
        failures: Vec::new(),
        unsupported: Vec::new(),
    };
    for scenario in scenarios {
        let arrivals = server.arrivals(name, &scenario.id);
        let Some(line) = lines.get(&scenario.id) else {
            report
                .failures
                .push((scenario.id.clone(), vec!["no line printed".into()]));
            report.arrivals.insert(scenario.id.clone(), None);
            continue;
        };
        if let Some(why) = line.get("unsupported").and_then(Value::as_str) {
            if variant || scenario.unsupported_in.contains_key(language) {
                report
                    .unsupported
                    .push((scenario.id.clone(), why.to_string()));
            } else {
                report.failures.push((
                    scenario.id.clone(),
                    vec![format!("unsupported in the language's main run: {why}")],
                ));
            }
            report.arrivals.insert(scenario.id.clone(), None);
            continue;
        }
        report
            .arrivals
            .insert(scenario.id.clone(), Some(arrivals.len()));
        let mut problems = check(base_path, scenario, line, &arrivals, uuid);
        problems.extend(invariants(line, arrivals.len()));
        problems.extend(protocol_problems(&arrivals, protocol_of(name)));
        if !problems.is_empty() {
            report.failures.push((scenario.id.clone(), problems));
        }
    }
    for id in lines.keys() {
        if !scenarios.iter().any(|s| &s.id == id) && !set_aside.contains(id) {
            report.failures.push((
                id.clone(),
                vec!["a line for a scenario not in the file".into()],
            ));
        }
    }
    // Counted per scenario: a line for a scenario not in the file is a failure too, so the
    // failures can outnumber the scenarios run.
    let passed = scenarios
        .iter()
        .filter(|s| {
            !report.failures.iter().any(|(id, _)| id == &s.id)
                && !report.unsupported.iter().any(|(id, _)| id == &s.id)
        })
        .count();
    eprintln!(
        "faults: {}: {passed}/{} scenarios agree{} in {:.1} s",
        report.name,
        scenarios.len(),
        if report.unsupported.is_empty() {
            String::new()
        } else {
            format!(" ({} unsupported here)", report.unsupported.len())
        },
        report.elapsed.as_secs_f64()
    );
    for (id, problems) in &report.failures {
        eprintln!("  {id}:");
        for p in problems {
            eprintln!("    {p}");
        }
    }
    report
}

/// The protocol a run name says (`go@h2c` -> `h2c`, `go` -> `http1`; a soak's `#soak<seed>`
/// tail ignored).
pub fn protocol_of(name: &str) -> &str {
    let name = name.split_once('#').map_or(name, |(run, _)| run);
    name.rsplit_once('@')
        .map_or("http1", |(_, protocol)| protocol)
}

/// An arrival that came over another protocol than the run's proves nothing about the run's
/// protocol (a client that silently fell back to HTTP/1.1, say): each is a problem.
pub fn protocol_problems(arrivals: &[Arrival], protocol: &str) -> Vec<String> {
    arrivals
        .iter()
        .enumerate()
        .filter(|(_, a)| a.protocol != protocol)
        .map(|(i, a)| {
            format!(
                "arrival {i}: came over {}, the run is over {protocol}",
                a.protocol
            )
        })
        .collect()
}

/// The two invariants every scenario (and every soak request) must keep, whatever it expects:
/// the server never counts more arrivals than the adapter reported (attempts, plus the
/// follow-ups the client sent by itself, over every finish event of the call), and a call the
/// adapter granted no retry and the client no follow-up arrives at most once.
pub fn invariants(line: &Value, arrivals: usize) -> Vec<String> {
    let mut problems = Vec::new();
    // A runner whose adapter does not report follow-ups yet is judged as if the client made
    // none: one finish event and its attempts only. That is never looser than the full check.
    let attempts = line
        .get("finish")
        .and_then(|f| f.get("attempts"))
        .and_then(Value::as_u64);
    let redirects = line
        .get("finish")
        .and_then(|f| f.get("redirects"))
        .and_then(Value::as_u64)
        .or(attempts.map(|_| 0));
    let reported = line
        .get("reported_arrivals")
        .and_then(Value::as_u64)
        .or(attempts.zip(redirects).map(|(a, r)| a + r));
    let finishes = line
        .get("finishes")
        .and_then(Value::as_u64)
        .or(attempts.map(|_| 1));
    let (Some(reported), Some(finishes), Some(redirects)) = (reported, finishes, redirects) else {
        problems.push(
            "the line lacks reported_arrivals, finishes or finish.redirects (integers)".into(),
        );
        return problems;
    };
    if arrivals as u64 > reported {
        problems.push(format!(
            "INVARIANT: {arrivals} arrivals, but the adapter reported {reported} (attempts + redirects)"
        ));
    }
    let retried = line
        .get("events")
        .and_then(Value::as_array)
        .is_some_and(|e| !e.is_empty());
    if !retried && finishes <= 1 && redirects == 0 && arrivals > 1 {
        problems.push(format!(
            "INVARIANT: no retry granted and no follow-up, yet {arrivals} arrivals"
        ));
    }
    problems
}

/// The evidence: the arrivals the server counted, per scenario and run.
fn print_table(selected: &[&Scenario], reports: &[RunReport]) {
    if reports.is_empty() {
        return;
    }
    let width = selected.iter().map(|s| s.id.len()).max().unwrap_or(8);
    let mut header = format!("{:width$}  want", "arrivals counted by the server");
    for r in reports {
        header.push_str(&format!("  {:>6}", short(&r.name)));
    }
    println!("{header}");
    for s in selected {
        let mut row = format!("{:width$}  {:>4}", s.id, s.expect.arrivals);
        for r in reports {
            let cell = match r.arrivals.get(&s.id) {
                Some(Some(n)) => {
                    let failed = r.failures.iter().any(|(id, _)| id == &s.id);
                    format!("{n}{}", if failed { "!" } else { "" })
                }
                _ => "-".to_string(),
            };
            row.push_str(&format!("  {cell:>6}"));
        }
        println!("{row}");
    }
}

fn short(name: &str) -> String {
    name.replace("typescript", "ts")
        .replace("python", "py")
        .replace("kotlin", "kt")
        .replace("csharp", "cs")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A resumable stream: events numbered over the call, a resume starts after
    /// `Last-Event-ID`, a drop only while events remain, `retry:` on each response's first event.
    #[test]
    fn sse_plan_numbers_resumes_and_drops() {
        let (chunks, drop) = sse_plan(None, 5, Some(3), Some(300));
        assert_eq!(
            chunks,
            [
                "retry: 300\nid: 1\ndata: line 1\n\n",
                "id: 2\ndata: line 2\n\n",
                "id: 3\ndata: line 3\n\n"
            ]
        );
        assert!(drop);
        let (chunks, drop) = sse_plan(Some(" 3"), 5, Some(3), None);
        assert_eq!(
            chunks,
            ["id: 4\ndata: line 4\n\n", "id: 5\ndata: line 5\n\n"]
        );
        assert!(!drop, "nothing remains after event 5");
        let (chunks, drop) = sse_plan(Some("x"), 2, None, None);
        assert_eq!(chunks.len(), 2, "an unreadable id starts over");
        assert!(!drop);
        assert_eq!(sse_plan(Some("9"), 2, None, None), (Vec::new(), false));
    }

    /// The run's protocol comes from its name, and an arrival over another protocol is a
    /// problem (a client that fell back to HTTP/1.1 proves nothing about HTTP/2).
    #[test]
    fn arrivals_must_come_over_the_runs_protocol() {
        assert_eq!(protocol_of("go"), "http1");
        assert_eq!(protocol_of("kotlin-okhttp5@h2c"), "h2c");
        assert_eq!(protocol_of("python-sync@http1-tls#soak2"), "http1-tls");
        assert_eq!(protocol_of("go#soak1"), "http1");
        let arrival = |protocol| Arrival {
            method: "GET".into(),
            target: "/v1/health".into(),
            body: Vec::new(),
            keys: Vec::new(),
            headers: Vec::new(),
            body_read: true,
            protocol,
            fault: None,
        };
        assert!(protocol_problems(&[arrival("h2")], "h2").is_empty());
        let problems = protocol_problems(&[arrival("h2"), arrival("http1-tls")], "h2");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].starts_with("arrival 1: came over http1-tls"));
    }

    /// The scenario file parses, every id is unique and the matrix keeps at least 40 scenarios.
    #[test]
    fn the_scenario_file_is_valid() {
        let file = load().expect("scenarios.json loads");
        assert!(file.scenarios.len() >= 40, "{}", file.scenarios.len());
    }
}
