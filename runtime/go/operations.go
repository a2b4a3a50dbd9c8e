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

		// Contract v3 (docs/contract.md sections 8, 9 and 11): its defaults, which keep every v2
		// decision.
		ThrottlingStatuses:   []int{429},
		StopProblemTypes:     []string{ProblemTypeQuotaExceeded, ProblemTypeAbnormalUsageDetected},
		RetryProblemTypes:    []string{},
		IdempotencyKeyFormat: KeyFormatUUID,
	}
}

// Tables returns the API as the runtime takes it: its operations, BasePath and DefaultPolicy,
// one value shared by every caller (it cannot be changed). The functions below are its methods'.
func Tables() *API {
	return tables
}

var tables = NewAPI(BasePath, DefaultPolicy(), operationTable)

// Operations returns every operation of the API, sorted by path and then method. The slice is
// a new copy on every call.
func Operations() []Operation {
	return tables.Operations()
}

// OperationByID returns the operation with the given operationId. An operation without an
// operationId cannot be looked up.
func OperationByID(id string) (Operation, bool) {
	return tables.OperationByID(id)
}

// NewClassifier returns the API's classifier of a configured base, a base path or a base URL,
// with the policy's unknown_operation_class (docs/contract.md section 2).
func NewClassifier(base string, unknown UnknownClass) (Classifier, error) {
	return tables.NewClassifier(base, unknown)
}

// DefaultClassifier returns the API's classifier of BasePath with the given
// unknown_operation_class, for SDKs that configure no base.
func DefaultClassifier(unknown UnknownClass) (Classifier, error) {
	return tables.DefaultClassifier(unknown)
}

// Classify finds the operation a request is for and its replay class, with BasePath; a request
// no operation matches gets DefaultPolicy's unknown_operation_class (contract v3, C3).
func Classify(method, target string) (Classification, error) {
	return tables.Classify(method, target)
}

// NonReplayableOperations is the API's safe list: every operation that must not be replayed
// without its idempotency key (docs/contract.md, L1-L2).
func NonReplayableOperations() []NonReplayableRoute {
	return tables.NonReplayableOperations()
}

// NewRoundTripper returns the net/http adapter for the API's requests, with a full retry budget
// (docs/adapters.md). Build one per http.Client.
func NewRoundTripper(options ...RoundTripperOption) (*RoundTripper, error) {
	return tables.NewRoundTripper(options...)
}

// operationTable lists every operation of the API, sorted by path and then method; a row leaves
// out the operationId of an operation without one, the idempotency key header of one that
// declares none and the stream attributes of one that does not stream.
var operationTable = []OperationRow{
	{Method: "GET", Route: "/", Path: "/", OperationID: "root", HasOperationID: true, Class: ClassIdempotent},
	{Method: "GET", Route: "/files/{name}.{ext}", Path: "/files/{name}.{ext}", OperationID: "getFile", HasOperationID: true, Class: ClassIdempotent},
	{Method: "GET", Route: "/health", Path: "/health", Class: ClassIdempotent},
	{Method: "GET", Route: "/sandboxes", Path: "/sandboxes", OperationID: "listSandboxes", HasOperationID: true, Class: ClassIdempotent},
	{Method: "POST", Route: "/sandboxes", Path: "/sandboxes", OperationID: "createSandbox", HasOperationID: true, Class: ClassNonReplayable},
	{Method: "GET", Route: "/sandboxes/templates", Path: "/sandboxes/templates", OperationID: "listSandboxTemplates", HasOperationID: true, Class: ClassIdempotent},
	{Method: "GET", Route: "/sandboxes/{sandboxID}", Path: "/sandboxes/{sandboxID}", OperationID: "getSandbox", HasOperationID: true, Class: ClassIdempotent},
	{Method: "GET", Route: "/sandboxes/{sandboxID}/events", Path: "/sandboxes/{sandboxID}/events", OperationID: "streamEvents", HasOperationID: true, Class: ClassIdempotent, Streaming: true, Resumable: true},
	{Method: "GET", Route: "/sandboxes/{sandboxID}/logs", Path: "/sandboxes/{sandboxID}/logs", OperationID: "streamSandboxLogs", HasOperationID: true, Class: ClassNoRetry, Streaming: true},
	{Method: "GET", Route: "/sandboxes/{sandboxID}/metrics", Path: "/sandboxes/{sandboxID}/metrics", OperationID: "streamMetrics", HasOperationID: true, Class: ClassIdempotent, Streaming: true},
	{Method: "POST", Route: "/sandboxes/{sandboxID}/runs", Path: "/sandboxes/{sandboxID}/runs", OperationID: "runStream", HasOperationID: true, Class: ClassNonReplayable, Streaming: true, Resumable: true},
	{Method: "POST", Route: "/sandboxes/{sandboxID}/snapshots", Path: "/sandboxes/{sandboxID}/snapshots", OperationID: "snapshotSandbox", HasOperationID: true, Class: ClassNonReplayable},
	{Method: "POST", Route: "/v2/sandboxes", Path: "/v2/sandboxes", OperationID: "createSandboxV2", HasOperationID: true, Class: ClassKeyed, IdempotencyHeader: "Idempotency-Key"},
}
