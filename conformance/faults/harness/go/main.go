// Command runner is the Go run of the fault matrix (conformance/faults/README.md): it sends each
// scenario of the file it is given through an http.Client whose Transport is the generated
// package's RoundTripper over a real http.Transport, and prints one JSON line per scenario. The
// build places the package rendered from conformance/faults/spec.yaml (operations.go,
// runtime.go, roundtripper.go) in the retrypolicy folder of this module.
//
// The client speaks RETRYGEN_FAULT_PROTOCOL: http1, h2c (HTTP/2 with prior knowledge),
// http1-tls or h2, over TLS trusting exactly the CA in RETRYGEN_FAULT_CA_FILE.
//
// With RETRYGEN_FAULT_BENCH=N it runs no scenario and measures the adapter's overhead instead;
// with RETRYGEN_FAULT_SOAK set, its argument is a soak plan, sent over one client.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"retrygen.example/faultrunner/retrypolicy"
)

type scenarioFile struct {
	BasePath  string     `json:"base_path"`
	Scenarios []scenario `json:"scenarios"`
}

type scenario struct {
	ID               string            `json:"id"`
	Method           string            `json:"method"`
	Path             string            `json:"path"`
	Target           string            `json:"target"`
	Headers          map[string]string `json:"headers"`
	Body             *bodySpec         `json:"body"`
	MintKeys         *bool             `json:"mint_keys"`
	AttemptTimeoutMs int64             `json:"attempt_timeout_ms"`
	AbortAfterMs     int64             `json:"abort_after_ms"`
	Warm             bool              `json:"warm"`
	WarmClose        bool              `json:"warm_close"`
	WarmPauseMs      int64             `json:"warm_pause_ms"`
	// Overrides go on the request's context (docs/adapters.md P1); AttemptHeader and
	// ReadBodyMaxBytes configure the client (P3, P6).
	Overrides        *overrides `json:"overrides"`
	AttemptHeader    string     `json:"attempt_header"`
	ReadBodyMaxBytes int64      `json:"read_body_max_bytes"`
	// Policy replaces keys of the module's default policy for the scenario's client (contract
	// v3).
	Policy *policyKeys `json:"policy"`
	// CloseAfterEvents: the runner closes the body once it read that many complete events
	// (contract X4, a caller closing a stream while reading it).
	CloseAfterEvents int `json:"close_after_events"`
}

// policyKeys are the policy keys a scenario may replace.
type policyKeys struct {
	IdempotencyKeyFormat *string `json:"idempotency_key_format"`
}

type overrides struct {
	MaxRetries       *int   `json:"max_retries"`
	AttemptTimeoutMs *int64 `json:"attempt_timeout_ms"`
	ReadBodyMaxBytes *int64 `json:"read_body_max_bytes"`
}

// soakPlan is the plan of the soak (conformance/faults/README.md, the soak).
type soakPlan struct {
	AttemptTimeoutMs int64      `json:"attempt_timeout_ms"`
	Requests         []scenario `json:"requests"`
}

type bodySpec struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// line is what the runner prints for one scenario.
type line struct {
	ID        string  `json:"id"`
	Status    *int    `json:"status"`
	Error     *string `json:"error"`
	Body      *string `json:"body"`
	BodyError bool    `json:"body_error"`
	Events    []event `json:"events"`
	Finish    *finish `json:"finish"`
	// Finishes counts the finish events of the call (a redirect http.Client follows is a
	// request of its own); ReportedArrivals sums their attempts and redirects.
	Finishes         int   `json:"finishes"`
	ReportedArrivals int64 `json:"reported_arrivals"`
	// FinishFromResult is the finish event read back from what the call returned (P5).
	FinishFromResult *finish `json:"finish_from_result,omitempty"`
	ErrorType        *string `json:"error_type"`
	ElapsedMs        int64   `json:"elapsed_ms"`
}

type event struct {
	Attempt      int64   `json:"attempt"`
	Reason       string  `json:"reason"`
	DelayMs      int64   `json:"delay_ms"`
	Method       string  `json:"method"`
	PathTemplate *string `json:"path_template"`
	OperationID  *string `json:"operation_id"`
}

type finish struct {
	Attempts     int64   `json:"attempts"`
	Reason       string  `json:"reason"`
	Outcome      string  `json:"outcome"`
	Status       *int    `json:"status"`
	TimedOut     bool    `json:"timed_out"`
	Redirects    int64   `json:"redirects"`
	Method       string  `json:"method"`
	PathTemplate *string `json:"path_template"`
	OperationID  *string `json:"operation_id"`
	TotalDelayMs int64   `json:"total_delay_ms"`
	// ServerDelayMs is the refused server delay (contract v3 X8), null when none.
	ServerDelayMs *int64 `json:"server_delay_ms"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: runner SCENARIOS.json")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail(err)
	}
	var file scenarioFile
	if err := json.Unmarshal(data, &file); err != nil {
		fail(fmt.Errorf("%s: %w", os.Args[1], err))
	}
	out := bufio.NewWriter(os.Stdout)
	basePath := file.BasePath
	if value := os.Getenv("RETRYGEN_FAULT_BASE_PATH"); value != "" {
		basePath = value
	}
	if os.Getenv("RETRYGEN_FAULT_SOAK") != "" {
		var plan soakPlan
		if err := json.Unmarshal(data, &plan); err != nil {
			fail(fmt.Errorf("%s: %w", os.Args[1], err))
		}
		soak(out, basePath, plan)
	} else if rounds := os.Getenv("RETRYGEN_FAULT_BENCH"); rounds != "" {
		n, err := strconv.Atoi(rounds)
		if err != nil || n < 1 {
			fail(fmt.Errorf("RETRYGEN_FAULT_BENCH=%q: want a positive number", rounds))
		}
		writeLine(out, map[string]any{"bench": bench(basePath, n)})
	} else {
		for _, s := range file.Scenarios {
			writeLine(out, run(basePath, s))
		}
	}
	if err := out.Flush(); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "runner:", err)
	os.Exit(1)
}

func writeLine(out *bufio.Writer, value any) {
	text, err := json.Marshal(value)
	if err != nil {
		fail(err)
	}
	out.Write(text)
	out.WriteByte('\n')
	// A line per scenario as soon as it is known, for whoever watches a slow run.
	if err := out.Flush(); err != nil {
		fail(err)
	}
}

// newTransport is a transport of the scenario's own: a new client's connection pool, and no
// proxy, since the matrix talks to 127.0.0.1 and to a name that must fail to resolve here. It
// speaks the run's protocol and nothing else, and over TLS trusts the test CA only.
func newTransport() *http.Transport {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil
	var protocols http.Protocols
	switch protocol := os.Getenv("RETRYGEN_FAULT_PROTOCOL"); protocol {
	case "", "http1", "http1-tls":
		protocols.SetHTTP1(true)
	case "h2c":
		// HTTP/2 with prior knowledge: no HTTP/1 for http URLs.
		protocols.SetUnencryptedHTTP2(true)
	case "h2":
		protocols.SetHTTP2(true)
	default:
		fail(fmt.Errorf("RETRYGEN_FAULT_PROTOCOL=%q: this runner speaks http1, h2c, http1-tls and h2", protocol))
	}
	transport.Protocols = &protocols
	if file := os.Getenv("RETRYGEN_FAULT_CA_FILE"); file != "" {
		pem, err := os.ReadFile(file)
		if err != nil {
			fail(err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			fail(fmt.Errorf("%s: no certificate", file))
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return transport
}

// recorder keeps what the callbacks receive.
type recorder struct {
	mu       sync.Mutex
	events   []event
	finishes []finish
}

func optional(s string, present bool) *string {
	if !present {
		return nil
	}
	return &s
}

func (r *recorder) onRetry(_ *http.Request, e retrypolicy.RetryEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event{
		Attempt:      e.Attempt,
		Reason:       string(e.Reason),
		DelayMs:      e.DelayMs,
		Method:       e.Method,
		PathTemplate: optional(e.PathTemplate, e.PathTemplate != ""),
		OperationID:  optional(e.OperationID, e.HasOperationID),
	})
}

func (r *recorder) onFinish(_ *http.Request, e retrypolicy.FinishEvent) {
	f := finishLine(e)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finishes = append(r.finishes, *f)
}

// finishLine is a finish event in the line's field names.
func finishLine(e retrypolicy.FinishEvent) *finish {
	f := &finish{
		Attempts:     e.Attempts,
		Reason:       string(e.Reason),
		Outcome:      string(e.Failure),
		TimedOut:     e.TimedOut,
		Redirects:    e.Redirects,
		Method:       e.Method,
		PathTemplate: optional(e.PathTemplate, e.PathTemplate != ""),
		OperationID:  optional(e.OperationID, e.HasOperationID),
		TotalDelayMs: e.TotalDelayMs,
	}
	if e.ServerDelayMs != 0 {
		delay := e.ServerDelayMs
		f.ServerDelayMs = &delay
	}
	if e.Failure == "" {
		f.Outcome = "status"
		status := e.Status
		f.Status = &status
	}
	return f
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events, r.finishes = nil, nil
}

// targetURL is the URL of the scenario's target, from the runner's environment.
func targetURL(target string) string {
	variable := map[string]string{
		"":              "RETRYGEN_FAULT_URL",
		"server":        "RETRYGEN_FAULT_URL",
		"closed_port":   "RETRYGEN_FAULT_CLOSED_URL",
		"unresolvable":  "RETRYGEN_FAULT_UNRESOLVABLE_URL",
		"other_origin":  "RETRYGEN_FAULT_OTHER_ORIGIN_URL",
		"untrusted_tls": "RETRYGEN_FAULT_UNTRUSTED_URL",
		"tls_mismatch":  "RETRYGEN_FAULT_TLS_MISMATCH_URL",
	}[target]
	value := os.Getenv(variable)
	if variable == "" || value == "" {
		fail(fmt.Errorf("target %q: %s is not set", target, variable))
	}
	return strings.TrimRight(value, "/")
}

// oneShot is a body the client can send only once: a reader http.NewRequest does not know, so
// the request has no GetBody and no declared length.
type oneShot struct {
	io.Reader
}

// newClient is a client with the adapter (base URL base) over a transport of its own.
func newClient(base string, rec *recorder, mintKeys *bool, attemptTimeoutMs int64, attemptHeader string, readBody int64, keys *policyKeys) (*http.Client, *http.Transport) {
	transport := newTransport()
	options := []retrypolicy.RoundTripperOption{
		retrypolicy.WithBaseURL(base),
		retrypolicy.WithOnRetry(rec.onRetry),
		retrypolicy.WithOnFinish(rec.onFinish),
		retrypolicy.WithNext(transport),
	}
	if mintKeys != nil {
		options = append(options, retrypolicy.WithMintIdempotencyKeys(*mintKeys))
	}
	if attemptTimeoutMs > 0 {
		options = append(options, retrypolicy.WithAttemptTimeout(time.Duration(attemptTimeoutMs)*time.Millisecond))
	}
	if attemptHeader != "" {
		options = append(options, retrypolicy.WithAttemptHeader(attemptHeader))
	}
	if readBody > 0 {
		options = append(options, retrypolicy.WithReadBody(readBody))
	}
	if keys != nil {
		policy := retrypolicy.DefaultPolicy()
		if keys.IdempotencyKeyFormat != nil {
			format, err := retrypolicy.ParseKeyFormat(*keys.IdempotencyKeyFormat)
			if err != nil {
				fail(err)
			}
			policy.IdempotencyKeyFormat = format
		}
		options = append(options, retrypolicy.WithPolicy(policy))
	}
	retries, err := retrypolicy.NewRoundTripper(options...)
	if err != nil {
		fail(err)
	}
	return &http.Client{Transport: retries}, transport
}

// warmUp sends the warm-up request through the client and reads its body: with close, the
// server closes that connection after answering (a stale pooled connection).
func warmUp(client *http.Client, url, id string, closing bool) {
	warm, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		fail(err)
	}
	warm.Header.Set("x-fault-run", os.Getenv("RETRYGEN_FAULT_RUN"))
	warm.Header.Set("x-fault-scenario", id)
	warm.Header.Set("x-fault-warmup", "1")
	if closing {
		warm.Header.Set("x-fault-warmup", "close")
	}
	resp, err := client.Do(warm)
	if err != nil {
		fail(fmt.Errorf("%s: warm-up: %w", id, err))
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
}

func run(basePath string, s scenario) line {
	kind := s.Target
	if kind == "other_origin" {
		// The base URL stays the server's; the request goes to the other origin.
		kind = "server"
	}
	base := targetURL(kind) + basePath
	target := base + s.Path
	if s.Target == "other_origin" {
		target = targetURL("other_origin") + basePath + s.Path
	}
	var rec recorder
	client, transport := newClient(base, &rec, s.MintKeys, s.AttemptTimeoutMs, s.AttemptHeader, s.ReadBodyMaxBytes, s.Policy)
	defer transport.CloseIdleConnections()
	if s.Warm {
		// Through the same client, so that the scenario's request goes over the kept-alive
		// connection (or the one the server closed); its events are not the scenario's.
		warmUp(client, base+"/health", s.ID, s.WarmClose)
		time.Sleep(time.Duration(s.WarmPauseMs) * time.Millisecond)
	}
	return send(client, &rec, s, target)
}

// send sends one request of a scenario or of the soak and returns its line.
func send(client *http.Client, rec *recorder, s scenario, target string) line {
	rec.reset()
	ctx := context.Background()
	var cancel context.CancelFunc = func() {}
	if s.AbortAfterMs > 0 {
		ctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	if o := s.Overrides; o != nil {
		var set retrypolicy.Overrides
		if o.MaxRetries != nil {
			set.MaxRetries, set.HasMaxRetries = *o.MaxRetries, true
		}
		if o.AttemptTimeoutMs != nil {
			set.AttemptTimeout, set.HasAttemptTimeout = time.Duration(*o.AttemptTimeoutMs)*time.Millisecond, true
		}
		if o.ReadBodyMaxBytes != nil {
			set.ReadBodyMaxBytes, set.HasReadBodyMaxBytes = *o.ReadBodyMaxBytes, true
		}
		ctx = retrypolicy.WithOverrides(ctx, set)
	}
	var content io.Reader
	if s.Body != nil {
		switch s.Body.Kind {
		case "bytes":
			content = bytes.NewReader([]byte(s.Body.Text))
		case "stream":
			content = oneShot{strings.NewReader(s.Body.Text)}
		default:
			fail(fmt.Errorf("%s: unknown body kind %q", s.ID, s.Body.Kind))
		}
	}
	req, err := http.NewRequestWithContext(ctx, s.Method, target, content)
	if err != nil {
		fail(fmt.Errorf("%s: %w", s.ID, err))
	}
	for name, value := range s.Headers {
		// As written: the adapter must find a caller's key under any case of its name.
		req.Header[name] = []string{value}
	}
	req.Header.Set("x-fault-run", os.Getenv("RETRYGEN_FAULT_RUN"))
	req.Header.Set("x-fault-scenario", s.ID)

	out := line{ID: s.ID}
	start := time.Now()
	if s.AbortAfterMs > 0 {
		timer := time.AfterFunc(time.Duration(s.AbortAfterMs)*time.Millisecond, cancel)
		defer timer.Stop()
	}
	resp, err := client.Do(req)
	if err == nil {
		status := resp.StatusCode
		out.Status = &status
		var text []byte
		var readErr error
		if s.CloseAfterEvents > 0 {
			text, readErr = readEvents(resp.Body, s.CloseAfterEvents)
		} else {
			text, readErr = io.ReadAll(resp.Body)
		}
		_ = resp.Body.Close()
		if readErr != nil {
			out.BodyError = true
		} else {
			body := string(text)
			out.Body = &body
		}
	}
	// Read once the body is closed: a resumable stream's finish comes at its end (X4).
	if event, ok := retrypolicy.FinishOf(resp, err); ok {
		out.FinishFromResult = finishLine(event)
	}
	out.ElapsedMs = time.Since(start).Milliseconds()

	rec.mu.Lock()
	out.Events = rec.events
	out.Finishes = len(rec.finishes)
	for i := range rec.finishes {
		out.ReportedArrivals += rec.finishes[i].Attempts + rec.finishes[i].Redirects
	}
	if n := len(rec.finishes); n > 0 {
		last := rec.finishes[n-1]
		out.Finish = &last
	}
	rec.mu.Unlock()
	if out.Events == nil {
		out.Events = []event{}
	}
	failed := out.Finish != nil && out.Finish.Outcome != "status"
	switch {
	case out.Finish == nil || failed != (err != nil):
		mismatch := "mismatch"
		out.Error = &mismatch
	case failed:
		out.Error = &out.Finish.Outcome
	}
	if err != nil {
		// http.Client wraps the RoundTripper's error in a *url.Error: name the one inside.
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		// And the adapter's in a *FinishedError (P5): name the client's.
		var finished *retrypolicy.FinishedError
		if errors.As(err, &finished) {
			err = finished.Err
		}
		name := fmt.Sprintf("%T", err)
		out.ErrorType = &name
	}
	return out
}

// readEvents reads body until the text read holds n complete events (n blank lines ending an
// event), and returns exactly that text; the caller then closes the body while the stream goes
// on.
func readEvents(body io.Reader, n int) ([]byte, error) {
	var text []byte
	buf := make([]byte, 4096)
	for bytes.Count(text, []byte("\n\n")) < n {
		k, err := body.Read(buf)
		text = append(text, buf[:k]...)
		if err == io.EOF && bytes.Count(text, []byte("\n\n")) < n {
			return text, io.ErrUnexpectedEOF
		}
		if err != nil && err != io.EOF {
			return text, err
		}
	}
	return text, nil
}

// resources are the process's open descriptors and resident memory, from /proc/self.
type resources struct {
	FDs   int   `json:"fds"`
	RSSKB int64 `json:"rss_kb"`
}

func measureResources() resources {
	var r resources
	if entries, err := os.ReadDir("/proc/self/fd"); err == nil {
		r.FDs = len(entries)
	}
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(status), "\n") {
			if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
				r.RSSKB, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			}
		}
	}
	return r
}

// soak sends every request of the plan over one client (conformance/faults/README.md, the
// soak), printing its resources before and after.
func soak(out *bufio.Writer, basePath string, plan soakPlan) {
	base := targetURL("server") + basePath
	var rec recorder
	client, transport := newClient(base, &rec, nil, plan.AttemptTimeoutMs, "", 0, nil)
	defer transport.CloseIdleConnections()
	warmUp(client, base+"/health", "soak-warmup", false)
	writeLine(out, map[string]any{"soak_start": measureResources()})
	for _, s := range plan.Requests {
		writeLine(out, send(client, &rec, s, base+s.Path))
	}
	runtime.GC()
	writeLine(out, map[string]any{"soak_end": measureResources()})
}

// overhead is the bench line (conformance/faults/README.md, overhead mode), with the peer's
// figures beside the adapter's.
type overhead struct {
	Requests          int      `json:"requests"`
	BareUs            float64  `json:"bare_us"`
	AdapterUs         float64  `json:"adapter_us"`
	OverheadUs        float64  `json:"overhead_us"`
	OverheadPct       float64  `json:"overhead_pct"`
	AllocatedBytes    *float64 `json:"allocated_bytes_per_request"`
	AllocationCounter string   `json:"allocation_counter"`
	Peers             []peer   `json:"peers"`
}

// peer is the most used retry layer of the language on the same request (issue 20 item 7).
type peer struct {
	Name           string  `json:"name"`
	Us             float64 `json:"us"`
	OverheadUs     float64 `json:"overhead_us"`
	OverheadPct    float64 `json:"overhead_pct"`
	AllocatedBytes float64 `json:"allocated_bytes_per_request"`
}

// bench times GET <server><base>/health with a bare client, with the adapter installed (every
// option at its default) and with hashicorp/go-retryablehttp's client (StandardClient, its
// defaults, no logger), each over a transport of its own, in rotating order, and counts the
// bytes each allocates.
func bench(basePath string, rounds int) overhead {
	target := targetURL("server") + basePath + "/health"
	bareTransport, adapterTransport, peerTransport := newTransport(), newTransport(), newTransport()
	defer bareTransport.CloseIdleConnections()
	defer adapterTransport.CloseIdleConnections()
	defer peerTransport.CloseIdleConnections()
	bare := &http.Client{Transport: bareTransport}
	retries, err := retrypolicy.NewRoundTripper(retrypolicy.WithNext(adapterTransport))
	if err != nil {
		fail(err)
	}
	adapter := &http.Client{Transport: retries}
	retryable := retryablehttp.NewClient()
	retryable.HTTPClient = &http.Client{Transport: peerTransport}
	retryable.Logger = nil
	peerClient := retryable.StandardClient()
	req, err := http.NewRequest(http.MethodGet, target, nil)
	if err != nil {
		fail(err)
	}
	req.Header.Set("x-fault-warmup", "1")
	req.Header.Set("x-fault-run", os.Getenv("RETRYGEN_FAULT_RUN"))
	req.Header.Set("x-fault-scenario", "bench")
	send := func(c *http.Client) {
		resp, err := c.Do(req)
		if err != nil {
			fail(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	clients := []*http.Client{bare, adapter, peerClient}
	for i := 0; i < 200; i++ {
		for _, c := range clients {
			send(c)
		}
	}
	var stats runtime.MemStats
	// measure times one request and counts what the process allocated meanwhile (the
	// transport's connection goroutines included, for every client alike).
	measure := func(c *http.Client) (time.Duration, uint64) {
		runtime.ReadMemStats(&stats)
		before := stats.TotalAlloc
		start := time.Now()
		send(c)
		elapsed := time.Since(start)
		runtime.ReadMemStats(&stats)
		return elapsed, stats.TotalAlloc - before
	}
	times := make([][]time.Duration, len(clients))
	allocated := make([]uint64, len(clients))
	for i := 0; i < rounds; i++ {
		for k := range clients {
			// Each client first, second and third in turn.
			n := (i + k) % len(clients)
			elapsed, bytes := measure(clients[n])
			times[n] = append(times[n], elapsed)
			allocated[n] += bytes
		}
	}
	bareUs, adapterUs, peerUs := median(times[0]), median(times[1]), median(times[2])
	perRequest := func(n int) float64 {
		return (float64(allocated[n]) - float64(allocated[0])) / float64(rounds)
	}
	extra := perRequest(1)
	return overhead{
		Requests:          2 * rounds,
		BareUs:            bareUs,
		AdapterUs:         adapterUs,
		OverheadUs:        adapterUs - bareUs,
		OverheadPct:       (adapterUs - bareUs) / bareUs * 100,
		AllocatedBytes:    &extra,
		AllocationCounter: "runtime.MemStats.TotalAlloc",
		Peers: []peer{{
			Name:           "hashicorp/go-retryablehttp " + retryablehttpVersion,
			Us:             peerUs,
			OverheadUs:     peerUs - bareUs,
			OverheadPct:    (peerUs - bareUs) / bareUs * 100,
			AllocatedBytes: perRequest(2),
		}},
	}
}

// retryablehttpVersion is the version go.mod requires.
const retryablehttpVersion = "v0.7.8"

// median is the median of times, in microseconds.
func median(times []time.Duration) float64 {
	sorted := slices.Clone(times)
	slices.Sort(sorted)
	n := len(sorted)
	middle := sorted[n/2]
	if n%2 == 0 {
		middle = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	return float64(middle) / float64(time.Microsecond)
}
