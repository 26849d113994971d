package ingest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/framefs/framefs/internal/lerobottest"
	"github.com/framefs/framefs/table"
)

func TestMain(m *testing.M) {
	code := m.Run()
	lerobottest.RemoveCache()
	os.Exit(code)
}

// A LeRobot dataset folder dropped into a table made empty is imported
// whole (the table takes the dataset's columns) and removed; one that
// breaks a rule gets NAME.error naming the file and the rule, and stays.
func TestLeRobotDatasetFolder(t *testing.T) {
	e := newEnv(t, Add, nil)
	good := lerobottest.Build(t, filepath.Join(e.dir, "pusht"), lerobottest.Standard("v3.0"))
	spec := lerobottest.Standard("v2.1")
	spec.MutateRow = func(ep, k int, r *lerobottest.Row) {
		if ep == 2 && k == 5 {
			r.TaskIndex = 1 // not among episode 2's tasks
		}
	}
	lerobottest.Build(t, filepath.Join(e.dir, "broken"), spec)
	if err := e.st.CommitNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	head, err := e.tbl.Head(ctx)
	if err != nil || head == nil {
		t.Fatalf("no snapshot: %v", err)
	}
	eps, _ := e.tbl.Episodes(ctx, head)
	if len(eps) != 6 || eps[3].Episode != "episode_000003" || eps[3].Rows != 11 {
		t.Fatalf("episodes %v", eps)
	}
	schema, _ := e.tbl.LatestSchema(ctx)
	if len(schema.VideoColumns) != 2 || schema.VideoColumns[0] != lerobottest.CamTop {
		t.Fatalf("schema %+v", schema)
	}
	if _, err := os.Stat(good.Dir); !os.IsNotExist(err) {
		t.Errorf("the imported dataset is still staged: %v", err)
	}
	msg, ok := e.st.ErrorText("broken.error")
	if !ok || !strings.Contains(msg, "data/chunk-000/episode_000002.parquet: episode 2, row 5: task_index") {
		t.Fatalf("broken.error = %q", msg)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "broken", "meta", "info.json")); err != nil {
		t.Errorf("the refused dataset was not kept staged: %v", err)
	}
	if st := e.st.Status(); !strings.Contains(st, "imported 6 episodes (64 frames) of LeRobot dataset pusht/") || !strings.Contains(st, "broken/") {
		t.Errorf("status:\n%s", st)
	}

	// replace/ does not take datasets.
	r := newEnv(t, Replace, []table.Column{{Name: "x", Type: "int64"}})
	lerobottest.Build(t, filepath.Join(r.dir, "pusht"), lerobottest.Standard("v2.0"))
	r.st.CommitNow(ctx)
	if msg, _ := r.st.ErrorText("pusht.error"); !strings.Contains(msg, "drop it into ingest/") {
		t.Errorf("replace/pusht.error = %q", msg)
	}
}
