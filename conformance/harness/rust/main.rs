//! Runs the conformance cases of conformance/README.md (v1 lines, the contract v2 lines and the
//! contract v3's `D3`, `K3`, `HP`, `Q`, `SE` and `F`) against the generated Rust module, which the build places beside this file as the folder
//! `retry_policy/` (`mod.rs` and `runtime.rs`).

// The harness does not exercise every public item of the module.
#[allow(dead_code)]
mod retry_policy;

use retry_policy::{
    BudgetKind, Decision, DecisionInput, EventStreamScanner, InvalidInput, Jitter, KeyFormat,
    Outcome, OverCapMode, Reason, ReplayClass, RetryBudget, RetryEvent, RetryPolicy,
    UnknownOperationClass,
};
use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 2 {
        eprintln!("usage: harness CASEFILE");
        return ExitCode::from(2);
    }
    let data = match std::fs::read_to_string(&args[1]) {
        Ok(data) => data,
        Err(e) => {
            eprintln!("{}: {e}", args[1]);
            return ExitCode::FAILURE;
        }
    };
    let mut out = String::new();
    for (number, line) in data.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        if let Err(e) = run_case(&mut out, &fields) {
            print!("{out}");
            eprintln!("line {}: {e}", number + 1);
            return ExitCode::FAILURE;
        }
    }
    let mut stdout = std::io::stdout().lock();
    if stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// A harness failure (malformed input), as opposed to the runtime's [`InvalidInput`].
type Failure = String;

/// What a case prints: its line, or `X name key` when the runtime rejects the input.
enum Case {
    Line(String),
    Invalid(&'static str),
}

impl From<InvalidInput> for Case {
    fn from(e: InvalidInput) -> Case {
        Case::Invalid(e.key())
    }
}

impl From<&'static str> for Case {
    fn from(key: &'static str) -> Case {
        Case::Invalid(key)
    }
}

fn run_case(out: &mut String, f: &[&str]) -> Result<(), Failure> {
    let want = match f[0] {
        "D2" => Some(35),
        "D" => Some(22),
        "C" | "L" => Some(4),
        "I" => Some(3),
        "T2" => Some(1),
        "C2" => Some(6),
        "K" => Some(7),
        "E" => Some(8),
        "H" => None,
        "O" => Some(4),
        "D3" => Some(46),
        "K3" => Some(28),
        "HP" => None,
        "Q" => Some(5),
        "SE" => Some(3),
        "F" => Some(4),
        other => return Err(format!("unknown case kind {other:?}")),
    };
    match want {
        Some(want) if f.len() != want => {
            return Err(format!("{} needs {want} fields, found {}", f[0], f.len()))
        }
        None if f[0] == "HP" && f.len() % 2 != 0 => {
            return Err(format!("HP needs 2 fields and pairs, found {}", f.len()))
        }
        None if f[0] == "H" && (f.len() < 3 || (f.len() - 3) % 2 != 0) => {
            return Err(format!("H needs 3 fields and pairs, found {}", f.len()))
        }
        _ => {}
    }
    if f[0] == "T2" {
        dump_tables_v2(out);
        return Ok(());
    }
    let name = hex_of(&text(f[1])?);
    let case = match f[0] {
        "D" => decide_v1(f)?,
        "D2" => decide_v2(f)?,
        "K" => budget(f)?,
        "D3" => decide_v3(f)?,
        "K3" => match policy_of(&f[2..27])? {
            Ok(policy) => run_budget(&policy, f[27])?,
            Err(e) => e.into(),
        },
        "HP" => {
            let headers = f[2..]
                .chunks(2)
                .map(|pair| Ok((lossy(pair[0])?, lossy(pair[1])?)))
                .collect::<Result<Vec<(String, String)>, Failure>>()?;
            Case::Line(u8::from(retry_policy::has_precondition(headers)).to_string())
        }
        "Q" => {
            let content_type = if f[2] == "-" { None } else { Some(lossy(f[2])?) };
            let body = bytes(f[4])?;
            let t = retry_policy::problem_type_of(content_type.as_deref(), &body, flag(f[3])?);
            Case::Line(optional_hex(t.as_deref()))
        }
        "SE" => {
            // Fed in two pieces, so that a line or a CRLF split across reads is covered too.
            let stream = bytes(f[2])?;
            let (first, second) = stream.split_at(stream.len() / 2);
            let mut scanner = EventStreamScanner::new();
            scanner.feed(first);
            scanner.feed(second);
            Case::Line(format!(
                "{}\t{}\t{}",
                scanner.complete_bytes(),
                hex_of(scanner.last_event_id()),
                optional_hex(scanner.retry())
            ))
        }
        "F" => match f[2].parse::<KeyFormat>() {
            Ok(format) => Case::Line(hex_of(&retry_policy::idempotency_key_value(
                format,
                &text(f[3])?,
            ))),
            Err(e) => e.into(),
        },
        "C2" => classify_v2(f)?,
        "L" => safe_list(f)?,
        "H" => has_key(f)?,
        "E" => event(f)?,
        "C" => {
            let c = retry_policy::classify(&text(f[2])?, &text(f[3])?);
            Case::Line(format!("{}\t{}", c.class.as_str(), optional_hex(op_id(c))))
        }
        "O" => Case::Line(
            u8::from(retry_policy::in_scope(&text(f[2])?, &text(f[3])?)).to_string(),
        ),
        "I" => Case::Line(match retry_policy::operation_by_id(&text(f[2])?) {
            Some(op) => format!("{}\t{}", hex_of(op.method), hex_of(op.path)),
            None => "-\t-".to_string(),
        }),
        other => return Err(format!("unknown case kind {other:?}")),
    };
    match case {
        Case::Line(rest) => writeln!(out, "{}\t{name}\t{rest}", f[0]).unwrap(),
        Case::Invalid(key) => writeln!(out, "X\t{name}\t{key}").unwrap(),
    }
    Ok(())
}

fn op_id(c: retry_policy::Classification) -> Option<&'static str> {
    c.operation.and_then(|op| op.operation_id)
}

/// The contract's default policy.
fn contract_policy() -> RetryPolicy {
    RetryPolicy {
        max_retries: 3,
        initial_backoff_ms: 500,
        max_backoff_ms: 30_000,
        multiplier: 2.0,
        jitter: Jitter::Full,
        retryable_statuses: vec![408, 425, 429, 500, 502, 503, 504],
        rejected_statuses: vec![429],
        retry_after_cap_ms: 60_000,
        deadline_ms: None,
        retry_only_with_server_delay: vec![],
        key_in_flight_statuses: vec![409],
        key_reused_statuses: vec![422],
        server_directive_headers: vec!["x-should-retry".to_string()],
        retry_after_over_cap: OverCapMode::Refuse,
        unknown_operation_class: UnknownOperationClass::MethodDefault,
        budget_capacity: 500,
        budget_retry_cost: 5,
        budget_timeout_cost: 10,
        budget_success_refund: 1,
        throttling_statuses: vec![429],
        throttling_initial_backoff_ms: None,
        budget_throttling_cost: None,
        stop_problem_types: vec![
            retry_policy::PROBLEM_TYPE_QUOTA_EXCEEDED.to_string(),
            retry_policy::PROBLEM_TYPE_ABNORMAL_USAGE_DETECTED.to_string(),
        ],
        retry_problem_types: vec![],
        idempotency_key_format: KeyFormat::Uuid,
    }
}

/// The policy keys in the contract's table order (V1), v2's then v3's.
const POLICY_KEYS: [&str; 25] = [
    "policy.max_retries",
    "policy.initial_backoff_ms",
    "policy.max_backoff_ms",
    "policy.multiplier",
    "policy.jitter",
    "policy.retryable_statuses",
    "policy.rejected_statuses",
    "policy.retry_after_cap_ms",
    "policy.deadline_ms",
    "policy.retry_only_with_server_delay",
    "policy.key_in_flight_statuses",
    "policy.key_reused_statuses",
    "policy.server_directive_headers",
    "policy.retry_after_over_cap",
    "policy.unknown_operation_class",
    "policy.budget_capacity",
    "policy.budget_retry_cost",
    "policy.budget_timeout_cost",
    "policy.budget_success_refund",
    "policy.throttling_statuses",
    "policy.throttling_initial_backoff_ms",
    "policy.budget_throttling_cost",
    "policy.stop_problem_types",
    "policy.retry_problem_types",
    "policy.idempotency_key_format",
];

/// The policy of the 19 `P2` fields or the 25 `P3` fields (v3's keys at their defaults for
/// `P2`). Its names go through the runtime's parsers, and a problem type that is not UTF-8
/// (a Rust `String` cannot hold it) is its key's error; the first failing check in the
/// contract's order (V1 key by key, then V2) is the error, whether the harness, a parser or
/// [`RetryPolicy::validate`] finds it.
fn policy_of(p: &[&str]) -> Result<Result<RetryPolicy, &'static str>, Failure> {
    let mut conversion = Vec::new();
    let mut v3 = contract_policy();
    let mut key_format = Ok(KeyFormat::Uuid);
    if p.len() == 25 {
        v3.throttling_statuses = statuses(p[19])?;
        v3.throttling_initial_backoff_ms = optional_integer(p[20])?;
        v3.budget_throttling_cost = optional_integer(p[21])?;
        for (field, key, list) in [
            (p[22], "policy.stop_problem_types", &mut v3.stop_problem_types),
            (p[23], "policy.retry_problem_types", &mut v3.retry_problem_types),
        ] {
            list.clear();
            if field == "-" {
                continue;
            }
            for item in field.split(',') {
                match String::from_utf8(bytes(item)?) {
                    Ok(t) => list.push(t),
                    Err(_) => conversion.push(key),
                }
            }
        }
        key_format = p[24].parse::<KeyFormat>();
    }
    let jitter = p[4].parse::<Jitter>();
    let over_cap = p[13].parse::<OverCapMode>();
    let unknown = p[14].parse::<UnknownOperationClass>();
    let headers = if p[12] == "-" {
        Vec::new()
    } else {
        p[12]
            .split(',')
            .map(|h| bytes(h).map(|b| String::from_utf8_lossy(&b).into_owned()))
            .collect::<Result<_, _>>()?
    };
    let policy = RetryPolicy {
        max_retries: integer(p[0])?,
        initial_backoff_ms: integer(p[1])?,
        max_backoff_ms: integer(p[2])?,
        multiplier: double(p[3])?,
        jitter: jitter.unwrap_or(Jitter::Full),
        retryable_statuses: statuses(p[5])?,
        rejected_statuses: statuses(p[6])?,
        retry_after_cap_ms: integer(p[7])?,
        deadline_ms: optional_integer(p[8])?,
        retry_only_with_server_delay: statuses(p[9])?,
        key_in_flight_statuses: statuses(p[10])?,
        key_reused_statuses: statuses(p[11])?,
        server_directive_headers: headers,
        retry_after_over_cap: over_cap.unwrap_or(OverCapMode::Refuse),
        unknown_operation_class: unknown.unwrap_or(UnknownOperationClass::MethodDefault),
        budget_capacity: integer(p[15])?,
        budget_retry_cost: integer(p[16])?,
        budget_timeout_cost: integer(p[17])?,
        budget_success_refund: integer(p[18])?,
        idempotency_key_format: *key_format.as_ref().unwrap_or(&KeyFormat::Uuid),
        ..v3
    };
    let rank = |key: &str| POLICY_KEYS.iter().position(|k| *k == key);
    let mut first: Option<(usize, &'static str)> = None;
    for key in [jitter.err(), over_cap.err(), unknown.err(), key_format.err()]
        .into_iter()
        .flatten()
        .map(|e| e.key())
        .chain(conversion)
    {
        let r = rank(key).ok_or("a parser's key outside the policy")?;
        if first.map_or(true, |(best, _)| r < best) {
            first = Some((r, key));
        }
    }
    if let Err(e) = policy.validate() {
        // `policy.max_backoff_ms` with a value in range is V2, after every key.
        let v2 =
            e.key() == "policy.max_backoff_ms" && (1..=86_400_000).contains(&policy.max_backoff_ms);
        let r = if v2 {
            POLICY_KEYS.len()
        } else {
            rank(e.key()).ok_or("validate's key outside the policy")?
        };
        if first.map_or(true, |(best, _)| r < best) {
            first = Some((r, e.key()));
        }
    }
    Ok(match first {
        Some((_, e)) => Err(e),
        None => Ok(policy),
    })
}

fn decide_v2(f: &[&str]) -> Result<Case, Failure> {
    let policy = match policy_of(&f[2..21])? {
        Ok(policy) => policy,
        Err(e) => return Ok(e.into()),
    };
    let i = &f[21..];
    let class = match i[0].parse::<ReplayClass>() {
        Ok(class) => class,
        Err(e) => return Ok(e.into()),
    };
    let retry_after = optional_text(i[4])?;
    let retry_after_ms = optional_text(i[5])?;
    let directive = optional_text(i[6])?;
    let outcome = if i[2] == "status" {
        Outcome::Status {
            status: integer(i[3])?,
            retry_after: retry_after.as_deref(),
            retry_after_ms: retry_after_ms.as_deref(),
            directive: directive.as_deref(),
        }
    } else {
        match Outcome::failure(i[2]) {
            Ok(outcome) => outcome,
            Err(e) => return Ok(e.into()),
        }
    };
    let input = DecisionInput {
        class,
        has_idempotency_key: flag(i[1])?,
        outcome,
        retries_used: integer(i[7])?,
        elapsed_ms: integer(i[8])?,
        previous_delay_ms: integer(i[9])?,
        now_ms: integer(i[10])?,
        random: double(i[11])?,
        budget_tokens: optional_integer(i[12])?,
        timed_out: flag(i[13])?,
        ..DecisionInput::new(class, outcome, 0, 0.0)
    };
    Ok(match retry_policy::decide(&policy, &input) {
        Ok(d) => Case::Line(format!(
            "{}\t{}\t{}\t{}",
            u8::from(d.retry),
            d.delay_ms,
            d.reason.as_str(),
            d.budget_tokens
                .map_or_else(|| "-".to_string(), |t| t.to_string())
        )),
        Err(e) => e.into(),
    })
}

/// A `D3` line: the 25 `P3` fields, then class has_key has_precondition resumable
/// has_last_event_id stream_retry problem_type and `D2`'s outcome fields. A `stream_retry` or
/// `problem_type` that is not UTF-8 (a Rust `&str` cannot hold it) is V8's error, after every
/// check `decide` makes.
fn decide_v3(f: &[&str]) -> Result<Case, Failure> {
    let policy = match policy_of(&f[2..27])? {
        Ok(policy) => policy,
        Err(e) => return Ok(e.into()),
    };
    let class = match f[27].parse::<ReplayClass>() {
        Ok(class) => class,
        Err(e) => return Ok(e.into()),
    };
    let retry_after = optional_text(f[36])?;
    let retry_after_ms = optional_text(f[37])?;
    let directive = optional_text(f[38])?;
    let outcome = if f[34] == "status" {
        Outcome::Status {
            status: integer(f[35])?,
            retry_after: retry_after.as_deref(),
            retry_after_ms: retry_after_ms.as_deref(),
            directive: directive.as_deref(),
        }
    } else {
        match Outcome::failure(f[34]) {
            Ok(outcome) => outcome,
            Err(e) => return Ok(e.into()),
        }
    };
    let mut late = None;
    let mut scalar = |field: &str, key: &'static str| -> Result<Option<String>, Failure> {
        if field == "-" {
            return Ok(None);
        }
        Ok(String::from_utf8(bytes(field)?)
            .map_err(|_| late = late.or(Some(key)))
            .ok())
    };
    let stream_retry = scalar(f[32], "input.stream_retry")?;
    let problem_type = scalar(f[33], "input.problem_type")?;
    let input = DecisionInput {
        class,
        has_idempotency_key: flag(f[28])?,
        outcome,
        retries_used: integer(f[39])?,
        elapsed_ms: integer(f[40])?,
        previous_delay_ms: integer(f[41])?,
        now_ms: integer(f[42])?,
        random: double(f[43])?,
        budget_tokens: optional_integer(f[44])?,
        timed_out: flag(f[45])?,
        has_precondition: flag(f[29])?,
        resumable: flag(f[30])?,
        has_last_event_id: flag(f[31])?,
        stream_retry: stream_retry.as_deref(),
        problem_type: problem_type.as_deref(),
    };
    Ok(match (retry_policy::decide(&policy, &input), late) {
        (Err(e), _) => e.into(),
        (Ok(_), Some(key)) => key.into(),
        (Ok(d), None) => Case::Line(format!(
            "{}\t{}\t{}\t{}\t{}\t{}",
            u8::from(d.retry),
            d.delay_ms,
            d.reason.as_str(),
            d.budget_tokens
                .map_or_else(|| "-".to_string(), |t| t.to_string()),
            u8::from(d.throttled),
            d.server_delay_ms
                .map_or_else(|| "-".to_string(), |ms| ms.to_string())
        )),
    })
}

/// Decodes a hex field as text, invalid UTF-8 replaced (header names and values: a
/// replacement character matches what the invalid bytes match, nothing).
fn lossy(field: &str) -> Result<String, Failure> {
    Ok(String::from_utf8_lossy(&bytes(field)?).into_owned())
}

/// A v1 `D` line: a v2 decision with the new keys neutral and no budget.
fn decide_v1(f: &[&str]) -> Result<Case, Failure> {
    let jitter = match f[6].parse::<Jitter>() {
        Ok(jitter) => jitter,
        Err(e) => return Ok(e.into()),
    };
    let policy = RetryPolicy {
        max_retries: integer(f[2])?,
        initial_backoff_ms: integer(f[3])?,
        max_backoff_ms: integer(f[4])?,
        multiplier: double(f[5])?,
        jitter,
        retryable_statuses: statuses(f[7])?,
        rejected_statuses: statuses(f[8])?,
        retry_after_cap_ms: integer(f[9])?,
        deadline_ms: optional_integer(f[10])?,
        retry_only_with_server_delay: vec![],
        key_in_flight_statuses: vec![],
        key_reused_statuses: vec![],
        server_directive_headers: vec![],
        ..contract_policy()
    };
    let class = match f[11].parse::<ReplayClass>() {
        Ok(class) => class,
        Err(e) => return Ok(e.into()),
    };
    let retry_after = optional_text(f[15])?;
    let retry_after_ms = optional_text(f[16])?;
    let outcome = match f[13] {
        "status" => Outcome::Status {
            status: integer(f[14])?,
            retry_after: retry_after.as_deref(),
            retry_after_ms: retry_after_ms.as_deref(),
            directive: None,
        },
        // A failure carries no headers, whatever the adapter passed along.
        other => match Outcome::failure(other) {
            Ok(outcome) => outcome,
            Err(e) => return Ok(e.into()),
        },
    };
    let input = DecisionInput {
        has_idempotency_key: flag(f[12])?,
        retries_used: integer(f[17])?,
        elapsed_ms: integer(f[18])?,
        previous_delay_ms: integer(f[19])?,
        ..DecisionInput::new(class, outcome, integer(f[20])?, double(f[21])?)
    };
    Ok(match retry_policy::decide(&policy, &input) {
        Ok(d) => Case::Line(format!(
            "{}\t{}\t{}",
            u8::from(d.retry),
            d.delay_ms,
            d.reason.as_str()
        )),
        Err(e) => e.into(),
    })
}

/// `K`: a sequence of budget events on a [`RetryBudget`] cell.
fn budget(f: &[&str]) -> Result<Case, Failure> {
    let policy = RetryPolicy {
        budget_capacity: integer(f[2])?,
        budget_retry_cost: integer(f[3])?,
        budget_timeout_cost: integer(f[4])?,
        budget_success_refund: integer(f[5])?,
        ..contract_policy()
    };
    run_budget(&policy, f[6])
}

/// Budget events (`r`, `t`, `h`, `a<kind hex>`, `s<released>`) on a [`RetryBudget`] cell.
fn run_budget(policy: &RetryPolicy, events: &str) -> Result<Case, Failure> {
    let cell = match RetryBudget::new(policy) {
        Ok(cell) => cell,
        Err(e) => return Ok(e.into()),
    };
    let initial = cell.tokens();
    let mut results = Vec::new();
    for event in events.split(',').filter(|e| !e.is_empty()) {
        let step = match event.split_at(1) {
            ("r", "") => cell.try_acquire(policy, BudgetKind::Retry).map(acquired),
            ("t", "") => cell.try_acquire(policy, BudgetKind::Timeout).map(acquired),
            ("h", "") => cell
                .try_acquire(policy, BudgetKind::Throttling)
                .map(acquired),
            ("a", kind) => text(kind)?
                .parse::<BudgetKind>()
                .and_then(|kind| cell.try_acquire(policy, kind))
                .map(acquired),
            ("s", released) => cell
                .record_success(policy, integer(released)?)
                .map(|t| format!("s{t}")),
            _ => return Err(format!("bad budget event {event:?}")),
        };
        match step {
            Ok(result) => results.push(result),
            Err(e) => return Ok(e.into()),
        }
    }
    Ok(Case::Line(format!("{initial}\t{}", results.join(","))))
}

fn acquired((allowed, tokens): (bool, i64)) -> String {
    format!("{}{tokens}", if allowed { 'y' } else { 'n' })
}

/// A hex field as a Rust string, or the message key when it is not UTF-8 (Rust strings cannot
/// hold a lone surrogate: the harness reports V8 when converting its input).
fn scalar_text(field: &str, key: &'static str) -> Result<Result<String, Case>, Failure> {
    Ok(String::from_utf8(bytes(field)?).map_err(|_| Case::Invalid(key)))
}

/// `C2`: classify with a configured base (V8: base, class, method, target in that order).
fn classify_v2(f: &[&str]) -> Result<Case, Failure> {
    let base = if f[2] == "-" {
        None
    } else {
        match scalar_text(f[2], "input.base")? {
            Ok(base) => Some(base),
            Err(case) => return Ok(case),
        }
    };
    let unknown = match f[3].parse::<UnknownOperationClass>() {
        Ok(unknown) => unknown,
        Err(e) => return Ok(e.into()),
    };
    let method = match scalar_text(f[4], "input.method")? {
        Ok(method) => method,
        Err(case) => return Ok(case),
    };
    let target = match scalar_text(f[5], "input.path")? {
        Ok(target) => target,
        Err(case) => return Ok(case),
    };
    let classifier = retry_policy::classifier(base.as_deref(), unknown);
    let c = classifier.classify(&method, &target);
    Ok(Case::Line(format!(
        "{}\t{}",
        c.class.as_str(),
        optional_hex(op_id(c))
    )))
}

/// `L`: the first safe-list entry with the method whose pattern matches the whole path.
fn safe_list(f: &[&str]) -> Result<Case, Failure> {
    let method = text(f[2])?;
    let path = text(f[3])?;
    for entry in retry_policy::NON_REPLAYABLE_OPERATIONS.iter() {
        if entry.method == method && Pattern::parse(&entry.pattern)?.matches(&path) {
            return Ok(Case::Line(format!(
                "1\t{}",
                optional_hex(entry.idempotency_header)
            )));
        }
    }
    Ok(Case::Line("0\t-".to_string()))
}

/// `H`: has_idempotency_key of the operation with that operationId.
fn has_key(f: &[&str]) -> Result<Case, Failure> {
    let op = retry_policy::operation_by_id(&text(f[2])?);
    let headers = f[3..]
        .chunks(2)
        .map(|pair| Ok((text(pair[0])?, text(pair[1])?)))
        .collect::<Result<Vec<(String, String)>, Failure>>()?;
    Ok(Case::Line(
        u8::from(retry_policy::has_idempotency_key(op, headers)).to_string(),
    ))
}

const REASONS: [Reason; 23] = [
    Reason::Aborted,
    Reason::NoRetryOperation,
    Reason::Exhausted,
    Reason::ConnectFailure,
    Reason::TransportFailure,
    Reason::NotReplayable,
    Reason::RejectedStatus,
    Reason::RetryableStatus,
    Reason::StatusNotRetryable,
    Reason::RetryAfterOverCap,
    Reason::Deadline,
    Reason::ServerSaidNo,
    Reason::ServerSaidYes,
    Reason::KeyInFlight,
    Reason::KeyReused,
    Reason::NoServerDelay,
    Reason::BudgetExhausted,
    Reason::CertificateFailure,
    Reason::StreamResume,
    Reason::StreamNotResumable,
    Reason::PreconditionFailedAfterReplay,
    Reason::ProblemTypeStop,
    Reason::ProblemTypeRetry,
];

/// `E`: the retry event of a granted retry.
fn event(f: &[&str]) -> Result<Case, Failure> {
    let base = optional_text(f[2])?;
    let method = text(f[3])?;
    let target = text(f[4])?;
    let reason = *REASONS
        .iter()
        .find(|r| r.as_str() == f[7])
        .ok_or_else(|| format!("unknown reason {:?}", f[7]))?;
    let classifier =
        retry_policy::classifier(base.as_deref(), UnknownOperationClass::MethodDefault);
    let c = classifier.classify(&method, &target);
    let decision = Decision {
        retry: true,
        delay_ms: integer(f[6])?,
        reason,
        budget_tokens: None,
        throttled: false,
        server_delay_ms: None,
    };
    let e = RetryEvent::new(&method, &c, integer(f[5])?, &decision)
        .ok_or("no event for a granted retry")?;
    Ok(Case::Line(format!(
        "{}\t{}\t{}\t{}\t{}\t{}",
        e.attempt,
        e.reason.as_str(),
        e.delay_ms,
        hex_of(&e.method),
        optional_hex(e.path_template),
        optional_hex(e.operation_id)
    )))
}

fn v1_policy_fields(p: &RetryPolicy) -> String {
    format!(
        "{}\t{}\t{}\t{:016x}\t{}\t{}\t{}\t{}\t{}",
        p.max_retries,
        p.initial_backoff_ms,
        p.max_backoff_ms,
        p.multiplier.to_bits(),
        p.jitter.as_str(),
        join(&p.retryable_statuses),
        join(&p.rejected_statuses),
        p.retry_after_cap_ms,
        p.deadline_ms
            .map_or_else(|| "-".to_string(), |d| d.to_string())
    )
}

fn dump_tables_v2(out: &mut String) {
    let p = RetryPolicy::default();
    writeln!(
        out,
        "B2\t{}\t{}",
        hex_of(retry_policy::BASE_PATH),
        hex_of(retry_policy::SOURCE_NAME)
    )
    .unwrap();
    let headers = if p.server_directive_headers.is_empty() {
        "-".to_string()
    } else {
        p.server_directive_headers
            .iter()
            .map(|h| hex_of(h))
            .collect::<Vec<_>>()
            .join(",")
    };
    writeln!(
        out,
        "P2\t{}\t{}\t{}\t{}\t{headers}\t{}\t{}\t{}\t{}\t{}\t{}",
        v1_policy_fields(&p),
        join(&p.retry_only_with_server_delay),
        join(&p.key_in_flight_statuses),
        join(&p.key_reused_statuses),
        p.retry_after_over_cap.as_str(),
        p.unknown_operation_class.as_str(),
        p.budget_capacity,
        p.budget_retry_cost,
        p.budget_timeout_cost,
        p.budget_success_refund,
    )
    .unwrap();
    for (i, op) in retry_policy::OPERATIONS.iter().enumerate() {
        writeln!(
            out,
            "O2\t{i}\t{}\t{}\t{}\t{}\t{}",
            hex_of(op.method),
            hex_of(op.path),
            optional_hex(op.operation_id),
            op.class.as_str(),
            optional_hex(op.idempotency_header)
        )
        .unwrap();
    }
    for entry in retry_policy::NON_REPLAYABLE_OPERATIONS.iter() {
        writeln!(
            out,
            "L2\t{}\t{}\t{}\t{}",
            entry.index,
            hex_of(entry.method),
            hex_of(&entry.pattern),
            optional_hex(entry.idempotency_header)
        )
        .unwrap();
    }
}

/// The bytes of a hex field.
fn bytes(field: &str) -> Result<Vec<u8>, Failure> {
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    field
        .as_bytes()
        .chunks(2)
        .map(|pair| match pair {
            [high, low] => Some(digit(*high)? << 4 | digit(*low)?),
            _ => None,
        })
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(|| format!("bad hex field {field:?}"))
}

/// Decodes a hex field holding UTF-8 text.
fn text(field: &str) -> Result<String, Failure> {
    String::from_utf8(bytes(field)?).map_err(|_| format!("hex field {field:?} is not UTF-8"))
}

/// `text`, or `None` for `-` (an absent header).
fn optional_text(field: &str) -> Result<Option<String>, Failure> {
    if field == "-" {
        Ok(None)
    } else {
        text(field).map(Some)
    }
}

fn hex_of(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn optional_hex(s: Option<&str>) -> String {
    s.map_or_else(|| "-".to_string(), hex_of)
}

fn flag(field: &str) -> Result<bool, Failure> {
    match field {
        "1" => Ok(true),
        "0" => Ok(false),
        other => Err(format!("a flag must be 0 or 1, found {other:?}")),
    }
}

/// A signed 64-bit decimal, handed to the runtime unchecked.
fn integer<T: std::str::FromStr>(field: &str) -> Result<T, Failure> {
    if field.starts_with('+') {
        return Err(format!("bad integer {field:?}"));
    }
    field.parse().map_err(|_| format!("bad integer {field:?}"))
}

fn optional_integer(field: &str) -> Result<Option<i64>, Failure> {
    if field == "-" {
        Ok(None)
    } else {
        integer(field).map(Some)
    }
}

/// Reads the 16 hex digits of IEEE 754 bits.
fn double(field: &str) -> Result<f64, Failure> {
    if field.len() != 16 || field.starts_with('+') {
        return Err(format!("bad double bits {field:?}"));
    }
    u64::from_str_radix(field, 16)
        .map(f64::from_bits)
        .map_err(|_| format!("bad double bits {field:?}"))
}

fn statuses(field: &str) -> Result<Vec<i64>, Failure> {
    if field.is_empty() {
        return Ok(Vec::new());
    }
    field.split(',').map(integer).collect()
}

fn join(list: &[i64]) -> String {
    list.iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The subset of regular expressions retrygen writes for path templates (the safe list's
/// `Operation::safe_pattern`): `^`, literal characters,
/// `\` escapes of syntax characters, classes such as `[Bb]` and `[^/]`, non-capturing groups of
/// alternatives `(?:a|b)`, the quantifiers `?` and `+`, and `$` at the end (which must not match
/// before a final newline). The standard library has no regular expressions.
struct Pattern(Vec<Token>);

enum Token {
    Char(char),
    /// `[...]`: one of these characters.
    Class(Vec<char>),
    /// `[^/]`
    NotSlash,
    /// `(?:a|b|...)`
    Group(Vec<Vec<Token>>),
    /// `x?`
    Optional(Box<Token>),
    /// `x+`
    Repeat(Box<Token>),
}

const SYNTAX: &str = "\\.+*?()|[]{}^$";

impl Pattern {
    fn parse(pattern: &str) -> Result<Pattern, Failure> {
        let body = pattern
            .strip_prefix('^')
            .and_then(|p| p.strip_suffix('$'))
            .ok_or_else(|| format!("pattern {pattern:?} is not anchored"))?;
        let chars: Vec<char> = body.chars().collect();
        let mut at = 0;
        let tokens = parse_sequence(&chars, &mut at, false)
            .map_err(|e| format!("pattern {pattern:?}: {e}"))?;
        if at != chars.len() {
            return Err(format!("pattern {pattern:?}: unexpected {:?}", chars[at]));
        }
        Ok(Pattern(tokens))
    }

    /// Whether the whole of `text` matches.
    fn matches(&self, text: &str) -> bool {
        let chars: Vec<char> = text.chars().collect();
        match_sequence(&self.0, &chars, &mut |rest| rest.is_empty())
    }
}

/// Tokens up to the end, or inside a group up to an unescaped `|` or `)`.
fn parse_sequence(chars: &[char], at: &mut usize, in_group: bool) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    while let Some(&c) = chars.get(*at) {
        let atom = match c {
            '|' | ')' if in_group => break,
            '\\' => {
                let escaped = *chars.get(*at + 1).ok_or("a trailing backslash")?;
                if !SYNTAX.contains(escaped) {
                    return Err(format!("unsupported escape \\{escaped}"));
                }
                *at += 2;
                Token::Char(escaped)
            }
            '[' => {
                let close = chars[*at..]
                    .iter()
                    .position(|&c| c == ']')
                    .ok_or("an open class")?
                    + *at;
                let set: Vec<char> = chars[*at + 1..close].to_vec();
                *at = close + 1;
                if set == ['^', '/'] {
                    Token::NotSlash
                } else if set.is_empty() || set.iter().any(|c| SYNTAX.contains(*c)) {
                    return Err("an unsupported class".into());
                } else {
                    Token::Class(set)
                }
            }
            '(' => {
                if chars.get(*at + 1..*at + 3) != Some(&['?', ':'][..]) {
                    return Err("a capturing group".into());
                }
                *at += 3;
                let mut alternatives = vec![parse_sequence(chars, at, true)?];
                loop {
                    match chars.get(*at) {
                        Some('|') => {
                            *at += 1;
                            alternatives.push(parse_sequence(chars, at, true)?);
                        }
                        Some(')') => {
                            *at += 1;
                            break;
                        }
                        _ => return Err("an open group".into()),
                    }
                }
                Token::Group(alternatives)
            }
            c if SYNTAX.contains(c) => return Err(format!("unsupported {c:?}")),
            c => {
                *at += 1;
                Token::Char(c)
            }
        };
        let token = match chars.get(*at) {
            Some('?') => {
                *at += 1;
                Token::Optional(Box::new(atom))
            }
            Some('+') => {
                *at += 1;
                Token::Repeat(Box::new(atom))
            }
            _ => atom,
        };
        tokens.push(token);
    }
    Ok(tokens)
}

/// Whether `tokens` match a prefix of `text` for which `then` accepts the rest (backtracking).
fn match_sequence(tokens: &[Token], text: &[char], then: &mut dyn FnMut(&[char]) -> bool) -> bool {
    let Some((first, rest)) = tokens.split_first() else {
        return then(text);
    };
    match first {
        Token::Group(alternatives) => alternatives.iter().any(|alternative| {
            match_sequence(alternative, text, &mut |after| {
                match_sequence(rest, after, then)
            })
        }),
        Token::Optional(atom) => {
            match_sequence(std::slice::from_ref(&**atom), text, &mut |after| {
                match_sequence(rest, after, then)
            }) || match_sequence(rest, text, then)
        }
        Token::Repeat(atom) => match_sequence(std::slice::from_ref(&**atom), text, &mut |after| {
            match_sequence(tokens, after, then) || match_sequence(rest, after, then)
        }),
        single => match text.split_first() {
            Some((&c, after)) if matches_char(single, c) => match_sequence(rest, after, then),
            _ => false,
        },
    }
}

fn matches_char(token: &Token, c: char) -> bool {
    match token {
        Token::Char(want) => c == *want,
        Token::Class(set) => set.contains(&c),
        Token::NotSlash => c != '/',
        _ => false,
    }
}
