package storage

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// StartUploadForTest starts a multipart upload and leaves it, as a writer
// that crashed mid-upload would.
func (s *S3) StartUploadForTest(ctx context.Context, key string) error {
	full := s.prefix + key
	_, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &s.bucket, Key: &full})
	return err
}
