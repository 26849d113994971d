// Package s3test starts real S3-compatible servers (versitygw) on loopback
// for tests, and a fault-injecting proxy to put between a client and one.
//
// Tests that need S3 call Start; when versitygw is not installed they are
// skipped, unless FRAMEFS_REQUIRE_S3=1 (set by CI), when they fail (see
// package testenv). scripts/versitygw.sh builds the binary into .cache/bin;
// `make test` runs it first.
package s3test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/framefs/framefs/internal/testenv"
	"github.com/framefs/framefs/table/storage"
)

// RandomBytes returns n pseudo-random bytes, the same for the same seed:
// object contents for tests.
func RandomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	var key [32]byte
	key[0], key[1] = byte(seed), byte(seed>>8)
	mrand.NewChaCha8(key).Read(b)
	return b
}

// Server is a running versitygw with one bucket.
type Server struct {
	Endpoint  string // http://127.0.0.1:PORT
	AccessKey string
	SecretKey string
	Region    string
	Bucket    string
	Dir       string // the posix backend's directory
}

var (
	binOnce sync.Once
	binPath string
)

// Binary returns the path of versitygw, or "" when there is none.
func Binary() string {
	binOnce.Do(func() {
		if p := os.Getenv("VERSITYGW"); p != "" {
			binPath = p
			return
		}
		if root := repoRoot(); root != "" {
			p := filepath.Join(root, ".cache", "bin", "versitygw")
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				binPath = p
				return
			}
		}
		if p, err := exec.LookPath("versitygw"); err == nil {
			binPath = p
		}
	})
	return binPath
}

func repoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Start starts a versitygw on a free loopback port with a new temporary
// directory and bucket, and stops it when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		testenv.Missing(t, testenv.S3, "versitygw not found: run scripts/versitygw.sh build (make test does), or set VERSITYGW")
	}
	var lastErr error
	for try := 0; try < 3; try++ {
		srv, err := start(t, bin)
		if err == nil {
			return srv
		}
		lastErr = err
	}
	t.Fatalf("start versitygw: %v", lastErr)
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func start(t testing.TB, bin string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir := t.TempDir()
	s := &Server{
		Endpoint:  fmt.Sprintf("http://127.0.0.1:%d", port),
		AccessKey: "AKTEST" + strings.ToUpper(randomHex(6)),
		SecretKey: "sk-" + randomHex(16),
		Region:    "us-east-1",
		Bucket:    "framefs-test",
		Dir:       filepath.Join(dir, "data"),
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "versitygw.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--port", fmt.Sprintf("127.0.0.1:%d", port), "--access", s.AccessKey, "--secret", s.SecretKey,
		"--quiet", "posix", s.Dir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The server dies with the test binary even if that is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logFile.Close(); close(exited) }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(s.Endpoint + "/")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "versitygw.log"))
			return nil, fmt.Errorf("versitygw exited: %s", log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("versitygw did not answer on %s", s.Endpoint)
		}
	}
	t.Cleanup(stop)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := storage.NewS3(ctx, s.URI(""), s.Options())
	if err != nil {
		return nil, err
	}
	if err := st.CreateBucket(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// URI returns s3://BUCKET/prefix.
func (s *Server) URI(prefix string) string {
	return "s3://" + s.Bucket + "/" + strings.TrimPrefix(prefix, "/")
}

// Options returns store options that reach this server with its
// credentials (and no block cache).
func (s *Server) Options() storage.S3Options {
	return storage.S3Options{
		Endpoint:    s.Endpoint,
		Region:      s.Region,
		Credentials: credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
		MaxBackoff:  500 * time.Millisecond,
	}
}

// Env returns environment variables that point the AWS SDK's standard
// chain (and so a framefs process) at this server.
func (s *Server) Env() []string {
	return []string{
		"AWS_ENDPOINT_URL=" + s.Endpoint,
		"AWS_ACCESS_KEY_ID=" + s.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s.SecretKey,
		"AWS_REGION=" + s.Region,
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
	}
}

// Open returns a store at prefix of the bucket, with opts applied on top
// of Options (a cache directory, part size, ...).
func (s *Server) Open(t testing.TB, prefix string, tweak func(*storage.S3Options)) *storage.S3 {
	t.Helper()
	opts := s.Options()
	if tweak != nil {
		tweak(&opts)
	}
	st, err := storage.NewS3(context.Background(), s.URI(prefix), opts)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Client returns a plain AWS SDK client of this server, for what a test
// does behind framefs's back (replacing a source, leaving an upload).
func (s *Server) Client(t testing.TB) *s3.Client {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion(s.Region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, "")),
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired))
	if err != nil {
		t.Fatal(err)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) { o.BaseEndpoint = aws.String(s.Endpoint); o.UsePathStyle = true })
}

// StartUpload starts a multipart upload of key (a full key in the bucket)
// and leaves it unfinished, as a writer that crashed mid-upload would.
func (s *Server) StartUpload(t testing.TB, key string) {
	t.Helper()
	if _, err := s.Client(t).CreateMultipartUpload(context.Background(), &s3.CreateMultipartUploadInput{Bucket: &s.Bucket, Key: &key}); err != nil {
		t.Fatal(err)
	}
}

// PutObject stores data at key (a full key in the bucket) directly.
func (s *Server) PutObject(t testing.TB, key string, data []byte) {
	t.Helper()
	_, err := s.Client(t).PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: &s.Bucket, Key: &key, Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
	})
	if err != nil {
		t.Fatal(err)
	}
}
