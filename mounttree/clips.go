package mounttree

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/framefs/framefs/query"
	"github.com/framefs/framefs/table"
)

// A clip view (a view with a window) shows, in each episode folder, one
// folder per window of frames that all match:
//
//	[PART=VALUE/]EPISODE/clip-SSSSSS/00.jpg ...   the window starting at frame SSSSSS,
//	                                              its frames in window order
//	[PART=VALUE/]EPISODE/clip-SSSSSS/clip.json    episode, start, frame_indices, rows
//	[PART=VALUE/]EPISODE/video.mp4, frames.*      as in a plain view; the rows files
//	                                              hold the rows in at least one clip
//	clips.jsonl                                   at the view's root: one line per clip
//	clips.txt                                     at the view's root: MMAction2's raw-frame
//	                                              list, "PATH FRAMES LABEL" per clip
//
// A clip's frame is the same file (inode, bytes, caches) as that frame
// under snapshots/: a frame in two overlapping windows is one file shown
// twice, decoded once. With several video columns a clip folder holds a
// folder per column.

// Names of the files of clip views.
const (
	ClipJSON   = "clip.json"
	ClipsJSONL = "clips.jsonl"
	ClipsTxt   = "clips.txt"
)

// clipWindow is one clip of an episode.
type clipWindow struct {
	start int64
	// frames are the episode's rows the clip holds, in window order.
	frames []int64
}

// clipName is the folder name of the clip starting at start of an
// episode of rows rows: zero-padded so that name order is start order.
func clipName(start, rows int64) string {
	width := max(6, len(strconv.FormatInt(rows-1, 10)))
	return fmt.Sprintf("clip-%0*d", width, start)
}

// parseClipName is the inverse of clipName.
func parseClipName(name string, rows int64) (int64, bool) {
	digits, ok := strings.CutPrefix(name, "clip-")
	if !ok {
		return 0, false
	}
	start, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || start < 0 || clipName(start, rows) != name {
		return 0, false
	}
	return start, true
}

// clipFrameName is the name of the j-th frame of a window of length
// frames: zero-padded to the window length's width, at least 2 digits.
func clipFrameName(j, length int, ext string) string {
	return paddedName(int64(j), clipFrameWidth(length), ext)
}

// clipFrameWidth is the digits of the frame names of a window of length
// frames.
func clipFrameWidth(length int) int { return max(2, len(strconv.Itoa(length-1))) }

// parseClipFrameName is the inverse of clipFrameName.
func parseClipFrameName(name string, length int, ext string) (int, bool) {
	digits, ok := strings.CutSuffix(name, "."+ext)
	if !ok {
		return 0, false
	}
	j, err := strconv.Atoi(digits)
	if err != nil || j < 0 || j >= length || clipFrameName(j, length, ext) != name {
		return 0, false
	}
	return j, true
}

// clipRecord is a line of clips.jsonl.
type clipRecord struct {
	Path         string  `json:"path"`
	Episode      string  `json:"episode"`
	Start        int64   `json:"start"`
	FrameIndices []int64 `json:"frame_indices"`
	// top is the clip's top group-by folder; label, its class in
	// clips.txt, is the rank of top among the view's (0 without
	// group-by).
	top   string
	label int
	// columns are the folders of the clip's video columns, when there are
	// several.
	columns []string
}

// clipIndex holds a clip view's clips for its root files, which are
// rendered on first use.
type clipIndex struct {
	records []clipRecord
	once    sync.Once
	jsonl   []byte
	txt     []byte
}

// bytes estimates the memory of x: its records and, once rendered, its
// files.
func (x *clipIndex) bytes() int64 {
	n := int64(cap(x.records)) * int64(unsafe.Sizeof(clipRecord{}))
	for _, r := range x.records {
		n += int64(len(r.Path)+len(r.Episode)+len(r.top)) + 8*int64(cap(r.FrameIndices))
	}
	return n + int64(cap(x.jsonl)+cap(x.txt))
}

func (x *clipIndex) render() {
	x.once.Do(func() {
		var jb, tb bytes.Buffer
		enc := json.NewEncoder(&jb)
		enc.SetEscapeHTML(false)
		for _, r := range x.records {
			enc.Encode(r)
			paths := []string{r.Path}
			if len(r.columns) > 0 {
				paths = paths[:0]
				for _, c := range r.columns {
					paths = append(paths, r.Path+"/"+c)
				}
			}
			for _, p := range paths {
				fmt.Fprintf(&tb, "%s %d %d\n", p, len(r.FrameIndices), r.label)
			}
		}
		x.jsonl, x.txt = jb.Bytes(), tb.Bytes()
	})
}

// file returns the content of clips.jsonl or clips.txt.
func (x *clipIndex) file(name string) ([]byte, bool) {
	x.render()
	switch name {
	case ClipsJSONL:
		return x.jsonl, true
	case ClipsTxt:
		return x.txt, true
	}
	return nil, false
}

// buildClipTree lays out a clip view: episodes under partition (or
// group-by) folders as in a plain view, each holding its clips' folders.
func buildClipTree(records *episodeRecords, s *table.Schema, cs *query.ClipSelection, groupBy []string) (builtIndex, *clipIndex) {
	b := newIndexBuilder()
	idx := &clipIndex{}
	w := cs.Window
	tops := map[string]bool{} // top group-by folders, for clips.txt labels
	var d dedupe
	for i := range cs.Episodes {
		ce := &cs.Episodes[i]
		e := &ce.Entry
		for _, part := range ce.Parts {
			folders := viewFolders(s, e, part.Group, groupBy)
			if len(groupBy) > 0 {
				tops[folders[0]] = true
			}
			// The episode folder shows the rows files and videos; its
			// frames are in the clip folders.
			b.add(folders, shownEpisode{e: records.record(e, &d), episodePart: episodePart{rows: part.Ordinals(w), clips: part.Starts}})
			for _, start := range part.Starts {
				name := clipName(start, e.Rows)
				rec := clipRecord{Path: strings.Join(append(slices.Clone(folders), e.Episode, name), "/"),
					Episode: e.Episode, Start: start, FrameIndices: w.Frames(start)}
				if len(groupBy) > 0 {
					rec.top = folders[0]
				}
				if len(s.VideoColumns) > 1 {
					rec.columns = s.VideoColumns
				}
				idx.records = append(idx.records, rec)
			}
		}
	}
	// Labels are the ranks of the top group-by folders in name order.
	labels := sortedKeys(tops)
	for i := range idx.records {
		if r := &idx.records[i]; r.top != "" {
			r.label, _ = slices.BinarySearch(labels, r.top)
		}
	}
	// Clips in the order find and ls show their folders.
	slices.SortFunc(idx.records, func(a, b clipRecord) int {
		if c := strings.Compare(a.Path[:strings.LastIndexByte(a.Path, '/')], b.Path[:strings.LastIndexByte(b.Path, '/')]); c != 0 {
			return c
		}
		return int(a.Start - b.Start)
	})
	return b.build(), idx
}
