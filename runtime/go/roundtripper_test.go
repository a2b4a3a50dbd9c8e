package retrypolicy

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The adapter's tests run against real net/http servers on 127.0.0.1 (httptest), through a real
// http.Transport: nothing of the client is mocked. The stand-in operations.go has the operations
// GET /sandboxes/{sandboxID} (idempotent), POST /sandboxes (non_replayable), POST /v2/sandboxes
// (keyed, Idempotency-Key) and GET /sandboxes/{sandboxID}/logs (no_retry), under /v1.

// fastPolicy is the stand-in's policy with millisecond backoffs and no jitter.
func fastPolicy() Policy {
	p := DefaultPolicy()
	p.InitialBackoffMs, p.MaxBackoffMs, p.Jitter = 1, 4, JitterNone
	return p
}

// arrival is one request as the test server read it.
type arrival struct {
	method           string
	path             string
	header           http.Header
	body             string
	contentLength    int64
	transferEncoding []string
}

// step answers one arrival.
type step func(w http.ResponseWriter, r *http.Request)

// server is a test server that answers arrival n with step min(n, len(steps)-1) and records
// every arrival and how many connections it accepted.
type server struct {
	*httptest.Server
	steps []step
	mu    sync.Mutex
	seen  []arrival
	conns atomic.Int32
}

func newServer(t *testing.T, steps ...step) *server {
	t.Helper()
	s := &server{steps: steps}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.seen)
	s.seen = append(s.seen, arrival{r.Method, r.URL.Path, r.Header.Clone(), string(body), r.ContentLength, r.TransferEncoding})
	s.mu.Unlock()
	s.steps[min(n, len(s.steps)-1)](w, r)
}

func (s *server) arrivals() []arrival {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]arrival(nil), s.seen...)
}

// status answers code with the headers given as name, value pairs and a short body.
func status(code int, headers ...string) step {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header()[headers[i]] = []string{headers[i+1]}
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, "ok")
	}
}

// hangUp closes the connection without a byte of response, as a server whose keep-alive
// connection timed out does.
func hangUp(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

// stall waits d (or until the client goes away) and answers 200.
func stall(d time.Duration) step {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusOK)
	}
}

// events records what the callbacks receive.
type events struct {
	mu       sync.Mutex
	retries  []RetryEvent
	finishes []FinishEvent
}

func (e *events) options() []RoundTripperOption {
	return []RoundTripperOption{
		WithOnRetry(func(_ *http.Request, ev RetryEvent) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.retries = append(e.retries, ev)
		}),
		WithOnFinish(func(_ *http.Request, ev FinishEvent) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.finishes = append(e.finishes, ev)
		}),
	}
}

// reasons lists the retry events as reason/delay.
func (e *events) reasons() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var parts []string
	for _, ev := range e.retries {
		parts = append(parts, fmt.Sprintf("%s/%d", ev.Reason, ev.DelayMs))
	}
	return strings.Join(parts, " ")
}

// finish is the one finish event.
func (e *events) finish(t *testing.T) FinishEvent {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.finishes) != 1 {
		t.Fatalf("%d finish events, want 1: %+v", len(e.finishes), e.finishes)
	}
	return e.finishes[0]
}

// client is an http.Client whose transport is a RoundTripper over a transport of its own, with
// the fast policy and the events recorded, then the options given.
func client(t *testing.T, e *events, options ...RoundTripperOption) (*http.Client, *RoundTripper) {
	t.Helper()
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	all := append([]RoundTripperOption{WithPolicy(fastPolicy()), WithNext(transport)}, e.options()...)
	rt := newRT(t, append(all, options...)...)
	return &http.Client{Transport: rt}, rt
}

func do(t *testing.T, c *http.Client, req *http.Request) (*http.Response, string, error) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	return resp, string(body), nil
}

func newRequest(t *testing.T, ctx context.Context, method, url string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestRetriesARetryableStatusAndReportsTheEvents(t *testing.T) {
	s := newServer(t, status(503), status(503), status(200))
	var e events
	c, rt := client(t, &e)
	req := newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1?verbose=1", nil)
	resp, body, err := do(t, c, req)
	if err != nil || resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("got %v %q %v", resp, body, err)
	}
	// A copy of the caller's request (its context carries the finish event, P5).
	if resp.Request.URL != req.URL || resp.Request.Method != req.Method || resp.Request.Header == nil || resp.Request.Body != req.Body {
		t.Error("the response names the caller's request")
	}
	if got := e.reasons(); got != "retryable_status/1 retryable_status/2" {
		t.Errorf("events %s", got)
	}
	first := e.retries[0]
	if first.Attempt != 1 || first.Method != "GET" || first.PathTemplate != "/sandboxes/{sandboxID}" || first.OperationID != "getSandbox" || !first.HasOperationID {
		t.Errorf("retry event %+v", first)
	}
	want := FinishEvent{Attempts: 3, Reason: ReasonStatusNotRetryable, Status: 200, Method: "GET", PathTemplate: "/sandboxes/{sandboxID}", OperationID: "getSandbox", HasOperationID: true, TotalDelayMs: 1 + 2}
	if got := e.finish(t); got != want {
		t.Errorf("finish %+v, want %+v", got, want)
	}
	// K3: the success gives back what its last retry cost, up to the capacity.
	if tokens := rt.Budget().Tokens(); tokens != 500-5-5+5 {
		t.Errorf("budget %d", tokens)
	}
}

// The discarded responses' short bodies are drained in the background during the sleep, so the
// retries reuse the keep-alive connection.
func TestDiscardedResponsesLeaveTheConnectionReusable(t *testing.T) {
	s := newServer(t, status(503), status(502), status(200))
	p := fastPolicy()
	p.InitialBackoffMs, p.MaxBackoffMs = 50, 100
	c, _ := client(t, new(events), WithPolicy(p))
	resp, _, err := do(t, c, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("got %v %v", resp, err)
	}
	if n := s.conns.Load(); n != 1 {
		t.Errorf("%d connections for 3 attempts", n)
	}
}

func TestStopsWhereTheContractSays(t *testing.T) {
	cases := []struct {
		name, method, path string
		steps              []step
		arrivals           int
		status             int
		reason             Reason
	}{
		{"not found", "GET", "/v1/sandboxes/sb-1", []step{status(404), status(200)}, 1, 404, ReasonStatusNotRetryable},
		{"non-replayable", "POST", "/v1/sandboxes", []step{status(503), status(201)}, 1, 503, ReasonNotReplayable},
		{"rejected", "POST", "/v1/sandboxes", []step{status(429, "Retry-After", "0"), status(201)}, 2, 201, ReasonStatusNotRetryable},
		{"no retry", "GET", "/v1/sandboxes/sb-1/logs", []step{status(503), status(200)}, 1, 503, ReasonNoRetryOperation},
		{"exhausted", "GET", "/v1/sandboxes/sb-1", []step{status(502)}, 4, 502, ReasonExhausted},
		{"directive no", "GET", "/v1/sandboxes/sb-1", []step{status(503, "X-Should-Retry", "false"), status(200)}, 1, 503, ReasonServerSaidNo},
		{"directive yes", "GET", "/v1/sandboxes/sb-1", []step{status(400, "x-should-retry", " TRUE "), status(200)}, 2, 200, ReasonStatusNotRetryable},
		{"over cap", "GET", "/v1/sandboxes/sb-1", []step{status(503, "Retry-After", "3600"), status(200)}, 1, 503, ReasonRetryAfterOverCap},
		{"unknown", "PATCH", "/v1/things/7", []step{status(503), status(200)}, 1, 503, ReasonNotReplayable},
		{"status beyond 599", "GET", "/v1/sandboxes/sb-1", []step{status(600), status(200)}, 1, 600, ReasonStatusNotRetryable},
	}
	for _, tc := range cases {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, tc.steps...)
			var e events
			c, _ := client(t, &e)
			resp, _, err := do(t, c, newRequest(t, context.Background(), tc.method, s.URL+tc.path, nil))
			if err != nil || resp.StatusCode != tc.status {
				t.Fatalf("got %v %v, want %d", resp, err, tc.status)
			}
			if n := len(s.arrivals()); n != tc.arrivals {
				t.Errorf("%d arrivals, want %d", n, tc.arrivals)
			}
			if got := e.finish(t); got.Reason != tc.reason || got.Attempts != int64(tc.arrivals) {
				t.Errorf("finish %+v, want %s", got, tc.reason)
			}
		})
	}
}

func TestReplaysTheBodyWithGetBody(t *testing.T) {
	s := newServer(t, status(503), status(200))
	var e events
	c, _ := client(t, &e)
	// PUT matches no operation: the method's default class, idempotent.
	req := newRequest(t, context.Background(), "PUT", s.URL+"/v1/things/7", strings.NewReader(`{"cpu":2}`))
	body, getBody := req.Body, req.GetBody
	header := req.Header.Clone()
	resp, _, err := do(t, c, req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("got %v %v", resp, err)
	}
	for i, a := range s.arrivals() {
		if a.body != `{"cpu":2}` || a.contentLength != 9 || len(a.transferEncoding) != 0 {
			t.Errorf("arrival %d: %+v", i, a)
		}
	}
	if req.Body != body || req.GetBody == nil || getBody == nil || len(req.Header) != len(header) {
		t.Error("RoundTrip changed the caller's request")
	}
}

// A body without GetBody gets one attempt; the retry Decide grants is not made, nor paid for.
func TestOneShotBodyGetsOneAttempt(t *testing.T) {
	s := newServer(t, status(429, "Retry-After", "0"), status(201))
	var e events
	c, rt := client(t, &e)
	req := newRequest(t, context.Background(), "POST", s.URL+"/v1/sandboxes", io.MultiReader(strings.NewReader(`{"image":"streamed"}`)))
	resp, _, err := do(t, c, req)
	if err != nil || resp.StatusCode != 429 {
		t.Fatalf("got %v %v", resp, err)
	}
	if a := s.arrivals(); len(a) != 1 || a[0].body != `{"image":"streamed"}` || a[0].transferEncoding[0] != "chunked" {
		t.Errorf("arrivals %+v", a)
	}
	if got := e.finish(t); got.Reason != ReasonBodyNotReplayable || got.Attempts != 1 || got.Status != 429 {
		t.Errorf("finish %+v", got)
	}
	if rt.Budget().Tokens() != 500 {
		t.Errorf("budget %d", rt.Budget().Tokens())
	}
}

func TestAFailingGetBodyStopsAndRefunds(t *testing.T) {
	s := newServer(t, status(503), status(200))
	var e events
	c, rt := client(t, &e)
	req := newRequest(t, context.Background(), "PUT", s.URL+"/v1/things/7", strings.NewReader("x"))
	broken := errors.New("gone")
	req.GetBody = func() (io.ReadCloser, error) { return nil, broken }
	resp, _, err := do(t, c, req)
	if err != nil || resp.StatusCode != 503 || len(s.arrivals()) != 1 {
		t.Fatalf("got %v %v", resp, err)
	}
	if got := e.finish(t); got.Reason != ReasonBodyNotReplayable {
		t.Errorf("finish %+v", got)
	}
	if rt.Budget().Tokens() != 500 {
		t.Errorf("budget %d", rt.Budget().Tokens())
	}
}

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestIdempotencyKeys(t *testing.T) {
	cases := []struct {
		name   string
		path   string
		header map[string]string
		mint   bool
		want   string // "minted", "" for none, else the caller's key
		status int
	}{
		{"minted", "/v1/v2/sandboxes", nil, true, "minted", 201},
		{"caller's", "/v1/v2/sandboxes", map[string]string{"Idempotency-Key": "k-1"}, true, "k-1", 201},
		{"caller's in any case", "/v1/v2/sandboxes", map[string]string{"idempotency-KEY": "k-2"}, true, "k-2", 201},
		{"blank caller's replaced", "/v1/v2/sandboxes", map[string]string{"idempotency-key": " \t"}, true, "minted", 201},
		{"minting off", "/v1/v2/sandboxes", nil, false, "", 503},
		{"not keyed", "/v1/sandboxes", nil, true, "", 503},
	}
	for _, tc := range cases {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, status(503), status(201))
			var e events
			c, _ := client(t, &e, WithMintIdempotencyKeys(tc.mint))
			req := newRequest(t, context.Background(), "POST", s.URL+tc.path, strings.NewReader("{}"))
			for name, value := range tc.header {
				req.Header[name] = []string{value}
			}
			before := req.Header.Clone()
			resp, _, err := do(t, c, req)
			if err != nil || resp.StatusCode != tc.status {
				t.Fatalf("got %v %v", resp, err)
			}
			arrivals := s.arrivals()
			first := arrivals[0].header.Values("Idempotency-Key")
			for i, a := range arrivals {
				got := a.header.Values("Idempotency-Key")
				switch {
				case tc.want == "" && len(got) != 0,
					tc.want == "minted" && (len(got) != 1 || !uuidV4.MatchString(got[0]) || got[0] != first[0]),
					tc.want != "" && tc.want != "minted" && (len(got) != 1 || got[0] != tc.want):
					t.Errorf("arrival %d carries %q, want %s", i, got, tc.want)
				}
			}
			if fmt.Sprint(req.Header) != fmt.Sprint(before) {
				t.Errorf("the caller's header changed: %v, was %v", req.Header, before)
			}
		})
	}
}

func TestNewIdempotencyKeyIsAUUIDv4(t *testing.T) {
	seen := make(map[string]bool)
	for i := 0; i < 1000; i++ {
		key, err := newIdempotencyKey()
		if err != nil || !uuidV4.MatchString(key) || seen[key] {
			t.Fatalf("key %q %v", key, err)
		}
		seen[key] = true
	}
}

// THE TRAP: net/http's Transport resends a request on its own when its reused keep-alive
// connection closes before any response byte and it deems the request replayable. The control
// run (a bare Transport) shows each of these requests arriving twice for one call; through the
// RoundTripper with no retries allowed, each arrives once, and the wire form of a bodyless
// request is unchanged (no Content-Length or Transfer-Encoding where there was none).
func TestNetHTTPDoesNotResendAnAttempt(t *testing.T) {
	cases := []struct {
		name, method, path string
		header             string // an idempotency header set canonically, or ""
		body               string
	}{
		{"GET", "GET", "/v1/sandboxes/sb-1", "", ""},
		{"HEAD", "HEAD", "/v1/sandboxes/sb-1", "", ""},
		{"OPTIONS", "OPTIONS", "/v1/sandboxes/sb-1", "", ""},
		{"TRACE", "TRACE", "/v1/sandboxes/sb-1", "", ""},
		{"GET with a key", "GET", "/v1/sandboxes/sb-1", "Idempotency-Key", ""},
		{"keyed POST", "POST", "/v1/v2/sandboxes", "Idempotency-Key", "{}"},
		{"POST with a key", "POST", "/v1/sandboxes", "X-Idempotency-Key", "{}"},
		{"bodyless POST with a key", "POST", "/v1/sandboxes", "Idempotency-Key", ""},
		{"bodyless DELETE with a key", "DELETE", "/v1/sandboxes/sb-1", "X-Idempotency-Key", ""},
		{"bodyless PATCH with a key", "PATCH", "/v1/sandboxes/sb-1", "Idempotency-Key", ""},
	}
	for _, tc := range cases {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			send := func(rt http.RoundTripper) []arrival {
				s := newServer(t, status(200), hangUp)
				c := &http.Client{Transport: rt}
				warm, _, err := do(t, c, newRequest(t, context.Background(), "GET", s.URL+"/warm", nil))
				if err != nil || warm.StatusCode != 200 {
					t.Fatalf("warm-up: %v %v", warm, err)
				}
				var body io.Reader
				if tc.body != "" {
					body = strings.NewReader(tc.body)
				}
				req := newRequest(t, context.Background(), tc.method, s.URL+tc.path, body)
				if tc.header != "" {
					req.Header.Set(tc.header, "key-1")
				}
				if _, _, err := do(t, c, req); err == nil {
					t.Fatal("the hang-up succeeded")
				}
				return s.arrivals()[1:]
			}
			bare := &http.Transport{}
			defer bare.CloseIdleConnections()
			if n := len(send(bare)); n != 2 {
				t.Fatalf("control: %d arrivals on a bare Transport, want 2 (its own resend)", n)
			}
			p := fastPolicy()
			p.MaxRetries = 0
			next := &http.Transport{}
			defer next.CloseIdleConnections()
			arrivals := send(newRT(t, WithPolicy(p), WithNext(next)))
			if len(arrivals) != 1 {
				t.Fatalf("%d arrivals through the RoundTripper, want 1", len(arrivals))
			}
			a := arrivals[0]
			if a.body != tc.body || a.method != tc.method {
				t.Errorf("arrival %+v", a)
			}
			if tc.body == "" && (len(a.transferEncoding) != 0 || a.contentLength != 0 || a.header.Get("Transfer-Encoding") != "") {
				t.Errorf("a bodyless %s arrived with a body: %+v", tc.method, a)
			}
			// Every bodyless form arrives with no body and no Content-Length (a keyed bodyless
			// POST or PATCH too: net/http would resend it with no body, so it carries the
			// empty body, which drops the Content-Length: 0 net/http gives those methods).
			if tc.body == "" && a.header.Get("Content-Length") != "" {
				t.Errorf("a bodyless %s arrived with Content-Length %q", tc.method, a.header.Get("Content-Length"))
			}
			// The field under its canonical name, where any RoundTripper below looks.
			if _, ok := a.header[tc.header]; tc.header != "" && (!ok || a.header.Get(tc.header) != "key-1") {
				t.Errorf("the %s field did not arrive: %v", tc.header, a.header)
			}
		})
	}
}

// freePort is an address on 127.0.0.1 where nothing listens.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

func TestConnectFailuresAreRetriedForEveryClass(t *testing.T) {
	var e events
	c, _ := client(t, &e)
	_, _, err := do(t, c, newRequest(t, context.Background(), "POST", "http://"+freePort(t)+"/v1/sandboxes", strings.NewReader("{}")))
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("error %v, want the dial's", err)
	}
	if got := e.reasons(); got != "connect_failure/1 connect_failure/2 connect_failure/4" {
		t.Errorf("events %s", got)
	}
	if got := e.finish(t); got.Failure != FailureConnect || got.Reason != ReasonExhausted || got.Attempts != 4 || got.Status != 0 {
		t.Errorf("finish %+v", got)
	}
}

func TestTransportFailures(t *testing.T) {
	s := newServer(t, hangUp, status(204))
	var e events
	c, _ := client(t, &e)
	resp, _, err := do(t, c, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil))
	if err != nil || resp.StatusCode != 204 || e.reasons() != "transport_failure/1" {
		t.Fatalf("got %v %v %s", resp, err, e.reasons())
	}

	s = newServer(t, hangUp, status(201))
	e = events{}
	c, _ = client(t, &e)
	_, _, err = do(t, c, newRequest(t, context.Background(), "POST", s.URL+"/v1/sandboxes", strings.NewReader("{}")))
	if err == nil || !errors.Is(err, io.EOF) {
		t.Fatalf("error %v, want the transport's", err)
	}
	if got := e.finish(t); got.Failure != FailureTransport || got.Reason != ReasonNotReplayable || got.TimedOut || len(s.arrivals()) != 1 {
		t.Errorf("finish %+v, %d arrivals", got, len(s.arrivals()))
	}
}

func TestIsConnectError(t *testing.T) {
	handshakeErr := errors.New("tls: handshake failure")
	watch := new(handshakeWatch)
	watch.done(tls.ConnectionState{}, handshakeErr)
	cases := []struct {
		name  string
		err   error
		watch *handshakeWatch
		want  bool
	}{
		{"dial", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, nil, true},
		{"dial timeout", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("i/o timeout")}, nil, true},
		{"proxy", &net.OpError{Op: "proxyconnect", Net: "tcp", Err: io.EOF}, nil, true},
		{"dns", &net.DNSError{Err: "no such host", Name: "sandbox.invalid", IsNotFound: true}, nil, true},
		{"refused unwrapped", fmt.Errorf("dialer: %w", syscall.ECONNREFUSED), nil, true},
		{"host unreachable", syscall.EHOSTUNREACH, nil, true},
		{"network unreachable", syscall.ENETUNREACH, nil, true},
		{"unreachable on a read", &net.OpError{Op: "read", Net: "tcp", Err: syscall.EHOSTUNREACH}, nil, false},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, nil, false},
		{"eof", io.EOF, nil, false},
		{"handshake", fmt.Errorf("wrapped: %w", handshakeErr), watch, true},
		{"other tls error", errors.New("tls: bad record MAC"), watch, false},
		{"tls error without a handshake", errors.New("tls: handshake failure"), nil, false},
	}
	for _, tc := range cases {
		if got := isConnectError(tc.err, tc.watch); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestIsCertificateError(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"verification", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, true},
		{"authority", fmt.Errorf("wrapped: %w", x509.UnknownAuthorityError{}), true},
		{"host name", x509.HostnameError{Host: "x"}, true},
		{"expired", x509.CertificateInvalidError{Reason: x509.Expired}, true},
		{"handshake", errors.New("tls: handshake failure"), false},
		{"dial", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, false},
	} {
		if got := isCertificateError(tc.err); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A refused certificate is never retried (contract R1): a retry meets the same certificate.
func TestAnUntrustedCertificateIsNotRetried(t *testing.T) {
	tlsServer := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	tlsServer.Config.ErrorLog = log.New(io.Discard, "", 0)
	tlsServer.StartTLS()
	defer tlsServer.Close()
	var e events
	c, rt := client(t, &e)
	_, _, err := do(t, c, newRequest(t, context.Background(), "GET", tlsServer.URL+"/v1/sandboxes/sb-1", nil))
	var verification *tls.CertificateVerificationError
	if !errors.As(err, &verification) {
		t.Fatalf("error %v", err)
	}
	if got := e.finish(t); got.Failure != FailureCertificate || got.Reason != ReasonCertificateFailure || got.Attempts != 1 || rt.Budget().Tokens() != 500 {
		t.Errorf("finish %+v, budget %d", got, rt.Budget().Tokens())
	}
}

// An attempt timeout that fires while net/http is still dialing ends an attempt that wrote
// nothing: connect, retried even for a non-replayable create.
func TestAnAttemptTimeoutWhileDialingIsAConnectFailure(t *testing.T) {
	s := newServer(t, status(201))
	var dials atomic.Int32
	var dialer net.Dialer
	next := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dials.Add(1) == 1 {
			// The first dial outlasts the attempt timeout (net/http may detach the dial from
			// the request's context, hence the timer).
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
			return nil, errors.New("dial abandoned")
		}
		return dialer.DialContext(ctx, network, addr)
	}}
	defer next.CloseIdleConnections()
	var e events
	c := &http.Client{Transport: newRT(t, append(e.options(), WithPolicy(fastPolicy()), WithNext(next), WithAttemptTimeout(100*time.Millisecond))...)}
	resp, _, err := do(t, c, newRequest(t, context.Background(), "POST", s.URL+"/v1/sandboxes", strings.NewReader("{}")))
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("got %v %v", resp, err)
	}
	if got := e.reasons(); got != "connect_failure/1" {
		t.Errorf("events %s", got)
	}
	if n := len(s.arrivals()); n != 1 {
		t.Errorf("%d arrivals", n)
	}
}

func TestTLSHandshakeFailuresAreConnectFailures(t *testing.T) {
	tlsServer := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	tlsServer.Config.ErrorLog = log.New(io.Discard, "", 0)
	tlsServer.StartTLS()
	defer tlsServer.Close()
	plain := newServer(t, status(200))
	for _, tc := range []struct {
		name, url string
		check     func(error) bool
	}{
		// A server that answers in plain HTTP: the handshake reads a record that is not TLS
		// (a tls.RecordHeaderError, which http.Client reports as ErrSchemeMismatch).
		{"not TLS", strings.Replace(plain.URL, "http:", "https:", 1), func(err error) bool {
			return errors.Is(err, http.ErrSchemeMismatch)
		}},
	} {
		var e events
		c, _ := client(t, &e)
		_, _, err := do(t, c, newRequest(t, context.Background(), "POST", tc.url+"/v1/sandboxes", strings.NewReader("{}")))
		if !tc.check(err) {
			t.Errorf("%s: error %v", tc.name, err)
		}
		if got := e.finish(t); got.Failure != FailureConnect || got.Attempts != 4 {
			t.Errorf("%s: finish %+v", tc.name, got)
		}
	}
	if n := len(plain.arrivals()); n != 0 {
		t.Errorf("%d arrivals", n)
	}
}

// After the handshake, a failure is a transport failure even over TLS.
func TestTLSFailureAfterTheHandshakeIsATransportFailure(t *testing.T) {
	var arrivals atomic.Int32
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrivals.Add(1)
		hangUp(w, r)
	}))
	defer s.Close()
	var e events
	next := s.Client().Transport.(*http.Transport)
	c := &http.Client{Transport: newRT(t, append(e.options(), WithPolicy(fastPolicy()), WithNext(next))...)}
	if _, _, err := do(t, c, newRequest(t, context.Background(), "POST", s.URL+"/v1/sandboxes", strings.NewReader("{}"))); err == nil {
		t.Fatal("the hang-up succeeded")
	}
	if got := e.finish(t); got.Failure != FailureTransport || got.Reason != ReasonNotReplayable || arrivals.Load() != 1 {
		t.Errorf("finish %+v, %d arrivals", got, arrivals.Load())
	}
}

// Over HTTP/2 the attempts are the same: a bodyless GET arrives without a body, a body is
// replayed.
func TestHTTP2(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s %q", r.Proto, r.Method, body))
		n := len(seen)
		mu.Unlock()
		if n%2 == 1 {
			w.WriteHeader(503)
		}
	}))
	s.EnableHTTP2 = true
	s.StartTLS()
	defer s.Close()
	var e events
	c := &http.Client{Transport: newRT(t, append(e.options(), WithPolicy(fastPolicy()), WithNext(s.Client().Transport))...)}
	for _, req := range []*http.Request{
		newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil),
		newRequest(t, context.Background(), "PUT", s.URL+"/v1/things/7", strings.NewReader("{}")),
	} {
		if resp, _, err := do(t, c, req); err != nil || resp.StatusCode != 200 || resp.ProtoMajor != 2 {
			t.Fatalf("got %v %v", resp, err)
		}
	}
	want := []string{`HTTP/2.0 GET ""`, `HTTP/2.0 GET ""`, `HTTP/2.0 PUT "{}"`, `HTTP/2.0 PUT "{}"`}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("arrivals %q, want %q", seen, want)
	}
}

func TestAttemptTimeout(t *testing.T) {
	s := newServer(t, stall(3*time.Second), status(200))
	var e events
	c, rt := client(t, &e, WithAttemptTimeout(100*time.Millisecond))
	start := time.Now()
	resp, _, err := do(t, c, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil))
	if err != nil || resp.StatusCode != 200 || time.Since(start) > 2*time.Second {
		t.Fatalf("got %v %v after %v", resp, err, time.Since(start))
	}
	if got := e.reasons(); got != "transport_failure/1" {
		t.Errorf("events %s", got)
	}
	// A retry after a timeout costs 10; the success gives it back.
	if got := e.finish(t); got.TimedOut || rt.Budget().Tokens() != 500 {
		t.Errorf("finish %+v, budget %d", got, rt.Budget().Tokens())
	}

	s = newServer(t, stall(3*time.Second))
	e = events{}
	p := fastPolicy()
	p.MaxRetries = 1
	c, _ = client(t, &e, WithPolicy(p), WithAttemptTimeout(100*time.Millisecond))
	_, _, err = do(t, c, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil))
	var timeout *AttemptTimeoutError
	var urlErr interface{ Timeout() bool }
	if !errors.As(err, &timeout) || timeout.After != 100*time.Millisecond || !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &urlErr) || !urlErr.Timeout() {
		t.Fatalf("error %v", err)
	}
	if got := e.finish(t); !got.TimedOut || got.Failure != FailureTransport || got.Reason != ReasonExhausted || got.Attempts != 2 {
		t.Errorf("finish %+v", got)
	}
}

// The attempt timeout ends with the response headers: a slow body is read in full.
func TestAttemptTimeoutDoesNotLimitTheBody(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i < 4; i++ {
			_, _ = io.WriteString(w, "data\n")
			w.(http.Flusher).Flush()
			time.Sleep(60 * time.Millisecond)
		}
	})
	var e events
	c, _ := client(t, &e, WithAttemptTimeout(100*time.Millisecond))
	resp, body, err := do(t, c, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1/logs", nil))
	if err != nil || resp.StatusCode != 200 || body != strings.Repeat("data\n", 4) {
		t.Fatalf("got %v %q %v", resp, body, err)
	}
}

func TestCancellation(t *testing.T) {
	// During an attempt.
	s := newServer(t, stall(3*time.Second), status(200))
	var e events
	c, _ := client(t, &e)
	ctx, cancel := context.WithCancel(context.Background())
	timer := time.AfterFunc(100*time.Millisecond, cancel)
	defer timer.Stop()
	start := time.Now()
	_, _, err := do(t, c, newRequest(t, ctx, "GET", s.URL+"/v1/sandboxes/sb-1", nil))
	if !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
		t.Fatalf("error %v after %v", err, time.Since(start))
	}
	if got := e.finish(t); got.Failure != FailureAborted || got.Reason != ReasonAborted || got.Attempts != 1 || len(s.arrivals()) != 1 {
		t.Errorf("finish %+v", got)
	}

	// During the sleep.
	s = newServer(t, status(503, "retry-after-ms", "1500"), status(200))
	e = events{}
	c, _ = client(t, &e)
	ctx, cancelCause := context.WithCancelCause(context.Background())
	reason := errors.New("the user left")
	timer = time.AfterFunc(100*time.Millisecond, func() { cancelCause(reason) })
	defer timer.Stop()
	start = time.Now()
	_, _, err = do(t, c, newRequest(t, ctx, "GET", s.URL+"/v1/sandboxes/sb-1", nil))
	if !errors.Is(err, reason) || time.Since(start) > time.Second {
		t.Fatalf("error %v after %v", err, time.Since(start))
	}
	if got := e.finish(t); got.Failure != FailureAborted || got.Reason != ReasonAborted || got.Status != 0 || e.reasons() != "retryable_status/1500" || len(s.arrivals()) != 1 {
		t.Errorf("finish %+v, events %s", got, e.reasons())
	}
}

// The RoundTripper never sleeps past the caller's deadline: when the wait would end after it,
// the last response comes back at once, and the budget pays for nothing.
func TestNeverSleepsPastTheCallersDeadline(t *testing.T) {
	s := newServer(t, status(503, "retry-after-ms", "1000"), status(200))
	var e events
	c, rt := client(t, &e)
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	start := time.Now()
	resp, _, err := do(t, c, newRequest(t, ctx, "GET", s.URL+"/v1/sandboxes/sb-1", nil))
	if err != nil || resp.StatusCode != 503 || time.Since(start) > 200*time.Millisecond {
		t.Fatalf("got %v %v after %v", resp, err, time.Since(start))
	}
	if got := e.finish(t); got.Reason != ReasonDeadline || got.Attempts != 1 || len(e.retries) != 0 || rt.Budget().Tokens() != 500 {
		t.Errorf("finish %+v, budget %d", got, rt.Budget().Tokens())
	}

	// A wait that ends before the deadline is made.
	s = newServer(t, status(503, "retry-after-ms", "50"), status(200))
	e = events{}
	c, _ = client(t, &e)
	resp, _, err = do(t, c, newRequest(t, ctx, "GET", s.URL+"/v1/sandboxes/sb-1", nil))
	if err != nil || resp.StatusCode != 200 || e.reasons() != "retryable_status/50" {
		t.Fatalf("got %v %v %s", resp, err, e.reasons())
	}
}

// One budget per RoundTripper, shared by its requests (K1-K4).
func TestTheBudgetIsTheClients(t *testing.T) {
	s := newServer(t, status(503))
	p := fastPolicy()
	p.BudgetCapacity, p.BudgetRetryCost, p.BudgetSuccessRefund = 10, 5, 1
	var e events
	c, rt := client(t, &e, WithPolicy(p))
	for _, want := range []int{3, 1} {
		before := len(s.arrivals())
		resp, _, err := do(t, c, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil))
		if err != nil || resp.StatusCode != 503 || len(s.arrivals())-before != want {
			t.Fatalf("got %v %v, %d arrivals, want %d", resp, err, len(s.arrivals())-before, want)
		}
	}
	if e.finishes[1].Reason != ReasonBudgetExhausted || rt.Budget().Tokens() != 0 {
		t.Errorf("finish %+v, budget %d", e.finishes[1], rt.Budget().Tokens())
	}
	ok := newServer(t, status(200))
	if _, _, err := do(t, c, newRequest(t, context.Background(), "GET", ok.URL+"/v1/sandboxes/sb-1", nil)); err != nil || rt.Budget().Tokens() != 1 {
		t.Errorf("a success without retries gives back the refund: %v, budget %d", err, rt.Budget().Tokens())
	}
}

func TestConcurrentRequestsShareOneBudget(t *testing.T) {
	var n atomic.Int64
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 1 {
			status(503)(w, r)
			return
		}
		status(200)(w, r)
	})
	c, rt := client(t, new(events))
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				resp, _, err := do(t, c, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil))
				if err != nil || resp.StatusCode >= 500 && resp.StatusCode != 503 {
					t.Errorf("got %v %v", resp, err)
				}
			}
		}()
	}
	wg.Wait()
	if tokens := rt.Budget().Tokens(); tokens < 0 || tokens > 500 {
		t.Errorf("budget %d", tokens)
	}
}

// A discarded response whose body the server is slow to send does not delay the retry.
func TestASlowDiscardedBodyDoesNotDelayTheRetry(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(503)
		w.(http.Flusher).Flush()
		select {
		case <-time.After(3 * time.Second):
		case <-r.Context().Done():
		}
	}, status(200))
	var e events
	c, _ := client(t, &e)
	start := time.Now()
	resp, _, err := do(t, c, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil))
	if err != nil || resp.StatusCode != 200 || time.Since(start) > time.Second {
		t.Fatalf("got %v %v after %v", resp, err, time.Since(start))
	}
}

func TestBaseURL(t *testing.T) {
	s := newServer(t, status(503), status(200))
	var e events
	c, _ := client(t, &e, WithBaseURL(s.URL+"/proxy/v1/"))
	resp, _, err := do(t, c, newRequest(t, context.Background(), "GET", s.URL+"/proxy/v1/sandboxes/sb%2F1", nil))
	if err != nil || resp.StatusCode != 200 || e.finish(t).OperationID != "getSandbox" {
		t.Fatalf("got %v %v %+v", resp, err, e.finishes)
	}
}

// An invalid option is an error, never a panic (a panic here fails the test run).
func TestInvalidConfigurationIsAnError(t *testing.T) {
	for _, tc := range []struct {
		option RoundTripperOption
		key    string
	}{
		{WithPolicy(Policy{}), "policy.initial_backoff_ms"},
		{WithBaseURL("/v1/\xff"), "input.base"},
		{WithAttemptHeader("X Retry"), "options.attempt_header"},
		{WithReadBody(-1), "options.read_body_max_bytes"},
	} {
		rt, err := NewRoundTripper(tc.option)
		var invalid *InvalidInput
		if rt != nil || !errors.As(err, &invalid) || invalid.Key != tc.key {
			t.Errorf("got %v %v, want %s", rt, err, tc.key)
		}
	}
}

// The zero value knows no API (a shared runtime serves several): it sends nothing and fails
// each request, rather than retrying under a policy no API declared.
func TestTheZeroValueSendsNothing(t *testing.T) {
	s := newServer(t, status(503, "Retry-After", "0"), status(200))
	var zero RoundTripper
	c := &http.Client{Transport: &zero}
	resp, err := c.Do(newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil))
	if resp != nil {
		_ = resp.Body.Close()
	}
	if err == nil || !errors.Is(err, errNoAPI) || len(s.arrivals()) != 0 || zero.Budget() != nil {
		t.Errorf("got %v, %d arrivals", err, len(s.arrivals()))
	}
	zero.CloseIdleConnections()
}

// Two APIs on one runtime: each RoundTripper classifies with its own API's operations, base path
// and declared policy, whichever API's tables were built first.
func TestTwoAPIsShareTheRuntime(t *testing.T) {
	other := fastPolicy()
	other.MaxRetries = 1
	volumes := NewAPI("/vol", other, []OperationRow{
		{Method: "GET", Route: "/volumes/{id}", Path: "/volumes/{id}", OperationID: "getVolume", HasOperationID: true, Class: ClassIdempotent},
		{Method: "POST", Route: "/sandboxes", Path: "/sandboxes", OperationID: "createVolumeSandbox", HasOperationID: true, Class: ClassIdempotent},
	})
	s := newServer(t, status(503, "Retry-After", "0"))
	var finishes []FinishEvent
	onFinish := WithOnFinish(func(_ *http.Request, f FinishEvent) { finishes = append(finishes, f) })
	sandbox := newRT(t, WithPolicy(fastPolicy()), onFinish)
	volume, err := volumes.NewRoundTripper(onFinish)
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range []struct {
		rt     *RoundTripper
		method string
		path   string
	}{
		// The sandbox API: GET is idempotent, 1 + 3 retries of its policy.
		{sandbox, "GET", "/v1/sandboxes/sb-1"},
		// The volume API's own policy: 1 + 1.
		{volume, "GET", "/vol/volumes/v-1"},
		// POST /sandboxes is idempotent in the volume API only: under /vol it is retried...
		{volume, "POST", "/vol/sandboxes"},
		// ...and not replayed through the sandbox API.
		{sandbox, "POST", "/v1/sandboxes"},
	} {
		resp, err := (&http.Client{Transport: call.rt}).Do(newRequest(t, context.Background(), call.method, s.URL+call.path, nil))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	got := make([]string, len(finishes))
	for i, f := range finishes {
		got[i] = fmt.Sprintf("%s %d %s", f.OperationID, f.Attempts, f.Reason)
	}
	want := []string{
		"getSandbox 4 exhausted",
		"getVolume 2 exhausted",
		"createVolumeSandbox 2 exhausted",
		"createSandbox 1 not_replayable",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("finish events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := len(s.arrivals()); n != 4+2+2+1 {
		t.Errorf("%d arrivals, want 9", n)
	}
	if volumes.BasePath() != "/vol" || Tables().BasePath() != BasePath || volumes.DefaultPolicy().MaxRetries != 1 {
		t.Errorf("the APIs' own values: %q %q %+v", volumes.BasePath(), Tables().BasePath(), volumes.DefaultPolicy())
	}
}

// newRT is NewRoundTripper with options the test knows to be valid.
func newRT(t testing.TB, options ...RoundTripperOption) *RoundTripper {
	t.Helper()
	rt, err := NewRoundTripper(options...)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// benchmarkGet measures a GET answered 200 at once through rt, on loopback.
func benchmarkGet(b *testing.B, wrap func(http.RoundTripper) http.RoundTripper) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	defer s.Close()
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	c := &http.Client{Transport: wrap(transport)}
	req, _ := http.NewRequest("GET", s.URL+"/v1/sandboxes/sb-1", nil)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
}

func BenchmarkGet(b *testing.B) {
	b.Run("bare", func(b *testing.B) {
		benchmarkGet(b, func(next http.RoundTripper) http.RoundTripper { return next })
	})
	b.Run("adapter", func(b *testing.B) {
		benchmarkGet(b, func(next http.RoundTripper) http.RoundTripper { return newRT(b, WithNext(next)) })
	})
}

// The adapter's own work on a request that succeeds at once, without the network: a
// RoundTripper that answers at once stands for the transport. A GET, and a POST to a keyed
// operation, which mints a key.
func BenchmarkOverhead(b *testing.B) {
	answer := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
	})
	rt := newRT(b, WithNext(answer))
	b.Run("GET", func(b *testing.B) {
		req, _ := http.NewRequest("GET", "http://api.example/v1/sandboxes/sb-1", nil)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := rt.RoundTrip(req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("keyed POST", func(b *testing.B) {
		req, _ := http.NewRequest("POST", "http://api.example/v1/v2/sandboxes", bytes.NewReader([]byte("{}")))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			req.Body, _ = req.GetBody()
			if _, err := rt.RoundTrip(req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// On a request that succeeds at once, the RoundTripper adds a few small allocations to the
// client's (the attempt's copy of the request and its context with the attempt's number, the
// returned response's copy of the caller's request with the finish event, net/http's wrapper of
// the empty body), and no buffer: without emptyBody.WriteTo, net/http would allocate 32 KiB per GET to copy nothing.
// (The race detector allocates more of its own: the bound on bytes leaves room for it.)
func TestOverheadOnASuccessIsSmall(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	defer s.Close()
	measure := func(wrap func(http.RoundTripper) http.RoundTripper) (allocs, bytes float64) {
		transport := &http.Transport{}
		defer transport.CloseIdleConnections()
		c := &http.Client{Transport: wrap(transport)}
		req := newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil)
		get := func() {
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		get()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		const n = 200
		for i := 0; i < n; i++ {
			get()
		}
		runtime.ReadMemStats(&after)
		return float64(after.Mallocs-before.Mallocs) / n, float64(after.TotalAlloc-before.TotalAlloc) / n
	}
	bareAllocs, bareBytes := measure(func(next http.RoundTripper) http.RoundTripper { return next })
	allocs, bytes := measure(func(next http.RoundTripper) http.RoundTripper { return newRT(t, WithNext(next)) })
	if allocs-bareAllocs > 8 || bytes-bareBytes > 16<<10 {
		t.Errorf("the RoundTripper adds %.1f allocations and %.0f bytes per request (bare: %.1f, %.0f)", allocs-bareAllocs, bytes-bareBytes, bareAllocs, bareBytes)
	}
}

// A RoundTripper below the adapter (WithNext) reads the idempotency key with Header.Get: a
// minted key, on a bodyless keyed POST too, is set under its canonical name.
func TestTheKeyIsVisibleBelowTheAdapter(t *testing.T) {
	for _, body := range []string{"", "{}"} {
		s := newServer(t, status(201))
		transport := &http.Transport{}
		defer transport.CloseIdleConnections()
		var seen []string
		below := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			seen = append(seen, req.Header.Get("Idempotency-Key"))
			return transport.RoundTrip(req)
		})
		c := &http.Client{Transport: newRT(t, WithPolicy(fastPolicy()), WithNext(below))}
		var content io.Reader
		if body != "" {
			content = strings.NewReader(body)
		}
		if _, _, err := do(t, c, newRequest(t, context.Background(), "POST", s.URL+"/v1/v2/sandboxes", content)); err != nil {
			t.Fatal(err)
		}
		arrived := s.arrivals()[0].header.Get("Idempotency-Key")
		if len(seen) != 1 || !uuidV4.MatchString(seen[0]) || seen[0] != arrived {
			t.Errorf("body %q: the RoundTripper below saw %q, the server %q", body, seen, arrived)
		}
	}
}

// Over plain HTTP/1.1 through an *http.Transport, a bodyless request that net/http does not
// resend keeps no body: a create still says "Content-Length: 0" as without the adapter. Where
// the Transport may speak HTTP/2 (h2c here) it carries the empty body.
func TestABodylessCreateKeepsItsContentLengthOverHTTP1(t *testing.T) {
	s := newServer(t, status(201))
	c, _ := client(t, &events{})
	if _, _, err := do(t, c, newRequest(t, context.Background(), "POST", s.URL+"/v1/sandboxes", nil)); err != nil {
		t.Fatal(err)
	}
	if a := s.arrivals()[0]; a.header.Get("Content-Length") != "0" || len(a.transferEncoding) != 0 {
		t.Errorf("arrival %+v", a)
	}
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	h2c := &http.Transport{Protocols: &protocols}
	for _, tc := range []struct {
		name string
		next http.RoundTripper
		url  string
		want bool
	}{
		{"http", &http.Transport{}, "http://api.example/v1/sandboxes", true},
		{"https", &http.Transport{}, "https://api.example/v1/sandboxes", false},
		{"h2c", h2c, "http://api.example/v1/sandboxes", false},
		{"https proxy", &http.Transport{Proxy: func(*http.Request) (*url.URL, error) { return url.Parse("https://proxy.example") }}, "http://api.example/v1/sandboxes", false},
		{"http proxy", &http.Transport{Proxy: func(*http.Request) (*url.URL, error) { return url.Parse("http://proxy.example") }}, "http://api.example/v1/sandboxes", true},
		{"another RoundTripper", roundTripFunc(nil), "http://api.example/v1/sandboxes", false},
	} {
		if got := onlyHTTP1(tc.next, newRequest(t, context.Background(), "POST", tc.url, nil)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// [docs/adapters.md rule 0] With a base URL that has an origin, a request to another origin is
// passed through: one attempt whatever its class, no key minted, no budget, no retry event, one
// finish event saying foreign_origin.
func TestAForeignOriginPassesThrough(t *testing.T) {
	api := newServer(t, status(503), status(201))
	for _, tc := range []struct {
		name, method, path string
	}{
		{"create", "POST", "/v1/sandboxes"},
		{"keyed", "POST", "/v1/v2/sandboxes"},
		{"get", "get", "/v1/sandboxes/sb-1"},
	} {
		other := newServer(t, status(503), status(201))
		var e events
		c, rt := client(t, &e, WithBaseURL(api.URL+"/v1"))
		resp, _, err := do(t, c, newRequest(t, context.Background(), tc.method, other.URL+tc.path, strings.NewReader("{}")))
		if err != nil || resp.StatusCode != 503 {
			t.Fatalf("%s: got %v %v", tc.name, resp, err)
		}
		arrivals := other.arrivals()
		if len(arrivals) != 1 || arrivals[0].header.Get("Idempotency-Key") != "" {
			t.Errorf("%s: arrivals %+v", tc.name, arrivals)
		}
		want := FinishEvent{Attempts: 1, Reason: ReasonForeignOrigin, Status: 503, Method: strings.ToUpper(tc.method)}
		if got := e.finish(t); got != want || e.reasons() != "" || rt.Budget().Tokens() != 500 {
			t.Errorf("%s: finish %+v, events %q, budget %d", tc.name, got, e.reasons(), rt.Budget().Tokens())
		}
		// A failure too: one attempt, its outcome reported.
		e = events{}
		c, _ = client(t, &e, WithBaseURL(api.URL+"/v1"))
		if _, _, err := do(t, c, newRequest(t, context.Background(), "GET", "http://"+freePort(t)+"/v1/sandboxes/sb-1", nil)); err == nil {
			t.Fatalf("%s: the closed port answered", tc.name)
		}
		if got := e.finish(t); got.Attempts != 1 || got.Reason != ReasonForeignOrigin || got.Failure != FailureConnect {
			t.Errorf("%s: finish %+v", tc.name, got)
		}
	}
	// The same origin written otherwise (case, default port) is the API's.
	var e events
	c, _ := client(t, &e, WithBaseURL(strings.Replace(api.URL, "http://", "HTTP://", 1)+"/v1"))
	if resp, _, err := do(t, c, newRequest(t, context.Background(), "GET", api.URL+"/v1/sandboxes/sb-1", nil)); err != nil || resp.StatusCode != 201 || e.finish(t).Attempts != 2 {
		t.Errorf("same origin: %v %v %+v", resp, err, e.finishes)
	}
}

// [docs/adapters.md callbacks that throw] A panicking on-retry callback ends the request: the
// finish event comes once with the attempts sent, no attempt follows, the discarded response
// goes back to the pool, and the panic reaches the caller. A panicking on-finish callback
// closes the response it would have returned.
func TestCallbacksThatPanic(t *testing.T) {
	s := newServer(t, status(503), status(200))
	var e events
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	// Below the adapter, a RoundTripper that records whether the response bodies were closed.
	var closed atomic.Bool
	below := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := transport.RoundTrip(req)
		if err == nil {
			resp.Body = closeRecorder{resp.Body, &closed}
		}
		return resp, err
	})
	options := append(e.options(), WithPolicy(fastPolicy()), WithNext(below), WithOnRetry(func(*http.Request, RetryEvent) { panic("on retry") }))
	c := &http.Client{Transport: newRT(t, options...)}
	recovered := func(f func()) (value any) {
		defer func() { value = recover() }()
		f()
		return nil
	}
	value := recovered(func() {
		_, _ = c.Do(newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil))
	})
	if value != "on retry" {
		t.Fatalf("recovered %v", value)
	}
	if got := e.finish(t); got.Attempts != 1 || got.Reason != ReasonRetryableStatus || got.Status != 503 || len(s.arrivals()) != 1 {
		t.Errorf("finish %+v, %d arrivals", got, len(s.arrivals()))
	}
	// The discarded 503 is released in the background.
	for deadline := time.Now().Add(5 * time.Second); !closed.Load() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if !closed.Load() {
		t.Error("the response the panicking on-retry discarded was not closed")
	}

	closed.Store(false)
	c = &http.Client{Transport: newRT(t, WithNext(below), WithOnFinish(func(*http.Request, FinishEvent) { panic("on finish") }))}
	value = recovered(func() {
		_, _ = c.Do(newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil))
	})
	if value != "on finish" || !closed.Load() {
		t.Errorf("recovered %v; the response the panicking on-finish would have returned closed: %v", value, closed.Load())
	}
}

// closeRecorder records that a body was closed.
type closeRecorder struct {
	io.ReadCloser
	closed *atomic.Bool
}

func (b closeRecorder) Close() error {
	b.closed.Store(true)
	return b.ReadCloser.Close()
}
