package fusefs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/framefs/framefs/query"
	"github.com/framefs/framefs/table"
)

// TestTrainingDataset runs the README's training Dataset over a BMP view
// and an NPY view at one scaled size, through a real mount: both load
// every frame as a uint8 (3, H, W) tensor at the view's size, the two
// views give equal tensors for every frame, and the example as a program
// prints its batches' shapes.
func TestTrainingDataset(t *testing.T) {
	py := requireTorchvision(t)
	example := readmeExample(t, "train-dataset", 20)
	f := newFixture(t, Options{})
	ctx := context.Background()
	for name, format := range map[string]string{"train": "bmp", "trainn": "npy"} {
		v := table.View{Name: name, Where: "TRUE", Image: &table.ViewImage{Format: format, Width: 64, Height: 48}}
		if _, err := query.CreateView(ctx, f.tbl, v); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(t.TempDir(), "train.py")
	if err := os.WriteFile(script, []byte(example), 0o644); err != nil {
		t.Fatal(err)
	}
	bmp, npy := f.path("robot", "views", "train"), f.path("robot", "views", "trainn")
	out, err := exec.Command(py, script, npy).CombinedOutput()
	if err != nil || strings.Count(string(out), "(32, 3, 48, 64)") != 2 || !strings.Contains(string(out), "(6, 3, 48, 64)") {
		t.Fatalf("README example over the NPY view: %v\n%s", err, out)
	}
	const check = `
import importlib.util, os, sys
import torch
from torchvision.datasets import DatasetFolder
spec = importlib.util.spec_from_file_location("train", sys.argv[1])
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
bmp, npy = (DatasetFolder(root, loader=mod.load, extensions=(".npy", ".bmp")) for root in sys.argv[2:4])
names = lambda ds, root: [os.path.splitext(os.path.relpath(p, root))[0] for p, _ in ds.samples]
assert names(bmp, sys.argv[2]) == names(npy, sys.argv[3]) and len(bmp) == 70, (len(bmp), len(npy))
assert bmp.classes == ["task=pick", "task=place"], bmp.classes
for (a, ca), (b, cb), (p, _) in zip(bmp, npy, bmp.samples):
    assert a.dtype == torch.uint8 and a.shape == (3, 48, 64), (p, a.dtype, a.shape)
    assert ca == cb and torch.equal(a, b), p
print(len(bmp), "frames")
`
	out, err = exec.Command(py, "-c", check, script, bmp, npy).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "70 frames") {
		t.Fatalf("the BMP and NPY views through the README's Dataset: %v\n%s", err, out)
	}
}

// readmeExample returns the Python example that follows <!-- marker --> in
// the README, which must be at most maxLines long.
func readmeExample(t *testing.T, marker string, maxLines int) string {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- " + regexp.QuoteMeta(marker) + " -->\n```python\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatalf("README.md has no Python example after <!-- %s -->", marker)
	}
	example := string(m[1])
	if n := strings.Count(example, "\n"); n > maxLines {
		t.Errorf("the README's example after <!-- %s --> is %d lines long, want at most %d", marker, n, maxLines)
	}
	return example
}
