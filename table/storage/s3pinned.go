package storage

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// PinnedObject is one version of an object of any bucket an S3 store's
// client reaches, under any key (not only those a table writes): its
// size, ETag and checksum as a HEAD saw them, and ranged reads pinned to
// that ETag, which fail with ErrChanged once the object has changed.
// Ingest reads its S3 inputs through it (package table/input), and an S3
// store copies ranges of it server-side (CopySource).
type PinnedObject struct {
	obj *s3Object
	uri string
	// sha256 is the object's own full-object SHA-256 checksum (base64),
	// if it was stored with one.
	sha256 string
}

// OpenPinned HEADs the object key of bucket with the store's client (its
// counters count the requests) and returns it pinned to the ETag seen. A
// missing object is ErrNotFound.
func (s *S3) OpenPinned(ctx context.Context, bucket, key string) (*PinnedObject, error) {
	b := *s
	b.bucket, b.prefix = bucket, ""
	uri := "s3://" + bucket + "/" + key
	b.shared.stats.heads.Add(1)
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.bucket, Key: &key, ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		return nil, b.wrap("HEAD", key, err)
	}
	size := aws.ToInt64(out.ContentLength)
	if out.ContentLength == nil || size < 0 {
		return nil, fmt.Errorf("storage: HEAD %s: no object size in the answer", uri)
	}
	etag := aws.ToString(out.ETag)
	if etag == "" {
		// Without an ETag a changed object could not be told apart.
		return nil, fmt.Errorf("storage: HEAD %s: the server gave no ETag", uri)
	}
	p := &PinnedObject{obj: &s3Object{s: &b, key: key, full: key, size: size, etag: etag}, uri: uri}
	if out.ChecksumType == types.ChecksumTypeFullObject || out.ChecksumType == "" {
		p.sha256 = aws.ToString(out.ChecksumSHA256)
	}
	return p, nil
}

// URI names the object: s3://BUCKET/KEY.
func (p *PinnedObject) URI() string { return p.uri }

// Size is the object's length in bytes.
func (p *PinnedObject) Size() int64 { return p.obj.size }

// ETag is the version the object is pinned to.
func (p *PinnedObject) ETag() string { return p.obj.etag }

// Fetch fills b with the object's bytes [off, off+len(b)) by a ranged GET
// under ctx pinned to the ETag, repeating a transfer that broke off; it
// returns an error rather than fewer bytes.
func (p *PinnedObject) Fetch(ctx context.Context, off int64, b []byte) error {
	return p.obj.fetch(ctx, off, b)
}

// CopySource is a range of a pinned object that a Copier copies into an
// object server-side.
type CopySource struct {
	Object         *PinnedObject
	Offset, Length int64
}

// wholeObject reports whether the range is the whole object.
func (c CopySource) wholeObject() bool { return c.Offset == 0 && c.Length == c.Object.Size() }
