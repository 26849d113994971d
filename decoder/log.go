package decoder

import (
	"context"
	"log/slog"
	"strings"

	"github.com/asticode/go-astiav"
)

// RouteLogs sends FFmpeg's log messages to logger instead of stderr, all at
// debug level: framefs reports every failure through its own errors, which
// name the file and the problem, so FFmpeg's messages only help when
// debugging. FFmpeg's logging is process-wide; the program's main function
// calls this once.
func RouteLogs(logger *slog.Logger) {
	if !logger.Enabled(context.Background(), slog.LevelDebug) {
		astiav.SetLogLevel(astiav.LogLevelQuiet)
		return
	}
	astiav.SetLogLevel(astiav.LogLevelWarning)
	astiav.SetLogCallback(func(_ astiav.Classer, l astiav.LogLevel, _, msg string) {
		logger.Debug(strings.TrimSpace(msg), "source", "ffmpeg", "ffmpeg_level", int(l))
	})
}
