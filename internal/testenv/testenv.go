// Package testenv decides what a test does when the machine lacks
// something it needs beyond Go and the Debian packages `make deps`
// installs: a usable /dev/fuse, the versitygw S3 test server, Debian's
// torchvision, root privileges. Such a test is skipped with a reason that says what is
// missing and how to get it (`make test` counts skips by reason), unless
// FRAMEFS_REQUIRE_<NEED>=1 is set, when it fails instead. CI sets them all,
// so nothing skips there.
package testenv

import (
	"fmt"
	"os"
	"testing"
)

// Need is something from the machine a test needs; FRAMEFS_REQUIRE_<Need>=1
// makes its absence a failure.
type Need string

// The needs the tests have.
const (
	FUSE        Need = "FUSE"        // a usable /dev/fuse
	S3          Need = "S3"          // versitygw, the S3 test server (scripts/versitygw.sh build)
	Torchvision Need = "TORCHVISION" // Debian's python3-torchvision for /usr/bin/python3
	Root        Need = "ROOT"        // root: mounting a tmpfs, dropping the kernel's caches
)

// All lists every need, for CI and for the checks that each has a variable.
var All = []Need{FUSE, S3, Torchvision, Root}

// Env is the variable that makes the need required.
func (n Need) Env() string { return "FRAMEFS_REQUIRE_" + string(n) }

// Required reports whether a test missing n must fail rather than skip.
func (n Need) Required() bool { return os.Getenv(n.Env()) == "1" }

// Missing ends the calling test because n is missing, for the given
// reason: a skip, or a failure when n is required.
func Missing(t testing.TB, n Need, reason string) {
	t.Helper()
	if n.Required() {
		t.Fatalf("%s (%s=1 requires it)", reason, n.Env())
	}
	t.Skipf("%s (%s=1 makes this a failure)", reason, n.Env())
}

// fuseDevice is the device a FUSE mount opens.
const fuseDevice = "/dev/fuse"

// RequireFUSE ends the calling test when there is no FUSE device to mount
// with (see Missing).
func RequireFUSE(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(fuseDevice); err != nil {
		Missing(t, FUSE, fmt.Sprintf("no FUSE device: %v", err))
	}
}
