package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReport runs the real `go test -json` on the sample package and
// checks what the report prints and which skips it records.
func TestReport(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to make the input: %v", err)
	}
	cmd := exec.Command(goBin, "test", "-json", "-count=1", "./testdata/sample")
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	var stream bytes.Buffer
	cmd.Stdout = &stream
	if err := cmd.Run(); err == nil {
		t.Fatal("the sample package has failing tests, yet go test succeeded")
	}
	var out, skips bytes.Buffer
	ok, err := report(bytes.NewReader(stream.Bytes()), &out, &skips)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Error("report says ok for a failing package")
	}
	got := out.String()
	for _, want := range []string{
		"--- FAIL: TestFails", "the answer is 41",
		"--- FAIL: TestParent", "--- FAIL: TestParent/bad", "subtest bad broke",
		"FAIL\tgithub.com/framefs/framefs/internal/cmd/testreport/testdata/sample",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"noise a passing test prints", "=== RUN", "something before the reason", "--- SKIP"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("report shows %q:\n%s", unwanted, got)
		}
	}
	// Plain go test nests a failed subtest under its parent.
	if strings.Index(got, "--- FAIL: TestParent ") > strings.Index(got, "--- FAIL: TestParent/bad") {
		t.Errorf("the subtest's failure comes before its parent's:\n%s", got)
	}
	lines := strings.Split(strings.TrimSpace(skips.String()), "\n")
	want := map[string]bool{
		"no widget here: install widgets\tgithub.com/framefs/framefs/internal/cmd/testreport/testdata/sample.TestSkipsWithReason": true,
		"no widget here: install widgets\tgithub.com/framefs/framefs/internal/cmd/testreport/testdata/sample.TestParent/absent":   true,
		"(no reason given)\tgithub.com/framefs/framefs/internal/cmd/testreport/testdata/sample.TestSkipsSilently":                 true,
	}
	if len(lines) != len(want) {
		t.Fatalf("skips recorded:\n%s", skips.String())
	}
	for _, l := range lines {
		if !want[l] {
			t.Errorf("unexpected skip line %q", l)
		}
	}

	path := filepath.Join(t.TempDir(), "skips")
	os.WriteFile(path, append(skips.Bytes(), "versitygw missing\te2e-s3.sh\n"...), 0o644)
	var sum bytes.Buffer
	if err := summarize(path, &sum); err != nil {
		t.Fatal(err)
	}
	wantSum := "skipped 2: no widget here: install widgets\nskipped 1: (no reason given)\nskipped 1: versitygw missing\n"
	if sum.String() != wantSum {
		t.Errorf("summary:\n%s\nwant:\n%s", sum.String(), wantSum)
	}
}

// TestReportPassing: a clean stream is ok and prints the package lines
// only; a stream without any package is not ok.
func TestReportPassing(t *testing.T) {
	stream := `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:3: hello\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Output":"PASS\n"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.01s\n"}
{"Action":"pass","Package":"p"}
`
	var out, skips bytes.Buffer
	ok, err := report(strings.NewReader(stream), &out, &skips)
	if err != nil || !ok {
		t.Fatalf("ok %v, err %v", ok, err)
	}
	if out.String() != "ok  \tp\t0.01s\n" || skips.Len() != 0 {
		t.Errorf("out %q, skips %q", out.String(), skips.String())
	}
	if ok, err := report(strings.NewReader("go: bad flag\n"), &out, &skips); ok || err == nil {
		t.Errorf("an empty stream: ok %v, err %v", ok, err)
	}
	var sum bytes.Buffer
	if err := summarize(filepath.Join(t.TempDir(), "none"), &sum); err != nil || sum.String() != "skipped: none\n" {
		t.Errorf("no skips: %q %v", sum.String(), err)
	}
}
