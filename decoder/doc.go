// Package decoder owns all of framefs's FFmpeg work, done through go-astiav
// (pinned at v0.16.0, the last release that builds against FFmpeg 5.1). It
// is the only package of the project that uses cgo.
//
// It builds frame indexes by demuxing: ScanIndex reads the packets of one
// video stream of any container FFmpeg can demux, without decoding them,
// and returns a videoidx.Index whose frame ordinals agree with the frames
// FFmpeg outputs. It is the index of last resort for files that are not MP4
// (videoidx.ReadMP4 indexes those from their sample tables).
//
// It is the codec under the frame server (package serving): Codec opens
// sessions (media.Session) that reach frame N by seeking to the index's
// decode start and decoding forward to N's timestamp (or decoding on, when
// the session already stands in N's GOP; a random reader's request stops
// feeding the decoder at N's own packet and skips the unreferenced pictures
// before it), and renderers (media.Renderer) that convert pictures to RGB
// by a libavfilter graph, which reproduces the ffmpeg command line's
// pixels bit for bit, and encode them as JPEG, PNG, BMP or PPM
// (media.ImageSetting). Which frames to decode when, and what to keep, is
// the frame server's policy, not this package's. EncodeImagesToVideo goes
// the other way, from image files to an MP4.
//
// Inputs are an io.ReaderAt plus a size, read through a custom FFmpeg IO
// context (see openInput), so the same code reads a local file, a byte range
// of a larger object, or an object-storage blob; nothing is ever written to
// a temporary file.
//
// What the package must not do:
//   - take file paths or URLs (EncodeImagesToVideo, whose job is files,
//     reads and writes them with Go), or let FFmpeg open files, network
//     protocols or other resources on its own;
//   - leak FFmpeg memory: every FFmpeg object is freed on every path, errors
//     included; FFmpeg objects live within one call, in a session (freed
//     by Close), in a renderer (freed by Close) or in a picture (freed by
//     its last Release);
//   - panic or crash on bad input: untrusted bytes end in an error that
//     wraps videoidx.ErrCorrupt, videoidx.ErrTruncated, videoidx.ErrNoVideo,
//     ErrUnrecognized, ErrUnsupported, media.ErrFrameDecode,
//     ErrIndexMismatch or ErrNotImage, while errors of the caller's
//     io.ReaderAt and context come back wrapped as they are;
//   - change process-wide FFmpeg state such as the log level or the log
//     callback; that is the command's decision;
//   - depend on the frame server, go-fuse or the table format. Packages
//     above it see only Go types (videoidx.Index, the media interfaces,
//     images, errors); no go-astiav type appears in the exported API. The
//     values and interfaces it shares with its callers (media.Video,
//     media.ImageSetting, media.Session, ...) are package media's, so
//     callers that only name them build without cgo.
package decoder
