// Command harness runs the conformance cases of conformance/README.md against the generated Go
// package (operations.go and runtime.go), which the build places in the retrypolicy folder of
// this module. It reads the contract v2 lines (D, C, I, D2, K, C2, L, H, E, O, T2) and N,
// answered from the safe list's entries without an idempotency header (the non_replayable
// operations), and contract v3's lines (D3, K3, HP, Q, SE, F: conformance/README.md,
// "Contract v3 lines"); the v1 table dump T is retired (its v2 form is T2).
package main

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"retrygen.example/harness/retrypolicy"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: harness CASEFILE")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out := bufio.NewWriter(os.Stdout)
	for number, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" {
			continue
		}
		if err := runCase(out, strings.Split(line, "\t")); err != nil {
			out.Flush()
			fmt.Fprintf(os.Stderr, "line %d: %v\n", number+1, err)
			os.Exit(1)
		}
	}
	if err := out.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// fieldCounts is the number of fields of each line kind; H lines have 3 plus two per header,
// HP lines 2 plus two per header.
var fieldCounts = map[string]int{"D": 22, "C": 4, "I": 3, "T2": 1, "D2": 35, "K": 7, "C2": 6, "L": 4, "E": 8, "H": 3, "O": 4,
	"D3": 46, "K3": 28, "HP": 2, "Q": 5, "SE": 3, "F": 4}

func runCase(out *bufio.Writer, f []string) error {
	want, known := fieldCounts[f[0]]
	if !known {
		return fmt.Errorf("unknown case kind %q", f[0])
	}
	if (f[0] == "H" || f[0] == "HP") && len(f) >= want && (len(f)-want)%2 == 0 {
		want = len(f)
	}
	if len(f) != want {
		return fmt.Errorf("%s needs %d fields, found %d", f[0], want, len(f))
	}
	if f[0] == "T2" {
		dumpTables(out)
		return nil
	}
	if _, err := hex.DecodeString(f[1]); err != nil {
		return fmt.Errorf("bad name %q", f[1])
	}
	name := f[1]
	var err error
	switch f[0] {
	case "D":
		err = decideV1(out, name, f)
	case "D2":
		err = decideV2(out, name, f)
	case "K":
		err = budget(out, name, f)
	case "C":
		err = classifyModule(out, name, f[2], f[3])
	case "C2":
		err = classify(out, "C2", name, f[2], f[3], f[4], f[5])
	case "I":
		err = lookup(out, name, f[2])
	case "L":
		err = safeListed(out, name, f[2], f[3])
	case "H":
		err = hasKey(out, name, f[2], f[3:])
	case "E":
		err = event(out, name, f)
	case "O":
		err = origin(out, name, f[2], f[3])
	case "D3":
		err = decideV3(out, name, f)
	case "K3":
		err = budgetV3(out, name, f)
	case "HP":
		err = precondition(out, name, f[2:])
	case "Q":
		err = problemType(out, name, f[2], f[3], f[4])
	case "SE":
		err = eventStream(out, name, f[2])
	case "F":
		err = keyFormat(out, name, f[2], f[3])
	}
	var invalid *retrypolicy.InvalidInput
	if errors.As(err, &invalid) {
		fmt.Fprintf(out, "X\t%s\t%s\n", name, invalid.Key)
		return nil
	}
	return err
}

// contractPolicy is the contract's default policy (docs/contract.md, Policy), whatever the
// module's defaults are.
func contractPolicy() retrypolicy.Policy {
	return retrypolicy.Policy{
		MaxRetries: 3, InitialBackoffMs: 500, MaxBackoffMs: 30000, Multiplier: 2, Jitter: retrypolicy.JitterFull,
		RetryableStatuses: []int{408, 425, 429, 500, 502, 503, 504}, RejectedStatuses: []int{429},
		RetryAfterCapMs: 60000, RetryOnlyWithServerDelay: []int{}, KeyInFlightStatuses: []int{409},
		KeyReusedStatuses: []int{422}, ServerDirectiveHeaders: []string{"x-should-retry"},
		RetryAfterOverCap: retrypolicy.OverCapRefuse, UnknownOperationClass: retrypolicy.UnknownMethodDefault,
		BudgetCapacity: 500, BudgetRetryCost: 5, BudgetTimeoutCost: 10, BudgetSuccessRefund: 1,
		ThrottlingStatuses: []int{429},
		StopProblemTypes:   []string{retrypolicy.ProblemTypeQuotaExceeded, retrypolicy.ProblemTypeAbnormalUsageDetected},
		RetryProblemTypes:  []string{}, IdempotencyKeyFormat: retrypolicy.KeyFormatUUID,
	}
}

// fields reads decimal, hex, double and list fields, keeping the first error.
type fields struct {
	err error
}

func (r *fields) integer(field string) int64 {
	if r.err != nil {
		return 0
	}
	n, err := strconv.ParseInt(field, 10, 64)
	if err != nil {
		r.err = fmt.Errorf("bad integer %q", field)
	}
	return n
}

// double reads the 16 hex digits of IEEE 754 bits.
func (r *fields) double(field string) float64 {
	if r.err != nil {
		return 0
	}
	bits, err := strconv.ParseUint(field, 16, 64)
	if err != nil || len(field) != 16 {
		r.err = fmt.Errorf("bad double bits %q", field)
	}
	return math.Float64frombits(bits)
}

// raw decodes a hex field to a string holding its bytes as they are (WTF-8 included).
func (r *fields) raw(field string) string {
	if r.err != nil {
		return ""
	}
	b, err := hex.DecodeString(field)
	if err != nil {
		r.err = fmt.Errorf("bad hex field %q", field)
	}
	return string(b)
}

// text decodes a hex field that must hold UTF-8 text.
func (r *fields) text(field string) string {
	s := r.raw(field)
	if r.err == nil && !utf8.ValidString(s) {
		r.err = fmt.Errorf("hex field %q is not UTF-8", field)
	}
	return s
}

// optionalText is text, or "" for "-" (an absent header).
func (r *fields) optionalText(field string) string {
	if field == "-" {
		return ""
	}
	return r.text(field)
}

func (r *fields) statuses(field string) []int {
	list := []int{}
	if field == "" {
		return list
	}
	for _, part := range strings.Split(field, ",") {
		list = append(list, int(r.integer(part)))
	}
	return list
}

func (r *fields) flag(field string) bool {
	switch field {
	case "1":
		return true
	case "0":
		return false
	}
	if r.err == nil {
		r.err = fmt.Errorf("a flag must be 0 or 1, found %q", field)
	}
	return false
}

// policyV1 builds a policy from the nine fields of a D line, the v2 keys neutral.
func (r *fields) policyV1(f []string) retrypolicy.Policy {
	p := contractPolicy()
	p.MaxRetries = int(r.integer(f[0]))
	p.InitialBackoffMs = r.integer(f[1])
	p.MaxBackoffMs = r.integer(f[2])
	p.Multiplier = r.double(f[3])
	p.Jitter = retrypolicy.Jitter(f[4])
	p.RetryableStatuses = r.statuses(f[5])
	p.RejectedStatuses = r.statuses(f[6])
	p.RetryAfterCapMs = r.integer(f[7])
	if f[8] != "-" {
		p.DeadlineMs, p.HasDeadline = r.integer(f[8]), true
	}
	p.RetryOnlyWithServerDelay, p.KeyInFlightStatuses, p.KeyReusedStatuses = []int{}, []int{}, []int{}
	p.ServerDirectiveHeaders = []string{}
	return p
}

// policyV2 builds a policy from the 19 P2 fields, names given to the runtime as they are.
func (r *fields) policyV2(f []string) retrypolicy.Policy {
	p := r.policyV1(f[:9])
	p.RetryOnlyWithServerDelay = r.statuses(f[9])
	p.KeyInFlightStatuses = r.statuses(f[10])
	p.KeyReusedStatuses = r.statuses(f[11])
	if f[12] != "-" {
		for _, h := range strings.Split(f[12], ",") {
			p.ServerDirectiveHeaders = append(p.ServerDirectiveHeaders, r.text(h))
		}
	}
	p.RetryAfterOverCap = retrypolicy.OverCapMode(f[13])
	p.UnknownOperationClass = retrypolicy.UnknownClass(f[14])
	p.BudgetCapacity = r.integer(f[15])
	p.BudgetRetryCost = r.integer(f[16])
	p.BudgetTimeoutCost = r.integer(f[17])
	p.BudgetSuccessRefund = r.integer(f[18])
	return p
}

// policyV3 builds a policy from the 25 P3 fields: P2's, then the six keys of contract v3,
// strings given to the runtime as they are (WTF-8 included), for it to check.
func (r *fields) policyV3(f []string) retrypolicy.Policy {
	p := r.policyV2(f[:19])
	p.ThrottlingStatuses = r.statuses(f[19])
	if f[20] != "-" {
		p.ThrottlingInitialBackoffMs, p.HasThrottlingInitialBackoff = r.integer(f[20]), true
	}
	if f[21] != "-" {
		p.BudgetThrottlingCost, p.HasBudgetThrottlingCost = r.integer(f[21]), true
	}
	p.StopProblemTypes = r.rawList(f[22])
	p.RetryProblemTypes = r.rawList(f[23])
	p.IdempotencyKeyFormat = retrypolicy.KeyFormat(f[24])
	return p
}

// rawList reads hex strings joined by ","; "-" is the empty list.
func (r *fields) rawList(field string) []string {
	list := []string{}
	if field == "-" {
		return list
	}
	for _, item := range strings.Split(field, ",") {
		list = append(list, r.raw(item))
	}
	return list
}

// optionalRaw is raw, or "" for "-".
func (r *fields) optionalRaw(field string) string {
	if field == "-" {
		return ""
	}
	return r.raw(field)
}

// input reads class has_key outcome status retry_after retry_after_ms [directive]
// retries_used elapsed_ms previous_delay_ms now_ms random_bits.
func (r *fields) input(f []string, withDirective bool) retrypolicy.Input {
	var in retrypolicy.Input
	in.Class = retrypolicy.ReplayClass(f[0])
	in.HasIdempotencyKey = r.flag(f[1])
	retryAfterMs, directive, rest := r.optionalText(f[5]), "", f[6:]
	if withDirective {
		directive, rest = r.optionalText(f[6]), f[7:]
	}
	if f[2] == "status" {
		if f[3] == "-" && r.err == nil {
			r.err = errors.New("a status outcome needs a status")
		}
		in.Outcome = retrypolicy.StatusOutcome(int(r.integer(f[3])), r.optionalText(f[4]), retryAfterMs)
	} else {
		// Headers an adapter passes along with a failure must not matter.
		in.Outcome = retrypolicy.FailedOutcome(retrypolicy.FailureKind(f[2]))
		in.Outcome.RetryAfter, in.Outcome.RetryAfterMs = r.optionalText(f[4]), retryAfterMs
	}
	in.Outcome.Directive = directive
	in.RetriesUsed = r.integer(rest[0])
	in.ElapsedMs = r.integer(rest[1])
	in.PreviousDelayMs = r.integer(rest[2])
	in.NowMs = r.integer(rest[3])
	in.Random = r.double(rest[4])
	return in
}

// decideV3 answers a D3 line: the 25 policy fields, then class has_key has_precondition
// resumable has_last_event_id stream_retry problem_type and the D2 input's outcome fields.
func decideV3(out *bufio.Writer, name string, f []string) error {
	var r fields
	p := r.policyV3(f[2:27])
	in := r.input(append([]string{f[27], f[28]}, f[34:44]...), true)
	in.HasPrecondition = r.flag(f[29])
	in.Resumable = r.flag(f[30])
	in.HasLastEventID = r.flag(f[31])
	in.StreamRetry = r.optionalRaw(f[32])
	in.ProblemType = r.optionalRaw(f[33])
	if f[44] != "-" {
		in.BudgetTokens, in.HasBudgetTokens = r.integer(f[44]), true
	}
	in.TimedOut = r.flag(f[45])
	if r.err != nil {
		return r.err
	}
	d, err := retrypolicy.Decide(p, in)
	if err != nil {
		return err
	}
	tokens, asked := "-", "-"
	if in.HasBudgetTokens {
		tokens = strconv.FormatInt(d.BudgetTokens, 10)
	}
	if d.ServerDelayMs > 0 {
		asked = strconv.FormatInt(d.ServerDelayMs, 10)
	}
	fmt.Fprintf(out, "D3\t%s\t%d\t%d\t%s\t%s\t%d\t%s\n", name, bit(d.Retry), d.DelayMs, d.Reason, tokens, bit(d.Throttled), asked)
	return nil
}

func decideV1(out *bufio.Writer, name string, f []string) error {
	var r fields
	p := r.policyV1(f[2:11])
	in := r.input(f[11:22], false)
	if r.err != nil {
		return r.err
	}
	d, err := retrypolicy.Decide(p, in)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "D\t%s\t%d\t%d\t%s\n", name, bit(d.Retry), d.DelayMs, d.Reason)
	return nil
}

func decideV2(out *bufio.Writer, name string, f []string) error {
	var r fields
	p := r.policyV2(f[2:21])
	in := r.input(f[21:33], true)
	if f[33] != "-" {
		in.BudgetTokens, in.HasBudgetTokens = r.integer(f[33]), true
	}
	in.TimedOut = r.flag(f[34])
	if r.err != nil {
		return r.err
	}
	d, err := retrypolicy.Decide(p, in)
	if err != nil {
		return err
	}
	tokens := "-"
	if in.HasBudgetTokens {
		tokens = strconv.FormatInt(d.BudgetTokens, 10)
	}
	fmt.Fprintf(out, "D2\t%s\t%d\t%d\t%s\t%s\n", name, bit(d.Retry), d.DelayMs, d.Reason, tokens)
	return nil
}

// budget runs the events of a K line on a Budget, the per-client cell (K4).
func budget(out *bufio.Writer, name string, f []string) error {
	var r fields
	p := contractPolicy()
	p.BudgetCapacity = r.integer(f[2])
	p.BudgetRetryCost = r.integer(f[3])
	p.BudgetTimeoutCost = r.integer(f[4])
	p.BudgetSuccessRefund = r.integer(f[5])
	if r.err != nil {
		return r.err
	}
	return runBudget(out, "K", name, p, f[6])
}

// budgetV3 runs a K3 line: the whole policy, and the events with "h", a throttled retry.
func budgetV3(out *bufio.Writer, name string, f []string) error {
	var r fields
	p := r.policyV3(f[2:27])
	if r.err != nil {
		return r.err
	}
	return runBudget(out, "K3", name, p, f[27])
}

// runBudget runs budget events on a Budget and writes the line.
func runBudget(out *bufio.Writer, kindName, name string, p retrypolicy.Policy, field string) error {
	var r fields
	var events []string
	if field != "" {
		events = strings.Split(field, ",")
	}
	b, err := retrypolicy.NewBudget(p)
	if err != nil {
		return err
	}
	initial := b.Tokens()
	results := make([]string, 0, len(events))
	for _, e := range events {
		var result string
		switch {
		case e == "r", e == "t", e == "h" && kindName == "K3", strings.HasPrefix(e, "a"):
			kind := retrypolicy.BudgetRetry
			switch e {
			case "r":
			case "t":
				kind = retrypolicy.BudgetTimeout
			case "h":
				kind = retrypolicy.BudgetThrottling
			default:
				kind = retrypolicy.BudgetKind(r.text(e[1:]))
			}
			if r.err != nil {
				return r.err
			}
			allowed, err := b.TryAcquire(kind)
			if err != nil {
				return err
			}
			result = "n"
			if allowed {
				result = "y"
			}
		case strings.HasPrefix(e, "s"):
			released := r.integer(e[1:])
			if r.err != nil {
				return r.err
			}
			if err := b.RecordSuccess(released); err != nil {
				return err
			}
			result = "s"
		default:
			return fmt.Errorf("bad budget event %q", e)
		}
		results = append(results, result+strconv.FormatInt(b.Tokens(), 10))
	}
	fmt.Fprintf(out, "%s\t%s\t%d\t%s\n", kindName, name, initial, strings.Join(results, ","))
	return nil
}

// classifier is the classifier of a base field (hex, or "-" for the spec's) and a class word.
func classifier(r *fields, base, unknown string) (retrypolicy.Classifier, error) {
	if base == "-" {
		return retrypolicy.DefaultClassifier(retrypolicy.UnknownClass(unknown))
	}
	b := r.raw(base)
	if r.err != nil {
		return retrypolicy.Classifier{}, r.err
	}
	return retrypolicy.NewClassifier(b, retrypolicy.UnknownClass(unknown))
}

func classify(out *bufio.Writer, kind, name, base, unknown, method, target string) error {
	var r fields
	c, err := classifier(&r, base, unknown)
	if err != nil {
		return err
	}
	m, t := r.raw(method), r.raw(target)
	if r.err != nil {
		return r.err
	}
	result, err := c.Classify(m, t)
	if err != nil {
		return err
	}
	printClassification(out, kind, name, result)
	return nil
}

// printClassification writes a C or C2 answer: the class and the operationId (hex, "-" for none).
func printClassification(out *bufio.Writer, kind, name string, result retrypolicy.Classification) {
	id := "-"
	if result.Matched && result.Operation.HasOperationID {
		id = hexOf(result.Operation.OperationID)
	}
	fmt.Fprintf(out, "%s\t%s\t%s\t%s\n", kind, name, result.Class, id)
}

// classifyModule answers a C probe with the module-level Classify: the spec's base and
// DefaultPolicy's unknown_operation_class (contract C3), as an SDK calling it gets.
func classifyModule(out *bufio.Writer, name, method, target string) error {
	var r fields
	m, t := r.raw(method), r.raw(target)
	if r.err != nil {
		return r.err
	}
	result, err := retrypolicy.Classify(m, t)
	if err != nil {
		return err
	}
	printClassification(out, "C", name, result)
	return nil
}

// origin answers an O probe: whether target is in the scope of base (contract C5).
func origin(out *bufio.Writer, name, baseField, targetField string) error {
	var r fields
	base, target := r.raw(baseField), r.raw(targetField)
	if r.err != nil {
		return r.err
	}
	verdict := "0"
	if retrypolicy.InScope(base, target) {
		verdict = "1"
	}
	fmt.Fprintf(out, "O\t%s\t%s\n", name, verdict)
	return nil
}

// precondition answers an HP line: HasPrecondition over the header fields, repeated names kept.
func precondition(out *bufio.Writer, name string, pairs []string) error {
	var r fields
	header := map[string][]string{}
	for i := 0; i < len(pairs); i += 2 {
		n := r.raw(pairs[i])
		header[n] = append(header[n], r.raw(pairs[i+1]))
	}
	if r.err != nil {
		return r.err
	}
	fmt.Fprintf(out, "HP\t%s\t%d\n", name, bit(retrypolicy.HasPrecondition(header)))
	return nil
}

// problemType answers a Q line: the problem type of a response's Content-Type and body.
func problemType(out *bufio.Writer, name, contentType, complete, body string) error {
	var r fields
	ct, whole, data := r.optionalRaw(contentType), r.flag(complete), r.raw(body)
	if r.err != nil {
		return r.err
	}
	t, ok := retrypolicy.ProblemTypeOf(ct, []byte(data), whole)
	fmt.Fprintf(out, "Q\t%s\t%s\n", name, optionalHex(t, ok))
	return nil
}

// eventStream answers an SE line. The bytes are fed in two pieces, so that a line or a CRLF
// split across reads is covered too.
func eventStream(out *bufio.Writer, name, stream string) error {
	var r fields
	data := []byte(r.raw(stream))
	if r.err != nil {
		return r.err
	}
	var s retrypolicy.EventStreamScanner
	half := len(data) / 2
	s.Write(data[:half])
	s.Write(data[half:])
	retry, hasRetry := s.Retry()
	fmt.Fprintf(out, "SE\t%s\t%d\t%s\t%s\n", name, s.CompleteBytes(), hexOf(s.LastEventID()), optionalHex(retry, hasRetry))
	return nil
}

// keyFormat answers an F line: the key header value of a format word and a UUID.
func keyFormat(out *bufio.Writer, name, format, uuid string) error {
	var r fields
	u := r.text(uuid)
	if r.err != nil {
		return r.err
	}
	value, err := retrypolicy.IdempotencyKeyValue(retrypolicy.KeyFormat(format), u)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "F\t%s\t%s\n", name, hexOf(value))
	return nil
}

func lookup(out *bufio.Writer, name, idField string) error {
	var r fields
	id := r.text(idField)
	if r.err != nil {
		return r.err
	}
	if op, ok := retrypolicy.OperationByID(id); ok {
		fmt.Fprintf(out, "I\t%s\t%s\t%s\n", name, hexOf(op.Method), hexOf(op.Path))
	} else {
		fmt.Fprintf(out, "I\t%s\t-\t-\n", name)
	}
	return nil
}

// safeList is the package's safe list, asked for once.
var safeList = sync.OnceValue(retrypolicy.NonReplayableOperations)

func safeListed(out *bufio.Writer, name, methodField, pathField string) error {
	var r fields
	method, path := r.text(methodField), r.text(pathField)
	if r.err != nil {
		return r.err
	}
	for _, route := range safeList() {
		if route.Method == method && route.Pattern.MatchString(path) {
			fmt.Fprintf(out, "L\t%s\t1\t%s\n", name, optionalHex(route.IdempotencyHeader, route.IdempotencyHeader != ""))
			return nil
		}
	}
	fmt.Fprintf(out, "L\t%s\t0\t-\n", name)
	return nil
}

func hasKey(out *bufio.Writer, name, idField string, pairs []string) error {
	var r fields
	id := r.text(idField)
	header := map[string][]string{}
	for i := 0; i < len(pairs); i += 2 {
		n := r.text(pairs[i])
		header[n] = append(header[n], r.text(pairs[i+1]))
	}
	if r.err != nil {
		return r.err
	}
	op, _ := retrypolicy.OperationByID(id)
	fmt.Fprintf(out, "H\t%s\t%d\n", name, bit(op.HasIdempotencyKey(header)))
	return nil
}

func event(out *bufio.Writer, name string, f []string) error {
	var r fields
	c, err := classifier(&r, f[2], "method_default")
	if err != nil {
		return err
	}
	method, target := r.raw(f[3]), r.raw(f[4])
	retries, delay := r.integer(f[5]), r.integer(f[6])
	if r.err != nil {
		return r.err
	}
	result, err := c.Classify(method, target)
	if err != nil {
		return err
	}
	e := retrypolicy.NewRetryEvent(result, method, retries, retrypolicy.Decision{Retry: true, DelayMs: delay, Reason: retrypolicy.Reason(f[7])})
	fmt.Fprintf(out, "E\t%s\t%d\t%s\t%d\t%s\t%s\t%s\n", name, e.Attempt, e.Reason, e.DelayMs, hexOf(e.Method),
		optionalHex(e.PathTemplate, result.Matched), optionalHex(e.OperationID, e.HasOperationID))
	return nil
}

func dumpTables(out *bufio.Writer) {
	p := retrypolicy.DefaultPolicy()
	fmt.Fprintf(out, "B2\t%s\t%s\n", hexOf(retrypolicy.BasePath), hexOf(retrypolicy.SourceName))
	fmt.Fprintf(out, "P2\t%s\n", policyFields(p))
	ops := retrypolicy.Operations()
	for i, op := range ops {
		fmt.Fprintf(out, "O2\t%d\t%s\t%s\t%s\t%s\t%s\n", i, hexOf(op.Method), hexOf(op.Path),
			optionalHex(op.OperationID, op.HasOperationID), op.Class, optionalHex(op.IdempotencyHeader, op.IdempotencyHeader != ""))
	}
	// The safe list holds the non_replayable and keyed operations in table order.
	list := safeList()
	next := 0
	for i, op := range ops {
		if op.Class != retrypolicy.ClassNonReplayable && op.Class != retrypolicy.ClassKeyed {
			continue
		}
		route := list[next]
		next++
		fmt.Fprintf(out, "L2\t%d\t%s\t%s\t%s\n", i, hexOf(route.Method), hexOf(route.Pattern.String()),
			optionalHex(route.IdempotencyHeader, route.IdempotencyHeader != ""))
	}
}

// policyFields writes the 19 P2 fields of a policy.
func policyFields(p retrypolicy.Policy) string {
	deadline := "-"
	if p.HasDeadline {
		deadline = strconv.FormatInt(p.DeadlineMs, 10)
	}
	headers := "-"
	if len(p.ServerDirectiveHeaders) > 0 {
		hexed := make([]string, len(p.ServerDirectiveHeaders))
		for i, h := range p.ServerDirectiveHeaders {
			hexed[i] = hexOf(h)
		}
		headers = strings.Join(hexed, ",")
	}
	return strings.Join([]string{
		strconv.Itoa(p.MaxRetries), strconv.FormatInt(p.InitialBackoffMs, 10), strconv.FormatInt(p.MaxBackoffMs, 10),
		fmt.Sprintf("%016x", math.Float64bits(p.Multiplier)), string(p.Jitter), joinStatuses(p.RetryableStatuses),
		joinStatuses(p.RejectedStatuses), strconv.FormatInt(p.RetryAfterCapMs, 10), deadline,
		joinStatuses(p.RetryOnlyWithServerDelay), joinStatuses(p.KeyInFlightStatuses), joinStatuses(p.KeyReusedStatuses),
		headers, string(p.RetryAfterOverCap), string(p.UnknownOperationClass), strconv.FormatInt(p.BudgetCapacity, 10),
		strconv.FormatInt(p.BudgetRetryCost, 10), strconv.FormatInt(p.BudgetTimeoutCost, 10),
		strconv.FormatInt(p.BudgetSuccessRefund, 10),
	}, "\t")
}

func bit(b bool) int {
	if b {
		return 1
	}
	return 0
}

func hexOf(s string) string {
	return hex.EncodeToString([]byte(s))
}

// optionalHex is s in hex when present, else "-".
func optionalHex(s string, present bool) string {
	if !present {
		return "-"
	}
	return hexOf(s)
}

func joinStatuses(list []int) string {
	parts := make([]string, len(list))
	for i, n := range list {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}
