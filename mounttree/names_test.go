package mounttree

import (
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/framefs/framefs/table"
)

// fnvIno is PathIno as it was first written: FNV-1a of the whole name.
// Inode numbers must not change between releases (a mount restarted under
// a running job, NFS exports and backup tools rely on them), so the
// hashing in pieces is checked against it.
func fnvIno(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	v := h.Sum64()
	if v <= 1 {
		v += 2
	}
	return v
}

func TestInoHashIsFNVOfTheWholeName(t *testing.T) {
	for _, name := range []string{"", "/", "/robot/snapshots/1/task=pick", "é|#@+:", strings.Repeat("x", 1000)} {
		if got, want := PathIno(name), fnvIno(name); got != want {
			t.Errorf("PathIno(%q) = %d, want %d", name, got, want)
		}
		for cut := 0; cut <= len(name); cut += max(1, len(name)/7) {
			if got, want := newInoHash().str(name[:cut]).str(name[cut:]).ino(), fnvIno(name); got != want {
				t.Errorf("%q hashed in two pieces at %d = %d, want %d", name, cut, got, want)
			}
		}
	}
	for _, v := range []int64{0, 7, -3, 1234567890123, math.MaxInt64, math.MinInt64} {
		if got, want := newInoHash().str("n").int(v).ino(), fnvIno("n"+strconv.FormatInt(v, 10)); got != want {
			t.Errorf("int(%d) = %d, want %d", v, got, want)
		}
	}
}

// TestVideoInoIsStable checks a stored video's inode number against the
// name it hashes as first written with fmt.
func TestVideoInoIsStable(t *testing.T) {
	for _, ref := range []table.VideoRef{
		{Pack: "video/pack-a.video", Offset: 4096, Length: 1 << 20, SHA256: strings.Repeat("ab", 32)},
		{Pack: "v.video", Offset: 0, Length: 1},
	} {
		want := fnvIno(fmt.Sprintf("video|%s@%d+%d|%s", ref.Pack, ref.Offset, ref.Length, ref.SHA256))
		if got := videoIno(ref); got != want {
			t.Errorf("videoIno(%+v) = %d, want %d", ref, got, want)
		}
	}
}

// TestEpisodeFileInoIsStable checks the inode numbers of an episode's
// files against the name they hash as first written with fmt.
func TestEpisodeFileInoIsStable(t *testing.T) {
	e := &episode{name: "ep-7", dataFile: "data/part-0001.parquet", rowGroup: 3, rows: 450, firstRowID: 90210,
		videos: []episodeVideo{
			{column: "front", ref: table.VideoRef{Pack: "video/pack-a.video", Offset: 4096, Length: 1 << 20, FirstFrame: 30}},
			{column: "wrist", ref: table.VideoRef{Pack: "video/pack-b.video", Offset: 0, Length: 777}},
		}}
	written := func(schemaID int, parts ...string) uint64 {
		var b strings.Builder
		fmt.Fprintf(&b, "episode|%s|%s#%d|%d|%d|%d", e.name, e.dataFile, e.rowGroup, e.firstRowID, e.rows, schemaID)
		for _, v := range e.videos {
			r := v.ref
			fmt.Fprintf(&b, "|%s=%s@%d+%d:%d", v.column, r.Pack, r.Offset, r.Length, r.FirstFrame)
		}
		for _, p := range parts {
			b.WriteString("|" + p)
		}
		return fnvIno(b.String())
	}
	for _, parts := range [][]string{nil, {RowsJSONL}, {RowsParquet, "3-abc"}, {"frame", "front", "17", "jpg,q=90"}} {
		if got, want := episodeFileIno(e, 2, parts...), written(2, parts...); got != want {
			t.Errorf("episodeFileIno(%q) = %d, want %d", parts, got, want)
		}
	}
	// A folder's frames hash what they share once; each must still be
	// the episode file of its row.
	f := &Folder{ep: shownEpisode{e: e}, column: "front", tree: &Tree{base: &treeBase{snap: &table.Snapshot{SchemaID: 2}}}}
	f.tree.base.cat = &Catalog{identity: "jpg,q=90"}
	ino := f.frameInos()
	for _, row := range []int64{0, 1, 17, 449} {
		if got, want := ino(row), written(2, "frame", "front", strconv.FormatInt(row, 10), "jpg,q=90"); got != want {
			t.Errorf("frame %d: inode %d, want %d", row, got, want)
		}
	}
}

func TestPaddedNamesAsFmtWritesThem(t *testing.T) {
	for _, c := range []struct {
		i, rows int64
	}{{0, 1}, {5, 450}, {999_999, 1_000_000}, {1_000_000, 1_000_001}, {12_345_678, 99_999_999}, {0, 0}} {
		width := max(6, len(strconv.FormatInt(c.rows-1, 10)))
		if got, want := FrameName(c.i, c.rows, "jpg"), fmt.Sprintf("%0*d.%s", width, c.i, "jpg"); got != want {
			t.Errorf("FrameName(%d, %d) = %q, want %q", c.i, c.rows, got, want)
		}
	}
	for _, c := range []struct{ j, length int }{{0, 1}, {3, 10}, {99, 101}, {7, 1000}} {
		width := max(2, len(strconv.Itoa(c.length-1)))
		if got, want := clipFrameName(c.j, c.length, "bmp"), fmt.Sprintf("%0*d.%s", width, c.j, "bmp"); got != want {
			t.Errorf("clipFrameName(%d, %d) = %q, want %q", c.j, c.length, got, want)
		}
	}
}

// BenchmarkFrameNamesAndInos is the cost of naming an episode's frames: a
// listing's names and inode numbers.
func BenchmarkFrameNamesAndInos(b *testing.B) {
	e := &episode{name: "ep-7", dataFile: "data/part-0001.parquet", rows: 1800,
		videos: []episodeVideo{{column: "front", ref: table.VideoRef{Pack: "video/pack-a.video", Length: 1 << 20}}}}
	f := &Folder{ep: shownEpisode{e: e}, column: "front", tree: &Tree{base: &treeBase{snap: &table.Snapshot{}}}}
	f.tree.base.cat = &Catalog{identity: "jpg,q=90"}
	b.ReportAllocs()
	for b.Loop() {
		ino, width := f.frameInos(), frameNameWidth(e.rows)
		for i := range e.rows {
			_, _ = paddedName(i, width, "jpg"), ino(i)
		}
	}
}
