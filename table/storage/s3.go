package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"

	"github.com/framefs/framefs/cache"
	"github.com/framefs/framefs/cache/blockcache"
)

// S3Options configure an S3 store. Everything not set here comes from the
// AWS SDK's standard configuration chain (environment, shared config and
// credentials files, AWS_PROFILE, instance metadata). The zero value of
// every field means its default.
type S3Options struct {
	// Endpoint is the URL of an S3-compatible server (default: the
	// AWS_ENDPOINT_URL environment variable or the profile's endpoint_url,
	// else AWS S3).
	Endpoint string
	// PathStyle chooses path-style addressing (http://host/bucket/key).
	// Nil means on whenever a custom endpoint is configured, off for AWS.
	PathStyle *bool
	// Region overrides the configured region (default from the chain, else
	// us-east-1).
	Region string
	// Profile selects a shared-config profile (default AWS_PROFILE).
	Profile string
	// Credentials overrides the chain's credentials (tests, embedding).
	Credentials aws.CredentialsProvider
	// MaxAttempts bounds the attempts of one request, retries on
	// throttling, 5xx answers, timeouts and dropped connections included
	// (default 8).
	MaxAttempts int
	// MaxBackoff bounds the jittered exponential backoff between attempts
	// (default 5s).
	MaxBackoff time.Duration
	// PartSize is the part size of multipart uploads (default 16 MiB,
	// at least 5 MiB as S3 requires).
	PartSize int64
	// UploadConcurrency is the number of parts uploaded at once (default
	// 4). A Put holds at most UploadConcurrency+1 parts in memory.
	UploadConcurrency int
	// CacheDir is the local block cache for ranged reads of objects;
	// empty means no disk cache (every read is a ranged GET).
	CacheDir string
	// CacheBytes bounds the block cache (default 1 GiB).
	CacheBytes int64
	// MetadataCacheBytes bounds the in-memory cache of small immutable
	// objects read whole (snapshots, manifests, schemas; default 32 MiB,
	// negative disables).
	MetadataCacheBytes int64
	// HTTPClient replaces the SDK's HTTP client.
	HTTPClient *http.Client
}

// S3 is a Store in a bucket of S3 or an S3-compatible server, under a key
// prefix. Immutable objects opened for ranged reads go through a local
// block cache when one is configured; small immutable objects read whole
// are kept in memory.
//
// Commits rely on conditional PUT (If-None-Match: *): the server must
// support it (AWS S3 does since 2024; see docs/S3.md).
type S3 struct {
	client   *s3.Client
	endpoint string // the configured endpoint URL, "" for AWS
	bucket   string
	prefix   string // "" or ends with "/"
	opts     S3Options
	creds    aws.CredentialsProvider
	shared   *s3Shared
}

// s3Shared is what stores derived with Sub share with their parent.
type s3Shared struct {
	blocks *blockcache.Cache    // nil without a cache directory
	meta   *cache.Cache[string] // nil when disabled; keyed by bucket/full key
	stats  s3Counters
}

type s3Counters struct {
	gets, heads, puts, lists, deletes, bytesRead, bytesWritten, retries, metaHits atomic.Int64
	copies, bytesCopied                                                           atomic.Int64
}

// S3Stats are request counters of an S3 store (and the stores derived from
// it), with the block cache's counters.
type S3Stats struct {
	GETs, HEADs, PUTs, LISTs, DELETEs int64
	BytesRead, BytesWritten           int64
	// Copies counts server-side copies of an object range into a part
	// (UploadPartCopy), BytesCopied their bytes, which never passed
	// through this machine.
	Copies, BytesCopied int64
	// ReadRetries counts ranged or whole GETs repeated after the body
	// failed mid-transfer.
	ReadRetries int64
	// MetadataHits counts whole-object reads served from memory.
	MetadataHits int64
	Cache        blockcache.Stats
}

// ParseS3URI splits s3://bucket/prefix into the bucket and a prefix that
// is empty or ends with "/".
func ParseS3URI(uri string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(uri, "s3://")
	if !ok {
		return "", "", fmt.Errorf("%q is not an s3:// URI", uri)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("%q: the URI names no bucket (want s3://BUCKET/PREFIX)", uri)
	}
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		if err := CheckKey(prefix); err != nil {
			return "", "", fmt.Errorf("%q: bad prefix: %w", uri, err)
		}
		prefix += "/"
	}
	return bucket, prefix, nil
}

// NewS3 returns a store for uri (s3://bucket/prefix). It does no request.
func NewS3(ctx context.Context, uri string, opts S3Options) (*S3, error) {
	bucket, prefix, err := ParseS3URI(uri)
	if err != nil {
		return nil, err
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 8
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 5 * time.Second
	}
	if opts.PartSize == 0 {
		opts.PartSize = 16 << 20
	}
	if opts.PartSize < 5<<20 {
		return nil, fmt.Errorf("storage: S3 part size %d is below the 5 MiB S3 requires", opts.PartSize)
	}
	if opts.UploadConcurrency <= 0 {
		opts.UploadConcurrency = 4
	}
	if opts.MetadataCacheBytes == 0 {
		opts.MetadataCacheBytes = 32 << 20
	}
	if opts.Endpoint == "" {
		opts.Endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	loadOpts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = opts.MaxAttempts
				o.MaxBackoff = opts.MaxBackoff
				o.Backoff = retry.NewExponentialJitterBackoff(opts.MaxBackoff)
				// MaxAttempts is the budget; a shared token bucket would
				// fail healthy requests after a burst of faults.
				o.RateLimiter = ratelimit.None
			})
		}),
		// Plain payload signing works with every S3-compatible server;
		// trailing checksums (aws-chunked) do not.
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
		// The SDK's own log lines would land on the user's terminal.
		config.WithLogger(logging.Nop{}),
	}
	if opts.Region != "" {
		loadOpts = append(loadOpts, config.WithRegion(opts.Region))
	}
	if opts.Profile != "" {
		loadOpts = append(loadOpts, config.WithSharedConfigProfile(opts.Profile))
	}
	if opts.Credentials != nil {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(opts.Credentials))
	}
	if opts.HTTPClient != nil {
		loadOpts = append(loadOpts, config.WithHTTPClient(opts.HTTPClient))
	} else {
		loadOpts = append(loadOpts, config.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
			tr.ResponseHeaderTimeout = time.Minute
			tr.MaxIdleConnsPerHost = 32
		})))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("storage: AWS configuration for %s: %w", uri, err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	custom := opts.Endpoint != "" || cfg.BaseEndpoint != nil
	pathStyle := custom
	if opts.PathStyle != nil {
		pathStyle = *opts.PathStyle
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
		}
		o.UsePathStyle = pathStyle
	})
	sh := &s3Shared{}
	if opts.CacheDir != "" {
		if sh.blocks, err = blockcache.Shared(blockcache.Options{Dir: opts.CacheDir, MaxBytes: opts.CacheBytes}); err != nil {
			return nil, err
		}
	}
	if opts.MetadataCacheBytes > 0 {
		sh.meta = cache.New[string](opts.MetadataCacheBytes)
	}
	endpoint := opts.Endpoint
	if endpoint == "" {
		endpoint = aws.ToString(cfg.BaseEndpoint)
	}
	return &S3{client: client, endpoint: endpoint, bucket: bucket, prefix: prefix, opts: opts, creds: cfg.Credentials, shared: sh}, nil
}

// String implements Store: s3://bucket/prefix, never credentials.
func (s *S3) String() string {
	return "s3://" + s.bucket + "/" + strings.TrimSuffix(s.prefix, "/")
}

// Sub returns a store for the keys under name/ (a table of a warehouse),
// sharing the client, caches and counters.
func (s *S3) Sub(name string) (Store, error) {
	if err := CheckKey(name); err != nil {
		return nil, err
	}
	sub := *s
	sub.prefix = s.prefix + strings.Trim(name, "/") + "/"
	return &sub, nil
}

// Stats returns the request and cache counters.
func (s *S3) Stats() S3Stats {
	c := &s.shared.stats
	st := S3Stats{
		GETs: c.gets.Load(), HEADs: c.heads.Load(), PUTs: c.puts.Load(), LISTs: c.lists.Load(), DELETEs: c.deletes.Load(),
		BytesRead: c.bytesRead.Load(), BytesWritten: c.bytesWritten.Load(), ReadRetries: c.retries.Load(), MetadataHits: c.metaHits.Load(),
		Copies: c.copies.Load(), BytesCopied: c.bytesCopied.Load(),
	}
	if s.shared.blocks != nil {
		st.Cache = s.shared.blocks.Stats()
	}
	return st
}

func (s *S3) fullKey(key string) (string, error) {
	if err := CheckKey(key); err != nil {
		return "", err
	}
	return s.prefix + key, nil
}

// objectName names an object in messages.
func (s *S3) objectName(key string) string { return "s3://" + s.bucket + "/" + s.prefix + key }

// s3Error is an error of an S3 request with a message that has been
// scrubbed of credentials; it unwraps to a sentinel (ErrNotFound, ...) or
// the context's error, never to the SDK error whose text was scrubbed.
type s3Error struct {
	msg  string
	kind error
}

func (e *s3Error) Error() string { return e.msg }
func (e *s3Error) Unwrap() error { return e.kind }

func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func isNotFound(err error) bool {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if apiCode(err) == "NoSuchBucket" {
		return false
	}
	return errors.As(err, &nsk) || errors.As(err, &nf) || httpStatus(err) == http.StatusNotFound || apiCode(err) == "NoSuchKey"
}

// wrap turns an SDK error into a store error naming the operation and the
// object, with secrets removed from the text.
func (s *S3) wrap(op, key string, err error) error {
	var kind error
	switch {
	case errors.Is(err, context.Canceled):
		kind = context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		kind = context.DeadlineExceeded
	case apiCode(err) == "NoSuchBucket":
		return &s3Error{msg: fmt.Sprintf("storage: %s %s: the bucket %q does not exist", op, s.objectName(key), s.bucket)}
	case isNotFound(err):
		return &s3Error{msg: fmt.Sprintf("%v: %s", ErrNotFound, s.objectName(key)), kind: ErrNotFound}
	}
	detail := err.Error()
	var ae smithy.APIError
	if errors.As(err, &ae) {
		detail = fmt.Sprintf("%s: %s", ae.ErrorCode(), ae.ErrorMessage())
		if st := httpStatus(err); st != 0 {
			detail = fmt.Sprintf("HTTP %d %s", st, detail)
		}
		if httpStatus(err) == http.StatusForbidden {
			detail += " (check the credentials: AWS_ACCESS_KEY_ID, AWS_PROFILE, ...; and the bucket's permissions)"
		}
	}
	return &s3Error{msg: fmt.Sprintf("storage: %s %s: %s", op, s.objectName(key), s.redact(detail)), kind: kind}
}

// redact removes the secret key and session token from a message.
func (s *S3) redact(msg string) string {
	if s.creds == nil {
		return msg
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := s.creds.Retrieve(ctx)
	if err != nil {
		return msg
	}
	for _, secret := range []string{c.SecretAccessKey, c.SessionToken} {
		if len(secret) >= 4 {
			msg = strings.ReplaceAll(msg, secret, "[REDACTED]")
		}
	}
	return msg
}

// backoff sleeps before retry attempt n (1, 2, ...) with full jitter.
func (s *S3) backoff(ctx context.Context, n int) error {
	d := min(s.opts.MaxBackoff, 50*time.Millisecond<<min(n, 10))
	t := time.NewTimer(time.Duration(rand.Int64N(int64(d)) + 1))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Open implements Store: a HEAD for the size and ETag, then ranged GETs
// (through the block cache, if any) pinned to that ETag, made under ctx.
func (s *S3) Open(ctx context.Context, key string) (Object, error) {
	full, err := s.fullKey(key)
	if err != nil {
		return nil, err
	}
	s.shared.stats.heads.Add(1)
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &full})
	if err != nil {
		return nil, s.wrap("HEAD", key, err)
	}
	size := aws.ToInt64(out.ContentLength)
	if size < 0 {
		return nil, fmt.Errorf("storage: HEAD %s: no object size in the answer", s.objectName(key))
	}
	o := &s3Object{s: s, key: key, full: full, size: size, etag: aws.ToString(out.ETag), ctx: ctx}
	if s.shared.blocks != nil {
		o.r = s.shared.blocks.NewReader(ctx, blockcache.ObjectID{Key: s.bucket + "/" + full, Size: size, ETag: o.etag}, o.fetch)
	} else {
		o.r = readerAtFunc(func(p []byte, off int64) (int, error) { return o.readDirect(ctx, p, off) })
	}
	return o, nil
}

type readerAtFunc func(p []byte, off int64) (int, error)

func (f readerAtFunc) ReadAt(p []byte, off int64) (int, error) { return f(p, off) }

type s3Object struct {
	s          *S3
	key, full  string
	size       int64
	etag       string
	ctx        context.Context // from Open: reads fail once it ends
	r          io.ReaderAt
	closedFlag atomic.Bool
}

func (o *s3Object) Size() int64 { return o.size }

func (o *s3Object) Close() error {
	o.closedFlag.Store(true)
	return nil
}

func (o *s3Object) ReadAt(p []byte, off int64) (int, error) {
	if o.closedFlag.Load() {
		return 0, fmt.Errorf("storage: read %s: %w", o.s.objectName(o.key), os.ErrClosed)
	}
	if err := o.ctx.Err(); err != nil {
		return 0, o.s.wrap("GET", o.key, err)
	}
	return o.r.ReadAt(p, off)
}

func (o *s3Object) readDirect(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("storage: read %s: negative offset %d", o.s.objectName(o.key), off)
	}
	if off >= o.size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), o.size-off))
	if err := o.fetch(ctx, off, p[:n]); err != nil {
		return 0, err
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// fetch fills p with bytes [off, off+len(p)) of the object by a ranged GET
// pinned to the ETag seen at Open. A body that breaks off mid-transfer
// (which the SDK's retryer does not see) is fetched again; the bytes are
// returned only when all of them arrived for exactly the requested range.
func (o *s3Object) fetch(ctx context.Context, off int64, p []byte) error {
	if len(p) == 0 {
		return nil
	}
	rng := fmt.Sprintf("bytes=%d-%d", off, off+int64(len(p))-1)
	var lastErr error
	for attempt := 0; attempt < o.s.opts.MaxAttempts; attempt++ {
		if attempt > 0 {
			o.s.shared.stats.retries.Add(1)
			if err := o.s.backoff(ctx, attempt); err != nil {
				return o.s.wrap("GET", o.key, err)
			}
		}
		in := &s3.GetObjectInput{Bucket: &o.s.bucket, Key: &o.full, Range: &rng}
		if o.etag != "" {
			in.IfMatch = &o.etag
		}
		o.s.shared.stats.gets.Add(1)
		out, err := o.s.client.GetObject(ctx, in)
		if err != nil {
			if httpStatus(err) == http.StatusPreconditionFailed {
				return fmt.Errorf("%w: %s no longer has the ETag %s it had when it was opened", ErrChanged, o.s.objectName(o.key), o.etag)
			}
			return o.s.wrap("GET", o.key, err) // the SDK already retried what can be retried
		}
		err = readRange(out, off, p, o.size)
		if err == nil {
			o.s.shared.stats.bytesRead.Add(int64(len(p)))
			return nil
		}
		if errors.Is(err, ErrChanged) {
			return fmt.Errorf("storage: GET %s %s: %w", o.s.objectName(o.key), rng, err)
		}
		if ctx.Err() != nil {
			return o.s.wrap("GET", o.key, ctx.Err())
		}
		lastErr = err
		slog.Debug("storage: ranged GET broke off, retrying", "object", o.s.objectName(o.key), "range", rng, "err", err)
	}
	return fmt.Errorf("storage: GET %s %s: %v (after %d attempts)", o.s.objectName(o.key), rng, lastErr, o.s.opts.MaxAttempts)
}

// readRange checks that an answer covers exactly [off, off+len(p)) of an
// object of size bytes and reads its body into p.
func readRange(out *s3.GetObjectOutput, off int64, p []byte, size int64) error {
	defer out.Body.Close()
	if out.ContentLength != nil && *out.ContentLength != int64(len(p)) {
		return fmt.Errorf("answer has %d bytes, asked for %d", *out.ContentLength, len(p))
	}
	if cr := aws.ToString(out.ContentRange); cr != "" {
		want := fmt.Sprintf("bytes %d-%d/", off, off+int64(len(p))-1)
		if !strings.HasPrefix(cr, want) {
			return fmt.Errorf("answer has range %q, asked for %q", cr, want)
		}
		if total := strings.TrimPrefix(cr, want); total != "*" && total != strconv.FormatInt(size, 10) {
			// A server that ignored If-Match would show a new size here.
			return fmt.Errorf("%w: the object has %s bytes, %d when it was opened", ErrChanged, total, size)
		}
	} else if off != 0 {
		return errors.New("server ignored the Range header")
	}
	if _, err := io.ReadFull(out.Body, p); err != nil {
		return err
	}
	return nil
}

// immutablePrefixes hold objects that never change once written, so
// whole reads of them may be cached by key. table.json and tag/ are not
// among them (tags are deleted and created again).
var immutablePrefixes = []string{"snapshot/", "manifest/", "schema/", "data/"}

func cacheable(key string) bool {
	for _, p := range immutablePrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// metaCacheLimit is the largest object kept in the metadata cache.
const metaCacheLimit = 4 << 20

// ReadAll implements Store.
func (s *S3) ReadAll(ctx context.Context, key string) ([]byte, error) {
	full, err := s.fullKey(key)
	if err != nil {
		return nil, err
	}
	useCache := s.shared.meta != nil && cacheable(key)
	cacheKey := s.bucket + "/" + full
	if useCache {
		if b, ok := s.shared.meta.Get(cacheKey); ok {
			s.shared.stats.metaHits.Add(1)
			return bytes.Clone(b), nil
		}
	}
	var lastErr error
	for attempt := 0; attempt < s.opts.MaxAttempts; attempt++ {
		if attempt > 0 {
			s.shared.stats.retries.Add(1)
			if err := s.backoff(ctx, attempt); err != nil {
				return nil, s.wrap("GET", key, err)
			}
		}
		s.shared.stats.gets.Add(1)
		out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &full})
		if err != nil {
			return nil, s.wrap("GET", key, err)
		}
		data, err := readWhole(out)
		if err == nil {
			s.shared.stats.bytesRead.Add(int64(len(data)))
			if useCache && len(data) <= metaCacheLimit {
				s.shared.meta.Add(cacheKey, bytes.Clone(data))
			}
			return data, nil
		}
		if ctx.Err() != nil {
			return nil, s.wrap("GET", key, ctx.Err())
		}
		lastErr = err
	}
	return nil, fmt.Errorf("storage: GET %s: %v (after %d attempts)", s.objectName(key), lastErr, s.opts.MaxAttempts)
}

func readWhole(out *s3.GetObjectOutput) ([]byte, error) {
	defer out.Body.Close()
	size := aws.ToInt64(out.ContentLength)
	if out.ContentLength == nil || size < 0 {
		return io.ReadAll(out.Body)
	}
	if size > 1<<31 {
		return nil, fmt.Errorf("object of %d bytes is too large to read whole", size)
	}
	buf := make([]byte, size)
	if _, err := io.ReadFull(out.Body, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// Put implements Store. An object smaller than a part is one PutObject;
// a larger one is a multipart upload of PartSize parts, UploadConcurrency
// at a time, aborted if anything fails so no parts are left behind.
func (s *S3) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	full, err := s.fullKey(key)
	if err != nil {
		return 0, err
	}
	// Up to one part is buffered (growing with the data, so small objects
	// cost little); an object that fits is one PutObject.
	var first bytes.Buffer
	n, err := io.CopyN(&first, r, s.opts.PartSize)
	switch {
	case err == io.EOF:
		s.shared.stats.puts.Add(1)
		_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket: &s.bucket, Key: &full, Body: bytes.NewReader(first.Bytes()), ContentLength: aws.Int64(n),
		})
		if err != nil {
			return 0, s.wrap("PUT", key, err)
		}
		s.shared.stats.bytesWritten.Add(n)
		return n, nil
	case err != nil:
		return 0, fmt.Errorf("storage: write %s: %w", s.objectName(key), err)
	}
	u, err := s.startUpload(ctx, key, full, false)
	if err != nil {
		return 0, err
	}
	u.stream(first.Bytes()[:n:n], r)
	return u.finish()
}

// PutIfAbsent implements Store with a conditional PUT (If-None-Match: *).
// 412 means the key is taken. Because a PUT whose answer was lost may have
// succeeded, a 412 is checked against the object's content: identical
// bytes mean this call created it. 409 (a concurrent conditional write in
// progress) is retried.
func (s *S3) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	full, err := s.fullKey(key)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		s.shared.stats.puts.Add(1)
		_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket: &s.bucket, Key: &full, Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
			IfNoneMatch: aws.String("*"),
		})
		if err == nil {
			s.shared.stats.bytesWritten.Add(int64(len(data)))
			return nil
		}
		switch st := httpStatus(err); {
		case st == http.StatusPreconditionFailed:
			mine, herr := s.holds(ctx, key, full, data)
			if herr != nil {
				return fmt.Errorf("storage: create %s: the key is taken and its content could not be compared with ours: %w", s.objectName(key), herr)
			}
			if mine {
				return nil
			}
			return fmt.Errorf("%w: %s", ErrExists, s.objectName(key))
		case st == http.StatusConflict && attempt+1 < s.opts.MaxAttempts:
			if err := s.backoff(ctx, attempt+1); err != nil {
				return s.wrap("PUT", key, err)
			}
			continue
		case st == http.StatusNotImplemented || apiCode(err) == "NotImplemented":
			return fmt.Errorf("storage: PUT %s: the server does not support conditional writes (If-None-Match), which commits need: %w",
				s.objectName(key), s.wrap("PUT", key, err))
		}
		return s.wrap("PUT", key, err)
	}
}

// holds reports whether the object key has exactly the content data. An
// answer it cannot get is an error: guessing "no" could make a commit that
// landed look lost, guessing "yes" one that was lost look landed.
func (s *S3) holds(ctx context.Context, key, full string, data []byte) (bool, error) {
	var lastErr error
	for attempt := 0; attempt < s.opts.MaxAttempts; attempt++ {
		if attempt > 0 {
			if err := s.backoff(ctx, attempt); err != nil {
				return false, s.wrap("GET", key, err)
			}
		}
		s.shared.stats.gets.Add(1)
		out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &full})
		if err != nil {
			if isNotFound(err) {
				return false, nil // taken and deleted again since: not ours
			}
			return false, s.wrap("GET", key, err)
		}
		got, err := readWhole(out)
		if err == nil {
			return bytes.Equal(got, data), nil
		}
		lastErr = err
	}
	return false, fmt.Errorf("storage: GET %s: %v (after %d attempts)", s.objectName(key), lastErr, s.opts.MaxAttempts)
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, key string) error {
	full, err := s.fullKey(key)
	if err != nil {
		return err
	}
	if s.shared.meta != nil {
		s.shared.meta.Remove(s.bucket + "/" + full)
	}
	s.shared.stats.deletes.Add(1)
	if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &full}); err != nil && !isNotFound(err) {
		return s.wrap("DELETE", key, err)
	}
	return nil
}

// List implements Store.
func (s *S3) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	var out []ObjectInfo
	err := s.listPages(ctx, prefix, "", func(page *s3.ListObjectsV2Output) {
		for _, o := range page.Contents {
			key := strings.TrimPrefix(aws.ToString(o.Key), s.prefix)
			if CheckKey(key) != nil {
				continue // "directory" markers and names no store writes
			}
			out = append(out, ObjectInfo{Key: key, Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified)})
		}
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// ListDirs implements DirLister: the names NAME for which some key starts
// with prefix+NAME+"/" (a delimited listing, so one request per 1000
// names however many objects lie below).
func (s *S3) ListDirs(ctx context.Context, prefix string) ([]string, error) {
	var out []string
	err := s.listPages(ctx, prefix, "/", func(page *s3.ListObjectsV2Output) {
		for _, cp := range page.CommonPrefixes {
			name := strings.TrimSuffix(strings.TrimPrefix(aws.ToString(cp.Prefix), s.prefix+prefix), "/")
			if name != "" && !strings.Contains(name, "/") {
				out = append(out, name)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

// listPages calls f with every page of a ListObjectsV2 listing. A page
// whose answer broke off (which the SDK does not retry: it fails while
// decoding) is asked for again.
func (s *S3) listPages(ctx context.Context, prefix, delimiter string, f func(*s3.ListObjectsV2Output)) error {
	in := &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(s.prefix + prefix)}
	if delimiter != "" {
		in.Delimiter = &delimiter
	}
	for {
		var page *s3.ListObjectsV2Output
		err := s.retryBroken(ctx, func() (err error) {
			s.shared.stats.lists.Add(1)
			page, err = s.client.ListObjectsV2(ctx, in)
			return err
		})
		if err != nil {
			return s.wrap("LIST", prefix+"*", err)
		}
		f(page)
		if !aws.ToBool(page.IsTruncated) || aws.ToString(page.NextContinuationToken) == "" {
			return nil
		}
		in.ContinuationToken = page.NextContinuationToken
	}
}

// brokenAnswer reports whether err is an answer that broke off or could
// not be decoded: the request may be repeated, the SDK does not.
func brokenAnswer(err error) bool {
	var de *smithy.DeserializationError
	return errors.As(err, &de) || errors.Is(err, io.ErrUnexpectedEOF)
}

// retryBroken runs a read-only request again while its answer breaks off.
func (s *S3) retryBroken(ctx context.Context, req func() error) error {
	var err error
	for attempt := 0; attempt < s.opts.MaxAttempts; attempt++ {
		if attempt > 0 {
			s.shared.stats.retries.Add(1)
			if berr := s.backoff(ctx, attempt); berr != nil {
				return berr
			}
		}
		if err = req(); err == nil || !brokenAnswer(err) {
			return err
		}
	}
	return err
}

// uploadMarker separates an object key from an upload id in the keys
// ListTemporaries returns.
const uploadMarker = "#upload="

// ListTemporaries implements Temporaries: the multipart uploads in
// progress under the store's prefix, the S3 form of a crashed writer's
// temporary files.
func (s *S3) ListTemporaries(ctx context.Context) ([]ObjectInfo, error) {
	var out []ObjectInfo
	in := &s3.ListMultipartUploadsInput{Bucket: &s.bucket, Prefix: aws.String(s.prefix)}
	for {
		var page *s3.ListMultipartUploadsOutput
		err := s.retryBroken(ctx, func() (err error) {
			s.shared.stats.lists.Add(1)
			page, err = s.client.ListMultipartUploads(ctx, in)
			return err
		})
		if err != nil {
			return nil, s.wrap("list multipart uploads under", "", err)
		}
		for _, u := range page.Uploads {
			key := strings.TrimPrefix(aws.ToString(u.Key), s.prefix)
			out = append(out, ObjectInfo{Key: key + uploadMarker + aws.ToString(u.UploadId), ModTime: aws.ToTime(u.Initiated)})
		}
		if !aws.ToBool(page.IsTruncated) || (aws.ToString(page.NextKeyMarker) == "" && aws.ToString(page.NextUploadIdMarker) == "") {
			break
		}
		in.KeyMarker, in.UploadIdMarker = page.NextKeyMarker, page.NextUploadIdMarker
	}
	return out, nil
}

// DeleteTemporary implements Temporaries: it aborts an upload returned by
// ListTemporaries.
func (s *S3) DeleteTemporary(ctx context.Context, info ObjectInfo) error {
	key, id, ok := strings.Cut(info.Key, uploadMarker)
	if !ok || id == "" {
		return fmt.Errorf("%w: %q is not a multipart upload", ErrInvalidKey, info.Key)
	}
	full := s.prefix + key
	if _, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: &full, UploadId: &id}); err != nil && !isNotFound(err) && apiCode(err) != "NoSuchUpload" {
		return s.wrap("abort multipart upload of", key, err)
	}
	return nil
}

// CreateBucket creates the store's bucket (tests and first-time setup of
// S3-compatible servers); an existing bucket of the caller is no error.
func (s *S3) CreateBucket(ctx context.Context) error {
	_, err := s.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &s.bucket})
	if err != nil {
		if code := apiCode(err); code == "BucketAlreadyOwnedByYou" || code == "BucketAlreadyExists" {
			return nil
		}
		return s.wrap("create bucket", "", err)
	}
	return nil
}
