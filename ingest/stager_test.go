package ingest

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
)

const settle = 20 * time.Millisecond

func fixture(name string) string { return filepath.Join("../testdata/video", name) }

type env struct {
	t   *testing.T
	tbl *table.Table
	st  *Stager
	dir string
}

func newEnv(t *testing.T, mode Mode, columns []table.Column) *env {
	t.Helper()
	store, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := table.Create(context.Background(), store, table.Schema{Columns: columns}, table.Options{})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	st, err := New(Options{
		Mode: mode, Dir: filepath.Join(root, "in"), WorkDir: filepath.Join(root, "work"), Settle: settle,
		Table: func(context.Context) (*table.Table, error) { return tbl, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, tbl: tbl, st: st, dir: st.Dir()}
}

var stdColumns = []table.Column{{Name: "timestamp", Type: "float64"}, {Name: "action", Type: "int64", Nullable: true}}

func (e *env) copy(src, name string) {
	e.t.Helper()
	in, err := os.Open(src)
	if err != nil {
		e.t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(filepath.Join(e.dir, name))
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		e.t.Fatal(err)
	}
	out.Close()
}

func (e *env) write(name, content string) {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.dir, name), []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func rows(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"timestamp":%g,"action":%d}`+"\n", float64(i)/30, i%3)
	}
	return b.String()
}

// settleAndStep lets everything settle, then runs one step.
func (e *env) settleAndStep() {
	e.t.Helper()
	e.st.step(context.Background(), false)
	time.Sleep(2 * settle)
	if err := e.st.step(context.Background(), false); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) episodes() map[string]int64 {
	e.t.Helper()
	out := map[string]int64{}
	head, err := e.tbl.Head(context.Background())
	if err != nil || head == nil {
		return out
	}
	eps, err := e.tbl.Episodes(context.Background(), head)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, ep := range eps {
		out[ep.Episode] = ep.Rows
	}
	return out
}

func (e *env) listing() []string {
	des, _ := os.ReadDir(e.dir)
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

// expectNothingStaged fails the test if anything is left in the staging
// directory.
func (e *env) expectNothingStaged() {
	e.t.Helper()
	if l := e.listing(); len(l) != 0 {
		e.t.Fatalf("staged files left after commit: %v", l)
	}
}

func (e *env) errorText(group string) string {
	text, _ := e.st.ErrorText(group + ErrorSuffix)
	return text
}

func TestPairsCommitTogether(t *testing.T) {
	e := newEnv(t, Add, stdColumns)
	for i, name := range []string{"h264_bframes_gop30.mp4", "h264_faststart.mp4", "h264_vfr.mp4"} {
		ep := fmt.Sprintf("ep%d", i)
		e.copy(fixture(name), ep+".mp4")
		e.write(ep+".jsonl", rows(10+i))
	}
	e.settleAndStep()
	got := e.episodes()
	if len(got) != 3 || got["ep0"] != 10 || got["ep2"] != 12 {
		t.Fatalf("episodes %v", got)
	}
	if ids, _ := e.tbl.SnapshotIDs(context.Background()); len(ids) != 1 {
		t.Fatalf("want one commit, got snapshots %v", ids)
	}
	e.expectNothingStaged()
	if s := e.st.Stats(); s.Commits != 1 || s.Episodes != 3 {
		t.Fatalf("stats %+v", s)
	}
	if !strings.Contains(e.st.Status(), "snapshot 1: added ep0, ep1, ep2") {
		t.Fatalf("status:\n%s", e.st.Status())
	}
}

func TestBadGroupsDoNotHoldBackGoodOnes(t *testing.T) {
	e := newEnv(t, Add, stdColumns)
	e.copy(fixture("h264_faststart.mp4"), "good.mp4")
	e.write("good.jsonl", rows(5))
	e.copy(fixture("h264_faststart.mp4"), "toomany.mp4")
	e.write("toomany.jsonl", rows(1000))
	e.copy(fixture("h264_faststart.mp4"), "badjson.mp4")
	e.write("badjson.jsonl", `{"timestamp": 0.1}`+"\n"+`{"timestamp": `+"\n")
	e.copy(fixture("h264_faststart.mp4"), "badcsv.mp4")
	e.write("badcsv.csv", "timestamp,action\n0.1,1\n\"0.2,2\n")
	e.copy(fixture("h264_faststart.mp4"), "wrongtype.mp4")
	e.write("wrongtype.jsonl", `{"timestamp": "noon"}`+"\n")
	e.copy(fixture("h264_faststart.mp4"), "unknowncol.mp4")
	e.write("unknowncol.jsonl", `{"timestamp": 0.5, "colour": "red"}`+"\n")
	data, _ := os.ReadFile(fixture("h264_faststart.mp4"))
	e.write("truncated.mp4", string(data[:len(data)/3]))
	e.write("truncated.jsonl", rows(3))
	e.copy(fixture("h264_faststart.mp4"), "ctl\x01name.mp4")
	e.write("ctl\x01name.jsonl", rows(3))
	e.write("notes.txt", "hello")
	e.write("lonely.jsonl", rows(3))
	e.settleAndStep()
	if got := e.episodes(); len(got) != 1 || got["good"] != 5 {
		t.Fatalf("episodes %v", got)
	}
	for group, want := range map[string]string{
		"toomany":     "toomany.jsonl has 1000 rows",
		"badjson":     "badjson.jsonl",
		"wrongtype":   "timestamp",
		"unknowncol":  "colour",
		"truncated":   "truncated",
		"ctl\x01name": "episode",
		"notes.txt":   "not a video",
		"lonely":      "no video",
	} {
		if text := e.errorText(group); !strings.Contains(text, want) {
			t.Errorf("%s.error = %q, want it to mention %q", group, text, want)
		}
	}
	// The bad files stay staged; one commit happened.
	if ids, _ := e.tbl.SnapshotIDs(context.Background()); len(ids) != 1 {
		t.Fatalf("snapshots %v", ids)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "toomany.mp4")); err != nil {
		t.Fatal("a failed group's files must stay staged")
	}
	// Fixing the sidecar commits the group and clears its error.
	e.write("toomany.jsonl", rows(7))
	e.settleAndStep()
	if got := e.episodes(); got["toomany"] != 7 {
		t.Fatalf("episodes after the fix %v", got)
	}
	if _, ok := e.st.ErrorText("toomany.error"); ok {
		t.Fatal("the error file of a committed group must go")
	}
}

func TestVideoWithoutSidecarWaits(t *testing.T) {
	e := newEnv(t, Add, []table.Column{{Name: "timestamp", Type: "float64", Nullable: true}})
	e.copy(fixture("h264_faststart.mp4"), "solo.mp4")
	e.settleAndStep()
	if len(e.episodes()) != 0 {
		t.Fatal("a video without sidecar committed before .commit")
	}
	if text := e.errorText("solo"); !strings.Contains(text, "waiting") || !strings.Contains(text, "solo.jsonl") {
		t.Fatalf("solo.error = %q", text)
	}
	if !strings.Contains(e.st.Status(), "waiting") {
		t.Fatalf("status:\n%s", e.st.Status())
	}
	if err := e.st.CommitNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := e.episodes(); got["solo"] == 0 {
		t.Fatalf("CommitNow did not add the lone video: %v", got)
	}
	e.expectNothingStaged()
}

func TestOpenFilesAreNotCommitted(t *testing.T) {
	e := newEnv(t, Add, stdColumns)
	e.copy(fixture("h264_faststart.mp4"), "busy.mp4")
	e.write("busy.jsonl", rows(4))
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(e.dir, "busy.mp4"), &st); err != nil {
		t.Fatal(err)
	}
	w := e.st.OpenWriter(st.Ino, false)
	e.settleAndStep()
	if err := e.st.CommitNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(e.episodes()) != 0 {
		t.Fatal("a file open for writing was committed")
	}
	w.Release()
	e.settleAndStep()
	if e.episodes()["busy"] != 4 {
		t.Fatal("not committed once closed")
	}
}

func TestExistingEpisodeIsAnError(t *testing.T) {
	e := newEnv(t, Add, stdColumns)
	e.copy(fixture("h264_faststart.mp4"), "ep.mp4")
	e.write("ep.jsonl", rows(4))
	e.settleAndStep()
	e.copy(fixture("h264_vfr.mp4"), "ep.mp4")
	e.write("ep.jsonl", rows(6))
	e.settleAndStep()
	if e.episodes()["ep"] != 4 {
		t.Fatal("ingest replaced an existing episode")
	}
	if text := e.errorText("ep"); !strings.Contains(text, "already") {
		t.Fatalf("ep.error = %q", text)
	}
}

func TestJournalRecovery(t *testing.T) {
	// A commit landed but the daemon died before removing the staged
	// files: the restarted stager removes them instead of failing them.
	e := newEnv(t, Add, stdColumns)
	e.copy(fixture("h264_faststart.mp4"), "landed.mp4")
	e.write("landed.jsonl", rows(4))
	e.copy(fixture("h264_faststart.mp4"), "pending.mp4")
	e.write("pending.jsonl", rows(5))
	entries, err := e.st.scan(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	j := journal{Started: time.Now().UTC().Add(-time.Second)}
	for _, g := range groups(entries, []string{"video"}, true) {
		files := map[string]string{}
		for _, en := range g.entries {
			files[en.name] = en.fp
		}
		j.Groups = append(j.Groups, journalGroup{Episode: g.name, Files: files})
	}
	sc, err := table.ParseSidecar("landed.jsonl", []byte(rows(4)))
	if err != nil {
		t.Fatal(err)
	}
	in := table.EpisodeInput{Episode: "landed", Videos: map[string]table.VideoFile{"": {Path: filepath.Join(e.dir, "landed.mp4")}}, Sidecar: sc}
	if _, err := e.tbl.AddEpisodes(context.Background(), []table.EpisodeInput{in}, table.AddOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.st.writeJournal(j); err != nil {
		t.Fatal(err)
	}
	if err := e.st.recoverJournal(context.Background()); err != nil {
		t.Fatal(err)
	}
	l := e.listing()
	if strings.Contains(strings.Join(l, " "), "landed") || len(l) != 2 {
		t.Fatalf("after recovery: %v", l)
	}
	e.settleAndStep()
	got := e.episodes()
	if got["landed"] != 4 || got["pending"] != 5 {
		t.Fatalf("episodes %v", got)
	}
	e.expectNothingStaged()
}

func TestReplaceDirectory(t *testing.T) {
	e := newEnv(t, Add, stdColumns)
	e.copy(fixture("h264_faststart.mp4"), "ep.mp4")
	e.write("ep.jsonl", rows(4))
	e.settleAndStep()
	r, err := New(Options{Mode: Replace, Dir: filepath.Join(t.TempDir(), "r"), WorkDir: filepath.Join(t.TempDir(), "w"), Settle: settle,
		Table: func(context.Context) (*table.Table, error) { return e.tbl, nil }})
	if err != nil {
		t.Fatal(err)
	}
	re := &env{t: t, tbl: e.tbl, st: r, dir: r.Dir()}
	re.copy(fixture("h264_vfr.mp4"), "ep.mp4")
	re.settleAndStep()
	head, _ := e.tbl.Head(context.Background())
	got, err := e.tbl.Episode(context.Background(), head, "ep")
	if err != nil || got.Videos["video"].SourceName != "ep.mp4" || head.Summary.EpisodesUpdated != 1 {
		t.Fatalf("after replace: %+v %v", got, err)
	}
	re.write("ep.jsonl", rows(3))
	re.settleAndStep()
	if e.episodes()["ep"] != 3 {
		t.Fatalf("rows not updated: %v", e.episodes())
	}
	re.write("nobody.jsonl", rows(3))
	re.settleAndStep()
	if text := re.errorText("nobody"); !strings.Contains(text, "ingest/") {
		t.Fatalf("nobody.error = %q", text)
	}
	if l := re.listing(); len(l) != 1 {
		t.Fatalf("left: %v", l)
	}
}

func TestNewTableLearnsColumns(t *testing.T) {
	e := newEnv(t, Add, nil)
	e.copy(fixture("h264_faststart.mp4"), "first.mp4")
	e.write("first.jsonl", `{"speed": 1.5, "label": "a"}`+"\n"+`{"speed": 2, "label": "b"}`+"\n")
	e.settleAndStep()
	s, err := e.tbl.LatestSchema(context.Background())
	if err != nil || len(s.Columns) != 2 || e.episodes()["first"] != 2 {
		t.Fatalf("schema %+v, episodes %v, err %v", s, e.episodes(), err)
	}
}

func TestSchemaFileDefinesColumns(t *testing.T) {
	e := newEnv(t, Add, nil)
	e.write(SchemaFile, `{"columns":[{"name":"speed","type":"float32"}]}`)
	e.settleAndStep()
	s, err := e.tbl.LatestSchema(context.Background())
	if err != nil || len(s.Columns) != 1 || s.Columns[0].Type != "float32" {
		t.Fatalf("schema %+v, err %v, listing %v, status\n%s", s, err, e.listing(), e.st.Status())
	}
	e.expectNothingStaged()
}

func TestLimit(t *testing.T) {
	e := newEnv(t, Add, stdColumns)
	e.st.opts.LimitBytes = 1000
	e.write("a.jsonl", strings.Repeat("x", 900))
	e.st.scan(time.Now())
	if err := e.st.Grow(50); err != nil {
		t.Fatal(err)
	}
	if err := e.st.Grow(100); err != ErrNoSpace {
		t.Fatalf("Grow past the limit: %v", err)
	}
}

// TestErrorTextEscaped: a dropped file whose name holds ESC and BEL is
// named in NAME.error and .status with those characters escaped, so that
// reading either does not send them to a terminal.
func TestErrorTextEscaped(t *testing.T) {
	e := newEnv(t, Add, stdColumns)
	group := "evil\x1b]0;owned\x07"
	e.copy(fixture("h264_faststart.mp4"), group+".mp4")
	e.write(group+".jsonl", "{not json\n")
	e.settleAndStep()
	text := e.errorText(group)
	status := e.st.Status()
	for what, s := range map[string]string{"error text": text, ".status": status} {
		if strings.ContainsAny(s, "\x1b\x07") || !strings.Contains(s, `evil\x1b]0;owned\x07`) {
			t.Errorf("%s: %q, want the name with ESC and BEL escaped", what, s)
		}
	}
}
