//! `ValidPolicy`: a policy checked once, so that an adapter's decisions check only their input
//! (issue 20: the policy's checks were 34 of `decide`'s 53 ns, on every decision).

use super::decide::{input, policy};
use crate::{decide, Outcome, ReplayClass, RetryBudget, ValidPolicy};

#[test]
fn a_valid_policy_decides_as_decide_does() {
    let valid = ValidPolicy::new(policy()).expect("the contract's default policy is valid");
    assert_eq!(valid.policy(), &policy());
    for outcome in [
        Outcome::status(503),
        Outcome::status(200),
        Outcome::Connect,
        Outcome::Transport,
    ] {
        for class in [ReplayClass::Idempotent, ReplayClass::NonReplayable] {
            for retries_used in 0..5 {
                let input = crate::DecisionInput {
                    retries_used,
                    ..input(class, outcome)
                };
                assert_eq!(valid.decide(&input), decide(&policy(), &input));
            }
        }
    }
    // The input is still checked.
    let bad = crate::DecisionInput {
        random: 1.0,
        ..input(ReplayClass::Idempotent, Outcome::Connect)
    };
    assert_eq!(valid.decide(&bad), decide(&policy(), &bad));
    assert!(valid.decide(&bad).is_err());
    // And the budget's cell decides the same way.
    let (a, b) = (
        RetryBudget::new(&policy()).unwrap(),
        RetryBudget::new(&policy()).unwrap(),
    );
    let connect = input(ReplayClass::Idempotent, Outcome::Connect);
    assert_eq!(
        a.decide_valid(&valid, &connect),
        b.decide(&policy(), &connect)
    );
    assert_eq!(a.tokens(), b.tokens());
}

#[test]
fn an_invalid_policy_is_refused_and_max_retries_is_overridden_in_range() {
    let invalid = crate::RetryPolicy {
        max_retries: 101,
        ..policy()
    };
    assert_eq!(
        ValidPolicy::new(invalid).map(|_| ()).unwrap_err().key(),
        "policy.max_retries"
    );
    let valid = ValidPolicy::new(policy()).unwrap();
    assert_eq!(valid.with_max_retries(0).unwrap().policy().max_retries, 0);
    assert_eq!(
        valid.with_max_retries(100).unwrap().policy().max_retries,
        100
    );
    for out_of_range in [-1, 101] {
        assert_eq!(
            valid.with_max_retries(out_of_range).unwrap_err().key(),
            "policy.max_retries"
        );
    }
    // Every other key is the policy's.
    let zero = valid.with_max_retries(0).unwrap();
    assert_eq!(
        zero.policy(),
        &crate::RetryPolicy {
            max_retries: 0,
            ..policy()
        }
    );
}

#[test]
fn a_settled_status_is_what_decide_says() {
    // Every status, class, key and retry count, with and without a directive: wherever
    // `settled_status` answers, `decide` gives that reason (and does not retry).
    let mut policy = policy();
    policy.key_in_flight_statuses = vec![409];
    policy.key_reused_statuses = vec![422];
    let valid = ValidPolicy::new(policy.clone()).unwrap();
    let mut settled = 0;
    for status in 100..=599 {
        for class in [
            ReplayClass::Idempotent,
            ReplayClass::Keyed,
            ReplayClass::NonReplayable,
            ReplayClass::NoRetry,
        ] {
            for key in [false, true] {
                for retries_used in [0, 2, 3, 4] {
                    for directive in [None, Some("true"), Some("false")] {
                        let input = crate::DecisionInput {
                            has_idempotency_key: key,
                            retries_used,
                            ..input(
                                class,
                                Outcome::Status {
                                    status,
                                    retry_after: None,
                                    retry_after_ms: None,
                                    directive,
                                },
                            )
                        };
                        let quick = valid.settled_status(
                            class,
                            key,
                            retries_used,
                            status,
                            directive.is_some(),
                        );
                        if let Some(reason) = quick {
                            settled += 1;
                            let decision = decide(&policy, &input).unwrap();
                            assert!(!decision.retry, "{status} {class:?} {key} {retries_used}");
                            assert_eq!(decision.reason, reason, "{status} {class:?} {key}");
                        }
                    }
                }
            }
        }
    }
    // 200, 404 and the like, without a directive.
    assert!(settled > 10_000, "{settled}");
    assert_eq!(
        valid.settled_status(ReplayClass::Idempotent, false, 0, 200, false),
        Some(crate::Reason::StatusNotRetryable)
    );
    assert_eq!(
        valid.settled_status(ReplayClass::Idempotent, false, 0, 503, false),
        None
    );
    assert_eq!(
        valid.settled_status(ReplayClass::Idempotent, false, 0, 200, true),
        None
    );
    assert_eq!(
        valid.settled_status(ReplayClass::Keyed, true, 0, 409, false),
        None
    );
}

#[test]
fn a_valid_policys_refund_is_record_successs() {
    let valid = ValidPolicy::new(policy()).unwrap();
    for released in [0, 5, 10, 1_000_000] {
        let (a, b) = (
            RetryBudget::new(&policy()).unwrap(),
            RetryBudget::new(&policy()).unwrap(),
        );
        // Spend some first, so that the refund shows.
        let connect = input(ReplayClass::Idempotent, Outcome::Connect);
        a.decide(&policy(), &connect).unwrap();
        b.decide(&policy(), &connect).unwrap();
        assert_eq!(
            a.record_success_valid(&valid, released),
            b.record_success(&policy(), released)
        );
        assert_eq!(a.tokens(), b.tokens());
    }
    let budget = RetryBudget::new(&policy()).unwrap();
    assert_eq!(
        budget.record_success_valid(&valid, -1).unwrap_err().key(),
        "input.budget_release"
    );
}
