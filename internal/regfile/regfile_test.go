package regfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// promptly runs fn and fails the test if it takes 10 s; a FIFO at fifo is
// then opened for writing, so that a reader stuck in open returns.
func promptly(t *testing.T, fifo string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Error("blocked for 10 s")
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		<-done
	}
}

// TestOpen: a regular file opens, through links too; a FIFO, a device, a
// socket and a folder are refused at once with an error naming them.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("data"), 0o600)
	link := filepath.Join(dir, "link")
	os.Symlink("file", link)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	fifoLink := filepath.Join(dir, "fifo-link")
	os.Symlink(fifo, fifoLink)
	sock := filepath.Join(dir, "sock")
	if err := syscall.Mknod(sock, syscall.S_IFSOCK|0o600, 0); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{file, link} {
		f, err := Open(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		f.Close()
	}
	for p, kind := range map[string]string{fifo: "FIFO", fifoLink: "FIFO", "/dev/zero": "character device", sock: "socket", dir: "directory"} {
		promptly(t, fifo, func() {
			f, err := Open(p)
			if err == nil {
				f.Close()
			}
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), p+" is a "+kind) {
				t.Errorf("Open(%s): %v, want a refusal naming the %s", p, err, kind)
			}
		})
	}
}

// TestReadFile: files up to the limit are read, larger ones refused before
// they are read.
func TestReadFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("12345"), 0o600)
	if b, err := ReadFile(p, 5); err != nil || string(b) != "12345" {
		t.Fatalf("at the limit: %q %v", b, err)
	}
	var tooLarge *TooLargeError
	if _, err := ReadFile(p, 4); !errors.As(err, &tooLarge) || tooLarge.Size != 5 || !strings.Contains(err.Error(), p) {
		t.Fatalf("over the limit: %v", err)
	}
	if _, err := ReadFile("/dev/zero", 1<<20); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("/dev/zero: %v", err)
	}
}

// TestDir: entries of a Dir are never reached through a link, neither a
// link at a file's name nor one at a folder's; Sub with create replaces
// a link with a folder and leaves what it pointed to alone.
func TestDir(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o600)
	d, err := OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	os.Symlink(outside, filepath.Join(root, "ab"))
	if _, err := d.Sub("ab", false); !errors.Is(err, ErrNotFolder) {
		t.Fatalf("Sub of a link: %v", err)
	}
	sub, err := d.Sub("ab", true)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if st, err := os.Lstat(filepath.Join(root, "ab")); err != nil || !st.IsDir() {
		t.Fatalf("the link was not replaced by a folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "secret")); err != nil {
		t.Fatalf("the link's target was touched: %v", err)
	}
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "ab", "link"))
	if _, err := sub.Open("link"); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("Open of a link: %v", err)
	}
	if _, err := sub.Stat("link"); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("Stat of a link: %v", err)
	}
	fifo := filepath.Join(root, "ab", "fifo")
	syscall.Mkfifo(fifo, 0o600)
	promptly(t, fifo, func() {
		if _, err := sub.Open("fifo"); !errors.Is(err, ErrNotRegular) {
			t.Errorf("Open of a FIFO: %v", err)
		}
	})
	if err := sub.Touch("link"); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Create("link"); err == nil {
		t.Fatal("Create over a link succeeded")
	}
	f, err := sub.Create("new")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("hello")
	f.Close()
	if err := sub.Rename("new", sub, "link"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(outside, "secret")); err != nil || string(b) != "x" {
		t.Fatalf("a rename over a link wrote through it: %q %v", b, err)
	}
	g, err := sub.Open("link")
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	for _, name := range []string{"link", "fifo", "missing"} {
		if err := sub.Remove(name); err != nil {
			t.Fatal(err)
		}
	}
	if entries, err := sub.Entries(); err != nil || len(entries) != 0 {
		t.Fatalf("after removing everything: %v %v", entries, err)
	}
}
