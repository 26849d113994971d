package serving

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/framefs/framefs/cache"
	"github.com/framefs/framefs/media"
)

// storedVideo is a countingVideo whose bytes have the digest it claims,
// so that a server uses its store (or spill store) for it.
func storedVideo(t *testing.T, name string, frames, gop int) media.Video {
	v := countingVideo(t, name, frames, gop)
	body := strings.Repeat(name+" ", 500)
	sum := sha256.Sum256([]byte(body))
	v.R, v.Size, v.Digest = strings.NewReader(body), int64(len(body)), "sha256:"+hex.EncodeToString(sum[:])
	return v
}

// TestSpillDecodesOnceBeyondTheCache: a shuffled epoch over a dataset
// four times larger than the image cache decodes each frame once when the
// siblings the cache evicts unread are spilled, and several times without;
// a dataset that fits the cache spills nothing. Siblings kept as images
// (small JPEGs) and as packed pictures (full-size BMPs) alike.
func TestSpillDecodesOnceBeyondTheCache(t *testing.T) {
	run := func(setting media.ImageSetting, frames int, cacheBytes int64, read int, spill bool) (perServed float64, fs FillStats, puts int) {
		t.Helper()
		// Decoding costs what encoding does, as with real video.
		c := &countingCodec{decodeDelay: 100 * time.Microsecond}
		v := storedVideo(t, "v", frames, 30)
		opts := Options{CacheBytes: cacheBytes, PictureCacheBytes: -1, Readahead: -1, DemoteServed: true}
		store := &memoryStore{}
		if spill {
			opts.Spill = store
		}
		srv := New(c, opts)
		// What the spill store holds is only ever read once the video's
		// digest is checked: check it first, as a listing would have.
		if !srv.digests.verify(context.Background(), srv.ctx, v) {
			t.Fatal("the video's digest was not found right")
		}
		shuffledRead(t, srv, v, setting, 3, read)
		srv.Close()
		fs = srv.FillStats()
		store.mu.Lock()
		defer store.mu.Unlock()
		return float64(c.decoded.Load()) / float64(read), fs, store.puts
	}
	// Small images, which fills keep as they are, and full-size BMPs,
	// which they keep packed.
	small := media.ImageSetting{Width: 160}
	smallBytes := int64(len(countingImage(media.VideoKey{}, 0, small)) + cache.EntryOverhead)
	for _, c := range []struct {
		name       string
		setting    media.ImageSetting
		cacheBytes int64
		packed     bool
	}{{"images", small, 150 * smallBytes, false}, {"packed", bmp, 8 << 20, true}} {
		spilled, fs, puts := run(c.setting, 600, c.cacheBytes, 600, true)
		t.Logf("%s, spilling: %.3f decoded per frame, %d spilled, fills %+v", c.name, spilled, fs.Spilled, fs)
		if spilled > 1.05 || fs.Spilled < 300 || int64(puts) != fs.Spilled || fs.Wasted != 0 || (fs.FramesPacked > 0) != c.packed {
			t.Errorf("%s, with a spill store: %.2f pictures decoded per frame, %d spilled, %d put, fills %+v; want at most 1.05, every sibling evicted spilled", c.name, spilled, fs.Spilled, puts, fs)
		}
		lost, _, _ := run(c.setting, 600, c.cacheBytes, 100, false)
		t.Logf("%s, not spilling: %.2f decoded per frame", c.name, lost)
		if lost < 3 {
			t.Errorf("%s, without a spill store %.2f pictures decoded per frame: the test does not tell spilling apart", c.name, lost)
		}
	}
	fits, fs, puts := run(small, 300, 600*smallBytes, 300, true)
	if fits != 1 || puts != 0 || fs.Spilled != 0 {
		t.Errorf("a dataset the cache holds: %.2f decoded per frame, %d spilled; want 1 and none", fits, puts)
	}
}

// TestSpillDoesNotHideWaste: a sparse random reader never asks for the
// siblings fills spill, so the spill store must not keep fills going:
// they are declined as they are without one.
func TestSpillDoesNotHideWaste(t *testing.T) {
	setting := media.ImageSetting{Width: 160}
	c := &countingCodec{decodeDelay: 100 * time.Microsecond}
	v := storedVideo(t, "v", 30000, 30)
	size := int64(len(countingImage(v.Key, 0, setting)) + cache.EntryOverhead)
	store := &memoryStore{}
	srv := New(c, Options{CacheBytes: 60 * size, PictureCacheBytes: -1, Readahead: -1, Spill: store})
	defer srv.Close()
	if !srv.digests.verify(context.Background(), srv.ctx, v) {
		t.Fatal("the video's digest was not found right")
	}
	rng := rand.New(rand.NewPCG(5, 5))
	ctx := context.Background()
	for range 300 {
		i := rng.IntN(v.Index.Frames())
		if _, err := srv.Frame(ctx, v, i, setting); err != nil {
			t.Fatal(err)
		}
	}
	fs := srv.FillStats()
	t.Logf("fills %+v", fs)
	if fs.Declined < 100 || fs.Usefulness > 0.1 {
		t.Errorf("fills %+v: want the spilled, unread siblings to make most requests decline fills", fs)
	}
}

// TestSpillChecksDigestWhenReadOn: spilling needs the video's digest
// checked, which reads the whole video; a spill store has it checked once
// a reader fills a second GOP of it, not for a reader of one frame.
func TestSpillChecksDigestWhenReadOn(t *testing.T) {
	setting := media.ImageSetting{Width: 160}
	srv := New(&countingCodec{}, Options{PictureCacheBytes: -1, Readahead: -1, Spill: &memoryStore{}})
	defer srv.Close()
	v := storedVideo(t, "v", 300, 30)
	ctx := context.Background()
	if _, err := srv.Frame(ctx, v, 5, setting); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if hashed, _ := srv.DigestChecks(); hashed != 0 {
		t.Fatalf("after one fill %d bytes of the video hashed; want none", hashed)
	}
	if _, err := srv.Frame(ctx, v, 95, setting); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if hashed, _ := srv.DigestChecks(); hashed == v.Size {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("after a second fill %d bytes of the video hashed; want %d", hashed, v.Size)
		}
	}
}
