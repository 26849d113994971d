// Package decoder owns all of framefs's FFmpeg work, done through go-astiav
// (pinned at v0.16.0, the last release that builds against FFmpeg 5.1). It
// is the only package of the project that uses cgo.
//
// Today it builds frame indexes by demuxing: ScanIndex reads the packets of
// one video stream of any container FFmpeg can demux, without decoding
// them, and returns a videoidx.Index whose frame ordinals agree with the
// frames FFmpeg outputs. It is the index of last resort for files that are
// not MP4 (videoidx.ReadMP4 indexes those from their sample tables). Later
// it will also hold decoder sessions, frame-exact seeking, frame-to-image
// encoders and image-to-video encoding.
//
// Inputs are an io.ReaderAt plus a size, read through a custom FFmpeg IO
// context (see openInput), so the same code reads a local file, a byte range
// of a larger object, or an object-storage blob; nothing is ever written to
// a temporary file.
//
// What the package must not do:
//   - take file paths or URLs, or let FFmpeg open files, network protocols
//     or other resources on its own;
//   - leak FFmpeg memory: every FFmpeg object is freed on every path, errors
//     included, and no FFmpeg pointer outlives the call that owns it;
//   - panic or crash on bad input: untrusted bytes end in an error that
//     wraps videoidx.ErrCorrupt, videoidx.ErrTruncated, videoidx.ErrNoVideo,
//     ErrUnrecognized or ErrUnsupported, while errors of the caller's
//     io.ReaderAt and context come back wrapped as they are;
//   - change process-wide FFmpeg state such as the log level or the log
//     callback; that is the command's decision;
//   - depend on go-fuse, the table format or the cache. Domain packages
//     above it see only Go types (videoidx.Index, images, errors); no
//     go-astiav type appears in the exported API.
package decoder
