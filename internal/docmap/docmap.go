// Package docmap checks the file map of a package's doc comment (the
// "# Files" section of doc.go, one "name.go  what it holds" line per file)
// against the package's directory, for the tests of packages that keep
// one: a file added, removed or renamed without its line fails a test.
//
// The package holds test support only; nothing outside tests imports it.
package docmap

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var fileLine = regexp.MustCompile(`^//\t(\S+\.go)\s`)

// Check compares the files doc.go in dir lists with the non-test Go files
// of dir.
func Check(t *testing.T, dir string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "doc.go"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	inFiles := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "// # ") {
			inFiles = line == "// # Files"
			continue
		}
		if m := fileLine.FindStringSubmatch(line); inFiles && m != nil {
			listed = append(listed, m[1])
		}
	}
	if len(listed) == 0 {
		t.Fatalf("%s/doc.go has no # Files section listing the package's files", dir)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, f := range files {
		if name := filepath.Base(f); !strings.HasSuffix(name, "_test.go") {
			have = append(have, name)
		}
	}
	for _, name := range have {
		if !slices.Contains(listed, name) {
			t.Errorf("%s/doc.go does not list %s", dir, name)
		}
	}
	for _, name := range listed {
		if !slices.Contains(have, name) {
			t.Errorf("%s/doc.go lists %s, which is not a file of the package", dir, name)
		}
	}
}
