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
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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

// mountFlags are the command line of `framefs mount`: its options, and
// how the command runs.
type mountFlags struct {
	// options is -o, applied over the flags.
	options    string
	foreground bool
	daemon     bool
	mountOptions
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

MNT/.stats shows the mount's counters in the Prometheus text format;
--metrics-addr serves the same to Prometheus over HTTP.

` + mountOptionsHelp(),
		Example: `  framefs mount data/warehouse /mnt/frames
  framefs mount data/warehouse/robot /mnt/robot --image-format bmp --cache-bytes 2GiB --daemon
  mount -t fuse.framefs data/warehouse /mnt/frames -o ro,allow_other,cache_bytes=2GiB`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := applyMountOptions(cmd.Flags(), f.options); err != nil {
				return err
			}
			if f.daemon && os.Getenv(daemonizedEnv) == "" {
				return daemonize(cmd, args)
			}
			return runMount(cmd, stores, args[0], args[1], f.mountOptions)
		},
	}
	f.register(cmd.Flags())
	return cmd
}

// register makes the flags of the mount command.
func (f *mountFlags) register(fl *pflag.FlagSet) {
	fl.StringVarP(&f.options, "options", "o", "", "comma-separated mount options: ro, allow_other, and NAME=VALUE for the others (cache_bytes=2GiB, ...)")
	f.mountOptions.bind(fl)
	fl.BoolVar(&f.foreground, "foreground", true, "stay in the foreground until unmounted (default)")
	fl.BoolVar(&f.daemon, "daemon", false, "detach once mounted")
}

// imageChoice maps the image flags onto the mount's image options: each
// one not given keeps every table's own setting. Given values are checked
// here, before anything is mounted.
func imageChoice(o mountOptions) (fusefs.ImageChoice, error) {
	c := fusefs.ImageChoice{ImageOptions: table.ImageOptions{Format: o.ImageFormat, JPEGQuality: o.JPEGQuality}}
	if o.Scale != "" {
		w, h, ok := strings.Cut(o.Scale, "x")
		var err error
		if c.Width, err = strconv.Atoi(w); !ok || err != nil {
			return c, fmt.Errorf("--scale %q: want WxH, e.g. 224x224", o.Scale)
		}
		if c.Height, err = strconv.Atoi(h); err != nil {
			return c, fmt.Errorf("--scale %q: want WxH, e.g. 224x224", o.Scale)
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

func runMount(cmd *cobra.Command, stores *storeFlags, src, mnt string, o mountOptions) error {
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
	image, err := imageChoice(o)
	if err != nil {
		return err
	}
	// Every metric goes into one registry: .stats shows it, and so does
	// --metrics-addr.
	registry := prometheus.NewRegistry()
	var metricsSrv *metricsServer
	if o.MetricsAddr != "" {
		if metricsSrv, err = listenMetrics(o.MetricsAddr, registry); err != nil {
			return err
		}
		defer metricsSrv.stop()
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
	// 0 means none here; in serving's options it means the default, and
	// negative means none.
	pictures, cacheBytes := int64(o.PictureCacheBytes), int64(o.CacheBytes)
	if pictures == 0 {
		pictures = -1
	}
	if cacheBytes == 0 {
		cacheBytes = -1
	}
	// The kernel's page cache keeps the frames it was served, so the
	// memory cache keeps them only in room that frames still to be asked
	// for do not need (DemoteServed).
	frameOpts := serving.Options{CacheBytes: cacheBytes, MaxOpenSessions: o.MaxSessions, PictureCacheBytes: pictures, DemoteServed: true}
	var disk *diskcache.Cache
	if o.CacheDir != "" {
		if disk, err = diskcache.Open(diskcache.Options{Dir: o.CacheDir, MaxBytes: int64(o.CacheDirBytes)}); err != nil {
			return fmt.Errorf("--cache-dir: %w", err)
		}
		defer disk.Close()
		frameOpts.Store = disk
	} else if disk, err = openSpillDir(o.SpillDir, int64(o.SpillDirBytes), cacheBytes > 0); err != nil {
		return err
	} else if disk != nil {
		defer disk.Close()
		frameOpts.Spill = disk
	}
	frames := serving.New(decoder.Codec{}, frameOpts)
	defer frames.Close()
	// The image cache and the tables' metadata caches are most of the
	// live Go heap: the collector's headroom is worked out from the rest
	// of it, and the Go heap gets what FFmpeg leaves of the mount's memory
	// budget (internal/gcpace). The metadata caches are counted once the
	// mount is up.
	var mounted atomic.Pointer[fusefs.Server]
	paceCtx, stopPacing := context.WithCancel(ctx)
	defer stopPacing()
	go gcpace.Run(paceCtx, gcpace.Options{
		Cached: func() int64 {
			n := frames.CacheStats().Bytes
			if srv := mounted.Load(); srv != nil {
				n += srv.MetadataCacheBytes()
			}
			return n
		},
		Budget: memoryBudget(o.CacheBytes, o.PictureCacheBytes),
		Yield:  func(short int64) { yieldImageCache(frames, short) },
	})
	if err := registerServingMetrics(registry, frames, disk, store); err != nil {
		return err
	}
	stagingDir, err := stagingDirFor(o.StagingDir, o.ReadOnly)
	if err != nil {
		return err
	}
	opts := fusefs.Options{
		Image: image, Refresh: o.Refresh, AllowOther: o.AllowOther, ReadOnly: o.ReadOnly,
		StagingDir: stagingDir, Settle: o.Settle, StagingLimit: int64(o.StagingLimit), Metrics: registry,
		EncodeImages: func(ctx context.Context, images []string, out string) error {
			return decoder.EncodeImagesToVideo(ctx, images, out, decoder.VideoEncodeOptions{})
		},
		Debug: slog.Default().Enabled(ctx, slog.LevelDebug), // --debug: every FUSE request too
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
	mounted.Store(srv)
	slog.Info("mounted", "source", abs, "mountpoint", mnt)
	if metricsSrv != nil {
		metricsSrv.start()
	}
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
	if metricsSrv != nil {
		metricsSrv.stop() // its metrics are those of the mount, now gone
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

// yieldImageCache sets the image cache's bound for the bytes the Go heap
// is short (see gcpace.CacheBound). What the cache gives way of the
// kernel's page cache has too, if it was served.
func yieldImageCache(frames *serving.Server, short int64) {
	bound, configured := frames.ImageCacheBytes()
	if b := gcpace.CacheBound(bound, configured, short); b != bound {
		frames.SetImageCacheBytes(b)
	}
}

// memoryHeadroom is the anonymous memory a mount needs besides its
// caches: decoder sessions, nodes of the files the kernel holds, snapshot
// trees, rows, I/O buffers, commits of the write directories, and the
// collector's headroom. The documented bound is the caches plus 150 MB;
// the rest of that is the slack of sampling the memory once a second.
const memoryHeadroom = 128 << 20

// memoryBudget is the anonymous memory a mount aims to stay within: its
// configured caches (image and picture) plus memoryHeadroom.
func memoryBudget(cacheBytes, pictureCacheBytes byteSize) int64 {
	return int64(cacheBytes) + int64(pictureCacheBytes) + memoryHeadroom
}

// openSpillDir opens the spill directory of flag (see serving/spill.go):
// none with "off" or without an image cache to spill from. The default
// one, under the user's cache directory, is skipped with a warning when it
// cannot be had: a mount does not need it to work.
func openSpillDir(flag string, maxBytes int64, imageCache bool) (*diskcache.Cache, error) {
	if flag == "off" || flag == "none" || !imageCache {
		return nil, nil
	}
	dir := flag
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			slog.Warn("no spill directory: frames the image cache cannot hold are decoded again", "err", err)
			return nil, nil
		}
		dir = filepath.Join(base, "framefs", "spill")
	}
	c, err := diskcache.Open(diskcache.Options{Dir: dir, MaxBytes: maxBytes})
	switch {
	case err == nil:
		return c, nil
	case flag == "":
		slog.Warn("no spill directory: frames the image cache cannot hold are decoded again", "dir", dir, "err", err)
		return nil, nil
	default:
		return nil, fmt.Errorf("--spill-dir: %w", err)
	}
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

// daemonizedEnv marks the process that daemonize starts, which runs the
// same command line in the foreground.
const daemonizedEnv = "FRAMEFS_DAEMONIZED"

// daemonize starts the mount in a new session, with its log in a file,
// and returns once the mount is up (or failed, with the child's log).
func daemonize(cmd *cobra.Command, args []string) error {
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
	child := exec.Command(self, os.Args[1:]...)
	child.Env = append(os.Environ(), daemonizedEnv+"=1")
	child.Stdout, child.Stderr = logFile, logFile
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := child.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	deadline := time.After(30 * time.Second)
	for {
		if fusefs.IsMounted(mnt) {
			fmt.Fprintf(cmd.OutOrStdout(), "mounted %s (pid %d, log %s)\n", mnt, child.Process.Pid, logPath)
			return nil
		}
		select {
		case err := <-exited:
			msg, _ := os.ReadFile(logPath)
			return fmt.Errorf("mount failed (%v): %s", err, strings.TrimSpace(string(msg)))
		case <-deadline:
			// Killed, a child that did mount after all would leave a
			// dead mount behind.
			child.Process.Kill()
			<-exited
			if fusefs.IsMounted(mnt) {
				syscall.Unmount(mnt, syscall.MNT_DETACH)
			}
			return fmt.Errorf("the mount did not appear within 30 s (log: %s)", logPath)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
