package ingest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/framefs/framefs/table"
)

// kind is what a staged entry is, judged by its name.
type kind int

const (
	kindIgnored kind = iota // hidden, temporary or ours: not looked at
	kindVideo
	kindSidecar
	kindImages  // a folder of images
	kindDataset // a LeRobot dataset folder (holding meta/info.json)
	kindSchema  // schema.json of a table without snapshots
	kindUnknown
)

// VideoExtensions are the video files a staging directory accepts.
var VideoExtensions = []string{".mp4", ".m4v", ".mov", ".mkv", ".webm"}

// ImageExtensions are the image files an image folder may hold.
var ImageExtensions = []string{".jpg", ".jpeg", ".png", ".bmp", ".ppm", ".pgm", ".tif", ".tiff", ".webp"}

// temporarySuffixes mark files that downloaders, editors and copy tools
// are still writing; they are left alone until renamed.
var temporarySuffixes = []string{".part", ".partial", ".crdownload", ".download", ".tmp", ".temp", ".swp", "~"}

// ErrorSuffix names the file that explains why a group did not commit.
const ErrorSuffix = ".error"

// SchemaFile, dropped in before a table's first commit, gives its columns.
const SchemaFile = "schema.json"

func hasExt(name string, exts []string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	for _, e := range exts {
		if ext == e {
			return true
		}
	}
	return false
}

// classify tells what a directory entry is and the group (base name) it
// belongs to.
func classify(name string, isDir bool) (kind, string) {
	if strings.HasPrefix(name, ".") || strings.HasSuffix(name, ErrorSuffix) {
		return kindIgnored, ""
	}
	lower := strings.ToLower(name)
	for _, s := range temporarySuffixes {
		if strings.HasSuffix(lower, s) {
			return kindIgnored, ""
		}
	}
	base := strings.TrimSuffix(name, filepath.Ext(name))
	switch {
	case isDir:
		return kindImages, name
	case name == SchemaFile:
		return kindSchema, ""
	case hasExt(name, VideoExtensions):
		return kindVideo, base
	case hasExt(name, table.SidecarExtensions):
		return kindSidecar, base
	}
	return kindUnknown, name
}

// ListImages returns the images of a folder in name order. Hidden files
// are skipped; any other file that is not an image, and any subfolder,
// is an error rather than silently left out.
func ListImages(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if e.IsDir() {
			return nil, fmt.Errorf("%s: image folders hold images only, not folders (%s)", filepath.Base(dir), e.Name())
		}
		if !hasExt(e.Name(), ImageExtensions) {
			return nil, fmt.Errorf("%s: %s is not an image (want %s)", filepath.Base(dir), e.Name(), strings.Join(ImageExtensions, ", "))
		}
		out = append(out, filepath.Join(dir, e.Name()))
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no images", filepath.Base(dir))
	}
	return out, nil
}
