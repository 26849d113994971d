// Command testreport turns the event stream of `go test -json` back into
// what plain `go test` prints (a line per package, the output of failed
// tests, build errors), so that `make test` stays readable, and records
// each skipped test with the reason it gave, so that `make test` can end
// with one line per reason and its count.
//
//	go test -json ./... | testreport -skips FILE   # report; exit 1 on any failure
//	testreport -summary FILE                       # one line per skip reason
//
// FILE holds one skipped test per line, "REASON<TAB>WHAT"; the end-to-end
// scripts append their own skips to it the same way.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

func main() {
	skips := flag.String("skips", "", "append each skipped test to this file as REASON<TAB>TEST")
	summary := flag.String("summary", "", "print the skips recorded in this file, one line per reason, and exit")
	flag.Parse()
	if *summary != "" {
		if err := summarize(*summary, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
		return
	}
	var skipLog io.Writer = io.Discard
	if *skips != "" {
		f, err := os.OpenFile(*skips, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
		defer f.Close()
		skipLog = f
	}
	ok, err := report(os.Stdin, os.Stdout, skipLog)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// event is one line of `go test -json` (see `go doc test2json`).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// testOutput is what a running test has printed, kept until it ends: a
// failed test's output is printed, a passed one's dropped.
type testOutput struct {
	lines []string
	// failedSubtests is the report of this test's failed subtests, printed
	// after the test's own lines as plain `go test` nests them.
	failedSubtests []string
}

// report reads a `go test -json` stream from r, writes the plain report to
// out and the skipped tests to skips. ok is false when a package or test
// failed, a build failed, or the stream held no package at all.
func report(r io.Reader, out, skips io.Writer) (ok bool, err error) {
	running := map[string]*testOutput{} // by package + "\x00" + test
	packages := 0
	ok = true
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			// Not an event (the go command's own messages): pass it on.
			fmt.Fprintf(out, "%s\n", line)
			continue
		}
		key := e.Package + "\x00" + e.Test
		switch {
		case e.Action == "build-output":
			io.WriteString(out, e.Output)
		case e.Action == "build-fail":
			ok = false
		case e.Test == "" && e.Action == "output":
			if e.Output != "PASS\n" {
				io.WriteString(out, e.Output)
			}
		case e.Test == "" && (e.Action == "pass" || e.Action == "skip"):
			packages++
		case e.Test == "" && e.Action == "fail":
			packages++
			ok = false
			// Tests still running when the package failed (a panic, a
			// timeout) show what they were doing.
			for k, t := range running {
				if strings.HasPrefix(k, e.Package+"\x00") {
					io.WriteString(out, strings.Join(t.lines, ""))
					delete(running, k)
				}
			}
		case e.Action == "run":
			running[key] = &testOutput{}
		case e.Action == "output":
			if t := running[key]; t != nil && !isFraming(e.Output) {
				t.lines = append(t.lines, e.Output)
			}
		case e.Action == "pass":
			delete(running, key)
		case e.Action == "skip":
			if t := running[key]; t != nil {
				fmt.Fprintf(skips, "%s\t%s.%s\n", skipReason(t.lines), e.Package, e.Test)
			}
			delete(running, key)
		case e.Action == "fail":
			t := running[key]
			delete(running, key)
			if t == nil {
				continue
			}
			text := t.report(strings.Count(e.Test, "/")) + strings.Join(t.failedSubtests, "")
			if parent, _, nested := cutLast(e.Test, "/"); nested && running[e.Package+"\x00"+parent] != nil {
				p := running[e.Package+"\x00"+parent]
				p.failedSubtests = append(p.failedSubtests, text)
			} else {
				io.WriteString(out, text)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return false, err
	}
	if packages == 0 {
		return false, errors.New("no test results in the input")
	}
	return ok, nil
}

// report is a failed test's output as plain `go test` prints it: the
// "--- FAIL" line first, then what the test logged, indented by its depth.
func (t *testOutput) report(depth int) string {
	var head, body strings.Builder
	indent := strings.Repeat("    ", depth)
	for _, l := range t.lines {
		if strings.HasPrefix(strings.TrimLeft(l, " "), "--- ") {
			head.WriteString(indent + strings.TrimLeft(l, " "))
		} else {
			body.WriteString(indent + l)
		}
	}
	return head.String() + body.String()
}

// isFraming reports whether a line only marks a test starting, pausing or
// resuming (plain `go test` prints none of them).
func isFraming(line string) bool {
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

// logLine is a line written by t.Log, t.Skip and friends:
// indentation, file:line, message.
var logLine = regexp.MustCompile(`^\s+[\w.-]+\.go:\d+: (.*)$`)

// skipReason is the message of a skipped test: the last line it logged,
// which is what t.Skip printed.
func skipReason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if m := logLine.FindStringSubmatch(strings.TrimRight(lines[i], "\n")); m != nil {
			return strings.ReplaceAll(m[1], "\t", " ")
		}
	}
	return "(no reason given)"
}

func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// summarize prints one line per skip reason recorded in path with the
// number of skips for it, the most frequent first, or that nothing
// skipped.
func summarize(path string, out io.Writer) error {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	counts := map[string]int{}
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" {
			continue
		}
		reason, _, _ := strings.Cut(line, "\t")
		counts[reason]++
	}
	if len(counts) == 0 {
		fmt.Fprintln(out, "skipped: none")
		return nil
	}
	reasons := make([]string, 0, len(counts))
	for r := range counts {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool {
		if counts[reasons[i]] != counts[reasons[j]] {
			return counts[reasons[i]] > counts[reasons[j]]
		}
		return reasons[i] < reasons[j]
	})
	for _, r := range reasons {
		fmt.Fprintf(out, "skipped %d: %s\n", counts[r], r)
	}
	return nil
}
