//! Contract v3 (docs/contract.md) where the vectors cannot look: the event scanner
//! fed in pieces, a throttled decision's backoff and budget, a dropped stream, and the
//! module-level class of unknown requests.

use super::decide::{input, policy};
use super::matcher::OPERATIONS;
use crate::{
    budget_try_acquire, decide, has_precondition, idempotency_key_value, problem_type_of,
    BudgetKind, DecisionInput, EventStreamScanner, Jitter, KeyFormat, Operation, OperationTable,
    Outcome, Reason, ReplayClass, RetryPolicy, UnknownOperationClass,
};

/// What a scanner says: complete bytes, last event id, reconnection time.
fn state(s: &EventStreamScanner) -> (u64, String, Option<String>) {
    (
        s.complete_bytes(),
        s.last_event_id().to_string(),
        s.retry().map(str::to_string),
    )
}

const STREAMS: [&[u8]; 6] = [
    b"id: 1\ndata: a\n\nid: 2\nretry: 300\ndata: b\n\n: comment\nid: 3\ndata: c",
    b"\xef\xbb\xbfid:x\r\n\r\nretry:7\r\rid\r\n\r\n",
    b"\xef\xbbid: 9\n\nid: \xff\xfe1\n\n",
    b"data\nid: long-event-id-that-is-more-than-six-bytes\nretry: 12x\n\n\r",
    b"id: a\0b\nretry\n\nid:\n\n",
    b"\r\n\n\r\r\nid: last\nretry: 99999999999999999\n\n",
];

#[test]
fn event_scanner_fed_byte_by_byte_equals_fed_whole() {
    for stream in STREAMS {
        for cut in 0..=stream.len() {
            let prefix = &stream[..cut];
            let mut whole = EventStreamScanner::new();
            whole.feed(prefix);
            let mut bytes = EventStreamScanner::new();
            for b in prefix {
                bytes.feed(std::slice::from_ref(b));
            }
            assert_eq!(state(&bytes), state(&whole), "{prefix:?}");
        }
    }
}

#[test]
fn event_scanner_keeps_only_complete_events() {
    let mut s = EventStreamScanner::new();
    s.feed(STREAMS[0]);
    // The third event is cut: its id is not the stream's.
    assert_eq!(state(&s), (41, "2".to_string(), Some("300".to_string())));
    s.feed(b"\n\n");
    assert_eq!(state(&s).1, "3");
    // A CR at the end may be the first half of a CRLF: the blank line is not known yet.
    let mut cr = EventStreamScanner::new();
    cr.feed(b"id: 5\r\r");
    assert_eq!(cr.complete_bytes(), 0);
    cr.feed(b"\n");
    assert_eq!(state(&cr), (8, "5".to_string(), None));
    // A byte order mark is skipped; invalid UTF-8 in an id is replaced, an id with NUL ignored.
    let mut bom = EventStreamScanner::new();
    bom.feed(b"\xef\xbb\xbfid: \xff1\n\nid: 2\0\n\n");
    assert_eq!(state(&bom), (19, "\u{fffd}1".to_string(), None));
}

/// A policy whose throttling base and cost differ from the failure ones, without jitter.
fn throttling_policy() -> RetryPolicy {
    RetryPolicy {
        jitter: Jitter::None,
        throttling_initial_backoff_ms: Some(2_000),
        budget_throttling_cost: Some(2),
        ..policy()
    }
}

#[test]
fn a_throttled_decision_has_its_own_backoff_and_budget_cost() {
    let p = throttling_policy();
    let throttled = decide(
        &p,
        &DecisionInput {
            budget_tokens: Some(100),
            retries_used: 1,
            ..input(ReplayClass::Idempotent, Outcome::status(429))
        },
    )
    .unwrap();
    assert!(throttled.retry && throttled.throttled);
    assert_eq!(throttled.reason, Reason::RejectedStatus);
    // The throttling base, once multiplied (B1), and the throttling cost.
    assert_eq!(
        (throttled.delay_ms, throttled.budget_tokens),
        (4_000, Some(98))
    );
    let failed = decide(
        &p,
        &DecisionInput {
            budget_tokens: Some(100),
            retries_used: 1,
            ..input(ReplayClass::Idempotent, Outcome::status(503))
        },
    )
    .unwrap();
    assert!(failed.retry && !failed.throttled);
    assert_eq!((failed.delay_ms, failed.budget_tokens), (1_000, Some(95)));
    // A throttling status that is stopped is not throttled.
    let stopped = decide(
        &RetryPolicy {
            max_retries: 0,
            ..p.clone()
        },
        &input(ReplayClass::Idempotent, Outcome::status(429)),
    )
    .unwrap();
    assert!(!stopped.retry && !stopped.throttled);
    // Without a throttling cost, a throttled retry costs a retry's.
    let plain = policy();
    assert_eq!(
        budget_try_acquire(&plain, 10, BudgetKind::Throttling),
        Ok((true, 5))
    );
    assert_eq!(
        budget_try_acquire(&p, 10, BudgetKind::Throttling),
        Ok((true, 8))
    );
    assert_eq!("throttling".parse(), Ok(BudgetKind::Throttling));
}

#[test]
fn the_throttling_base_is_checked_against_the_largest_backoff() {
    let p = RetryPolicy {
        throttling_initial_backoff_ms: Some(30_001),
        ..policy()
    };
    assert_eq!(p.validate().unwrap_err().key(), "policy.max_backoff_ms");
    let p = RetryPolicy {
        budget_throttling_cost: Some(0),
        stop_problem_types: vec![String::new()],
        ..policy()
    };
    assert_eq!(
        p.validate().unwrap_err().key(),
        "policy.budget_throttling_cost"
    );
}

fn dropped(class: ReplayClass) -> DecisionInput<'static> {
    input(class, Outcome::Dropped)
}

#[test]
fn a_dropped_stream_resumes_only_when_declared() {
    let p = policy();
    let resume = DecisionInput {
        resumable: true,
        has_last_event_id: true,
        stream_retry: Some("300"),
        ..dropped(ReplayClass::NonReplayable)
    };
    let d = decide(&p, &resume).unwrap();
    assert_eq!(
        (d.retry, d.reason, d.delay_ms),
        (true, Reason::StreamResume, 300)
    );
    // Without a last event id a resume is a full replay: only for a replayable request.
    let replay = DecisionInput {
        has_last_event_id: false,
        stream_retry: None,
        ..resume
    };
    assert_eq!(
        decide(&p, &replay).unwrap().reason,
        Reason::StreamNotResumable
    );
    let idempotent = DecisionInput {
        class: ReplayClass::Idempotent,
        ..replay
    };
    assert_eq!(
        decide(&p, &idempotent).unwrap().reason,
        Reason::StreamResume
    );
    // Not declared resumable: the drop surfaces.
    let undeclared = DecisionInput {
        resumable: false,
        ..resume
    };
    assert_eq!(
        decide(&p, &undeclared).unwrap().reason,
        Reason::StreamNotResumable
    );
    // A `retry:` over the cap is refused and reported; a response header is not read.
    let far = DecisionInput {
        stream_retry: Some("9999999999999999"),
        ..resume
    };
    let d = decide(&p, &far).unwrap();
    assert_eq!(
        (d.reason, d.server_delay_ms),
        (Reason::RetryAfterOverCap, Some((1 << 53) - 1))
    );
    assert_eq!(Outcome::failure("dropped"), Ok(Outcome::Dropped));
}

#[test]
fn a_precondition_makes_a_request_replayable_until_its_412() {
    let p = policy();
    let conditional = DecisionInput {
        has_precondition: true,
        ..input(ReplayClass::NonReplayable, Outcome::Transport)
    };
    assert_eq!(
        decide(&p, &conditional).unwrap().reason,
        Reason::TransportFailure
    );
    let after_replay = DecisionInput {
        retries_used: 1,
        ..input(ReplayClass::NonReplayable, Outcome::status(412))
    };
    let after_replay = DecisionInput {
        has_precondition: true,
        ..after_replay
    };
    assert_eq!(
        decide(&p, &after_replay).unwrap().reason,
        Reason::PreconditionFailedAfterReplay
    );
    assert!(has_precondition([("if-match", " \"v1\" ")]));
    assert!(has_precondition([("If-None-Match", "*")]));
    assert!(!has_precondition([
        ("If-Match", "*"),
        ("If-Unmodified-Since", "x")
    ]));
}

#[test]
fn problem_types_and_key_formats() {
    let body = br#"{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded"}"#;
    let quota = problem_type_of(Some("Application/Problem+JSON; charset=utf-8"), body, true);
    assert_eq!(
        quota.as_deref(),
        Some("https://iana.org/assignments/http-problem-types#quota-exceeded")
    );
    assert_eq!(problem_type_of(Some("application/json"), body, true), None);
    assert_eq!(
        problem_type_of(Some("application/problem+json"), body, false),
        None
    );
    let stop = DecisionInput {
        problem_type: quota.as_deref(),
        ..input(ReplayClass::Idempotent, Outcome::status(429))
    };
    assert_eq!(
        decide(&policy(), &stop).unwrap().reason,
        Reason::ProblemTypeStop
    );
    let id = "8e03978e-40d5-43e8-bc93-6894a57f9324";
    assert_eq!(idempotency_key_value(KeyFormat::Uuid, id), id);
    assert_eq!(
        idempotency_key_value(KeyFormat::SfString, id),
        format!("\"{id}\"")
    );
    assert_eq!("sf-string".parse(), Ok(KeyFormat::SfString));
    assert_eq!(
        "SF-String".parse::<KeyFormat>().unwrap_err().key(),
        "policy.idempotency_key_format"
    );
}

static STRICT_TABLE: OperationTable = OperationTable::new("/api", &OPERATIONS)
    .with_unknown_operation_class(UnknownOperationClass::NoRetry);

static STREAMS_TABLE: [Operation; 1] = [Operation {
    method: "GET",
    route: "/logs",
    path: "/logs",
    operation_id: Some("logs"),
    class: ReplayClass::Idempotent,
    idempotency_header: None,
    streaming: true,
    resumable: true,
}];

static STREAM_OPERATIONS: OperationTable = OperationTable::new("", &STREAMS_TABLE);

#[test]
fn the_table_gives_unknown_requests_its_policy_class() {
    // C3: the table's own classify follows its policy's unknown_operation_class.
    assert_eq!(
        STRICT_TABLE.classify("GET", "/nowhere").class,
        ReplayClass::NoRetry
    );
    assert_eq!(
        STRICT_TABLE.classify("GET", "/api/items").class,
        ReplayClass::Idempotent
    );
    let logs = STREAM_OPERATIONS.classify("GET", "/logs");
    assert!(logs.is_streaming() && logs.is_resumable());
    let unknown = STREAM_OPERATIONS.classify("GET", "/other");
    assert!(!unknown.is_streaming() && !unknown.is_resumable());
}

#[test]
fn a_reconnected_scanner_keeps_the_id_and_retry_and_forgets_the_cut_event() {
    let mut s = EventStreamScanner::new();
    s.feed(b"retry: 300\nid: 2\ndata: b\n\nid: 3\nretry: 9\ndata: cut");
    let mut next = s.reconnected();
    assert_eq!(state(&next), (0, "2".into(), Some("300".into())));
    // The cut event's `id: 3` is not taken; a new byte order mark is skipped.
    next.feed(b"\xef\xbb\xbfdata: c\n\n");
    assert_eq!(state(&next), (12, "2".into(), Some("300".into())));
    // An empty id empties it, as on the first connection.
    next.feed(b"id\n\n");
    assert_eq!(state(&next), (16, String::new(), Some("300".into())));
}
