package serving

import (
	"errors"
	"fmt"

	"github.com/klauspost/compress/s2"

	"github.com/framefs/framefs/internal/scratch"
	"github.com/framefs/framefs/media"
)

// Compressed images. A fill keeps the frames nobody has asked for yet in
// the most compact form that serves them without decoding again. For raw
// image formats (BMP, PPM, NPY) scaled well down, that is the image itself
// compressed with S2 rather than the frame's packed picture: a 224x224 BMP
// is 150 KB against 460 KB of 640x480 YUV planes, so the compressed image
// is the smaller of the two, and serving it costs a decompression at
// memory speed where a packed picture costs unpacking, scaling and
// converting on the request's path. The scaling moves into the fill, on
// the encoder goroutines, and happens once per frame either way.
//
// The bytes are the image's own, so what is served is the image the fill
// made, byte for byte. Compressed images live in memory only.

// maxCompressedImage bounds the decompressed size that decompressImage
// accepts: a raw image of media.MaxImagePixels RGB pixels and its header.
const maxCompressedImage = 3*media.MaxImagePixels + 1<<16

var errCompressed = errors.New("serving: compressed image: damaged bytes")

// compress returns image (at most maxCompressedImage bytes, far below
// S2's limit) compressed with S2 in a slice of its own size, and counts
// it. S2 writes into a lent buffer of its worst-case size, larger than the
// image; the cache keeps an exact copy.
func (fs *Server) compress(image []byte) []byte {
	buf := scratch.Get(s2.MaxEncodedLen(len(image)))
	c := append([]byte(nil), s2.Encode(*buf, image)...)
	scratch.Put(buf)
	fs.fills.measuredCompress(len(c), len(image))
	return c
}

// decompressImage returns the image compress made c of.
func decompressImage(c []byte) ([]byte, error) {
	n, err := s2.DecodedLen(c)
	if err != nil || n <= 0 || n > maxCompressedImage {
		return nil, fmt.Errorf("%w: no image of a valid size", errCompressed)
	}
	b, err := s2.Decode(make([]byte, n), c)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errCompressed, err)
	}
	return b, nil
}

// keepCompact keeps the compact form of the frame a fill rendered for its
// request (image b of key, picture pic), so that each frame of a filled GOP
// has one once it is served (see Frame).
func (fs *Server) keepCompact(key frameKey, pic media.Picture, b []byte, f form) {
	switch f {
	case formPicture:
		if pb, err := fs.pool.codec.Pack(pic, fs.fills.compressPacks()); err == nil {
			fs.cache.Add(key.packedKey(), pb)
		}
	case formCompressed:
		fs.cache.Add(key.compressedKey(), fs.compress(b))
	}
}
