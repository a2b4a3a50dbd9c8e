//! `in_scope` (contract C5) and the `certificate` failure (contract R1).

use crate::{decide, in_scope, Outcome, Reason, ReplayClass};

#[test]
fn a_base_or_target_without_origin_is_in_scope() {
    assert!(in_scope("/v1", "https://other.example/v1/sandboxes"));
    assert!(in_scope("https://api.example/v1", "/v1/sandboxes"));
    assert!(in_scope("", ""));
}

#[test]
fn origins_compare_after_case_user_info_and_default_port() {
    assert!(in_scope(
        "HTTPS://API.Example/v1",
        "https://user:pw@api.example:443/v1/x"
    ));
    assert!(in_scope("http://h:0080/", "http://h/?q"));
    assert!(in_scope("http://[::1]:8080", "http://[::1]:08080#f"));
    assert!(in_scope("foo://h", "foo://h"));
}

#[test]
fn another_host_scheme_or_port_is_out_of_scope() {
    assert!(!in_scope(
        "https://api.example/v1",
        "https://49983-sbx.e2b.app/envd/files"
    ));
    assert!(!in_scope("https://api.example", "http://api.example"));
    assert!(!in_scope("http://h:8080", "http://h:8081"));
    assert!(!in_scope("foo://h", "foo://h:1"));
    // A trailing dot is kept: another host string.
    assert!(!in_scope("http://h/", "http://h./"));
    // The last `@` ends the user info.
    assert!(!in_scope("http://a@b@h/", "http://b/"));
}

#[test]
fn a_certificate_failure_stops_before_every_other_rule() {
    let policy = super::decide::policy();
    let input = super::decide::input(ReplayClass::Idempotent, Outcome::Certificate);
    let decision = decide(&policy, &input).unwrap();
    assert!(!decision.retry);
    assert_eq!(decision.reason, Reason::CertificateFailure);
    assert_eq!(Outcome::failure("certificate"), Ok(Outcome::Certificate));
}
