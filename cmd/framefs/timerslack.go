package main

// The Go runtime's monitor thread (sysmon) sleeps 20 µs between checks
// while any goroutine sits in a system call or a cgo call, to take its
// processor back. A mount always has both: go-fuse's readers block in
// read(2) on /dev/fuse, and decoding and encoding run in FFmpeg through
// cgo. With the kernel's default timer slack of 50 µs that is thousands of
// wakeups a second, each a context switch: in a shuffled epoch of 1,800
// frames the monitor woke 19,000 times and took a tenth of the daemon's
// CPU. A slack of 1 ms lets the kernel batch those wakeups (3,000 in the
// same epoch) and delays nothing the daemon waits on by more than that:
// sleeps and timers only, never reads, locks or condition variables.
//
// The slack is set before the runtime starts its threads, which inherit
// it, as do the processes framefs starts (the daemon of mount --daemon,
// fusermount3). A slack the process was started with (systemd's
// TimerSlackNSec=, prctl in a parent) is kept.

/*
#include <sys/prctl.h>

enum {
	kernelDefaultSlackNs = 50000,
	framefsSlackNs = 1000000,
};

__attribute__((constructor)) static void framefs_set_timer_slack(void) {
	if (prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0) == kernelDefaultSlackNs) {
		prctl(PR_SET_TIMERSLACK, (unsigned long)framefsSlackNs, 0, 0, 0);
	}
}
*/
import "C"

// timerSlackNs is the slack framefs sets, in nanoseconds.
const timerSlackNs = C.framefsSlackNs
