package fusefs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/framefs/framefs/internal/lerobottest"
	"github.com/framefs/framefs/internal/tabletest"
)

// TestIngestLeRobotDataset copies LeRobot dataset folders into ingest/
// through a real mount with cp -r: one is imported into a table made with
// mkdir (and disappears from ingest/, its frames showing under latest/),
// one that breaks a rule and one whose layout does not fit an existing
// table get their .error files and stay staged.
func TestIngestLeRobotDataset(t *testing.T) {
	t.Cleanup(lerobottest.RemoveCache)
	f := newWritableFixture(t)
	src := t.TempDir()
	good := lerobottest.Build(t, filepath.Join(src, "pusht"), lerobottest.Standard("v3.0"))
	spec := lerobottest.Standard("v2.1")
	spec.MutateRow = func(ep, k int, r *lerobottest.Row) {
		if ep == 4 && k >= 2 {
			r.Timestamp += 0.01
		}
	}
	lerobottest.Build(t, filepath.Join(src, "drifting"), spec)

	if err := os.Mkdir(filepath.Join(f.mnt, "robots"), 0o755); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(f.mnt, "robots", "ingest")
	run(t, "cp", "-r", good.Dir, filepath.Join(in, "pusht"))
	run(t, "cp", "-r", filepath.Join(src, "drifting"), filepath.Join(in, "drifting"))
	run(t, "cp", "-r", good.Dir, filepath.Join(f.mnt, "robot", "ingest", "pusht"))

	tbl := tabletest.Open(t, filepath.Join(f.wh, "robots"), tabletest.Options())
	got := waitEpisodes(t, tbl, "episode_000000", "episode_000001", "episode_000002", "episode_000003", "episode_000004", "episode_000005")
	if len(got) != 6 || got["episode_000003"].Rows != 11 {
		t.Fatalf("episodes %v", got)
	}
	for _, cam := range good.Spec.Cameras {
		ref := got["episode_000003"].Videos[cam.Key]
		if ref.SHA256 != sha(t, filepath.Join(good.Dir, good.EpisodeFile[cam.Key][3])) || ref.FirstFrame != good.EpisodeFirst[cam.Key][3] {
			t.Errorf("%s: stored %+v", cam.Key, ref)
		}
	}
	waitFor(t, func() bool {
		_, err := os.Stat(filepath.Join(in, "pusht"))
		return os.IsNotExist(err)
	}, "the imported dataset leaving ingest/")
	frame := filepath.Join(f.mnt, "robots", "latest", "episode_000003", lerobottest.CamTop, "000010.jpg")
	if data, err := os.ReadFile(frame); err != nil || len(data) < 100 {
		t.Fatalf("%s: %d bytes, %v", frame, len(data), err)
	}
	waitFor(t, func() bool {
		msg, _ := os.ReadFile(filepath.Join(in, "drifting.error"))
		return strings.Contains(string(msg), "data/chunk-000/episode_000004.parquet: episode 4, row 2: timestamp")
	}, "drifting.error naming the file, episode, row and rule")
	status, err := os.ReadFile(filepath.Join(in, ".status"))
	if err != nil || !strings.Contains(string(status), "of LeRobot dataset pusht/") || !strings.Contains(string(status), "drifting/") ||
		!strings.Contains(string(status), "failed: drifting/ is a LeRobot dataset that cannot be imported") {
		t.Errorf(".status:\n%s", status)
	}
	if _, err := os.Stat(filepath.Join(in, "drifting", "meta", "info.json")); err != nil {
		t.Errorf("the refused dataset left ingest/: %v", err)
	}
	waitFor(t, func() bool {
		msg, _ := os.ReadFile(filepath.Join(f.mnt, "robot", "ingest", "pusht.error"))
		return strings.Contains(string(msg), "does not fit the dataset")
	}, "robot/ingest/pusht.error")
}
