package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestTimerSlack starts this test binary with a given timer slack and
// reads the slack it runs with: the kernel's default becomes framefs's,
// any other value is kept.
func TestTimerSlack(t *testing.T) {
	if os.Getenv("FRAMEFS_REPORT_TIMER_SLACK") != "" {
		// The child: the constructor ran before the runtime started.
		slack, err := os.ReadFile("/proc/self/timerslack_ns")
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("timerslack_ns=%s\n", strings.TrimSpace(string(slack)))
		return
	}
	for _, c := range []struct{ inherited, want int }{
		{inherited: 50_000, want: timerSlackNs},
		{inherited: 123_456, want: 123_456},
	} {
		if got := slackOfChild(t, c.inherited); got != c.want {
			t.Errorf("started with a timer slack of %d ns, framefs runs with %d ns, want %d", c.inherited, got, c.want)
		}
	}
}

// slackOfChild runs this test binary with an inherited timer slack of
// slack ns and returns the slack it runs with.
func slackOfChild(t *testing.T, slack int) int {
	t.Helper()
	// A child inherits the slack of the thread that forks it: fork from
	// this one, with the slack set, and put the slack back after.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(slack), 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(before), 0, 0, 0)

	cmd := exec.Command(os.Args[0], "-test.run=^TestTimerSlack$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "FRAMEFS_REPORT_TIMER_SLACK=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "timerslack_ns="); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("child reported %q", line)
			}
			return n
		}
	}
	t.Fatalf("the child reported no timer slack: %s", out)
	return 0
}
