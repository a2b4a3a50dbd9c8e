package retrypolicy

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// HTTP/2 frames net/http's own server never sends on demand: a minimal HTTP/2 server with prior
// knowledge (h2c, RFC 9113) on 127.0.0.1, standard library only, answers each request, once its
// stream has ended (END_STREAM on HEADERS or DATA), with the next of its steps. The client is a
// real http.Transport speaking unencrypted HTTP/2 (Transport.Protocols).

// h2Step is what the server does with request n on stream id.
type h2Step int

const (
	h2OK       h2Step = iota // HEADERS :status 200, END_STREAM
	h2Protocol               // RST_STREAM(PROTOCOL_ERROR): the request was read, may have been processed
	h2Refused                // RST_STREAM(REFUSED_STREAM): not processed (RFC 9113 section 8.7)
	h2GoAway                 // GOAWAY(last stream id 0, NO_ERROR): not processed
)

type h2Server struct {
	listener net.Listener
	steps    []h2Step
	mu       sync.Mutex
	// requests counts the requests that reached the server, processed the ones answered 200.
	requests, processed int
	wg                  sync.WaitGroup
}

func newH2Server(t *testing.T, steps ...h2Step) *h2Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &h2Server{listener: l, steps: steps}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(func() {
		_ = l.Close()
		s.wg.Wait()
	})
	return s
}

func (s *h2Server) url() string { return "http://" + s.listener.Addr().String() }

func (s *h2Server) counts() (requests, processed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests, s.processed
}

func (s *h2Server) accept() {
	defer s.wg.Done()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for {
		conn, err := s.listener.Accept()
		if err != nil {
			return
		}
		conns = append(conns, conn)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer conn.Close()
			s.serve(conn)
		}()
	}
}

// frame writes one frame: length, type, flags, stream id, payload (RFC 9113 section 4.1).
func writeFrame(w io.Writer, kind, flags byte, stream uint32, payload []byte) error {
	var head [9]byte
	head[0], head[1], head[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	head[3], head[4] = kind, flags
	binary.BigEndian.PutUint32(head[5:], stream)
	_, err := w.Write(append(head[:], payload...))
	return err
}

const (
	frameData, frameHeaders, frameRST, frameSettings, framePing, frameGoAway = 0, 1, 3, 4, 6, 7
	flagEndStream, flagAck, flagEndHeaders                                   = 0x1, 0x1, 0x4
)

func (s *h2Server) serve(conn net.Conn) {
	preface := make([]byte, len("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
	if _, err := io.ReadFull(conn, preface); err != nil {
		return
	}
	if writeFrame(conn, frameSettings, 0, 0, nil) != nil {
		return
	}
	for {
		var head [9]byte
		if _, err := io.ReadFull(conn, head[:]); err != nil {
			return
		}
		payload := make([]byte, int(head[0])<<16|int(head[1])<<8|int(head[2]))
		if _, err := io.ReadFull(conn, payload); err != nil {
			return
		}
		kind, flags, stream := head[3], head[4], binary.BigEndian.Uint32(head[5:])&0x7fffffff
		var err error
		switch {
		case kind == frameSettings && flags&flagAck == 0:
			err = writeFrame(conn, frameSettings, flagAck, 0, nil)
		case kind == framePing && flags&flagAck == 0:
			err = writeFrame(conn, framePing, flagAck, 0, payload)
		case (kind == frameHeaders || kind == frameData) && flags&flagEndStream != 0:
			err = s.answer(conn, stream)
		}
		if err != nil {
			return
		}
	}
}

func (s *h2Server) answer(conn net.Conn, stream uint32) error {
	s.mu.Lock()
	step := s.steps[min(s.requests, len(s.steps)-1)]
	s.requests++
	if step == h2OK {
		s.processed++
	}
	s.mu.Unlock()
	code := make([]byte, 4)
	switch step {
	case h2Protocol:
		binary.BigEndian.PutUint32(code, 0x1)
		return writeFrame(conn, frameRST, 0, stream, code)
	case h2Refused:
		binary.BigEndian.PutUint32(code, h2RefusedStream)
		return writeFrame(conn, frameRST, 0, stream, code)
	case h2GoAway:
		// Last stream id 0, NO_ERROR: no stream of this connection was processed.
		return writeFrame(conn, frameGoAway, 0, 0, make([]byte, 8))
	}
	// HPACK: indexed field 8 of the static table, ":status: 200".
	return writeFrame(conn, frameHeaders, flagEndHeaders|flagEndStream, stream, []byte{0x88})
}

// h2cTransport is an http.Transport that speaks HTTP/2 with prior knowledge to http URLs.
func h2cTransport(t *testing.T) *http.Transport {
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	transport := &http.Transport{Protocols: &protocols}
	t.Cleanup(transport.CloseIdleConnections)
	return transport
}

// THE TRAP over HTTP/2: net/http's HTTP/2 code resends a request with no body (or with a
// GetBody) after a RST_STREAM(PROTOCOL_ERROR) on its own, whatever its method
// (http2canRetryError, golang/go#47635), although the server read it and may have processed it.
// The control run (a bare Transport) shows a bodyless create reaching the server twice for one
// call; through the RoundTripper it arrives once, a transport failure not retried
// (non_replayable), and a GET is retried by the policy instead.
func TestHTTP2DoesNotResendAfterAProtocolError(t *testing.T) {
	for _, tc := range []struct {
		name, method, path, body string
	}{
		{"bodyless create", "POST", "/v1/sandboxes", ""},
		{"bodyless DELETE", "DELETE", "/v1/sandboxes/sb-1", ""},
		{"bodyless keyed POST", "POST", "/v1/v2/sandboxes", ""},
		{"create", "POST", "/v1/sandboxes", "{}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newReq := func(url string) *http.Request {
				var body io.Reader
				if tc.body != "" {
					body = strings.NewReader(tc.body)
				}
				return newRequest(t, context.Background(), tc.method, url+tc.path, body)
			}
			control := newH2Server(t, h2Protocol, h2OK)
			if resp, _, err := do(t, &http.Client{Transport: h2cTransport(t)}, newReq(control.url())); err != nil || resp.StatusCode != 200 {
				t.Fatalf("control: %v %v", resp, err)
			}
			if n, _ := control.counts(); n != 2 {
				t.Fatalf("control: %d requests on a bare Transport, want 2 (its own resend)", n)
			}
			s := newH2Server(t, h2Protocol, h2OK)
			p := fastPolicy()
			p.MaxRetries = 0
			var e events
			c := &http.Client{Transport: newRT(t, append(e.options(), WithPolicy(p), WithNext(h2cTransport(t)))...)}
			if _, _, err := do(t, c, newReq(s.url())); err == nil {
				t.Fatal("the reset stream succeeded")
			}
			if n, _ := s.counts(); n != 1 {
				t.Errorf("%d requests through the RoundTripper, want 1", n)
			}
			if got := e.finish(t); got.Failure != FailureTransport || got.Attempts != 1 {
				t.Errorf("finish %+v", got)
			}
		})
	}
	s := newH2Server(t, h2Protocol, h2OK)
	var e events
	c := &http.Client{Transport: newRT(t, append(e.options(), WithPolicy(fastPolicy()), WithNext(h2cTransport(t)))...)}
	resp, _, err := do(t, c, newRequest(t, context.Background(), "GET", s.url()+"/v1/sandboxes/sb-1", nil))
	if err != nil || resp.StatusCode != 200 || e.reasons() != "transport_failure/1" {
		t.Fatalf("GET: %v %v %s", resp, err, e.reasons())
	}
}

// A stream the server refused unprocessed (REFUSED_STREAM, a GOAWAY below it) never reached the
// application: the adapter retries it as a connect failure, a non-replayable create included,
// so that turning net/http's own resend off loses nothing.
func TestHTTP2RefusalsAreConnectFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		step h2Step
		body string
	}{
		{"refused stream", h2Refused, "{}"},
		{"refused bodyless stream", h2Refused, ""},
		{"GOAWAY below the stream", h2GoAway, "{}"},
		{"GOAWAY below a bodyless stream", h2GoAway, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newH2Server(t, tc.step, h2OK)
			var e events
			c := &http.Client{Transport: newRT(t, append(e.options(), WithPolicy(fastPolicy()), WithNext(h2cTransport(t)))...)}
			var body io.Reader
			if tc.body != "" {
				body = bytes.NewReader([]byte(tc.body))
			}
			resp, _, err := do(t, c, newRequest(t, context.Background(), "POST", s.url()+"/v1/sandboxes", body))
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("got %v %v", resp, err)
			}
			if got := e.reasons(); got != "connect_failure/1" {
				t.Errorf("events %s", got)
			}
			if requests, processed := s.counts(); requests != 2 || processed != 1 {
				t.Errorf("%d requests, %d processed", requests, processed)
			}
		})
	}
}

func TestIsUnprocessedRefusal(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"http2: Transport: cannot retry err [stream error: stream ID 3; REFUSED_STREAM; received from peer] after Request.Body was written; define Request.GetBody to avoid this error", true},
		{"http2: Transport: cannot retry err [stream error: stream ID 1; REFUSED_STREAM] after Request.Body was written; define Request.GetBody to avoid this error", true},
		{"http2: Transport: cannot retry err [http2: Transport received Server's graceful shutdown GOAWAY] after Request.Body was written; define Request.GetBody to avoid this error", true},
		{"http2: Transport received GOAWAY from server ErrCode:ENHANCE_YOUR_CALM", true},
		{"http2: Transport: cannot retry err [stream error: stream ID 3; PROTOCOL_ERROR; received from peer] after Request.Body was written; define Request.GetBody to avoid this error", false},
		{"http2: Transport: cannot retry err [stream error: stream ID 3; REFUSED_STREAMX] after Request.Body was written; define Request.GetBody to avoid this error", false},
		{"http2: server sent GOAWAY and closed the connection; LastStreamID=1, ErrCode=NO_ERROR, debug=\"\"", false},
		{"stream error: stream ID 3; REFUSED_STREAM", false},
	} {
		err := &wrapped{msg: "outer", err: errorString(tc.text)}
		if got := isUnprocessedRefusal(err); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.text, got, tc.want)
		}
	}
	// The stream error itself, as golang.org/x/net/http2 would return it, read by errors.As.
	if !isUnprocessedRefusal(&wrapped{msg: "outer", err: h2StreamError{StreamID: 3, Code: h2RefusedStream}}) {
		t.Error("a REFUSED_STREAM stream error is not a refusal")
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg + ": " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }
