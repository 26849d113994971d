package table

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/framefs/framefs/table/storage"
)

// mp4Fixtures are the MP4 test videos every table test may ingest; the
// default indexer reads MP4 only.
var mp4Fixtures = []string{
	"h264_bframes_gop30.mp4", "h264_faststart.mp4", "h264_gop250.mp4", "h264_editlist.mp4",
	"h264_negative_cts.mp4", "h264_fragmented.mp4", "h264_vfr.mp4", "h264_with_audio.mp4",
	"hevc.mp4", "mpeg4_part2.mp4",
}

func fixture(name string) string { return filepath.Join("../testdata/video", name) }

func testSchema() Schema {
	return Schema{Columns: []Column{
		{Name: "timestamp", Type: "float64"},
		{Name: "state", Type: "list<float32>", Nullable: true},
		{Name: "action", Type: "int64", Nullable: true},
		{Name: "camera", Type: "string"},
	}}
}

func newTable(t *testing.T) *Table {
	t.Helper()
	store, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := Create(context.Background(), store, testSchema(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// sidecarFor writes a JSONL sidecar with n rows for an episode.
func sidecarFor(t *testing.T, episode string, n int) *Sidecar {
	t.Helper()
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"episode_id":%q,"timestamp":%g,"state":[%d,0.5],"action":%d,"camera":"front"}`+"\n", episode, float64(i)/30, i, i%3)
	}
	sc, err := ParseSidecar(episode+".jsonl", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func fileSHA(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	return fmt.Sprintf("%x", h.Sum(nil))
}

func TestRoundTrip(t *testing.T) {
	forEachStore(t, func(t *testing.T, k storeKind) { roundTrip(t, newTableAt(t, k.newURI(t))) })
}

func roundTrip(t *testing.T, tbl *Table) {
	ctx := context.Background()
	var inputs []EpisodeInput
	want := map[string]int{}
	for i, name := range mp4Fixtures {
		ep := fmt.Sprintf("ep%02d", i)
		n := 20 + i
		want[ep] = n
		inputs = append(inputs, EpisodeInput{Videos: map[string]VideoFile{"": {Path: fixture(name)}}, Sidecar: sidecarFor(t, ep, n)})
	}
	snap, err := tbl.AddEpisodes(ctx, inputs, AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if snap.ID != 1 || snap.Episodes != int64(len(mp4Fixtures)) {
		t.Fatalf("snapshot %d with %d episodes", snap.ID, snap.Episodes)
	}
	eps, err := tbl.Episodes(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) != len(mp4Fixtures) {
		t.Fatalf("%d episodes", len(eps))
	}
	for i, e := range eps {
		if e.Rows != int64(want[e.Episode]) {
			t.Errorf("%s: %d rows, want %d", e.Episode, e.Rows, want[e.Episode])
		}
		rows, err := tbl.Rows(ctx, snap, e)
		if err != nil {
			t.Fatal(err)
		}
		for k, r := range rows {
			if r["action"] != int64(k%3) || r["camera"] != "front" || r[FrameColumn] != int64(k) {
				t.Fatalf("%s row %d: %v", e.Episode, k, r)
			}
			if st := r["state"].([]any); len(st) != 2 || st[0] != float64(k) || st[1] != 0.5 {
				t.Fatalf("%s row %d state %v", e.Episode, k, st)
			}
			if ref := r["video"].(FrameRef); ref.Frame != int64(k) || ref.Pack != e.Videos["video"].Pack {
				t.Fatalf("%s row %d frame ref %+v", e.Episode, k, ref)
			}
		}
		v, err := tbl.OpenVideo(ctx, e.Videos["video"])
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		io.Copy(h, v.Payload)
		v.Close()
		if got, want := fmt.Sprintf("%x", h.Sum(nil)), fileSHA(t, fixture(mp4Fixtures[i])); got != want {
			t.Errorf("%s: stored payload differs from %s", e.Episode, mp4Fixtures[i])
		}
		if v.Index.Frames() != int(e.Videos["video"].Frames) {
			t.Errorf("%s: index has %d frames, manifest %d", e.Episode, v.Index.Frames(), e.Videos["video"].Frames)
		}
	}
}

func TestAddRejects(t *testing.T) {
	ctx := context.Background()
	tbl := newTable(t)
	good := func(ep string) EpisodeInput {
		return EpisodeInput{Videos: map[string]VideoFile{"": {Path: fixture("h264_faststart.mp4")}}, Sidecar: sidecarFor(t, ep, 10)}
	}
	if _, err := tbl.AddEpisodes(ctx, []EpisodeInput{good("a")}, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		inputs []EpisodeInput
		want   error
		text   string
	}{
		{"existing episode", []EpisodeInput{good("a")}, ErrExists, "use replace"},
		{"same episode twice", []EpisodeInput{good("b"), good("b")}, ErrInvalidInput, "twice"},
		{"more rows than frames", []EpisodeInput{{Videos: map[string]VideoFile{"": {Path: fixture("h264_faststart.mp4")}}, Sidecar: sidecarFor(t, "c", 91)}}, ErrInvalidInput, "91 rows"},
		{"empty video", []EpisodeInput{{Videos: map[string]VideoFile{"": {Path: fixture("empty.mp4")}}, Sidecar: sidecarFor(t, "d", 1)}}, ErrInvalidInput, "empty"},
		{"random bytes", []EpisodeInput{{Videos: map[string]VideoFile{"": {Path: fixture("random.mp4")}}, Sidecar: sidecarFor(t, "e", 1)}}, ErrInvalidInput, "random.mp4"},
		{"audio only", []EpisodeInput{{Videos: map[string]VideoFile{"": {Path: fixture("audio_only.mp4")}}, Sidecar: sidecarFor(t, "f", 1)}}, ErrInvalidInput, "no video track"},
		{"slash in episode name", []EpisodeInput{{Episode: "a/x", Videos: map[string]VideoFile{"": {Path: fixture("h264_faststart.mp4")}}}}, ErrInvalidName, "contains"},
		{"control character", []EpisodeInput{{Episode: "a\x01b", Videos: map[string]VideoFile{"": {Path: fixture("h264_faststart.mp4")}}}}, ErrInvalidName, "contains"},
		{"first frame past end", []EpisodeInput{{Videos: map[string]VideoFile{"": {Path: fixture("h264_faststart.mp4"), FirstFrame: 90}}, Sidecar: sidecarFor(t, "g", 1)}}, ErrInvalidInput, "past its end"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tbl.AddEpisodes(ctx, tc.inputs, AddOptions{})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("got %v, want %v mentioning %q", err, tc.want, tc.text)
			}
		})
	}
	ids, _ := tbl.SnapshotIDs(ctx)
	if len(ids) != 1 {
		t.Fatalf("bad inputs committed: snapshots %v", ids)
	}
}

func TestSidecarErrors(t *testing.T) {
	s := testSchema().withDefaults()
	tests := []struct{ name, data, text string }{
		{"x.jsonl", "{\"timestamp\": 1, \"camera\": \"a\"}\n{bad json\n", "line 2"},
		{"x.jsonl", `{"timestamp": "soon", "camera": "a"}`, `row 1: column "timestamp": want float64, have string "soon"`},
		{"x.jsonl", `{"timestamp": 1, "camera": "a", "speed": 3}`, `unknown column "speed"`},
		{"x.jsonl", `{"camera": "a"}`, `column "timestamp" is missing`},
		{"x.jsonl", `{"timestamp": 1, "camera": "a", "video": 3}`, `video column "video"`},
		{"x.csv", "timestamp,camera\n1,a\nx,b\n", `row 2: column "timestamp"`},
		{"x.csv", "timestamp,camera\n1,a,3\n", "wrong number of fields"},
		{"x.json", `{"frames": [{"timestamp": 1, "camera": "a"}], "extra": 1}`, `unknown key "extra"`},
		{"x.json", `{"episode": {"camera": "a", "action": 1.5}, "frames": [{"timestamp": 1}]}`, `column "action": 1.5 is not an integer`},
		{"x.txt", "", "unknown sidecar type"},
	}
	for _, tc := range tests {
		t.Run(tc.name+" "+tc.text, func(t *testing.T) {
			sc, err := ParseSidecar(tc.name, []byte(tc.data))
			if err == nil {
				_, err = sc.Rows(&s)
			}
			if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), tc.text) || !strings.Contains(err.Error(), tc.name) {
				t.Fatalf("got %v, want an error naming %s and saying %q", err, tc.name, tc.text)
			}
		})
	}
}

func TestSidecarForms(t *testing.T) {
	s := testSchema().withDefaults()
	forms := map[string]string{
		"a.jsonl": `{"timestamp": 0.5, "camera": "left", "state": [1, 2]}` + "\n",
		"a.json":  `[{"timestamp": 0.5, "camera": "left", "state": [1, 2]}]`,
		"b.json":  `{"episode": {"camera": "left"}, "frames": [{"timestamp": 0.5, "state": [1, 2]}]}`,
		"a.csv":   "timestamp,camera,state\n0.5,left,\"[1,2]\"\n",
	}
	for name, data := range forms {
		sc, err := ParseSidecar(name, []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := sc.Rows(&s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, _ := json.Marshal(rows)
		if want := `[{"action":null,"camera":"left","state":[1,2],"timestamp":0.5}]`; string(got) != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
}

// TestCreateEpisodeColumnDeclared: the episode column may be declared
// among the columns as a non-null string (the declaration is dropped);
// another type is refused, saying what the column must be.
func TestCreateEpisodeColumnDeclared(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		episodeColumn string
		declared      Column
		refused       string // "" when accepted
	}{
		{"", Column{Name: "episode_id", Type: "string"}, ""},
		{"run", Column{Name: "run", Type: "string"}, ""},
		{"", Column{Name: "episode_id", Type: "int64"}, `column "episode_id" is the episode column, which holds each row's episode id as a non-null string; declare it as episode_id:string (or leave it out), not as int64`},
		{"", Column{Name: "episode_id", Type: "string", Nullable: true}, "not as string?"},
	} {
		store, err := storage.NewLocal(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		s := testSchema()
		s.EpisodeColumn = tc.episodeColumn
		s.Columns = append(s.Columns, tc.declared)
		s.PartitionColumns = []string{"camera"}
		tbl, err := Create(ctx, store, s, Options{})
		if tc.refused != "" {
			if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), tc.refused) {
				t.Errorf("%+v: got %v, want an error saying %q", tc.declared, err, tc.refused)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", tc.declared, err)
		}
		got, err := tbl.LatestSchema(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := got.Column(tc.declared.Name); dup || got.EpisodeColumn != tc.declared.Name || len(got.Columns) != len(testSchema().Columns) {
			t.Errorf("%+v: schema %+v", tc.declared, got)
		}
		// Rows carry the episode id in that column as usual.
		line := fmt.Sprintf(`{%q:"ep","timestamp":0,"camera":"front"}`, tc.declared.Name)
		sc, err := ParseSidecar("ep.jsonl", []byte(line+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if id, err := sc.EpisodeID(got); err != nil || id != "ep" {
			t.Errorf("%+v: episode id %q, %v", tc.declared, id, err)
		}
	}
	// Declared twice is still an error.
	store, _ := storage.NewLocal(t.TempDir())
	s := testSchema()
	s.Columns = append(s.Columns, Column{Name: "episode_id", Type: "string"}, Column{Name: "episode_id", Type: "string"})
	if _, err := Create(ctx, store, s, Options{}); err == nil || !strings.Contains(err.Error(), "defined twice") {
		t.Errorf("declared twice: %v", err)
	}
}
