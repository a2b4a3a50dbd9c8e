// Command harness runs the conformance cases of conformance/README.md against the generated Go
// package (operations.go and runtime.go), which the build places in the retrypolicy folder of
// this module.
package main

import (
	"bufio"
	"encoding/hex"
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

func runCase(out *bufio.Writer, f []string) error {
	want := map[string]int{"D": 22, "C": 4, "I": 3, "N": 4, "T": 1}[f[0]]
	if want == 0 {
		return fmt.Errorf("unknown case kind %q", f[0])
	}
	if len(f) != want {
		return fmt.Errorf("%s needs %d fields, found %d", f[0], want, len(f))
	}
	if f[0] == "T" {
		dumpTables(out)
		return nil
	}
	name, err := text(f[1])
	if err != nil {
		return err
	}
	switch f[0] {
	case "D":
		return decide(out, name, f)
	case "C":
		method, err := text(f[2])
		if err != nil {
			return err
		}
		path, err := text(f[3])
		if err != nil {
			return err
		}
		c := retrypolicy.Classify(method, path)
		id := "-"
		if c.Matched && c.Operation.HasOperationID {
			id = hexOf(c.Operation.OperationID)
		}
		fmt.Fprintf(out, "C\t%s\t%s\t%s\n", hexOf(name), c.Class, id)
	case "I":
		id, err := text(f[2])
		if err != nil {
			return err
		}
		if op, ok := retrypolicy.OperationByID(id); ok {
			fmt.Fprintf(out, "I\t%s\t%s\t%s\n", hexOf(name), hexOf(op.Method), hexOf(op.Path))
		} else {
			fmt.Fprintf(out, "I\t%s\t-\t-\n", hexOf(name))
		}
	case "N":
		method, err := text(f[2])
		if err != nil {
			return err
		}
		path, err := text(f[3])
		if err != nil {
			return err
		}
		listed := 0
		for _, route := range nonReplayable() {
			if route.Method == method && route.Pattern.MatchString(path) {
				listed = 1
				break
			}
		}
		fmt.Fprintf(out, "N\t%s\t%d\n", hexOf(name), listed)
	}
	return nil
}

// nonReplayable is the package's list, asked for once.
var nonReplayable = sync.OnceValue(retrypolicy.NonReplayableOperations)

func decide(out *bufio.Writer, name string, f []string) error {
	var p retrypolicy.Policy
	var in retrypolicy.Input
	var err error
	maxRetries, err := integer(f[2], err)
	p.MaxRetries = int(maxRetries)
	p.InitialBackoffMs, err = integer(f[3], err)
	p.MaxBackoffMs, err = integer(f[4], err)
	p.Multiplier, err = double(f[5], err)
	switch f[6] {
	case "full", "equal", "decorrelated", "none":
		p.Jitter = retrypolicy.Jitter(f[6])
	default:
		return fmt.Errorf("unknown jitter %q", f[6])
	}
	p.RetryableStatuses, err = statuses(f[7], err)
	p.RejectedStatuses, err = statuses(f[8], err)
	p.RetryAfterCapMs, err = integer(f[9], err)
	if f[10] != "-" {
		p.DeadlineMs, err = integer(f[10], err)
	}
	switch f[11] {
	case "idempotent", "keyed", "non_replayable", "no_retry":
		in.Class = retrypolicy.ReplayClass(f[11])
	default:
		return fmt.Errorf("unknown class %q", f[11])
	}
	switch f[12] {
	case "1":
		in.HasIdempotencyKey = true
	case "0":
	default:
		return fmt.Errorf("has_key must be 0 or 1, found %q", f[12])
	}
	status := int64(0)
	if f[14] != "-" {
		status, err = integer(f[14], err)
	}
	retryAfter, err := optionalText(f[15], err)
	retryAfterMs, err := optionalText(f[16], err)
	switch f[13] {
	case "status":
		if f[14] == "-" {
			return fmt.Errorf("a status outcome needs a status")
		}
		in.Outcome = retrypolicy.StatusOutcome(int(status), retryAfter, retryAfterMs)
	case "connect", "transport", "aborted":
		// Headers an adapter passes along with a failure must not matter.
		in.Outcome = retrypolicy.Outcome{Failure: retrypolicy.FailureKind(f[13]), RetryAfter: retryAfter, RetryAfterMs: retryAfterMs}
	default:
		return fmt.Errorf("unknown outcome %q", f[13])
	}
	retriesUsed, err := integer(f[17], err)
	in.RetriesUsed = int(retriesUsed)
	in.ElapsedMs, err = integer(f[18], err)
	in.PreviousDelayMs, err = integer(f[19], err)
	in.NowMs, err = integer(f[20], err)
	in.Random, err = double(f[21], err)
	if err != nil {
		return err
	}
	d := retrypolicy.Decide(p, in)
	retry := 0
	if d.Retry {
		retry = 1
	}
	fmt.Fprintf(out, "D\t%s\t%d\t%d\t%s\n", hexOf(name), retry, d.DelayMs, d.Reason)
	return nil
}

func dumpTables(out *bufio.Writer) {
	p := retrypolicy.DefaultPolicy()
	deadline := "-"
	if p.DeadlineMs > 0 {
		deadline = strconv.FormatInt(p.DeadlineMs, 10)
	}
	fmt.Fprintf(out, "B\t%s\t%s\n", hexOf(retrypolicy.BasePath), hexOf(retrypolicy.SourceName))
	fmt.Fprintf(out, "P\t%d\t%d\t%d\t%016x\t%s\t%s\t%s\t%d\t%s\n", p.MaxRetries, p.InitialBackoffMs, p.MaxBackoffMs,
		math.Float64bits(p.Multiplier), p.Jitter, joinStatuses(p.RetryableStatuses), joinStatuses(p.RejectedStatuses),
		p.RetryAfterCapMs, deadline)
	for i, op := range retrypolicy.Operations() {
		id := "-"
		if op.HasOperationID {
			id = hexOf(op.OperationID)
		}
		fmt.Fprintf(out, "O\t%d\t%s\t%s\t%s\t%s\t%s\n", i, hexOf(op.Method), hexOf(op.Path), id, op.Class, hexOf(op.Pattern))
	}
}

// text decodes a hex field holding UTF-8 text.
func text(field string) (string, error) {
	b, err := hex.DecodeString(field)
	if err != nil {
		return "", fmt.Errorf("bad hex field %q: %v", field, err)
	}
	if !utf8.Valid(b) {
		return "", fmt.Errorf("hex field %q is not UTF-8", field)
	}
	return string(b), nil
}

// optionalText is text, or "" for "-" (an absent header), unless an earlier field already failed.
func optionalText(field string, err error) (string, error) {
	if err != nil || field == "-" {
		return "", err
	}
	return text(field)
}

func hexOf(s string) string {
	return hex.EncodeToString([]byte(s))
}

// integer parses a decimal field unless an earlier field already failed.
func integer(field string, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(field, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad integer %q", field)
	}
	return n, nil
}

// double reads the 16 hex digits of IEEE 754 bits unless an earlier field already failed.
func double(field string, err error) (float64, error) {
	if err != nil {
		return 0, err
	}
	if len(field) != 16 {
		return 0, fmt.Errorf("bad double bits %q", field)
	}
	bits, err := strconv.ParseUint(field, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("bad double bits %q", field)
	}
	return math.Float64frombits(bits), nil
}

func statuses(field string, err error) ([]int, error) {
	if err != nil || field == "" {
		return []int{}, err
	}
	var list []int
	for _, part := range strings.Split(field, ",") {
		n, err := strconv.Atoi(part)
		if err != nil {
			return nil, fmt.Errorf("bad status list %q", field)
		}
		list = append(list, n)
	}
	return list, nil
}

func joinStatuses(list []int) string {
	parts := make([]string, len(list))
	for i, n := range list {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}
