package mounttree

import (
	"slices"
	"strings"
	"sync"
	"time"
	"unique"
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
	// committed is when the version was committed (unixTime).
	committed int64
	// partition holds the partition values as COLUMN, VALUE pairs.
	partition []string
	// videos are the video columns' payloads, sorted by column.
	videos []episodeVideo
}

// oneVideoEpisode is the record of an episode of one video column (most
// are) in one allocation, its video next to it: 288 bytes, where an
// episode and its videos apart take 320.
type oneVideoEpisode struct {
	episode
	video [1]episodeVideo
}

// unixTime is t in Unix nanoseconds, 0 for none: the zero time (an
// episode written before episodes had their own time) or one an int64 of
// nanoseconds cannot hold (before 1678 or after 2261), which a record
// keeps as unknown (its files then show their snapshot's time).
func unixTime(t time.Time) int64 {
	if t.IsZero() || t.Year() < 1678 || t.Year() > 2261 {
		return 0
	}
	return t.UnixNano()
}

// commitTime is when the version was committed, if known.
func (ep *episode) commitTime() (time.Time, bool) {
	if ep.committed == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, ep.committed).UTC(), true
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
// strings of a decoded manifest may share its buffers); strings equal to
// those of other records d made share their memory with them (d may be
// nil).
func newEpisode(e *table.EpisodeEntry, d *dedupe) *episode {
	var ep *episode
	if len(e.Videos) == 1 {
		one := &oneVideoEpisode{}
		ep = &one.episode
		ep.videos = one.video[:0]
	} else {
		ep = &episode{videos: make([]episodeVideo, 0, len(e.Videos))}
	}
	ep.name, ep.dataFile, ep.rowGroup, ep.schemaID = strings.Clone(e.Episode), d.str(e.DataFile), e.RowGroup, e.SchemaID
	ep.rows, ep.firstRowID, ep.committed, ep.partition = e.Rows, e.FirstRowID, unixTime(e.Time), d.partition(e.Partition)
	for _, col := range sortedKeys(e.Videos) {
		ref := e.Videos[col]
		ref.Pack, ref.SHA256 = d.str(ref.Pack), d.str(ref.SHA256)
		ref.Codec, ref.SourceName = intern(ref.Codec), intern(ref.SourceName)
		ref.Sizes = slices.Clone(ref.Sizes)
		for i := range ref.Sizes {
			ref.Sizes[i].Identity, ref.Sizes[i].Object = intern(ref.Sizes[i].Identity), d.str(ref.Sizes[i].Object)
		}
		ep.videos = append(ep.videos, episodeVideo{column: intern(col), ref: ref})
	}
	return ep
}

// dedupe makes the records of one batch of episodes (a folder's, read
// together) share the strings they repeat: most episodes of a folder have
// their rows in a data file and their videos in a pack that other
// episodes committed with them share, and one partition. It is dropped
// with the batch; nothing is kept for strings no other record repeats (as
// unique.Make would keep for each).
type dedupe struct {
	strs  map[string]string
	parts map[string][]string
	key   []byte
}

// str returns s, in memory of its own shared with the equal strings str
// returned before; a nil d clones s.
func (d *dedupe) str(s string) string {
	if d == nil {
		return strings.Clone(s)
	}
	if v, ok := d.strs[s]; ok {
		return v
	}
	if d.strs == nil {
		d.strs = map[string]string{}
	}
	v := strings.Clone(s)
	d.strs[v] = v
	return v
}

// partition returns partition values as COLUMN, VALUE pairs sorted by
// column, shared with the equal ones partition returned before.
func (d *dedupe) partition(values map[string]string) []string {
	if len(values) == 0 {
		return nil
	}
	cols := sortedKeys(values)
	if d != nil {
		d.key = d.key[:0]
		for _, c := range cols {
			d.key = append(append(append(append(d.key, c...), 0), values[c]...), 0)
		}
		if p, ok := d.parts[string(d.key)]; ok {
			return p
		}
	}
	out := make([]string, 0, 2*len(cols))
	for _, c := range cols {
		out = append(out, intern(c), d.str(values[c]))
	}
	if d != nil {
		if d.parts == nil {
			d.parts = map[string][]string{}
		}
		d.parts[string(d.key)] = out
	}
	return out
}

// is reports whether ep is what the mount keeps of e.
func (ep *episode) is(e *table.EpisodeEntry) bool {
	if ep.name != e.Episode || ep.dataFile != e.DataFile || ep.rowGroup != e.RowGroup || ep.schemaID != e.SchemaID ||
		ep.rows != e.Rows || ep.firstRowID != e.FirstRowID || ep.committed != unixTime(e.Time) ||
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
		SchemaID: ep.schemaID, Videos: make(map[string]table.VideoRef, len(ep.videos))}
	e.Time, _ = ep.commitTime()
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

// episodeRecords hands out the records of episode versions, the same one
// to every tree holding a version for as long as any tree holds it: a
// record no tree holds any more is collected, and its name leaves the
// map at the next sweep.
type episodeRecords struct {
	mu   sync.Mutex                       // guards the fields below
	last map[string]weak.Pointer[episode] // by episode name: its latest record
	// sweepAt is the size of last at which the names whose records were
	// collected leave it: twice its size after the last sweep, so that it
	// holds at most about twice the names of live records, for no more
	// work than a constant per record made. (A cleanup per record would
	// cost each record a runtime special and an allocation.)
	sweepAt int
}

// minSweep is the least size of last at which it is swept.
const minSweep = 1024

// record returns the record of e: the latest one made for its episode if
// that is still held and is of the same version, else a new one (its
// strings shared through d, which may be nil).
func (r *episodeRecords) record(e *table.EpisodeEntry, d *dedupe) *episode {
	r.mu.Lock()
	ep := r.last[e.Episode].Value()
	r.mu.Unlock()
	if ep != nil && ep.is(e) {
		return ep
	}
	// Made unlocked: folders' batches make theirs in parallel.
	made := newEpisode(e, d)
	r.mu.Lock()
	defer r.mu.Unlock()
	if ep := r.last[e.Episode].Value(); ep != nil && ep.is(e) {
		return ep // made meanwhile by another batch
	}
	ep = made
	if r.last == nil {
		r.last = map[string]weak.Pointer[episode]{}
	}
	r.last[ep.name] = weak.Make(ep)
	if len(r.last) >= max(r.sweepAt, minSweep) {
		for name, wp := range r.last {
			if wp.Value() == nil {
				delete(r.last, name)
			}
		}
		r.sweepAt = 2 * len(r.last)
	}
	return ep
}

// appendRecords appends the records of entries to eps, the new ones
// sharing their strings through d.
func (r *episodeRecords) appendRecords(eps []*episode, entries []table.EpisodeEntry, d *dedupe) []*episode {
	for i := range entries {
		eps = append(eps, r.record(&entries[i], d))
	}
	return eps
}

// len is the number of episode names with a live record.
func (r *episodeRecords) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, wp := range r.last {
		if wp.Value() != nil {
			n++
		}
	}
	return n
}
