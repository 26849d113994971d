package mounttree

import (
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/framefs/framefs/table"
)

// PathIno derives a stable inode number from a node's path in the mount.
func PathIno(path string) uint64 { return newInoHash().str(path).ino() }

// inoHash is the 64-bit FNV-1a hash of a name written in pieces, without
// building the name: newInoHash().str(a).str(b).ino() == PathIno(a + b).
// Listing an episode names an inode for every frame, and building each
// name with fmt was most of what a listing allocated.
type inoHash uint64

func newInoHash() inoHash { return 14695981039346656037 } // FNV-1a's offset basis

func (h inoHash) str(s string) inoHash { return hashBytes(h, s) }

// parts adds each of parts after a "|", as episodeFileIno names them.
func (h inoHash) parts(parts ...string) inoHash {
	for _, p := range parts {
		h = h.str("|").str(p)
	}
	return h
}

// int adds v in decimal, as fmt's %d writes it.
func (h inoHash) int(v int64) inoHash {
	var buf [20]byte
	return hashBytes(h, strconv.AppendInt(buf[:0], v, 10))
}

func hashBytes[S string | []byte](h inoHash, s S) inoHash {
	for i := 0; i < len(s); i++ {
		h ^= inoHash(s[i])
		h *= 1099511628211 // FNV's 64-bit prime
	}
	return h
}

// ino is the inode number of the hashed name: 0 is no inode and 1 the
// root.
func (h inoHash) ino() uint64 {
	v := uint64(h)
	if v <= 1 {
		v += 2
	}
	return v
}

// videoFileName is the name of a video column's file: the column and the
// extension of the file it was ingested from (MP4 and its kin, Matroska,
// WebM), .mp4 when that is unknown.
func videoFileName(column string, ref table.VideoRef) string {
	switch ext := strings.ToLower(path.Ext(ref.SourceName)); ext {
	case ".mp4", ".m4v", ".mov", ".mkv", ".webm":
		return column + ext
	}
	return column + ".mp4"
}

// videoColumnOf returns the video column whose file is name in an episode
// folder of e.
func videoColumnOf(e *episode, name string) (string, bool) {
	for _, v := range e.videos {
		if videoFileName(v.column, v.ref) == name {
			return v.column, true
		}
	}
	return "", false
}

// videoIno is the inode number of a stored video's file: every episode
// folder showing the same payload shows the same file.
func videoIno(ref table.VideoRef) uint64 {
	return newInoHash().str("video|").str(ref.Pack).str("@").int(ref.Offset).str("+").int(ref.Length).str("|").str(ref.SHA256).ino()
}

// FrameName is the file name of row i: a zero-padded ordinal, so that name
// order is frame order.
func FrameName(i, rows int64, ext string) string {
	return paddedName(i, frameNameWidth(rows), ext)
}

// frameNameWidth is the digits of the frame names of an episode of rows
// rows: 6, or more for the largest ordinal.
func frameNameWidth(rows int64) int { return max(6, len(strconv.FormatInt(rows-1, 10))) }

// paddedName is i, zero-padded to width digits, and ext: what
// fmt.Sprintf("%0*d.%s", width, i, ext) makes for i ≥ 0. The names of
// small ordinals are made once and shared (sharedNames).
func paddedName(i int64, width int, ext string) string {
	if i >= 0 && i < maxSharedName && width < len(sharedNames.byWidth) {
		if r := sharedRun(width, ext); r != nil {
			if names := *r.names.Load(); i < int64(len(names)) {
				return names[i]
			}
		}
		if name, ok := sharedName(int(i), width, ext); ok {
			return name
		}
	}
	return makePaddedName(i, width, ext)
}

// makePaddedName makes paddedName's name, in one allocation.
func makePaddedName(i int64, width int, ext string) string {
	var buf [20]byte
	digits := strconv.AppendInt(buf[:0], i, 10)
	var b strings.Builder
	b.Grow(max(width, len(digits)) + 1 + len(ext))
	for n := len(digits); n < width; n++ {
		b.WriteByte('0')
	}
	b.Write(digits)
	b.WriteByte('.')
	b.WriteString(ext)
	return b.String()
}

// sharedNames keeps the names of the first ordinals of each width and
// extension in use: every episode folder of a table lists the same frame
// names, and a lookup checks a name by making it again, so a mount whose
// readers list and open frames all day would otherwise make the same
// strings millions of times. A run of names grows (by doubling) to the
// largest ordinal asked for, up to maxSharedName; all runs together hold
// at most maxSharedNames names (about 32 bytes each), past which names
// are made each time.
var sharedNames struct {
	mu    sync.Mutex // serializes growth
	total int        // names held, under mu
	// byWidth holds, by width, the runs of each extension: read without
	// the lock, replaced whole under it.
	byWidth [20]atomic.Pointer[[]*nameRun]
}

const (
	maxSharedName  = 1 << 14
	maxSharedNames = 1 << 16
)

// nameRun is the names 0, 1, ... of one width and extension.
type nameRun struct {
	ext   string
	names atomic.Pointer[[]string]
}

// sharedRun returns the run of names of width and ext, nil if there is
// none yet.
func sharedRun(width int, ext string) *nameRun {
	if runs := sharedNames.byWidth[width].Load(); runs != nil {
		for _, r := range *runs {
			if r.ext == ext {
				return r
			}
		}
	}
	return nil
}

// sharedName returns the shared name of ordinal i (< maxSharedName),
// growing its run to hold it, unless the runs are full.
func sharedName(i, width int, ext string) (string, bool) {
	s := &sharedNames
	s.mu.Lock()
	defer s.mu.Unlock()
	run := sharedRun(width, ext)
	if run == nil {
		run = &nameRun{ext: strings.Clone(ext)}
		run.names.Store(&[]string{})
		grown := []*nameRun{run}
		if runs := s.byWidth[width].Load(); runs != nil {
			grown = append(slices.Clip(*runs), run)
		}
		s.byWidth[width].Store(&grown)
	}
	names := *run.names.Load()
	if i < len(names) {
		return names[i], true // grown meanwhile
	}
	n := min(max(2*len(names), i+1, 64), maxSharedName)
	if s.total+n-len(names) > maxSharedNames {
		return "", false
	}
	grown := make([]string, n)
	copy(grown, names)
	for k := len(names); k < n; k++ {
		grown[k] = makePaddedName(int64(k), width, ext)
	}
	s.total += n - len(names)
	run.names.Store(&grown)
	return grown[i], true
}

// parseFrameName is the inverse of FrameName.
func parseFrameName(name string, rows int64, ext string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, "."+ext)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || i < 0 || i >= rows || FrameName(i, rows, ext) != name {
		return 0, false
	}
	return i, true
}

// A file of an episode is the same file in every snapshot (and view) that
// holds the same version of the episode: its inode number names what makes
// its bytes, attributes and extended attributes (the episode version's rows
// and video, the schema they are read with, the image setting), not its
// path, and its times are the episode version's commit time. So the kernel
// keeps one inode, and one copy in its page cache, for a frame read through
// latest before and after a commit that did not change its episode, or
// through a tag, a snapshot and a view; and the daemon one node. (Such
// files report one link: they are not hard links to tools that copy
// trees.)
func episodeFileIno(e *episode, schemaID int, parts ...string) uint64 {
	return episodeInoHash(e, schemaID).parts(parts...).ino()
}

// episodeInoHash hashes what names episode e's version in the inode
// numbers of its files: "episode|NAME|DATAFILE#ROWGROUP|FIRSTROW|ROWS|SCHEMA"
// and "|COLUMN=PACK@OFFSET+LENGTH:FIRSTFRAME" for each video.
func episodeInoHash(e *episode, schemaID int) inoHash {
	h := newInoHash().str("episode|").str(e.name).str("|").str(e.dataFile).str("#").int(int64(e.rowGroup)).
		str("|").int(e.firstRowID).str("|").int(e.rows).str("|").int(int64(schemaID))
	for _, v := range e.videos { // sorted by column
		r := v.ref
		h = h.str("|").str(v.column).str("=").str(r.Pack).str("@").int(r.Offset).str("+").int(r.Length).str(":").int(r.FirstFrame)
	}
	return h
}

// UserXattrPrefix is the only extended attribute namespace of the mount:
// frames carry their row's columns as user.COLUMN.
const UserXattrPrefix = "user."
