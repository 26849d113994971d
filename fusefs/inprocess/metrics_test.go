package inprocess

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/framefs/framefs/fusefs"
	"github.com/framefs/framefs/internal/treetest"
)

// TestMetricsRegistry: a tree adds its metrics to the registry it is
// given and removes them when released; a second tree on a registry
// still holding them is an error that says why; and .stats shows every
// metric of the registry, the caller's beside the tree's own (a count in
// the millions written as an integer).
func TestMetricsRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	decoded := prometheus.NewCounter(prometheus.CounterOpts{Name: "framefs_caller_frames_total", Help: "Frames counted by the caller."})
	decoded.Add(1234567)
	reg.MustRegister(decoded)
	names := func() map[string]bool {
		t.Helper()
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, f := range families {
			names[f.GetName()] = true
		}
		return names
	}
	tbl := treetest.RobotTable(t)
	opts := fusefs.Options{ReadOnly: true, Metrics: reg}
	first, err := fusefs.NewTableRoot(context.Background(), tbl, &treetest.Frames{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if n := names(); !n["framefs_lookups_total"] || !n["framefs_metadata_cache_bytes"] {
		t.Fatalf("the registry lacks the tree's metrics: %v", n)
	}
	if _, err := fusefs.NewTableRoot(context.Background(), tbl, &treetest.Frames{}, opts); err == nil || !strings.Contains(err.Error(), "registry shared with another mount") {
		t.Fatalf("a second tree on the same registry: %v", err)
	}
	first.Close()
	if n := names(); n["framefs_lookups_total"] || !n["framefs_caller_frames_total"] {
		t.Fatalf("after the tree was released the registry holds %v", n)
	}

	tr := newTree(t, tbl, opts)
	stats := string(tr.readFile(tr.walk(".stats").NodeId))
	for _, want := range []string{"\nframefs_caller_frames_total 1234567\n", "\nframefs_lookups_total "} {
		if !strings.Contains(stats, want) {
			t.Errorf(".stats lacks %q:\n%s", want, stats)
		}
	}
}
