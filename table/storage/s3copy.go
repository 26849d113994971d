package storage

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// The sizes S3 allows for one part of a multipart upload: every part but
// the last must have at least MinPartSize bytes, and a part copied from
// another object at most MaxCopyPartSize.
const (
	MinPartSize     = 5 << 20
	MaxCopyPartSize = 5 << 30
)

// Piece is one stretch of an object written by PutPieces: the bytes of R
// (exactly Size of them), or the range Copy (Size is its length), copied
// by the server.
type Piece struct {
	R    io.Reader
	Size int64
	Copy *CopySource
}

// Copier is implemented by stores that copy ranges of other objects into
// their objects server-side, so that the bytes never pass through this
// machine.
type Copier interface {
	// CanCopy reports whether PutPieces can copy src: a range of an
	// object on the same service whose size S3 allows for one copied
	// part.
	CanCopy(src CopySource) bool
	// PutPieces writes key as the concatenation of pieces, every copied
	// piece before every streamed one (every part of a multipart upload
	// but the last must be at least MinPartSize bytes; the streamed bytes
	// make the last parts). It returns, per piece, the SHA-256 (hex) of a
	// copied piece as the server computed it, or "" where the server gave
	// none (and for streamed pieces). An object that changed since it was
	// pinned fails with ErrChanged; nothing is written unless all is.
	PutPieces(ctx context.Context, key string, pieces []Piece) (digests []string, err error)
}

// service names the S3 service a store talks to: stores of the same
// service can copy between their buckets.
func (s *S3) service() string {
	return s.endpoint + "|" + s.client.Options().Region
}

// CanCopy implements Copier.
func (s *S3) CanCopy(src CopySource) bool {
	return src.Object != nil && src.Object.obj.s.service() == s.service() && src.Length >= MinPartSize && src.Length <= MaxCopyPartSize
}

// PutPieces implements Copier with one multipart upload whose parts carry
// SHA-256 checksums: one UploadPartCopy per copied piece (pinned to the
// object's pinned ETag by x-amz-copy-source-if-match; the server returns the
// SHA-256 of the part, that is of the piece), then the streamed bytes in
// PartSize parts.
func (s *S3) PutPieces(ctx context.Context, key string, pieces []Piece) ([]string, error) {
	full, err := s.fullKey(key)
	if err != nil {
		return nil, err
	}
	copies := 0
	var streamed []io.Reader
	var streamedSize int64
	for i, p := range pieces {
		if p.Copy == nil {
			streamed = append(streamed, io.LimitReader(p.R, p.Size))
			streamedSize += p.Size
			continue
		}
		if len(streamed) > 0 {
			return nil, fmt.Errorf("storage: write %s: piece %d is copied after streamed bytes; copies come first", s.objectName(key), i)
		}
		if !s.CanCopy(*p.Copy) {
			return nil, fmt.Errorf("storage: write %s: %s%s cannot be copied by the server", s.objectName(key), p.Copy.Object.URI(), copyRange(*p.Copy))
		}
		copies++
	}
	if copies == 0 {
		_, err := s.Put(ctx, key, io.MultiReader(streamed...))
		return make([]string, len(pieces)), err
	}
	u, err := s.startUpload(ctx, key, full, true)
	if err != nil {
		return nil, err
	}
	digests := make([]string, len(pieces))
	for i, p := range pieces[:copies] {
		part, ok := u.partNumber()
		if !ok {
			break
		}
		select {
		case u.copies <- struct{}{}:
		case <-u.ctx.Done():
		}
		if u.ctx.Err() != nil {
			break
		}
		u.total += p.Size
		u.wg.Add(1)
		go func() {
			defer u.wg.Done()
			defer func() { <-u.copies }()
			digests[i] = u.copyPart(part, *p.Copy)
		}()
	}
	if !u.failed() && streamedSize > 0 {
		var first []byte
		select {
		case first = <-u.free:
		case <-u.ctx.Done():
		}
		if u.ctx.Err() == nil {
			if int64(cap(first)) < s.opts.PartSize {
				first = make([]byte, s.opts.PartSize)
			}
			r := io.MultiReader(streamed...)
			n, err := io.ReadFull(r, first[:min(s.opts.PartSize, streamedSize)])
			if err != nil {
				u.setErr(fmt.Errorf("storage: write %s: %w", s.objectName(key), err))
			} else {
				u.stream(first[:n], r)
			}
		}
	}
	total, err := u.finish()
	if err != nil {
		return nil, err
	}
	var want int64
	for _, p := range pieces {
		want += p.Size
	}
	if total != want {
		return nil, fmt.Errorf("storage: write %s: wrote %d bytes of %d (a streamed piece was short)", s.objectName(key), total, want)
	}
	return digests, nil
}

// copyPart copies src into part number part and returns the SHA-256 (hex)
// of the part as the server computed it, or "" if it gave none that can
// be trusted.
func (u *upload) copyPart(part int32, src CopySource) string {
	obj := src.Object.obj
	rng := fmt.Sprintf("bytes=%d-%d", src.Offset, src.Offset+src.Length-1)
	copySource := obj.s.bucket + "/" + strings.ReplaceAll(url.PathEscape(obj.full), "%2F", "/")
	u.s.shared.stats.copies.Add(1)
	out, err := u.s.client.UploadPartCopy(u.ctx, &s3.UploadPartCopyInput{
		Bucket: &u.s.bucket, Key: &u.full, UploadId: u.id, PartNumber: aws.Int32(part),
		CopySource: &copySource, CopySourceRange: &rng, CopySourceIfMatch: &obj.etag,
	})
	if err != nil {
		switch {
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			u.setErr(u.s.wrap("copy into", u.key, err))
		case httpStatus(err) == http.StatusPreconditionFailed:
			u.setErr(fmt.Errorf("%w: %s no longer has the ETag %s it had when it was opened", ErrChanged, src.Object.URI(), obj.etag))
		default:
			u.setErr(fmt.Errorf("storage: copy %s%s into %s: %w", src.Object.URI(), copyRange(src), u.s.objectName(u.key), obj.s.wrap("UploadPartCopy", obj.key, err)))
		}
		return ""
	}
	res := out.CopyPartResult
	if res == nil || res.ETag == nil {
		u.setErr(fmt.Errorf("storage: copy %s into %s: the answer has no part ETag", src.Object.URI(), u.s.objectName(u.key)))
		return ""
	}
	u.s.shared.stats.bytesCopied.Add(src.Length)
	sum := aws.ToString(res.ChecksumSHA256)
	u.done(types.CompletedPart{ETag: res.ETag, PartNumber: aws.Int32(part), ChecksumSHA256: res.ChecksumSHA256})
	digest, err := base64.StdEncoding.DecodeString(sum)
	if err != nil || len(digest) != 32 {
		return ""
	}
	if sum == src.Object.sha256 && !src.wholeObject() {
		// The object's own checksum handed back for a part of it (a server
		// that copies the stored checksum instead of computing one).
		return ""
	}
	return hex.EncodeToString(digest)
}

// copyRange names a copied range in messages: @OFFSET+LENGTH.
func copyRange(src CopySource) string { return fmt.Sprintf("@%d+%d", src.Offset, src.Length) }
