// Command s3bench measures `framefs ingest` of a video stored on S3 side
// by side with what a user would do without it, in the same run, against
// the S3 server the environment names (AWS_ENDPOINT_URL and credentials;
// scripts/bench-s3.sh starts versitygw on loopback):
//
//   - into an S3 table with --no-sizes (the server copies the payload):
//     bytes the node reads from S3, and the time against the server's own
//     CopyObject of the object, and against the same one-part multipart
//     copy with SHA-256 part checksums that framefs asks of the server (on
//     a server whose multipart uploads cost more than CopyObject, that
//     ratio is framefs's own overhead);
//   - into a local table (the payload streams through the node): bytes
//     read and the time against the AWS SDK's download manager
//     (feature/s3/manager) downloading the object to a file on the same
//     disk, synced as the table's pack is.
//
// Bytes read are taken from framefs's own report and, once per mode, from
// a proxy that counts the answer bodies on the wire. Prints NAME VALUE
// UNIT lines (see scripts/bench.sh); times are medians of -runs runs.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func main() {
	bin := flag.String("bin", "bin/framefs", "framefs binary")
	video := flag.String("video", "", "the video to put on S3 and ingest")
	bucket := flag.String("bucket", "bench", "bucket (created if missing)")
	work := flag.String("work", "", "local directory for local tables and downloads")
	runs := flag.Int("runs", 3, "runs of each timed operation (the median is reported)")
	serverPID := flag.Int("server-pid", 0, "pid of the S3 server, to count its CPU time")
	flag.Parse()
	if *video == "" || *work == "" {
		log.Fatal("give -video and -work")
	}
	ctx := context.Background()
	b := &bench{bin: *bin, bucket: *bucket, work: *work, endpoint: os.Getenv("AWS_ENDPOINT_URL"), serverPID: *serverPID}
	b.client = newClient(ctx, b.endpoint)
	if _, err := b.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket}); err != nil && !strings.Contains(err.Error(), "BucketAlreadyOwnedByYou") && !strings.Contains(err.Error(), "BucketAlreadyExists") {
		log.Fatalf("create bucket: %v", err)
	}
	st, err := os.Stat(*video)
	if err != nil {
		log.Fatal(err)
	}
	payload := st.Size()
	b.upload(ctx, *video, "src/episode.mp4")
	src := "s3://" + b.bucket + "/src/episode.mp4"
	emit("s3_ingest_payload", float64(payload), "bytes")

	// Into an S3 table: server-side copy. The runs alternate, so that the
	// machine's other load falls on every side alike.
	var ingestCopy, copyObject, multipart []cost
	var copyRead int64
	for i := 0; i < *runs; i++ {
		copyObject = append(copyObject, b.measure(func() { b.copyObject(ctx, "src/episode.mp4", "peer/copy.mp4") }))
		b.deletePrefix(ctx, "peer/")
		multipart = append(multipart, b.measure(func() { b.multipartCopy(ctx, "src/episode.mp4", "peer/mp.mp4", payload) }))
		b.deletePrefix(ctx, "peer/")
		tbl := fmt.Sprintf("s3://%s/tables/copy%d", b.bucket, i)
		b.framefs(b.endpoint, "create", tbl, "--column", "note:string?")
		var out string
		ingestCopy = append(ingestCopy, b.measure(func() { out = b.framefs(b.endpoint, "ingest", tbl, src, "--no-sizes", "--s3-cache-dir", "off") }))
		copyRead = bytesRead(out)
		if copied := bytesCopied(out); copied != payload {
			log.Fatalf("the S3 table ingest copied %d bytes server-side, not the payload's %d:\n%s", copied, payload, out)
		}
		b.deletePrefix(ctx, "tables/")
	}
	proxy := startCountingProxy(b.endpoint)
	tbl := fmt.Sprintf("s3://%s/tables/proxied", b.bucket)
	b.framefs(b.endpoint, "create", tbl, "--column", "note:string?")
	proxy.reset()
	b.framefs(proxy.endpoint, "ingest", tbl, src, "--no-sizes", "--s3-cache-dir", "off")
	copyWire := proxy.body.Load()
	b.deletePrefix(ctx, "tables/")

	ic, co, mp := medians(ingestCopy), medians(copyObject), medians(multipart)
	emit("s3_ingest_copy_bytes_read", float64(copyRead), "bytes")
	emit("s3_ingest_copy_bytes_read_on_wire", float64(copyWire), "bytes")
	emit("s3_ingest_copy_bytes_read_vs_payload", float64(copyWire)/float64(payload), "x")
	emit("s3_ingest_copy_time", ic.wall, "s")
	emit("s3_copyobject_time", co.wall, "s")
	emit("s3_multipart_copy_sha256_time", mp.wall, "s")
	emit("s3_ingest_copy_time_vs_copyobject", ic.wall/co.wall, "x")
	emit("ratio:s3_ingest_copy_vs_copyobject", co.wall/ic.wall, "x")
	emit("ratio:s3_ingest_copy_vs_multipart_copy_sha256", mp.wall/ic.wall, "x")
	if b.serverPID != 0 {
		emit("s3_ingest_copy_server_cpu", ic.server, "s")
		emit("s3_copyobject_server_cpu", co.server, "s")
		emit("s3_multipart_copy_sha256_server_cpu", mp.server, "s")
	}
	emit("s3_ingest_copy_client_cpu", ic.client, "s")

	// Into a local table: streamed through the node.
	var ingestStream, download []cost
	var streamRead, streamRSS int64
	for i := 0; i < *runs; i++ {
		file := filepath.Join(b.work, "download.mp4")
		download = append(download, b.measure(func() { b.download(ctx, "src/episode.mp4", file) }))
		os.Remove(file)
		tbl := filepath.Join(b.work, fmt.Sprintf("local%d", i))
		b.framefs(b.endpoint, "create", tbl, "--column", "note:string?")
		var out string
		ingestStream = append(ingestStream, b.measure(func() { out = b.framefs(b.endpoint, "ingest", tbl, src, "--no-sizes") }))
		streamRead = bytesRead(out)
		streamRSS = max(streamRSS, b.lastRSS)
		os.RemoveAll(tbl)
	}
	tbl = filepath.Join(b.work, "proxied")
	b.framefs(b.endpoint, "create", tbl, "--column", "note:string?")
	proxy.reset()
	b.framefs(proxy.endpoint, "ingest", tbl, src, "--no-sizes")
	streamWire := proxy.body.Load()
	os.RemoveAll(tbl)

	is, dl := medians(ingestStream), medians(download)
	emit("s3_ingest_stream_bytes_read", float64(streamRead), "bytes")
	emit("s3_ingest_stream_bytes_read_on_wire", float64(streamWire), "bytes")
	emit("s3_ingest_stream_bytes_read_vs_payload", float64(streamWire)/float64(payload), "x")
	emit("s3_ingest_stream_throughput", float64(payload)/is.wall/1e6, "MB/s")
	emit("s3_download_manager_throughput", float64(payload)/dl.wall/1e6, "MB/s")
	emit("ratio:s3_ingest_stream_vs_download_manager", dl.wall/is.wall, "x")
	emit("s3_ingest_stream_client_cpu", is.client, "s")
	emit("s3_download_manager_client_cpu", dl.client, "s")
	emit("s3_ingest_stream_peak_rss", float64(streamRSS)/1e6, "MB")
}

// cost is what one operation took: wall time, and the CPU time of this
// side (this process and the framefs it ran) and of the S3 server.
type cost struct {
	wall, client, server float64
}

func medians(cs []cost) cost {
	pick := func(f func(cost) float64) float64 {
		v := make([]float64, len(cs))
		for i, c := range cs {
			v[i] = f(c)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	return cost{
		wall:   pick(func(c cost) float64 { return c.wall }),
		client: pick(func(c cost) float64 { return c.client }),
		server: pick(func(c cost) float64 { return c.server }),
	}
}

type bench struct {
	bin, bucket, work, endpoint string
	serverPID                   int
	client                      *s3.Client
	lastRSS                     int64 // peak resident memory of the last framefs run, in bytes
}

func newClient(ctx context.Context, endpoint string) *s3.Client {
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired))
	if err != nil {
		log.Fatal(err)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.UsePathStyle = true
	})
}

func emit(name string, value float64, unit string) {
	fmt.Printf("%s %s %s\n", name, strconv.FormatFloat(value, 'g', 6, 64), unit)
}

// measure runs f after the machine has settled (the previous run's
// writes synced) and returns what it cost.
func (b *bench) measure(f func()) cost {
	exec.Command("sync").Run()
	self0, children0, server0 := cpu(syscall.RUSAGE_SELF), cpu(syscall.RUSAGE_CHILDREN), b.serverCPU()
	start := time.Now()
	f()
	return cost{
		wall:   time.Since(start).Seconds(),
		client: cpu(syscall.RUSAGE_SELF) - self0 + cpu(syscall.RUSAGE_CHILDREN) - children0,
		server: b.serverCPU() - server0,
	}
}

// cpu is the user and system CPU time of this process or of its waited-for
// children, in seconds.
func cpu(who int) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		log.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// serverCPU is the S3 server's user and system CPU time so far, in seconds.
func (b *bench) serverCPU() float64 {
	if b.serverPID == 0 {
		return 0
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", b.serverPID))
	if err != nil {
		log.Fatal(err)
	}
	// Fields after the command name, which is in parentheses: utime and
	// stime are the 12th and 13th.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat times (100 on Linux).
const clockTicks = 100

// framefs runs the framefs binary against endpoint and returns its output.
func (b *bench) framefs(endpoint string, args ...string) string {
	cmd := exec.Command(b.bin, args...)
	cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL="+endpoint)
	out, err := cmd.CombinedOutput()
	if err != nil {
		log.Fatalf("framefs %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		b.lastRSS = ru.Maxrss * 1024
	}
	return string(out)
}

var (
	readRE   = regexp.MustCompile(`S3 sources: (\d+) bytes read`)
	copiedRE = regexp.MustCompile(`(\d+) bytes copied by the server`)
)

func bytesRead(out string) int64 {
	m := readRE.FindStringSubmatch(out)
	if m == nil {
		log.Fatalf("framefs ingest did not report the bytes it read from S3:\n%s", out)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

func bytesCopied(out string) int64 {
	m := copiedRE.FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

func (b *bench) upload(ctx context.Context, file, key string) {
	f, err := os.Open(file)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	//lint:ignore SA1019 the source object is put in place as the benchmark's figures were first measured: in 64 MiB parts by the SDK's upload manager
	up := manager.NewUploader(b.client, func(u *manager.Uploader) { u.PartSize = 64 << 20 })
	//lint:ignore SA1019 see above
	if _, err := up.Upload(ctx, &s3.PutObjectInput{Bucket: &b.bucket, Key: &key, Body: f}); err != nil {
		log.Fatalf("upload %s: %v", file, err)
	}
}

// copyObject is the server's own copy of an object (one request).
func (b *bench) copyObject(ctx context.Context, src, dst string) {
	_, err := b.client.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &b.bucket, Key: &dst, CopySource: aws.String(b.bucket + "/" + src)})
	if err != nil {
		log.Fatalf("CopyObject: %v", err)
	}
}

// multipartCopy is what the copy framefs makes costs the server by
// itself: one UploadPartCopy of all of the object into an upload with
// SHA-256 part checksums, then the completion.
func (b *bench) multipartCopy(ctx context.Context, src, dst string, size int64) {
	up, err := b.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b.bucket, Key: &dst, ChecksumAlgorithm: types.ChecksumAlgorithmSha256})
	if err != nil {
		log.Fatal(err)
	}
	part, err := b.client.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: &b.bucket, Key: &dst, UploadId: up.UploadId, PartNumber: aws.Int32(1),
		CopySource: aws.String(b.bucket + "/" + src), CopySourceRange: aws.String(fmt.Sprintf("bytes=0-%d", size-1))})
	if err != nil {
		log.Fatalf("UploadPartCopy: %v", err)
	}
	_, err = b.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b.bucket, Key: &dst, UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{ETag: part.CopyPartResult.ETag, PartNumber: aws.Int32(1),
			ChecksumSHA256: part.CopyPartResult.ChecksumSHA256}}}})
	if err != nil {
		log.Fatalf("CompleteMultipartUpload: %v", err)
	}
}

// download fetches the object with the SDK's download manager (its
// default part size and concurrency) into file, and syncs it.
func (b *bench) download(ctx context.Context, key, file string) {
	f, err := os.Create(file)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	//lint:ignore SA1019 the peer measured is the SDK's download manager that pipelines use today; its successor would be another peer
	if _, err := manager.NewDownloader(b.client).Download(ctx, f, &s3.GetObjectInput{Bucket: &b.bucket, Key: &key}); err != nil {
		log.Fatalf("download: %v", err)
	}
	if err := f.Sync(); err != nil {
		log.Fatal(err)
	}
}

func (b *bench) deletePrefix(ctx context.Context, prefix string) {
	p := s3.NewListObjectsV2Paginator(b.client, &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			log.Fatal(err)
		}
		for _, o := range page.Contents {
			if _, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b.bucket, Key: o.Key}); err != nil {
				log.Fatal(err)
			}
		}
	}
}

// countingProxy forwards to an S3 server and counts the bytes of the
// answers' bodies: what a client read from the server.
type countingProxy struct {
	endpoint string
	body     atomic.Int64
}

func startCountingProxy(target string) *countingProxy {
	u, err := url.Parse(target)
	if err != nil {
		log.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	p := &countingProxy{endpoint: "http://" + l.Addr().String()}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			r.Out.Host = r.In.Host // signed by the client: kept
		},
		ModifyResponse: func(resp *http.Response) error {
			resp.Body = &countingBody{ReadCloser: resp.Body, n: &p.body}
			return nil
		},
	}
	go http.Serve(l, rp)
	return p
}

func (p *countingProxy) reset() { p.body.Store(0) }

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingBody) Read(b []byte) (int, error) {
	n, err := c.ReadCloser.Read(b)
	c.n.Add(int64(n))
	return n, err
}
