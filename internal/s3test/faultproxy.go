package s3test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Faults are the probabilities (0..1) of each fault per request.
type Faults struct {
	// Error answers 500 or 503 (an S3 XML error) without forwarding.
	Error float64
	// DropBefore closes the connection without forwarding the request.
	DropBefore float64
	// DropAfter forwards the request, then closes the connection instead
	// of answering: the server did the work, the client never hears.
	DropAfter float64
	// Truncate forwards the answer but breaks the connection halfway
	// through its body.
	Truncate float64
	// MaxDelay delays each request by a random time up to this.
	MaxDelay time.Duration
	// Stall holds the request unanswered until the client gives up (a
	// server or network that hangs).
	Stall float64
}

// FaultProxy is an HTTP proxy on loopback that forwards to an S3 server and
// injects faults at random. Signatures stay valid: the Host header is
// forwarded unchanged.
type FaultProxy struct {
	// Endpoint is the proxy's URL, to use in place of the server's.
	Endpoint string

	target    string
	transport *http.Transport
	srv       *http.Server

	mu     sync.Mutex // guards faults and rng
	faults Faults
	rng    *rand.Rand

	Requests, Errors, Drops, Truncations, Stalls atomic.Int64
	// BodyBytes counts the bytes of the answers' bodies passed to clients
	// (what a client read from the server through the proxy).
	BodyBytes atomic.Int64
}

// StartFaultProxy starts a proxy in front of target (http://host:port),
// stopped when the test ends.
func StartFaultProxy(t testing.TB, target string, faults Faults, seed uint64) *FaultProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &FaultProxy{
		Endpoint:  "http://" + l.Addr().String(),
		target:    strings.TrimSuffix(target, "/"),
		transport: &http.Transport{MaxIdleConnsPerHost: 32, DisableCompression: true},
		faults:    faults,
		rng:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}
	p.srv = &http.Server{Handler: p, ErrorLog: nil}
	go p.srv.Serve(l)
	t.Cleanup(func() {
		p.srv.Close()
		p.transport.CloseIdleConnections()
	})
	return p
}

// SetFaults changes the fault rates (zero Faults: a plain proxy).
func (p *FaultProxy) SetFaults(f Faults) {
	p.mu.Lock()
	p.faults = f
	p.mu.Unlock()
}

func (p *FaultProxy) roll() (f Faults, r [5]float64, delay time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range r {
		r[i] = p.rng.Float64()
	}
	if p.faults.MaxDelay > 0 {
		delay = time.Duration(p.rng.Int64N(int64(p.faults.MaxDelay)))
	}
	return p.faults, r, delay
}

func (p *FaultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.Requests.Add(1)
	f, roll, delay := p.roll()
	time.Sleep(delay)
	switch {
	case roll[0] < f.Error:
		p.Errors.Add(1)
		io.Copy(io.Discard, r.Body)
		code, name := http.StatusInternalServerError, "InternalError"
		if roll[3] < 0.5 {
			code, name = http.StatusServiceUnavailable, "SlowDown"
		}
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(code)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected fault</Message></Error>`, name)
		return
	case roll[1] < f.DropBefore:
		p.Drops.Add(1)
		panic(http.ErrAbortHandler) // closes the connection, no answer
	case roll[4] < f.Stall:
		p.Stalls.Add(1)
		<-r.Context().Done()
		panic(http.ErrAbortHandler)
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = "http", strings.TrimPrefix(p.target, "http://")
	out.Host = r.Host
	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	defer resp.Body.Close()
	if roll[2] < f.DropAfter {
		p.Drops.Add(1)
		io.Copy(io.Discard, resp.Body)
		panic(http.ErrAbortHandler)
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	if roll[3] < f.Truncate && resp.ContentLength > 1 {
		p.Truncations.Add(1)
		n, _ := io.CopyN(w, resp.Body, resp.ContentLength/2)
		p.BodyBytes.Add(n)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	n, _ := io.Copy(w, resp.Body)
	p.BodyBytes.Add(n)
}
