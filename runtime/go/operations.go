// A stand-in for the tables file that retrygen renders from templates/go/tables.j2, in the same
// shape, so that this folder is a package that builds, vets and tests on its own. retrygen never
// copies it: a generated package gets its own operations.go beside runtime.go.

// Package retrypolicy tells whether a failed request to the API may be sent again, and
// when. It holds the replay class of every operation of the API, the matcher that finds the
// operation of a request, and the retry decision shared by every SDK of the API, so that all of
// them retry alike.
package retrypolicy

// BasePath is the path of the API's first server URL, without a trailing slash ("" when there
// is none). Classify removes it from request paths that start with it.
const BasePath = "/v1"

// SourceName names the OpenAPI document this package was generated from.
const SourceName = "stand-in.yaml"

// DefaultPolicy returns the retry policy the API declares.
func DefaultPolicy() Policy {
	return Policy{
		MaxRetries:               3,
		InitialBackoffMs:         500,
		MaxBackoffMs:             30000,
		Multiplier:               2.0,
		Jitter:                   JitterFull,
		RetryableStatuses:        []int{408, 425, 429, 500, 502, 503, 504},
		RejectedStatuses:         []int{429},
		RetryAfterCapMs:          60000,
		DeadlineMs:               0,
		HasDeadline:              false,
		RetryOnlyWithServerDelay: []int{},
		KeyInFlightStatuses:      []int{409},
		KeyReusedStatuses:        []int{422},
		ServerDirectiveHeaders:   []string{"x-should-retry"},
		RetryAfterOverCap:        OverCapRefuse,
		UnknownOperationClass:    UnknownMethodDefault,
		BudgetCapacity:           500,
		BudgetRetryCost:          5,
		BudgetTimeoutCost:        10,
		BudgetSuccessRefund:      1,
	}
}

// operationTable lists every operation of the API, sorted by path and then method. Columns:
// method, route (the path that requests match), path as written, operationId, whether there is
// one, class, idempotency key header ("" when none).
var operationTable = []operationRow{
	{"GET", "/", "/", "root", true, ClassIdempotent, ""},
	{"GET", "/files/{name}.{ext}", "/files/{name}.{ext}", "getFile", true, ClassIdempotent, ""},
	{"GET", "/health", "/health", "", false, ClassIdempotent, ""},
	{"GET", "/sandboxes", "/sandboxes", "listSandboxes", true, ClassIdempotent, ""},
	{"POST", "/sandboxes", "/sandboxes", "createSandbox", true, ClassNonReplayable, ""},
	{"GET", "/sandboxes/templates", "/sandboxes/templates", "listSandboxTemplates", true, ClassIdempotent, ""},
	{"GET", "/sandboxes/{sandboxID}", "/sandboxes/{sandboxID}", "getSandbox", true, ClassIdempotent, ""},
	{"GET", "/sandboxes/{sandboxID}/logs", "/sandboxes/{sandboxID}/logs", "streamSandboxLogs", true, ClassNoRetry, ""},
	{"POST", "/sandboxes/{sandboxID}/snapshots", "/sandboxes/{sandboxID}/snapshots", "snapshotSandbox", true, ClassNonReplayable, ""},
	{"POST", "/v2/sandboxes", "/v2/sandboxes", "createSandboxV2", true, ClassKeyed, "Idempotency-Key"},
}
