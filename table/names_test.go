package table

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/framefs/framefs/table/storage"
)

// TestCheckNameHidden: names users choose cannot hold characters that
// change how the text around them is shown (U+202E makes "cod.exe" of
// "exe.doc"); the zero-width joiners scripts and emoji need stay allowed.
func TestCheckNameHidden(t *testing.T) {
	for _, name := range []string{"abc\u202egpj.exe", "a\u2066b\u2069", "x\u200e", "y\u061c", "z\u00ad", "l\u2028m", "c1\u0085"} {
		err := CheckName("view", name)
		if !errors.Is(err, ErrInvalidName) || strings.ContainsAny(err.Error(), "\u202e\u2066\u200e\u061c\u00ad\u2028\u0085") {
			t.Errorf("CheckName(%q): %v, want a refusal that does not echo the character", name, err)
		}
		if err := CheckViewName(name); err == nil {
			t.Errorf("CheckViewName(%q) accepted", name)
		}
	}
	for _, name := range []string{"family 👩\u200d👧", "می\u200cخواهم", "pick & place"} {
		if err := CheckName("view", name); err != nil {
			t.Errorf("CheckName(%q): %v", name, err)
		}
	}
}

// TestPartitionFolderFitsNameMax: a partition value that would make the
// COL=VALUE folder of the longest column name longer than the 255 bytes
// of a file name is refused at ingest.
func TestPartitionFolderFitsNameMax(t *testing.T) {
	col := strings.Repeat("c", maxNameBytes)
	ctx := context.Background()
	store, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := testSchema()
	s.Columns = append(s.Columns, Column{Name: col, Type: "string"})
	s.PartitionColumns = []string{col}
	tbl, err := Create(ctx, store, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	input := func(value string) EpisodeInput {
		sc, err := ParseSidecar("e.jsonl", []byte(fmt.Sprintf(`{"timestamp":0,"camera":"front",%q:%q}`+"\n", col, value)))
		if err != nil {
			t.Fatal(err)
		}
		return EpisodeInput{Episode: "e", Sidecar: sc, Videos: map[string]VideoFile{"": {Path: fixture("h264_faststart.mp4")}}}
	}
	_, err = tbl.AddEpisodes(ctx, []EpisodeInput{input(strings.Repeat("v", 60))}, AddOptions{})
	if !errors.Is(err, ErrInvalidName) || !strings.Contains(err.Error(), "more than the 255 a file name may have") {
		t.Errorf("a partition folder of 261 bytes: %v", err)
	}
	if _, err := tbl.AddEpisodes(ctx, []EpisodeInput{input(strings.Repeat("v", 54))}, AddOptions{}); err != nil {
		t.Errorf("a partition folder of 255 bytes: %v", err)
	}
}
