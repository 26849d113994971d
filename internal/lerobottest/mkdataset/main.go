// Command mkdataset builds a synthetic LeRobot dataset with package
// lerobottest, for benchmarks: two cameras (AV1 and H.264), episodes of
// equal length, three tasks.
//
//	go run ./internal/lerobottest/mkdataset -version v3.0 -episodes 200 -frames 100 -size 640x480 OUT
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/framefs/framefs/internal/lerobottest"
)

// fatal reports a failed build step and exits.
type fatal struct{}

func (fatal) Helper() {}
func (fatal) Fatal(args ...any) {
	fmt.Fprintln(os.Stderr, append([]any{"mkdataset:"}, args...)...)
	os.Exit(1)
}
func (fatal) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "mkdataset: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	version := flag.String("version", "v3.0", "codebase version: v2.0, v2.1 or v3.0")
	episodes := flag.Int("episodes", 200, "episodes")
	frames := flag.Int("frames", 100, "frames per episode")
	size := flag.String("size", "640x480", "picture size of both cameras")
	gop := flag.Int("gop", 2, "keyframe interval (LeRobot encodes with 2)")
	distinct := flag.Int("distinct", 7, "distinct episode videos per camera (episodes reuse them in turn, 7 so that no two files are alike; 0: all distinct)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: mkdataset [flags] OUT")
		os.Exit(2)
	}
	var w, h int
	if _, err := fmt.Sscanf(*size, "%dx%d", &w, &h); err != nil {
		fatal{}.Fatalf("-size %q: want WxH", *size)
	}
	spec := lerobottest.Standard(*version)
	spec.GOP, spec.DistinctVideos = *gop, *distinct
	spec.Cameras[0].Width, spec.Cameras[0].Height = w, h
	spec.Cameras[1].Width, spec.Cameras[1].Height = w, h
	spec.Lengths = make([]int, *episodes)
	for i := range spec.Lengths {
		spec.Lengths[i] = *frames
	}
	spec.EpisodeTasks = nil
	// LeRobot starts a new video file at about 200 MB; these files stay
	// smaller, so each camera keeps one file per 100 episodes.
	spec.EpisodesPerVideoFile = map[string]int{lerobottest.CamTop: 100, lerobottest.CamWrist: 100}
	spec.EpisodesPerDataFile = 100
	lerobottest.Build(fatal{}, flag.Arg(0), spec)
	lerobottest.RemoveCache()
}
