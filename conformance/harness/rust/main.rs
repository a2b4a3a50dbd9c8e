//! Runs the conformance cases of conformance/README.md against the generated Rust module, which
//! the build places beside this file as the folder `retry_policy/` (`mod.rs` and `runtime.rs`).

// The harness does not exercise every public item of the module.
#[allow(dead_code)]
mod retry_policy;

use retry_policy::{DecisionInput, Jitter, Outcome, ReplayClass, RetryPolicy};
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

fn run_case(out: &mut String, f: &[&str]) -> Result<(), String> {
    let want = match f[0] {
        "D" => 22,
        "C" | "N" => 4,
        "I" => 3,
        "T" => 1,
        other => return Err(format!("unknown case kind {other:?}")),
    };
    if f.len() != want {
        return Err(format!("{} needs {want} fields, found {}", f[0], f.len()));
    }
    if f[0] == "T" {
        dump_tables(out);
        return Ok(());
    }
    let name = hex_of(&text(f[1])?);
    match f[0] {
        "D" => decide(out, &name, f)?,
        "C" => {
            let c = retry_policy::classify(&text(f[2])?, &text(f[3])?);
            let id = c
                .operation
                .and_then(|op| op.operation_id)
                .map_or_else(|| "-".to_string(), hex_of);
            writeln!(out, "C\t{name}\t{}\t{id}", c.class.as_str()).unwrap();
        }
        "I" => match retry_policy::operation_by_id(&text(f[2])?) {
            Some(op) => {
                writeln!(out, "I\t{name}\t{}\t{}", hex_of(op.method), hex_of(op.path)).unwrap()
            }
            None => writeln!(out, "I\t{name}\t-\t-").unwrap(),
        },
        _ => {
            let method = text(f[2])?;
            let path = text(f[3])?;
            let mut listed = false;
            for (m, pattern) in retry_policy::NON_REPLAYABLE_OPERATIONS.iter() {
                if *m == method && Pattern::parse(pattern)?.matches(&path) {
                    listed = true;
                    break;
                }
            }
            writeln!(out, "N\t{name}\t{}", u8::from(listed)).unwrap();
        }
    }
    Ok(())
}

fn decide(out: &mut String, name: &str, f: &[&str]) -> Result<(), String> {
    let policy = RetryPolicy {
        max_retries: integer(f[2])?,
        initial_backoff_ms: integer(f[3])?,
        max_backoff_ms: integer(f[4])?,
        multiplier: double(f[5])?,
        jitter: match f[6] {
            "full" => Jitter::Full,
            "equal" => Jitter::Equal,
            "decorrelated" => Jitter::Decorrelated,
            "none" => Jitter::None,
            other => return Err(format!("unknown jitter {other:?}")),
        },
        retryable_statuses: statuses(f[7])?,
        rejected_statuses: statuses(f[8])?,
        retry_after_cap_ms: integer(f[9])?,
        deadline_ms: if f[10] == "-" {
            None
        } else {
            Some(integer(f[10])?)
        },
    };
    let class = match f[11] {
        "idempotent" => ReplayClass::Idempotent,
        "keyed" => ReplayClass::Keyed,
        "non_replayable" => ReplayClass::NonReplayable,
        "no_retry" => ReplayClass::NoRetry,
        other => return Err(format!("unknown class {other:?}")),
    };
    let has_idempotency_key = match f[12] {
        "1" => true,
        "0" => false,
        other => return Err(format!("has_key must be 0 or 1, found {other:?}")),
    };
    let retry_after = optional_text(f[15])?;
    let retry_after_ms = optional_text(f[16])?;
    let status = if f[14] == "-" {
        None
    } else {
        Some(integer(f[14])?)
    };
    let outcome = match f[13] {
        "status" => Outcome::Status {
            status: status.ok_or("a status outcome needs a status")?,
            retry_after: retry_after.as_deref(),
            retry_after_ms: retry_after_ms.as_deref(),
        },
        // A failure carries no headers, whatever the adapter passed along.
        "connect" => Outcome::Connect,
        "transport" => Outcome::Transport,
        "aborted" => Outcome::Aborted,
        other => return Err(format!("unknown outcome {other:?}")),
    };
    let input = DecisionInput {
        class,
        has_idempotency_key,
        outcome,
        retries_used: integer(f[17])?,
        elapsed_ms: integer(f[18])?,
        previous_delay_ms: integer(f[19])?,
        now_ms: integer(f[20])?,
        random: double(f[21])?,
    };
    let d = retry_policy::decide(&policy, &input);
    writeln!(
        out,
        "D\t{name}\t{}\t{}\t{}",
        u8::from(d.retry),
        d.delay_ms,
        d.reason.as_str()
    )
    .unwrap();
    Ok(())
}

fn dump_tables(out: &mut String) {
    let p = RetryPolicy::default();
    writeln!(
        out,
        "B\t{}\t{}",
        hex_of(retry_policy::BASE_PATH),
        hex_of(retry_policy::SOURCE_NAME)
    )
    .unwrap();
    writeln!(
        out,
        "P\t{}\t{}\t{}\t{:016x}\t{}\t{}\t{}\t{}\t{}",
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
    .unwrap();
    for (i, op) in retry_policy::OPERATIONS.iter().enumerate() {
        let id = op.operation_id.map_or_else(|| "-".to_string(), hex_of);
        writeln!(
            out,
            "O\t{i}\t{}\t{}\t{id}\t{}\t{}",
            hex_of(op.method),
            hex_of(op.path),
            op.class.as_str(),
            hex_of(&op.pattern())
        )
        .unwrap();
    }
}

/// Decodes a hex field holding UTF-8 text.
fn text(field: &str) -> Result<String, String> {
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let bytes = field
        .as_bytes()
        .chunks(2)
        .map(|pair| match pair {
            [high, low] => Some(digit(*high)? << 4 | digit(*low)?),
            _ => None,
        })
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(|| format!("bad hex field {field:?}"))?;
    String::from_utf8(bytes).map_err(|_| format!("hex field {field:?} is not UTF-8"))
}

/// `text`, or `None` for `-` (an absent header).
fn optional_text(field: &str) -> Result<Option<String>, String> {
    if field == "-" {
        Ok(None)
    } else {
        text(field).map(Some)
    }
}

fn hex_of(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn integer<T: std::str::FromStr>(field: &str) -> Result<T, String> {
    if field.starts_with('+') {
        return Err(format!("bad integer {field:?}"));
    }
    field.parse().map_err(|_| format!("bad integer {field:?}"))
}

/// Reads the 16 hex digits of IEEE 754 bits.
fn double(field: &str) -> Result<f64, String> {
    if field.len() != 16 || field.starts_with('+') {
        return Err(format!("bad double bits {field:?}"));
    }
    u64::from_str_radix(field, 16)
        .map(f64::from_bits)
        .map_err(|_| format!("bad double bits {field:?}"))
}

fn statuses(field: &str) -> Result<Vec<u16>, String> {
    if field.is_empty() {
        return Ok(Vec::new());
    }
    field.split(',').map(integer).collect()
}

fn join(list: &[u16]) -> String {
    list.iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The subset of regular expressions that retrygen writes for path templates (see
/// src/model/path.rs): `^`, literal characters, `\` escapes of syntax characters, `[^/]+` for a
/// parameter, an optional trailing `/?` and `$`. The standard library has no regular expressions.
struct Pattern(Vec<Token>);

#[derive(Clone, Copy, PartialEq)]
enum Token {
    Char(char),
    /// `[^/]+`
    Segment,
    /// `/?`
    OptionalSlash,
}

impl Pattern {
    fn parse(pattern: &str) -> Result<Pattern, String> {
        let unsupported = || format!("pattern {pattern:?} is outside the subset retrygen writes");
        let body = pattern
            .strip_prefix('^')
            .and_then(|p| p.strip_suffix('$'))
            .ok_or_else(unsupported)?;
        let mut tokens = Vec::new();
        let mut rest = body;
        while let Some(c) = rest.chars().next() {
            if let Some(after) = rest.strip_prefix("[^/]+") {
                tokens.push(Token::Segment);
                rest = after;
            } else if rest == "/?" {
                tokens.push(Token::OptionalSlash);
                rest = "";
            } else if c == '\\' {
                let escaped = rest[1..].chars().next().ok_or_else(unsupported)?;
                if !"\\.+*?()|[]{}^$".contains(escaped) {
                    return Err(unsupported());
                }
                tokens.push(Token::Char(escaped));
                rest = &rest[1 + escaped.len_utf8()..];
            } else if "\\.+*?()|[]{}^$".contains(c) {
                return Err(unsupported());
            } else {
                tokens.push(Token::Char(c));
                rest = &rest[c.len_utf8()..];
            }
        }
        Ok(Pattern(tokens))
    }

    /// Whether the whole of `text` matches.
    fn matches(&self, text: &str) -> bool {
        let chars: Vec<char> = text.chars().collect();
        match_tokens(&self.0, &chars)
    }
}

fn match_tokens(tokens: &[Token], text: &[char]) -> bool {
    let Some((first, rest)) = tokens.split_first() else {
        return text.is_empty();
    };
    match *first {
        Token::Char(c) => text.first() == Some(&c) && match_tokens(rest, &text[1..]),
        Token::OptionalSlash => {
            (text.first() == Some(&'/') && match_tokens(rest, &text[1..]))
                || match_tokens(rest, text)
        }
        Token::Segment => {
            let run = text.iter().take_while(|&&c| c != '/').count();
            (1..=run).rev().any(|n| match_tokens(rest, &text[n..]))
        }
    }
}
