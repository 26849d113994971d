package fusefs

import (
	"bytes"
	"context"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/framefs/framefs/cache/diskcache"
	"github.com/framefs/framefs/decoder"
	"github.com/framefs/framefs/internal/testenv"
	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/serving"
)

// TestDiskTier reads every frame of a table through a mount with a disk
// tier, then through a second mount (a new daemon) of the same table
// sharing the directory after damaging some entries: the second mount
// decodes nothing but the GOPs whose entries were damaged, and every frame
// read is the decoder's own bytes.
func TestDiskTier(t *testing.T) {
	testenv.RequireFUSE(t)
	wh := t.TempDir()
	tbl := robotTable(t, wh)
	schema, err := tbl.LatestSchema(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	setting, err := media.SettingFor(schema.Image.Format, schema.Image.JPEGQuality)
	if err != nil {
		t.Fatal(err)
	}
	diskDir := t.TempDir()
	refFrames := serving.New(decoder.Codec{}, serving.Options{CacheBytes: -1})
	defer refFrames.Close()
	want := referenceFrames(t, refFrames, setting, "jpg")

	read := func(f *fixture) {
		t.Helper()
		paths := make([]string, 0, len(want))
		for p := range want {
			paths = append(paths, p)
		}
		rand.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
		for _, p := range paths {
			got, err := os.ReadFile(f.path("robot", "snapshots", "1", p))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want[p]) {
				t.Fatalf("%s: %d bytes differ from the decoder's %d", p, len(got), len(want[p]))
			}
		}
	}
	mountWithDisk := func() (*fixture, *serving.Server, *diskcache.Cache) {
		disk, err := diskcache.Open(diskcache.Options{Dir: diskDir})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { disk.Close() })
		f := readOnlyMount(t, wh, serving.Options{DemoteServed: true, Store: disk})
		return f, f.frames, disk
	}

	first, _, disk := mountWithDisk()
	read(first)
	if st := disk.Stats(); st.Entries < int64(len(want)) {
		t.Fatalf("disk tier %+v after reading %d frames: want every frame kept", st, len(want))
	}
	// Damage three entries: cut one short, flip a bit in two.
	var entries []string
	filepath.WalkDir(diskDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".ent") {
			entries = append(entries, p)
		}
		return nil
	})
	for i, p := range entries[:3] {
		data, _ := os.ReadFile(p)
		if i == 0 {
			data = data[:len(data)/2]
		} else {
			data[len(data)-100] ^= 1
		}
		os.WriteFile(p, data, 0o600)
	}

	second, frames, disk2 := mountWithDisk()
	read(second)
	second.frames.Close()
	if st := disk2.Stats(); st.Corrupt != 3 {
		t.Errorf("disk tier %+v: want the 3 damaged entries found", st)
	}
	// The table stores no frame sizes: each stat makes its frame's image,
	// from the disk tier, or by decoding the GOP of a damaged entry.
	if d := frames.PoolStats().Decoded; d == 0 || d > 3*40 {
		t.Errorf("the second mount decoded %d pictures: want only the damaged frames' GOPs", d)
	}
	// Frames of a damaged entry's GOP may come from its fill instead.
	if served := second.frames.StoreHits(); served < int64(len(want))/2 {
		t.Errorf("%d of %d frames served from the disk tier, want all but those of the damaged entries' GOPs", served, len(want))
	}
}
