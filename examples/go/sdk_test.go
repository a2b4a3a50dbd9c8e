package sandboxsdk

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"

	"retrygen.example/sandboxsdk/retrypolicy"
	"retrygen.example/sandboxsdk/sandboxapi"
)

// A call is one scenario of conformance/faults/scenarios.json made through the SDK's own
// methods. The server answers it with the scenario's script; xtask then compares the arrivals it
// counted with the scenario's.
type call struct {
	// options configure the SDK's retries as the scenario says.
	options []retrypolicy.RoundTripperOption
	// send makes the call; edit adds the fault server's two headers.
	send func(ctx context.Context, c *sandboxapi.ClientWithResponses, edit sandboxapi.RequestEditorFn) (*http.Response, []byte, error)
	// status is the status the call returns, or 0 when it fails with failure.
	status   int
	failure  retrypolicy.FailureKind
	attempts int64
	body     string
}

func get(ctx context.Context, c *sandboxapi.ClientWithResponses, edit sandboxapi.RequestEditorFn) (*http.Response, []byte, error) {
	resp, err := c.GetSandboxWithResponse(ctx, "sb-1", edit)
	if err != nil {
		return nil, nil, err
	}
	return resp.HTTPResponse, resp.Body, nil
}

func create(ctx context.Context, c *sandboxapi.ClientWithResponses, edit sandboxapi.RequestEditorFn) (*http.Response, []byte, error) {
	resp, err := c.CreateSandboxWithResponse(ctx, edit)
	if err != nil {
		return nil, nil, err
	}
	return resp.HTTPResponse, resp.Body, nil
}

var calls = map[string]call{
	"get-503-503-200":           {send: get, status: 200, attempts: 3, body: "ok"},
	"create-503-not-replayable": {send: create, status: 503, attempts: 1},
	"create-reset-arrives-once": {send: create, failure: retrypolicy.FailureTransport, attempts: 1},
	"kill-reset-arrives-twice": {send: func(ctx context.Context, c *sandboxapi.ClientWithResponses, edit sandboxapi.RequestEditorFn) (*http.Response, []byte, error) {
		resp, err := c.KillSandboxWithResponse(ctx, "sb-1", edit)
		if err != nil {
			return nil, nil, err
		}
		return resp.HTTPResponse, resp.Body, nil
	}, status: 204, attempts: 2},
	// The keyed operation: the adapter mints the key the SDK did not set (xtask checks it).
	"snapshot-minted-key-reset": {send: func(ctx context.Context, c *sandboxapi.ClientWithResponses, edit sandboxapi.RequestEditorFn) (*http.Response, []byte, error) {
		resp, err := c.SnapshotSandboxWithResponse(ctx, "sb-1", nil, edit)
		if err != nil {
			return nil, nil, err
		}
		return resp.HTTPResponse, resp.Body, nil
	}, status: 201, attempts: 2},
	// The generated client reads the body after the transport returns: cut, it is retried only
	// when the adapter reads it inside the loop.
	"get-body-cut-read-in-loop-retried": {options: []retrypolicy.RoundTripperOption{retrypolicy.WithReadBody(64 << 10)}, send: get, status: 200, attempts: 2, body: "ok"},
	// A per-request override, on the context the SDK's method takes.
	"get-override-max-retries-0-once": {send: func(ctx context.Context, c *sandboxapi.ClientWithResponses, edit sandboxapi.RequestEditorFn) (*http.Response, []byte, error) {
		return get(retrypolicy.WithOverrides(ctx, retrypolicy.Overrides{MaxRetries: 0, HasMaxRetries: true}), c, edit)
	}, status: 503, attempts: 1},
	"get-attempt-header-counts-earlier-attempts": {options: []retrypolicy.RoundTripperOption{retrypolicy.WithAttemptHeader("X-Retry-Attempt")}, send: get, status: 200, attempts: 3, body: "ok"},
}

// TestScenariosThroughTheSDK runs the scenarios named in RETRYGEN_EXAMPLE_SCENARIOS against the
// fault server at RETRYGEN_FAULT_URL (cargo xtask runtime-tests --lang go sets both).
func TestScenariosThroughTheSDK(t *testing.T) {
	server, ids := os.Getenv("RETRYGEN_FAULT_URL"), os.Getenv("RETRYGEN_EXAMPLE_SCENARIOS")
	if server == "" || ids == "" {
		t.Fatal("RETRYGEN_FAULT_URL and RETRYGEN_EXAMPLE_SCENARIOS are not set: run cargo xtask runtime-tests --lang go")
	}
	for _, id := range strings.Split(ids, ",") {
		c, ok := calls[id]
		if !ok {
			t.Errorf("%s: no call for this scenario", id)
			continue
		}
		t.Run(id, func(t *testing.T) {
			var finishes []retrypolicy.FinishEvent
			options := append([]retrypolicy.RoundTripperOption{retrypolicy.WithOnFinish(func(_ *http.Request, f retrypolicy.FinishEvent) {
				finishes = append(finishes, f)
			})}, c.options...)
			sdk, err := New(server+"/v1", options...)
			if err != nil {
				t.Fatal(err)
			}
			edit := func(_ context.Context, req *http.Request) error {
				req.Header.Set("x-fault-run", os.Getenv("RETRYGEN_FAULT_RUN"))
				req.Header.Set("x-fault-scenario", id)
				return nil
			}
			resp, body, err := c.send(context.Background(), sdk, edit)
			finish, ok := retrypolicy.FinishOf(resp, err)
			if !ok || len(finishes) != 1 || finish != finishes[0] {
				t.Fatalf("finish from the result %+v %v, callback %+v (error %v)", finish, ok, finishes, err)
			}
			if finish.Attempts != c.attempts {
				t.Errorf("attempts %d, want %d (%+v)", finish.Attempts, c.attempts, finish)
			}
			if c.status == 0 {
				var finished *retrypolicy.FinishedError
				if !errors.As(err, &finished) || finish.Failure != c.failure {
					t.Errorf("error %v, finish %+v, want a %s failure", err, finish, c.failure)
				}
				return
			}
			if err != nil || resp.StatusCode != c.status || (c.body != "" && string(body) != c.body) {
				t.Errorf("got %v %q %v, want %d %q", resp, body, err, c.status, c.body)
			}
		})
	}
}
