// Package layering states the project's package layering as a test
// (layering_test.go), checked on the real import graph that `go list
// -deps` reports for every package of the module:
//
//   - the domain packages (table/..., query/..., ingest/..., videoidx/...,
//     cache/..., media/..., serving/... and any lerobot package) depend on
//     neither FFmpeg (go-astiav) nor go-fuse;
//   - the decoder sits under the frame server (serving), which reaches it
//     through media's codec interfaces: it imports neither serving nor
//     anything above it;
//   - the table format (table/...) does not depend on the query engine
//     (query/...), which sits above it;
//   - the caches (cache/...) depend on nothing of what they hold: no
//     table, query, video index, media or ingest package;
//   - the mount model (mounttree), built with its tests, depends on
//     neither FFmpeg, the decoder, go-fuse nor fusefs: it says what a
//     snapshot's folders hold as plain values, tested without FUSE;
//   - fusefs, built without its tests, depends on neither go-astiav nor
//     the decoder: it reaches FFmpeg only through mounttree's FrameServer
//     interface, so its node tree builds and tests without cgo;
//   - only decoder uses cgo, besides the command's process setup
//     (cmd/framefs sets its timer slack before the Go runtime starts), and
//     only fusefs imports go-fuse;
//   - the in-process tests of the FUSE tree (fusefs/inprocess) and the
//     tests of the frame server (serving), test files included, build
//     without the decoder.
//
// It holds no code: a package that breaks a rule fails `go test ./...`
// with the chain of imports that leads to the forbidden package.
package layering
