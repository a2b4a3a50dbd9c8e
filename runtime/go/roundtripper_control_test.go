package retrypolicy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Per-request control, the attempt below and above, and the body read inside the loop
// (docs/adapters.md P1-P6), against real servers on 127.0.0.1 through a real http.Transport.

// cutBody answers code announcing 1000 body bytes, sends 10 of them and closes the connection.
func cutBody(code int) step {
	return func(w http.ResponseWriter, _ *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		_, _ = buf.WriteString("HTTP/1.1 " + strconv.Itoa(code) + " " + http.StatusText(code) + "\r\nContent-Length: 1000\r\n\r\n0123456789")
		_ = buf.Flush()
		_ = conn.Close()
	}
}

// withOverrides is req with o on its context.
func withOverrides(req *http.Request, o Overrides) *http.Request {
	return req.WithContext(WithOverrides(req.Context(), o))
}

func TestOverrideMaxRetries(t *testing.T) {
	s := newServer(t, status(503), status(200))
	var e events
	c, _ := client(t, &e)
	req := withOverrides(newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil), Overrides{MaxRetries: 0, HasMaxRetries: true})
	resp, _, err := do(t, c, req)
	if err != nil || resp.StatusCode != 503 || len(s.arrivals()) != 1 {
		t.Fatalf("got %v %v, %d arrivals", resp, err, len(s.arrivals()))
	}
	if got := e.finish(t); got.Reason != ReasonExhausted || got.Attempts != 1 || len(e.retries) != 0 {
		t.Errorf("finish %+v, %d retries", got, len(e.retries))
	}

	// Above the policy's too; the rest of the policy (the backoff) stays.
	s = newServer(t, status(503))
	e = events{}
	p := fastPolicy()
	p.MaxRetries = 1
	c, _ = client(t, &e, WithPolicy(p))
	req = withOverrides(newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil), Overrides{MaxRetries: 3, HasMaxRetries: true})
	if _, _, err := do(t, c, req); err != nil || len(s.arrivals()) != 4 {
		t.Fatalf("error %v, %d arrivals", err, len(s.arrivals()))
	}
	if got := e.reasons(); got != "retryable_status/1 retryable_status/2 retryable_status/4" {
		t.Errorf("events %s", got)
	}
	// Without the Has field, MaxRetries is not an override.
	s = newServer(t, status(503))
	e = events{}
	c, _ = client(t, &e, WithPolicy(p))
	req = withOverrides(newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil), Overrides{MaxRetries: 3})
	if _, _, err := do(t, c, req); err != nil || len(s.arrivals()) != 2 {
		t.Fatalf("error %v, %d arrivals", err, len(s.arrivals()))
	}
}

func TestOverrideAttemptTimeout(t *testing.T) {
	// An attempt timeout for this request only.
	s := newServer(t, stall(3*time.Second), status(200))
	var e events
	c, _ := client(t, &e)
	req := withOverrides(newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil), Overrides{AttemptTimeout: 100 * time.Millisecond, HasAttemptTimeout: true})
	start := time.Now()
	resp, _, err := do(t, c, req)
	if err != nil || resp.StatusCode != 200 || time.Since(start) > 2*time.Second || len(s.arrivals()) != 2 {
		t.Fatalf("got %v %v after %v", resp, err, time.Since(start))
	}
	if got := e.reasons(); got != "transport_failure/1" {
		t.Errorf("events %s", got)
	}

	// 0 lifts the RoundTripper's.
	s = newServer(t, stall(300*time.Millisecond), status(200))
	e = events{}
	c, _ = client(t, &e, WithAttemptTimeout(100*time.Millisecond))
	req = withOverrides(newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil), Overrides{HasAttemptTimeout: true})
	if resp, _, err := do(t, c, req); err != nil || resp.StatusCode != 200 || len(s.arrivals()) != 1 || len(e.retries) != 0 {
		t.Fatalf("got %v %v, %d arrivals", resp, err, len(s.arrivals()))
	}
}

func TestInvalidOverridesSendNothing(t *testing.T) {
	s := newServer(t, status(200))
	for _, tc := range []struct {
		o   Overrides
		key string
	}{
		{Overrides{MaxRetries: 101, HasMaxRetries: true}, "overrides.max_retries"},
		{Overrides{MaxRetries: -1, HasMaxRetries: true}, "overrides.max_retries"},
		{Overrides{AttemptTimeout: -time.Second, HasAttemptTimeout: true}, "overrides.attempt_timeout"},
		{Overrides{ReadBodyMaxBytes: -1, HasReadBodyMaxBytes: true}, "overrides.read_body_max_bytes"},
	} {
		var e events
		c, _ := client(t, &e)
		_, _, err := do(t, c, withOverrides(newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil), tc.o))
		var invalid *InvalidInput
		if !errors.As(err, &invalid) || invalid.Key != tc.key {
			t.Errorf("%+v: error %v, want %s", tc.o, err, tc.key)
		}
		if len(e.finishes) != 0 || len(e.retries) != 0 {
			t.Errorf("%+v: events %+v %+v", tc.o, e.retries, e.finishes)
		}
	}
	if n := len(s.arrivals()); n != 0 {
		t.Errorf("%d arrivals", n)
	}
}

// A request to a foreign origin ignores overrides (even invalid ones) and never carries the
// attempt header.
func TestAForeignOriginIgnoresOverridesAndTheAttemptHeader(t *testing.T) {
	api := newServer(t, status(200))
	other := newServer(t, status(503))
	var e events
	c, _ := client(t, &e, WithBaseURL(api.URL+"/v1"), WithAttemptHeader("X-Retry-Attempt"))
	req := withOverrides(newRequest(t, context.Background(), "GET", other.URL+"/v1/sandboxes/sb-1", nil), Overrides{MaxRetries: 1000, HasMaxRetries: true})
	resp, _, err := do(t, c, req)
	if err != nil || resp.StatusCode != 503 || e.finish(t).Reason != ReasonForeignOrigin {
		t.Fatalf("got %v %v %+v", resp, err, e.finishes)
	}
	if a := other.arrivals(); len(a) != 1 || a[0].header["X-Retry-Attempt"] != nil {
		t.Errorf("arrivals %+v", a)
	}
}

// The RoundTripper below the adapter reads each attempt's number from its request's context
// (P2), as an OpenTelemetry layer does to set http.request.resend_count.
func TestTheAttemptIsVisibleBelowTheAdapter(t *testing.T) {
	s := newServer(t, status(503), hangUp, status(200))
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	var mu sync.Mutex
	var seen []string
	below := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		n, ok := AttemptFromContext(req.Context())
		mu.Lock()
		seen = append(seen, strconv.FormatInt(n, 10)+"/"+strconv.FormatBool(ok))
		mu.Unlock()
		return transport.RoundTrip(req)
	})
	var e events
	c, _ := client(t, &e, WithNext(below))
	req := newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil)
	if resp, _, err := do(t, c, req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("got %v %v", resp, err)
	}
	if got := strings.Join(seen, " "); got != "1/true 2/true 3/true" {
		t.Errorf("attempts below: %s", got)
	}
	if _, ok := AttemptFromContext(req.Context()); ok {
		t.Error("the caller's context carries an attempt")
	}
}

func TestAttemptHeader(t *testing.T) {
	s := newServer(t, status(503), status(503), status(200))
	var e events
	c, _ := client(t, &e, WithAttemptHeader("x-retry-attempt"))
	req := newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil)
	// The caller's value, under another case, is replaced.
	req.Header["X-RETRY-ATTEMPT"] = []string{"9"}
	if resp, _, err := do(t, c, req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("got %v %v", resp, err)
	}
	var got []string
	for _, a := range s.arrivals() {
		got = append(got, strings.Join(a.header.Values("X-Retry-Attempt"), ","))
	}
	if strings.Join(got, " ") != "0 1 2" {
		t.Errorf("attempt header per arrival: %q", got)
	}
	if v := req.Header["X-RETRY-ATTEMPT"]; len(v) != 1 || v[0] != "9" || len(req.Header) != 1 {
		t.Errorf("the caller's header changed: %v", req.Header)
	}

	// Off by default.
	s = newServer(t, status(503), status(200))
	c, _ = client(t, &events{})
	if _, _, err := do(t, c, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil)); err != nil {
		t.Fatal(err)
	}
	for _, a := range s.arrivals() {
		if len(a.header) != 2 {
			// Accept-Encoding and User-Agent, as net/http sends them.
			t.Errorf("arrival with header %v", a.header)
		}
	}
}

// The retry event says what the retried attempt gave and how long it took (P4).
func TestRetryEventsCarryTheAttempt(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(60 * time.Millisecond)
		status(503)(w, r)
	}, hangUp, status(200))
	var e events
	c, _ := client(t, &e)
	if _, _, err := do(t, c, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil)); err != nil {
		t.Fatal(err)
	}
	if len(e.retries) != 2 {
		t.Fatalf("retries %+v", e.retries)
	}
	first, second := e.retries[0], e.retries[1]
	if first.Status != 503 || first.Failure != "" || first.AttemptDurationMs < 60 || first.AttemptDurationMs > 2000 {
		t.Errorf("first retry event %+v", first)
	}
	if second.Status != 0 || second.Failure != FailureTransport || second.AttemptDurationMs > 2000 {
		t.Errorf("second retry event %+v", second)
	}
	if got := e.finish(t).TotalDelayMs; got != first.DelayMs+second.DelayMs {
		t.Errorf("total delay %d", got)
	}
}

// FinishOf reads the finish event from what the call returned (P5), equal to the callback's;
// the error keeps its chain, and http.Client's own wrapping.
func TestFinishOnTheResultAndTheError(t *testing.T) {
	s := newServer(t, status(503), status(200))
	var e events
	c, _ := client(t, &e)
	resp, err := c.Do(newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if got, ok := FinishOf(resp, err); !ok || got != e.finish(t) || got.Attempts != 2 {
		t.Errorf("FinishOf(resp) %+v %v, callback %+v", got, ok, e.finishes)
	}

	e = events{}
	c, _ = client(t, &e)
	_, err = c.Do(newRequest(t, context.Background(), "GET", "http://"+freePort(t)+"/v1/sandboxes/sb-1", nil))
	var finished *FinishedError
	if got, ok := FinishOf(nil, err); !ok || got != e.finish(t) || got.Failure != FailureConnect || !errors.As(err, &finished) {
		t.Errorf("FinishOf(err) %+v %v, callback %+v", got, ok, e.finishes)
	}
	// The text and the chain are the client's.
	if !strings.Contains(err.Error(), "connection refused") || !errors.Is(err, finished.Err) || strings.Contains(err.Error(), "retrypolicy") {
		t.Errorf("error %v", err)
	}

	// A response or an error that did not come through the adapter has none.
	bare, err := http.Get(s.URL + "/v1/other")
	if err != nil {
		t.Fatal(err)
	}
	_ = bare.Body.Close()
	if _, ok := FinishOf(bare, nil); ok {
		t.Error("FinishOf of a bare response")
	}
	if _, ok := FinishOf(nil, io.EOF); ok {
		t.Error("FinishOf of another error")
	}
}

func TestReadBodyRetriesACutBody(t *testing.T) {
	get := func(t *testing.T, options []RoundTripperOption, o *Overrides) (*server, *events, string, error) {
		s := newServer(t, cutBody(200), status(200))
		var e events
		c, _ := client(t, &e, options...)
		req := newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil)
		if o != nil {
			req = withOverrides(req, *o)
		}
		resp, err := c.Do(req)
		if err != nil {
			return s, &e, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if got, ok := FinishOf(resp, nil); !ok || got != e.finish(t) {
			t.Errorf("FinishOf %+v %v", got, ok)
		}
		return s, &e, string(body), err
	}
	// Off by default: the cut body is the caller's.
	s, e, _, err := get(t, nil, nil)
	if !errors.Is(err, io.ErrUnexpectedEOF) || len(s.arrivals()) != 1 {
		t.Errorf("off: error %v, %d arrivals", err, len(s.arrivals()))
	}
	for name, tc := range map[string]struct {
		options []RoundTripperOption
		o       *Overrides
	}{
		"option":   {[]RoundTripperOption{WithReadBody(64 << 10)}, nil},
		"override": {nil, &Overrides{ReadBodyMaxBytes: 64 << 10, HasReadBodyMaxBytes: true}},
	} {
		s, e, body, err := get(t, tc.options, tc.o)
		if err != nil || body != "ok" || len(s.arrivals()) != 2 || e.reasons() != "transport_failure/1" || e.retries[0].Failure != FailureTransport {
			t.Errorf("%s: body %q, error %v, %d arrivals, events %s", name, body, err, len(s.arrivals()), e.reasons())
		}
	}
	// The override turns it off again.
	s, e, _, err = get(t, []RoundTripperOption{WithReadBody(64 << 10)}, &Overrides{HasReadBodyMaxBytes: true})
	if !errors.Is(err, io.ErrUnexpectedEOF) || len(s.arrivals()) != 1 {
		t.Errorf("override 0: error %v, %d arrivals", err, len(s.arrivals()))
	}
	if len(e.retries) != 0 {
		t.Errorf("override 0: events %s", e.reasons())
	}
}

// A body cut on a non_replayable request is its transport failure: one arrival, the read error.
func TestReadBodyDoesNotRetryACutCreate(t *testing.T) {
	s := newServer(t, cutBody(201), status(201))
	var e events
	c, _ := client(t, &e, WithReadBody(64<<10))
	_, err := c.Do(newRequest(t, context.Background(), "POST", s.URL+"/v1/sandboxes", strings.NewReader("{}")))
	if !errors.Is(err, io.ErrUnexpectedEOF) || len(s.arrivals()) != 1 {
		t.Fatalf("error %v, %d arrivals", err, len(s.arrivals()))
	}
	got := e.finish(t)
	if got.Failure != FailureTransport || got.Reason != ReasonNotReplayable || got.Status != 0 {
		t.Errorf("finish %+v", got)
	}
	if from, ok := FinishOf(nil, err); !ok || from != got {
		t.Errorf("FinishOf %+v %v", from, ok)
	}
}

// A body longer than the bound is handed over as the bytes read and the rest of the stream; an
// event stream is not read at all.
func TestReadBodyBoundAndEventStreams(t *testing.T) {
	long := strings.Repeat("0123456789", 100)
	s := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header()["Content-Length"] = nil
		_, _ = io.WriteString(w, long)
	})
	c, _ := client(t, &events{}, WithReadBody(64))
	resp, body, err := do(t, c, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil))
	if err != nil || body != long || resp.StatusCode != 200 {
		t.Fatalf("got %v %d bytes %v", resp, len(body), err)
	}

	release := make(chan struct{})
	defer close(release)
	sse := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "Text/Event-Stream; charset=utf-8")
		_, _ = io.WriteString(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		<-release
	})
	c, _ = client(t, &events{}, WithReadBody(64<<10))
	done := make(chan error, 1)
	go func() {
		resp, err := c.Do(newRequest(t, context.Background(), "GET", sse.URL+"/v1/sandboxes/sb-1/logs", nil))
		if err == nil {
			line, _ := bufio.NewReader(resp.Body).ReadString('\n')
			_ = resp.Body.Close()
			if line != "data: 1\n" {
				err = errors.New("first line " + strconv.Quote(line))
			}
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(3 * time.Second):
		t.Error("the event stream was read inside the loop")
	}
}

// With the body read inside the loop, the attempt timeout covers the body: a body that stalls
// past it is a transport failure that timed out, and retried.
func TestReadBodyUnderTheAttemptTimeout(t *testing.T) {
	stalled := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "4")
		w.WriteHeader(200)
		_, _ = io.WriteString(w, "ok")
		w.(http.Flusher).Flush()
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
		}
	}
	s := newServer(t, stalled, status(200))
	var e events
	c, _ := client(t, &e, WithReadBody(64<<10), WithAttemptTimeout(150*time.Millisecond))
	start := time.Now()
	resp, body, err := do(t, c, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil))
	if err != nil || body != "ok" || resp.StatusCode != 200 || time.Since(start) > 1500*time.Millisecond {
		t.Fatalf("got %v %q %v after %v", resp, body, err, time.Since(start))
	}
	if got := e.reasons(); got != "transport_failure/1" {
		t.Errorf("events %s", got)
	}

	// Every attempt stalls: the last one's failure timed out, with the attempt timeout's error.
	s = newServer(t, stalled)
	e = events{}
	p := fastPolicy()
	p.MaxRetries = 1
	c, _ = client(t, &e, WithPolicy(p), WithReadBody(64<<10), WithAttemptTimeout(150*time.Millisecond))
	_, err = c.Do(newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil))
	var timeout *AttemptTimeoutError
	if !errors.As(err, &timeout) || len(s.arrivals()) != 2 {
		t.Fatalf("error %v, %d arrivals", err, len(s.arrivals()))
	}
	if got := e.finish(t); got.Failure != FailureTransport || !got.TimedOut || got.Reason != ReasonExhausted || got.Status != 0 {
		t.Errorf("finish %+v", got)
	}
}
