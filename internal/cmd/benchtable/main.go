// Command benchtable builds the tables of scripts/bench-scale.sh fast: N
// episodes of a few rows each, partitioned by task (four tasks taking
// turns), all cut from one short video, committed many episodes at a time
// through the table package (each commit stores the video once). Each
// episode drives at a speed of its own, so that a filter on speed is
// selective on a non-partition column. It prints what it built as
// NAME VALUE UNIT lines.
//
//	go run ./internal/cmd/benchtable -table DIR -episodes 1000000 -video V
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"time"

	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
)

// tasks are the partition values; episode i has task i%4.
var tasks = []string{"pick", "place", "push", "stack"}

func main() {
	dir := flag.String("table", "", "directory of the new table (must not exist)")
	episodes := flag.Int("episodes", 10000, "episodes")
	perCommit := flag.Int("per-commit", 10000, "episodes per commit")
	rows := flag.Int("rows", 10, "rows per episode")
	video := flag.String("video", "", "the video every episode is cut from (at least -rows + 3 frames)")
	first := flag.Int("first", 0, "id of the first episode (to add episodes to a table built before)")
	flag.Parse()
	// Building allocates much and keeps little: collect less often.
	debug.SetGCPercent(400)
	if *dir == "" || *video == "" {
		fmt.Fprintln(os.Stderr, "benchtable: -table and -video are required")
		os.Exit(2)
	}
	if err := build(context.Background(), *dir, *video, *first, *episodes, *perCommit, *rows); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

func schema() table.Schema {
	return table.Schema{
		PartitionColumns: []string{"task"},
		Columns: []table.Column{
			{Name: "task", Type: "string"},
			{Name: "speed", Type: "float64"},
			{Name: "gear", Type: "int32"},
			{Name: "label", Type: "string", Nullable: true},
		},
	}
}

// EpisodeID names episode i.
func EpisodeID(i int) string { return fmt.Sprintf("ep%07d", i) }

// inputs makes episodes [from, to): rows rows each, speed base..base+1
// with base uniform in [0, 100) (seeded by the episode), gear from speed,
// a label on every other row.
func inputs(video string, from, to, rows int) []table.EpisodeInput {
	labels := []string{"cat", "dog", "owl"}
	out := make([]table.EpisodeInput, 0, to-from)
	for i := from; i < to; i++ {
		rng := rand.New(rand.NewPCG(uint64(i), 28))
		base := rng.Float64() * 100
		frames := make([]map[string]any, rows)
		for r := range frames {
			speed := base + float64(r)/float64(rows)
			row := map[string]any{"task": tasks[i%len(tasks)], "speed": speed, "gear": int64(speed / 25), "label": nil}
			if r%2 == 0 {
				row["label"] = labels[(i+r)%len(labels)]
			}
			frames[r] = row
		}
		out = append(out, table.EpisodeInput{
			Episode: EpisodeID(i),
			Videos:  map[string]table.VideoFile{"": {Path: video, FirstFrame: int64(i % 3)}},
			Sidecar: &table.Sidecar{Name: EpisodeID(i) + ".jsonl", Frames: frames},
		})
	}
	return out
}

func build(ctx context.Context, dir, video string, first, n, perCommit, rows int) error {
	start := time.Now()
	var tbl *table.Table
	if first == 0 {
		if _, err := os.Stat(dir); err == nil {
			return fmt.Errorf("%s exists", dir)
		}
		store, err := storage.NewLocal(dir)
		if err != nil {
			return err
		}
		if tbl, err = table.Create(ctx, store, schema(), table.Options{}); err != nil {
			return err
		}
	} else {
		store, err := storage.NewLocal(dir)
		if err != nil {
			return err
		}
		if tbl, err = table.Open(ctx, store, table.Options{}); err != nil {
			return err
		}
	}
	commits := 0
	for from := first; from < first+n; from += perCommit {
		to := min(from+perCommit, first+n)
		if _, err := tbl.AddEpisodes(ctx, inputs(video, from, to, rows), table.AddOptions{NoSizes: true}); err != nil {
			return fmt.Errorf("episodes %d..%d: %w", from, to-1, err)
		}
		commits++
		fmt.Fprintf(os.Stderr, "benchtable: %d of %d episodes in %s\n", to-first, n, time.Since(start).Round(time.Second))
	}
	fmt.Printf("benchtable_episodes %d episodes\n", n)
	fmt.Printf("benchtable_commits %d commits\n", commits)
	fmt.Printf("benchtable_build %.1f s\n", time.Since(start).Seconds())
	return nil
}
