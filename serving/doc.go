// Package serving is framefs's frame server: it turns requests for frames
// of stored videos into image files, deciding which frames to decode when
// and what to keep. It owns the policy and none of the codec:
//
//   - a pool of decoder sessions (pool.go): a request goes to the session
//     that reaches its frame by decoding on, sessions are bounded per video
//     and in all, idle ones are evicted least recently used, and a random
//     request may use more decoder threads when no other is busy;
//   - a byte-bounded cache of encoded images (package cache) whose misses
//     on one frame run once, with an optional disk tier (ImageStore);
//   - read-ahead for sequential readers, and GOP fills for shuffled and
//     random ones (fill.go): a request that must decode from a keyframe
//     decodes its group of pictures once and keeps the other frames for the
//     requests to come, as long as the evidence says they are asked for;
//   - the decoded pictures random requests pass on their way (pictures.go),
//     kept by what a later hit would save;
//   - FrameSizes, the size of every frame's image, for ingest and mounts.
//
// The codec comes in through the interfaces of package media (Codec,
// Session, Picture, Renderer); package decoder implements them over FFmpeg.
// This package builds and its tests run with CGO_ENABLED=0, against a codec
// that counts its work (codec_test.go); decoder's tests run the same policy
// over FFmpeg.
//
// What the package must not do: import the decoder, go-fuse or the table
// format; hold a lock while calling the codec or a reader; keep a picture
// or an image beyond the bounds its Options give.
package serving
