package table

import (
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
