package retrypolicy

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// row is an operation of a hand-written table; route and path are the same.
func row(method, path, id string, class ReplayClass) OperationRow {
	return OperationRow{Method: method, Route: path, Path: path, OperationID: id, HasOperationID: id != "", Class: class}
}

// classified is the operationId a request classifies as under a, or "-" when it matches none.
func classified(a *api, method, path string) string {
	return classifiedWith(a, "", method, path)
}

// classifiedWith is classified with a base path.
func classifiedWith(a *api, base, method, path string) string {
	c := a.classify(base, UnknownMethodDefault, method, path)
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
	a := newAPI([]OperationRow{
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
	a := newAPI([]OperationRow{
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
	a := newAPI([]OperationRow{
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
	a := newAPI([]OperationRow{
		row("GET", "/f/{a}.{b}", "first", ClassIdempotent),
		row("GET", "/f/{c}.{d}/x", "second", ClassIdempotent),
	})
	if len(a.root.literals["f"].mixed) != 1 {
		t.Error("equivalent mixed segments share one child")
	}
}

func TestPercentDecoding(t *testing.T) {
	a := newAPI([]OperationRow{
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
	a := newAPI([]OperationRow{
		row("GET", "/", "root", ClassIdempotent),
		row("GET", "/items/", "items", ClassIdempotent),
		row("POST", "/items", "createItem", ClassNonReplayable),
		row("GET", "/a//b", "emptySegment", ClassIdempotent),
	})
	for path, want := range map[string]string{
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
	} {
		if got := classifiedWith(a, "/v1", "GET", path); got != want {
			t.Errorf("GET %q: got %s, want %s", path, got, want)
		}
	}
	if got := classifiedWith(a, "/v1", "post", "/v1/items"); got != "createItem" {
		t.Errorf("lower-case post: got %s", got)
	}
	c := a.classify("/v1", UnknownMethodDefault, "PATCH", "/v1/items")
	if c.Matched || c.Class != ClassNonReplayable {
		t.Errorf("PATCH with no operation: %+v", c)
	}
	for method, want := range map[string]ReplayClass{
		"get": ClassIdempotent, "Head": ClassIdempotent, "OPTIONS": ClassIdempotent, "trace": ClassIdempotent,
		"PUT": ClassIdempotent, "delete": ClassIdempotent, "query": ClassIdempotent,
		"POST": ClassNonReplayable, "PATCH": ClassNonReplayable, "CONNECT": ClassNonReplayable, "": ClassNonReplayable,
		"gét": ClassNonReplayable,
	} {
		if got := a.classify("/v1", UnknownMethodDefault, method, "/nowhere").Class; got != want {
			t.Errorf("method default of %q: got %s, want %s", method, got, want)
		}
	}
}

func TestFirstOperationClaimingARouteWins(t *testing.T) {
	a := newAPI([]OperationRow{
		row("GET", "/t/{a}", "first", ClassIdempotent),
		row("GET", "/t/{b}/", "second", ClassNoRetry),
	})
	expectRoutes(t, a, map[string]string{"/t/x": "first"})
	if index, ok := a.byID["second"]; !ok || a.operations[index].Class != ClassNoRetry {
		t.Error("the second operation can still be looked up by its operationId")
	}
}

func TestSafePatterns(t *testing.T) {
	for route, want := range map[string]string{
		"/":                  `^//?$`,
		"":                   `^//?$`,
		"/a/{id}.json/v{n}/": `^/(?:a|%61)/[^/]+(?:\.|%2[Ee])(?:j|%6[Aa])(?:s|%73)(?:o|%6[Ff])(?:n|%6[Ee])/(?:v|%76)[^/]+/?$`,
		"/a%2Fb":             `^/(?:a|%61)%2[Ff](?:b|%62)/?$`,
		"/%FF":               `^/(?:%|%25)(?:F|%46)(?:F|%46)/?$`,
		"/caf\u00e9":         "^/(?:c|%63)(?:a|%61)(?:f|%66)(?:\u00e9|%[Cc]3%[Aa]9)/?$",
		"/a//b":              `^/(?:a|%61)//(?:b|%62)/?$`,
		"/$":                 `^/(?:\$|%24)/?$`,
	} {
		if got := safePattern(parseRoute(route)); got != want {
			t.Errorf("pattern of %q: got %q, want %q", route, got, want)
		}
	}
	// The list agrees with Classify on encoded requests.
	re := regexp.MustCompile(safePattern(parseRoute("/api-keys")))
	for path, want := range map[string]bool{
		"/api-keys": true, "/api-k%65ys": true, "/api-k%65ys/": true, "/API-keys": false,
		"/api-keys//": false, "/api-keys\n": false, "/api%2dkeys": true,
	} {
		if got := re.MatchString(path); got != want {
			t.Errorf("safe list on %q: got %v", path, got)
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

// validPolicy is the contract's default policy with the v2 keys neutral (no budget).
func validPolicy() Policy {
	p := DefaultPolicy()
	p.RetryOnlyWithServerDelay, p.KeyInFlightStatuses, p.KeyReusedStatuses = nil, nil, nil
	p.ServerDirectiveHeaders = nil
	return p
}

// mustDecide is Decide that fails the test on an error.
func mustDecide(t *testing.T, p Policy, in Input) Decision {
	t.Helper()
	d, err := Decide(p, in)
	if err != nil {
		t.Fatalf("Decide(%+v, %+v): %v", p, in, err)
	}
	return d
}

func TestBackoffForEachJitter(t *testing.T) {
	policy := validPolicy()
	policy.MaxRetries = 10
	policy.RetryableStatuses = []int{503}
	want := map[Jitter][]int64{
		JitterFull:  {250, 500, 1000, 2000, 4000, 8000, 15000, 15000},
		JitterEqual: {375, 750, 1500, 3000, 6000, 12000, 22500, 22500},
		JitterNone:  {500, 1000, 2000, 4000, 8000, 16000, 30000, 30000},
	}
	for jitter, delays := range want {
		policy.Jitter = jitter
		for retries, delay := range delays {
			d := mustDecide(t, policy, Input{Class: ClassIdempotent, Outcome: StatusOutcome(503, "", ""), RetriesUsed: int64(retries), Random: 0.5})
			if !d.Retry || d.DelayMs != delay || d.Reason != ReasonRetryableStatus {
				t.Errorf("%s jitter, %d retries: got %+v, want %d", jitter, retries, d, delay)
			}
		}
	}
	policy.Jitter = JitterDecorrelated
	for previous, delay := range map[int64]int64{0: 1000, 400: 850, 20000: 30000} {
		d := mustDecide(t, policy, Input{Class: ClassIdempotent, Outcome: StatusOutcome(503, "", ""), PreviousDelayMs: previous, Random: 0.5})
		if d.DelayMs != delay {
			t.Errorf("decorrelated after %d: got %d, want %d", previous, d.DelayMs, delay)
		}
	}
	// Equal jitter reaches its bound when random rounds it up.
	policy.Jitter = JitterEqual
	d := mustDecide(t, policy, Input{Class: ClassIdempotent, Outcome: FailedOutcome(FailureConnect), Random: math.Nextafter(1, 0)})
	if d.DelayMs != 500 {
		t.Errorf("equal jitter with random just below 1: got %d, want 500", d.DelayMs)
	}
}

func TestDecideExamples(t *testing.T) {
	p := validPolicy()
	const now = 784111777000
	for _, c := range []struct {
		class   ReplayClass
		key     bool
		outcome Outcome
		retries int64
		want    Decision
	}{
		{ClassNonReplayable, false, StatusOutcome(503, "", ""), 0, Decision{Reason: ReasonNotReplayable}},
		{ClassNonReplayable, false, StatusOutcome(429, "", ""), 0, Decision{Retry: true, DelayMs: 250, Reason: ReasonRejectedStatus, Throttled: true}},
		{ClassNonReplayable, false, FailedOutcome(FailureConnect), 2, Decision{Retry: true, DelayMs: 1000, Reason: ReasonConnectFailure}},
		{ClassNonReplayable, false, FailedOutcome(FailureTransport), 0, Decision{Reason: ReasonNotReplayable}},
		{ClassKeyed, true, FailedOutcome(FailureTransport), 0, Decision{Retry: true, DelayMs: 250, Reason: ReasonTransportFailure}},
		{ClassKeyed, false, StatusOutcome(502, "", ""), 0, Decision{Reason: ReasonNotReplayable}},
		{ClassIdempotent, false, StatusOutcome(503, "7", ""), 1, Decision{Retry: true, DelayMs: 7000, Reason: ReasonRetryableStatus}},
		{ClassIdempotent, false, StatusOutcome(503, "120", ""), 0, Decision{Reason: ReasonRetryAfterOverCap, ServerDelayMs: 120000}},
		{ClassIdempotent, false, StatusOutcome(500, "", ""), 3, Decision{Reason: ReasonExhausted}},
		{ClassIdempotent, false, StatusOutcome(404, "", ""), 0, Decision{Reason: ReasonStatusNotRetryable}},
		{ClassNoRetry, false, FailedOutcome(FailureConnect), 0, Decision{Reason: ReasonNoRetryOperation}},
		{ClassIdempotent, false, FailedOutcome(FailureAborted), 0, Decision{Reason: ReasonAborted}},
		// A refused certificate stops before every other rule, even for an idempotent call.
		{ClassIdempotent, false, FailedOutcome(FailureCertificate), 0, Decision{Reason: ReasonCertificateFailure}},
		{ClassNoRetry, false, FailedOutcome(FailureCertificate), 3, Decision{Reason: ReasonCertificateFailure}},
		{ClassIdempotent, false, Outcome{Failure: FailureConnect, RetryAfter: "120"}, 0, Decision{Retry: true, DelayMs: 250, Reason: ReasonConnectFailure}},
	} {
		got := mustDecide(t, p, Input{Class: c.class, HasIdempotencyKey: c.key, Outcome: c.outcome, RetriesUsed: c.retries, NowMs: now, Random: 0.5})
		if got != c.want {
			t.Errorf("%s %+v: got %+v, want %+v", c.class, c.outcome, got, c.want)
		}
	}
	p.DeadlineMs, p.HasDeadline = 1000, true
	got := mustDecide(t, p, Input{Class: ClassIdempotent, Outcome: StatusOutcome(503, "", ""), ElapsedMs: 900, Random: 0.5})
	if got != (Decision{Reason: ReasonDeadline}) {
		t.Errorf("deadline: got %+v", got)
	}
}

// The v2 examples of docs/contract.md section 4, with the default policy.
func TestDecideV2Examples(t *testing.T) {
	p := DefaultPolicy()
	clamp := DefaultPolicy()
	clamp.RetryAfterOverCap = OverCapClamp
	said := func(status int, directive string) Outcome {
		o := StatusOutcome(status, "", "")
		o.Directive = directive
		return o
	}
	budget := func(tokens int64) Input {
		return Input{BudgetTokens: tokens, HasBudgetTokens: true}
	}
	for i, c := range []struct {
		p    Policy
		in   Input
		want Decision
	}{
		{p, Input{Class: ClassIdempotent, Outcome: said(503, " FALSE\t")}, Decision{Reason: ReasonServerSaidNo}},
		{p, Input{Class: ClassIdempotent, Outcome: said(404, "true")}, Decision{Retry: true, DelayMs: 250, Reason: ReasonServerSaidYes}},
		{p, Input{Class: ClassIdempotent, Outcome: said(404, "tru\u0065\u0301")}, Decision{Reason: ReasonStatusNotRetryable}},
		{p, Input{Class: ClassNonReplayable, Outcome: said(404, "true")}, Decision{Reason: ReasonStatusNotRetryable}},
		{p, Input{Class: ClassNonReplayable, Outcome: said(429, "false")}, Decision{Reason: ReasonServerSaidNo}},
		{p, Input{Class: ClassIdempotent, Outcome: said(503, "fal\u017fe")}, Decision{Retry: true, DelayMs: 250, Reason: ReasonRetryableStatus}},
		{p, Input{Class: ClassKeyed, HasIdempotencyKey: true, Outcome: said(409, "")}, Decision{Retry: true, DelayMs: 250, Reason: ReasonKeyInFlight}},
		{p, Input{Class: ClassKeyed, HasIdempotencyKey: true, Outcome: said(422, "true")}, Decision{Reason: ReasonKeyReused}},
		{p, Input{Class: ClassKeyed, Outcome: said(409, "")}, Decision{Reason: ReasonStatusNotRetryable}},
		{p, Input{Class: ClassIdempotent, Outcome: StatusOutcome(503, "120", "")}, Decision{Reason: ReasonRetryAfterOverCap, ServerDelayMs: 120000}},
		{clamp, Input{Class: ClassIdempotent, Outcome: StatusOutcome(503, "120", "")}, Decision{Retry: true, DelayMs: 60000, Reason: ReasonRetryableStatus}},
		{clamp, Input{Class: ClassIdempotent, Outcome: StatusOutcome(503, "", "99999999999999999")}, Decision{Retry: true, DelayMs: 60000, Reason: ReasonRetryableStatus}},
	} {
		c.in.NowMs, c.in.Random = 784111777000, 0.5
		if got := mustDecide(t, c.p, c.in); got != c.want {
			t.Errorf("case %d: got %+v, want %+v", i, got, c.want)
		}
	}
	for i, c := range []struct {
		in   Input
		want Decision
	}{
		{budget(500), Decision{Retry: true, DelayMs: 250, Reason: ReasonConnectFailure, BudgetTokens: 495}},
		{budget(10), Decision{Retry: true, DelayMs: 250, Reason: ReasonConnectFailure, BudgetTokens: 0}},
		{budget(4), Decision{Reason: ReasonBudgetExhausted, BudgetTokens: 4}},
	} {
		c.in.Class, c.in.Outcome, c.in.Random, c.in.TimedOut = ClassIdempotent, FailedOutcome(FailureConnect), 0.5, i == 1
		if got := mustDecide(t, p, c.in); got != c.want {
			t.Errorf("budget case %d: got %+v, want %+v", i, got, c.want)
		}
	}
	seed := validPolicy()
	seed.RetryOnlyWithServerDelay = []int{429}
	if got := mustDecide(t, seed, Input{Class: ClassIdempotent, Outcome: StatusOutcome(429, "soon", ""), Random: 0.5}); got.Reason != ReasonNoServerDelay {
		t.Errorf("429 without a usable delay: %+v", got)
	}
}

// invalidKey is the key of the *InvalidInput err holds, or "" when err is nil.
func invalidKey(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var e *InvalidInput
	if !errors.As(err, &e) {
		t.Fatalf("%v is not an *InvalidInput", err)
	}
	return e.Key
}

func TestValidation(t *testing.T) {
	valid := Input{Class: ClassIdempotent, Outcome: StatusOutcome(503, "", ""), Random: 0.5}
	for want, change := range map[string]func(*Policy, *Input){
		"policy.max_retries":                  func(p *Policy, _ *Input) { p.MaxRetries = 101 },
		"policy.initial_backoff_ms":           func(p *Policy, _ *Input) { p.InitialBackoffMs = 0 },
		"policy.multiplier":                   func(p *Policy, _ *Input) { p.Multiplier = math.NaN() },
		"policy.jitter":                       func(p *Policy, _ *Input) { p.Jitter = "Full" },
		"policy.deadline_ms":                  func(p *Policy, _ *Input) { p.DeadlineMs = 1000 }, // without HasDeadline
		"policy.server_directive_headers":     func(p *Policy, _ *Input) { p.ServerDirectiveHeaders = []string{"x should"} },
		"policy.retry_after_over_cap":         func(p *Policy, _ *Input) { p.RetryAfterOverCap = "" },
		"policy.unknown_operation_class":      func(p *Policy, _ *Input) { p.UnknownOperationClass = "idempotent" },
		"policy.budget_success_refund":        func(p *Policy, _ *Input) { p.BudgetSuccessRefund = -1 },
		"policy.max_backoff_ms":               func(p *Policy, _ *Input) { p.InitialBackoffMs, p.MaxBackoffMs = 2000, 1000 },
		"input.class":                         func(_ *Policy, in *Input) { in.Class, in.Random = "", math.NaN() },
		"input.outcome":                       func(_ *Policy, in *Input) { in.Outcome = FailedOutcome("") },
		"input.status":                        func(_ *Policy, in *Input) { in.Outcome.Status, in.RetriesUsed = 600, -1 },
		"input.retries_used":                  func(_ *Policy, in *Input) { in.RetriesUsed = 1 << 53 },
		"input.previous_delay_ms":             func(_ *Policy, in *Input) { in.PreviousDelayMs = -1 },
		"input.random":                        func(_ *Policy, in *Input) { in.Outcome, in.Random = FailedOutcome(FailureAborted), 1 },
		"input.budget_tokens":                 func(_ *Policy, in *Input) { in.BudgetTokens, in.HasBudgetTokens = 501, true },
		"policy.retry_only_with_server_delay": func(p *Policy, in *Input) { p.RetryOnlyWithServerDelay, in.Random = []int{99}, -1 },
	} {
		p, in := DefaultPolicy(), valid
		change(&p, &in)
		_, err := Decide(p, in)
		if got := invalidKey(t, err); got != want {
			t.Errorf("got %q, want %q (%v)", got, want, err)
		}
	}
	if _, err := Decide(DefaultPolicy(), valid); err != nil {
		t.Errorf("the default policy and a valid input: %v", err)
	}
	for name, want := range map[string]string{"Idempotent": "input.class", "keyed ": "input.class", "": "input.class"} {
		if _, err := ParseReplayClass(name); invalidKey(t, err) != want {
			t.Errorf("ParseReplayClass(%q): %v", name, err)
		}
	}
	if c, err := ParseReplayClass("no_retry"); c != ClassNoRetry || err != nil {
		t.Errorf("ParseReplayClass(no_retry): %v %v", c, err)
	}
	for _, c := range []struct {
		key string
		err error
	}{
		{"policy.jitter", second(ParseJitter("none "))},
		{"", second(ParseJitter("decorrelated"))},
		{"input.outcome", second(ParseFailureKind("timeout"))},
		{"", second(ParseFailureKind("aborted"))},
		{"policy.retry_after_over_cap", second(ParseOverCapMode("Clamp"))},
		{"", second(ParseOverCapMode("clamp"))},
		{"policy.unknown_operation_class", second(ParseUnknownClass("idempotent"))},
		{"", second(ParseUnknownClass("no_retry"))},
		{"input.budget_kind", second(ParseBudgetKind("slow"))},
		{"", second(ParseBudgetKind("timeout"))},
	} {
		if got := invalidKey(t, c.err); got != c.key {
			t.Errorf("got %q, want %q", got, c.key)
		}
	}
}

func second[T any](_ T, err error) error {
	return err
}

func TestClassifierWithABase(t *testing.T) {
	for _, c := range []struct {
		base, method, target, want string
		class                      ReplayClass
	}{
		{"/proxy/v1", "GET", "/proxy/v1/sandboxes/sb1/logs", "streamSandboxLogs", ClassNoRetry},
		{"https://api.eu.sandbox.example/v2", "POST", "/v2/sandboxes", "createSandbox", ClassNonReplayable},
		{"https://gw.example/proxy/v1/?x#y", "GET", "HTTPS://other:1/proxy/v1/sandboxes?q", "listSandboxes", ClassIdempotent},
		{"", "POST", "http://h/v2/sandboxes", "createSandboxV2", ClassKeyed},
		{"", "GET", "sandboxes", "listSandboxes", ClassIdempotent},
		{"", "GET", "http://h", "root", ClassIdempotent},
		{"", "GET", "1http://h/sandboxes", "-", ClassIdempotent},
		{"proxy", "GET", "/proxy/health", "", ClassIdempotent},
	} {
		classifier, err := NewClassifier(c.base, UnknownMethodDefault)
		if err != nil {
			t.Fatal(err)
		}
		got, err := classifier.Classify(c.method, c.target)
		id := "-"
		if got.Matched {
			id = got.Operation.OperationID
		}
		if err != nil || id != c.want || got.Class != c.class {
			t.Errorf("%q %s %q: got %s %s %v", c.base, c.method, c.target, id, got.Class, err)
		}
	}
	if got, _ := Classify("GET", "/proxy/v1/sandboxes/sb1/logs"); got.Matched || got.Class != ClassIdempotent {
		t.Errorf("the spec's base knows no proxy: %+v", got)
	}
	if got, _ := Classify("POST", "http://h/sandboxes/x/snapshots"); got.Operation.OperationID != "snapshotSandbox" {
		t.Errorf("a full URL: %+v", got)
	}
	noRetry, _ := DefaultClassifier(UnknownNoRetry)
	if got, _ := noRetry.Classify("GET", "/other-service/items"); got.Matched || got.Class != ClassNoRetry {
		t.Errorf("unknown_operation_class no_retry: %+v", got)
	}
	if got, _ := noRetry.Classify("GET", "/v1/sandboxes"); got.Class != ClassIdempotent {
		t.Errorf("a matched operation keeps its class: %+v", got)
	}
	if _, err := NewClassifier("/v\xed\xa0\x80", UnknownMethodDefault); invalidKey(t, err) != "input.base" {
		t.Errorf("a base with an encoded surrogate: %v", err)
	}
	if _, err := NewClassifier("/v1", "idempotent"); invalidKey(t, err) != "policy.unknown_operation_class" {
		t.Errorf("an unknown class: %v", err)
	}
	if _, err := Classify("G\xffT", "/"); invalidKey(t, err) != "input.method" {
		t.Errorf("a method that is not UTF-8: %v", err)
	}
	if _, err := Classify("GET", "/sandboxes?x=\xed\xb0\x80"); invalidKey(t, err) != "input.path" {
		t.Errorf("a target that is not UTF-8: %v", err)
	}
}

func TestHasIdempotencyKeyAndTheRetryEvent(t *testing.T) {
	op, _ := OperationByID("createSandboxV2")
	for _, c := range []struct {
		header map[string][]string
		want   bool
	}{
		{map[string][]string{"Idempotency-Key": {"k"}}, true},
		{map[string][]string{"IDEMPOTENCY-KEY": {" \t", "k"}}, true},
		{map[string][]string{"idempotency-key": {" \t"}}, false},
		{map[string][]string{"Idempotency-Kelvin": {"k"}}, false},
		{map[string][]string{"Idempotency-\u212aey": {"k"}}, false},
		{nil, false},
	} {
		if got := op.HasIdempotencyKey(c.header); got != c.want {
			t.Errorf("%v: got %v", c.header, got)
		}
	}
	plain, _ := OperationByID("createSandbox")
	if plain.HasIdempotencyKey(map[string][]string{"Idempotency-Key": {"k"}}) || (Operation{}).HasIdempotencyKey(map[string][]string{"": {"k"}}) {
		t.Error("an operation without an idempotency header has no key")
	}
	d := Decision{Retry: true, DelayMs: 250, Reason: ReasonConnectFailure}
	c, _ := Classify("post", "/v1/sandboxes/sb1/snapshots?x=1")
	want := RetryEvent{Attempt: 3, Reason: ReasonConnectFailure, DelayMs: 250, Method: "POST",
		PathTemplate: "/sandboxes/{sandboxID}/snapshots", OperationID: "snapshotSandbox", HasOperationID: true}
	if got := NewRetryEvent(c, "post", 2, d); got != want {
		t.Errorf("event: %+v", got)
	}
	c, _ = Classify("patch", "/v1/nowhere")
	if got := NewRetryEvent(c, "patch", 0, d); got != (RetryEvent{Attempt: 1, Reason: ReasonConnectFailure, DelayMs: 250, Method: "PATCH"}) {
		t.Errorf("event of an unknown request: %+v", got)
	}
}

func TestBudget(t *testing.T) {
	p := DefaultPolicy()
	tokens, err := BudgetNew(p)
	if tokens != 500 || err != nil {
		t.Fatalf("BudgetNew: %d %v", tokens, err)
	}
	for i := 0; i < 100; i++ {
		var allowed bool
		if allowed, tokens, err = BudgetTryAcquire(p, tokens, BudgetRetry); !allowed || err != nil {
			t.Fatalf("retry %d refused", i)
		}
	}
	if allowed, after, _ := BudgetTryAcquire(p, tokens, BudgetRetry); allowed || after != 0 {
		t.Errorf("the 101st retry: %v %d", allowed, after)
	}
	if tokens, _ = BudgetRecordSuccess(p, tokens, 5); tokens != 5 {
		t.Errorf("a success after a retry gives its cost back: %d", tokens)
	}
	if tokens, _ = BudgetRecordSuccess(p, tokens, 0); tokens != 6 {
		t.Errorf("a success without retries gives the refund: %d", tokens)
	}
	if full, _ := BudgetRecordSuccess(p, 499, 10); full != 500 {
		t.Errorf("never above the capacity: %d", full)
	}
	off := DefaultPolicy()
	off.BudgetCapacity = 0
	if allowed, after, _ := BudgetTryAcquire(off, 0, BudgetTimeout); !allowed || after != 0 {
		t.Error("a disabled budget allows every retry")
	}
	for key, err := range map[string]error{
		"input.budget_tokens":    third(BudgetTryAcquire(p, 501, BudgetRetry)),
		"input.budget_kind":      third(BudgetTryAcquire(p, 5, "slow")),
		"input.budget_release":   second(BudgetRecordSuccess(p, 5, 1000001)),
		"policy.budget_capacity": second(BudgetNew(func() Policy { q := DefaultPolicy(); q.BudgetCapacity = -1; return q }())),
	} {
		if got := invalidKey(t, err); got != key {
			t.Errorf("got %q, want %q", got, key)
		}
	}
}

func third[A, B any](_ A, _ B, err error) error {
	return err
}

// K4: the budget cell is updated atomically under concurrent requests.
func TestBudgetCellIsAtomic(t *testing.T) {
	p := DefaultPolicy()
	p.BudgetCapacity = 100000
	b, err := NewBudget(p)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var granted atomic.Int64
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				d, err := b.Decide(Input{Class: ClassIdempotent, Outcome: FailedOutcome(FailureConnect), Random: 0.5, TimedOut: i%2 == 0})
				if err != nil {
					t.Error(err)
					return
				}
				if d.Retry {
					granted.Add(1)
				}
				if i%10 == 0 {
					if err := b.RecordSuccess(0); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	// 8000 retries, half costing 5 and half 10, and 800 refunds of 1: 100000 - 60000 + 800.
	if granted.Load() != 8000 || b.Tokens() != 40800 {
		t.Errorf("granted %d, tokens %d", granted.Load(), b.Tokens())
	}
	small, _ := NewBudget(DefaultPolicy())
	for i := 0; i < 100; i++ {
		if ok, _ := small.TryAcquire(BudgetRetry); !ok {
			t.Fatal("refused too early")
		}
	}
	if ok, _ := small.TryAcquire(BudgetRetry); ok || small.Tokens() != 0 {
		t.Error("an empty budget refuses")
	}
	if d, _ := small.Decide(Input{Class: ClassIdempotent, Outcome: FailedOutcome(FailureConnect), Random: 0.5}); d.Reason != ReasonBudgetExhausted {
		t.Errorf("Decide on an empty budget: %+v", d)
	}
	if _, err := NewBudget(Policy{}); err == nil {
		t.Error("an invalid policy makes no budget")
	}
}

// The package's own tables (operations.go) through the exported functions.
func TestPackageTables(t *testing.T) {
	c, err := Classify("get", "/v1/sandboxes/templates?page=2")
	if err != nil || !c.Matched || c.Operation.OperationID != "listSandboxTemplates" || c.Class != ClassIdempotent {
		t.Errorf("Classify: %+v %v", c, err)
	}
	op, ok := OperationByID("createSandboxV2")
	if !ok || op.Class != ClassKeyed || op.IdempotencyHeader != "Idempotency-Key" || op.Pattern != `^/(?:v|%76)(?:2|%32)/(?:s|%73)(?:a|%61)(?:n|%6[Ee])(?:d|%64)(?:b|%62)(?:o|%6[Ff])(?:x|%78)(?:e|%65)(?:s|%73)/?$` {
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
		if ops[i].Method != row.Method || ops[i].Path != row.Path || ops[i].Class != row.Class {
			t.Errorf("Operations()[%d] = %+v, from %+v", i, ops[i], row)
		}
	}
	var listed []string
	for _, route := range NonReplayableOperations() {
		listed = append(listed, route.Method+" "+route.IdempotencyHeader)
		if !route.Pattern.MatchString("/sandboxes/") && route.Method == "POST" && route.IdempotencyHeader == "" && route.Pattern.MatchString("/sandboxes") {
			t.Error("a pattern accepts one trailing slash")
		}
	}
	want := []string{"POST ", "POST ", "POST ", "POST Idempotency-Key"}
	if !slices.Equal(listed, want) {
		t.Errorf("NonReplayableOperations: %v, want %v", listed, want)
	}
	if routes := NonReplayableOperations(); !routes[0].Pattern.MatchString("/s%61ndboxes/") || routes[0].Pattern.MatchString("/sandboxes/x") {
		t.Errorf("the safe list matches encoded literals: %v", routes[0].Pattern)
	}
}

// Issue 9: whatever a caller does to what it got, the package answers as before.
func TestCallersCannotChangeTheTables(t *testing.T) {
	before, _ := Classify("GET", "/v1/sandboxes/abc")
	got, _ := Classify("GET", "/v1/sandboxes/abc")
	got.Operation.OperationID = "changed"
	got.Operation.Class = ClassNoRetry
	got.Class = ClassNoRetry
	if again, _ := Classify("GET", "/v1/sandboxes/abc"); again != before {
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
	if again := Operations(); again[0].Path != operationTable[0].Path || len(again) != len(operationTable) {
		t.Errorf("Operations after changing its result: %+v", again[0])
	}
	if again, _ := Classify("GET", "/v1/"); !again.Matched || again.Operation.Path != "/" {
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

	p := DefaultPolicy()
	p.RetryableStatuses[0], p.ServerDirectiveHeaders[0] = 200, "changed"
	if again := DefaultPolicy(); again.RetryableStatuses[0] != 408 || again.ServerDirectiveHeaders[0] != "x-should-retry" {
		t.Errorf("DefaultPolicy shares its lists: %+v", again)
	}
	b, _ := NewBudget(p)
	for i := range p.RetryableStatuses {
		p.RetryableStatuses[i] = 200
	}
	if d, _ := b.Decide(Input{Class: ClassIdempotent, Outcome: StatusOutcome(503, "", ""), Random: 0.5}); d.Reason != ReasonRetryableStatus {
		t.Errorf("a Budget keeps its own copy of the policy: %+v", d)
	}
}

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

// A plain request path costs no allocation, nor does a decision.
func TestClassifyAndDecideDoNotAllocate(t *testing.T) {
	_, _ = Classify("GET", "/") // builds the tables once
	classifier, _ := NewClassifier("https://gw.example/proxy/v1/", UnknownNoRetry)
	p := DefaultPolicy()
	in := Input{Class: ClassIdempotent, Outcome: StatusOutcome(503, "Sun, 06 Nov 1994 08:49:47 GMT", ""), NowMs: 784111777000, Random: 0.5, BudgetTokens: 500, HasBudgetTokens: true}
	allocs := testing.AllocsPerRun(100, func() {
		_, _ = Classify("GET", "/v1/sandboxes/abc/snapshots?x=1")
		_, _ = Classify("DELETE", "/nowhere/at/all/")
		_, _ = classifier.Classify("GET", "https://gw.example:8443/proxy/v1/sandboxes/abc#f")
		_, _ = Decide(p, in)
	})
	if allocs != 0 {
		t.Errorf("Classify and Decide allocate %v times per call", allocs)
	}
}

func BenchmarkClassify(b *testing.B) {
	for i := 0; i < b.N; i++ {
		_, _ = Classify("GET", "/v1/sandboxes/abc/logs")
	}
}

func BenchmarkDecide(b *testing.B) {
	p := DefaultPolicy()
	in := Input{Class: ClassIdempotent, Outcome: StatusOutcome(503, "", ""), Random: 0.5}
	for i := 0; i < b.N; i++ {
		_, _ = Decide(p, in)
	}
}

// TestClassifyAllocatesNothing checks issue 13's "no allocation per call": lower-case methods,
// relative targets, full URLs, percent-escapes (decoded on the stack), mixed segments,
// backtracking and unknown requests, through Classify and a configured Classifier.
func TestClassifyAllocatesNothing(t *testing.T) {
	a := newAPI([]OperationRow{
		row("GET", "/items", "listItems", ClassIdempotent),
		row("POST", "/items", "createItem", ClassNonReplayable),
		row("GET", "/items/special", "special", ClassIdempotent),
		row("GET", "/items/{id}", "getItem", ClassIdempotent),
		row("GET", "/items/{id}/parts/exact", "exactPart", ClassNoRetry),
		row("GET", "/files/{name}.{ext}", "nameExt", ClassIdempotent),
		row("GET", "/files/{name}.tar.gz", "tarball", ClassIdempotent),
		row("GET", "/files/v{version}", "version", ClassIdempotent),
		row("GET", "/caf%C3%A9", "cafe", ClassIdempotent),
		row("GET", "/a%2Fb", "slash", ClassIdempotent),
	})
	requests := [][2]string{
		{"get", "/items"},
		{"Get", "/items/special/parts/exact?x=1#frag"},
		{"delete", "/items/42/"},
		{"GET", "/caf%C3%A9"},
		{"GET", "/caf%E9"},
		{"get", "/a%2Fb"},
		{"GET", "/files/x%2Etar.gz"},
		{"GET", "/files/report.tar.gz"},
		{"GET", "/files/x.json.json"},
		{"GET", "/files/v2"},
		{"post", "items"},
		{"query", "/nothing/at/all"},
		{"PATCH", "/items"},
		{"GET", ""},
		{"GET", "https://h.example:8443/proxy/api/items/7?q=1"},
		{"GET", "/proxy/api/items/special"},
	}
	for _, base := range []string{"", "/proxy/api"} {
		found := 0
		allocs := testing.AllocsPerRun(100, func() {
			for _, r := range requests {
				if c := a.classify(base, UnknownNoRetry, r[0], r[1]); c.Matched {
					found++
				}
			}
		})
		if allocs != 0 {
			t.Errorf("base %q: classify allocated %v times per pass", base, allocs)
		}
		if found == 0 {
			t.Errorf("base %q: nothing matched", base)
		}
	}
	classifier, err := NewClassifier("https://gw.example/v1/", UnknownMethodDefault)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		for _, r := range requests {
			_, _ = Classify(r[0], r[1])
			_, _ = classifier.Classify(r[0], "/v1/sandboxes/abc/logs?x=1")
		}
	})
	if allocs != 0 {
		t.Errorf("Classify allocated %v times per pass", allocs)
	}
	// A percent-escaped segment longer than the buffer on the stack is decoded all the same.
	long := strings.Repeat("a", 2*decodeBuffer)
	b := newAPI([]OperationRow{row("GET", "/"+long+"/x", "long", ClassIdempotent)})
	for _, path := range []string{"/%61" + long[1:] + "/x", "/" + long[3:] + "%61%61%61/x"} {
		if got := classified(b, "GET", path); got != "long" {
			t.Errorf("GET %q: got %s, want long", path, got)
		}
	}
	if got := classified(b, "GET", "/%62"+long[1:]+"/x"); got != "-" {
		t.Errorf("a long escaped segment that differs: got %s", got)
	}
}

func TestInScope(t *testing.T) {
	for _, tc := range []struct {
		base, target string
		want         bool
	}{
		{"/v1", "https://other.example/v1", true},
		{"https://api.example/v1", "/v1/sandboxes", true},
		{"https://api.example/v1", "https://API.example:443/x", true},
		{"HTTPS://api.example", "https://api.example:0443", true},
		{"https://api.example", "http://api.example", false},
		{"https://api.example", "https://other.example/v1", false},
		{"https://u@api.example", "https://x@y@api.example?q", true},
		{"http://[::1]:80/", "http://[::1]/", true},
		{"http://[::1", "http://[::1", true},
		{"http://a:000", "http://a:0", true},
		{"foo://a", "foo://a:", true},
		{"foo://a", "foo://a:1", false},
		{"http://a.", "http://a", false},
		{"1http://a", "http://b", true},
	} {
		if got := InScope(tc.base, tc.target); got != tc.want {
			t.Errorf("InScope(%q, %q) = %v, want %v", tc.base, tc.target, got, tc.want)
		}
	}
}

// C3: an API's Classify gives a request no operation matches the class its policy's
// UnknownOperationClass names, as the module-level Classify of generated tables does.
func TestAPIClassifyReadsThePolicysUnknownClass(t *testing.T) {
	policy := DefaultPolicy()
	policy.UnknownOperationClass = UnknownNonReplayable
	api := NewAPI("/vol", policy, []OperationRow{row("GET", "/items", "listItems", ClassIdempotent)})
	if c, err := api.Classify("GET", "/vol/nowhere"); err != nil || c.Matched || c.Class != ClassNonReplayable {
		t.Errorf("unknown GET: %+v %v, want non_replayable", c, err)
	}
	if c, _ := api.Classify("GET", "/vol/items"); c.Class != ClassIdempotent {
		t.Errorf("a matched operation keeps its class: %+v", c)
	}
	if c, _ := Classify("GET", "/v1/nowhere"); c.Class != ClassIdempotent {
		t.Errorf("the package's policy says method_default: %+v", c)
	}
}

// A runtime serves any number of APIs: each *API classifies with its own rows, base path and
// policy, the package's tables (Tables) among them, and the zero Classifier knows no operations.
func TestAPIsAreValues(t *testing.T) {
	policy := DefaultPolicy()
	policy.MaxRetries = 7
	rows := []OperationRow{row("POST", "/sandboxes", "volumeSandbox", ClassIdempotent)}
	other := NewAPI("/vol", policy, rows)
	rows[0].Class = ClassNoRetry // NewAPI keeps its own copy
	policy.RetryableStatuses[0] = 599
	c, err := other.Classify("POST", "/vol/sandboxes")
	if err != nil || !c.Matched || c.Class != ClassIdempotent || c.Operation.OperationID != "volumeSandbox" {
		t.Errorf("the other API: %+v %v", c, err)
	}
	if c, _ := Classify("POST", "/v1/sandboxes"); c.Class != ClassNonReplayable || c.Operation.OperationID != "createSandbox" {
		t.Errorf("the package's API: %+v", c)
	}
	if c, _ := other.Classify("POST", "/v1/sandboxes"); c.Matched {
		t.Errorf("the other API matched the package's base path: %+v", c)
	}
	if p := other.DefaultPolicy(); p.MaxRetries != 7 || p.RetryableStatuses[0] != 408 || Tables().DefaultPolicy().MaxRetries != 3 {
		t.Errorf("policies: %+v", p)
	}
	p := other.DefaultPolicy()
	p.RetryableStatuses[0] = 1
	if other.DefaultPolicy().RetryableStatuses[0] != 408 {
		t.Error("DefaultPolicy shares its slices")
	}
	if _, ok := other.OperationByID("createSandbox"); ok || len(other.Operations()) != 1 || len(other.NonReplayableOperations()) != 0 {
		t.Error("the other API sees the package's operations")
	}
	if classifier, _ := other.NewClassifier("https://gw/p/vol/", UnknownNoRetry); classifier.BasePath() != "/p/vol" {
		t.Errorf("NewClassifier: %q", classifier.BasePath())
	}
	var zero Classifier
	if c, err := zero.Classify("GET", "/v1/sandboxes"); err != nil || c.Matched || c.Class != ClassIdempotent {
		t.Errorf("the zero Classifier: %+v %v", c, err)
	}
	if c, _ := zero.Classify("POST", "/v1/sandboxes"); c.Matched || c.Class != ClassNonReplayable {
		t.Errorf("the zero Classifier: %+v", c)
	}
}
