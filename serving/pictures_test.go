package serving

import (
	"context"
	"testing"

	"github.com/framefs/framefs/media"
)

// TestPictureCacheKeepsDeepPictures: eviction weighs what a hit would
// save. With room for two pictures, a newcomer pushes out the one nearest
// its keyframe, not the oldest; and a deep picture nobody asks for still
// ages out as newcomers keep coming.
func TestPictureCacheKeepsDeepPictures(t *testing.T) {
	codec := &countingCodec{pictureBytes: 1000}
	c := newPictureCache(2 * (1000 + pictureOverhead))
	k := streamKey{media.VideoKey{Object: "v"}, 0}
	key := func(i int) pictureKey { return pictureKey{k, i} }
	add := func(i, cost int) { c.add(key(i), codec.newPicture(k.video, i), cost) }
	add(1, 20) // deep in its GOP
	add(2, 1)  // next to its keyframe
	add(3, 5)
	if !c.has(key(1)) || c.has(key(2)) || !c.has(key(3)) {
		t.Fatalf("after 3 adds: kept 1 %v, 2 %v, 3 %v; want the shallow picture 2 evicted", c.has(key(1)), c.has(key(2)), c.has(key(3)))
	}
	for i := 4; i < 40 && c.has(key(1)); i++ {
		add(i, 5)
	}
	if c.has(key(1)) {
		t.Error("a deep picture that is never asked for is never evicted")
	}
	if bytes, added, _ := c.stats(); bytes > c.maxBytes || added < 4 {
		t.Errorf("%d bytes kept (limit %d), %d added", bytes, c.maxBytes, added)
	}
	c.close()
	if n := codec.live.Load(); n != 0 {
		t.Errorf("%d pictures not released after close", n)
	}
}

// TestPassedPicturesServeLaterRequests: the pictures a seeking request
// passes are kept, and a later request for one is rendered from it without
// decoding; every picture is released when the server closes.
func TestPassedPicturesServeLaterRequests(t *testing.T) {
	c := &countingCodec{pictureBytes: 1000}
	srv := New(c, uncached(Options{PictureCacheBytes: 64 * (1000 + pictureOverhead)}))
	v := countingVideo(t, "v", 90, 30)
	ctx := context.Background()
	if _, err := srv.Frame(ctx, v, 50, bmp); err != nil { // passes 30..49
		t.Fatal(err)
	}
	before := c.decoded.Load()
	b, err := srv.Frame(ctx, v, 41, bmp)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != string(countingImage(v.Key, 41, bmp)) {
		t.Error("the kept picture rendered another frame's image")
	}
	if d := c.decoded.Load() - before; d != 0 {
		t.Errorf("%d pictures decoded for a frame a seek passed; want 0", d)
	}
	if ps := srv.PoolStats(); ps.PictureHits != 1 || ps.PicturesKept != 20 {
		t.Errorf("pool %+v: want 20 pictures kept and one hit", ps)
	}
	srv.Close()
	if n := c.live.Load(); n != 0 {
		t.Errorf("%d pictures not released after Close", n)
	}
}
