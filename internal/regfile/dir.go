package regfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Dir is an open directory whose entries are reached without following
// symbolic links: a link (or anything but a regular file) where a file is
// expected is refused, and one where a folder is expected is not entered.
// It is safe for concurrent use; Close it when done.
type Dir struct {
	fd   int
	path string
}

// OpenDir opens the directory at path, creating it (and its parents) when
// missing. path itself may be a link to a directory: the caller chose it.
func OpenDir(path string) (*Dir, error) {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, err
	}
	fd, err := openRetry(func() (int, error) {
		return unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &Dir{fd: fd, path: path}, nil
}

// Path is the directory's path, for messages.
func (d *Dir) Path() string { return d.path }

// Close closes the directory.
func (d *Dir) Close() error { return unix.Close(d.fd) }

func (d *Dir) join(name string) string { return filepath.Join(d.path, name) }

// ErrNotFolder says that a link or a file is where a Dir expects a folder.
var ErrNotFolder = errors.New("a link or a file where a folder belongs (not followed)")

// Sub opens the folder name of d. A link there is not followed: it gives
// an error matching ErrNotFolder, as does a file that is no folder. With
// create, a missing folder is made, and a link or file in its place is
// removed (the link, not what it points to) and replaced by a folder.
func (d *Dir) Sub(name string, create bool) (*Dir, error) {
	for attempt := 0; ; attempt++ {
		fd, err := openRetry(func() (int, error) {
			return unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		})
		if err == nil {
			return &Dir{fd: fd, path: d.join(name)}, nil
		}
		notDir := err == unix.ELOOP || err == unix.ENOTDIR
		if !create || attempt == 2 || !notDir && err != unix.ENOENT {
			if notDir {
				err = ErrNotFolder
			}
			return nil, &fs.PathError{Op: "open", Path: d.join(name), Err: err}
		}
		if notDir {
			if err := unix.Unlinkat(d.fd, name, 0); err != nil && err != unix.ENOENT {
				return nil, &fs.PathError{Op: "remove", Path: d.join(name), Err: err}
			}
		}
		if err := unix.Mkdirat(d.fd, name, 0o700); err != nil && err != unix.EEXIST {
			return nil, &fs.PathError{Op: "mkdir", Path: d.join(name), Err: err}
		}
	}
}

// Stat describes the regular file name of d without following a link;
// anything else gives a *NotRegularError.
func (d *Dir) Stat(name string) (FileInfo, error) {
	var st unix.Stat_t
	if err := statRetry(func() error { return unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		return FileInfo{}, &fs.PathError{Op: "stat", Path: d.join(name), Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return FileInfo{}, &NotRegularError{Path: d.join(name), Kind: kind(st.Mode)}
	}
	return fileInfo(name, &st), nil
}

// FileInfo describes a regular file of a Dir.
type FileInfo struct {
	Name    string
	Size    int64
	ModTime time.Time
}

func fileInfo(name string, st *unix.Stat_t) FileInfo {
	return FileInfo{Name: name, Size: st.Size, ModTime: time.Unix(st.Mtim.Unix())}
}

// Open opens the regular file name of d for reading; a link, a FIFO, a
// device or anything else but a regular file gives a *NotRegularError
// without being opened or followed.
func (d *Dir) Open(name string) (*os.File, error) {
	var before unix.Stat_t
	if err := statRetry(func() error { return unix.Fstatat(d.fd, name, &before, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: d.join(name), Err: err}
	}
	if before.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, &NotRegularError{Path: d.join(name), Kind: kind(before.Mode)}
	}
	fd, err := openRetry(func() (int, error) { return unix.Openat(d.fd, name, openFlags|unix.O_NOFOLLOW, 0) })
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: d.join(name), Err: err}
	}
	return checkOpened(fd, d.join(name), &before)
}

// Create makes the new file name in d for writing (mode 0600); it fails if
// anything, a link included, is there already.
func (d *Dir) Create(name string) (*os.File, error) {
	fd, err := openRetry(func() (int, error) {
		return unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	})
	if err != nil {
		return nil, &fs.PathError{Op: "create", Path: d.join(name), Err: err}
	}
	return os.NewFile(uintptr(fd), d.join(name)), nil
}

// Rename moves the file name of d to newName in to, replacing what is
// there (a link is replaced, not followed).
func (d *Dir) Rename(name string, to *Dir, newName string) error {
	if err := unix.Renameat(d.fd, name, to.fd, newName); err != nil {
		return &os.LinkError{Op: "rename", Old: d.join(name), New: to.join(newName), Err: err}
	}
	return nil
}

// Remove removes the entry name of d, whatever it is but a folder; a link
// is removed, not what it points to. A missing entry is no error.
func (d *Dir) Remove(name string) error {
	if err := unix.Unlinkat(d.fd, name, 0); err != nil && err != unix.ENOENT {
		return &fs.PathError{Op: "remove", Path: d.join(name), Err: err}
	}
	return nil
}

// Entry is a name found in a Dir, with its type as the directory listing
// gives it (no link followed).
type Entry struct {
	Name string
	// Type is the entry's type bits (fs.ModeDir, fs.ModeSymlink, ...; 0
	// for a regular file).
	Type fs.FileMode
}

// Entries lists d.
func (d *Dir) Entries() ([]Entry, error) {
	// A second descriptor, so that listing does not move d's offset
	// under another goroutine's listing.
	fd, err := openRetry(func() (int, error) {
		return unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: d.path, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	list, err := f.ReadDir(-1)
	out := make([]Entry, len(list))
	for i, e := range list {
		out[i] = Entry{Name: e.Name(), Type: e.Type()}
	}
	if err != nil {
		return out, fmt.Errorf("list %s: %w", d.path, err)
	}
	return out, nil
}

// Touch sets the modification time of the entry name of d to now; a link
// gets its own time set, never its target's.
func (d *Dir) Touch(name string) error {
	ts := unix.NsecToTimespec(time.Now().UnixNano())
	if err := unix.UtimesNanoAt(d.fd, name, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "touch", Path: d.join(name), Err: err}
	}
	return nil
}

// IsNotExist reports whether err says a file is missing.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// TempPrefix starts the names of the temporary files Replace writes.
const TempPrefix = ".tmp-"

// Replace writes the file name of d whole or not at all: write fills a
// new temporary file in tmp (another folder of the same file system, or
// d), which is then renamed into place, replacing what is there (a link
// is replaced, not followed). The temporary file is removed if anything
// fails.
func (d *Dir) Replace(tmp *Dir, name string, write func(f *os.File) error) error {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmpName := TempPrefix + hex.EncodeToString(rnd[:])
	f, err := tmp.Create(tmpName)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = tmp.Rename(tmpName, d, name)
	}
	if err != nil {
		tmp.Remove(tmpName)
	}
	return err
}
