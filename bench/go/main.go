// Command bench times the generated Go package's Classify against the baseline linear regex scan
// (see bench/README.md). `cargo xtask bench` places the package (operations.go and runtime.go)
// in the retrypolicy folder.
package main

import (
	"fmt"
	"os"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"retrygen.example/bench/retrypolicy"
)

// entry is one [method, anchored regex] pair of the baseline, in table order.
type entry struct {
	method  string
	pattern *regexp.Regexp
}

var table = func() []entry {
	operations := retrypolicy.Operations()
	t := make([]entry, len(operations))
	for i, op := range operations {
		t[i] = entry{op.Method, regexp.MustCompile(legacyPattern(op.Path))}
	}
	return t
}()

// legacyPattern is the expression SDKs kept by hand, as retrygen's model writes it (v1's
// Operation.Pattern): for each segment of the template "/" and its literal text as written
// (syntax characters escaped) or [^/]+ for a parameter, then /?$; the root is ^/$. The package's
// Pattern is now the safe-list expression, which also matches percent-encoded literals.
func legacyPattern(template string) string {
	if cut := strings.IndexAny(template, "?#"); cut >= 0 {
		template = template[:cut]
	}
	rest := strings.TrimSuffix(strings.TrimPrefix(template, "/"), "/")
	if rest == "" {
		return "^/$"
	}
	var b strings.Builder
	b.WriteByte('^')
	for _, segment := range strings.Split(rest, "/") {
		b.WriteByte('/')
		for segment != "" {
			open := strings.IndexByte(segment, '{')
			closing := strings.IndexByte(segment, '}')
			if open < 0 || closing < open {
				b.WriteString(regexp.QuoteMeta(segment))
				break
			}
			b.WriteString(regexp.QuoteMeta(segment[:open]))
			b.WriteString("[^/]+")
			segment = segment[closing+1:]
		}
	}
	b.WriteString("/?$")
	return b.String()
}

// indexOf is the index in the operation table of each operation, by method and path (unique
// within an API document).
var indexOf = func() map[[2]string]int {
	m := make(map[[2]string]int)
	for i, op := range retrypolicy.Operations() {
		m[[2]string{op.Method, op.Path}] = i
	}
	return m
}()

func scan(method, path string) int {
	if cut := strings.IndexAny(path, "?#"); cut >= 0 {
		path = path[:cut]
	}
	base := retrypolicy.BasePath
	if base != "" && strings.HasPrefix(path, base) && (len(path) == len(base) || path[len(base)] == '/') {
		path = path[len(base):]
	}
	for i := range table {
		if table[i].method == method && table[i].pattern.MatchString(path) {
			return i
		}
	}
	return -1
}

func letter(c retrypolicy.ReplayClass) byte {
	switch c {
	case retrypolicy.ClassIdempotent:
		return 'i'
	case retrypolicy.ClassKeyed:
		return 'k'
	case retrypolicy.ClassNonReplayable:
		return 'n'
	case retrypolicy.ClassNoRetry:
		return 'r'
	}
	return '?'
}

// calibrate warms run up, then doubles the passes until one measurement lasts min.
func calibrate(warm, min time.Duration, run func()) int {
	start := time.Now()
	run()
	for time.Since(start) < warm {
		run()
	}
	rounds := 1
	for {
		t := time.Now()
		for r := 0; r < rounds; r++ {
			run()
		}
		if time.Since(t) >= min || rounds >= 1<<24 {
			return rounds
		}
		rounds *= 2
	}
}

func sample(requests, rounds int, run func()) float64 {
	t := time.Now()
	for r := 0; r < rounds; r++ {
		run()
	}
	return float64(time.Since(t).Nanoseconds()) / float64(rounds*requests)
}

func median(values []float64) float64 {
	sort.Float64s(values)
	return values[len(values)/2]
}

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: bench MIXFILE WARM_MS MIN_MS SAMPLES")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var methods, paths []string
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" {
			continue
		}
		m, p, _ := strings.Cut(line, "\t")
		methods = append(methods, m)
		paths = append(paths, p)
	}
	number := func(s string) int {
		n, err := strconv.Atoi(s)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		return n
	}
	warm := time.Duration(number(os.Args[2])) * time.Millisecond
	min := time.Duration(number(os.Args[3])) * time.Millisecond
	samples := number(os.Args[4])
	n := len(methods)
	sink := 0
	classifyPass := func() {
		for i := 0; i < n; i++ {
			if c, _ := retrypolicy.Classify(methods[i], paths[i]); c.Matched {
				sink++
			}
		}
	}
	scanPass := func() {
		for i := 0; i < n; i++ {
			sink += scan(methods[i], paths[i])
		}
	}
	classifyRounds := calibrate(warm, min, classifyPass)
	scanRounds := calibrate(warm, min, scanPass)
	// Samples alternate between the two, so that both see the same machine.
	var classifySamples, scanSamples []float64
	for s := 0; s < samples; s++ {
		classifySamples = append(classifySamples, sample(n, classifyRounds, classifyPass))
		scanSamples = append(scanSamples, sample(n, scanRounds, scanPass))
	}
	classifyNs := median(classifySamples)
	scanNs := median(scanSamples)
	// After the timing: the bytes classify allocates per call, over passes of the whole mix.
	const allocPasses = 10
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for p := 0; p < allocPasses; p++ {
		classifyPass()
	}
	runtime.ReadMemStats(&after)
	allocBytes := float64(after.TotalAlloc-before.TotalAlloc) / float64(allocPasses*n)
	ops := make([]string, n)
	classes := make([]byte, n)
	scanned := make([]string, n)
	for i := 0; i < n; i++ {
		c, err := retrypolicy.Classify(methods[i], paths[i])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		index := -1
		if c.Matched {
			index = indexOf[[2]string{c.Operation.Method, c.Operation.Path}]
		}
		ops[i] = strconv.Itoa(index)
		classes[i] = letter(c.Class)
		scanned[i] = strconv.Itoa(scan(methods[i], paths[i]))
	}
	fmt.Printf("classify_ns %.2f\nscan_ns %.2f\nclassify_alloc_bytes %.2f\n", classifyNs, scanNs, allocBytes)
	fmt.Printf("classify_ops %s\nclassify_classes %s\n", strings.Join(ops, ","), classes)
	fmt.Printf("scan_ops %s\nsink %d\n", strings.Join(scanned, ","), sink)
}
