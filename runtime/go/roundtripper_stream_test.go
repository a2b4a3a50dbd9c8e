package retrypolicy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Event streams under contract v3 (docs/contract.md section 12, X1-X4): the commit, complete events
// through the scanner, the resume with Last-Event-ID and the finish at the stream's end,
// against real servers on 127.0.0.1 through a real http.Transport. The stand-in's streams:
// GET /sandboxes/{sandboxID}/events (idempotent, resumable), POST /sandboxes/{sandboxID}/runs
// (non_replayable, resumable), GET /sandboxes/{sandboxID}/metrics (idempotent, not resumable).

// eventText is event i as the test servers write it.
func eventText(i int) string {
	return fmt.Sprintf("id: %d\ndata: line %d\n\n", i, i)
}

// eventsText is events from to to, in order.
func eventsText(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		b.WriteString(eventText(i))
	}
	return b.String()
}

// rawStream answers a chunked text/event-stream written by hand, one chunk per piece (each
// flushed), then the body's end, or with drop the connection closed before it.
func rawStream(drop bool, pieces ...string) step {
	return pacedStream(0, drop, pieces...)
}

// pacedStream is rawStream with a pause after each piece.
func pacedStream(pause time.Duration, drop bool, pieces ...string) step {
	return func(w http.ResponseWriter, _ *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		writeStream(buf, drop, pause, pieces...)
	}
}

func writeStream(buf *bufio.ReadWriter, drop bool, pause time.Duration, pieces ...string) {
	_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
	for _, piece := range pieces {
		_, _ = fmt.Fprintf(buf, "%x\r\n%s\r\n", len(piece), piece)
		_ = buf.Flush()
		time.Sleep(pause)
	}
	if !drop {
		_, _ = buf.WriteString("0\r\n\r\n")
	}
	_ = buf.Flush()
}

// sse answers events from the request's Last-Event-ID + 1 (1 without one) to n, at most
// dropAfter of them (0 for all) before a drop, as the fault server's sse_events does.
func sse(n, dropAfter int) step {
	return func(w http.ResponseWriter, r *http.Request) {
		from := 1
		if id := r.Header.Get("Last-Event-ID"); id != "" {
			last, _ := strconv.Atoi(id)
			from = last + 1
		}
		to, drop := n, false
		if dropAfter > 0 && from+dropAfter-1 < n {
			to, drop = from+dropAfter-1, true
		}
		var pieces []string
		for i := from; i <= to; i++ {
			pieces = append(pieces, eventText(i))
		}
		rawStream(drop, pieces...)(w, r)
	}
}

// lastEventIDs lists the Last-Event-ID of each arrival, "-" where absent.
func lastEventIDs(s *server) string {
	var ids []string
	for _, a := range s.arrivals() {
		id := "-"
		if values := a.header.Values("Last-Event-Id"); len(values) > 0 {
			id = strings.Join(values, ",")
		}
		ids = append(ids, id)
	}
	return strings.Join(ids, " ")
}

// readStream sends req and reads the whole body; the finish events are checked to come only
// at the stream's end.
func readStream(t *testing.T, c *http.Client, e *events, req *http.Request) (*http.Response, string, error) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("the request failed: %v", err)
	}
	e.mu.Lock()
	early := len(e.finishes)
	e.mu.Unlock()
	if _, ok := FinishOf(resp, nil); ok || early != 0 {
		t.Errorf("a finish before the stream's end: %d events, FinishOf %v", early, ok)
	}
	body, readErr := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	return resp, string(body), readErr
}

func TestAResumableStreamIsResumedAfterADrop(t *testing.T) {
	s := newServer(t, sse(5, 3), sse(5, 0))
	var e events
	c, _ := client(t, &e)
	resp, body, err := readStream(t, c, &e, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1/events", nil))
	// [X3] One continuous stream, each event once.
	if err != nil || body != eventsText(1, 5) {
		t.Fatalf("read %q, %v", body, err)
	}
	if got := lastEventIDs(s); got != "- 3" {
		t.Errorf("Last-Event-ID per arrival %s, want - 3", got)
	}
	if got := e.reasons(); got != "stream_resume/1" {
		t.Errorf("events %s", got)
	}
	// [X4] The finish at the end, counting the resume.
	finish := e.finish(t)
	if finish.Attempts != 2 || finish.Reason != ReasonStatusNotRetryable || finish.Status != 200 || finish.Failure != "" || finish.TotalDelayMs != 1 {
		t.Errorf("finish %+v", finish)
	}
	if got, ok := FinishOf(resp, nil); !ok || got != finish {
		t.Errorf("FinishOf %+v %v, want %+v", got, ok, finish)
	}
}

func TestTheCallerReadsCompleteEventsOnly(t *testing.T) {
	// The drop cuts event 3: its bytes are discarded and the resume starts after event 2.
	s := newServer(t, rawStream(true, eventsText(1, 2)+"id: 3\ndata: li"), sse(4, 0))
	var e events
	c, _ := client(t, &e)
	_, body, err := readStream(t, c, &e, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1/events", nil))
	if err != nil || body != eventsText(1, 4) {
		t.Fatalf("read %q, %v", body, err)
	}
	if got := lastEventIDs(s); got != "- 2" {
		t.Errorf("Last-Event-ID per arrival %s", got)
	}

	// An event arrives in pieces: the caller gets it whole, and the retry: field is the
	// resume's delay (S9).
	s = newServer(t, pacedStream(20*time.Millisecond, true, "retry: 30\nid: 1\nda", "ta: line 1\n", "\n", eventText(2)), sse(3, 0))
	e = events{}
	c, _ = client(t, &e)
	resp, err := c.Do(newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1/events", nil))
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 1024)
	n, err := resp.Body.Read(first)
	if err != nil || string(first[:n]) != "retry: 30\n"+eventText(1) {
		t.Errorf("first read %q, %v: want the first event whole", first[:n], err)
	}
	rest, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil || string(first[:n])+string(rest) != "retry: 30\n"+eventsText(1, 3) {
		t.Errorf("read %q, %v", rest, err)
	}
	if got := e.reasons(); got != "stream_resume/30" {
		t.Errorf("events %s", got)
	}
}

func TestADropBeforeTheFirstEventResumesFromTheCallersID(t *testing.T) {
	// The caller resumes a stream itself (Last-Event-ID: 2); the answer drops before any event:
	// the resume asks for what follows event 2 again, so the caller reads 3-5 once each.
	s := newServer(t, rawStream(true), sse(5, 0))
	var e events
	c, _ := client(t, &e)
	req := newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1/events", nil)
	req.Header.Set("Last-Event-ID", "2")
	_, body, err := readStream(t, c, &e, req)
	if err != nil || body != eventsText(3, 5) {
		t.Fatalf("read %q, %v", body, err)
	}
	if got := lastEventIDs(s); got != "2 2" {
		t.Errorf("Last-Event-ID per arrival %s, want 2 2", got)
	}
}

func TestAResumedStreamKeepsItsLastEventIDAndDropsItsMark(t *testing.T) {
	// The resumed response sets no id and starts with a byte order mark: the stream's last
	// event id stays 2 for the next resume, and the caller reads no mark mid-stream.
	s := newServer(t, rawStream(true, eventsText(1, 2)), rawStream(true, "\xef\xbb\xbfdata: more\n\n"), sse(3, 0))
	var e events
	c, _ := client(t, &e)
	_, body, err := readStream(t, c, &e, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1/events", nil))
	if err != nil || body != eventsText(1, 2)+"data: more\n\n"+eventText(3) {
		t.Fatalf("read %q, %v", body, err)
	}
	if got := lastEventIDs(s); got != "- 2 2" {
		t.Errorf("Last-Event-ID per arrival %s", got)
	}
}

func TestAStreamWithoutProgressStopsAfterMaxRetries(t *testing.T) {
	s := newServer(t, rawStream(true))
	var e events
	c, _ := client(t, &e)
	_, _, err := readStream(t, c, &e, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1/events", nil))
	// Refused: the client's own read error.
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("read error %v, want the client's", err)
	}
	if got := len(s.arrivals()); got != 4 {
		t.Errorf("%d arrivals, want 1 + max_retries", got)
	}
	if finish := e.finish(t); finish.Reason != ReasonExhausted || finish.Attempts != 4 {
		t.Errorf("finish %+v", finish)
	}

	// [A7] A resume that delivered an event resets the count: six drops, each after progress.
	s = newServer(t, sse(7, 1))
	e = events{}
	p := fastPolicy()
	p.MaxRetries = 1
	c, _ = client(t, &e, WithPolicy(p))
	_, body, err := readStream(t, c, &e, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1/events", nil))
	if err != nil || body != eventsText(1, 7) || len(s.arrivals()) != 7 {
		t.Errorf("read %q, %v, %d arrivals", body, err, len(s.arrivals()))
	}
}

func TestANonReplayableStreamResumesOnlyWithAnID(t *testing.T) {
	s := newServer(t, sse(4, 2), sse(4, 0))
	var e events
	c, _ := client(t, &e)
	req := newRequest(t, context.Background(), "POST", s.URL+"/v1/sandboxes/sb-1/runs", strings.NewReader(`{"cmd":"build"}`))
	_, body, err := readStream(t, c, &e, req)
	if err != nil || body != eventsText(1, 4) || lastEventIDs(s) != "- 2" {
		t.Fatalf("read %q, %v, Last-Event-ID %s", body, err, lastEventIDs(s))
	}
	for i, a := range s.arrivals() {
		if a.body != `{"cmd":"build"}` {
			t.Errorf("arrival %d body %q", i, a.body)
		}
	}

	// Without an id a resume is a full replay, which a create may not have.
	s = newServer(t, rawStream(true, "data: 1\n\n"), sse(4, 0))
	e = events{}
	c, _ = client(t, &e)
	req = newRequest(t, context.Background(), "POST", s.URL+"/v1/sandboxes/sb-1/runs", strings.NewReader(`{"cmd":"build"}`))
	_, body, err = readStream(t, c, &e, req)
	if !errors.Is(err, io.ErrUnexpectedEOF) || body != "data: 1\n\n" || len(s.arrivals()) != 1 {
		t.Errorf("read %q, %v, %d arrivals", body, err, len(s.arrivals()))
	}
	if finish := e.finish(t); finish.Reason != ReasonStreamNotResumable || finish.Attempts != 1 {
		t.Errorf("finish %+v", finish)
	}
}

func TestAResumeAnsweredOtherwiseEndsTheStream(t *testing.T) {
	s := newServer(t, sse(4, 2), status(404))
	var e events
	c, _ := client(t, &e)
	_, body, err := readStream(t, c, &e, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1/events", nil))
	var answered *StreamStatusError
	if !errors.As(err, &answered) || answered.StatusCode != 404 || body != eventsText(1, 2) {
		t.Fatalf("read %q, %v", body, err)
	}
	if finish := e.finish(t); finish.Reason != ReasonStatusNotRetryable || finish.Attempts != 2 {
		t.Errorf("finish %+v", finish)
	}

	// A retryable status before the resume's commit is decided as any attempt.
	s = newServer(t, sse(4, 2), status(503), sse(4, 0))
	e = events{}
	c, _ = client(t, &e)
	_, body, err = readStream(t, c, &e, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1/events", nil))
	if err != nil || body != eventsText(1, 4) || lastEventIDs(s) != "- 2 2" || e.reasons() != "stream_resume/1 retryable_status/2" {
		t.Errorf("read %q, %v, Last-Event-ID %s, events %s", body, err, lastEventIDs(s), e.reasons())
	}
	if finish := e.finish(t); finish.Attempts != 3 {
		t.Errorf("finish %+v", finish)
	}
}

func TestANonResumableStreamIsTheClients(t *testing.T) {
	s := newServer(t, sse(4, 2), sse(4, 0))
	var e events
	c, _ := client(t, &e)
	resp, err := c.Do(newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1/metrics", nil))
	if err != nil {
		t.Fatal(err)
	}
	// The finish at the commit, as in v2; the drop is the caller's.
	if finish := e.finish(t); finish.Attempts != 1 || finish.Reason != ReasonStatusNotRetryable {
		t.Errorf("finish %+v", finish)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !errors.Is(err, io.ErrUnexpectedEOF) || string(body) != eventsText(1, 2) || len(s.arrivals()) != 1 {
		t.Errorf("read %q, %v, %d arrivals", body, err, len(s.arrivals()))
	}
}

func TestClosingAStreamFinishesIt(t *testing.T) {
	s := newServer(t, sse(4, 2), sse(4, 0))
	var e events
	c, _ := client(t, &e)
	resp, err := c.Do(newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1/events", nil))
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 1024)
	if _, err := resp.Body.Read(first); err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if finish := e.finish(t); finish.Attempts != 1 {
		t.Errorf("finish %+v", finish)
	}
	if _, err := resp.Body.Read(first); err == nil {
		t.Error("a read after Close succeeded")
	}
	if _, ok := FinishOf(resp, nil); !ok {
		t.Error("no finish on the response once closed")
	}
}

func TestClosingAStreamStopsItsResume(t *testing.T) {
	// The resume waits the stream's retry: field (5 s); the caller closes the body meanwhile.
	s := newServer(t, rawStream(true, "retry: 5000\n"+eventText(1)), sse(3, 0))
	var e events
	c, _ := client(t, &e)
	resp, err := c.Do(newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1/events", nil))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(resp.Body)
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	_ = resp.Body.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Error("the read ended without an error")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not interrupt the resume's sleep")
	}
	if time.Since(start) > time.Second || len(s.arrivals()) != 1 {
		t.Errorf("%d arrivals", len(s.arrivals()))
	}
	// [X4] Aborted, as a cancellation between attempts: no status, the caller ended the call.
	if finish := e.finish(t); finish.Attempts != 1 || finish.Reason != ReasonAborted || finish.Failure != FailureAborted || finish.Status != 0 {
		t.Errorf("finish %+v", finish)
	}
}

func TestTheAttemptTimeoutEndsAtTheCommit(t *testing.T) {
	// Events every 40 ms for 200 ms, under an attempt timeout of 50 ms (X1).
	slow := pacedStream(40*time.Millisecond, false, eventText(1), eventText(2), eventText(3), eventText(4), eventText(5))
	for _, path := range []string{"/v1/sandboxes/sb-1/events", "/v1/sandboxes/sb-1/metrics"} {
		s := newServer(t, slow)
		var e events
		c, _ := client(t, &e, WithAttemptTimeout(50*time.Millisecond), WithReadBody(1<<20))
		resp, err := c.Do(newRequest(t, context.Background(), "GET", s.URL+path, nil))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || string(body) != eventsText(1, 5) || len(s.arrivals()) != 1 {
			t.Errorf("%s: read %q, %v, %d arrivals", path, body, err, len(s.arrivals()))
		}
	}
}

func TestAnEventOverTheBoundEndsResumability(t *testing.T) {
	huge := "data: " + strings.Repeat("x", maxPartialEvent+10)
	s := newServer(t, rawStream(true, eventText(1), huge[:maxPartialEvent/2], huge[maxPartialEvent/2:]), sse(3, 0))
	var e events
	c, _ := client(t, &e)
	_, body, err := readStream(t, c, &e, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1/events", nil))
	// The bytes pass as they come, and the drop is the caller's.
	if !errors.Is(err, io.ErrUnexpectedEOF) || body != eventText(1)+huge || len(s.arrivals()) != 1 {
		t.Errorf("read %d bytes, %v, %d arrivals", len(body), err, len(s.arrivals()))
	}
	if finish := e.finish(t); finish.Attempts != 1 {
		t.Errorf("finish %+v", finish)
	}
}

func TestAResumeCarriesTheAttemptHeaderAndTheCallersHeaders(t *testing.T) {
	s := newServer(t, sse(3, 1), sse(3, 1), sse(3, 0))
	var e events
	c, _ := client(t, &e, WithAttemptHeader("X-Attempt"))
	req := newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1/events", nil)
	req.Header.Set("X-Trace", "t-1")
	// The caller's own Last-Event-ID opens the stream; the resumes carry the scanner's.
	req.Header["last-event-id"] = []string{"0"}
	_, body, err := readStream(t, c, &e, req)
	if err != nil || body != eventsText(1, 3) {
		t.Fatalf("read %q, %v", body, err)
	}
	var got []string
	for _, a := range s.arrivals() {
		got = append(got, a.header.Get("X-Attempt")+"/"+a.header.Get("X-Trace")+"/"+a.header.Get("Last-Event-Id"))
	}
	if strings.Join(got, " ") != "0/t-1/0 1/t-1/1 2/t-1/2" {
		t.Errorf("arrivals %v", got)
	}
	if finish := e.finish(t); finish.Attempts != 3 || e.reasons() != "stream_resume/1 stream_resume/1" {
		t.Errorf("finish %+v, events %s", finish, e.reasons())
	}
}

func TestTheCallersCancellationEndsAStreamWithoutResume(t *testing.T) {
	s := newServer(t, pacedStream(time.Second, false, eventText(1), eventText(2)), sse(3, 0))
	var e events
	c, _ := client(t, &e)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := c.Do(newRequest(t, ctx, "GET", s.URL+"/v1/sandboxes/sb-1/events", nil))
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 1024)
	if _, err := resp.Body.Read(first); err != nil {
		t.Fatal(err)
	}
	cancel()
	_, err = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !errors.Is(err, context.Canceled) || len(s.arrivals()) != 1 {
		t.Errorf("read error %v, %d arrivals", err, len(s.arrivals()))
	}
	if finish := e.finish(t); finish.Attempts != 1 || len(e.retries) != 0 {
		t.Errorf("finish %+v, %d retries", finish, len(e.retries))
	}
}

// heldStream answers a chunked text/event-stream with the pieces, then holds it open until the
// client goes away (at most 10 s), as the fault server's sse_events with hold_after does: only
// the caller's close or cancellation ends the read.
func heldStream(pieces ...string) step {
	return func(w http.ResponseWriter, _ *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		writeStream(buf, true, 0, pieces...)
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.Copy(io.Discard, conn)
	}
}

// readEvents reads body until it holds n complete events and returns what it read.
func readEvents(t *testing.T, body io.Reader, n int) string {
	t.Helper()
	var got []byte
	buf := make([]byte, 1024)
	for strings.Count(string(got), "\n\n") < n {
		k, err := body.Read(buf)
		got = append(got, buf[:k]...)
		if err != nil {
			t.Fatalf("read %q, then %v", got, err)
		}
	}
	return string(got)
}

// endedWhileReading checks the finish of a resumable stream the caller ended while reading it
// (X4): the committed response's status with the reason aborted, one send, no resume, the same
// finish on the response (P5), and only once.
func endedWhileReading(t *testing.T, s *server, e *events, resp *http.Response) {
	t.Helper()
	if _, err := resp.Body.Read(make([]byte, 16)); err == nil {
		t.Error("a read after the end succeeded")
	}
	_ = resp.Body.Close()
	want := FinishEvent{Attempts: 1, Reason: ReasonAborted, Status: 200, Method: "GET", PathTemplate: "/sandboxes/{sandboxID}/events", OperationID: "streamEvents", HasOperationID: true}
	if finish := e.finish(t); finish != want {
		t.Errorf("finish %+v, want %+v", finish, want)
	}
	if finish, ok := FinishOf(resp, nil); !ok || finish != want {
		t.Errorf("FinishOf %+v %v", finish, ok)
	}
	time.Sleep(50 * time.Millisecond)
	if len(s.arrivals()) != 1 || len(e.retries) != 0 {
		t.Errorf("%d arrivals, events %s", len(s.arrivals()), e.reasons())
	}
}

func TestClosingAStreamWhileReadingEndsItAborted(t *testing.T) {
	s := newServer(t, heldStream(eventText(1), eventText(2)), sse(5, 0))
	var e events
	c, _ := client(t, &e)
	resp, err := c.Do(newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1/events", nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := readEvents(t, resp.Body, 2); got != eventsText(1, 2) {
		t.Fatalf("read %q", got)
	}
	// No Read under way: Close itself ends the stream.
	start := time.Now()
	_ = resp.Body.Close()
	if time.Since(start) > time.Second {
		t.Error("Close waited for the held stream")
	}
	endedWhileReading(t, s, &e, resp)
}

func TestClosingAStreamDuringAReadEndsItAborted(t *testing.T) {
	s := newServer(t, heldStream(eventText(1), eventText(2)), sse(5, 0))
	var e events
	c, _ := client(t, &e)
	resp, err := c.Do(newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1/events", nil))
	if err != nil {
		t.Fatal(err)
	}
	readEvents(t, resp.Body, 2)
	done := make(chan error, 1)
	go func() {
		_, err := resp.Body.Read(make([]byte, 1024))
		done <- err
	}()
	// The Read waits on the held stream; Close ends it there.
	time.Sleep(100 * time.Millisecond)
	_ = resp.Body.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Error("the read ended without an error")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not end the Read under way")
	}
	endedWhileReading(t, s, &e, resp)
}

func TestCancellingAStreamWhileReadingEndsItAborted(t *testing.T) {
	for _, during := range []bool{false, true} {
		s := newServer(t, heldStream(eventText(1), eventText(2)), sse(5, 0))
		var e events
		c, _ := client(t, &e)
		ctx, cancel := context.WithCancel(context.Background())
		resp, err := c.Do(newRequest(t, ctx, "GET", s.URL+"/v1/sandboxes/sb-1/events", nil))
		if err != nil {
			t.Fatal(err)
		}
		readEvents(t, resp.Body, 2)
		if during {
			// The Read waits on the held stream when the context ends: the client's error, not
			// a drop to resume.
			time.AfterFunc(100*time.Millisecond, cancel)
			if _, err := io.ReadAll(resp.Body); !errors.Is(err, context.Canceled) {
				t.Errorf("read error %v", err)
			}
		} else {
			cancel()
		}
		endedWhileReading(t, s, &e, resp)
		cancel()
	}
}

// TestAStreamsBudgetCountsEachEventStreamAnswer pins the budget of a resumable stream (contract
// X3, K3): each 2xx event-stream answer is a success when it arrives (the commit's with the
// cost of the last retry before it, the refund without one; each resume's with that resume's
// cost), and the stream's end, clean or the caller's close, records nothing more.
func TestAStreamsBudgetCountsEachEventStreamAnswer(t *testing.T) {
	for _, closeAfter := range []bool{false, true} {
		resumed := rawStream(false, eventText(2))
		if closeAfter {
			resumed = heldStream(eventText(2))
		}
		s := newServer(t, status(503), status(503), status(503), status(503), rawStream(true, eventText(1)), resumed)
		p := fastPolicy()
		p.MaxBackoffMs, p.MaxRetries = 1, 3
		p.BudgetCapacity, p.BudgetRetryCost, p.BudgetTimeoutCost, p.BudgetSuccessRefund = 20, 5, 10, 1
		var (
			e                 events
			rt                *RoundTripper
			mu                sync.Mutex
			granted, finished []int64
			last              FinishEvent
		)
		c, rt := client(t, &e, WithPolicy(p),
			WithOnRetry(func(*http.Request, RetryEvent) {
				mu.Lock()
				defer mu.Unlock()
				granted = append(granted, rt.Budget().Tokens())
			}),
			WithOnFinish(func(_ *http.Request, ev FinishEvent) {
				mu.Lock()
				defer mu.Unlock()
				finished, last = append(finished, rt.Budget().Tokens()), ev
			}))
		// [K3] Three retries granted (20, 15, 10, 5), then a 503: not a success, nothing back.
		resp, _, err := do(t, c, newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1", nil))
		if err != nil || resp.StatusCode != 503 || rt.Budget().Tokens() != 5 {
			t.Fatalf("got %v %v, budget %d, want 503 and 5", resp, err, rt.Budget().Tokens())
		}
		resp, err = c.Do(newRequest(t, context.Background(), "GET", s.URL+"/v1/sandboxes/sb-1/events", nil))
		if err != nil {
			t.Fatal(err)
		}
		// [X3] The commit's answer, not retried: the refund.
		if got := rt.Budget().Tokens(); got != 6 {
			t.Errorf("close %v: budget %d after the commit, want 6", closeAfter, got)
		}
		// The drop after event 1 is resumed (5 taken), and the resume's answer gives the 5 back
		// before its event 2 reaches the caller.
		if got := readEvents(t, resp.Body, 2); got != eventsText(1, 2) {
			t.Fatalf("read %q", got)
		}
		if got := rt.Budget().Tokens(); got != 6 {
			t.Errorf("close %v: budget %d after the resume's answer, want 6", closeAfter, got)
		}
		if !closeAfter {
			if rest, err := io.ReadAll(resp.Body); err != nil || len(rest) != 0 {
				t.Errorf("after event 2: %q, %v", rest, err)
			}
		}
		_ = resp.Body.Close()
		// The budget as each retry was granted (the resume's 5 taken: 1) and at each finish (the
		// 503's, then the stream's).
		mu.Lock()
		if got := fmt.Sprint(granted, finished); got != "[15 10 5 1] [5 6]" {
			t.Errorf("close %v: budget at the retries and the finishes %s, want [15 10 5 1] [5 6]", closeAfter, got)
		}
		reason := ReasonStatusNotRetryable
		if closeAfter {
			reason = ReasonAborted
		}
		if last.Status != 200 || last.Attempts != 2 || last.Reason != reason {
			t.Errorf("close %v: the stream's finish %+v", closeAfter, last)
		}
		mu.Unlock()
		// [X3] The stream's end recorded nothing more.
		if got := rt.Budget().Tokens(); got != 6 {
			t.Errorf("close %v: budget %d at the end, want 6", closeAfter, got)
		}
	}
}
