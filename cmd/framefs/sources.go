package main

import (
	"context"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/spf13/cobra"

	"github.com/framefs/framefs/table"
	"github.com/framefs/framefs/table/input"
	"github.com/framefs/framefs/table/storage"
)

// rangeFlags are --offset and --length: the byte range of a single input
// that holds the video. They map onto table.VideoFile.
type rangeFlags struct {
	offset, length int64
}

func (r *rangeFlags) register(cmd *cobra.Command) {
	cmd.Flags().Int64Var(&r.offset, "offset", 0, "the video starts at this byte of VIDEO (a video inside a pack or an archive)")
	cmd.Flags().Int64Var(&r.length, "length", 0, "the video is this many bytes from --offset (default: to the end)")
}

// apply sets the range on the one video of a command; sources counts the
// videos given, and a range of several is refused.
func (r *rangeFlags) apply(cmd *cobra.Command, vf *table.VideoFile, sources int) error {
	offset, length := cmd.Flags().Changed("offset"), cmd.Flags().Changed("length")
	if !offset && !length {
		return nil
	}
	if sources != 1 {
		return fmt.Errorf("--offset and --length select a range of a single video; %d were given", sources)
	}
	if length && r.length <= 0 {
		return fmt.Errorf("--length %d: a video range is at least one byte long", r.length)
	}
	vf.Offset, vf.Length = r.offset, r.length
	return nil
}

// explain adds to the error of a command whose range runs to the end of
// VIDEO (--offset without --length) what is likely wrong: the bytes after
// the video (the next video of a pack) were read as part of it.
func (r *rangeFlags) explain(cmd *cobra.Command, err error) error {
	if err == nil || !cmd.Flags().Changed("offset") || cmd.Flags().Changed("length") {
		return err
	}
	return fmt.Errorf("%w\n--offset %d without --length takes VIDEO from that byte to its end; if more follows the video there (the next video of a pack), give the video's size with --length", err, r.offset)
}

// inputOpener opens what ingest reads (files and s3:// objects) with the same
// S3 options as tables.
func (f *storeFlags) inputOpener() (*input.Opener, error) {
	opts, err := f.s3Options()
	if err != nil {
		return nil, err
	}
	return input.NewOpener(opts), nil
}

// baseOf is the part of a path or URI before its extension.
func baseOf(p string) string {
	return strings.TrimSuffix(p, path.Ext(p))
}

// findSidecar returns the sidecar beside a video (same base name, a file
// or an S3 object), if any.
func findSidecar(ctx context.Context, opener *input.Opener, video string) (string, error) {
	base := baseOf(video)
	var found []string
	for _, ext := range table.SidecarExtensions {
		ok, err := opener.Exists(ctx, base+ext)
		if err != nil {
			return "", fmt.Errorf("look for the sidecar of %s: %w", video, err)
		}
		if ok {
			found = append(found, base+ext)
		}
	}
	if len(found) > 1 {
		return "", fmt.Errorf("%s has several sidecars (%s); keep one", video, strings.Join(found, ", "))
	}
	if len(found) == 1 {
		return found[0], nil
	}
	return "", nil
}

// readSidecar reads and parses a sidecar file or S3 object.
func readSidecar(ctx context.Context, opener *input.Opener, name string) (*table.Sidecar, error) {
	f, err := opener.Open(ctx, name, input.Range{})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := input.ReadAll(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return table.ParseSidecar(path.Base(name), data)
}

// reportS3 tells what reading S3 inputs cost: the bytes read through this
// machine and those the server copied itself. Nothing when no input was
// on S3.
func reportS3(w io.Writer, opener *input.Opener, tbl *table.Table) {
	st := opener.Stats()
	if st.HEADs == 0 {
		return
	}
	var copied int64
	if s3, ok := tbl.Store().(*storage.S3); ok {
		copied = s3.Stats().BytesCopied
	}
	fmt.Fprintf(w, "S3 sources: %d bytes read, %d bytes copied by the server\n", st.BytesRead, copied)
}
