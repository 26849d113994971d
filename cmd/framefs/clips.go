package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/framefs/framefs/query"
	"github.com/framefs/framefs/table"
)

// windowFlags are the clip window flags of `view create` and `ls`; they
// map onto table.Window.
type windowFlags struct {
	flags *pflag.FlagSet
	// length, skip and hop are --window, --frame-skip and --hop.
	length, skip, hop int64
}

func (w *windowFlags) add(f *pflag.FlagSet) {
	w.flags = f
	f.Int64Var(&w.length, "window", 0, "cut clips of N frames (a clip view; ls lists the clips)")
	f.Int64Var(&w.skip, "frame-skip", 0, "frames skipped between two frames of a clip (the stride is S+1)")
	f.Int64Var(&w.hop, "hop", 0, "frames between the starts of consecutive clips (default: the window length)")
}

// window returns the window the flags ask for, nil without --window.
func (w *windowFlags) window() (*table.Window, error) {
	if !w.flags.Changed("window") {
		if w.flags.Changed("frame-skip") || w.flags.Changed("hop") {
			return nil, fmt.Errorf("--frame-skip and --hop shape clip windows: give the clip length with --window N too")
		}
		return nil, nil
	}
	win := table.Window{Length: w.length, FrameSkip: w.skip, Hop: w.hop}
	if !w.flags.Changed("hop") {
		win.Hop = w.length // clips side by side, each frame in one clip
	}
	if err := win.Validate(); err != nil {
		return nil, err
	}
	return &win, nil
}

// describeWindow says what a window is in a line of text.
func describeWindow(w *table.Window) string {
	if w == nil {
		return ""
	}
	return fmt.Sprintf("window=%d,skip=%d,hop=%d", w.Length, w.FrameSkip, w.Hop)
}

// countClips reports how many clips a view shows now.
func countClips(ctx context.Context, tbl *table.Table, v table.View) (*query.ClipSelection, error) {
	snap, err := tbl.ResolveView(ctx, v)
	if err != nil {
		return nil, err
	}
	f, err := query.CompileFilter(ctx, tbl, snap, v.Where)
	if err != nil {
		return nil, err
	}
	return query.SelectClips(ctx, tbl, snap, f, *v.Window, query.SelectOptions{GroupBy: v.GroupBy})
}

// clipsSummary says how many clips a clip view has.
func clipsSummary(cs *query.ClipSelection) string {
	if cs.Clips == 0 {
		return fmt.Sprintf("0 clips: no episode has %d frames (spanning %d) that all match", cs.Window.Length, cs.Window.Span())
	}
	return fmt.Sprintf("%d clips of %d frames in %d episodes (%d distinct frames)", cs.Clips, cs.Window.Length, len(cs.Episodes), cs.Frames)
}

// clipJSON is a clip in ls --json, as in a clip view's clips.jsonl.
type clipJSON struct {
	Episode      string  `json:"episode"`
	Start        int64   `json:"start"`
	FrameIndices []int64 `json:"frame_indices"`
}

// runLsClips lists (or counts) the clip windows of a snapshot whose frames
// all match a filter: episode, first frame, frames.
func runLsClips(ctx context.Context, out io.Writer, tbl *table.Table, snap *table.Snapshot, o lsWhereOptions, w table.Window) error {
	f, err := o.filter(ctx, tbl, snap)
	if err != nil {
		return err
	}
	cs, err := query.SelectClips(ctx, tbl, snap, f, w, query.SelectOptions{Episode: o.episode})
	if err != nil {
		return err
	}
	if o.count {
		if o.asJSON {
			return printJSON(out, map[string]any{"snapshot": snap.ID, "window": w, "clips": cs.Clips,
				"frames": cs.Frames, "episodes": len(cs.Episodes), "stats": cs.Stats})
		}
		_, err := fmt.Fprintln(out, cs.Clips)
		return err
	}
	bw := bufio.NewWriter(out)
	defer bw.Flush()
	if o.asJSON {
		head, _ := json.Marshal(w)
		fmt.Fprintf(bw, "{\"snapshot\": %d, \"window\": %s, \"count\": %d, \"clips\": [", snap.ID, head, cs.Clips)
	} else {
		fmt.Fprintln(bw, "EPISODE\tSTART\tFRAMES")
	}
	first := true
	for _, ce := range cs.Episodes {
		for _, p := range ce.Parts {
			for _, s := range p.Starts {
				frames := w.Frames(s)
				if o.asJSON {
					data, _ := json.Marshal(clipJSON{Episode: ce.Entry.Episode, Start: s, FrameIndices: frames})
					writeJSONItem(bw, data, &first)
					continue
				}
				text := make([]string, len(frames))
				for i, fr := range frames {
					text[i] = strconv.FormatInt(fr, 10)
				}
				fmt.Fprintf(bw, "%s\t%d\t%s\n", ce.Entry.Episode, s, strings.Join(text, ","))
			}
		}
	}
	if o.asJSON {
		bw.WriteString("\n]}\n")
	}
	return nil
}
