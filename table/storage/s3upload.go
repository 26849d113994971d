package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// upload is a multipart upload in progress: parts streamed from readers
// (PartSize each, UploadConcurrency at a time, at most
// UploadConcurrency+1 part buffers in memory) and parts copied from other
// objects server-side. finish completes it, or aborts it if anything
// failed, so that no parts are left behind.
type upload struct {
	s         *S3
	key, full string
	id        *string
	// checksums: every part carries its SHA-256, which the server checks
	// (and, for copied parts, computes).
	checksums bool
	ctx       context.Context
	cancel    context.CancelCauseFunc
	wg        sync.WaitGroup
	free      chan []byte   // part buffers
	copies    chan struct{} // copy slots
	next      int32         // the next part number
	total     int64         // bytes of the parts sent so far

	mu    sync.Mutex // guards parts and fail
	parts []types.CompletedPart
	fail  error
}

func (s *S3) startUpload(ctx context.Context, key, full string, checksums bool) (*upload, error) {
	in := &s3.CreateMultipartUploadInput{Bucket: &s.bucket, Key: &full}
	if checksums {
		in.ChecksumAlgorithm = types.ChecksumAlgorithmSha256
	}
	s.shared.stats.puts.Add(1)
	created, err := s.client.CreateMultipartUpload(ctx, in)
	if err != nil {
		return nil, s.wrap("create multipart upload of", key, err)
	}
	u := &upload{s: s, key: key, full: full, id: created.UploadId, checksums: checksums, next: 1,
		free: make(chan []byte, s.opts.UploadConcurrency+1), copies: make(chan struct{}, s.opts.UploadConcurrency)}
	u.ctx, u.cancel = context.WithCancelCause(ctx)
	for i := 0; i < s.opts.UploadConcurrency; i++ {
		u.free <- nil
	}
	return u, nil
}

func (u *upload) setErr(err error) {
	u.mu.Lock()
	if u.fail == nil {
		u.fail = err
		u.cancel(err)
	}
	u.mu.Unlock()
}

func (u *upload) failed() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.fail != nil
}

func (u *upload) done(part types.CompletedPart) {
	u.mu.Lock()
	u.parts = append(u.parts, part)
	u.mu.Unlock()
}

// partNumber takes the next part number, failing the upload past the
// 10000 parts S3 allows.
func (u *upload) partNumber() (int32, bool) {
	if u.next > 10000 {
		u.setErr(fmt.Errorf("storage: write %s: more than 10000 parts of %d bytes; raise the part size", u.s.objectName(u.key), u.s.opts.PartSize))
		return 0, false
	}
	u.next++
	return u.next - 1, true
}

// stream uploads first and then the rest of r as parts of PartSize bytes
// (the last one shorter); first is taken over by the upload.
func (u *upload) stream(first []byte, r io.Reader) {
	buf := first
	for len(buf) > 0 {
		part, ok := u.partNumber()
		if !ok {
			return
		}
		u.send(part, buf)
		if int64(len(buf)) < u.s.opts.PartSize {
			return // that was the last, short part
		}
		var next []byte
		select {
		case next = <-u.free:
		case <-u.ctx.Done():
			return
		}
		if int64(cap(next)) < u.s.opts.PartSize {
			next = make([]byte, u.s.opts.PartSize)
		}
		n, err := io.ReadFull(r, next[:u.s.opts.PartSize])
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
			u.setErr(fmt.Errorf("storage: write %s: %w", u.s.objectName(u.key), err))
			return
		}
		if u.ctx.Err() != nil {
			return
		}
		buf = next[:n]
	}
}

// send uploads data as part number part in the background and gives the
// buffer back to the free list when done.
func (u *upload) send(part int32, data []byte) {
	u.total += int64(len(data))
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		defer func() { u.free <- data[:cap(data)] }()
		in := &s3.UploadPartInput{
			Bucket: &u.s.bucket, Key: &u.full, UploadId: u.id, PartNumber: aws.Int32(part),
			Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
		}
		if u.checksums {
			sum := sha256.Sum256(data)
			in.ChecksumSHA256 = aws.String(base64.StdEncoding.EncodeToString(sum[:]))
		}
		u.s.shared.stats.puts.Add(1)
		out, err := u.s.client.UploadPart(u.ctx, in)
		if err != nil {
			u.setErr(u.s.wrap(fmt.Sprintf("upload part %d of", part), u.key, err))
			return
		}
		u.s.shared.stats.bytesWritten.Add(int64(len(data)))
		u.done(types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(part), ChecksumSHA256: in.ChecksumSHA256})
	}()
}

// finish waits for the parts in flight, then completes the upload and
// returns its size, or aborts it and returns why it failed.
func (u *upload) finish() (int64, error) {
	u.wg.Wait()
	fail := u.fail
	if fail == nil && u.ctx.Err() != nil {
		fail = u.s.wrap("PUT", u.key, u.ctx.Err())
	}
	if fail == nil {
		sort.Slice(u.parts, func(i, j int) bool { return *u.parts[i].PartNumber < *u.parts[j].PartNumber })
		u.s.shared.stats.puts.Add(1)
		_, err := u.s.client.CompleteMultipartUpload(u.ctx, &s3.CompleteMultipartUploadInput{
			Bucket: &u.s.bucket, Key: &u.full, UploadId: u.id,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: u.parts},
		})
		if err == nil {
			u.cancel(nil)
			return u.total, nil
		}
		fail = u.s.wrap("complete multipart upload of", u.key, err)
	}
	u.cancel(fail)
	abortCtx, cancelAbort := context.WithTimeout(context.WithoutCancel(u.ctx), time.Minute)
	defer cancelAbort()
	if _, err := u.s.client.AbortMultipartUpload(abortCtx, &s3.AbortMultipartUploadInput{Bucket: &u.s.bucket, Key: &u.full, UploadId: u.id}); err != nil {
		slog.Warn("storage: cannot abort a failed multipart upload; gc will", "object", u.s.objectName(u.key), "err", u.s.wrap("abort", u.key, err))
	}
	return 0, fail
}
