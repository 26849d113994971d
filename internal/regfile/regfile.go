// Package regfile opens files that must be regular files: the videos and
// metadata of a dataset being imported, the entries of a cache directory.
// Opening a FIFO blocks until someone writes to it (a reader stuck in
// open cannot be killed from a FUSE request), and reading a device such as
// /dev/zero never ends, so what is not a regular file is refused before it
// is opened, and what was opened is checked to be the file that was looked
// at.
//
// Open follows symbolic links (a Hugging Face cache lays datasets out as
// links into a blobs folder). Dir does not: names below a cache directory
// are resolved one at a time relative to the open directory, never
// through a link, so that whoever can write to the directory cannot make
// the cache read, write or remove a file outside it.
//
// The package is Linux-only, like the FUSE mount it serves.
package regfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// NotRegularError says that a file is not a regular file.
type NotRegularError struct {
	Path string
	// Kind says what it is: "FIFO", "character device", "directory", ...
	Kind string
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is a %s, not a regular file", e.Path, e.Kind)
}

// ErrNotRegular is what a *NotRegularError matches with errors.Is.
var ErrNotRegular = errors.New("not a regular file")

func (e *NotRegularError) Is(target error) bool { return target == ErrNotRegular }

// kind names the type of a file mode (unix.S_IFMT bits).
func kind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "regular file"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFLNK:
		return "symbolic link"
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	}
	return fmt.Sprintf("file of type %#o", mode&unix.S_IFMT)
}

// openFlags open for reading without ever blocking in open: O_NONBLOCK
// matters only for what is not a regular file, which is refused right
// after, and does nothing to a regular file's reads.
const openFlags = unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC

// Open opens path for reading, following symbolic links, if it leads to a
// regular file. Anything else gives a *NotRegularError without being
// opened, so neither a FIFO nor a device is ever waited on or read.
func Open(path string) (*os.File, error) {
	var before unix.Stat_t
	if err := statRetry(func() error { return unix.Stat(path, &before) }); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if before.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, &NotRegularError{Path: path, Kind: kind(before.Mode)}
	}
	fd, err := openRetry(func() (int, error) { return unix.Open(path, openFlags, 0) })
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return checkOpened(fd, path, &before)
}

// checkOpened returns fd as a file if it is the regular file before
// described; it closes fd otherwise.
func checkOpened(fd int, path string, before *unix.Stat_t) (*os.File, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, &NotRegularError{Path: path, Kind: kind(st.Mode)}
	}
	if st.Dev != before.Dev || st.Ino != before.Ino {
		unix.Close(fd)
		return nil, fmt.Errorf("%s was replaced while it was opened", path)
	}
	// A regular file's reads never block, and it is not pollable:
	// os.NewFile reads it with plain system calls.
	return os.NewFile(uintptr(fd), path), nil
}

// ReadFile reads the regular file at path (following links), which must
// hold at most limit bytes; what holds more is refused before it is read,
// and reading stops at limit if the file grows meanwhile.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, &TooLargeError{Path: path, Size: st.Size(), Limit: limit}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Path: path, Size: int64(len(data)), Limit: limit}
	}
	return data, nil
}

// TooLargeError says that a file holds more bytes than its reader takes.
type TooLargeError struct {
	Path        string
	Size, Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s holds %d bytes, more than the %d it may have", e.Path, e.Size, e.Limit)
}

// statRetry and openRetry repeat a system call a signal interrupted.
func statRetry(call func() error) error {
	for {
		if err := call(); err != syscall.EINTR {
			return err
		}
	}
}

func openRetry(call func() (int, error)) (int, error) {
	for {
		fd, err := call()
		if err != syscall.EINTR {
			return fd, err
		}
	}
}
