package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/framefs/framefs/decoder"
	"github.com/framefs/framefs/videoidx"
)

type probeFlags struct {
	track  int
	json   bool
	frames bool
}

func newProbeCommand() *cobra.Command {
	var f probeFlags
	cmd := &cobra.Command{
		Use:   "probe FILE",
		Short: "Show a video's frame index: codec, size, frame count, keyframes, GOPs",
		Long: `probe indexes the video track of FILE the way framefs does when it stores a
video: from the MP4 sample tables when it can, by demuxing packets with FFmpeg
otherwise. Frame ordinals count frames in presentation order, exactly as
FFmpeg outputs them.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProbe(cmd, args[0], f)
		},
	}
	cmd.Flags().IntVar(&f.track, "track", videoidx.BestStream, "stream index of the video track (default: the one FFmpeg picks)")
	cmd.Flags().BoolVar(&f.json, "json", false, "print one JSON object")
	cmd.Flags().BoolVar(&f.frames, "frames", false, "also list every frame: ordinal, pts and keyframe flag")
	return cmd
}

// probeReport is the JSON form of `framefs probe`.
type probeReport struct {
	File            string       `json:"file"`
	Stream          int          `json:"stream"`
	Codec           string       `json:"codec"`
	Width           int          `json:"width"`
	Height          int          `json:"height"`
	Frames          int          `json:"frames"`
	Keyframes       int          `json:"keyframes"`
	FPS             float64      `json:"fps"`
	DurationSeconds float64      `json:"duration_seconds"`
	LongestGOP      int          `json:"longest_gop"`
	BFrames         bool         `json:"b_frames"`
	EditList        bool         `json:"edit_list"`
	Fragmented      bool         `json:"fragmented"`
	IndexSource     string       `json:"index_source"`
	IndexBytes      int          `json:"index_bytes"`
	FrameList       []probeFrame `json:"frame_list,omitempty"`
}

type probeFrame struct {
	Ordinal int     `json:"ordinal"`
	PTSTime float64 `json:"pts_time"`
	Key     bool    `json:"key"`
}

func runProbe(cmd *cobra.Command, path string, f probeFlags) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", path)
	}
	ix, err := decoder.IndexVideo(cmd.Context(), file, st.Size(), f.track)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	r := newProbeReport(path, ix, f.frames)
	out := cmd.OutOrStdout()
	if f.json {
		enc := json.NewEncoder(out)
		return enc.Encode(r)
	}
	return printProbe(out, r)
}

func newProbeReport(path string, ix *videoidx.Index, frames bool) probeReport {
	r := probeReport{
		File:            path,
		Stream:          ix.Stream,
		Codec:           ix.Codec,
		Width:           ix.Width,
		Height:          ix.Height,
		Frames:          ix.Frames(),
		Keyframes:       ix.KeyFrames(),
		DurationSeconds: ix.Seconds(ix.Duration()),
		LongestGOP:      ix.LongestGOP(),
		BFrames:         ix.HasBFrames(),
		EditList:        ix.EditList,
		Fragmented:      ix.Fragmented,
		IndexSource:     ix.Origin.String(),
		IndexBytes:      len(ix.Encode()),
	}
	if r.DurationSeconds > 0 {
		r.FPS = float64(r.Frames) / r.DurationSeconds
	}
	if frames {
		r.FrameList = make([]probeFrame, ix.Frames())
		for n := range r.FrameList {
			s := ix.Frame(n)
			r.FrameList[n] = probeFrame{Ordinal: n, PTSTime: ix.Seconds(s.PTS), Key: s.Key}
		}
	}
	return r
}

func printProbe(out io.Writer, r probeReport) error {
	yesNo := map[bool]string{true: "yes", false: "no"}
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "file\t%s\n", r.File)
	fmt.Fprintf(w, "stream\t%d\n", r.Stream)
	fmt.Fprintf(w, "codec\t%s\n", r.Codec)
	fmt.Fprintf(w, "size\t%dx%d\n", r.Width, r.Height)
	fmt.Fprintf(w, "frames\t%d\n", r.Frames)
	fmt.Fprintf(w, "fps\t%.3f\n", r.FPS)
	fmt.Fprintf(w, "duration\t%.3f s\n", r.DurationSeconds)
	fmt.Fprintf(w, "keyframes\t%d\n", r.Keyframes)
	fmt.Fprintf(w, "longest GOP\t%d frames\n", r.LongestGOP)
	fmt.Fprintf(w, "B-frames\t%s\n", yesNo[r.BFrames])
	fmt.Fprintf(w, "edit list\t%s\n", yesNo[r.EditList])
	fmt.Fprintf(w, "fragmented\t%s\n", yesNo[r.Fragmented])
	perFrame := float64(r.IndexBytes) / float64(max(r.Frames, 1))
	fmt.Fprintf(w, "index\t%s, %d bytes encoded (%.1f bytes/frame)\n", r.IndexSource, r.IndexBytes, perFrame)
	if err := w.Flush(); err != nil {
		return err
	}
	if r.FrameList == nil {
		return nil
	}
	w = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "\nordinal\tpts_time\tkey\t\n")
	for _, fr := range r.FrameList {
		key := ""
		if fr.Key {
			key = "K"
		}
		fmt.Fprintf(w, "%d\t%.6f\t%s\t\n", fr.Ordinal, fr.PTSTime, key)
	}
	return w.Flush()
}
