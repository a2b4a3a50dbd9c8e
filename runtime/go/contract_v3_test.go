package retrypolicy

import (
	"net/http"
	"strings"
	"testing"
)

// Contract v3 (docs/contract.md sections 3 and 6 to 11) beyond what its vectors show: the
// scanner fed in any pieces, and decisions read whole (every output field at once).

// scanAll feeds stream to a new scanner in pieces of size bytes (all at once when size is 0).
func scanAll(stream string, size int) (int64, string, string, bool) {
	var s EventStreamScanner
	b := []byte(stream)
	if size == 0 {
		size = len(b) + 1
	}
	for len(b) > 0 {
		n := min(size, len(b))
		if written, err := s.Write(b[:n]); written != n || err != nil {
			panic("EventStreamScanner.Write must take every byte")
		}
		b = b[n:]
	}
	retry, ok := s.Retry()
	return s.CompleteBytes(), s.LastEventID(), retry, ok
}

func TestEventStreamScannerPieces(t *testing.T) {
	for _, c := range []struct {
		stream, id, retry string
		complete          int64
		hasRetry          bool
	}{
		{"id: 1\ndata: a\n\nid: 2\ndata: b", "1", "", 15, false},
		{"retry: 3000\r\nid: 7\r\ndata: x\r\n\r\nid: 8\r\n", "7", "3000", 31, true},
		// A CR at the cut may be the first half of a CRLF: the event is not complete yet.
		{"id: a\r\rid: b\r", "a", "", 7, false},
		{"\xef\xbb\xbfid: 1\n\n: ping\n", "1", "", 10, false},
		// A data line as long as a model's answer is passed through, never kept.
		{"data: " + strings.Repeat("x", 70000) + "\nid: 9\n\nid\n", "9", "", 70014, false},
		{"id: \xff\xe2\x82\n\n", "\ufffd\ufffd", "", 9, false},
		{"id: \xf0\x90\x80A\xed\xa0\x80\n\n", "\ufffdA\ufffd\ufffd\ufffd", "", 13, false},
		// As the reference reads it, a leading mark is complete: it belongs to no event.
		{"\xef\xbb\xbfdata: x", "", "", 3, false},
	} {
		for _, size := range []int{0, 1, 2, 3, 5} {
			complete, id, retry, hasRetry := scanAll(c.stream, size)
			if complete != c.complete || id != c.id || retry != c.retry || hasRetry != c.hasRetry {
				t.Errorf("%q in pieces of %d: got %d %q %q %v, want %d %q %q %v", c.stream[:min(len(c.stream), 30)], size,
					complete, id, retry, hasRetry, c.complete, c.id, c.retry, c.hasRetry)
			}
		}
	}
	// Byte by byte equals whole on every cut of a stream that has every kind of line end.
	stream := "\xef\xbb\xbfretry: 5\r\nid: x\r\rdata: y\n\n:c\rid: z\nretry: 7\r\n\r\nevent: e\n"
	for cut := 0; cut <= len(stream); cut++ {
		wc, wi, wr, wh := scanAll(stream[:cut], 0)
		gc, gi, gr, gh := scanAll(stream[:cut], 1)
		if wc != gc || wi != gi || wr != gr || wh != gh {
			t.Errorf("cut %d: whole %d %q %q %v, byte by byte %d %q %q %v", cut, wc, wi, wr, wh, gc, gi, gr, gh)
		}
	}
	if complete, id, retry, _ := scanAll(stream, 1); complete != int64(len(stream))-9 || id != "z" || retry != "7" {
		t.Errorf("the whole stream: %d %q %q", complete, id, retry)
	}
}

func TestDecideThrottled(t *testing.T) {
	p := DefaultPolicy()
	p.Jitter = JitterNone
	p.ThrottlingInitialBackoffMs, p.HasThrottlingInitialBackoff = 1000, true
	p.BudgetThrottlingCost, p.HasBudgetThrottlingCost = 2, true
	p.ThrottlingStatuses = []int{429, 503}
	p.RetryableStatuses = []int{500, 503}
	in := func(status int, retries int64, timedOut bool) Input {
		return Input{Class: ClassIdempotent, Outcome: StatusOutcome(status, "", ""), RetriesUsed: retries, Random: 0.5,
			BudgetTokens: 100, HasBudgetTokens: true, TimedOut: timedOut}
	}
	for i, c := range []struct {
		in   Input
		want Decision
	}{
		// The throttling base grows as the usual one does, and the throttling cost is paid,
		// even after a timeout.
		{in(429, 0, false), Decision{Retry: true, DelayMs: 1000, Reason: ReasonRejectedStatus, BudgetTokens: 98, Throttled: true}},
		{in(503, 1, true), Decision{Retry: true, DelayMs: 2000, Reason: ReasonRetryableStatus, BudgetTokens: 98, Throttled: true}},
		{in(500, 0, true), Decision{Retry: true, DelayMs: 500, Reason: ReasonRetryableStatus, BudgetTokens: 90}},
		{in(500, 0, false), Decision{Retry: true, DelayMs: 500, Reason: ReasonRetryableStatus, BudgetTokens: 95}},
		// A stop is never throttled.
		{Input{Class: ClassNoRetry, Outcome: StatusOutcome(429, "", ""), Random: 0.5}, Decision{Reason: ReasonNoRetryOperation}},
	} {
		if got := mustDecide(t, p, c.in); got != c.want {
			t.Errorf("case %d: got %+v, want %+v", i, got, c.want)
		}
	}
	// Without the throttling keys a throttled retry is a v2 retry, flagged.
	d := DefaultPolicy()
	d.Jitter = JitterNone
	if got := mustDecide(t, d, in(429, 0, false)); got != (Decision{Retry: true, DelayMs: 500, Reason: ReasonRejectedStatus, BudgetTokens: 95, Throttled: true}) {
		t.Errorf("default throttling: %+v", got)
	}
	p.ThrottlingInitialBackoffMs = 40000
	if _, err := Decide(p, in(429, 0, false)); invalidKey(t, err) != "policy.max_backoff_ms" {
		t.Errorf("a throttling base above the cap: %v", err)
	}
}

func TestDecideDroppedStream(t *testing.T) {
	p := DefaultPolicy()
	p.Jitter = JitterNone
	dropped := func(class ReplayClass, resumable, lastID bool, retry string) Input {
		o := FailedOutcome(FailureDropped)
		// Headers of the committed response are not the stream's delay.
		o.RetryAfter = "2"
		return Input{Class: class, Outcome: o, Resumable: resumable, HasLastEventID: lastID, StreamRetry: retry, Random: 0.5}
	}
	for i, c := range []struct {
		in   Input
		want Decision
	}{
		{dropped(ClassNonReplayable, true, true, "3000"), Decision{Retry: true, DelayMs: 3000, Reason: ReasonStreamResume}},
		{dropped(ClassNonReplayable, true, true, "3s"), Decision{Retry: true, DelayMs: 500, Reason: ReasonStreamResume}},
		{dropped(ClassIdempotent, true, false, ""), Decision{Retry: true, DelayMs: 500, Reason: ReasonStreamResume}},
		// Without a last event id a resume is a full replay, which only a replayable request may have.
		{dropped(ClassNonReplayable, true, false, ""), Decision{Reason: ReasonStreamNotResumable}},
		{dropped(ClassIdempotent, false, true, ""), Decision{Reason: ReasonStreamNotResumable}},
		{dropped(ClassNoRetry, true, true, ""), Decision{Reason: ReasonNoRetryOperation}},
		{dropped(ClassIdempotent, true, true, "61000"), Decision{Reason: ReasonRetryAfterOverCap, ServerDelayMs: 61000}},
		{dropped(ClassIdempotent, true, true, "1234567890123456"), Decision{Reason: ReasonRetryAfterOverCap, ServerDelayMs: 1<<53 - 1}},
	} {
		if got := mustDecide(t, p, c.in); got != c.want {
			t.Errorf("case %d: got %+v, want %+v", i, got, c.want)
		}
	}
}

func TestPreconditionsAndProblemTypes(t *testing.T) {
	header := http.Header{}
	header.Set("If-None-Match", `"abc"`)
	if HasPrecondition(header) {
		t.Error("If-None-Match with entity tags protects GETs only")
	}
	header.Add("if-none-match", " *\t")
	header.Set("If-Match", "*")
	if !HasPrecondition(header) {
		t.Error("If-None-Match: * is a precondition")
	}
	p := DefaultPolicy()
	p.RetryProblemTypes = []string{"https://example.com/busy"}
	put := Input{Class: ClassNonReplayable, HasPrecondition: true, Outcome: StatusOutcome(412, "", ""), RetriesUsed: 1, Random: 0.5}
	if got := mustDecide(t, p, put); got.Reason != ReasonPreconditionFailedAfterReplay {
		t.Errorf("412 after a replay: %+v", got)
	}
	put.Outcome, put.ProblemType = StatusOutcome(400, "", ""), "https://example.com/busy"
	if got := mustDecide(t, p, put); got.Reason != ReasonProblemTypeRetry || !got.Retry {
		t.Errorf("a retry problem type on a conditional request: %+v", got)
	}
	put.HasPrecondition = false
	if got := mustDecide(t, p, put); got.Reason != ReasonStatusNotRetryable {
		t.Errorf("a retry problem type on a request that is not replayable: %+v", got)
	}
	quota := []byte(`{"title": "over", "type": "` + ProblemTypeQuotaExceeded + `", "detail": {"a": [1, -0.5e+3, null]}}`)
	kind, ok := ProblemTypeOf("Application/Problem+JSON; charset=utf-8", quota, true)
	if !ok || kind != ProblemTypeQuotaExceeded {
		t.Fatalf("ProblemTypeOf: %q %v", kind, ok)
	}
	in := Input{Class: ClassIdempotent, Outcome: StatusOutcome(429, "", "1"), ProblemType: kind, Random: 0.5}
	if got := mustDecide(t, p, in); got != (Decision{Reason: ReasonProblemTypeStop}) {
		t.Errorf("a quota problem: %+v", got)
	}
	deep := func(n int) []byte {
		return []byte(`{"type":"t","x":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + `}`)
	}
	for _, c := range []struct {
		body string
		ok   bool
	}{
		{string(deep(64)), true},
		{string(deep(65)), false},
		{`{"type":"t","typ\u0065":"u"}`, false},
		{`{"type":"a\ud83d\ude00"}`, true},
		{`{"type":"\ud83d"}`, false},
		{`{"type":1}`, false},
		{`{"type":"t"} x`, false},
		{`{"type":"t","n":01}`, false},
	} {
		if _, ok := ProblemTypeOf("application/problem+json", []byte(c.body), true); ok != c.ok {
			t.Errorf("%.40s: got %v, want %v", c.body, ok, c.ok)
		}
	}
	if _, ok := ProblemTypeOf("application/json", quota, true); ok {
		t.Error("another media type")
	}
	if _, ok := ProblemTypeOf("application/problem+json", quota, false); ok {
		t.Error("a prefix of the body")
	}
	for format, want := range map[KeyFormat]string{KeyFormatUUID: "8e03978e-0000-4000-8000-000000000000", KeyFormatSFString: `"8e03978e-0000-4000-8000-000000000000"`} {
		if got, err := IdempotencyKeyValue(format, "8e03978e-0000-4000-8000-000000000000"); got != want || err != nil {
			t.Errorf("%s: %q %v", format, got, err)
		}
	}
	if _, err := IdempotencyKeyValue("UUID", "x"); invalidKey(t, err) != "policy.idempotency_key_format" {
		t.Errorf("an unknown key format: %v", err)
	}
}
