//! `classify` on a small hand-written table, against contract section 2.

use crate::{Operation, OperationTable, ReplayClass};

const fn op(
    method: &'static str,
    path: &'static str,
    operation_id: Option<&'static str>,
    class: ReplayClass,
) -> Operation {
    Operation {
        method,
        route: path,
        path,
        operation_id,
        class,
        idempotency_header: None,
        streaming: false,
        resumable: false,
    }
}

use ReplayClass::{Idempotent, Keyed, NoRetry, NonReplayable};

pub(super) static OPERATIONS: [Operation; 19] = [
    op("GET", "/items", Some("listItems"), Idempotent),
    op("POST", "/items", Some("createItem"), NonReplayable),
    op("GET", "/items/special", Some("special"), Idempotent),
    op("GET", "/items/{id}", Some("getItem"), Idempotent),
    op("DELETE", "/items/{id}", Some("deleteItem"), Idempotent),
    op("GET", "/items/{id}/parts/exact", Some("exactPart"), NoRetry),
    op("GET", "/files/{name}.{ext}", Some("nameExt"), Idempotent),
    op("GET", "/files/{name}.tar.gz", Some("tarball"), Idempotent),
    op("GET", "/files/v{version}", Some("version"), Idempotent),
    op("GET", "/files/report.{ext}", Some("report"), Idempotent),
    op("GET", "/caf%C3%A9", Some("cafe"), Idempotent),
    op("GET", "/a%2Fb", Some("slash"), Idempotent),
    Operation {
        method: "POST",
        route: "/keyed",
        path: "/keyed",
        operation_id: Some("keyed"),
        class: Keyed,
        idempotency_header: Some("Idempotency-Key"),
        streaming: false,
        resumable: false,
    },
    op("GET", "/", Some("root"), Idempotent),
    // The same route and method again: the first operation in table order keeps them.
    op("GET", "/items/{other}", Some("shadowed"), NonReplayable),
    // The route is the path without the `?`/`#` suffix some documents append.
    Operation {
        route: "/search",
        ..op("GET", "/search?mode=x", Some("search"), Idempotent)
    },
    op(
        "GET",
        "/emoji/{a}\u{ff61}z{b}",
        Some("halfwidth"),
        Idempotent,
    ),
    op("GET", "/emoji/{a}\u{1f600}{b}", Some("grin"), Idempotent),
    op("POST", "/files/{name}.{ext}/", None, NonReplayable),
];

pub(super) static TABLE: OperationTable = OperationTable::new("/api", &OPERATIONS);

/// The operationId `classify` finds (`-` for none) and the class.
fn classify(method: &str, path: &str) -> (&'static str, ReplayClass) {
    let c = TABLE.classify(method, path);
    let id = c
        .operation
        .map_or("-", |op| op.operation_id.unwrap_or("(no id)"));
    (id, c.class)
}

#[test]
fn literal_beats_parameter() {
    assert_eq!(classify("GET", "/items/special"), ("special", Idempotent));
    assert_eq!(classify("GET", "/items/other"), ("getItem", Idempotent));
    // Matching ignores the method: the literal path wins, and it has no DELETE.
    assert_eq!(classify("DELETE", "/items/special"), ("-", Idempotent));
    assert_eq!(
        classify("DELETE", "/items/other"),
        ("deleteItem", Idempotent)
    );
}

#[test]
fn backtracks_when_a_literal_branch_dead_ends() {
    assert_eq!(
        classify("GET", "/items/special/parts/exact"),
        ("exactPart", NoRetry)
    );
    assert_eq!(classify("GET", "/items/special/parts"), ("-", Idempotent));
}

#[test]
fn mixed_segments_in_match_order() {
    // More literal bytes first: `.tar.gz` (7) before `.` (1).
    assert_eq!(classify("GET", "/files/x.tar.gz"), ("tarball", Idempotent));
    assert_eq!(classify("GET", "/files/x.json"), ("nameExt", Idempotent));
    // The same number of bytes: a literal piece sorts before a parameter piece.
    assert_eq!(
        classify("GET", "/files/report.tar.gz"),
        ("report", Idempotent)
    );
    // Every split is tried: `x.json.json` matches `{name}.{ext}`.
    assert_eq!(
        classify("GET", "/files/x.json.json"),
        ("nameExt", Idempotent)
    );
    // A parameter piece covers at least one character.
    assert_eq!(classify("GET", "/files/v2"), ("version", Idempotent));
    assert_eq!(classify("GET", "/files/v"), ("-", Idempotent));
    assert_eq!(classify("GET", "/files/.json"), ("-", Idempotent));
    assert_eq!(classify("GET", "/files/x."), ("-", Idempotent));
    // Literal pieces compare by UTF-8 bytes (code points), not UTF-16 code units: U+FF61
    // sorts before U+1F600, whose UTF-16 surrogates come first.
    assert_eq!(
        classify("GET", "/emoji/a\u{ff61}zb\u{1f600}c"),
        ("halfwidth", Idempotent)
    );
    assert_eq!(classify("GET", "/emoji/a\u{1f600}c"), ("grin", Idempotent));
}

#[test]
fn percent_decoding() {
    assert_eq!(classify("GET", "/caf\u{e9}"), ("cafe", Idempotent));
    assert_eq!(classify("GET", "/caf%c3%a9"), ("cafe", Idempotent));
    // Not UTF-8 once decoded: kept as it is, so it does not match.
    assert_eq!(classify("GET", "/caf%E9"), ("-", Idempotent));
    // An encoded slash stays inside its segment.
    assert_eq!(classify("GET", "/a%2Fb"), ("slash", Idempotent));
    assert_eq!(classify("GET", "/a%2fb"), ("slash", Idempotent));
    assert_eq!(classify("GET", "/a/b"), ("-", Idempotent));
    // `%` without two hex digits is kept; decoded segments are matched by parameters too.
    assert_eq!(classify("GET", "/items/%zz"), ("getItem", Idempotent));
    assert_eq!(classify("GET", "/items/%41"), ("getItem", Idempotent));
    assert_eq!(classify("GET", "/items/speci%61l"), ("special", Idempotent));
    assert_eq!(
        classify("GET", "/files/x%2Etar.gz"),
        ("tarball", Idempotent)
    );
}

#[test]
fn trailing_slash_query_and_fragment() {
    assert_eq!(classify("GET", "/items/"), ("listItems", Idempotent));
    assert_eq!(classify("GET", "/items?x=1#y"), ("listItems", Idempotent));
    assert_eq!(classify("GET", "/items/#y"), ("listItems", Idempotent));
    // Only one trailing slash is removed; an empty segment matches no parameter.
    assert_eq!(classify("GET", "/items//"), ("-", Idempotent));
    assert_eq!(classify("GET", "/search?mode=x"), ("search", Idempotent));
    assert_eq!(classify("POST", "/files/a.b"), ("(no id)", NonReplayable));
}

#[test]
fn base_path() {
    assert_eq!(classify("GET", "/api/items"), ("listItems", Idempotent));
    assert_eq!(classify("GET", "/api"), ("root", Idempotent));
    assert_eq!(classify("GET", "/api/"), ("root", Idempotent));
    assert_eq!(classify("GET", "/api?q"), ("root", Idempotent));
    assert_eq!(classify("GET", ""), ("root", Idempotent));
    assert_eq!(classify("GET", "/apiary"), ("-", Idempotent));
    // Paths that never had the base path work too.
    assert_eq!(classify("GET", "/items"), ("listItems", Idempotent));
}

#[test]
fn methods() {
    assert_eq!(classify("get", "/items"), ("listItems", Idempotent));
    assert_eq!(classify("pOsT", "/items"), ("createItem", NonReplayable));
    assert_eq!(classify("POST", "/keyed"), ("keyed", Keyed));
    // The path matches, the method does not: the method default.
    assert_eq!(classify("PUT", "/items"), ("-", Idempotent));
    assert_eq!(classify("patch", "/items"), ("-", NonReplayable));
    assert_eq!(classify("query", "/nothing"), ("-", Idempotent));
    assert_eq!(classify("GETS", "/items"), ("-", NonReplayable));
    assert_eq!(classify("", "/items"), ("-", NonReplayable));
    // Only ASCII letters are upper-cased.
    assert_eq!(classify("get\u{17f}", "/items"), ("-", NonReplayable));
}

#[test]
fn first_operation_keeps_its_route_and_method() {
    assert_eq!(classify("GET", "/items/7"), ("getItem", Idempotent));
}

#[test]
fn lookup_by_operation_id() {
    let op = TABLE.operation_by_id("getItem").expect("listed");
    assert_eq!((op.method, op.path), ("GET", "/items/{id}"));
    assert!(TABLE.operation_by_id("nope").is_none());
    assert!(TABLE.operation_by_id("").is_none());
    assert_eq!(
        TABLE
            .operation_by_id("keyed")
            .and_then(|op| op.idempotency_header),
        Some("Idempotency-Key")
    );
}

#[test]
fn patterns_and_the_safe_list() {
    let pattern = |i: usize| OPERATIONS[i].pattern();
    assert_eq!(pattern(0), "^/items/?$");
    assert_eq!(pattern(6), r"^/files/[^/]+\.[^/]+/?$");
    assert_eq!(pattern(8), "^/files/v[^/]+/?$");
    // Literals as written, not decoded.
    assert_eq!(pattern(10), "^/caf%C3%A9/?$");
    assert_eq!(pattern(13), "^/$");
    assert_eq!(pattern(15), "^/search/?$");
    assert_eq!(pattern(18), r"^/files/[^/]+\.[^/]+/?$");
    // The safe list: non_replayable and keyed operations, in table order.
    let list: Vec<(usize, &str, Option<&str>)> = TABLE
        .non_replayable_operations()
        .iter()
        .map(|e| (e.index, e.method, e.idempotency_header))
        .collect();
    assert_eq!(
        list,
        [
            (1, "POST", None),
            (12, "POST", Some("Idempotency-Key")),
            (14, "GET", None),
            (18, "POST", None),
        ]
    );
    let safe = |i: usize| OPERATIONS[i].safe_pattern();
    assert_eq!(
        safe(12),
        "^/(?:k|%6[Bb])(?:e|%65)(?:y|%79)(?:e|%65)(?:d|%64)/?$"
    );
    assert_eq!(
        safe(18),
        r"^/(?:f|%66)(?:i|%69)(?:l|%6[Cc])(?:e|%65)(?:s|%73)/[^/]+(?:\.|%2[Ee])[^/]+/?$"
    );
    // Literals decoded, each character also as its encoded UTF-8; a decoded `/` only encoded.
    assert_eq!(
        safe(10),
        "^/(?:c|%63)(?:a|%61)(?:f|%66)(?:\u{e9}|%[Cc]3%[Aa]9)/?$"
    );
    assert_eq!(safe(11), "^/(?:a|%61)%2[Ff](?:b|%62)/?$");
    assert_eq!(safe(13), "^//?$");
    assert_eq!(
        safe(8),
        "^/(?:f|%66)(?:i|%69)(?:l|%6[Cc])(?:e|%65)(?:s|%73)/(?:v|%76)[^/]+/?$"
    );
    let syntax = Operation {
        route: r"/a.b+c*d?e(f)g|h[i]j{k}l^m$n\o",
        ..OPERATIONS[0]
    };
    assert_eq!(
        syntax.pattern(),
        r"^/a\.b\+c\*d\?e\(f\)g\|h\[i\]j[^/]+l\^m\$n\\o/?$"
    );
}

#[test]
fn an_empty_table_gives_method_defaults() {
    static EMPTY: OperationTable = OperationTable::new("", &[]);
    let c = EMPTY.classify("DELETE", "/anything");
    assert_eq!((c.operation, c.class), (None, Idempotent));
    assert_eq!(EMPTY.classify("POST", "/").class, NonReplayable);
    assert!(EMPTY.non_replayable_operations().is_empty());
}

/// Literal segments of every length from 1 to 19 bytes, at offsets that put their ends on every
/// position of an 8-byte word, found as written, percent-encoded and with a query after them:
/// the lookup hashes a request segment eight bytes at a time where it lies, a literal of the
/// table whole.
#[test]
fn literal_segments_of_every_length() {
    let routes: Vec<String> = (1..20)
        .map(|n| {
            let word: String = "abcdefghijklmnopqrs".chars().take(n).collect();
            format!("/{word}/x{word}/{{id}}/{word}")
        })
        .collect();
    let routes: &'static [String] = Box::leak(routes.into_boxed_slice());
    let operations: Vec<Operation> = routes
        .iter()
        .map(|route| op("GET", route, None, NoRetry))
        .collect();
    let table: &'static OperationTable = Box::leak(Box::new(OperationTable::new(
        "",
        Box::leak(operations.into_boxed_slice()),
    )));
    for (i, route) in routes.iter().enumerate() {
        let word = &route[1..route.find("/x").unwrap()];
        let encoded = word.bytes().fold(String::new(), |mut out, b| {
            let _ = std::fmt::Write::write_fmt(&mut out, format_args!("%{b:02x}"));
            out
        });
        for path in [
            format!("/{word}/x{word}/7/{word}"),
            format!("/{word}/x{word}/seven/{word}?q=/a"),
            format!("{word}/x{word}/{word}{word}/{word}/#f"),
            format!("/{encoded}/x{word}/7/{encoded}"),
            format!("/{word}/x{encoded}/7/{word}/"),
        ] {
            let found = table.classify("GET", &path).operation;
            assert_eq!(
                found.map(|op| op.route),
                Some(route.as_str()),
                "{path} ({i})"
            );
        }
        for path in [
            format!("/{word}/x{word}/7/{word}z"),
            format!("/{word}z/x{word}/7/{word}"),
            format!("/{word}/{word}/7/{word}"),
            format!("/{word}/x{word}//{word}"),
        ] {
            assert_eq!(table.classify("GET", &path).operation, None, "{path}");
        }
    }
}
