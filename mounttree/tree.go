package mounttree

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/table"
)

// Tree is what the folder of a snapshot (snapshots/N/) or of a view over
// a snapshot (views/.NAME@N-V/) shows: partition (or group-by) folders,
// episode folders, and in them frames, rows files, stored videos and, in
// a clip view, clip folders. Its folders are listed from an index when
// they are listed or looked up; what its files hold comes from the
// catalog's caches.
type Tree struct {
	base   *treeBase
	schema *table.Schema
	index  index
	// window and clips are set on a clip view's tree: the view's window,
	// and its clips for the files at its root.
	window *table.Window
	clips  *clipIndex
}

// treeBase is what a tree's files are made from. Files keep it rather
// than their tree, so that a file the kernel holds does not keep its
// tree's index.
type treeBase struct {
	cat  *Catalog
	snap *table.Snapshot
	// view is set on a view's tree.
	view *View
	// videoColumns is the number of the schema's video columns: with
	// several, an episode folder holds one folder of frames per column.
	videoColumns int
}

func newTree(cat *Catalog, snap *table.Snapshot, schema *table.Schema, view *View, ix index) *Tree {
	return &Tree{base: &treeBase{cat: cat, snap: snap, view: view, videoColumns: len(schema.VideoColumns)}, schema: schema, index: ix}
}

// setting returns the image setting frames of a video are served with,
// and its identity: the table's, or the view's own.
func (b *treeBase) setting(ref table.VideoRef) (media.ImageSetting, string) {
	c := b.cat
	if b.view == nil || b.view.image == nil {
		return c.setting, c.identity
	}
	set := b.view.image.forVideo(c.setting, ref.Width, ref.Height)
	return set, c.identityOf(set)
}

// ext is the file name extension of frames.
func (b *treeBase) ext() string {
	if b.view != nil && b.view.image != nil {
		return b.view.image.format(b.cat.setting).Extension()
	}
	return b.cat.setting.Format.Extension()
}

// bytes estimates the memory of t: its index once read (not the records
// of its episodes, which trees share) and a clip view's clips.
func (t *Tree) bytes() int64 {
	n := int64(unsafe.Sizeof(*t)) + int64(unsafe.Sizeof(*t.base))
	switch x := t.index.(type) {
	case builtIndex:
		n += x.bytes()
	case *snapshotIndex:
		n += x.bytes()
	}
	if t.clips != nil {
		n += t.clips.bytes()
	}
	return n
}

// Root returns the tree's top folder, which the mount shows at path: the
// inode numbers of the folders in it derive from their paths.
func (t *Tree) Root(path string) *Folder {
	return &Folder{tree: t, path: path}
}

// errNoEntry is what a lookup of a name a folder does not hold returns.
var errNoEntry = fmt.Errorf("%w: no such file or folder", table.ErrNotFound)

// Entry is a name in a folder's listing.
type Entry struct {
	Name string
	// Folder says the entry is a folder; otherwise it is a file.
	Folder bool
	Ino    uint64
}

// Item is what a lookup finds: a *Folder or a *File.
type Item interface {
	// Ino is its inode number.
	Ino() uint64
	// Time is its modification (and change) time.
	Time() time.Time
}

// folderKind says what a Folder shows.
type folderKind uint8

const (
	// partitionFolder is the tree's root, a partition folder or a
	// view's group-by folder: folders and episodes, from the index.
	partitionFolder folderKind = iota
	// episodeFolder is an episode's folder: its rows files and videos,
	// and its frames (one video column), a folder of frames per column
	// (several), or its clips' folders (a clip view).
	episodeFolder
	// columnFolder holds the frames of one of an episode's video
	// columns.
	columnFolder
	// clipFolder is a clip's folder: clip.json, and the clip's frames
	// (one video column) or a folder of them per column.
	clipFolder
	// clipColumnFolder holds a clip's frames of one video column.
	clipColumnFolder
)

// Folder is a folder of a tree.
type Folder struct {
	tree *Tree
	// path is where the mount shows the folder; dir is its path from the
	// tree's root ("" for the root), as the index names folders.
	path, dir string
	// ep is the episode an episode folder and the folders in it show.
	ep shownEpisode
	// column is the video column whose frames the folder shows; empty
	// in folders that show none.
	column string
	// clip is the clip of a clip folder and its column folders.
	clip *clipWindow
	kind folderKind // beside rowsSizing: a Folder fits 128 bytes
	// rowsSizing says a listing has had the rows files' sizes worked out.
	rowsSizing atomic.Bool
}

// Ino is the folder's inode number, derived from its path.
func (f *Folder) Ino() uint64 { return PathIno(f.path) }

// Path is where the mount shows the folder.
func (f *Folder) Path() string { return f.path }

// Time is the snapshot's commit time.
func (f *Folder) Time() time.Time { return f.tree.base.snap.Time }

// IsRoot reports whether f is its tree's top folder.
func (f *Folder) IsRoot() bool { return f.kind == partitionFolder && f.dir == "" }

// sub returns the folder name in f, of the given kind.
func (f *Folder) sub(name string, kind folderKind) *Folder {
	// dir is the end of path (f.dir, then name): one string for both.
	path := f.path + "/" + name
	dirStart := len(f.path) + 1
	if f.dir != "" {
		dirStart = len(f.path) - len(f.dir)
	}
	return &Folder{tree: f.tree, kind: kind, path: path, dir: path[dirStart:], ep: f.ep, column: f.column, clip: f.clip}
}

// episodeSub returns the folder of episode ep in partition folder f.
func (f *Folder) episodeSub(ep shownEpisode) *Folder {
	sub := f.sub(ep.e.name, episodeFolder)
	sub.ep, sub.column = ep, ""
	if f.tree.window == nil && f.tree.base.videoColumns == 1 {
		sub.column = f.tree.schema.VideoColumns[0] // frames right in it
	}
	return sub
}

// subfolders are the names of the folders in an episode's or clip's
// folder: its clips' folders (a clip view's episode folder), or one
// folder of frames per video column (with several), sorted.
func (f *Folder) subfolders() []string {
	switch {
	case f.kind == episodeFolder && f.tree.window != nil:
		names := make([]string, len(f.ep.clips))
		for i, start := range f.ep.clips {
			names[i] = clipName(start, f.ep.e.rows) // zero-padded: in start order
		}
		return names
	case (f.kind == episodeFolder || f.kind == clipFolder) && f.tree.base.videoColumns > 1:
		return slices.Sorted(slices.Values(f.tree.schema.VideoColumns))
	}
	return nil
}

// List returns the folder's entries in name order (frames in frame
// order), folders first.
func (f *Folder) List(ctx context.Context) ([]Entry, error) {
	l, err := f.Listing(ctx)
	if err != nil {
		return nil, err
	}
	entries := make([]Entry, l.Len())
	for i := range entries {
		entries[i] = l.At(i)
	}
	return entries, nil
}

// Listing is a folder's entries in name order, folders first: its
// subfolders, its frames in frame order, then its other files. The
// entries of frames, and of a partition folder's subfolders, are made as
// they are asked for, so that listing an episode of thousands of frames,
// or a partition of thousands of episodes, which a job following a table
// does over and over, allocates no entry per frame or episode.
type Listing struct {
	head []Entry // subfolders of an episode or clip folder
	// lazy is how many entries made on demand follow head (frames, or a
	// partition folder's subfolders); entry makes the k-th.
	lazy  int
	entry func(k int) Entry
	tail  []Entry // videos, rows files, clips and clip files
}

// Len is the number of entries.
func (l *Listing) Len() int { return len(l.head) + l.lazy + len(l.tail) }

// At returns entry i, 0 ≤ i < Len().
func (l *Listing) At(i int) Entry {
	if i < len(l.head) {
		return l.head[i]
	}
	if i -= len(l.head); i < l.lazy {
		return l.entry(i)
	}
	return l.tail[i-l.lazy]
}

// Listing returns the folder's entries (see List).
func (f *Folder) Listing(ctx context.Context) (Listing, error) {
	if f.kind == partitionFolder {
		return f.listPartition(ctx)
	}
	var l Listing
	for _, name := range f.subfolders() {
		l.head = append(l.head, f.subfolderEntry(name))
	}
	b, e := f.tree.base, f.ep.e
	if f.clip != nil {
		if f.column != "" {
			ext, width, ino, frames := b.ext(), clipFrameWidth(len(f.clip.frames)), f.frameInos(), f.clip.frames
			l.lazy = len(frames)
			l.entry = func(j int) Entry { return Entry{Name: paddedName(int64(j), width, ext), Ino: ino(frames[j])} }
		}
		if f.kind == clipFolder {
			l.tail = []Entry{{Name: ClipJSON, Ino: f.clipJSONIno()}}
		}
		return l, nil
	}
	if f.column != "" {
		ext, width, ino, rows := b.ext(), frameNameWidth(e.rows), f.frameInos(), f.ep.rows
		if rows == nil {
			l.lazy = int(e.rows)
			l.entry = func(k int) Entry { return Entry{Name: paddedName(int64(k), width, ext), Ino: ino(int64(k))} }
		} else {
			l.lazy = len(rows)
			l.entry = func(k int) Entry { return Entry{Name: paddedName(rows[k], width, ext), Ino: ino(rows[k])} }
		}
	}
	if f.kind == episodeFolder {
		l.tail = make([]Entry, 0, len(e.videos)+2)
		for _, v := range e.videos {
			l.tail = append(l.tail, Entry{Name: videoFileName(v.column, v.ref), Ino: videoIno(v.ref)})
		}
		for _, name := range []string{RowsJSONL, RowsParquet} {
			l.tail = append(l.tail, Entry{Name: name, Ino: f.rowsIno(name)})
		}
		// ls -l stats the rows files last, after every frame: render them
		// meanwhile on another core (their size is their content), once
		// per folder.
		if f.rowsSizing.CompareAndSwap(false, true) {
			for _, name := range []string{RowsJSONL, RowsParquet} {
				go b.cat.rowsFileSize(b.cat.life, b.snap, e, name, f.ep.rows)
			}
		}
	}
	return l, nil
}

// listPartition lists a partition folder from the index (and a clip
// view's root files at its root).
func (f *Folder) listPartition(ctx context.Context) (Listing, error) {
	folders, eps, err := f.tree.index.list(ctx, f.dir)
	if err != nil {
		return Listing{}, err
	}
	var l Listing
	switch {
	case len(eps) == 0:
		l.lazy = len(folders)
		l.entry = func(k int) Entry { return f.subfolderEntry(folders[k]) }
	case len(folders) == 0:
		l.lazy = len(eps)
		l.entry = func(k int) Entry { return f.subfolderEntry(eps[k].name) }
	default: // partition folders beside episodes: one list, in name order
		names := slices.Grow(slices.Clip(folders), len(eps))
		for _, e := range eps {
			names = append(names, e.name)
		}
		sort.Strings(names)
		l.lazy = len(names)
		l.entry = func(k int) Entry { return f.subfolderEntry(names[k]) }
	}
	if f.IsRoot() && f.tree.clips != nil {
		for _, name := range []string{ClipsJSONL, ClipsTxt} {
			l.tail = append(l.tail, Entry{Name: name, Ino: PathIno(f.path + "/" + name)})
		}
	}
	return l, nil
}

// subfolderEntry is the entry of f's subfolder name, whose inode number
// is its path's.
func (f *Folder) subfolderEntry(name string) Entry {
	return Entry{Name: name, Folder: true, Ino: newInoHash().str(f.path).str("/").str(name).ino()}
}

// Lookup returns the folder or file name in f, or an error that wraps
// table.ErrNotFound if f holds no such name.
func (f *Folder) Lookup(ctx context.Context, name string) (Item, error) {
	if f.kind == partitionFolder {
		return f.lookupPartition(ctx, name)
	}
	if sub := f.subfolder(name); sub != nil {
		return sub, nil
	}
	b, e := f.tree.base, f.ep.e
	if f.clip != nil {
		if name == ClipJSON && f.kind == clipFolder {
			return f.file(ClipJSONFile, name), nil
		}
		if f.column == "" {
			return nil, errNoEntry
		}
		j, ok := parseClipFrameName(name, len(f.clip.frames), b.ext())
		if !ok {
			return nil, errNoEntry
		}
		return f.frame(f.clip.frames[j]), nil
	}
	if f.kind == episodeFolder {
		if col, ok := videoColumnOf(e, name); ok {
			file := f.file(VideoFile, name)
			file.column, file.ino = col, videoIno(e.video(col))
			return file, nil
		}
		if name == RowsJSONL || name == RowsParquet {
			return f.file(RowsFile, name), nil
		}
	}
	if f.column == "" {
		return nil, errNoEntry
	}
	row, ok := parseFrameName(name, e.rows, b.ext())
	if !ok {
		return nil, errNoEntry
	}
	if f.ep.rows != nil {
		if _, found := slices.BinarySearch(f.ep.rows, row); !found {
			return nil, errNoEntry // a frame the view leaves out
		}
	}
	return f.frame(row), nil
}

// subfolder returns the folder name in an episode's or clip's folder
// (one of subfolders), or nil.
func (f *Folder) subfolder(name string) *Folder {
	switch {
	case f.kind == episodeFolder && f.tree.window != nil:
		start, ok := parseClipName(name, f.ep.e.rows)
		if !ok {
			return nil
		}
		if _, found := slices.BinarySearch(f.ep.clips, start); !found {
			return nil
		}
		sub := f.sub(name, clipFolder)
		sub.clip = &clipWindow{start: start, frames: f.tree.window.Frames(start)}
		if f.tree.base.videoColumns == 1 {
			sub.column = f.tree.schema.VideoColumns[0]
		}
		return sub
	case (f.kind == episodeFolder || f.kind == clipFolder) && f.tree.base.videoColumns > 1:
		if !slices.Contains(f.tree.schema.VideoColumns, name) {
			return nil
		}
		kind := columnFolder
		if f.kind == clipFolder {
			kind = clipColumnFolder
		}
		sub := f.sub(name, kind)
		sub.column = name
		return sub
	}
	return nil
}

// lookupPartition looks a name up in a partition folder: a folder or an
// episode from the index, or a clip view's root file.
func (f *Folder) lookupPartition(ctx context.Context, name string) (Item, error) {
	if f.IsRoot() && f.tree.clips != nil {
		if data, ok := f.tree.clips.file(name); ok {
			file := f.file(ClipListFile, name)
			file.more = &fileMore{data: data}
			return file, nil
		}
	}
	isFolder, ep, err := f.tree.index.find(ctx, f.dir, name)
	switch {
	case err != nil:
		return nil, err
	case isFolder:
		return f.sub(name, partitionFolder), nil
	}
	return f.episodeSub(ep), nil
}

// FileKind says what a File holds.
type FileKind uint8

const (
	// FrameFile is a frame's image, made when it is read.
	FrameFile FileKind = iota + 1
	// VideoFile is a stored video, byte for byte.
	VideoFile
	// RowsFile is an episode's frames.jsonl or frames.parquet.
	RowsFile
	// ClipJSONFile is a clip's clip.json.
	ClipJSONFile
	// ClipListFile is a clip view's clips.jsonl or clips.txt.
	ClipListFile
)

// File is a file of a tree. Its content never changes.
type File struct {
	base *treeBase
	// e is the episode of every file but a clip list.
	e *episode
	// name is the file's name in its folder.
	name string
	// column is a frame's or stored video's video column.
	column string
	ino    uint64
	// row is a frame's row in its episode.
	row int64
	// more is what a rows file, clip.json or clip list holds besides, and
	// the rows a view's frame is shown with; nil for the frames of
	// snapshots, nearly every file a mount makes.
	more *fileMore
	kind FileKind

	mu   sync.Mutex // guards size
	size int64      // a frame's, once known (no image is empty)
}

// fileMore is what a file other than a snapshot's frame or a stored video
// is made of.
type fileMore struct {
	// rows are the rows a rows file holds, or a frame's folder shows (a
	// view's); nil: all.
	rows []int64
	// clip is a clip.json's clip.
	clip *clipWindow
	// data is a clip list's content.
	data []byte
}

// file returns the file name of f's episode (or clip view).
func (f *Folder) file(kind FileKind, name string) *File {
	file := &File{base: f.tree.base, kind: kind, name: name, e: f.ep.e}
	switch kind {
	case RowsFile:
		file.ino = f.rowsIno(name)
		if f.ep.rows != nil {
			file.more = &fileMore{rows: f.ep.rows}
		}
	case FrameFile:
		if f.ep.rows != nil {
			// The frame server decodes and keeps only the frames the
			// view shows (media.Video.Shown). The rows steer what fills
			// keep, never what a frame holds.
			file.more = &fileMore{rows: f.ep.rows}
		}
	case ClipJSONFile:
		file.ino = f.clipJSONIno()
		file.more = &fileMore{clip: f.clip}
	case ClipListFile:
		file.ino = PathIno(f.path + "/" + name)
	}
	return file
}

// frame returns the file of row's frame of f's video column.
func (f *Folder) frame(row int64) *File {
	e := f.ep.e
	file := f.file(FrameFile, FrameName(row, e.rows, f.tree.base.ext()))
	file.column, file.row, file.ino = f.column, row, f.frameIno(row)
	return file
}

// episodeFileTime is the time of the files of episode e: when its version
// was committed.
func episodeFileTime(b *treeBase, e *episode) time.Time {
	if t, ok := e.commitTime(); ok {
		return t
	}
	return b.snap.Time // written before episodes had their own time
}

// frameIno is the inode number of row's frame of f's video column, as
// served with the table's image setting (or a view's own).
func (f *Folder) frameIno(row int64) uint64 { return f.frameInos()(row) }

// frameInos returns frameIno for many rows: what the inode numbers of
// f's frames share is hashed once. A frame's number is episodeFileIno's
// with the parts "frame", the column, the row and the image identity.
func (f *Folder) frameInos() func(row int64) uint64 {
	_, identity := f.tree.base.setting(f.ep.e.video(f.column))
	h := episodeInoHash(f.ep.e, f.tree.base.snap.SchemaID).parts("frame", f.column).str("|")
	return func(row int64) uint64 { return h.int(row).parts(identity).ino() }
}

// rowsIno is the inode number of one of f's episode's rows files.
func (f *Folder) rowsIno(name string) uint64 {
	if f.ep.rows != nil {
		// A view's rows file holds its rows only.
		return episodeFileIno(f.ep.e, f.tree.base.snap.SchemaID, name, ordinalsKey(f.ep.rows))
	}
	return episodeFileIno(f.ep.e, f.tree.base.snap.SchemaID, name)
}

// clipJSONIno is the inode number of a clip's clip.json: its content is
// the episode version's rows at the clip's frames.
func (f *Folder) clipJSONIno() uint64 {
	return episodeFileIno(f.ep.e, f.tree.base.snap.SchemaID, ClipJSON, ordinalsKey(f.clip.frames))
}

// Kind says what the file holds.
func (f *File) Kind() FileKind { return f.kind }

// Name is the file's name in its folder.
func (f *File) Name() string { return f.name }

// Ino is the file's inode number: the same wherever the same file is
// shown (see episodeFileIno).
func (f *File) Ino() uint64 { return f.ino }

// Time is when the file's episode version was committed (a clip list's,
// its snapshot).
func (f *File) Time() time.Time {
	if f.e == nil {
		return f.base.snap.Time
	}
	return episodeFileTime(f.base, f.e)
}

// String names the file for messages.
func (f *File) String() string {
	switch f.kind {
	case FrameFile:
		return fmt.Sprintf("%s frame %d of episode %q", f.column, f.row, f.e.name)
	case ClipListFile:
		return f.name
	}
	return fmt.Sprintf("%s of episode %q", f.name, f.e.name)
}

// selected returns the rows a rows file holds, or a frame's folder
// shows: nil for all of them.
func (m *fileMore) selected() []int64 {
	if m == nil {
		return nil
	}
	return m.rows
}

func (f *File) ref() table.VideoRef { return f.e.video(f.column) }

// Subsampled reports whether f is a frame of a view's folder that shows
// some of its episode's frames, whose fills make only those.
func (f *File) Subsampled() bool { return f.kind == FrameFile && f.more != nil }

// shown is the part of its episode a frame is shown with.
func (f *File) shown() shownRows { return shownRows{f.e.rows, f.more.selected()} }

// ordinal is a frame's ordinal in its video.
func (f *File) ordinal() int { return int(f.ref().FirstFrame + f.row) }

// Size returns the file's exact size in bytes. A frame's size is stored
// at ingest, follows from its picture size, or was learnt when its image
// was made; else Size makes the image (which the frame server keeps for the
// read that follows).
func (f *File) Size(ctx context.Context) (int64, error) {
	size, _, err := f.findSize(ctx, true)
	return size, err
}

// KnownSize returns the file's size if knowing it makes no frame image: a
// folder listing that reports sizes (READDIRPLUS) must not decode the
// episode it lists. ok is false for a frame whose image must be made first.
func (f *File) KnownSize(ctx context.Context) (size int64, ok bool, err error) {
	return f.findSize(ctx, false)
}

func (f *File) findSize(ctx context.Context, canMake bool) (int64, bool, error) {
	c, snap := f.base.cat, f.base.snap
	var size int64
	var err error
	switch f.kind {
	case FrameFile:
		return f.frameSize(ctx, canMake)
	case VideoFile:
		size = f.ref().Length
	case RowsFile:
		size, err = c.rowsFileSize(ctx, snap, f.e, f.name, f.more.selected())
	case ClipJSONFile:
		size, err = c.clipJSONSize(ctx, snap, f.e, f.more.clip)
	default:
		size = int64(len(f.more.data))
	}
	return size, err == nil, err
}

func (f *File) frameSize(ctx context.Context, canMake bool) (int64, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.size > 0 {
		return f.size, true, nil
	}
	set, identity := f.base.setting(f.ref())
	size, ok, err := f.base.cat.frameSize(ctx, f.ref(), f.shown(), f.ordinal(), set, identity, canMake)
	if ok {
		f.size = size
	}
	return size, ok, err
}

// Content returns the file's bytes: a frame's image is made (or taken
// from the caches) and checked against the size Size announced. A stored
// video has no content in memory: read it through Video.
func (f *File) Content(ctx context.Context) ([]byte, error) {
	c, snap := f.base.cat, f.base.snap
	switch f.kind {
	case FrameFile:
		return f.image(ctx)
	case RowsFile:
		return c.rowsFile(ctx, snap, f.e, f.name, f.more.selected())
	case ClipJSONFile:
		return c.clipJSON(ctx, snap, f.e, f.more.clip)
	case ClipListFile:
		return f.more.data, nil
	}
	return nil, fmt.Errorf("%s: a stored video is read through Video", f)
}

// image makes a frame's image.
func (f *File) image(ctx context.Context) ([]byte, error) {
	size, _, err := f.frameSize(ctx, true)
	if err != nil {
		return nil, err
	}
	set, _ := f.base.setting(f.ref())
	data, err := f.base.cat.frameFor(ctx, f.ref(), f.shown(), f.ordinal(), set)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", f, err)
	}
	if int64(len(data)) != size {
		// The size promised at stat time and the bytes differ: the
		// sizes came from another encoder build. Refuse rather than
		// serve a file whose length lies.
		return nil, fmt.Errorf("%w: episode %q %s frame %d is %d bytes, %d were announced",
			table.ErrCorrupt, f.e.name, f.column, f.row, len(data), size)
	}
	return data, nil
}

// Video opens a stored video's bytes (Size of them) for reading. The
// catalog keeps it open; the caller does not close it.
func (f *File) Video(ctx context.Context) (io.ReaderAt, error) {
	if f.kind != VideoFile {
		return nil, fmt.Errorf("%s is not a stored video", f)
	}
	v, err := f.base.cat.openVideo(ctx, f.ref())
	if err != nil {
		return nil, err
	}
	return v.R, nil
}

// Xattrs returns a frame's row as user.* extended attributes (see
// episodeRows.xattrs); other files have none.
func (f *File) Xattrs(ctx context.Context) (map[string][]byte, error) {
	if f.kind != FrameFile {
		return nil, nil
	}
	rows, err := f.base.cat.episodeRows(ctx, f.base.snap, f.e)
	if err != nil {
		return nil, err
	}
	return rows.xattrs(f.e.name, f.row)
}

// sortedKeys returns a map's keys in order (with one allocation: records
// are made from manifest entries by the hundred thousand).
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
