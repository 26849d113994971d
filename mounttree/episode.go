package mounttree

import (
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unique"
	"unsafe"
	"weak"

	"github.com/framefs/framefs/table"
)

// episode is what the mount keeps of an episode version: what its folder
// and files need of its manifest entry, without the column statistics
// (filters read those from the manifests) and without maps, which take
// most of the 2.8 KB a decoded entry does. The trees of every snapshot
// and view holding the version share one (episodeRecords), so a commit
// that adds an episode adds one record, not one per tree kept.
type episode struct {
	name       string
	dataFile   string
	rowGroup   int
	schemaID   int
	rows       int64
	firstRowID int64
	time       time.Time
	// partition holds the partition values as COLUMN, VALUE pairs.
	partition []string
	// videos are the video columns' payloads, sorted by column.
	videos []episodeVideo
}

// episodeVideo is one video column's payload.
type episodeVideo struct {
	column string
	ref    table.VideoRef
}

// intern returns s as a string shared with every other interned equal
// string: the columns, codecs, source names and size identities that
// every episode repeats.
func intern(s string) string { return unique.Make(s).Value() }

// newEpisode copies what the mount needs of e, in memory of its own (the
// strings of a decoded manifest may share its buffers).
func newEpisode(e *table.EpisodeEntry) *episode {
	ep := &episode{name: strings.Clone(e.Episode), dataFile: strings.Clone(e.DataFile), rowGroup: e.RowGroup, schemaID: e.SchemaID,
		rows: e.Rows, firstRowID: e.FirstRowID, time: e.Time}
	for _, col := range sortedKeys(e.Partition) {
		ep.partition = append(ep.partition, intern(col), strings.Clone(e.Partition[col]))
	}
	ep.videos = make([]episodeVideo, 0, len(e.Videos))
	for _, col := range sortedKeys(e.Videos) {
		ref := e.Videos[col]
		ref.Pack, ref.SHA256 = strings.Clone(ref.Pack), strings.Clone(ref.SHA256)
		ref.Codec, ref.SourceName = intern(ref.Codec), intern(ref.SourceName)
		ref.Sizes = slices.Clone(ref.Sizes)
		for i := range ref.Sizes {
			ref.Sizes[i].Identity, ref.Sizes[i].Object = intern(ref.Sizes[i].Identity), strings.Clone(ref.Sizes[i].Object)
		}
		ep.videos = append(ep.videos, episodeVideo{column: intern(col), ref: ref})
	}
	return ep
}

// is reports whether ep is what the mount keeps of e.
func (ep *episode) is(e *table.EpisodeEntry) bool {
	if ep.name != e.Episode || ep.dataFile != e.DataFile || ep.rowGroup != e.RowGroup || ep.schemaID != e.SchemaID ||
		ep.rows != e.Rows || ep.firstRowID != e.FirstRowID || !ep.time.Equal(e.Time) ||
		len(ep.partition) != 2*len(e.Partition) || len(ep.videos) != len(e.Videos) {
		return false
	}
	for i := 0; i < len(ep.partition); i += 2 {
		if v, ok := e.Partition[ep.partition[i]]; !ok || v != ep.partition[i+1] {
			return false
		}
	}
	for _, v := range ep.videos {
		ref, ok := e.Videos[v.column]
		if !ok || !sameRef(v.ref, ref) {
			return false
		}
	}
	return true
}

func sameRef(a, b table.VideoRef) bool {
	return a.Pack == b.Pack && a.Offset == b.Offset && a.Length == b.Length && a.SHA256 == b.SHA256 &&
		a.IndexOffset == b.IndexOffset && a.IndexLength == b.IndexLength && a.FirstFrame == b.FirstFrame && a.Frames == b.Frames &&
		a.Codec == b.Codec && a.Width == b.Width && a.Height == b.Height && a.SourceName == b.SourceName && slices.Equal(a.Sizes, b.Sizes)
}

// video returns the payload of a video column.
func (ep *episode) video(column string) table.VideoRef {
	for _, v := range ep.videos {
		if v.column == column {
			return v.ref
		}
	}
	return table.VideoRef{}
}

// entry returns ep as the table's functions take it (column statistics
// left out).
func (ep *episode) entry() table.EpisodeEntry {
	e := table.EpisodeEntry{Episode: ep.name, Rows: ep.rows, FirstRowID: ep.firstRowID, DataFile: ep.dataFile, RowGroup: ep.rowGroup,
		SchemaID: ep.schemaID, Time: ep.time, Videos: make(map[string]table.VideoRef, len(ep.videos))}
	if len(ep.partition) > 0 {
		e.Partition = make(map[string]string, len(ep.partition)/2)
		for i := 0; i < len(ep.partition); i += 2 {
			e.Partition[ep.partition[i]] = ep.partition[i+1]
		}
	}
	for _, v := range ep.videos {
		e.Videos[v.column] = v.ref
	}
	return e
}

// bytes estimates the memory of ep, interned strings left out.
func (ep *episode) bytes() int64 {
	n := int64(unsafe.Sizeof(*ep)) + int64(len(ep.name)+len(ep.dataFile))
	n += int64(cap(ep.partition)) * int64(unsafe.Sizeof(""))
	for i := 1; i < len(ep.partition); i += 2 {
		n += int64(len(ep.partition[i]))
	}
	n += int64(cap(ep.videos)) * int64(unsafe.Sizeof(episodeVideo{}))
	for _, v := range ep.videos {
		n += int64(len(v.ref.Pack)+len(v.ref.SHA256)) + int64(cap(v.ref.Sizes))*int64(unsafe.Sizeof(table.SizesRef{}))
		for _, s := range v.ref.Sizes {
			n += int64(len(s.Object))
		}
	}
	return n
}

// episodeRecords hands out the records of episode versions, the same one
// to every tree holding a version for as long as any tree holds it: a
// record no tree holds any more is collected, and its name leaves the
// map with it.
type episodeRecords struct {
	mu   sync.Mutex                       // guards last
	last map[string]weak.Pointer[episode] // by episode name: its latest record
}

// record returns the record of e: the latest one made for its episode if
// that is still held and is of the same version, else a new one.
func (r *episodeRecords) record(e *table.EpisodeEntry) *episode {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ep := r.last[e.Episode].Value(); ep != nil && ep.is(e) {
		return ep
	}
	ep := newEpisode(e)
	if r.last == nil {
		r.last = map[string]weak.Pointer[episode]{}
	}
	wp := weak.Make(ep)
	r.last[ep.name] = wp
	runtime.AddCleanup(ep, r.collected, nameAndRecord{ep.name, wp})
	return ep
}

// appendRecords appends the records of entries to eps.
func (r *episodeRecords) appendRecords(eps []*episode, entries []table.EpisodeEntry) []*episode {
	for i := range entries {
		eps = append(eps, r.record(&entries[i]))
	}
	return eps
}

// nameAndRecord is what a collected record's cleanup needs to know.
type nameAndRecord struct {
	name   string
	record weak.Pointer[episode]
}

// collected forgets a name whose record was collected, unless a newer
// record took its place.
func (r *episodeRecords) collected(nr nameAndRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last[nr.name] == nr.record {
		delete(r.last, nr.name)
	}
}

// len is the number of episode names with a record.
func (r *episodeRecords) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.last)
}
