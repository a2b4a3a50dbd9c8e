//! Contract v2: validation, directives, key statuses, the over-cap mode, the retry budget and its
//! cell, the classifier with a configured base, `has_idempotency_key` and the retry event.

use super::decide::{input, policy};
use super::matcher::{OPERATIONS, TABLE};
use crate::{
    budget_new, budget_record_success, budget_try_acquire, decide, has_idempotency_key, BudgetKind,
    Classifier, Decision, DecisionInput, Jitter, Outcome, OverCapMode, Reason, ReplayClass,
    RetryBudget, RetryEvent, RetryPolicy, UnknownOperationClass,
};

/// The message key of the error, or the reason of the decision.
fn outcome_of(policy: &RetryPolicy, input: &DecisionInput<'_>) -> String {
    match decide(policy, input) {
        Ok(d) => format!("{} {} {}", d.retry, d.delay_ms, d.reason),
        Err(e) => e.key().to_string(),
    }
}

#[test]
fn the_policy_is_checked_key_by_key_in_table_order() {
    let idempotent = input(ReplayClass::Idempotent, Outcome::status(503));
    let key = |p: RetryPolicy| outcome_of(&p, &idempotent);
    assert_eq!(
        key(RetryPolicy {
            max_retries: -1,
            budget_capacity: -1,
            ..policy()
        }),
        "policy.max_retries"
    );
    assert_eq!(
        key(RetryPolicy {
            max_retries: 101,
            ..policy()
        }),
        "policy.max_retries"
    );
    assert_eq!(
        key(RetryPolicy {
            multiplier: f64::NAN,
            ..policy()
        }),
        "policy.multiplier"
    );
    assert_eq!(
        key(RetryPolicy {
            multiplier: f64::INFINITY,
            ..policy()
        }),
        "policy.multiplier"
    );
    assert_eq!(
        key(RetryPolicy {
            rejected_statuses: vec![429, 600],
            ..policy()
        }),
        "policy.rejected_statuses"
    );
    assert_eq!(
        key(RetryPolicy {
            deadline_ms: Some(0),
            ..policy()
        }),
        "policy.deadline_ms"
    );
    for bad in ["", "x should retry", "x-should-retry:", "caf\u{e9}"] {
        assert_eq!(
            key(RetryPolicy {
                server_directive_headers: vec![bad.to_string()],
                ..policy()
            }),
            "policy.server_directive_headers"
        );
    }
    assert_eq!(
        key(RetryPolicy {
            budget_timeout_cost: 0,
            ..policy()
        }),
        "policy.budget_timeout_cost"
    );
    // V2 comes after every key: the cross-field check.
    assert_eq!(
        key(RetryPolicy {
            initial_backoff_ms: 2000,
            max_backoff_ms: 1000,
            budget_success_refund: -1,
            ..policy()
        }),
        "policy.budget_success_refund"
    );
    assert_eq!(
        key(RetryPolicy {
            initial_backoff_ms: 2000,
            max_backoff_ms: 1000,
            ..policy()
        }),
        "policy.max_backoff_ms"
    );
}

#[test]
fn names_are_exact() {
    assert_eq!("equal".parse::<Jitter>(), Ok(Jitter::Equal));
    assert_eq!("clamp".parse::<OverCapMode>(), Ok(OverCapMode::Clamp));
    assert_eq!("no_retry".parse(), Ok(UnknownOperationClass::NoRetry));
    assert_eq!("keyed".parse(), Ok(ReplayClass::Keyed));
    assert_eq!("timeout".parse(), Ok(BudgetKind::Timeout));
    assert_eq!(Outcome::failure("connect"), Ok(Outcome::Connect));
    let key = |e: crate::InvalidInput| e.key();
    assert_eq!(" full".parse::<Jitter>().map_err(key), Err("policy.jitter"));
    assert_eq!(
        "Clamp".parse::<OverCapMode>().map_err(key),
        Err("policy.retry_after_over_cap")
    );
    assert_eq!(
        "idempotent".parse::<UnknownOperationClass>().map_err(key),
        Err("policy.unknown_operation_class")
    );
    assert_eq!(
        "Idempotent".parse::<ReplayClass>().map_err(key),
        Err("input.class")
    );
    assert_eq!(
        Outcome::failure("timeout").map_err(key),
        Err("input.outcome")
    );
    assert_eq!(
        "slow".parse::<BudgetKind>().map_err(key),
        Err("input.budget_kind")
    );
    let nan = DecisionInput {
        random: f64::NAN,
        ..input(ReplayClass::Idempotent, Outcome::Connect)
    };
    assert_eq!(
        decide(&policy(), &nan).unwrap_err().to_string(),
        "invalid input: input.random"
    );
}

#[test]
fn inputs_are_checked_in_order_whatever_the_rules_use() {
    let p = policy();
    let base = input(ReplayClass::Idempotent, Outcome::status(503));
    let key = |i: DecisionInput<'_>| outcome_of(&p, &i);
    assert_eq!(
        key(DecisionInput {
            outcome: Outcome::status(42),
            retries_used: -1,
            ..base
        }),
        "input.status"
    );
    assert_eq!(
        key(DecisionInput {
            retries_used: 1 << 53,
            ..base
        }),
        "input.retries_used"
    );
    assert_eq!(
        key(DecisionInput {
            elapsed_ms: -1,
            ..base
        }),
        "input.elapsed_ms"
    );
    assert_eq!(
        key(DecisionInput {
            previous_delay_ms: -1,
            ..base
        }),
        "input.previous_delay_ms"
    );
    for random in [f64::NAN, 1.0, -1e-300, f64::NEG_INFINITY] {
        assert_eq!(
            key(DecisionInput {
                random,
                outcome: Outcome::Aborted,
                ..base
            }),
            "input.random"
        );
    }
    assert_eq!(
        key(DecisionInput {
            budget_tokens: Some(501),
            ..base
        }),
        "input.budget_tokens"
    );
    // Policy before input.
    let bad = RetryPolicy {
        max_retries: -1,
        ..policy()
    };
    assert_eq!(
        outcome_of(
            &bad,
            &DecisionInput {
                random: f64::NAN,
                ..base
            }
        ),
        "policy.max_retries"
    );
    // -0.0 is in [0, 1); now_ms is any i64.
    assert!(decide(
        &p,
        &DecisionInput {
            random: -0.0,
            now_ms: i64::MIN,
            ..base
        }
    )
    .is_ok());
}

fn with(
    status: i64,
    directive: Option<&'static str>,
    retry_after: Option<&'static str>,
) -> Outcome<'static> {
    Outcome::Status {
        status,
        retry_after,
        retry_after_ms: None,
        directive,
    }
}

#[test]
fn directives_key_statuses_and_the_over_cap_mode() {
    use ReplayClass::{Idempotent, Keyed, NonReplayable};
    let p = policy();
    let run = |class, key: bool, outcome| {
        outcome_of(
            &p,
            &DecisionInput {
                has_idempotency_key: key,
                ..input(class, outcome)
            },
        )
    };
    assert_eq!(
        run(Idempotent, false, with(503, Some(" FALSE\t"), None)),
        "false 0 server_said_no"
    );
    assert_eq!(
        run(Idempotent, false, with(404, Some("true"), None)),
        "true 250 server_said_yes"
    );
    assert_eq!(
        run(NonReplayable, false, with(404, Some("true"), None)),
        "false 0 status_not_retryable"
    );
    assert_eq!(
        run(NonReplayable, false, with(429, Some("false"), None)),
        "false 0 server_said_no"
    );
    assert_eq!(
        run(Idempotent, false, with(404, Some("yes"), None)),
        "false 0 status_not_retryable"
    );
    assert_eq!(
        run(Keyed, true, with(409, None, None)),
        "true 250 key_in_flight"
    );
    assert_eq!(
        run(Keyed, true, with(422, Some("true"), None)),
        "false 0 key_reused"
    );
    assert_eq!(
        run(Keyed, false, with(409, None, None)),
        "false 0 status_not_retryable"
    );
    // Directives are ignored when the policy names no header.
    let quiet = RetryPolicy {
        server_directive_headers: vec![],
        ..policy()
    };
    assert_eq!(
        outcome_of(&quiet, &input(Idempotent, with(503, Some("false"), None))),
        "true 250 retryable_status"
    );
    // Over the cap: refuse, or clamp to the cap.
    assert_eq!(
        run(Idempotent, false, with(503, None, Some("120"))),
        "false 0 retry_after_over_cap"
    );
    let clamp = RetryPolicy {
        retry_after_over_cap: OverCapMode::Clamp,
        ..policy()
    };
    assert_eq!(
        outcome_of(&clamp, &input(Idempotent, with(503, None, Some("120")))),
        "true 60000 retryable_status"
    );
    assert_eq!(
        outcome_of(
            &clamp,
            &input(Idempotent, with(503, None, Some("99999999999999999")))
        ),
        "true 60000 retryable_status"
    );
    // Retried only with a server delay.
    let seed = RetryPolicy {
        retry_only_with_server_delay: vec![429],
        ..policy()
    };
    assert_eq!(
        outcome_of(&seed, &input(Idempotent, with(429, None, None))),
        "false 0 no_server_delay"
    );
    assert_eq!(
        outcome_of(&seed, &input(Idempotent, with(429, None, Some("2")))),
        "true 2000 rejected_status"
    );
}

#[test]
fn budget_functions() {
    let p = policy();
    assert_eq!(budget_new(&p), Ok(500));
    assert_eq!(
        budget_try_acquire(&p, 500, BudgetKind::Retry),
        Ok((true, 495))
    );
    assert_eq!(
        budget_try_acquire(&p, 10, BudgetKind::Timeout),
        Ok((true, 0))
    );
    assert_eq!(budget_try_acquire(&p, 4, BudgetKind::Retry), Ok((false, 4)));
    assert_eq!(budget_record_success(&p, 495, 5), Ok(500));
    assert_eq!(budget_record_success(&p, 490, 0), Ok(491));
    assert_eq!(budget_record_success(&p, 500, 0), Ok(500));
    let key = |e: crate::InvalidInput| e.key();
    assert_eq!(
        budget_record_success(&p, 1, -1).map_err(key),
        Err("input.budget_release")
    );
    assert_eq!(
        budget_try_acquire(&p, 501, BudgetKind::Retry).map_err(key),
        Err("input.budget_tokens")
    );
    let off = RetryPolicy {
        budget_capacity: 0,
        ..policy()
    };
    assert_eq!(budget_new(&off), Ok(0));
    assert_eq!(
        budget_try_acquire(&off, 0, BudgetKind::Retry),
        Ok((true, 0))
    );
    assert_eq!(budget_record_success(&off, 0, 0), Ok(0));
    // 100 retries empty the bucket; the 101st is refused.
    let mut tokens = budget_new(&p).unwrap();
    for _ in 0..100 {
        let (allowed, after) = budget_try_acquire(&p, tokens, BudgetKind::Retry).unwrap();
        assert!(allowed);
        tokens = after;
    }
    assert_eq!(
        budget_try_acquire(&p, tokens, BudgetKind::Retry),
        Ok((false, 0))
    );
    // In a decision.
    let d = |tokens, timed_out, outcome| {
        decide(
            &p,
            &DecisionInput {
                budget_tokens: Some(tokens),
                timed_out,
                ..input(ReplayClass::Idempotent, outcome)
            },
        )
        .unwrap()
    };
    let granted = d(500, false, Outcome::Connect);
    assert_eq!(
        (granted.reason, granted.budget_tokens),
        (Reason::ConnectFailure, Some(495))
    );
    assert_eq!(d(10, true, Outcome::Transport).budget_tokens, Some(0));
    let refused = d(4, false, Outcome::status(503));
    assert_eq!(
        (refused.retry, refused.reason, refused.budget_tokens),
        (false, Reason::BudgetExhausted, Some(4))
    );
    // A stop leaves the budget alone.
    assert_eq!(d(4, false, Outcome::status(404)).budget_tokens, Some(4));
}

#[test]
fn the_budget_cell_is_shared_by_threads() {
    let p = RetryPolicy {
        budget_capacity: 1000,
        budget_retry_cost: 1,
        max_retries: 100,
        ..policy()
    };
    let budget = RetryBudget::new(&p).unwrap();
    let granted = std::sync::atomic::AtomicI64::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..400 {
                    let d = budget
                        .decide(&p, &input(ReplayClass::Idempotent, Outcome::Connect))
                        .unwrap();
                    if d.retry {
                        granted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
    });
    // Exactly the capacity is granted, whatever the interleaving.
    assert_eq!(granted.into_inner(), 1000);
    assert_eq!(budget.tokens(), 0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..100 {
                    budget.record_success(&p, 2).unwrap();
                }
            });
        }
    });
    assert_eq!(budget.tokens(), 800);
    assert_eq!(budget.try_acquire(&p, BudgetKind::Timeout), Ok((true, 790)));
    assert_eq!(budget.record_success(&p, 0), Ok(791));
}

#[test]
fn classifier_with_a_configured_base() {
    let of = |c: &Classifier<'_>, method: &str, target: &str| {
        let c = c.classify(method, target);
        (c.operation.and_then(|op| op.operation_id), c.class)
    };
    let proxy = Classifier::new(
        &TABLE,
        Some("https://gw.example/proxy/api/?x#y"),
        UnknownOperationClass::MethodDefault,
    );
    assert_eq!(proxy.base_path(), "/proxy/api");
    assert_eq!(
        of(&proxy, "GET", "/proxy/api/items/7"),
        (Some("getItem"), ReplayClass::Idempotent)
    );
    // The spec's base is unknown to it; paths without a base still work.
    assert_eq!(
        of(&proxy, "POST", "/api/items"),
        (None, ReplayClass::NonReplayable)
    );
    assert_eq!(
        of(&proxy, "POST", "/items"),
        (Some("createItem"), ReplayClass::NonReplayable)
    );
    // Full URLs lose scheme and authority; relative targets are from the root.
    let default = Classifier::new(&TABLE, None, UnknownOperationClass::NoRetry);
    assert_eq!(default.base_path(), "/api");
    assert_eq!(
        of(&default, "POST", "HTTP+x.y-z://h:1@x/api/items?q#f"),
        (Some("createItem"), ReplayClass::NonReplayable)
    );
    assert_eq!(
        of(&default, "GET", "http://h"),
        (Some("root"), ReplayClass::Idempotent)
    );
    assert_eq!(
        of(&default, "GET", "http://h?x"),
        (Some("root"), ReplayClass::Idempotent)
    );
    assert_eq!(
        of(&default, "GET", "items/7"),
        (Some("getItem"), ReplayClass::Idempotent)
    );
    assert_eq!(
        of(&default, "GET", "1http://h/items"),
        (None, ReplayClass::NoRetry)
    );
    // Unknown requests take the classifier's class; matched ones keep theirs.
    assert_eq!(of(&default, "GET", "/other"), (None, ReplayClass::NoRetry));
    let strict = Classifier::new(&TABLE, Some("api/"), UnknownOperationClass::NonReplayable);
    assert_eq!(strict.base_path(), "/api");
    assert_eq!(
        of(&strict, "GET", "/other"),
        (None, ReplayClass::NonReplayable)
    );
    let none = Classifier::new(
        &TABLE,
        Some("https://h/"),
        UnknownOperationClass::MethodDefault,
    );
    assert_eq!(none.base_path(), "");
    assert_eq!(
        of(&none, "GET", "/api/items"),
        (None, ReplayClass::Idempotent)
    );
}

#[test]
fn idempotency_keys() {
    let keyed = TABLE.operation_by_id("keyed").unwrap();
    assert!(keyed.has_idempotency_key([("idempotency-KEY", " k ")]));
    assert!(has_idempotency_key(
        Some(keyed),
        vec![
            ("Idempotency-Key".to_string(), " \t".to_string()),
            ("Idempotency-Key".to_string(), "k".to_string())
        ]
    ));
    assert!(!keyed.has_idempotency_key([("Idempotency-Key", " \t ")]));
    assert!(!keyed.has_idempotency_key([("Idempotency-Keys", "k")]));
    assert!(!has_idempotency_key(None, [("Idempotency-Key", "k")]));
    assert!(!OPERATIONS[0].has_idempotency_key([("Idempotency-Key", "k")]));
}

#[test]
fn retry_events() {
    let decision = Decision {
        retry: true,
        delay_ms: 250,
        reason: Reason::RetryableStatus,
        budget_tokens: None,
        throttled: false,
        server_delay_ms: None,
    };
    let c = TABLE.classify("get", "/api/items/7?x");
    let e = RetryEvent::new("get", &c, 0, &decision).unwrap();
    assert_eq!(
        (
            e.attempt,
            e.method.as_ref(),
            e.path_template,
            e.operation_id
        ),
        (1, "GET", Some("/items/{id}"), Some("getItem"))
    );
    let unknown = TABLE.classify("patch", "/nowhere");
    let e = RetryEvent::new("patch", &unknown, 2, &decision).unwrap();
    assert_eq!(
        (
            e.attempt,
            e.method.as_ref(),
            e.path_template,
            e.operation_id
        ),
        (3, "PATCH", None, None)
    );
    let stop = Decision {
        retry: false,
        delay_ms: 0,
        reason: Reason::Exhausted,
        budget_tokens: None,
        throttled: false,
        server_delay_ms: None,
    };
    assert!(RetryEvent::new("GET", &c, 0, &stop).is_none());
}
