//! `decide` and the server delay, against contract sections 3 and 4.

use crate::{
    decide, server_delay_ms, DecisionInput, Jitter, KeyFormat, Outcome, OverCapMode, Reason,
    ReplayClass, RetryPolicy, UnknownOperationClass, PROBLEM_TYPE_ABNORMAL_USAGE_DETECTED,
    PROBLEM_TYPE_QUOTA_EXCEEDED,
};

/// The contract's default policy.
pub(super) fn policy() -> RetryPolicy {
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
            PROBLEM_TYPE_QUOTA_EXCEEDED.to_string(),
            PROBLEM_TYPE_ABNORMAL_USAGE_DETECTED.to_string(),
        ],
        retry_problem_types: vec![],
        idempotency_key_format: KeyFormat::Uuid,
    }
}

/// Sun, 06 Nov 1994 08:49:37 GMT.
const NOW_MS: i64 = 784_111_777_000;

pub(super) fn input(class: ReplayClass, outcome: Outcome<'_>) -> DecisionInput<'_> {
    DecisionInput::new(class, outcome, NOW_MS, 0.5)
}

fn status(status: i64) -> Outcome<'static> {
    Outcome::status(status)
}

fn retry_after(value: &str) -> Outcome<'_> {
    Outcome::Status {
        status: 503,
        retry_after: Some(value),
        retry_after_ms: None,
        directive: None,
    }
}

/// `(retry, delay_ms, reason)`.
fn run(policy: &RetryPolicy, input: &DecisionInput<'_>) -> (bool, u64, &'static str) {
    let d = decide(policy, input).expect("valid");
    (d.retry, d.delay_ms, d.reason.as_str())
}

#[test]
fn contract_examples() {
    use ReplayClass::{Idempotent, Keyed, NoRetry, NonReplayable};
    let p = policy();
    let stop = |reason| (false, 0, reason);
    assert_eq!(
        run(&p, &input(NonReplayable, status(503))),
        stop("not_replayable")
    );
    assert_eq!(
        run(&p, &input(NonReplayable, status(429))),
        (true, 250, "rejected_status")
    );
    let connect = DecisionInput {
        retries_used: 2,
        ..input(NonReplayable, Outcome::Connect)
    };
    assert_eq!(run(&p, &connect), (true, 1000, "connect_failure"));
    assert_eq!(
        run(&p, &input(NonReplayable, Outcome::Transport)),
        stop("not_replayable")
    );
    let keyed = DecisionInput {
        has_idempotency_key: true,
        ..input(Keyed, Outcome::Transport)
    };
    assert_eq!(run(&p, &keyed), (true, 250, "transport_failure"));
    assert_eq!(run(&p, &input(Keyed, status(502))), stop("not_replayable"));
    let seven = DecisionInput {
        retries_used: 1,
        ..input(Idempotent, retry_after("7"))
    };
    assert_eq!(run(&p, &seven), (true, 7000, "retryable_status"));
    assert_eq!(
        run(
            &p,
            &input(Idempotent, retry_after("Sun, 06 Nov 1994 08:49:47 GMT"))
        ),
        (true, 10_000, "retryable_status")
    );
    assert_eq!(
        run(
            &p,
            &input(Idempotent, retry_after("Sun, 06 Nov 1994 08:49:27 GMT"))
        ),
        (true, 0, "retryable_status")
    );
    assert_eq!(
        run(&p, &input(Idempotent, retry_after("120"))),
        stop("retry_after_over_cap")
    );
    assert_eq!(
        run(&p, &input(Idempotent, retry_after("soon"))),
        (true, 250, "retryable_status")
    );
    let both = Outcome::Status {
        status: 503,
        retry_after: Some("9"),
        retry_after_ms: Some("1500.9"),
        directive: None,
    };
    assert_eq!(
        run(&p, &input(Idempotent, both)),
        (true, 1500, "retryable_status")
    );
    let exhausted = DecisionInput {
        retries_used: 3,
        ..input(Idempotent, status(500))
    };
    assert_eq!(run(&p, &exhausted), stop("exhausted"));
    assert_eq!(
        run(&p, &input(Idempotent, status(404))),
        stop("status_not_retryable")
    );
    assert_eq!(
        run(&p, &input(NoRetry, Outcome::Connect)),
        stop("no_retry_operation")
    );
    assert_eq!(run(&p, &input(NoRetry, Outcome::Aborted)), stop("aborted"));
    let deadline = RetryPolicy {
        deadline_ms: Some(1000),
        ..policy()
    };
    let late = DecisionInput {
        elapsed_ms: 900,
        ..input(Idempotent, status(503))
    };
    assert_eq!(run(&deadline, &late), stop("deadline"));
    let in_time = DecisionInput {
        elapsed_ms: 750,
        ..late
    };
    assert_eq!(run(&deadline, &in_time), (true, 250, "retryable_status"));
}

#[test]
fn backoff_for_each_jitter() {
    let delays = |jitter: Jitter, random: f64| -> Vec<u64> {
        let p = RetryPolicy {
            jitter,
            max_retries: 10,
            ..policy()
        };
        (0..8)
            .map(|retries_used| {
                let i = DecisionInput {
                    retries_used,
                    random,
                    ..input(ReplayClass::Idempotent, Outcome::Connect)
                };
                decide(&p, &i).unwrap().delay_ms
            })
            .collect()
    };
    assert_eq!(
        delays(Jitter::Full, 0.5),
        [250, 500, 1000, 2000, 4000, 8000, 15_000, 15_000]
    );
    assert_eq!(
        delays(Jitter::Equal, 0.5),
        [375, 750, 1500, 3000, 6000, 12_000, 22_500, 22_500]
    );
    assert_eq!(
        delays(Jitter::None, 0.0),
        [500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]
    );
    // `random` < 1 does not keep equal jitter below its bound.
    assert_eq!(delays(Jitter::Equal, 0.999_999_999_999_999_9)[0], 500);
    // Decorrelated grows from the previous delay (the initial backoff after the first attempt)
    // and is capped.
    let p = RetryPolicy {
        jitter: Jitter::Decorrelated,
        ..policy()
    };
    let after = |previous_delay_ms, random| {
        let i = DecisionInput {
            previous_delay_ms,
            random,
            ..input(ReplayClass::Idempotent, Outcome::Connect)
        };
        decide(&p, &i).unwrap().delay_ms
    };
    assert_eq!(after(0, 0.5), 1000);
    assert_eq!(after(1000, 0.5), 1750);
    assert_eq!(after(1000, 0.0), 500);
    assert_eq!(after(1, 0.5), 251);
    assert_eq!(after(40_000, 0.9), 30_000);
    // Doubles in the contract's order, no fused multiply-add: 0.1 * 3 is not 0.3.
    let fine = RetryPolicy {
        initial_backoff_ms: 10,
        multiplier: 1.1,
        jitter: Jitter::None,
        max_retries: 10,
        ..policy()
    };
    let i = DecisionInput {
        retries_used: 3,
        ..input(ReplayClass::Idempotent, Outcome::Connect)
    };
    assert_eq!(decide(&fine, &i).unwrap().delay_ms, 13);
}

#[test]
fn rejected_statuses_retry_every_class_but_no_retry() {
    let p = policy();
    for class in [
        ReplayClass::Idempotent,
        ReplayClass::Keyed,
        ReplayClass::NonReplayable,
    ] {
        assert_eq!(
            decide(&p, &input(class, status(429))).unwrap().reason,
            Reason::RejectedStatus
        );
    }
    let no_lists = RetryPolicy {
        retryable_statuses: vec![],
        rejected_statuses: vec![],
        ..policy()
    };
    let d = decide(&no_lists, &input(ReplayClass::Idempotent, status(503))).unwrap();
    assert_eq!((d.retry, d.reason), (false, Reason::StatusNotRetryable));
    // Failures carry no server delay, whatever headers came along.
    assert_eq!(
        decide(&p, &input(ReplayClass::Idempotent, Outcome::Connect))
            .unwrap()
            .delay(),
        std::time::Duration::from_millis(250)
    );
}

fn delay(retry_after: &str) -> Option<u64> {
    server_delay_ms(Some(retry_after), None, NOW_MS)
}

#[test]
fn http_date_forms() {
    // IMF-fixdate, RFC 850 and asctime (two-digit day or a space and one digit).
    assert_eq!(delay("Sun, 06 Nov 1994 08:49:47 GMT"), Some(10_000));
    assert_eq!(delay("Sunday, 06-Nov-94 08:49:47 GMT"), Some(10_000));
    assert_eq!(delay("Sun Nov  6 08:49:47 1994"), Some(10_000));
    assert_eq!(delay("Sun Nov 06 08:49:47 1994"), Some(10_000));
    assert_eq!(delay("Sun Nov 6 08:49:47 1994"), None);
    // The day name is valid for its form but not checked against the date.
    assert_eq!(delay("Mon, 06 Nov 1994 08:49:47 GMT"), Some(10_000));
    assert_eq!(delay("Monday, 06 Nov 1994 08:49:47 GMT"), None);
    assert_eq!(delay("Sun, 06-Nov-94 08:49:47 GMT"), None);
    // Exact spacing and case.
    assert_eq!(delay("sun, 06 Nov 1994 08:49:47 GMT"), None);
    assert_eq!(delay("Sun, 06 nov 1994 08:49:47 GMT"), None);
    assert_eq!(delay("Sun, 06 Nov 1994 08:49:47 UTC"), None);
    assert_eq!(delay("Sun,  06 Nov 1994 08:49:47 GMT"), None);
    // Trimmed of spaces and tabs.
    assert_eq!(delay(" \tSun, 06 Nov 1994 08:49:47 GMT\t "), Some(10_000));
    // Past dates wait 0; second 60 counts as 60 seconds.
    assert_eq!(delay("Sat, 05 Nov 1994 08:49:47 GMT"), Some(0));
    assert_eq!(delay("Sun, 06 Nov 1994 08:49:60 GMT"), Some(23_000));
    // Fields out of range, and days the month does not have.
    assert_eq!(delay("Sun, 06 Nov 1994 24:00:00 GMT"), None);
    assert_eq!(delay("Sun, 06 Nov 1994 08:60:00 GMT"), None);
    assert_eq!(delay("Sun, 06 Nov 1994 08:49:61 GMT"), None);
    assert_eq!(delay("Sun, 00 Nov 1994 08:49:47 GMT"), None);
    assert_eq!(delay("Sun, 31 Nov 1994 08:49:47 GMT"), None);
    assert_eq!(delay("Sun, 29 Feb 1995 08:49:47 GMT"), None);
    assert_eq!(delay("Sun, 29 Feb 1996 08:49:47 GMT"), Some(41_472_010_000));
    assert_eq!(delay("Sun, 29 Feb 2100 08:49:47 GMT"), None);
    assert_eq!(delay("Sun, 01 Jan 0000 00:00:00 GMT"), None);
}

#[test]
fn rfc_850_two_digit_years() {
    let at = |now_ms: i64, value: &str| server_delay_ms(Some(value), None, now_ms);
    // 2030-01-01: `80` is 2080 (50 years ahead), `81` would be 2081, more than 50: 1981.
    let year_2030 = 1_893_456_000_000;
    assert!(at(year_2030, "Monday, 01-Jan-80 00:00:00 GMT").is_some_and(|d| d > 0));
    assert_eq!(at(year_2030, "Wednesday, 01-Jan-81 00:00:00 GMT"), Some(0));
    // 1994: `49` is 1949, never moved forward.
    assert_eq!(at(NOW_MS, "Saturday, 01-Jan-49 00:00:00 GMT"), Some(0));
    // Before 1970 (floor division): 1969 resolves `69` to 1969.
    assert_eq!(
        at(-86_400_000, "Wednesday, 31-Dec-69 00:00:01 GMT"),
        Some(1000)
    );
}

#[test]
fn numbers() {
    let ms = |value: &str| server_delay_ms(None, Some(value), NOW_MS);
    assert_eq!(ms("1500.9"), Some(1500));
    assert_eq!(ms(" 12 "), Some(12));
    assert_eq!(ms("-5"), Some(0));
    assert_eq!(ms("1."), None);
    assert_eq!(ms(".5"), None);
    assert_eq!(ms("+5"), None);
    assert_eq!(ms("999999999999999"), Some(999_999_999_999_999));
    assert_eq!(ms("0000000000000001"), Some(u64::MAX));
    assert_eq!(ms("-0000000000000001"), Some(0));
    assert_eq!(ms("1.0000000000000000000"), Some(1));
    assert_eq!(delay("7"), Some(7000));
    assert_eq!(delay("-7"), Some(0));
    assert_eq!(delay("7.5"), None);
    assert_eq!(delay(""), None);
    assert_eq!(delay("999999999999999"), Some(999_999_999_999_999_000));
    assert_eq!(delay("1000000000000000"), Some(u64::MAX));
    // An invalid retry-after-ms leaves Retry-After in charge.
    assert_eq!(server_delay_ms(Some("2"), Some("x"), NOW_MS), Some(2000));
    assert_eq!(server_delay_ms(None, None, NOW_MS), None);
}
