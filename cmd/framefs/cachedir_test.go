package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/framefs/framefs/fusefs"
	"github.com/framefs/framefs/internal/mounttest"
	"github.com/framefs/framefs/internal/procstatus"
	"github.com/framefs/framefs/internal/testenv"
)

// startMount runs `framefs mount SRC MNT -o ro ARGS...` as a process until
// stop is called or the test ends, and returns its mount point.
func startMount(t *testing.T, src string, args ...string) (mnt string, daemon *exec.Cmd, stop func()) {
	t.Helper()
	mnt = t.TempDir()
	daemon = framefsCmd(t.Context(), append([]string{"mount", src, mnt, "-o", "ro"}, args...)...)
	var logs bytes.Buffer
	daemon.Stdout, daemon.Stderr = &logs, &logs
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		mounttest.StopDaemon(daemon, mnt, 20*time.Second)
		if logs.Len() > 0 {
			t.Logf("daemon log:\n%s", logs.Bytes())
		}
	}
	t.Cleanup(stop)
	for deadline := time.Now().Add(30 * time.Second); !fusefs.IsMounted(mnt); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) || daemon.ProcessState != nil {
			t.Fatalf("the mount did not appear within 30 s:\n%s", logs.Bytes())
		}
	}
	return mnt, daemon, stop
}

// readPromptly reads path within 20 s; if it takes longer the test fails
// and unblock is called, so that a read stuck in the daemon ends.
func readPromptly(t *testing.T, path string, unblock func()) []byte {
	t.Helper()
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		b, err := os.ReadFile(path)
		done <- result{b, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(20 * time.Second):
		t.Errorf("reading %s took more than 20 s", path)
		unblock()
		r = <-done
	}
	if r.err != nil {
		t.Errorf("read %s: %v", path, r.err)
	}
	return r.data
}

// peakRSS is a process's peak resident set, in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	n, err := procstatus.Bytes(pid, "VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// diskEntries finds the disk tier's entry files in dir by the frame
// ordinal their key names, for the video of the given SHA-256.
func diskEntries(t *testing.T, dir, sha string) map[int]string {
	t.Helper()
	out := map[int]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(p, ".ent") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil || len(data) < 20 {
			return nil
		}
		keyLen := int(binary.BigEndian.Uint32(data[4:]))
		// frame2/sha256:HEX/STREAM/ORDINAL/IDENTITY (serving's storeKey)
		parts := strings.SplitN(string(data[20:min(20+keyLen, len(data))]), "/", 5)
		if len(parts) == 5 && parts[0] == "frame2" && parts[1] == "sha256:"+sha {
			if ord, err := strconv.Atoi(parts[3]); err == nil {
				out[ord] = p
			}
		}
		return nil
	})
	return out
}

// TestCacheDirHostileEntries mounts with --cache-dir a directory where
// someone replaced frame 5's entry with a FIFO, frame 6's with a sparse
// 1 GiB file with a valid header and checksum, and frame 7's with a copy
// of frame 8's. The frames are read promptly and right, the daemon's peak
// memory does not grow by the sparse file's size, and the three entries
// are written anew.
func TestCacheDirHostileEntries(t *testing.T) {
	testenv.RequireFUSE(t)
	wh, cacheDir := t.TempDir(), t.TempDir()
	video := "../../testdata/video/h264_faststart.mp4"
	mustRun(t, "create", filepath.Join(wh, "robot"))
	mustRun(t, "ingest", filepath.Join(wh, "robot"), video)
	payload, err := os.ReadFile(video)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(payload)
	sha := hex.EncodeToString(sum[:])
	frame := func(mnt string, k int) string {
		return filepath.Join(mnt, "robot", "latest", "h264_faststart", fmt.Sprintf("%06d.jpg", k))
	}

	// A first mount fills the disk tier.
	mnt, _, stop := startMount(t, wh, "--cache-dir", cacheDir)
	want := map[int][]byte{}
	for _, k := range []int{5, 6, 7} {
		want[k] = readPromptly(t, frame(mnt, k), func() {})
	}
	stop()
	entries := diskEntries(t, cacheDir, sha)
	if entries[5] == "" || entries[6] == "" || entries[7] == "" || entries[8] == "" {
		t.Fatalf("the disk tier has no entries for frames 5 to 8: %v", entries)
	}
	fifo := entries[5]
	os.Remove(fifo)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	makeSparseEntry(t, entries[6], 1<<30)
	if data, err := os.ReadFile(entries[8]); err != nil || os.WriteFile(entries[7], data, 0o600) != nil {
		t.Fatalf("cannot copy frame 8's entry: %v", err)
	}

	mnt, daemon, _ := startMount(t, wh, "--cache-dir", cacheDir)
	// Frame 5 first: its fill would otherwise rewrite the FIFO before it
	// is read.
	got := readPromptly(t, frame(mnt, 5), func() {
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
	if !bytes.Equal(got, want[5]) {
		t.Error("frame 5 (a FIFO in the disk tier) read wrong")
	}
	before := peakRSS(t, daemon.Process.Pid)
	if got := readPromptly(t, frame(mnt, 6), func() {}); !bytes.Equal(got, want[6]) {
		t.Errorf("frame 6 (a sparse 1 GiB entry) read wrong: %d bytes", len(got))
	}
	after := peakRSS(t, daemon.Process.Pid)
	t.Logf("daemon peak RSS %.1f MiB before frame 6, %.1f MiB after", float64(before)/(1<<20), float64(after)/(1<<20))
	if after-before > 100<<20 {
		t.Errorf("reading frame 6 raised the daemon's peak RSS by %d MiB", (after-before)>>20)
	}
	if got := readPromptly(t, frame(mnt, 7), func() {}); !bytes.Equal(got, want[7]) {
		t.Error("frame 7 (frame 8's entry in its place) read wrong")
	}
	now := diskEntries(t, cacheDir, sha)
	for _, k := range []int{5, 6, 7} {
		if st, err := os.Lstat(entries[k]); err != nil || !st.Mode().IsRegular() || st.Size() > 1<<20 || now[k] != entries[k] {
			t.Errorf("frame %d's entry was not written anew: %v", k, err)
		}
	}
}

// makeSparseEntry turns the disk tier entry at path into one of the same
// key whose value is size zero bytes, with a valid header and checksum,
// without writing the zeros.
func makeSparseEntry(t *testing.T, path string, size int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	keyLen := int64(binary.BigEndian.Uint32(data[4:]))
	head := data[:20+keyLen]
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	crc := crc32.Update(0, castagnoli, head[20:])
	zeros := make([]byte, 1<<20)
	for left := size; left > 0; left -= int64(len(zeros)) {
		crc = crc32.Update(crc, castagnoli, zeros[:min(left, int64(len(zeros)))])
	}
	binary.BigEndian.PutUint64(head[8:], uint64(size))
	binary.BigEndian.PutUint32(head[16:], crc)
	if err := os.WriteFile(path, head, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(len(head))+size); err != nil {
		t.Fatal(err)
	}
}
