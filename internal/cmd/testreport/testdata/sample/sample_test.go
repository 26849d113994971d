// Package sample is the input of testreport's test: a passing, a failing, a
// skipped and a parallel test with subtests. It is under testdata so that
// `go test ./...` leaves it alone.
package sample

import "testing"

func TestPasses(t *testing.T) {
	t.Log("noise a passing test prints")
}

func TestSkipsWithReason(t *testing.T) {
	t.Log("something before the reason")
	t.Skip("no widget here: install widgets")
}

func TestSkipsSilently(t *testing.T) {
	t.SkipNow()
}

func TestFails(t *testing.T) {
	t.Error("the answer is 41")
}

func TestParent(t *testing.T) {
	for _, name := range []string{"good", "bad", "absent"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			switch name {
			case "bad":
				t.Errorf("subtest %s broke", name)
			case "absent":
				t.Skip("no widget here: install widgets")
			}
		})
	}
}
