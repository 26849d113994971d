package videoidx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/framefs/framefs/internal/frozentable"
	"github.com/framefs/framefs/videoidx"
)

// TestFrozenFrameIndexes: the FVIX blocks of every frozen table decode to
// the index their JSON holds, and the encoder still writes them byte for
// byte, from the index of their source video (or, for an index made by an
// FFmpeg scan, which needs the decoder, from the decoded index).
func TestFrozenFrameIndexes(t *testing.T) {
	frozentable.Run(t, func(t *testing.T, v int, exp *frozentable.Expected) {
		n := 0
		for _, e := range exp.Encodings {
			if e.Kind != "FVIX" {
				continue
			}
			n++
			t.Run(filepath.Base(e.File), func(t *testing.T) {
				bin, err := os.ReadFile(filepath.Join(frozentable.Dir(v), e.File))
				if err != nil {
					t.Fatal(err)
				}
				js, err := os.ReadFile(filepath.Join(frozentable.Dir(v), e.JSON))
				if err != nil {
					t.Fatal(err)
				}
				got, err := videoidx.Decode(bin)
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				var want videoidx.Index
				if err := json.Unmarshal(js, &want); err != nil {
					t.Fatal(err)
				}
				gotJSON, _ := json.Marshal(got)
				wantJSON, _ := json.Marshal(&want)
				if !bytes.Equal(gotJSON, wantJSON) {
					t.Errorf("%s decodes to\n%s\nwant\n%s", e.File, gotJSON, wantJSON)
				}
				ix := got
				if !e.Scanned {
					data, err := os.ReadFile(frozentable.Source(e.Source))
					if err != nil {
						t.Fatal(err)
					}
					if ix, err = videoidx.ReadMP4(context.Background(), bytes.NewReader(data), int64(len(data)), e.Stream); err != nil {
						t.Fatal(err)
					}
				}
				if enc := ix.Encode(); !bytes.Equal(enc, bin) {
					t.Errorf("the index of %s encodes to other bytes:\n%x\nwant\n%x", e.Source, enc, bin)
				}
			})
		}
		if n == 0 {
			t.Errorf("the frozen table v%d holds no frame index", v)
		}
	})
}
