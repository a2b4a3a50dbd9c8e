package sandboxsdk

import (
	"context"
	"net/http"
	"os"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Three attempts of one GET (the server answers 503, 503, 200): three client spans, the second
// and third with http.request.resend_count 1 and 2.
func TestResendCountOnTheSpans(t *testing.T) {
	server := os.Getenv("RETRYGEN_FAULT_URL")
	if server == "" {
		t.Fatal("RETRYGEN_FAULT_URL is not set: run cargo xtask runtime-tests --lang go")
	}
	recorder := tracetest.NewSpanRecorder()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	sdk, err := NewWithTelemetry(server+"/v1", provider)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := sdk.GetSandboxWithResponse(context.Background(), "sb-1", func(_ context.Context, req *http.Request) error {
		// A run of its own, so that the server's script starts again for this test.
		req.Header.Set("x-fault-run", os.Getenv("RETRYGEN_FAULT_RUN")+"-otel")
		req.Header.Set("x-fault-scenario", "get-503-503-200")
		return nil
	})
	if err != nil || resp.StatusCode() != 200 {
		t.Fatalf("got %v %v", resp, err)
	}
	spans := recorder.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3", len(spans))
	}
	for i, span := range spans {
		var count int64 = -1
		for _, a := range span.Attributes() {
			if a.Key == "http.request.resend_count" {
				count = a.Value.AsInt64()
			}
		}
		if want := int64(i); (i == 0 && count != -1) || (i > 0 && count != want) {
			t.Errorf("span %d (%s): resend_count %d", i, span.Name(), count)
		}
	}
}
