package retrypolicy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"reflect"
	"slices"
	"testing"
)

// row is an operation of a hand-written table; route and path are the same.
func row(method, path, id string, class ReplayClass) operationRow {
	return operationRow{method: method, route: path, path: path, operationID: id, hasOperationID: id != "", class: class}
}

// classified is the operationId a request classifies as under a, or "-" when it matches none.
func classified(a *api, method, path string) string {
	c := a.classify(method, path)
	if !c.Matched {
		return "-"
	}
	return c.Operation.OperationID
}

func expectRoutes(t *testing.T, a *api, cases map[string]string) {
	t.Helper()
	for path, want := range cases {
		if got := classified(a, "GET", path); got != want {
			t.Errorf("GET %q: got %s, want %s", path, got, want)
		}
	}
}

func TestLiteralBeatsParameter(t *testing.T) {
	a := newAPI("", []operationRow{
		row("GET", "/sandboxes/{id}", "getSandbox", ClassIdempotent),
		row("GET", "/sandboxes/templates", "listTemplates", ClassIdempotent),
	})
	expectRoutes(t, a, map[string]string{
		"/sandboxes/templates": "listTemplates",
		"/sandboxes/abc":       "getSandbox",
		"/sandboxes/":          "-",
		"/sandboxes":           "-",
	})
}

func TestBacktracksWhenALiteralBranchDeadEnds(t *testing.T) {
	a := newAPI("", []operationRow{
		row("GET", "/a/b/c", "literal", ClassIdempotent),
		row("GET", "/a/{x}/d", "param", ClassIdempotent),
		row("GET", "/a/{x}.json/e", "mixed", ClassIdempotent),
	})
	expectRoutes(t, a, map[string]string{
		"/a/b/c":      "literal",
		"/a/b/d":      "param",
		"/a/b.json/e": "mixed",
		"/a/b.json/d": "param",
		"/a/b/e":      "-",
	})
}

func TestMixedSegmentsMatchInTheirSortedOrder(t *testing.T) {
	a := newAPI("", []operationRow{
		row("GET", "/files/{name}.{ext}", "nameExt", ClassIdempotent),
		row("GET", "/files/{name}.tar.gz", "tarball", ClassIdempotent),
		row("GET", "/files/v{version}", "version", ClassIdempotent),
		row("GET", "/files/{id}", "param", ClassIdempotent),
	})
	expectRoutes(t, a, map[string]string{
		"/files/x.tar.gz":      "tarball", // more literal bytes first
		"/files/x.zip":         "nameExt",
		"/files/v2":            "version",
		"/files/xv2":           "param", // v{version} must start with v
		"/files/x.json.json":   "nameExt",
		"/files/.zip":          "param", // a parameter covers at least one character
		"/files/vx.tar.gz":     "tarball",
		"/files/%2E%2E.tar.gz": "tarball",
	})
}

func TestMixedOrderComparesBytesAndPutsLiteralsFirst(t *testing.T) {
	lit := func(s string) piece { return piece{text: s} }
	param := piece{param: true}
	keys := [][]piece{
		{param, lit("\U0001F600")},        // 0: 4 literal bytes
		{param, lit("\uFF61"), param},     // 1: 3
		{lit("a"), param, lit("bc")},      // 2: 3
		{param, lit("abc")},               // 3: 3
		{lit("ab"), param},                // 4: 2
		{param, lit("xy")},                // 5: 2
		{lit("\u00e9"), param},            // 6: 2
		{param, lit("\U0001F600"), param}, // 7: 4
	}
	sorted := slices.Clone(keys)
	slices.SortStableFunc(sorted, compareMixed)
	// More literal bytes first; then piece by piece: a literal before a parameter, literals
	// by their UTF-8 bytes ("abc" before U+FF61, "ab" before U+00E9), and a list that is a
	// prefix of the other first.
	want := [][]piece{keys[0], keys[7], keys[2], keys[3], keys[1], keys[4], keys[6], keys[5]}
	if !reflect.DeepEqual(sorted, want) {
		t.Errorf("sorted mixed keys:\n got %v\nwant %v", sorted, want)
	}
	// Code point order, not UTF-16: U+FF61 sorts before U+1F600, whose UTF-16 form starts
	// with the surrogate 0xD83D.
	if compareMixed([]piece{param, lit("\uFF61x")}, []piece{param, lit("\U0001F600")}) >= 0 {
		t.Error("U+FF61 must sort before U+1F600")
	}
	// Mixed segments equal but for their parameter names share one child.
	a := newAPI("", []operationRow{
		row("GET", "/f/{a}.{b}", "first", ClassIdempotent),
		row("GET", "/f/{c}.{d}/x", "second", ClassIdempotent),
	})
	if len(a.root.literals["f"].mixed) != 1 {
		t.Error("equivalent mixed segments share one child")
	}
}

func TestPercentDecoding(t *testing.T) {
	a := newAPI("", []operationRow{
		row("GET", "/caf%C3%A9", "encodedRoute", ClassIdempotent),
		row("GET", "/na%C3%AFve/{x}", "naive", ClassIdempotent),
		row("GET", "/bad/%FF", "invalidUTF8", ClassIdempotent),
		row("GET", "/a%2Fb", "encodedSlash", ClassIdempotent),
		row("GET", "/pct/{x}", "pct", ClassIdempotent),
	})
	expectRoutes(t, a, map[string]string{
		"/café":        "encodedRoute",
		"/caf%c3%a9":   "encodedRoute",
		"/naïve/1":     "naive",
		"/bad/%FF":     "invalidUTF8", // not UTF-8 once decoded: kept as written
		"/a%2Fb":       "encodedSlash",
		"/a/b":         "-",
		"/pct/%":       "pct",
		"/pct/%zz":     "pct",
		"/pct/%2":      "pct",
		"/pct/100%25":  "pct",
		"/caf%C3%A9/x": "-",
	})
	for in, want := range map[string]string{
		"%41%42": "AB", "%4": "%4", "%zz": "%zz", "%": "%", "a%2fb": "a/b", "%FF": "%FF",
		"%C3%A9": "é", "%C3": "%C3", "plain": "plain", "%%41": "%A",
	} {
		if got := percentDecode(in); got != want {
			t.Errorf("percentDecode(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTrailingSlashBasePathQueryAndMethod(t *testing.T) {
	a := newAPI("/v1", []operationRow{
		row("GET", "/", "root", ClassIdempotent),
		row("GET", "/items/", "items", ClassIdempotent),
		row("POST", "/items", "createItem", ClassNonReplayable),
		row("GET", "/a//b", "emptySegment", ClassIdempotent),
	})
	expectRoutes(t, a, map[string]string{
		"/v1":             "root",
		"/v1/":            "root",
		"":                "root",
		"/":               "root",
		"/v1/items":       "items",
		"/v1/items/":      "items",
		"/items/":         "items", // the base path already stripped
		"/v1/items//":     "-",
		"/v10/items":      "-",
		"/v1/items?x=1/":  "items",
		"/v1/items#frag":  "items",
		"/v1/items/?q":    "items",
		"/v1/a//b":        "emptySegment",
		"/v1/a/b":         "-",
		"/v1/v1/items":    "-",
		"/v1/items/extra": "-",
	})
	if got := classified(a, "post", "/v1/items"); got != "createItem" {
		t.Errorf("lower-case post: got %s", got)
	}
	c := a.classify("PATCH", "/v1/items")
	if c.Matched || c.Class != ClassNonReplayable {
		t.Errorf("PATCH with no operation: %+v", c)
	}
	for method, want := range map[string]ReplayClass{
		"get": ClassIdempotent, "Head": ClassIdempotent, "OPTIONS": ClassIdempotent, "trace": ClassIdempotent,
		"PUT": ClassIdempotent, "delete": ClassIdempotent, "query": ClassIdempotent,
		"POST": ClassNonReplayable, "PATCH": ClassNonReplayable, "CONNECT": ClassNonReplayable, "": ClassNonReplayable,
		"gét": ClassNonReplayable,
	} {
		if got := a.classify(method, "/nowhere").Class; got != want {
			t.Errorf("method default of %q: got %s, want %s", method, got, want)
		}
	}
}

func TestFirstOperationClaimingARouteWins(t *testing.T) {
	a := newAPI("", []operationRow{
		row("GET", "/t/{a}", "first", ClassIdempotent),
		row("GET", "/t/{b}/", "second", ClassNoRetry),
	})
	expectRoutes(t, a, map[string]string{"/t/x": "first"})
	if index, ok := a.byID["second"]; !ok || a.operations[index].Class != ClassNoRetry {
		t.Error("the second operation can still be looked up by its operationId")
	}
}

func TestPatterns(t *testing.T) {
	for route, want := range map[string]string{
		"/":                             `^/$`,
		"":                              `^/$`,
		"/files/{name}.{ext}/v{n}/raw/": `^/files/[^/]+\.[^/]+/v[^/]+/raw/?$`,
		"/regex/.+*^$|()[]\\d/{n}":      `^/regex/\.\+\*\^\$\|\(\)\[\]\\d/[^/]+/?$`,
		"/percent/%41/{p}":              `^/percent/%41/[^/]+/?$`,
		"/caf\u00e9/x":                  "^/caf\u00e9/x/?$",
		"/a//b":                         `^/a//b/?$`,
	} {
		if got := routePattern(parseRoute(route)); got != want {
			t.Errorf("pattern of %q: got %q, want %q", route, got, want)
		}
	}
}

func TestServerDelayHTTPDates(t *testing.T) {
	const now = 784111777000 // Sun, 06 Nov 1994 08:49:37 GMT
	for value, want := range map[string]int64{
		"Sun, 06 Nov 1994 08:49:47 GMT":  10000, // IMF-fixdate
		"Sunday, 06-Nov-94 08:49:47 GMT": 10000, // RFC 850
		"Sun Nov  6 08:49:47 1994":       10000, // asctime, space and one digit
		"Sun Nov 06 08:49:47 1994":       10000, // asctime, two digits
		"Wed, 06 Nov 1994 08:49:47 GMT":  10000, // the day name is not checked against the date
		"Sun, 06 Nov 1994 08:49:27 GMT":  0,     // past
		"Sun, 06 Nov 1994 08:49:60 GMT":  23000, // second 60
		"7":                              7000,
		" \t7\t ":                        7000,
		"-3":                             0,
	} {
		got, ok := ServerDelay(value, "", now)
		if !ok || got != want {
			t.Errorf("Retry-After %q: got %d, %v; want %d", value, got, ok, want)
		}
	}
	for _, value := range []string{
		"Sun Nov 6 08:49:47 1994", "Sun, 06 Nov 1994 08:49:47 gmt", "Sun, 6 Nov 1994 08:49:47 GMT",
		"Sunday, 06-Nov-1994 08:49:47 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Wed, 29 Feb 1995 00:00:00 GMT",
		"Sun,  06 Nov 1994 08:49:47 GMT", "7.5", "+7", "", "soon", "Funday, 06-Nov-94 08:49:47 GMT",
	} {
		if got, ok := ServerDelay(value, "", now); ok {
			t.Errorf("Retry-After %q: got %d, want it ignored", value, got)
		}
	}
	// RFC 850 years: the century of now's year, minus 100 when more than 50 years ahead.
	const in2024 = 1704067200000 // 2024-01-01T00:00:00Z
	if got, _ := ServerDelay("Wednesday, 01-Jan-75 00:00:00 GMT", "", in2024); got != 0 {
		t.Errorf("year 75 seen from 2024 is 1975 (past): got %d", got)
	}
	if got, _ := ServerDelay("Tuesday, 31-Dec-74 00:00:00 GMT", "", in2024); got == 0 {
		t.Error("year 74 seen from 2024 is 2074 (ahead)")
	}
	// retry-after-ms wins when valid; its fraction is dropped; 16 digits are too large.
	if got, ok := ServerDelay("9", "1500.9", now); !ok || got != 1500 {
		t.Errorf("retry-after-ms 1500.9: got %d", got)
	}
	if got, ok := ServerDelay("2", "soon", now); !ok || got != 2000 {
		t.Errorf("invalid retry-after-ms falls back: got %d", got)
	}
	if got, ok := ServerDelay("", "1000000000000000", now); !ok || got != math.MaxInt64 {
		t.Errorf("16 digits: got %d", got)
	}
}

func TestBackoffForEachJitter(t *testing.T) {
	policy := Policy{MaxRetries: 10, InitialBackoffMs: 500, MaxBackoffMs: 30000, Multiplier: 2, RetryableStatuses: []int{503}}
	want := map[Jitter][]int64{
		JitterFull:  {250, 500, 1000, 2000, 4000, 8000, 15000, 15000},
		JitterEqual: {375, 750, 1500, 3000, 6000, 12000, 22500, 22500},
		JitterNone:  {500, 1000, 2000, 4000, 8000, 16000, 30000, 30000},
		"unknown":   {250, 500, 1000, 2000, 4000, 8000, 15000, 15000},
	}
	for jitter, delays := range want {
		policy.Jitter = jitter
		for retries, delay := range delays {
			d := Decide(policy, Input{Class: ClassIdempotent, Outcome: StatusOutcome(503, "", ""), RetriesUsed: retries, Random: 0.5})
			if !d.Retry || d.DelayMs != delay || d.Reason != ReasonRetryableStatus {
				t.Errorf("%s jitter, %d retries: got %+v, want %d", jitter, retries, d, delay)
			}
		}
	}
	policy.Jitter = JitterDecorrelated
	for previous, delay := range map[int64]int64{0: 1000, 400: 850, 20000: 30000} {
		d := Decide(policy, Input{Class: ClassIdempotent, Outcome: StatusOutcome(503, "", ""), PreviousDelayMs: previous, Random: 0.5})
		if d.DelayMs != delay {
			t.Errorf("decorrelated after %d: got %d, want %d", previous, d.DelayMs, delay)
		}
	}
	// Equal jitter reaches its bound when random rounds it up.
	policy.Jitter = JitterEqual
	d := Decide(policy, Input{Class: ClassIdempotent, Outcome: FailedOutcome(FailureConnect), Random: math.Nextafter(1, 0)})
	if d.DelayMs != 500 {
		t.Errorf("equal jitter with random just below 1: got %d, want 500", d.DelayMs)
	}
}

func TestDecideExamples(t *testing.T) {
	p := Policy{MaxRetries: 3, InitialBackoffMs: 500, MaxBackoffMs: 30000, Multiplier: 2, Jitter: JitterFull,
		RetryableStatuses: []int{408, 425, 429, 500, 502, 503, 504}, RejectedStatuses: []int{429}, RetryAfterCapMs: 60000}
	const now = 784111777000
	for _, c := range []struct {
		class   ReplayClass
		key     bool
		outcome Outcome
		retries int
		want    Decision
	}{
		{ClassNonReplayable, false, StatusOutcome(503, "", ""), 0, Decision{Reason: ReasonNotReplayable}},
		{ClassNonReplayable, false, StatusOutcome(429, "", ""), 0, Decision{true, 250, ReasonRejectedStatus}},
		{ClassNonReplayable, false, FailedOutcome(FailureConnect), 2, Decision{true, 1000, ReasonConnectFailure}},
		{ClassNonReplayable, false, FailedOutcome(FailureTransport), 0, Decision{Reason: ReasonNotReplayable}},
		{ClassKeyed, true, FailedOutcome(FailureTransport), 0, Decision{true, 250, ReasonTransportFailure}},
		{ClassKeyed, false, StatusOutcome(502, "", ""), 0, Decision{Reason: ReasonNotReplayable}},
		{ClassIdempotent, false, StatusOutcome(503, "7", ""), 1, Decision{true, 7000, ReasonRetryableStatus}},
		{ClassIdempotent, false, StatusOutcome(503, "120", ""), 0, Decision{Reason: ReasonRetryAfterOverCap}},
		{ClassIdempotent, false, StatusOutcome(500, "", ""), 3, Decision{Reason: ReasonExhausted}},
		{ClassIdempotent, false, StatusOutcome(404, "", ""), 0, Decision{Reason: ReasonStatusNotRetryable}},
		{ClassNoRetry, false, FailedOutcome(FailureConnect), 0, Decision{Reason: ReasonNoRetryOperation}},
		{ClassIdempotent, false, FailedOutcome(FailureAborted), 0, Decision{Reason: ReasonAborted}},
		{ClassIdempotent, false, Outcome{Failure: FailureConnect, RetryAfter: "120"}, 0, Decision{true, 250, ReasonConnectFailure}},
	} {
		got := Decide(p, Input{Class: c.class, HasIdempotencyKey: c.key, Outcome: c.outcome, RetriesUsed: c.retries, NowMs: now, Random: 0.5})
		if got != c.want {
			t.Errorf("%s %+v: got %+v, want %+v", c.class, c.outcome, got, c.want)
		}
	}
	p.DeadlineMs = 1000
	got := Decide(p, Input{Class: ClassIdempotent, Outcome: StatusOutcome(503, "", ""), ElapsedMs: 900, Random: 0.5})
	if got != (Decision{Reason: ReasonDeadline}) {
		t.Errorf("deadline: got %+v", got)
	}
}

// The package's own tables (operations.go) through the exported functions.
func TestPackageTables(t *testing.T) {
	c := Classify("get", "/v1/sandboxes/templates?page=2")
	if !c.Matched || c.Operation.OperationID != "listSandboxTemplates" || c.Class != ClassIdempotent {
		t.Errorf("Classify: %+v", c)
	}
	op, ok := OperationByID("createSandboxV2")
	if !ok || op.Class != ClassKeyed || op.IdempotencyHeader != "Idempotency-Key" || op.Pattern != `^/v2/sandboxes/?$` {
		t.Errorf("OperationByID: %+v", op)
	}
	if _, ok := OperationByID(""); ok {
		t.Error("an operation without an operationId cannot be looked up")
	}
	ops := Operations()
	if len(ops) != len(operationTable) {
		t.Fatalf("Operations: %d, want %d", len(ops), len(operationTable))
	}
	for i, row := range operationTable {
		if ops[i].Method != row.method || ops[i].Path != row.path || ops[i].Class != row.class {
			t.Errorf("Operations()[%d] = %+v, from %+v", i, ops[i], row)
		}
	}
	var listed []string
	for _, route := range NonReplayableOperations() {
		listed = append(listed, route.Method+" "+route.Pattern.String())
		if !route.Pattern.MatchString("/sandboxes/") && route.Pattern.String() == `^/sandboxes/?$` {
			t.Error("a pattern accepts one trailing slash")
		}
	}
	want := []string{`POST ^/sandboxes/?$`, `POST ^/sandboxes/[^/]+/snapshots/?$`}
	if !slices.Equal(listed, want) {
		t.Errorf("NonReplayableOperations: %v, want %v", listed, want)
	}
}

// Issue 9: whatever a caller does to what it got, the package answers as before.
func TestCallersCannotChangeTheTables(t *testing.T) {
	before := Classify("GET", "/v1/sandboxes/abc")
	got := Classify("GET", "/v1/sandboxes/abc")
	got.Operation.OperationID = "changed"
	got.Operation.Class = ClassNoRetry
	got.Class = ClassNoRetry
	if again := Classify("GET", "/v1/sandboxes/abc"); again != before {
		t.Errorf("Classify after changing its result: %+v, want %+v", again, before)
	}

	op, _ := OperationByID("getSandbox")
	op.Class, op.Method = ClassNoRetry, "DELETE"
	if again, _ := OperationByID("getSandbox"); again != before.Operation {
		t.Errorf("OperationByID after changing its result: %+v", again)
	}

	ops := Operations()
	ops[0] = Operation{Method: "GET", Path: "/changed", Class: ClassNoRetry}
	_ = append(ops[:1], Operation{})
	if again := Operations(); again[0].Path != operationTable[0].path || len(again) != len(operationTable) {
		t.Errorf("Operations after changing its result: %+v", again[0])
	}
	if again := Classify("GET", "/v1/"); !again.Matched || again.Operation.Path != "/" {
		t.Errorf("Classify after changing Operations: %+v", again)
	}

	routes := NonReplayableOperations()
	routes[0].Method = "GET"
	routes[0].Pattern.Longest()
	routes = append(routes[:0], NonReplayableRoute{})
	again := NonReplayableOperations()
	if again[0].Method != "POST" || again[0].Pattern == routes[0].Pattern || again[0].Pattern == NonReplayableOperations()[0].Pattern {
		t.Errorf("NonReplayableOperations shares state between calls: %+v", again[0])
	}
}

// Classify's result holds values only: no pointer, slice or map could reach shared state.
func TestClassificationHoldsNoReferences(t *testing.T) {
	var check func(reflect.Type, string)
	check = func(typ reflect.Type, at string) {
		switch typ.Kind() {
		case reflect.Struct:
			for i := 0; i < typ.NumField(); i++ {
				check(typ.Field(i).Type, at+"."+typ.Field(i).Name)
			}
		case reflect.String, reflect.Bool, reflect.Int, reflect.Int64, reflect.Float64:
		default:
			t.Errorf("%s is a %s, which can share state", at, typ.Kind())
		}
	}
	check(reflect.TypeOf(Classification{}), "Classification")
}

// No exported package-level variable in any file of the package: tables stay behind functions.
func TestNoExportedVariables(t *testing.T) {
	files, err := parser.ParseDir(token.NewFileSet(), ".", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range files {
		for name, file := range pkg.Files {
			for _, decl := range file.Decls {
				gen, ok := decl.(*ast.GenDecl)
				if !ok || gen.Tok != token.VAR {
					continue
				}
				for _, spec := range gen.Specs {
					for _, ident := range spec.(*ast.ValueSpec).Names {
						if ident.IsExported() {
							t.Errorf("%s: exported variable %s", name, ident.Name)
						}
					}
				}
			}
		}
	}
}

// A plain request path costs no allocation.
func TestClassifyDoesNotAllocate(t *testing.T) {
	Classify("GET", "/") // builds the tables once
	allocs := testing.AllocsPerRun(100, func() {
		Classify("GET", "/v1/sandboxes/abc/snapshots?x=1")
		Classify("DELETE", "/nowhere/at/all/")
	})
	if allocs != 0 {
		t.Errorf("Classify allocates %v times per call", allocs)
	}
}

func BenchmarkClassify(b *testing.B) {
	for i := 0; i < b.N; i++ {
		Classify("GET", "/v1/sandboxes/abc/logs")
	}
}
