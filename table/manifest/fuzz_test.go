package manifest

import (
	"bytes"
	"context"
	"testing"
)

// FuzzManifest: damaged manifests give errors, never a crash or a huge
// allocation, whatever is read of them.
func FuzzManifest(f *testing.F) {
	data, _, err := Encode(testLayout, testEntries(20))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add(bytes.Replace(data, []byte("pick"), []byte("\xff\xfe\x00\x01"), -1))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(data)
		if err != nil {
			return
		}
		ctx := context.Background()
		r.Read(ctx, Projection{Episodes: true, Partitions: true, Stats: []string{"speed", "label", "ok", "state"}})
		r.Entries(ctx, nil)
		if r.Len() > 0 {
			r.Entries(ctx, []int{r.Len() - 1})
		}
		r.Objects(ctx)
	})
}

// FuzzManifestList: the same for manifest lists.
func FuzzManifestList(f *testing.F) {
	_, sum, err := Encode(testLayout, testEntries(20))
	if err != nil {
		f.Fatal(err)
	}
	data, err := EncodeList(testLayout, []Summary{sum, sum})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)-9])
	f.Fuzz(func(t *testing.T, data []byte) {
		DecodeList(data)
	})
}
