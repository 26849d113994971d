package fusefs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/framefs/framefs/internal/testenv"
	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/mounttree"
)

// imageFolderCheck loads a snapshot folder with torchvision's ImageFolder
// and a 2-worker DataLoader, and compares every tensor with the same image
// decoded from a reference copy; it also opens random frames with PIL.
const imageFolderCheck = `
import os, random, sys
import numpy as np
import torch, torchvision
from PIL import Image
root, ref = sys.argv[1], sys.argv[2]
tf = torchvision.transforms.PILToTensor()
ds = torchvision.datasets.ImageFolder(root, transform=tf)
ref_ds = torchvision.datasets.ImageFolder(ref, transform=tf)
assert ds.classes == ref_ds.classes, (ds.classes, ref_ds.classes)
assert [os.path.relpath(p, root) for p, _ in ds.samples] == [os.path.relpath(p, ref) for p, _ in ref_ds.samples]
loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2)
n = 0
for (img, cls), (want, wcls) in zip(loader, ref_ds):
    assert cls == wcls and torch.equal(img, want), ds.samples[n][0]
    n += 1
paths = [p for p, _ in ds.samples]
for p in random.Random(1).sample(paths, 10):
    with Image.open(p) as im:
        im.load()
        assert im.size[0] > 0
print(n, len(ds.classes))
`

// requireTorchvision returns Debian's Python with torchvision, and skips
// the test without it (fails in CI, where it is required).
func requireTorchvision(t *testing.T) string {
	t.Helper()
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import torchvision").Run(); err != nil {
		testenv.Missing(t, testenv.Torchvision, fmt.Sprintf("%s cannot import torchvision (%v): install python3-torchvision (make deps)", py, err))
	}
	return py
}

func TestImageFolder(t *testing.T) {
	py := requireTorchvision(t)
	f := newFixture(t, Options{})
	ctx := context.Background()
	if _, err := f.tbl.CreateTag(ctx, "train", 1); err != nil {
		t.Fatal(err)
	}
	// Reference copy: the same frames written by the decoder directly.
	ref := t.TempDir()
	snap, _ := f.tbl.Snapshot(ctx, 1)
	eps, _ := f.tbl.Episodes(ctx, snap)
	total := 0
	for _, e := range eps {
		r := e.Videos["video"]
		v, err := f.tbl.OpenVideo(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		dv := media.Video{Key: media.VideoKey{Object: "ref/" + r.Pack, Offset: r.Offset, Length: r.Length}, R: v.Payload, Size: r.Length, Index: v.Index}
		dir := filepath.Join(ref, "task="+e.Partition["task"], e.Episode)
		os.MkdirAll(dir, 0o755)
		for i := int64(0); i < e.Rows; i++ {
			img, err := f.frames.Frame(ctx, dv, int(r.FirstFrame+i), media.ImageSetting{Format: media.FormatJPEG, JPEGQuality: 90})
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, mounttree.FrameName(i, e.Rows, "jpg")), img, 0o644)
			total++
		}
		v.Close()
	}
	// Partitions are the classes at the tag's root; episodes one level down.
	out, err := exec.Command(py, "-c", imageFolderCheck, f.path("robot", "tags", "train"), ref).CombinedOutput()
	if err != nil {
		t.Fatalf("ImageFolder over the mount: %v\n%s", err, out)
	}
	fields := strings.Fields(string(out))
	if len(fields) < 2 || fields[len(fields)-2] != itoa(total) {
		t.Fatalf("ImageFolder read %q, the table has %d frames", out, total)
	}
}

func itoa(n int) string { return fmt.Sprint(n) }
