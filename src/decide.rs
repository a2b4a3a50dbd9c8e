//! docs/contract.md section 3, `decide(policy, input)`, in Rust for the tool itself: `retrygen
//! explain` tells what the policy does with a failed attempt. It is the decision the generated
//! Rust module makes (the same rules, in the same order, with the same anchors), over the
//! model's [`Policy`] and [`ReplayClass`]; the unit tests run it on every case of
//! conformance/vectors/decide.json.

use crate::model::policy::{Jitter, Policy};
use crate::model::ReplayClass;
use std::fmt;

type RetryPolicy = Policy;

/// What an attempt ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome<'a> {
    /// The attempt got a response.
    Status {
        /// The response status.
        status: u16,
        /// The `Retry-After` response header, when present.
        retry_after: Option<&'a str>,
        /// The `retry-after-ms` response header, when present.
        retry_after_ms: Option<&'a str>,
    },
    /// The request provably never left: DNS failure, connection refused, connect timeout, TLS
    /// handshake failure.
    Connect,
    /// The request may have been sent: reset, EOF, read or write timeout, protocol error, and
    /// anything an adapter cannot classify.
    Transport,
    /// The caller cancelled the request.
    Aborted,
}

/// What [`decide`] needs to know about the attempt that just failed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecisionInput<'a> {
    /// The class of the request's operation, from [`crate::model::Api::classify`].
    pub class: ReplayClass,
    /// Whether the request carries the idempotency key header.
    pub has_idempotency_key: bool,
    /// What the attempt ended with.
    pub outcome: Outcome<'a>,
    /// The retries already made: 0 after the first attempt.
    pub retries_used: u32,
    /// The time since the first attempt started, in milliseconds.
    pub elapsed_ms: u64,
    /// The delay waited before the attempt that just failed, 0 after the first.
    pub previous_delay_ms: u64,
    /// The current time in milliseconds since the Unix epoch, for HTTP-dates.
    pub now_ms: i64,
    /// A uniformly random number in [0, 1) drawn by the caller.
    pub random: f64,
}

/// Why [`decide`] retries or stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// Stop: the caller cancelled.
    Aborted,
    /// Stop: the operation is never retried.
    NoRetryOperation,
    /// Stop: every retry of the policy is used.
    Exhausted,
    /// Retry: the request never left.
    ConnectFailure,
    /// Retry: the request may have been sent, and it is replayable.
    TransportFailure,
    /// Stop: the request may have reached the server and is not replayable.
    NotReplayable,
    /// Retry: the API returns the status before doing anything.
    RejectedStatus,
    /// Retry: a retryable status on a replayable request.
    RetryableStatus,
    /// Stop: the status is not retried.
    StatusNotRetryable,
    /// Stop: the server asked to wait longer than the policy's `retry_after_cap_ms`.
    RetryAfterOverCap,
    /// Stop: the wait would end after the deadline.
    Deadline,
}

impl Reason {
    /// The name of the reason, such as `retryable_status`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Reason::Aborted => "aborted",
            Reason::NoRetryOperation => "no_retry_operation",
            Reason::Exhausted => "exhausted",
            Reason::ConnectFailure => "connect_failure",
            Reason::TransportFailure => "transport_failure",
            Reason::NotReplayable => "not_replayable",
            Reason::RejectedStatus => "rejected_status",
            Reason::RetryableStatus => "retryable_status",
            Reason::StatusNotRetryable => "status_not_retryable",
            Reason::RetryAfterOverCap => "retry_after_over_cap",
            Reason::Deadline => "deadline",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The result of [`decide`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// Whether to send the request again.
    pub retry: bool,
    /// How long to wait before the retry, in milliseconds; 0 when `retry` is false.
    pub delay_ms: u64,
    /// Why.
    pub reason: Reason,
}

impl Decision {
    const fn stop(reason: Reason) -> Decision {
        Decision {
            retry: false,
            delay_ms: 0,
            reason,
        }
    }
}

/// Tells whether to retry a request after a failed attempt, and after how long.
///
/// It has no clock and no random source of its own: the same policy and input always give the
/// same decision, in every SDK of the API.
#[must_use]
pub fn decide(policy: &RetryPolicy, input: &DecisionInput<'_>) -> Decision {
    let reason = match eligibility(policy, input) {
        Ok(reason) => reason,
        Err(stop) => return Decision::stop(stop),
    };
    let server = match input.outcome {
        Outcome::Status {
            retry_after,
            retry_after_ms,
            ..
        } => server_delay(retry_after, retry_after_ms, input.now_ms),
        _ => ServerDelay::Absent,
    };
    let delay = match server {
        ServerDelay::TooLarge => return Decision::stop(Reason::RetryAfterOverCap),
        ServerDelay::Millis(ms) if ms > policy.retry_after_cap_ms => {
            return Decision::stop(Reason::RetryAfterOverCap)
        }
        ServerDelay::Millis(ms) => ms,
        ServerDelay::Absent => backoff_ms(policy, input),
    };
    if let Some(deadline) = policy.deadline_ms {
        if input.elapsed_ms > deadline || delay > deadline - input.elapsed_ms {
            return Decision::stop(Reason::Deadline);
        }
    }
    Decision {
        retry: true,
        delay_ms: delay,
        reason,
    }
}

/// The rules that do not depend on the delay: the reason to retry, or the reason to stop.
fn eligibility(policy: &RetryPolicy, input: &DecisionInput<'_>) -> Result<Reason, Reason> {
    if matches!(input.outcome, Outcome::Aborted) {
        return Err(Reason::Aborted);
    }
    if input.class == ReplayClass::NoRetry {
        return Err(Reason::NoRetryOperation);
    }
    if input.retries_used >= policy.max_retries {
        return Err(Reason::Exhausted);
    }
    let replayable = input.class == ReplayClass::Idempotent
        || (input.class == ReplayClass::Keyed && input.has_idempotency_key);
    match input.outcome {
        Outcome::Aborted => Err(Reason::Aborted),
        Outcome::Connect => Ok(Reason::ConnectFailure),
        Outcome::Transport if replayable => Ok(Reason::TransportFailure),
        Outcome::Transport => Err(Reason::NotReplayable),
        Outcome::Status { status, .. } if policy.rejected_statuses.contains(&status) => {
            Ok(Reason::RejectedStatus)
        }
        Outcome::Status { status, .. } if policy.retryable_statuses.contains(&status) => {
            if replayable {
                Ok(Reason::RetryableStatus)
            } else {
                Err(Reason::NotReplayable)
            }
        }
        Outcome::Status { .. } => Err(Reason::StatusNotRetryable),
    }
}

/// The delay without a server delay, computed in double precision and in the order every SDK of
/// the API uses, so that all of them get the same bits.
/// Contract v3, T1: a throttled decision (a status in `throttling_statuses`, eligible) starts
/// from `throttling_initial_backoff_ms` when the policy sets it.
fn backoff_ms(policy: &RetryPolicy, input: &DecisionInput<'_>) -> u64 {
    let throttled = matches!(input.outcome, Outcome::Status { status, .. }
        if policy.throttling_statuses.contains(&status));
    let initial = match policy.throttling_initial_backoff_ms {
        Some(throttling) if throttled => throttling,
        _ => policy.initial_backoff_ms,
    } as f64;
    let max = policy.max_backoff_ms as f64;
    let mut base = initial;
    for _ in 0..input.retries_used {
        base *= policy.multiplier;
        if base >= max {
            base = max;
            break;
        }
    }
    let base = base.min(max);
    let delay = match policy.jitter {
        Jitter::Full => input.random * base,
        Jitter::Equal => base / 2.0 + input.random * (base / 2.0),
        Jitter::None => base,
        Jitter::Decorrelated => {
            let previous = if input.previous_delay_ms > 0 {
                input.previous_delay_ms as f64
            } else {
                initial
            };
            (initial + input.random * (previous * 3.0 - initial)).min(max)
        }
    };
    delay.floor() as u64
}

/// What the delay headers of a response hold.
enum ServerDelay {
    Absent,
    Millis(u64),
    /// More than 15 digits: larger than any cap.
    TooLarge,
}

/// The longest number a delay header may hold; longer ones are larger than any cap.
const MAX_DIGITS: usize = 15;

/// The delay, in milliseconds, that the `retry-after-ms` and `Retry-After` response headers ask
/// for, or `None` when neither holds a valid value. `retry-after-ms` wins when valid.
/// `Retry-After` holds seconds or an HTTP-date, compared with `now_ms` (milliseconds since the
/// Unix epoch). A delay too large to represent is `u64::MAX`.
#[must_use]
pub fn server_delay_ms(
    retry_after: Option<&str>,
    retry_after_ms: Option<&str>,
    now_ms: i64,
) -> Option<u64> {
    match server_delay(retry_after, retry_after_ms, now_ms) {
        ServerDelay::Absent => None,
        ServerDelay::Millis(ms) => Some(ms),
        ServerDelay::TooLarge => Some(u64::MAX),
    }
}

fn server_delay(
    retry_after: Option<&str>,
    retry_after_ms: Option<&str>,
    now_ms: i64,
) -> ServerDelay {
    match retry_after_ms.map_or(ServerDelay::Absent, parse_retry_after_ms) {
        ServerDelay::Absent => retry_after.map_or(ServerDelay::Absent, |value| {
            parse_retry_after(value, now_ms)
        }),
        given => given,
    }
}

/// Removes spaces and tabs from both ends.
fn trim_blanks(s: &str) -> &[u8] {
    s.trim_matches([' ', '\t']).as_bytes()
}

fn is_digits(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(u8::is_ascii_digit)
}

/// The value of `digits` (one or more ASCII digits) times `scale`; negative numbers count as 0.
fn whole_number(digits: &[u8], negative: bool, scale: u64) -> ServerDelay {
    if negative {
        return ServerDelay::Millis(0);
    }
    if digits.len() > MAX_DIGITS {
        return ServerDelay::TooLarge;
    }
    let value = digits
        .iter()
        .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
    ServerDelay::Millis(value * scale)
}

/// An optional `-`, digits and an optional `.` with digits; the fraction is dropped.
fn parse_retry_after_ms(value: &str) -> ServerDelay {
    let s = trim_blanks(value);
    let (negative, number) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    let whole = match number.iter().position(|&c| c == b'.') {
        Some(dot) if is_digits(&number[dot + 1..]) => &number[..dot],
        Some(_) => return ServerDelay::Absent,
        None => number,
    };
    if !is_digits(whole) {
        return ServerDelay::Absent;
    }
    whole_number(whole, negative, 1)
}

/// Delta-seconds (an optional `-` and digits) or an HTTP-date.
fn parse_retry_after(value: &str, now_ms: i64) -> ServerDelay {
    let s = trim_blanks(value);
    let (negative, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    if is_digits(digits) {
        return whole_number(digits, negative, 1000);
    }
    http_date_delay(s, now_ms)
}

const MS_PER_DAY: i64 = 86_400_000;

const SHORT_DAY_NAMES: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

const LONG_DAY_NAMES: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

const MONTH_NAMES: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

fn is_name(names: &[&str], s: &[u8]) -> bool {
    names.iter().any(|name| name.as_bytes() == s)
}

/// The text of each field of an HTTP-date.
struct DateFields<'a> {
    day: &'a [u8],
    month: &'a [u8],
    year: &'a [u8],
    clock: &'a [u8],
}

/// Recognizes the three HTTP-date forms of RFC 9110 section 5.6.7, with exact spacing and
/// case-sensitive names.
fn split_http_date(s: &[u8]) -> Option<DateFields<'_>> {
    // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
    if s.len() == 29
        && is_name(&SHORT_DAY_NAMES, &s[..3])
        && &s[3..5] == b", "
        && s[7] == b' '
        && s[11] == b' '
        && s[16] == b' '
        && &s[25..] == b" GMT"
    {
        return Some(DateFields {
            day: &s[5..7],
            month: &s[8..11],
            year: &s[12..16],
            clock: &s[17..25],
        });
    }
    // asctime: Sun Nov  6 08:49:37 1994
    if s.len() == 24
        && is_name(&SHORT_DAY_NAMES, &s[..3])
        && s[3] == b' '
        && s[7] == b' '
        && s[10] == b' '
        && s[19] == b' '
    {
        return Some(DateFields {
            day: if s[8] == b' ' { &s[9..10] } else { &s[8..10] },
            month: &s[4..7],
            year: &s[20..],
            clock: &s[11..19],
        });
    }
    // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
    let comma = s.windows(2).position(|w| w == b", ")?;
    let rest = &s[comma + 2..];
    if !is_name(&LONG_DAY_NAMES, &s[..comma])
        || rest.len() != 22
        || rest[2] != b'-'
        || rest[6] != b'-'
        || rest[9] != b' '
        || &rest[18..] != b" GMT"
    {
        return None;
    }
    Some(DateFields {
        day: &rest[..2],
        month: &rest[3..6],
        year: &rest[7..9],
        clock: &rest[10..18],
    })
}

/// The value of a short run of ASCII digits.
fn small_number(s: &[u8]) -> Option<i64> {
    is_digits(s).then(|| s.iter().fold(0, |n, d| n * 10 + i64::from(d - b'0')))
}

/// The time from `now_ms` to the HTTP-date `s`, 0 when the date is past.
fn http_date_delay(s: &[u8], now_ms: i64) -> ServerDelay {
    let Some(fields) = split_http_date(s) else {
        return ServerDelay::Absent;
    };
    let Some(month) = MONTH_NAMES
        .iter()
        .position(|name| name.as_bytes() == fields.month)
    else {
        return ServerDelay::Absent;
    };
    let month = month as i64 + 1;
    let clock = fields.clock;
    if clock[2] != b':' || clock[5] != b':' {
        return ServerDelay::Absent;
    }
    let (Some(mut year), Some(day), Some(hour), Some(minute), Some(second)) = (
        small_number(fields.year),
        small_number(fields.day),
        small_number(&clock[..2]),
        small_number(&clock[3..5]),
        small_number(&clock[6..]),
    ) else {
        return ServerDelay::Absent;
    };
    if hour > 23 || minute > 59 || second > 60 {
        return ServerDelay::Absent;
    }
    let now_days = now_ms.div_euclid(MS_PER_DAY);
    if fields.year.len() == 2 {
        let now_year = year_of_days(now_days);
        year += now_year.div_euclid(100) * 100;
        if year - now_year > 50 {
            year -= 100;
        }
    } else if year < 1 {
        return ServerDelay::Absent;
    }
    if day < 1 || day > days_in_month(year, month) {
        return ServerDelay::Absent;
    }
    let days = days_from_civil(year, month, day) - now_days;
    if days < 0 {
        return ServerDelay::Millis(0);
    }
    if days > i64::MAX / MS_PER_DAY - 1 {
        return ServerDelay::TooLarge;
    }
    let delay = days * MS_PER_DAY + ((hour * 60 + minute) * 60 + second) * 1000
        - now_ms.rem_euclid(MS_PER_DAY);
    ServerDelay::Millis(u64::try_from(delay).unwrap_or(0))
}

fn is_leap_year(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap_year(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The days from 1970-01-01 to a date of the proleptic Gregorian calendar.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The year of the day that lies `days` after 1970-01-01.
fn year_of_days(days: i64) -> i64 {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    year_of_era + era * 400 + i64::from(shifted_month >= 10)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::policy::RawValue;

    fn raw(v: &serde_json::Value) -> RawValue {
        match v {
            serde_json::Value::Number(n) if n.is_i64() => RawValue::Integer(n.as_i64().unwrap()),
            serde_json::Value::Number(n) => RawValue::Float(n.as_f64().unwrap()),
            serde_json::Value::String(s) => RawValue::Text(s.clone()),
            serde_json::Value::Array(items) => RawValue::List(items.iter().map(raw).collect()),
            other => panic!("unexpected policy value {other}"),
        }
    }

    /// Contract v3, T1: a throttled status starts from the throttling base, when there is one.
    #[test]
    fn throttled_statuses_back_off_from_the_throttling_base() {
        let mut policy = Policy::default();
        policy
            .apply_preset(&RawValue::Text("aws-2026".into()))
            .unwrap();
        policy
            .set("rejected_statuses", &raw(&serde_json::json!([429, 503])))
            .unwrap();
        let delay = |policy: &Policy, status: u16, retries_used: u32| {
            decide(
                policy,
                &DecisionInput {
                    class: ReplayClass::Idempotent,
                    has_idempotency_key: false,
                    outcome: Outcome::Status {
                        status,
                        retry_after: None,
                        retry_after_ms: None,
                    },
                    retries_used,
                    elapsed_ms: 0,
                    previous_delay_ms: 0,
                    now_ms: 0,
                    random: 0.5,
                },
            )
            .delay_ms
        };
        assert_eq!(delay(&policy, 429, 0), 500, "1000 ms base, full jitter");
        assert_eq!(delay(&policy, 429, 1), 1000);
        assert_eq!(
            delay(&policy, 503, 0),
            25,
            "503 is not throttling: 50 ms base"
        );
        policy.throttling_initial_backoff_ms = None;
        assert_eq!(
            delay(&policy, 429, 0),
            25,
            "without the key, the usual base"
        );
    }

    /// Every case of the shared conformance vectors.
    #[test]
    fn conformance_vectors() {
        let text = include_str!("../conformance/vectors/decide.json");
        let vectors: serde_json::Value = serde_json::from_str(text).unwrap();
        let cases = vectors["cases"].as_array().unwrap();
        assert!(cases.len() > 100);
        for case in cases {
            let name = case["name"].as_str().unwrap();
            let mut policy = Policy::default();
            for (k, v) in case["policy"].as_object().unwrap() {
                policy
                    .set(k, &raw(v))
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
            }
            let i = &case["input"];
            let class = ReplayClass::ALL
                .into_iter()
                .find(|c| c.name() == i["class"].as_str().unwrap())
                .unwrap();
            let o = &i["outcome"];
            let outcome = match o["failure"].as_str() {
                Some("connect") => Outcome::Connect,
                Some("transport") => Outcome::Transport,
                Some("aborted") => Outcome::Aborted,
                Some(other) => panic!("{name}: unknown failure {other}"),
                None => Outcome::Status {
                    status: o["status"].as_u64().unwrap() as u16,
                    retry_after: o["retry_after"].as_str(),
                    retry_after_ms: o["retry_after_ms"].as_str(),
                },
            };
            let input = DecisionInput {
                class,
                has_idempotency_key: i["has_idempotency_key"].as_bool().unwrap(),
                outcome,
                retries_used: i["retries_used"].as_u64().unwrap() as u32,
                elapsed_ms: i["elapsed_ms"].as_u64().unwrap(),
                previous_delay_ms: i["previous_delay_ms"].as_u64().unwrap(),
                now_ms: i["now_ms"].as_i64().unwrap(),
                random: i["random"].as_f64().unwrap(),
            };
            let d = decide(&policy, &input);
            let e = &case["expect"];
            assert_eq!(
                (d.retry, d.delay_ms, d.reason.as_str()),
                (
                    e["retry"].as_bool().unwrap(),
                    e["delay_ms"].as_u64().unwrap(),
                    e["reason"].as_str().unwrap()
                ),
                "{name}"
            );
        }
    }
}
