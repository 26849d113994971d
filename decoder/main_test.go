package decoder

import (
	"log/slog"
	"os"
	"testing"
)

// TestMain keeps FFmpeg's log messages (warnings about damaged input the
// tests feed it on purpose) out of the test output, as the command does
// unless --debug is given. They would also fill the pipe a fuzzing worker
// writes its output to, which nobody reads while it fuzzes: the worker
// would block on the write and the fuzzer stall.
func TestMain(m *testing.M) {
	RouteLogs(slog.New(slog.NewTextHandler(os.Stderr, nil)))
	os.Exit(m.Run())
}
