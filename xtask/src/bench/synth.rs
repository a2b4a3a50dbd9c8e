//! Synthetic OpenAPI documents of a given number of operations, built from the path shapes real
//! APIs use: services under a version prefix or a `/projects/{project_id}` scope, resources with
//! ids, nested sub-resources, literal siblings beside parameters (`/users/me` next to
//! `/users/{users_id}`), actions as a mixed segment (`/{id}:cancel`) and as a literal segment
//! (`/{id}/start`), mixed file segments (`{name}.{ext}`) beside a literal (`archive.tar`),
//! streaming logs, keyed creates and annotated operations, all under the base path `/api`.

use serde_json::{json, Map, Value};

const SERVICES: [&str; 30] = [
    "accounts",
    "billing",
    "compute",
    "storage",
    "network",
    "identity",
    "analytics",
    "messaging",
    "search",
    "media",
    "deploy",
    "monitoring",
    "registry",
    "dns",
    "security",
    "payments",
    "catalog",
    "orders",
    "shipping",
    "support",
    "marketing",
    "crm",
    "people",
    "finance",
    "devices",
    "ml",
    "data",
    "logging",
    "cdn",
    "email",
];

const RESOURCES: [&str; 30] = [
    "users",
    "teams",
    "projects",
    "instances",
    "volumes",
    "snapshots",
    "images",
    "keys",
    "secrets",
    "events",
    "webhooks",
    "invoices",
    "subscriptions",
    "customers",
    "products",
    "prices",
    "jobs",
    "builds",
    "deployments",
    "domains",
    "records",
    "certificates",
    "policies",
    "roles",
    "tokens",
    "sessions",
    "files",
    "reports",
    "alerts",
    "rules",
];

/// Literal segments that sit beside a resource's id parameter.
const SIBLINGS: [(&str, &str); 6] = [
    ("GET", "me"),
    ("POST", "search"),
    ("GET", "count"),
    ("GET", "latest"),
    ("GET", "default"),
    ("POST", "batch"),
];

/// Mixed-segment actions (`{id}:cancel`) and literal-segment actions (`{id}/start`).
const ACTIONS: [&str; 6] = ["cancel", "restart", "archive", "approve", "retry", "verify"];

/// What an operation declares beyond its method and path.
#[derive(Clone, Copy, PartialEq)]
enum Extra {
    None,
    /// An `Idempotency-Key` header parameter (class `keyed`).
    Keyed,
    /// `x-idempotent: true`.
    Idempotent,
    /// A `text/event-stream` response with `x-retry: false` (class `no_retry`: under contract
    /// v3 a stream keeps its method's class unless the spec says so).
    Streaming,
}

struct Op {
    method: &'static str,
    path: String,
    extra: Extra,
}

/// The operations of resource number `k`, most common shapes first so that a truncated list
/// still holds ids, a literal sibling and an action.
fn resource_operations(k: usize) -> Vec<Op> {
    let s = k % SERVICES.len();
    let r = (k / SERVICES.len() + 7 * s) % RESOURCES.len();
    let service = SERVICES[s];
    let resource = RESOURCES[r];
    // Resource 0 gets a two-segment prefix, the average depth of the four styles, so that the
    // smallest spec's requests are as long as the larger specs' on average.
    let prefix = match (s + 1) % 4 {
        0 => format!("/{service}"),
        1 => format!("/{service}/v1"),
        2 => format!("/v2/{service}"),
        _ => format!("/projects/{{project_id}}/{service}"),
    };
    let base = format!("{prefix}/{resource}");
    let id = format!("{{{resource}_id}}");
    let item = format!("{base}/{id}");
    let sub = (3 + k / 7..)
        .map(|offset| RESOURCES[(r + offset) % RESOURCES.len()])
        .find(|&sub| sub != resource && sub != "files")
        .expect("another resource");
    let sub_item = format!("{item}/{sub}/{{{sub}_id}}");
    let (sibling_method, sibling) = SIBLINGS[k % SIBLINGS.len()];
    let action = ACTIONS[k % ACTIONS.len()];
    let op = |method: &'static str, path: &str, extra: Extra| Op {
        method,
        path: path.to_string(),
        extra,
    };
    vec![
        op("GET", &base, Extra::None),
        op(
            "POST",
            &base,
            if k.is_multiple_of(3) {
                Extra::Keyed
            } else {
                Extra::None
            },
        ),
        op("GET", &item, Extra::None),
        op(
            "PATCH",
            &item,
            if k % 4 == 1 {
                Extra::Idempotent
            } else {
                Extra::None
            },
        ),
        op("DELETE", &item, Extra::None),
        op(sibling_method, &format!("{base}/{sibling}"), Extra::None),
        op("POST", &format!("{item}:{action}"), Extra::None),
        op("POST", &format!("{item}/start"), Extra::Idempotent),
        op("GET", &format!("{item}/{sub}"), Extra::None),
        op("POST", &format!("{item}/{sub}"), Extra::None),
        op("GET", &sub_item, Extra::None),
        op("DELETE", &sub_item, Extra::None),
        op(
            "PUT",
            &format!("{item}/files/{{name}}.{{ext}}"),
            Extra::None,
        ),
        op("GET", &format!("{item}/files/archive.tar"), Extra::None),
        op("GET", &format!("{item}/logs"), Extra::Streaming),
    ]
}

/// An OpenAPI 3.0 document with exactly `count` operations (at most 30 * 30 resources' worth).
pub fn document(count: usize) -> Value {
    let mut paths: Map<String, Value> = Map::new();
    let mut made = 0;
    let mut k = 0;
    while made < count {
        assert!(
            k < SERVICES.len() * RESOURCES.len(),
            "too many operations asked for"
        );
        for op in resource_operations(k) {
            if made == count {
                break;
            }
            let mut operation = json!({
                "operationId": format!("{}_{}", op.method.to_ascii_lowercase(), made),
                "responses": {"200": {"description": "ok"}},
            });
            match op.extra {
                Extra::None => {}
                Extra::Keyed => {
                    operation["parameters"] = json!([{
                        "name": "Idempotency-Key", "in": "header", "required": false,
                        "schema": {"type": "string"}
                    }]);
                }
                Extra::Idempotent => operation["x-idempotent"] = json!(true),
                Extra::Streaming => {
                    operation["responses"] = json!({"200": {
                        "description": "log lines",
                        "content": {"text/event-stream": {"schema": {"type": "string"}}}
                    }});
                    operation["x-retry"] = json!(false);
                }
            }
            let item = paths
                .entry(op.path.clone())
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .expect("path items are objects");
            let method = op.method.to_ascii_lowercase();
            assert!(
                !item.contains_key(&method),
                "duplicate {} {}",
                op.method,
                op.path
            );
            item.insert(method, operation);
            made += 1;
        }
        k += 1;
    }
    json!({
        "openapi": "3.0.3",
        "info": {"title": format!("Synthetic API of {count} operations"), "version": "1.0.0"},
        "servers": [{"url": "https://api.example.com/api"}],
        "paths": paths,
    })
}

#[cfg(test)]
mod tests {
    use super::document;
    use retrygen::model::{ModelOptions, ReplayClass};

    /// Every size has exactly the operations asked for, reads without a diagnostic and holds
    /// every class.
    #[test]
    fn documents_have_the_size_asked_for() {
        let dir = tempfile_dir();
        for n in [10, 100, 1000] {
            let path = dir.join(format!("synthetic-{n}.json"));
            std::fs::write(&path, serde_json::to_string(&document(n)).unwrap()).unwrap();
            let (api, diagnostics) = retrygen::load_api(&path, &ModelOptions::default()).unwrap();
            assert_eq!(api.operations.len(), n);
            assert_eq!(diagnostics.len(), 0, "{diagnostics}");
            assert_eq!(api.base_path, "/api");
            if n >= 100 {
                for class in ReplayClass::ALL {
                    assert!(
                        api.operations.iter().any(|o| o.class == class),
                        "{n}: no {class:?}"
                    );
                }
            }
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("retrygen-synth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
