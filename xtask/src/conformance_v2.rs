//! Contract v2 case lines (conformance/README.md, "Contract v2 lines"): the vector kinds
//! `decide2`, `invalid`, `budget`, `classify2`, `safe_list`, `has_key`, `event` and `origin`, the derived
//! `C2`/`L`/`H` probes and the `T2` table dump. Only used with `--contract 2`
//! (`RETRYGEN_CONTRACT=2`), once the runtimes implement v2.

use super::{bits, csv, hex, opt_hex, Probe};
use anyhow::{anyhow, bail, Result};
use retrygen::model::policy::{Policy, UnknownClass};
use retrygen::model::{base_path_of, Api, ReplayClass};
use serde_json::{Map, Value};
use std::fmt::Write as _;

/// The v2 vector kinds.
pub const KINDS: [&str; 8] = [
    "decide2",
    "invalid",
    "budget",
    "classify2",
    "safe_list",
    "has_key",
    "event",
    "origin",
];

/// Kinds that name no spec and run once per spec suite, like `decide`.
pub const SPEC_FREE: [&str; 4] = ["decide2", "budget", "invalid", "origin"];

/// The v2 policy keys in the order of the `P2` fields.
const KEYS: [&str; 19] = retrygen::model::policy::KEYS;

fn default_policy() -> Map<String, Value> {
    let p = Policy::default();
    let v = serde_json::to_value(&p).expect("the policy serialises");
    let mut out = Map::new();
    for k in KEYS {
        out.insert(k.to_string(), v[k].clone());
    }
    out
}

/// A double field of a v2 vector: a JSON number or "NaN", "Infinity", "-Infinity".
pub(crate) fn double(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.as_str() {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

pub(crate) fn int_field(v: &Value, what: &str) -> Result<String> {
    match v {
        Value::Null => Ok("-".into()),
        Value::Number(n) if n.is_i64() => Ok(n.to_string()),
        _ => bail!("{what} must be an integer, found {v}"),
    }
}

fn status_list(v: &Value, what: &str) -> Result<String> {
    let items = v
        .as_array()
        .ok_or_else(|| anyhow!("{what} must be a list"))?;
    let codes: Result<Vec<String>> = items.iter().map(|i| int_field(i, what)).collect();
    Ok(codes?.join(","))
}

/// The 19 `P2` fields from a vector's policy overrides, written as given (invalid values too).
pub fn policy_fields(overrides: &Value) -> Result<String> {
    let mut p = default_policy();
    if let Some(o) = overrides.as_object() {
        for (k, v) in o {
            if !p.contains_key(k) {
                bail!("unknown policy key {k}");
            }
            p.insert(k.clone(), v.clone());
        }
    }
    let mut fields = Vec::new();
    for k in KEYS {
        let v = &p[k];
        let field = match k {
            "multiplier" => bits(double(v).ok_or_else(|| anyhow!("multiplier: {v}"))?),
            "jitter" | "retry_after_over_cap" | "unknown_operation_class" => v
                .as_str()
                .ok_or_else(|| anyhow!("{k} must be a string"))?
                .to_string(),
            "server_directive_headers" => {
                let names = v.as_array().ok_or_else(|| anyhow!("{k} must be a list"))?;
                if names.is_empty() {
                    "-".to_string()
                } else {
                    names
                        .iter()
                        .map(|n| n.as_str().map(hex).ok_or_else(|| anyhow!("{k}: {n}")))
                        .collect::<Result<Vec<_>>>()?
                        .join(",")
                }
            }
            k if k.ends_with("statuses") || k == "retry_only_with_server_delay" => {
                status_list(v, k)?
            }
            k => int_field(v, k)?,
        };
        fields.push(field);
    }
    Ok(fields.join("\t"))
}

/// The `P2` fields of a validated model policy (the `T2` dump).
pub fn model_policy_fields(p: &Policy) -> String {
    let headers = if p.server_directive_headers.is_empty() {
        "-".to_string()
    } else {
        p.server_directive_headers
            .iter()
            .map(|h| hex(h))
            .collect::<Vec<_>>()
            .join(",")
    };
    format!(
        "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{headers}\t{}\t{}\t{}\t{}\t{}\t{}",
        p.max_retries,
        p.initial_backoff_ms,
        p.max_backoff_ms,
        bits(p.multiplier),
        p.jitter.name(),
        csv(&p.retryable_statuses),
        csv(&p.rejected_statuses),
        p.retry_after_cap_ms,
        p.deadline_ms
            .map_or_else(|| "-".to_string(), |d| d.to_string()),
        csv(&p.retry_only_with_server_delay),
        csv(&p.key_in_flight_statuses),
        csv(&p.key_reused_statuses),
        p.retry_after_over_cap.name(),
        p.unknown_operation_class.name(),
        p.budget_capacity,
        p.budget_retry_cost,
        p.budget_timeout_cost,
        p.budget_success_refund,
    )
}

pub(crate) fn b(v: &Value) -> &'static str {
    if v.as_bool().unwrap_or(false) {
        "1"
    } else {
        "0"
    }
}

fn opt_str_hex(v: &Value) -> String {
    opt_hex(v.as_str())
}

fn decide_line(n: &str, case: &Value) -> Result<String> {
    let i = &case["input"];
    let o = &i["outcome"];
    let (kind, status) = match o.get("failure").and_then(Value::as_str) {
        Some(f) => (f.to_string(), "-".to_string()),
        None => ("status".to_string(), int_field(&o["status"], "status")?),
    };
    Ok(format!(
        "D2\t{n}\t{}\t{}\t{}\t{kind}\t{status}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
        policy_fields(&case["policy"])?,
        i["class"].as_str().ok_or_else(|| anyhow!("input.class"))?,
        b(&i["has_idempotency_key"]),
        opt_str_hex(&o["retry_after"]),
        opt_str_hex(&o["retry_after_ms"]),
        opt_str_hex(&o["directive"]),
        int_field(&i["retries_used"], "retries_used")?,
        int_field(&i["elapsed_ms"], "elapsed_ms")?,
        int_field(&i["previous_delay_ms"], "previous_delay_ms")?,
        int_field(&i["now_ms"], "now_ms")?,
        bits(double(&i["random"]).ok_or_else(|| anyhow!("input.random"))?),
        int_field(&i["budget_tokens"], "budget_tokens")?,
        b(&i["timed_out"]),
    ))
}

fn budget_line(n: &str, case: &Value) -> Result<String> {
    let mut p = default_policy();
    if let Some(o) = case["policy"].as_object() {
        for (k, v) in o {
            p.insert(k.clone(), v.clone());
        }
    }
    let mut events = Vec::new();
    for ev in case["events"].as_array().ok_or_else(|| anyhow!("events"))? {
        let what = ev[0].as_str().unwrap_or_default();
        events.push(match (what, &ev[1]) {
            ("acquire", Value::String(k)) if k == "retry" => "r".to_string(),
            ("acquire", Value::String(k)) if k == "timeout" => "t".to_string(),
            ("acquire", Value::String(k)) => format!("a{}", hex(k)),
            ("success", Value::Number(n)) if n.is_i64() => format!("s{n}"),
            _ => bail!("bad budget event {ev}"),
        });
    }
    Ok(format!(
        "K\t{n}\t{}\t{}\t{}\t{}\t{}",
        int_field(&p["budget_capacity"], "budget_capacity")?,
        int_field(&p["budget_retry_cost"], "budget_retry_cost")?,
        int_field(&p["budget_timeout_cost"], "budget_timeout_cost")?,
        int_field(&p["budget_success_refund"], "budget_success_refund")?,
        events.join(",")
    ))
}

fn classify_line(n: &str, base: String, unknown: &str, method: String, target: String) -> String {
    format!("C2\t{n}\t{base}\t{unknown}\t{method}\t{target}")
}

/// One v2 vector case as a probe.
pub fn vector_probe(case: &Value, kind: &str, origin: String) -> Result<Probe> {
    let name = case["name"].as_str().unwrap_or_default();
    let n = hex(name);
    let e = &case["expect"];
    let err = |m: anyhow::Error| anyhow!("{origin}: {m}");
    let (input, expected) = match kind {
        "decide2" => (
            decide_line(&n, case).map_err(err)?,
            format!(
                "D2\t{n}\t{}\t{}\t{}\t{}",
                b(&e["retry"]),
                e["delay_ms"]
                    .as_u64()
                    .ok_or_else(|| anyhow!("{origin}: expect.delay_ms"))?,
                e["reason"].as_str().unwrap_or_default(),
                int_field(&e["budget_tokens"], "expect.budget_tokens").map_err(err)?
            ),
        ),
        "invalid" => {
            let input = match case["call"].as_str() {
                Some("decide") => decide_line(&n, case).map_err(err)?,
                Some("budget") => budget_line(&n, case).map_err(err)?,
                Some("classify") => classify_line(
                    &n,
                    case["base_hex"].as_str().unwrap_or("-").to_string(),
                    case["unknown_operation_class"]
                        .as_str()
                        .unwrap_or("method_default"),
                    case["method_hex"].as_str().unwrap_or_default().to_string(),
                    case["target_hex"].as_str().unwrap_or_default().to_string(),
                ),
                other => bail!("{origin}: unknown call {other:?}"),
            };
            let key = e["key"]
                .as_str()
                .ok_or_else(|| anyhow!("{origin}: expect.key"))?;
            (input, format!("X\t{n}\t{key}"))
        }
        "budget" => {
            let mut results = Vec::new();
            for a in e["after"]
                .as_array()
                .ok_or_else(|| anyhow!("{origin}: expect.after"))?
            {
                let tokens = a["tokens"].as_u64().unwrap_or_default();
                results.push(match a.get("allowed").and_then(Value::as_bool) {
                    Some(true) => format!("y{tokens}"),
                    Some(false) => format!("n{tokens}"),
                    None => format!("s{tokens}"),
                });
            }
            (
                budget_line(&n, case).map_err(err)?,
                format!("K\t{n}\t{}\t{}", e["initial"], results.join(",")),
            )
        }
        "classify2" => (
            classify_line(
                &n,
                opt_str_hex(&case["base"]),
                case["unknown_operation_class"]
                    .as_str()
                    .unwrap_or("method_default"),
                hex(case["method"].as_str().unwrap_or_default()),
                hex(case["target"].as_str().unwrap_or_default()),
            ),
            format!(
                "C2\t{n}\t{}\t{}",
                e["class"].as_str().unwrap_or_default(),
                opt_str_hex(&e["operation_id"])
            ),
        ),
        "safe_list" => (
            format!(
                "L\t{n}\t{}\t{}",
                hex(case["method"].as_str().unwrap_or_default()),
                hex(case["path"].as_str().unwrap_or_default())
            ),
            format!(
                "L\t{n}\t{}\t{}",
                b(&e["listed"]),
                opt_str_hex(&e["idempotency_header"])
            ),
        ),
        "has_key" => {
            let mut line = format!(
                "H\t{n}\t{}",
                hex(case["operation_id"].as_str().unwrap_or_default())
            );
            for pair in case["headers"].as_array().into_iter().flatten() {
                write!(
                    line,
                    "\t{}\t{}",
                    hex(pair[0].as_str().unwrap_or_default()),
                    hex(pair[1].as_str().unwrap_or_default())
                )
                .unwrap();
            }
            (line, format!("H\t{n}\t{}", b(&e["has_key"])))
        }
        "event" => (
            format!(
                "E\t{n}\t{}\t{}\t{}\t{}\t{}\t{}",
                opt_str_hex(&case["base"]),
                hex(case["method"].as_str().unwrap_or_default()),
                hex(case["target"].as_str().unwrap_or_default()),
                case["retries_used"],
                case["decision"]["delay_ms"],
                case["decision"]["reason"].as_str().unwrap_or_default()
            ),
            format!(
                "E\t{n}\t{}\t{}\t{}\t{}\t{}\t{}",
                e["attempt"],
                e["reason"].as_str().unwrap_or_default(),
                e["delay_ms"],
                hex(e["method"].as_str().unwrap_or_default()),
                opt_str_hex(&e["path_template"]),
                opt_str_hex(&e["operation_id"])
            ),
        ),
        "origin" => (
            format!(
                "O\t{n}\t{}\t{}",
                hex(case["base"].as_str().unwrap_or_default()),
                hex(case["target"].as_str().unwrap_or_default())
            ),
            format!("O\t{n}\t{}", b(&e["in_scope"])),
        ),
        other => bail!("{origin}: unknown v2 kind {other:?}"),
    };
    Ok(Probe {
        input,
        expected,
        origin,
    })
}

/// The safe list (contract v2, L1): `non_replayable` and `keyed` operations in table order.
pub fn safe_list(api: &Api) -> Result<Vec<(usize, regex::Regex)>> {
    api.operations
        .iter()
        .enumerate()
        .filter(|(_, o)| matches!(o.class, ReplayClass::NonReplayable | ReplayClass::Keyed))
        .map(|(i, o)| Ok((i, regex::Regex::new(&o.template.safe_regex())?)))
        .collect()
}

pub fn safe_list_match(
    api: &Api,
    list: &[(usize, regex::Regex)],
    method: &str,
    path: &str,
) -> (bool, Option<String>) {
    list.iter()
        .find(|(i, re)| api.operations[*i].method == method && re.is_match(path))
        .map_or((false, None), |(i, _)| {
            (true, api.operations[*i].idempotency_header.clone())
        })
}

/// A vector case that retrygen's model must agree with (classify2, safe_list); None when it
/// does or the case is of another kind.
pub fn model_check(api: &Api, case: &Value) -> Result<Option<String>> {
    let e = &case["expect"];
    match case["kind"].as_str() {
        Some("classify2") => {
            let base = case["base"]
                .as_str()
                .map_or_else(|| api.base_path.clone(), base_path_of);
            let unknown =
                UnknownClass::parse(case["unknown_operation_class"].as_str().unwrap_or_default())
                    .ok_or_else(|| anyhow!("{}: unknown_operation_class", case["name"]))?;
            let c = api.classify_with(
                &base,
                unknown,
                case["method"].as_str().unwrap_or_default(),
                case["target"].as_str().unwrap_or_default(),
            );
            let id = c
                .operation
                .and_then(|i| api.operations[i].operation_id.as_deref());
            if c.class.name() != e["class"].as_str().unwrap_or_default()
                || id != e["operation_id"].as_str()
            {
                return Ok(Some(format!(
                    "retrygen's model gives {} {id:?}",
                    c.class.name()
                )));
            }
        }
        Some("safe_list") => {
            let list = safe_list(api)?;
            let got = safe_list_match(
                api,
                &list,
                case["method"].as_str().unwrap_or_default(),
                case["path"].as_str().unwrap_or_default(),
            );
            if got.0 != e["listed"].as_bool().unwrap_or(false)
                || got.1.as_deref() != e["idempotency_header"].as_str()
            {
                return Ok(Some(format!("retrygen's model's safe list gives {got:?}")));
            }
        }
        _ => {}
    }
    Ok(None)
}

/// Every literal ASCII letter of a concrete path percent-encoded.
fn encode_letters(path: &str) -> String {
    path.chars()
        .map(|c| {
            if c.is_ascii_alphabetic() {
                format!("%{:02X}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Cases derived from the model of one spec for contract v2: classify with a full URL, a proxy
/// base and percent-encoded literals; the safe list on the same requests; has_idempotency_key of
/// every keyed operation; the `T2` table dump.
pub fn derived_probes(api: &Api) -> Result<Vec<Probe>> {
    let mut probes = Vec::new();
    let list = safe_list(api)?;
    let c2 = |name: &str, base: Option<&str>, method: &str, target: &str| {
        let base_path = base.map_or_else(|| api.base_path.clone(), base_path_of);
        let c = api.classify_with(&base_path, UnknownClass::MethodDefault, method, target);
        let id = c
            .operation
            .and_then(|i| api.operations[i].operation_id.as_deref());
        let n = hex(name);
        Probe {
            input: classify_line(
                &n,
                opt_hex(base),
                "method_default",
                hex(method),
                hex(target),
            ),
            expected: format!("C2\t{n}\t{}\t{}", c.class.name(), opt_hex(id)),
            origin: format!("derived v2: {}", super::shown(name)),
        }
    };
    for (i, op) in api.operations.iter().enumerate() {
        let path = super::concrete_path(op);
        let encoded = encode_letters(&path);
        let label = format!("op{i} {} {}", op.method, op.path);
        probes.push(c2(
            &format!("{label} full URL"),
            None,
            &op.method,
            &format!("https://host.example:8443{}{path}?q=1#f", api.base_path),
        ));
        probes.push(c2(
            &format!("{label} behind a proxy"),
            Some(&format!("https://gw.example/proxy{}/", api.base_path)),
            &op.method,
            &format!("/proxy{}{path}", api.base_path),
        ));
        probes.push(c2(
            &format!("{label} percent-encoded"),
            None,
            &op.method,
            &format!("{}{encoded}", api.base_path),
        ));
        for (what, p) in [("plain", &path), ("percent-encoded", &encoded)] {
            let n = hex(&format!("{label} safe list, {what}"));
            let (listed, header) = safe_list_match(api, &list, &op.method, p);
            probes.push(Probe {
                input: format!("L\t{n}\t{}\t{}", hex(&op.method), hex(p)),
                expected: format!(
                    "L\t{n}\t{}\t{}",
                    u8::from(listed),
                    opt_hex(header.as_deref())
                ),
                origin: format!("derived v2: {} safe list", super::shown(&label)),
            });
        }
        if let (Some(id), Some(h)) = (&op.operation_id, &op.idempotency_header) {
            for (what, name, value, want) in [
                ("as declared", h.clone(), "k", 1),
                ("upper case", h.to_ascii_uppercase(), "k", 1),
                ("blank value", h.clone(), " \t", 0),
            ] {
                let n = hex(&format!("{label} has key, {what}"));
                probes.push(Probe {
                    input: format!("H\t{n}\t{}\t{}\t{}", hex(id), hex(&name), hex(value)),
                    expected: format!("H\t{n}\t{want}"),
                    origin: format!("derived v2: {} has key", super::shown(&label)),
                });
            }
        }
    }
    let mut expected = format!(
        "B2\t{}\t{}\nP2\t{}",
        hex(&api.base_path),
        hex(&api.source_name),
        model_policy_fields(&api.policy)
    );
    for (i, op) in api.operations.iter().enumerate() {
        write!(
            expected,
            "\nO2\t{i}\t{}\t{}\t{}\t{}\t{}",
            hex(&op.method),
            hex(&op.path),
            opt_hex(op.operation_id.as_deref()),
            op.class.name(),
            opt_hex(op.idempotency_header.as_deref())
        )
        .unwrap();
    }
    for (i, re) in &list {
        let op = &api.operations[*i];
        write!(
            expected,
            "\nL2\t{i}\t{}\t{}\t{}",
            hex(&op.method),
            hex(re.as_str()),
            opt_hex(op.idempotency_header.as_deref())
        )
        .unwrap();
    }
    probes.push(Probe {
        input: "T2".into(),
        expected,
        origin: "derived v2: table dump".into(),
    });
    Ok(probes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolchains::root;
    use retrygen::model::ModelOptions;

    /// Every v2 vector turns into a case line with the field count conformance/README.md gives,
    /// and retrygen's model agrees with every classify2 and safe_list vector.
    #[test]
    fn every_v2_vector_becomes_a_line_and_the_model_agrees() {
        let cases = super::super::load_vectors(&root().join("conformance/vectors")).unwrap();
        let mut apis = std::collections::BTreeMap::new();
        let mut count = 0;
        for (file, case) in &cases {
            if case["contract"].as_u64() != Some(2) {
                continue;
            }
            count += 1;
            let kind = case["kind"].as_str().unwrap();
            let probe = vector_probe(case, kind, format!("{file}: {}", case["name"])).unwrap();
            let fields = probe.input.split('\t').count();
            let want = match probe.input.split('\t').next().unwrap() {
                "D2" => 2 + 19 + 14,
                "K" => 7,
                "C2" => 6,
                "L" => 4,
                "E" => 8,
                "O" => 4,
                "H" => fields - (fields - 3) % 2,
                other => panic!("{other}"),
            };
            assert_eq!(fields, want, "{}", probe.input);
            if let Some(spec) = case["spec"].as_str() {
                let api = apis.entry(spec.to_string()).or_insert_with(|| {
                    retrygen::load_api(&root().join(spec), &ModelOptions::default())
                        .unwrap()
                        .0
                });
                assert_eq!(model_check(api, case).unwrap(), None, "{}", case["name"]);
            }
        }
        assert!(count >= 300, "{count} v2 cases");
        for api in apis.values() {
            let probes = derived_probes(api).unwrap();
            assert!(probes.last().unwrap().expected.starts_with("B2\t"));
        }
    }
}
