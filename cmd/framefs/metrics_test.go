package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/framefs/framefs/fusefs"
	"github.com/framefs/framefs/internal/s3test"
	"github.com/framefs/framefs/internal/testenv"
)

// statsFamilies are the metrics a mount's .stats showed, with their TYPE
// and whether they had a HELP line, when they were written by hand (from
// a mount of a warehouse on S3 with a disk tier and write directories,
// which shows every group). Scripts and tests read them by these names.
var statsFamilies = []struct {
	name, kind string
	help       bool
}{
	{"framefs_frames_served_total", "counter", true},
	{"framefs_bytes_served_total", "counter", true},
	{"framefs_frame_errors_total", "counter", true},
	{"framefs_frames_sized_total", "counter", true},
	{"framefs_rows_files_made_total", "counter", true},
	{"framefs_manifests_listed_total", "counter", true},
	{"framefs_lookups_total", "counter", true},
	{"framefs_lookups_known_total", "counter", true},
	{"framefs_folders_opened_total", "counter", true},
	{"framefs_folder_listings_total", "counter", true},
	{"framefs_frame_read_requests_total", "counter", true},
	{"framefs_video_file_bytes_total", "counter", true},
	{"framefs_nodes_made_total", "counter", true},
	{"framefs_nodes_forgotten_total", "counter", true},
	{"framefs_memory_trims_total", "counter", true},
	{"framefs_metadata_cache_bytes", "gauge", true},
	{"framefs_ingest_commits_total", "counter", true},
	{"framefs_ingest_episodes_total", "counter", true},
	{"framefs_ingest_failures_total", "counter", true},
	{"framefs_ingest_staged_bytes", "gauge", true},
	{"framefs_ingest_writing_files", "gauge", true},
	{"framefs_image_cache_hits_total", "counter", false},
	{"framefs_image_cache_misses_total", "counter", false},
	{"framefs_image_cache_bytes", "gauge", false},
	{"framefs_image_cache_served_again_total", "counter", false},
	{"framefs_image_cache_served_entries", "gauge", false},
	{"framefs_decoder_sessions_open", "gauge", false},
	{"framefs_decoder_frames_decoded_total", "counter", false},
	{"framefs_decoder_seeks_total", "counter", false},
	{"framefs_picture_cache_bytes", "gauge", false},
	{"framefs_picture_cache_hits_total", "counter", false},
	{"framefs_image_cache_bound_bytes", "gauge", false},
	{"framefs_c_heap_trims_total", "counter", false},
	{"framefs_c_heap_in_use_bytes", "gauge", false},
	{"framefs_c_heap_free_bytes", "gauge", false},
	{"framefs_c_heap_arenas", "gauge", false},
	{"framefs_picture_buffer_bytes", "gauge", false},
	{"framefs_picture_buffer_idle_bytes", "gauge", false},
	{"framefs_go_heap_object_bytes", "gauge", false},
	{"framefs_go_mapped_bytes", "gauge", false},
	{"framefs_go_gc_percent", "gauge", false},
	{"framefs_go_heap_goal_bytes", "gauge", false},
	{"framefs_go_heap_live_bytes", "gauge", false},
	{"framefs_go_heap_unused_bytes", "gauge", false},
	{"framefs_go_heap_free_bytes", "gauge", false},
	{"framefs_go_stack_bytes", "gauge", false},
	{"framefs_go_metadata_bytes", "gauge", false},
	{"framefs_go_memory_limit_bytes", "gauge", false},
	{"framefs_go_gc_cpu_seconds_total", "counter", false},
	{"framefs_gop_fills_total", "counter", false},
	{"framefs_gop_fill_frames_total", "counter", false},
	{"framefs_gop_fill_frames_served_total", "counter", false},
	{"framefs_gop_fill_frames_wasted_total", "counter", false},
	{"framefs_gop_fills_declined_total", "counter", false},
	{"framefs_gop_fill_frames_packed_total", "counter", false},
	{"framefs_packed_picture_bytes_total", "counter", false},
	{"framefs_images_from_packed_pictures_total", "counter", false},
	{"framefs_gop_fill_frames_compressed_total", "counter", false},
	{"framefs_compressed_image_bytes_total", "counter", false},
	{"framefs_images_from_compressed_images_total", "counter", false},
	{"framefs_frame_sizes_frames_kept_total", "counter", false},
	{"framefs_gop_fill_frames_spilled_total", "counter", false},
	{"framefs_gop_fill_frames_spill_dropped_total", "counter", false},
	{"framefs_spill_queue_bytes", "gauge", false},
	{"framefs_gop_fill_usefulness", "gauge", false},
	{"framefs_disk_cache_frames_served_total", "counter", false},
	{"framefs_disk_cache_writes_total", "counter", false},
	{"framefs_disk_cache_evictions_total", "counter", false},
	{"framefs_disk_cache_corrupt_total", "counter", false},
	{"framefs_disk_cache_write_errors_total", "counter", false},
	{"framefs_disk_cache_bytes", "gauge", false},
	{"framefs_disk_cache_entries", "gauge", false},
	{"framefs_disk_cache_digest_checked_bytes_total", "counter", false},
	{"framefs_disk_cache_digest_mismatches_total", "counter", false},
	{"framefs_s3_get_requests_total", "counter", false},
	{"framefs_s3_head_requests_total", "counter", false},
	{"framefs_s3_put_requests_total", "counter", false},
	{"framefs_s3_list_requests_total", "counter", false},
	{"framefs_s3_read_bytes_total", "counter", false},
	{"framefs_s3_read_retries_total", "counter", false},
	{"framefs_s3_metadata_cache_hits_total", "counter", false},
	{"framefs_s3_block_cache_hits_total", "counter", false},
	{"framefs_s3_block_cache_misses_total", "counter", false},
	{"framefs_s3_block_cache_prefetches_total", "counter", false},
	{"framefs_s3_block_cache_evictions_total", "counter", false},
	{"framefs_s3_block_cache_corrupt_total", "counter", false},
	{"framefs_s3_block_cache_bytes", "gauge", false},
}

// statsFile is a .stats text taken apart.
type statsFile struct {
	kinds   map[string]string // TYPE of each family
	help    map[string]bool   // families with a HELP line
	samples map[string]string // the sample lines' values, by name and labels
}

func parseStats(t *testing.T, text string) statsFile {
	t.Helper()
	s := statsFile{kinds: map[string]string{}, help: map[string]bool{}, samples: map[string]string{}}
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "# TYPE ") && len(f) == 4:
			s.kinds[f[2]] = f[3]
		case strings.HasPrefix(line, "# HELP ") && len(f) >= 4:
			s.help[f[2]] = true
		case len(f) >= 2 && !strings.HasPrefix(line, "#"):
			s.samples[strings.Join(f[:len(f)-1], " ")] = f[len(f)-1]
		default:
			t.Fatalf(".stats line %q", line)
		}
	}
	return s
}

// familyOf is the metric name of a sample's key (name{labels}).
func familyOf(key string) string {
	name, _, _ := strings.Cut(key, "{")
	return name
}

// plainNumber is how every value of .stats is written: in decimal,
// whole numbers as integers.
var plainNumber = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

// TestStatsText: a real mount's .stats has the metrics it always had,
// no more and no fewer, with their TYPE and HELP lines, and writes every
// value in plain decimal (a value of millions included), whole numbers as
// integers; a write directory's series keep their labels' order.
func TestStatsText(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testenv.Missing(t, testenv.FUSE, fmt.Sprintf("no FUSE device: %v", err))
	}
	srv := s3test.Start(t)
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	dir := t.TempDir()
	s3cache := []string{"--s3-cache-dir", filepath.Join(dir, "s3cache")}
	mustRun(t, append([]string{"create", srv.URI("wh/robot")}, s3cache...)...)
	mustRun(t, append([]string{"ingest", srv.URI("wh/robot"), "../../testdata/video/h264_faststart.mp4"}, s3cache...)...)
	// -o rw wins over mountCLI's -o ro: the write directories are shown.
	mnt := mountCLI(t, append([]string{srv.URI("wh"), "-o", "rw", "--staging-dir", filepath.Join(dir, "staging"),
		"--cache-dir", filepath.Join(dir, "frames")}, s3cache...)...)
	if _, err := os.ReadFile(filepath.Join(mnt, "robot", "latest", "h264_faststart", "000003.jpg")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(mnt, "robot", "ingest")); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(mnt, ".stats"))
	if err != nil {
		t.Fatal(err)
	}
	stats := parseStats(t, string(text))
	var want []string
	for _, f := range statsFamilies {
		want = append(want, f.name)
		if stats.kinds[f.name] != f.kind {
			t.Errorf("%s: TYPE %q, want %s", f.name, stats.kinds[f.name], f.kind)
		}
		if stats.help[f.name] != f.help {
			t.Errorf("%s: HELP line %v, want %v", f.name, stats.help[f.name], f.help)
		}
	}
	var got []string
	for key, value := range stats.samples {
		got = append(got, familyOf(key))
		if !plainNumber.MatchString(value) {
			t.Errorf("%s %s: not a plain decimal number", key, value)
		}
	}
	slices.Sort(want)
	got = slices.Compact(slices.Sorted(slices.Values(got)))
	if !slices.Equal(got, want) {
		t.Errorf(".stats shows\n%s\nwant\n%s", strings.Join(got, " "), strings.Join(want, " "))
	}
	if mapped, err := strconv.ParseInt(stats.samples["framefs_go_mapped_bytes"], 10, 64); err != nil || mapped < 1e6 {
		t.Errorf("framefs_go_mapped_bytes %q: want an integer of a million or more (which an exponent would write)", stats.samples["framefs_go_mapped_bytes"])
	}
	if _, ok := stats.samples[`framefs_ingest_staged_bytes{table="`+srv.URI("wh/robot")+`",dir="ingest"}`]; !ok {
		t.Errorf("no framefs_ingest_staged_bytes{table=...,dir=\"ingest\"} in\n%s", text)
	}
}

// TestMetricsAddr: --metrics-addr (here -o metrics_addr=) serves the
// metrics .stats shows at /metrics, for Prometheus, while mounted and no
// longer once unmounted; an address it cannot listen on fails the mount
// before anything is mounted, naming the option and the address.
func TestMetricsAddr(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testenv.Missing(t, testenv.FUSE, fmt.Sprintf("no FUSE device: %v", err))
	}
	wh := t.TempDir()
	mustRun(t, "create", filepath.Join(wh, "robot"))
	mustRun(t, "ingest", filepath.Join(wh, "robot"), "../../testdata/video/h264_faststart.mp4")

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, c := range []struct{ args []string }{
		{[]string{"--metrics-addr", "nonsense"}},
		{[]string{"-o", "metrics_addr=127.0.0.1:99999"}},
		{[]string{"--metrics-addr", busy.Addr().String()}},
	} {
		mnt := t.TempDir()
		_, err := runCLI(context.Background(), append([]string{"mount", wh, mnt}, c.args...)...)
		addr := strings.TrimPrefix(c.args[1], "metrics_addr=")
		if err == nil || !strings.Contains(err.Error(), "--metrics-addr") || !strings.Contains(err.Error(), addr) {
			t.Errorf("mount %q: %v, want an error naming --metrics-addr and %s", c.args, err, addr)
		}
		if fusefs.IsMounted(mnt) {
			t.Errorf("mount %q mounted", c.args)
		}
	}

	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := free.Addr().String()
	free.Close()
	mnt := t.TempDir()
	done := mountInProcess(t, mnt, wh, mnt, "-o", "ro,metrics_addr="+addr)
	if _, err := os.ReadFile(filepath.Join(mnt, "robot", "latest", "h264_faststart", "000003.jpg")); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(mnt, ".stats"))
	if err != nil {
		t.Fatal(err)
	}
	stats := parseStats(t, string(text))
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s, %v", resp.Status, err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("/metrics does not parse as the Prometheus text format: %v\n%s", err, body)
	}
	for name, kind := range stats.kinds {
		f := families[name]
		if f == nil || !strings.EqualFold(f.GetType().String(), kind) {
			t.Errorf("/metrics: %s is %v, .stats says %s", name, f, kind)
		}
	}
	if len(families) != len(stats.kinds) {
		t.Errorf("/metrics has %d metrics, .stats %d", len(families), len(stats.kinds))
	}
	if f := families["framefs_frames_served_total"]; f == nil || f.GetMetric()[0].GetCounter().GetValue() != 1 {
		t.Errorf("/metrics framefs_frames_served_total: %v, want 1 frame served", f)
	}

	// Unmounted from outside, the mount command ends, and with it the
	// metrics server.
	if err := exec.Command("fusermount3", "-u", mnt).Run(); err != nil {
		if err := syscall.Unmount(mnt, 0); err != nil {
			t.Fatalf("unmount: %v", err)
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("mount: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the mount command did not end within 30 s of the unmount")
	}
	if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
		resp.Body.Close()
		t.Errorf("/metrics still answers after the unmount: %s", resp.Status)
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("GET /metrics after the unmount: %v, want connection refused", err)
	}
}
