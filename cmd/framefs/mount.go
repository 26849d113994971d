package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/framefs/framefs/cache/diskcache"
	"github.com/framefs/framefs/decoder"
	"github.com/framefs/framefs/fusefs"
	"github.com/framefs/framefs/internal/gcpace"
	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/serving"
	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/storage"
)

// writeGoMemoryStats adds the Go runtime's memory: what the Go heap holds
// and everything the runtime has mapped, so that the rest of the resident
// set (FFmpeg's C heap, code) can be told apart; and the collector's
// pacing (see internal/gcpace).
func writeGoMemoryStats(b *strings.Builder) {
	m := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/gc/gogc:percent"},
		{Name: "/gc/heap/goal:bytes"},
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
	}
	metrics.Read(m)
	fmt.Fprintf(b, "# TYPE framefs_go_heap_object_bytes gauge\nframefs_go_heap_object_bytes %d\n", m[0].Value.Uint64())
	fmt.Fprintf(b, "# TYPE framefs_go_mapped_bytes gauge\nframefs_go_mapped_bytes %d\n", m[1].Value.Uint64()-m[2].Value.Uint64())
	fmt.Fprintf(b, "# TYPE framefs_go_gc_percent gauge\nframefs_go_gc_percent %d\n", m[3].Value.Uint64())
	fmt.Fprintf(b, "# TYPE framefs_go_heap_goal_bytes gauge\nframefs_go_heap_goal_bytes %d\n", m[4].Value.Uint64())
	// An estimate by the runtime, from the time its collector workers ran.
	fmt.Fprintf(b, "# TYPE framefs_go_gc_cpu_seconds_total counter\nframefs_go_gc_cpu_seconds_total %.3f\n", m[5].Value.Float64())
}

// writeS3Stats adds the S3 store's request and block-cache counters to
// the mount's .stats.
func writeS3Stats(b *strings.Builder, st storage.S3Stats) {
	for _, c := range []struct {
		name, kind string
		v          int64
	}{
		{"framefs_s3_get_requests_total", "counter", st.GETs},
		{"framefs_s3_head_requests_total", "counter", st.HEADs},
		{"framefs_s3_put_requests_total", "counter", st.PUTs},
		{"framefs_s3_list_requests_total", "counter", st.LISTs},
		{"framefs_s3_read_bytes_total", "counter", st.BytesRead},
		{"framefs_s3_read_retries_total", "counter", st.ReadRetries},
		{"framefs_s3_metadata_cache_hits_total", "counter", st.MetadataHits},
		{"framefs_s3_block_cache_hits_total", "counter", st.Cache.Hits},
		{"framefs_s3_block_cache_misses_total", "counter", st.Cache.Misses},
		{"framefs_s3_block_cache_prefetches_total", "counter", st.Cache.Prefetches},
		{"framefs_s3_block_cache_evictions_total", "counter", st.Cache.Evictions},
		{"framefs_s3_block_cache_corrupt_total", "counter", st.Cache.Corrupt},
		{"framefs_s3_block_cache_bytes", "gauge", st.Cache.Bytes},
	} {
		fmt.Fprintf(b, "# TYPE %s %s\n%s %d\n", c.name, c.kind, c.name, c.v)
	}
}

// writeFillStats adds the counters of GOP fills to the mount's .stats.
func writeFillStats(b *strings.Builder, st serving.FillStats) {
	for _, c := range []struct {
		name, kind string
		v          any
	}{
		{"framefs_gop_fills_total", "counter", st.Fills},
		{"framefs_gop_fill_frames_total", "counter", st.FramesFilled},
		{"framefs_gop_fill_frames_served_total", "counter", st.Useful},
		{"framefs_gop_fill_frames_wasted_total", "counter", st.Wasted},
		{"framefs_gop_fills_declined_total", "counter", st.Declined},
		{"framefs_gop_fill_frames_packed_total", "counter", st.FramesPacked},
		{"framefs_packed_picture_bytes_total", "counter", st.PackedBytes},
		{"framefs_images_from_packed_pictures_total", "counter", st.Unpacked},
		{"framefs_frame_sizes_frames_kept_total", "counter", st.FramesSized},
		{"framefs_gop_fill_usefulness", "gauge", fmt.Sprintf("%.3f", st.Usefulness)},
	} {
		fmt.Fprintf(b, "# TYPE %s %s\n%s %v\n", c.name, c.kind, c.name, c.v)
	}
}

// writeDiskCacheStats adds the counters of --cache-dir to .stats.
func writeDiskCacheStats(b *strings.Builder, st diskcache.Stats, served, hashed, mismatched int64) {
	for _, c := range []struct {
		name, kind string
		v          int64
	}{
		{"framefs_disk_cache_frames_served_total", "counter", served},
		{"framefs_disk_cache_writes_total", "counter", st.Writes},
		{"framefs_disk_cache_evictions_total", "counter", st.Evictions},
		{"framefs_disk_cache_corrupt_total", "counter", st.Corrupt},
		{"framefs_disk_cache_write_errors_total", "counter", st.Errors},
		{"framefs_disk_cache_bytes", "gauge", st.Bytes},
		{"framefs_disk_cache_entries", "gauge", st.Entries},
		// Videos are read once before the disk tier is used for them, to
		// check the digest their table records (see serving/digests.go).
		{"framefs_disk_cache_digest_checked_bytes_total", "counter", hashed},
		{"framefs_disk_cache_digest_mismatches_total", "counter", mismatched},
	} {
		fmt.Fprintf(b, "# TYPE %s %s\n%s %d\n", c.name, c.kind, c.name, c.v)
	}
}

// mountFlags are the command line of `framefs mount`; they map onto
// fusefs.Options and the decoder's options.
type mountFlags struct {
	options     string
	imageFormat string
	jpegQuality int
	scale       string
	cacheBytes  int64
	pictures    int64
	cacheDir    string
	cacheDirMax int64
	sessions    int
	refresh     time.Duration
	foreground  bool
	daemon      bool
	stagingDir  string
	settle      time.Duration
	stagingMax  int64
	// readOnly and allowOther come from -o.
	readOnly, allowOther bool
}

func newMountCommand(stores *storeFlags) *cobra.Command {
	var f mountFlags
	cmd := &cobra.Command{
		Use:   "mount SRC MNT",
		Short: "Mount a warehouse (a directory or S3 prefix of tables) or one table",
		Long: `mount serves SRC at the directory MNT until it is unmounted (umount MNT,
fusermount3 -u MNT, or Ctrl-C / SIGTERM for a foreground mount). SRC is a
warehouse directory (each table becomes MNT/TABLE) or one table (its latest,
snapshots and tags appear at MNT).

Unless mounted read-only, every table has write directories: files dropped
into TABLE/ingest/ (NAME.mp4 with NAME.jsonl, or a folder of images) commit
as new episodes, and TABLE/replace/ replaces videos or rows of existing ones.
They are staged on local disk (--staging-dir) until they commit.

Mount options (-o) follow mount conventions: ro, allow_other, and the framefs
options image_format=, jpeg_quality=, scale=WxH, cache_bytes=,
picture_cache_bytes=, cache_dir=, cache_dir_bytes=, refresh=, staging_dir=,
settle=, staging_limit=.`,
		Example: `  framefs mount data/warehouse /mnt/frames
  framefs mount data/warehouse/robot /mnt/robot --image-format bmp --daemon
  mount -t fuse.framefs data/warehouse /mnt/frames -o ro,allow_other`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.daemon {
				return daemonize(cmd, args)
			}
			var err error
			if f.readOnly, f.allowOther, err = parseMountOptions(cmd.Flags(), f.options); err != nil {
				return err
			}
			return runMount(cmd, stores, args[0], args[1], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.options, "options", "o", "", "comma-separated mount options (ro, allow_other, image_format=jpg, ...)")
	fl.StringVar(&f.imageFormat, "image-format", "", "serve frames as jpg, png, bmp, ppm or npy (default: the table's setting)")
	fl.IntVar(&f.jpegQuality, "jpeg-quality", 0, "JPEG quality 1-100 (default: the table's setting)")
	fl.StringVar(&f.scale, "scale", "", "resize frames to WxH (e.g. 224x224; W or H 0 keeps the aspect ratio)")
	fl.Int64Var(&f.cacheBytes, "cache-bytes", 256<<20, "memory for decoded images, in bytes (0: none)")
	fl.Int64Var(&f.pictures, "picture-cache-bytes", 256<<20, "memory for decoded pictures kept for random readers, in bytes (0: none)")
	fl.StringVar(&f.cacheDir, "cache-dir", "", "local directory keeping encoded frames on disk, shared by mounts and kept across remounts (default: none)")
	fl.Int64Var(&f.cacheDirMax, "cache-dir-bytes", diskcache.DefaultMaxBytes, "size limit of --cache-dir, in bytes")
	fl.IntVar(&f.sessions, "max-sessions", 0, "decoder sessions open at once (default 2 x cores)")
	fl.DurationVar(&f.refresh, "refresh", 2*time.Second, "how often new snapshots and tags are looked for")
	fl.StringVar(&f.stagingDir, "staging-dir", "", "local directory holding files dropped into ingest/ and replace/ until they commit (default $XDG_CACHE_HOME/framefs/staging or ~/.cache/framefs/staging)")
	fl.DurationVar(&f.settle, "settle", 2*time.Second, "how long a dropped file must stay closed and unchanged before it commits")
	fl.Int64Var(&f.stagingMax, "staging-limit", 0, "bytes each write directory may hold before writes fail with ENOSPC (0: no limit but the disk)")
	fl.BoolVar(&f.foreground, "foreground", true, "stay in the foreground until unmounted (default)")
	fl.BoolVar(&f.daemon, "daemon", false, "detach once mounted")
	positive(fl, "jpeg-quality", "cache-dir-bytes", "max-sessions", "refresh", "settle")
	nonNegative(fl, "cache-bytes", "picture-cache-bytes", "staging-limit")
	return cmd
}

// parseMountOptions applies the -o options to the flags they stand for
// (image_format= is --image-format, and so on), so that they are parsed
// and checked as the flags are, and returns the generic ones.
func parseMountOptions(fl *pflag.FlagSet, options string) (ro, allowOther bool, err error) {
	for _, opt := range strings.Split(options, ",") {
		key, value, _ := strings.Cut(strings.TrimSpace(opt), "=")
		switch key {
		case "":
		case "ro":
			ro = true
		case "rw", "defaults", "auto", "noauto", "user", "nouser", "nofail", "_netdev", "exec", "noexec", "suid", "nosuid", "dev", "nodev":
			// Handled by mount(8) or meaningless here.
		case "allow_other":
			allowOther = true
		case "image_format", "jpeg_quality", "scale", "cache_bytes", "picture_cache_bytes", "cache_dir", "cache_dir_bytes",
			"refresh", "staging_dir", "settle", "staging_limit":
			if err := fl.Set(strings.ReplaceAll(key, "_", "-"), value); err != nil {
				return false, false, fmt.Errorf("-o %s=%q: %v", key, value, err)
			}
		default:
			return false, false, fmt.Errorf("unknown mount option %q", key)
		}
	}
	if err := checkFlags(fl); err != nil {
		return false, false, fmt.Errorf("-o %s: %w", options, err)
	}
	return ro, allowOther, nil
}

// imageChoice maps the image flags onto the mount's image options: each
// one not given keeps every table's own setting. Given values are checked
// here, before anything is mounted.
func imageChoice(f mountFlags) (fusefs.ImageChoice, error) {
	c := fusefs.ImageChoice{ImageOptions: table.ImageOptions{Format: f.imageFormat, JPEGQuality: f.jpegQuality}}
	if f.scale != "" {
		w, h, ok := strings.Cut(f.scale, "x")
		var err error
		if c.Width, err = strconv.Atoi(w); !ok || err != nil {
			return c, fmt.Errorf("--scale %q: want WxH, e.g. 224x224", f.scale)
		}
		if c.Height, err = strconv.Atoi(h); err != nil {
			return c, fmt.Errorf("--scale %q: want WxH, e.g. 224x224", f.scale)
		}
	}
	// Any format stands in for the table's when checking the rest.
	check := media.ImageSetting{JPEGQuality: c.JPEGQuality, Width: c.Width, Height: c.Height}
	if c.Format != "" {
		var err error
		if check.Format, err = media.ParseImageFormat(c.Format); err != nil {
			return c, err
		}
	}
	return c, check.Validate()
}

func runMount(cmd *cobra.Command, stores *storeFlags, src, mnt string, f mountFlags) error {
	ctx := cmd.Context()
	// FRAMEFS_CPUPROFILE=FILE profiles the mount until it is unmounted
	// (for developers; see README, Development).
	if path := os.Getenv("FRAMEFS_CPUPROFILE"); path != "" {
		out, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(out); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); out.Close() }()
	}
	readOnly, allowOther := f.readOnly, f.allowOther
	image, err := imageChoice(f)
	if err != nil {
		return err
	}
	if !storage.IsS3URI(src) {
		if st, err := os.Stat(src); err != nil || !st.IsDir() {
			return fmt.Errorf("%s: not a warehouse or table directory", src)
		}
	}
	store, err := stores.openStore(ctx, src, false)
	if err != nil {
		return err
	}
	isTbl, err := table.IsTable(ctx, store)
	if err != nil {
		return err
	}
	limitGoMemory(f.cacheBytes)
	// 0 means none here; in serving's options it means the default, and
	// negative means none.
	pictures, cacheBytes := f.pictures, f.cacheBytes
	if pictures == 0 {
		pictures = -1
	}
	if cacheBytes == 0 {
		cacheBytes = -1
	}
	// The kernel's page cache keeps the frames it was served, so the
	// memory cache keeps them only in room that frames still to be asked
	// for do not need (DemoteServed).
	frameOpts := serving.Options{CacheBytes: cacheBytes, MaxOpenSessions: f.sessions, PictureCacheBytes: pictures, DemoteServed: true}
	var disk *diskcache.Cache
	if f.cacheDir != "" {
		if disk, err = diskcache.Open(diskcache.Options{Dir: f.cacheDir, MaxBytes: f.cacheDirMax}); err != nil {
			return fmt.Errorf("--cache-dir: %w", err)
		}
		defer disk.Close()
		frameOpts.Store = disk
	}
	frames := serving.New(decoder.Codec{}, frameOpts)
	defer frames.Close()
	// The image cache is most of the live Go heap: the collector's
	// headroom is worked out from the rest of it (internal/gcpace).
	paceCtx, stopPacing := context.WithCancel(ctx)
	defer stopPacing()
	go gcpace.Run(paceCtx, gcpace.Options{Cached: func() int64 { return frames.CacheStats().Bytes }})
	stagingDir, err := stagingDirFor(f.stagingDir, readOnly)
	if err != nil {
		return err
	}
	opts := fusefs.Options{
		Image: image, Refresh: f.refresh, AllowOther: allowOther, ReadOnly: readOnly,
		StagingDir: stagingDir, Settle: f.settle, StagingLimit: f.stagingMax,
		EncodeImages: func(ctx context.Context, images []string, out string) error {
			return decoder.EncodeImagesToVideo(ctx, images, out, decoder.VideoEncodeOptions{})
		},
		Debug: slog.Default().Enabled(ctx, slog.LevelDebug), // --debug: every FUSE request too
		ExtraStats: func(b *strings.Builder) {
			cs := frames.CacheStats()
			ps := frames.PoolStats()
			fmt.Fprintf(b, "# TYPE framefs_image_cache_hits_total counter\nframefs_image_cache_hits_total %d\n", cs.Hits)
			fmt.Fprintf(b, "# TYPE framefs_image_cache_misses_total counter\nframefs_image_cache_misses_total %d\n", cs.Misses)
			fmt.Fprintf(b, "# TYPE framefs_image_cache_bytes gauge\nframefs_image_cache_bytes %d\n", cs.Bytes)
			// Served frames asked for again: the kernel's page cache had
			// lost them (see docs/CACHES.md).
			fmt.Fprintf(b, "# TYPE framefs_image_cache_served_again_total counter\nframefs_image_cache_served_again_total %d\n", cs.ColdHits)
			fmt.Fprintf(b, "# TYPE framefs_image_cache_served_entries gauge\nframefs_image_cache_served_entries %d\n", cs.Demoted)
			fmt.Fprintf(b, "# TYPE framefs_decoder_sessions_open gauge\nframefs_decoder_sessions_open %d\n", ps.Open)
			fmt.Fprintf(b, "# TYPE framefs_decoder_frames_decoded_total counter\nframefs_decoder_frames_decoded_total %d\n", ps.Decoded)
			fmt.Fprintf(b, "# TYPE framefs_decoder_seeks_total counter\nframefs_decoder_seeks_total %d\n", ps.Seeks)
			fmt.Fprintf(b, "# TYPE framefs_picture_cache_bytes gauge\nframefs_picture_cache_bytes %d\n", ps.PictureBytes)
			fmt.Fprintf(b, "# TYPE framefs_picture_cache_hits_total counter\nframefs_picture_cache_hits_total %d\n", ps.PictureHits)
			fmt.Fprintf(b, "# TYPE framefs_c_heap_trims_total counter\nframefs_c_heap_trims_total %d\n", decoder.MemoryTrims())
			writeGoMemoryStats(b)
			writeFillStats(b, frames.FillStats())
			if disk != nil {
				hashed, mismatched := frames.DigestChecks()
				writeDiskCacheStats(b, disk.Stats(), frames.StoreHits(), hashed, mismatched)
			}
			if s3, ok := store.(*storage.S3); ok {
				writeS3Stats(b, s3.Stats())
			}
		},
	}
	abs := src
	if !storage.IsS3URI(src) {
		abs, _ = filepath.Abs(src)
	}
	var srv *fusefs.Server
	if isTbl {
		tbl, err := table.Open(ctx, store, tableOptions())
		if err != nil {
			return err
		}
		srv, err = fusefs.MountTable(mnt, abs, tbl, frames, opts)
		if err != nil {
			return err
		}
	} else {
		srv, err = fusefs.MountWarehouse(mnt, abs, table.NewWarehouse(store, tableOptions()), frames, opts)
		if err != nil {
			return err
		}
	}
	slog.Info("mounted", "source", abs, "mountpoint", mnt)
	heapProfilesAt(ctx, os.Getenv("FRAMEFS_HEAPPROFILE"), os.Getenv("FRAMEFS_HEAPPROFILE_AT"))
	done := make(chan struct{})
	go func() { srv.Wait(); close(done) }()
	select {
	case <-done: // unmounted from outside (umount, fusermount3 -u)
	case <-ctx.Done():
		// SIGINT/SIGTERM: unmount, lazily if files are still open.
		if err := srv.Unmount(); err != nil {
			slog.Warn("unmount busy, detaching lazily", "mountpoint", mnt, "err", err)
			if exec.Command("fusermount3", "-u", "-z", mnt).Run() != nil {
				syscall.Unmount(mnt, syscall.MNT_DETACH)
			}
		}
		<-done
	}
	// FRAMEFS_HEAPPROFILE=FILE writes what the mount's memory holds when it
	// is unmounted, its caches and node tree still reachable (for
	// developers; see README, Development).
	if path := os.Getenv("FRAMEFS_HEAPPROFILE"); path != "" {
		if err := writeHeapProfile(path); err != nil {
			slog.Warn("heap profile", "file", path, "err", err)
		}
	}
	runtime.KeepAlive(srv)
	return nil
}

// heapProfilesAt writes heap profiles while the mount runs: with
// at = "2m,5m,10m", path.2m, path.5m and path.10m that long after it
// was mounted, to diff what grows with time (go tool pprof -base).
func heapProfilesAt(ctx context.Context, path, at string) {
	if path == "" || at == "" {
		return
	}
	// Finer samples than the default one per 512 KiB: the objects that
	// grow (nodes, records) are small and many.
	runtime.MemProfileRate = 16 << 10
	start := time.Now()
	for _, s := range strings.Split(at, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			slog.Warn("FRAMEFS_HEAPPROFILE_AT: want durations like 2m,5m", "value", s, "err", err)
			continue
		}
		name := path + "." + strings.TrimSpace(s)
		go func() {
			select {
			case <-ctx.Done():
			case <-time.After(time.Until(start.Add(d))):
				if err := writeHeapProfile(name); err != nil {
					slog.Warn("heap profile", "file", name, "err", err)
				}
			}
		}()
	}
}

// writeHeapProfile writes a heap profile of the live objects to path.
func writeHeapProfile(path string) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC() // the profile shows the objects live at the last collection
	if err := pprof.WriteHeapProfile(out); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	// Beside it, where the Go runtime's memory is (heap objects, free
	// heap, stacks, runtime metadata), to compare with the process's
	// RssAnon: the rest is memory of C libraries (FFmpeg).
	var b strings.Builder
	m := goMemoryClasses()
	for _, name := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "%s %d\n", name, m[name])
	}
	return os.WriteFile(path+".memory.txt", []byte(b.String()), 0o644)
}

// goMemoryClasses returns the Go runtime's memory by class
// (/memory/classes/..., in bytes).
func goMemoryClasses() map[string]uint64 {
	var samples []metrics.Sample
	for _, d := range metrics.All() {
		if strings.HasPrefix(d.Name, "/memory/classes/") {
			samples = append(samples, metrics.Sample{Name: d.Name})
		}
	}
	metrics.Read(samples)
	classes := make(map[string]uint64, len(samples))
	for _, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			classes[s.Name] = s.Value.Uint64()
		}
	}
	return classes
}

// goHeapHeadroom is the Go memory a mount needs besides its image cache:
// nodes of the files the kernel holds, snapshot trees, rows, I/O buffers,
// commits of the write directories.
const goHeapHeadroom = 128 << 20

// limitGoMemory sets a soft limit on the Go heap (unless GOMEMLIMIT does):
// the image cache plus headroom. gcpace already keeps the collector's
// headroom to the part of the heap that is not cache; the limit is the
// backstop when that part grows (a burst of listings or a large commit):
// near it the collector runs more often rather than let the heap double.
func limitGoMemory(cacheBytes int64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(max(cacheBytes, 0) + goHeapHeadroom)
}

// stagingDirFor picks the local directory for the write directories'
// staged files; a read-only mount has none.
func stagingDirFor(flag string, readOnly bool) (string, error) {
	if readOnly {
		return "", nil
	}
	dir := flag
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no directory to stage dropped files in (%v): give --staging-dir or mount with -o ro", err)
		}
		dir = filepath.Join(base, "framefs", "staging")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("staging directory: %w", err)
	}
	return filepath.Abs(dir)
}

// daemonize starts the mount in a new session, with its log in a file,
// and returns once the mount is up (or failed, with the child's log).
func daemonize(cmd *cobra.Command, args []string) error {
	var childArgs []string
	for _, a := range os.Args[1:] {
		if a != "--daemon" && a != "--daemon=true" {
			childArgs = append(childArgs, a)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	mnt, err := filepath.Abs(args[1])
	if err != nil {
		return err
	}
	logPath := filepath.Join(os.TempDir(), "framefs-"+strings.ReplaceAll(strings.Trim(mnt, "/"), "/", "_")+".log")
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	child := exec.Command(self, childArgs...)
	child.Stdout, child.Stderr = logFile, logFile
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := child.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	deadline := time.After(30 * time.Second)
	for {
		if isMounted(mnt) {
			fmt.Fprintf(cmd.OutOrStdout(), "mounted %s (pid %d, log %s)\n", mnt, child.Process.Pid, logPath)
			return nil
		}
		select {
		case err := <-exited:
			msg, _ := os.ReadFile(logPath)
			return fmt.Errorf("mount failed (%v): %s", err, strings.TrimSpace(string(msg)))
		case <-deadline:
			child.Process.Kill()
			return fmt.Errorf("the mount did not appear within 30 s (log: %s)", logPath)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// isMounted reports whether dir is a FUSE mount point (from /proc/mounts).
func isMounted(dir string) bool {
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 3 && fields[1] == dir && strings.HasPrefix(fields[2], "fuse") {
			return true
		}
	}
	return false
}
