package fusefs

import (
	"context"
	"errors"
	"log/slog"
	"syscall"

	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
)

// errno maps an error of the library packages to the errno a file
// operation returns. Anything unexpected is logged and becomes EIO, so
// that a broken video fails its own reads and nothing else.
func errno(op string, err error) syscall.Errno {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, table.ErrNotFound), errors.Is(err, storage.ErrNotFound), errors.Is(err, media.ErrFrameRange):
		return syscall.ENOENT
	case errors.Is(err, table.ErrExists):
		return syscall.EEXIST
	case errors.Is(err, table.ErrInvalidName), errors.Is(err, storage.ErrInvalidKey):
		slog.Info("framefs: refused", "op", op, "err", err)
		return syscall.EINVAL
	case errors.Is(err, context.Canceled):
		return syscall.EINTR
	}
	slog.Error("framefs: I/O error", "op", op, "err", err)
	return syscall.EIO
}
