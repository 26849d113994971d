package videoidx

import (
	"context"
	"encoding/binary"
	"testing"
)

// synthMP4 builds the boxes of an MP4 holding one H.264 track of frames
// frames at 30 fps with B-frames (IPBB pattern), a keyframe every gop frames
// and 30 samples per chunk, chunks separated by gaps as if audio were
// interleaved. Only ftyp, moov and the mdat header exist; the returned size
// covers the media data as well, which the indexer never reads.
func synthMP4(frames, gop int) (head []byte, size int64) {
	be := binary.BigEndian
	box := func(typ string, parts ...[]byte) []byte {
		n := 8
		for _, p := range parts {
			n += len(p)
		}
		b := make([]byte, 8, n)
		be.PutUint32(b, uint32(n))
		copy(b[4:], typ)
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	u32 := func(vs ...uint32) []byte {
		b := make([]byte, 4*len(vs))
		for i, v := range vs {
			be.PutUint32(b[4*i:], v)
		}
		return b
	}
	const timescale, delta, perChunk, gap = 15360, 512, 30, 4096
	sizes := make([]uint32, frames)
	for i := range sizes {
		sizes[i] = uint32(2000 + i%7*300)
		if i%gop == 0 {
			sizes[i] = 30000
		}
	}
	stts := box("stts", u32(0, 1, uint32(frames), delta))
	ctts := []byte{}
	for i := 0; i < frames; i++ {
		off := []uint32{2, 5, 2, 0, 1}[i%5] * delta
		ctts = append(ctts, u32(1, off)...)
	}
	ctts = box("ctts", u32(0, uint32(frames)), ctts)
	var keys []uint32
	for i := 0; i < frames; i += gop {
		keys = append(keys, uint32(i+1))
	}
	stss := box("stss", u32(0, uint32(len(keys))), u32(keys...))
	stsz := box("stsz", u32(0, 0, uint32(frames)), u32(sizes...))
	chunks := (frames + perChunk - 1) / perChunk
	stsc := box("stsc", u32(0, 1, 1, perChunk, 1))
	entry := make([]byte, 78)
	be.PutUint16(entry[6:], 1)
	be.PutUint16(entry[24:], 1920)
	be.PutUint16(entry[26:], 1080)
	stsd := box("stsd", u32(0, 1), box("avc1", entry))
	hdlr := box("hdlr", u32(0, 0), []byte("vide"), make([]byte, 13))
	mdhd := box("mdhd", u32(0, 0, 0, timescale, uint32(frames*delta)), []byte{0x55, 0xc4, 0, 0})
	tkhd := box("tkhd", u32(1, 0, 0, 1, 0, uint32(frames*delta/15)), make([]byte, 52), u32(1920<<16, 1080<<16))
	mvhd := box("mvhd", u32(0, 0, 0, 1000, uint32(frames*1000/30), 0x10000), make([]byte, 76), u32(2))

	build := func(mdatStart uint32) []byte {
		offsets := make([]uint32, chunks)
		pos := mdatStart + 8
		for c := range offsets {
			offsets[c] = pos
			for i := c * perChunk; i < min(frames, (c+1)*perChunk); i++ {
				pos += sizes[i]
			}
			pos += gap
		}
		stco := box("stco", u32(0, uint32(chunks)), u32(offsets...))
		stbl := box("stbl", stsd, stts, ctts, stss, stsz, stsc, stco)
		trak := box("trak", tkhd, box("mdia", mdhd, hdlr, box("minf", stbl)))
		moov := box("moov", mvhd, trak)
		ftyp := box("ftyp", []byte("isom"), u32(0x200), []byte("isomavc1"))
		head := append(ftyp, moov...)
		size = int64(pos)
		return append(head, u32(pos - mdatStart)[0:4]...)
	}
	probe := build(0)
	mdatStart := uint32(len(probe) - 4)
	head = build(mdatStart)
	head = append(head, "mdat"...)
	return head, size
}

// sparseFile serves head and then zeros up to size, standing in for a file
// whose media data the indexer must never read.
type sparseFile struct {
	head []byte
	size int64
	read int64
}

func (f *sparseFile) ReadAt(p []byte, off int64) (int, error) {
	f.read += int64(len(p))
	if off >= int64(len(f.head)) {
		panic("read of media data")
	}
	return copy(p, f.head[off:]), nil
}

func TestSyntheticHour(t *testing.T) {
	head, size := synthMP4(108000, 30)
	f := &sparseFile{head: head, size: size}
	ix, err := ReadMP4(context.Background(), f, size, BestStream)
	if err != nil {
		t.Fatal(err)
	}
	if ix.Frames() != 108000 || ix.KeyFrames() != 3600 || !ix.HasBFrames() {
		t.Fatalf("frames %d keyframes %d bframes %v", ix.Frames(), ix.KeyFrames(), ix.HasBFrames())
	}
	if got := ix.Seconds(ix.Duration()); got != 3600 {
		t.Errorf("duration %v s, want 3600", got)
	}
	t.Logf("file %d bytes, indexer read %d bytes (moov %d)", size, f.read, len(head))
	if f.read > 2*int64(len(head)) {
		t.Errorf("read %d bytes for %d bytes of boxes", f.read, len(head))
	}
}

// BenchmarkReadMP4Hour indexes a one-hour 30 fps file (108,000 frames).
func BenchmarkReadMP4Hour(b *testing.B) {
	head, size := synthMP4(108000, 30)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadMP4(context.Background(), &sparseFile{head: head, size: size}, size, BestStream); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(108000), "frames/op")
}

func BenchmarkEncodeHour(b *testing.B) {
	head, size := synthMP4(108000, 30)
	ix, err := ReadMP4(context.Background(), &sparseFile{head: head, size: size}, size, BestStream)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var n int
	for b.Loop() {
		n = len(ix.Encode())
	}
	b.ReportMetric(float64(n)/108000, "bytes/frame")
}

func BenchmarkDecodeHour(b *testing.B) {
	head, size := synthMP4(108000, 30)
	ix, err := ReadMP4(context.Background(), &sparseFile{head: head, size: size}, size, BestStream)
	if err != nil {
		b.Fatal(err)
	}
	enc := ix.Encode()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}
