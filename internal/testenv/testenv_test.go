package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestCIRequiresEverything: CI must turn every skip into a failure, so
// .ci/run sets the variable of every need, and the Makefile names them.
func TestCIRequiresEverything(t *testing.T) {
	for _, file := range []string{"../../.ci/run", "../../Makefile"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range All {
			if !strings.Contains(string(data), n.Env()+"=1") {
				t.Errorf("%s does not set %s=1", file, n.Env())
			}
		}
	}
}

const example = Need("EXAMPLE")

// TestMissing runs Missing in a child process without and with
// FRAMEFS_REQUIRE_EXAMPLE=1: it must skip, then fail, saying why both times.
func TestMissing(t *testing.T) {
	for _, tc := range []struct {
		require string
		want    string
	}{
		{"", "--- SKIP: TestMissingChild"},
		{"1", "--- FAIL: TestMissingChild"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "FRAMEFS_TESTENV_CHILD=1", example.Env()+"="+tc.require)
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), "no example device") ||
			!strings.Contains(string(out), "FRAMEFS_REQUIRE_EXAMPLE=1") {
			t.Errorf("%s=%q: want %q with the reason and the variable, got:\n%s", example.Env(), tc.require, tc.want, out)
		}
	}
}

// TestMissingChild is TestMissing's child; in any other run it has nothing
// to do.
func TestMissingChild(t *testing.T) {
	if os.Getenv("FRAMEFS_TESTENV_CHILD") != "1" {
		return
	}
	Missing(t, example, "no example device")
}
