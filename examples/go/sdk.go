// Package sandboxsdk is a small SDK as a team builds it: the client oapi-codegen generates from
// the API document (package sandboxapi), and retrygen's net/http adapter for the same document
// (package retrypolicy) installed as its transport. Both packages are generated, by the two
// go:generate lines below; cargo xtask runtime-tests --lang go generates them in a scratch
// copy of this folder, builds it and runs its tests against the real fault server.
package sandboxsdk

//go:generate go tool oapi-codegen -config oapi-codegen.yaml ../../conformance/faults/spec.yaml
//go:generate retrygen generate --spec ../../conformance/faults/spec.yaml --lang go --adapter net/http --out retrypolicy/

import (
	"net/http"

	"retrygen.example/sandboxsdk/retrypolicy"
	"retrygen.example/sandboxsdk/sandboxapi"
)

// New returns the API's client for server, its base URL (https://api.example/v1), whose
// requests are retried as the API document's policy says. options configure the retries
// (retrypolicy.WithOnFinish, WithReadBody...).
func New(server string, options ...retrypolicy.RoundTripperOption) (*sandboxapi.ClientWithResponses, error) {
	// The installation: a RoundTripper for this base URL, and the client option that uses it.
	retries, err := retrypolicy.NewRoundTripper(append([]retrypolicy.RoundTripperOption{retrypolicy.WithBaseURL(server)}, options...)...)
	if err != nil {
		return nil, err
	}
	return sandboxapi.NewClientWithResponses(server, sandboxapi.WithHTTPClient(&http.Client{Transport: retries}))
}
