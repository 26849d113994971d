package videoidx

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// boxOrder is the sequence of top-level box types of an MP4.
func boxOrder(t *testing.T, data []byte) []string {
	t.Helper()
	boxes, err := fileBoxes(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, b := range boxes {
		out = append(out, b.Type.String())
	}
	return out
}

// sameFrames checks that two files hold the same video frames: the same
// index (timestamps, keyframes) and the same bytes for every sample, read
// at each file's own offsets.
func sameFrames(t testing.TB, a, b []byte) {
	t.Helper()
	ia, errA := ReadMP4(context.Background(), bytes.NewReader(a), int64(len(a)), BestStream)
	ib, errB := ReadMP4(context.Background(), bytes.NewReader(b), int64(len(b)), BestStream)
	if (errA == nil) != (errB == nil) {
		t.Fatalf("index before %v, after %v", errA, errB)
	}
	if errA != nil {
		return
	}
	if ia.Frames() != ib.Frames() || len(ia.Samples) != len(ib.Samples) {
		t.Fatalf("%d frames (%d samples) before, %d (%d) after", ia.Frames(), len(ia.Samples), ib.Frames(), len(ib.Samples))
	}
	for i, sa := range ia.Samples {
		sb := ib.Samples[i]
		if sa.PTS != sb.PTS || sa.DTS != sb.DTS || sa.Key != sb.Key || sa.Size != sb.Size {
			t.Fatalf("sample %d: %+v before, %+v after", i, sa, sb)
		}
		if !bytes.Equal(a[sa.Offset:sa.Offset+int64(sa.Size)], b[sb.Offset:sb.Offset+int64(sb.Size)]) {
			t.Fatalf("sample %d: other bytes at offset %d after the rewrite (was %d)", i, sb.Offset, sa.Offset)
		}
	}
}

// TestFastStart rewrites every moov-last fixture: moov moves behind ftyp,
// nothing else changes order, and every sample is found at its shifted
// offset. Files already in that order or fragmented are left alone.
func TestFastStart(t *testing.T) {
	files, _ := filepath.Glob("../testdata/video/*.mp4")
	real, _ := filepath.Glob(filepath.Join(realDir, "*.mp4"))
	rewrote := 0
	for _, path := range append(files, real...) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			rewritten, err := FastStart(bytes.NewReader(data), int64(len(data)), &out)
			switch filepath.Base(path) {
			case "empty.mp4", "random.mp4", "truncated_h264_aac.mp4":
				if err == nil && rewritten {
					t.Fatalf("rewrote a broken file")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			before := boxOrder(t, data)
			moovFirst := slices.Index(before, "moov") < slices.Index(before, "mdat")
			if rewritten == moovFirst {
				t.Fatalf("rewritten %v for boxes %v", rewritten, before)
			}
			if !rewritten {
				if out.Len() != 0 {
					t.Fatalf("wrote %d bytes without rewriting", out.Len())
				}
				return
			}
			rewrote++
			after := boxOrder(t, out.Bytes())
			want := append([]string{"ftyp", "moov"}, slices.DeleteFunc(slices.Clone(before[1:]), func(s string) bool { return s == "moov" })...)
			if !slices.Equal(after, want) || out.Len() != len(data) {
				t.Fatalf("boxes %v (%d bytes) after, want %v (%d bytes)", after, out.Len(), want, len(data))
			}
			sameFrames(t, data, out.Bytes())
			// Rewriting again changes nothing.
			var again bytes.Buffer
			if rewritten, err := FastStart(bytes.NewReader(out.Bytes()), int64(out.Len()), &again); rewritten || err != nil || again.Len() != 0 {
				t.Fatalf("second rewrite: %v %v", rewritten, err)
			}
		})
	}
	if rewrote < 10 {
		t.Errorf("only %d fixtures were rewritten", rewrote)
	}
}

// box is a box's bytes: a 32-bit size, the type, then the payload.
func box(typ string, payload ...[]byte) []byte {
	body := bytes.Join(payload, nil)
	b := binary.BigEndian.AppendUint32(nil, uint32(8+len(body)))
	return append(append(b, typ...), body...)
}

// chunkOffsets is an stco (width 4) or co64 (width 8) box payload.
func chunkOffsets(width int, offsets ...uint64) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0) // version, flags
	b = binary.BigEndian.AppendUint32(b, uint32(len(offsets)))
	for _, o := range offsets {
		if width == 4 {
			b = binary.BigEndian.AppendUint32(b, uint32(o))
		} else {
			b = binary.BigEndian.AppendUint64(b, o)
		}
	}
	return b
}

// synthetic is ftyp, mdat, then a moov whose only content is the given
// chunk offset box.
func synthetic(table []byte) []byte {
	stbl := box("moov", box("trak", box("mdia", box("minf", box("stbl", table)))))
	return slices.Concat(box("ftyp", []byte("isom\x00\x00\x02\x00isom")), box("mdat", make([]byte, 16)), stbl)
}

// offsetsAfter reads the chunk offsets from a rewritten synthetic file.
func offsetsAfter(t *testing.T, data []byte, typ string, width int) []uint64 {
	t.Helper()
	i := bytes.Index(data, []byte(typ))
	if i < 0 {
		t.Fatalf("no %s box", typ)
	}
	n := int(binary.BigEndian.Uint32(data[i+8:]))
	var out []uint64
	for k := range n {
		e := data[i+12+k*width:]
		if width == 4 {
			out = append(out, uint64(binary.BigEndian.Uint32(e)))
		} else {
			out = append(out, binary.BigEndian.Uint64(e))
		}
	}
	return out
}

// TestFastStartOffsets: stco and co64 entries move by the size of moov; a
// 32-bit offset that would overflow leaves the file as it is; a damaged
// table is an error.
func TestFastStartOffsets(t *testing.T) {
	rewrite := func(data []byte) ([]byte, bool, error) {
		var out bytes.Buffer
		ok, err := FastStart(bytes.NewReader(data), int64(len(data)), &out)
		return out.Bytes(), ok, err
	}
	for _, tc := range []struct {
		typ   string
		width int
	}{{"stco", 4}, {"co64", 8}} {
		data := synthetic(box(tc.typ, chunkOffsets(tc.width, 36, 40, 1<<20)))
		moovSize := uint64(len(data) - 20 - 24)
		out, ok, err := rewrite(data)
		if err != nil || !ok {
			t.Fatalf("%s: %v %v", tc.typ, ok, err)
		}
		want := []uint64{36 + moovSize, 40 + moovSize, 1<<20 + moovSize}
		if got := offsetsAfter(t, out, tc.typ, tc.width); !slices.Equal(got, want) {
			t.Errorf("%s: offsets %v, want %v", tc.typ, got, want)
		}
	}
	// Offsets near 4 GiB in a 32-bit table: left as it is.
	if out, ok, err := rewrite(synthetic(box("stco", chunkOffsets(4, 36, math.MaxUint32-10)))); ok || err != nil || len(out) != 0 {
		t.Errorf("overflowing stco: rewritten %v, %v, %d bytes", ok, err, len(out))
	}
	// More entries than bytes.
	bad := chunkOffsets(4, 36)
	binary.BigEndian.PutUint32(bad[4:], 1000)
	if _, _, err := rewrite(synthetic(box("stco", bad))); err == nil {
		t.Error("an stco box claiming 1000 entries in 4 bytes was accepted")
	}
	// Boxes that do not tile the file.
	data := synthetic(box("stco", chunkOffsets(4, 36)))
	if _, _, err := rewrite(data[:len(data)-3]); err == nil {
		t.Error("a cut file was accepted")
	}
	if _, _, err := rewrite(append(slices.Clone(data), 1, 2, 3)); err == nil {
		t.Error("trailing bytes were accepted")
	}
}

// FuzzFastStart feeds arbitrary bytes to FastStart: it may refuse, but must
// not panic, and what it writes must be the same size, need no second
// rewrite and hold the same frames.
func FuzzFastStart(f *testing.F) {
	for _, s := range addFixtureSeeds(f) {
		f.Add(s)
	}
	f.Add(synthetic(box("co64", chunkOffsets(8, 36, 40))))
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		rewritten, err := FastStart(bytes.NewReader(data), int64(len(data)), &out)
		if err != nil || !rewritten {
			if out.Len() != 0 {
				t.Fatalf("wrote %d bytes without rewriting (%v)", out.Len(), err)
			}
			return
		}
		if out.Len() != len(data) {
			t.Fatalf("%d bytes in, %d out", len(data), out.Len())
		}
		var again bytes.Buffer
		if rewritten, err := FastStart(bytes.NewReader(out.Bytes()), int64(out.Len()), &again); rewritten || err != nil {
			t.Fatalf("the rewritten file needs another rewrite: %v %v", rewritten, err)
		}
		sameFrames(t, data, out.Bytes())
	})
}
