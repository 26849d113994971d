package fusefs

import (
	"context"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/framefs/framefs/mounttree"
)

// readOnly answers every change to a node with EROFS. Snapshots, tags and
// latest are read-only views of immutable data.
type readOnly struct{ noXattrs }

func (readOnly) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

func (readOnly) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EROFS
}

func (readOnly) Unlink(ctx context.Context, name string) syscall.Errno { return syscall.EROFS }

func (readOnly) Rmdir(ctx context.Context, name string) syscall.Errno { return syscall.EROFS }

func (readOnly) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	return syscall.EROFS
}

func (readOnly) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

func (readOnly) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

func (readOnly) Mknod(ctx context.Context, name string, mode uint32, dev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

func (readOnly) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return syscall.EROFS
}

func (readOnly) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return syscall.EROFS
}

func (readOnly) Removexattr(ctx context.Context, attr string) syscall.Errno { return syscall.EROFS }

// noXattrs answers attribute reads of nodes without attributes. Other
// namespaces than user. (SELinux labels, ACLs) are unsupported rather than
// empty: ls -l asks every file for security.selinux and
// system.posix_acl_access, but stops asking for the whole file system at
// the first "not supported", which saves two round trips per file.
type noXattrs struct{}

func (noXattrs) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	if strings.HasPrefix(attr, mounttree.UserXattrPrefix) {
		return 0, syscall.ENODATA
	}
	return 0, syscall.ENOTSUP
}

// bytesHandle serves an open file from memory.
type bytesHandle struct {
	data []byte
}

func (h *bytesHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return fuse.ReadResultData(sliceAt(h.data, dest, off)), 0
}

// sliceAt returns the part of data that a read of len(dest) bytes at off
// gets.
func sliceAt(data, dest []byte, off int64) []byte {
	if off >= int64(len(data)) {
		return nil
	}
	return data[off:min(off+int64(len(dest)), int64(len(data)))]
}
