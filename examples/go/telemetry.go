package sandboxsdk

import (
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"retrygen.example/sandboxsdk/retrypolicy"
	"retrygen.example/sandboxsdk/sandboxapi"
)

// NewWithTelemetry is New with OpenTelemetry's net/http instrumentation below the retries:
// otelhttp starts a client span for every attempt, and resendCount gives each retry's span
// http.request.resend_count (the attempt number minus 1; absent on the first send, as the
// semantic conventions say).
func NewWithTelemetry(server string, provider trace.TracerProvider, options ...retrypolicy.RoundTripperOption) (*sandboxapi.ClientWithResponses, error) {
	below := otelhttp.NewTransport(resendCount{next: http.DefaultTransport}, otelhttp.WithTracerProvider(provider))
	return New(server, append(options, retrypolicy.WithNext(below))...)
}

// resendCount sits below otelhttp's transport, which hands the attempt's span down in the
// request's context, and the adapter's attempt number comes with it.
type resendCount struct {
	next http.RoundTripper
}

func (r resendCount) RoundTrip(req *http.Request) (*http.Response, error) {
	if n, ok := retrypolicy.AttemptFromContext(req.Context()); ok && n > 1 {
		trace.SpanFromContext(req.Context()).SetAttributes(attribute.Int64("http.request.resend_count", n-1))
	}
	return r.next.RoundTrip(req)
}
