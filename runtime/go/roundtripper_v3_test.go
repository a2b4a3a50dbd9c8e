package retrypolicy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Contract v3's adapter parts (docs/contract.md section 12, X5-X8), against real servers on 127.0.0.1
// through a real http.Transport; the streams (X1-X4) are in roundtripper_stream_test.go.

// respond answers code with the Content-Type and the body given.
func respond(code int, contentType, body string) step {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

func TestAPreconditionMakesANonReplayableRequestReplayable(t *testing.T) {
	cases := []struct {
		name, field, value string
		arrivals           int
		reason             Reason
	}{
		// [X5] A replay of a conditional request that applied gets 412: reported as such.
		{"If-Match", "If-Match", `"v1"`, 2, ReasonPreconditionFailedAfterReplay},
		{"If-None-Match: *", "if-none-match", " * ", 2, ReasonPreconditionFailedAfterReplay},
		// If-Match: * holds again after the change: no precondition, one attempt.
		{"If-Match: *", "If-Match", "*", 1, ReasonNotReplayable},
		{"none", "X-Other", "1", 1, ReasonNotReplayable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, hangUp, status(412))
			var e events
			c, _ := client(t, &e)
			req := newRequest(t, context.Background(), "POST", s.URL+"/v1/sandboxes", strings.NewReader("{}"))
			req.Header[tc.field] = []string{tc.value}
			resp, err := c.Do(req)
			if resp != nil {
				_ = resp.Body.Close()
			}
			if got := len(s.arrivals()); got != tc.arrivals {
				t.Fatalf("%d arrivals, want %d (error %v)", got, tc.arrivals, err)
			}
			finish := e.finish(t)
			if finish.Reason != tc.reason || finish.Attempts != int64(tc.arrivals) {
				t.Errorf("finish %+v, want %s after %d", finish, tc.reason, tc.arrivals)
			}
			if tc.arrivals == 2 && (err != nil || resp.StatusCode != 412) {
				t.Errorf("got %v %v, want the 412", resp, err)
			}
		})
	}
}

func TestMintedKeysFollowTheKeyFormat(t *testing.T) {
	for _, format := range []KeyFormat{KeyFormatUUID, KeyFormatSFString} {
		t.Run(string(format), func(t *testing.T) {
			s := newServer(t, status(503), status(503), status(201))
			var e events
			p := fastPolicy()
			p.IdempotencyKeyFormat = format
			c, _ := client(t, &e, WithPolicy(p))
			req := newRequest(t, context.Background(), "POST", s.URL+"/v1/v2/sandboxes", strings.NewReader("{}"))
			if resp, _, err := do(t, c, req); err != nil || resp.StatusCode != 201 {
				t.Fatalf("got %v %v", resp, err)
			}
			arrivals := s.arrivals()
			first := arrivals[0].header.Get("Idempotency-Key")
			uuid := first
			if format == KeyFormatSFString {
				// [X7] An RFC 9651 String: the UUID in double quotes.
				if len(first) != 38 || first[0] != '"' || first[37] != '"' {
					t.Fatalf("key %q is not a quoted UUID", first)
				}
				uuid = first[1:37]
			}
			if !uuidV4.MatchString(uuid) {
				t.Fatalf("key %q", first)
			}
			for i, a := range arrivals {
				if got := a.header.Values("Idempotency-Key"); len(got) != 1 || got[0] != first {
					t.Errorf("arrival %d carries %q, want %q", i, got, first)
				}
			}
		})
	}

	// A caller's key is kept as written, whatever the format.
	s := newServer(t, status(503), status(201))
	p := fastPolicy()
	p.IdempotencyKeyFormat = KeyFormatSFString
	c, _ := client(t, &events{}, WithPolicy(p))
	req := newRequest(t, context.Background(), "POST", s.URL+"/v1/v2/sandboxes", strings.NewReader("{}"))
	req.Header.Set("Idempotency-Key", "k-1")
	if _, _, err := do(t, c, req); err != nil {
		t.Fatal(err)
	}
	for i, a := range s.arrivals() {
		if got := a.header.Get("Idempotency-Key"); got != "k-1" {
			t.Errorf("arrival %d carries %q", i, got)
		}
	}
}

func TestTheFinishCarriesTheRefusedServerDelay(t *testing.T) {
	s := newServer(t, status(503, "Retry-After", "120"), status(200))
	var e events
	c, _ := client(t, &e)
	resp, err := c.Do(newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil))
	if err != nil || resp.StatusCode != 503 {
		t.Fatalf("got %v %v", resp, err)
	}
	_ = resp.Body.Close()
	// [X8] The server's wait, for the SDK's "retry after" error.
	finish := e.finish(t)
	if finish.Reason != ReasonRetryAfterOverCap || finish.ServerDelayMs != 120000 || len(s.arrivals()) != 1 {
		t.Errorf("finish %+v, %d arrivals", finish, len(s.arrivals()))
	}
	if got, ok := FinishOf(resp, nil); !ok || got != finish {
		t.Errorf("FinishOf %+v %v, want %+v", got, ok, finish)
	}

	// A delay within the cap is waited, and not reported.
	s = newServer(t, status(503, "Retry-After", "0"), status(200))
	e = events{}
	c, _ = client(t, &e)
	if resp, _, err := do(t, c, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil)); err != nil || resp.StatusCode != 200 {
		t.Fatalf("got %v %v", resp, err)
	}
	if finish := e.finish(t); finish.ServerDelayMs != 0 {
		t.Errorf("finish %+v", finish)
	}
}

const quotaProblem = `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Quota exceeded","status":429}`

func TestProblemTypes(t *testing.T) {
	t.Run("stop", func(t *testing.T) {
		s := newServer(t, respond(429, "application/problem+json; charset=utf-8", quotaProblem), status(200))
		var e events
		c, _ := client(t, &e)
		resp, body, err := do(t, c, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil))
		if err != nil || resp.StatusCode != 429 || len(s.arrivals()) != 1 {
			t.Fatalf("got %v %v, %d arrivals", resp, err, len(s.arrivals()))
		}
		// [X6] The body read to decide is handed over whole.
		if body != quotaProblem {
			t.Errorf("body %q", body)
		}
		if finish := e.finish(t); finish.Reason != ReasonProblemTypeStop {
			t.Errorf("finish %+v", finish)
		}
	})
	t.Run("retry", func(t *testing.T) {
		s := newServer(t, respond(400, "application/problem+json", `{"type":"urn:x:busy"}`), status(200))
		var e events
		p := fastPolicy()
		p.RetryProblemTypes = []string{"urn:x:busy"}
		c, _ := client(t, &e, WithPolicy(p))
		resp, _, err := do(t, c, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil))
		if err != nil || resp.StatusCode != 200 || e.reasons() != "problem_type_retry/1" {
			t.Fatalf("got %v %v, events %s", resp, err, e.reasons())
		}
	})
	t.Run("a prefix has no type", func(t *testing.T) {
		// The type is in the first 64 KiB, but the body is longer: no problem type (Q2).
		long := quotaProblem[:len(quotaProblem)-1] + `,"detail":"` + strings.Repeat("x", ProblemBodyMaxBytes) + `"}`
		s := newServer(t, respond(429, "application/problem+json", long))
		var e events
		p := fastPolicy()
		p.MaxRetries = 1
		c, _ := client(t, &e, WithPolicy(p))
		resp, body, err := do(t, c, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil))
		if err != nil || resp.StatusCode != 429 || body != long {
			t.Fatalf("got %v %v, body of %d bytes", resp, err, len(body))
		}
		if finish := e.finish(t); finish.Reason != ReasonExhausted || e.reasons() != "rejected_status/1" {
			t.Errorf("finish %+v, events %s", finish, e.reasons())
		}
	})
	t.Run("not read", func(t *testing.T) {
		for _, tc := range []struct {
			name, contentType string
			policy            func(*Policy)
		}{
			{"another media type", "application/json", func(*Policy) {}},
			{"no problem types", "application/problem+json", func(p *Policy) { p.StopProblemTypes = nil }},
		} {
			s := newServer(t, respond(429, tc.contentType, quotaProblem), status(200))
			var e events
			p := fastPolicy()
			tc.policy(&p)
			c, _ := client(t, &e, WithPolicy(p))
			if resp, _, err := do(t, c, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil)); err != nil || resp.StatusCode != 200 {
				t.Errorf("%s: got %v %v", tc.name, resp, err)
			}
		}
	})
	t.Run("a cut body is a transport failure", func(t *testing.T) {
		s := newServer(t, cutProblem, respond(429, "application/problem+json", quotaProblem))
		var e events
		c, _ := client(t, &e)
		resp, _, err := do(t, c, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil))
		if err != nil || resp.StatusCode != 429 || e.reasons() != "transport_failure/1" {
			t.Fatalf("got %v %v, events %s", resp, err, e.reasons())
		}
		// A create is not replayable: the cut body surfaces as its failure.
		s = newServer(t, cutProblem, status(201))
		e = events{}
		c, _ = client(t, &e)
		_, err = c.Do(newRequest(t, context.Background(), "POST", s.URL+"/v1/sandboxes", strings.NewReader("{}")))
		var finished *FinishedError
		if !errors.As(err, &finished) || finished.Finish.Failure != FailureTransport || len(s.arrivals()) != 1 {
			t.Errorf("error %v, %d arrivals", err, len(s.arrivals()))
		}
	})
}

// cutProblem announces a 1000-byte problem body, sends 10 bytes of it and closes.
func cutProblem(w http.ResponseWriter, _ *http.Request) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	_, _ = buf.WriteString("HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/problem+json\r\nContent-Length: 1000\r\n\r\n{\"type\":\"h")
	_ = buf.Flush()
	_ = conn.Close()
}

func TestAProblemBodyIsReadUnderTheAttemptTimeout(t *testing.T) {
	slow := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(429)
		w.(http.Flusher).Flush()
		time.Sleep(300 * time.Millisecond)
		_, _ = io.WriteString(w, quotaProblem)
	}
	s := newServer(t, slow, status(201))
	var e events
	c, _ := client(t, &e, WithAttemptTimeout(50*time.Millisecond))
	_, err := c.Do(newRequest(t, context.Background(), "POST", s.URL+"/v1/sandboxes", strings.NewReader("{}")))
	// The read the timeout ended is the attempt's failure: a create is not retried.
	var finished *FinishedError
	if !errors.As(err, &finished) || finished.Finish.Failure != FailureTransport || !finished.Finish.TimedOut || len(s.arrivals()) != 1 {
		t.Fatalf("error %v, %d arrivals", err, len(s.arrivals()))
	}
	var limit *AttemptTimeoutError
	if !errors.As(err, &limit) {
		t.Errorf("error %v does not name the attempt timeout", err)
	}
}
