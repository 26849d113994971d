package fusefs

import (
	"context"
	"crypto/sha256"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/framefs/framefs/decoder"
	"github.com/framefs/framefs/internal/tabletest"
	"github.com/framefs/framefs/internal/testenv"
	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/query"
	"github.com/framefs/framefs/serving"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
	"github.com/framefs/framefs/videoidx"
)

// TestShuffledEpochDecodesOnce reads every frame of a view in a shuffled
// order through a real mount, as a training epoch does, for every image
// format at full size, scaled and with a maximum side, with an image cache
// many times smaller than the view's images: each frame is decoded about
// once (at most 1.05 pictures per frame served), and every frame is the
// image the frame server makes of it without any cache, which is what
// `framefs frame` writes.
func TestShuffledEpochDecodesOnce(t *testing.T) {
	testenv.RequireFUSE(t)
	ctx := context.Background()
	wh := t.TempDir()
	tbl, src := trainTable(t, wh)
	views := []struct {
		name    string
		image   *table.ViewImage
		setting media.ImageSetting
	}{
		{"bmp", &table.ViewImage{Format: "bmp"}, media.ImageSetting{Format: media.FormatBMP}},
		{"npy", &table.ViewImage{Format: "npy"}, media.ImageSetting{Format: media.FormatNPY}},
		{"ppm", &table.ViewImage{Format: "ppm"}, media.ImageSetting{Format: media.FormatPPM}},
		{"bmp112", &table.ViewImage{Format: "bmp", Width: 112, Height: 112}, media.ImageSetting{Format: media.FormatBMP, Width: 112, Height: 112}},
		{"jpg112", &table.ViewImage{Format: "jpg", JPEGQuality: 90, Width: 112, Height: 112}, media.ImageSetting{JPEGQuality: 90, Width: 112, Height: 112}},
		{"bmp160", &table.ViewImage{Format: "bmp", MaxSide: 160}, media.ImageSetting{Format: media.FormatBMP, Width: 160}},
		// Sizes that are known only once the image is made: a listing
		// makes none, a stat makes that frame alone.
		{"png", &table.ViewImage{Format: "png"}, media.ImageSetting{Format: media.FormatPNG}},
		{"png112", &table.ViewImage{Format: "png", Width: 112, Height: 112}, media.ImageSetting{Format: media.FormatPNG, Width: 112, Height: 112}},
		{"jpg75", &table.ViewImage{Format: "jpg", JPEGQuality: 75}, media.ImageSetting{JPEGQuality: 75}},
	}
	for _, v := range views {
		if _, err := query.CreateView(ctx, tbl, table.View{Name: v.name, Where: "TRUE", Image: v.image}); err != nil {
			t.Fatal(err)
		}
	}
	schema, err := tbl.LatestSchema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	jpg, err := media.SettingFor(schema.Image.Format, schema.Image.JPEGQuality)
	if err != nil {
		t.Fatal(err)
	}

	// The references: each frame made alone, with nothing cached.
	fh, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	st, _ := fh.Stat()
	ix, err := decoder.IndexVideo(ctx, fh, st.Size(), videoidx.BestStream)
	if err != nil {
		t.Fatal(err)
	}
	ref := serving.New(decoder.Codec{}, serving.Options{CacheBytes: -1, PictureCacheBytes: -1, Readahead: -1, NoFill: true})
	defer ref.Close()
	dv := media.Video{Key: media.VideoKey{Object: "reference", Length: st.Size()}, R: fh, Size: st.Size(), Index: ix}

	// A mount of its own for each view, as a training job has, with 16 MiB
	// of images: the BMP view alone is 600 x 230 KB, 8.6 times that. At GOP
	// 30 a shuffled epoch has filled nearly every GOP a tenth of the way in,
	// so it keeps most frames waiting for their reads: 600 packed pictures
	// of this video take 15 MB.
	const cacheBytes = 16 << 20
	read := func(name, view string, setting media.ImageSetting) {
		t.Helper()
		f := readOnlyMount(t, wh, serving.Options{CacheBytes: cacheBytes, DemoteServed: true})
		dir := f.path("train", view)
		waitFor(t, func() bool { ps := f.frames.PoolStats(); return ps.Open == ps.Idle }, "decoder sessions idle")
		// The listing counts: a view's frame sizes are worked out by
		// decoding when they are not stored.
		before := f.frames.PoolStats().Decoded
		ep := filepath.Join(dir, "train")
		var files []string
		for _, n := range names(t, ep) {
			if !strings.HasPrefix(n, "frames.") && !strings.HasSuffix(n, ".mp4") {
				files = append(files, n)
			}
		}
		if len(files) != 600 {
			t.Fatalf("%s: %d frame files, want 600", name, len(files))
		}
		// The reference images, made in frame order: the reference
		// server's decoder goes on from the frame before, so each costs
		// one decode, as each would from its keyframe.
		want := make([][sha256.Size]byte, len(files))
		for i := range want {
			img, err := ref.Frame(ctx, dv, i, setting)
			if err != nil {
				t.Fatal(err)
			}
			want[i] = sha256.Sum256(img)
		}
		rand.New(rand.NewPCG(7, 7)).Shuffle(len(files), func(i, j int) { files[i], files[j] = files[j], files[i] })
		for _, n := range files {
			got, err := os.ReadFile(filepath.Join(ep, n))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			i, err := strconv.Atoi(strings.TrimLeft(n[:strings.IndexByte(n, '.')], "0") + "0")
			if err != nil {
				t.Fatal(err)
			}
			i /= 10
			if i >= len(want) || sha256.Sum256(got) != want[i] {
				t.Fatalf("%s %s: %d bytes, not the frame's own image", name, n, len(got))
			}
		}
		waitFor(t, func() bool { ps := f.frames.PoolStats(); return ps.Open == ps.Idle }, "decoder sessions idle")
		decoded := f.frames.PoolStats().Decoded - before
		t.Logf("%s: %d pictures decoded for 600 frames served; fills %+v", name, decoded, f.frames.FillStats())
		if float64(decoded) > 1.05*600 {
			t.Errorf("%s: %d pictures decoded for 600 frames served (fills %+v), want at most 1.05 a frame", name, decoded, f.frames.FillStats())
		}
	}
	read("latest (jpg)", "latest", jpg)
	for _, v := range views {
		read(v.name, filepath.Join("views", v.name), v.setting)
	}
}

// trainTable makes the table "train" in warehouse wh, of one episode: 600
// frames of 320x240 H.264 at GOP 30, with B-frames, stored at the path it
// returns. Ingest stores the JPEG frames' sizes, as `framefs ingest` does,
// so a stat of a frame makes no image.
func trainTable(t *testing.T, wh string) (*table.Table, string) {
	t.Helper()
	sizer := serving.New(decoder.Codec{}, serving.Options{CacheBytes: -1, Readahead: -1})
	defer sizer.Close()
	opts := tabletest.Options()
	opts.Sizer = ingestSizer{sizer}
	src := filepath.Join(t.TempDir(), "train.mp4")
	tabletest.Lavfi(t, src, "testsrc2=size=320x240:rate=30", 600,
		"-c:v", "libx264", "-preset", "veryfast", "-bf", "2", "-g", "30", "-keyint_min", "30", "-sc_threshold", "0",
		"-pix_fmt", "yuv420p")
	store, err := storage.NewLocal(filepath.Join(wh, "train"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tbl, err := table.Create(ctx, store, table.Schema{Columns: []table.Column{{Name: "note", Type: "string", Nullable: true}}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.AddEpisodes(ctx, []table.EpisodeInput{{Videos: map[string]table.VideoFile{"": {Path: src}}}}, table.AddOptions{}); err != nil {
		t.Fatal(err)
	}
	return tbl, src
}
