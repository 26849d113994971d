// Package inprocess tests the mount's node tree (package fusefs) in
// process: the tree of a real table, built with fusefs.NewTableRoot, is
// served by go-fuse's fs.NewNodeFS and driven through the operations the
// kernel would send (LOOKUP, GETATTR, OPENDIR, READDIRPLUS, OPEN, READ,
// CREATE, ...), called directly with node ids. No kernel mount, /dev/fuse
// or FFmpeg is involved: frame images come from a FrameServer written for
// the tests (internal/treetest), so these tests build and run with
// CGO_ENABLED=0 (the internal/layering test checks that they keep doing
// so).
//
// The package holds no code; the real-mount tests stay in package fusefs.
package inprocess
