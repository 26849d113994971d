// Package media holds the plain values shared by the decoder and its
// callers: how a frame is turned into an image file (ImageSetting,
// ImageFormat), which stored video to read (Video, VideoKey) and the
// errors a caller tells apart (ErrFrameRange).
//
// It is pure Go, so that packages which only name frames and settings (the
// FUSE tree, the command line's flag parsing) build and test without cgo
// or FFmpeg. What the bytes of an image depend on beyond the setting (the
// versions of the libraries that make them) is the decoder's to say: see
// decoder.Identity.
//
// What the package must not do: import the decoder, go-astiav, go-fuse or
// the table format, or do any I/O.
package media
