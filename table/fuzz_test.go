package table

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
)

// FuzzParseSidecar feeds arbitrary bytes to every sidecar parser and the
// row conversion after it: sidecars arrive from users (dropped into a
// mount's ingest/), so bad bytes must give an error, never a panic.
func FuzzParseSidecar(f *testing.F) {
	f.Add(uint8(0), []byte(`{"timestamp":0.5,"state":[1,2],"action":3,"camera":"front"}`+"\n"))
	f.Add(uint8(1), []byte(`{"episode":{"camera":"left"},"frames":[{"timestamp":1,"action":null}]}`))
	f.Add(uint8(2), []byte("timestamp,action,camera,state\n0.1,1,front,\"[1,2]\"\n"))
	f.Add(uint8(3), []byte("PAR1\x00\x00PAR1"))
	schema := testSchema().withDefaults()
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		name := "ep" + SidecarExtensions[int(kind)%len(SidecarExtensions)]
		sc, err := ParseSidecar(name, data)
		if err != nil {
			return
		}
		sc.Rows(&schema)
		sc.EpisodeID(&schema)
	})
}

// FuzzChunkIndex feeds arbitrary bytes to the chunk index decoder: an index
// is read from storage, so damage must give an error, never a panic or a
// huge allocation; what decodes encodes back to the same bytes' meaning.
func FuzzChunkIndex(f *testing.F) {
	good := []byte("FCIX\x01\x06\x02\x01a\x01b\x02\x03\x04\x05\x06\x07\x03\x08\x09\x0a\x0b")
	good = binary.LittleEndian.AppendUint32(good, crc32.Checksum(good, castagnoli))
	f.Add(good)
	f.Add([]byte("FCIX\x01\x06\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := decodeChunkIndex(data)
		if err != nil {
			return
		}
		for _, g := range ix.groups {
			if len(g.chunks) != len(ix.columns) {
				t.Fatalf("row group with %d chunks for %d columns", len(g.chunks), len(ix.columns))
			}
		}
	})
}
