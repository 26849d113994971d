package table

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"log/slog"
	"runtime"
	"sync"

	"github.com/framefs/framefs/table/input"
	"github.com/framefs/framefs/table/storage"
	"github.com/framefs/framefs/videoidx"
)

// preparedVideo is a video input checked and indexed, ready to be
// packed. Its input is pinned to the version that was indexed: packing
// refuses one that changed since.
type preparedVideo struct {
	src  input.File
	size int64
	// sha256 of the payload: known before packing for local files (which
	// are hashed first), worked out while packing for S3 inputs.
	sha256 string
	// payloadKey is the same for two identical payloads: the SHA-256 when
	// known, else the input's version (object, ETag and range).
	payloadKey    string
	index         *videoidx.Index
	indexData     []byte
	sizes         []byte // encoded sizes block, or nil
	sizesIdentity string // identity of sizes
	// stored is set when the table already holds these bytes: the video
	// is referenced there, not stored again (index and sizes are nil).
	stored *VideoRef
}

// frames is the video's frame count.
func (v *preparedVideo) frames() int64 {
	if v.stored != nil {
		return v.stored.Frames
	}
	return int64(v.index.Frames())
}

// prepareVideo opens a video input (a local file or an S3 object, or a
// byte range of one), indexes it from ranged reads of the boxes it needs,
// and computes frame sizes when the table has a sizer and withSizes is
// set. A local file is also hashed, which reads it once more; an S3
// input is hashed while it is packed. A local video whose hash is in
// stored (and of the same length) is not indexed: it will reference the
// stored payload. What the input holds open is released; packing opens
// it again.
func (t *Table) prepareVideo(ctx context.Context, vf VideoFile, img ImageOptions, withSizes bool, stored map[string]VideoRef) (*preparedVideo, error) {
	src, err := t.opts.Inputs.Open(ctx, vf.Path, input.Range{Offset: vf.Offset, Length: vf.Length})
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) || errors.Is(err, input.ErrOutOfRange) || !storage.IsS3URI(vf.Path) {
			return nil, fmt.Errorf("%w: %w", ErrInvalidInput, err)
		}
		return nil, err
	}
	defer src.Close()
	name := vf.describe()
	if src.Size() == 0 {
		return nil, fmt.Errorf("%w: %s is empty (0 bytes)", ErrInvalidInput, name)
	}
	pv := &preparedVideo{src: src, size: src.Size(), payloadKey: src.Version()}
	if !storage.IsS3URI(vf.Path) {
		if pv.sha256, err = hashInput(ctx, src); err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		pv.payloadKey = "sha256:" + pv.sha256
		if ref, ok := stored[pv.sha256]; ok && ref.Length == pv.size {
			pv.stored = &ref
			return pv, nil
		}
	}
	// A read that failed (the network, an input that changed) is not the
	// video's fault: it must not be reported as a bad video.
	r := &readErrors{r: src}
	if pv.index, err = t.opts.Indexer(ctx, r, src.Size()); err != nil {
		if rerr := r.first(); rerr != nil {
			return nil, fmt.Errorf("index %s: %w", name, rerr)
		}
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidInput, name, err)
	}
	pv.indexData = pv.index.Encode()
	if withSizes && t.opts.Sizer != nil {
		sizes, err := t.opts.Sizer.FrameSizes(ctx, r, src.Size(), pv.index, img)
		if err != nil {
			if rerr := r.first(); rerr != nil {
				return nil, fmt.Errorf("decode %s: %w", name, rerr)
			}
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %s does not decode: %v", ErrInvalidInput, name, err)
		}
		if len(sizes) != pv.index.Frames() {
			return nil, fmt.Errorf("sizes of %s: %d for %d frames", name, len(sizes), pv.index.Frames())
		}
		pv.sizes = encodeSizes(sizes)
		pv.sizesIdentity = t.opts.Sizer.Identity(img)
	}
	return pv, nil
}

// readErrors passes reads through and remembers the first that failed
// with something other than the end of the range.
type readErrors struct {
	r   io.ReaderAt
	mu  sync.Mutex
	err error
}

func (r *readErrors) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.r.ReadAt(p, off)
	if err != nil && err != io.EOF {
		r.mu.Lock()
		if r.err == nil {
			r.err = err
		}
		r.mu.Unlock()
	}
	return n, err
}

func (r *readErrors) first() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// hashInput returns the SHA-256 (hex) of a whole input, streamed.
func hashInput(ctx context.Context, src input.File) (string, error) {
	rc := src.Stream(ctx)
	defer rc.Close()
	h := sha256.New()
	// Large reads: a video is hashed at the speed of the page cache.
	if _, err := io.CopyBuffer(h, rc, make([]byte, 1<<20)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// inputID names a video input as it was given: its path or URI and
// its byte range. Episodes cut from one file give the same input; two
// ranges of one file are two inputs.
type inputID struct {
	path           string
	offset, length int64
}

func (vf VideoFile) id() inputID { return inputID{vf.Path, vf.Offset, vf.Length} }

// preparedVideos prepares the distinct video inputs of a commit
// concurrently (an input given for several episodes, such as a video
// holding consecutive episodes each from its own first frame, is
// prepared once and stored once); get waits for one.
type preparedVideos struct {
	byInput map[inputID]*preparing
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

type preparing struct {
	done chan struct{}
	pv   *preparedVideo
	err  error
}

func (t *Table) prepareAll(ctx context.Context, schema *Schema, inputs []EpisodeInput, withSizes bool, stored map[string]VideoRef) *preparedVideos {
	ctx, cancel := context.WithCancel(ctx)
	p := &preparedVideos{byInput: map[inputID]*preparing{}, cancel: cancel}
	type job struct {
		vf VideoFile
		*preparing
	}
	var jobs []job
	for _, in := range inputs {
		videos, err := normalizeVideos(schema, in.Videos)
		if err != nil {
			continue // reported in input order by the caller
		}
		for _, col := range schema.VideoColumns {
			vf := videos[col]
			if p.byInput[vf.id()] != nil {
				continue
			}
			j := job{vf, &preparing{done: make(chan struct{})}}
			p.byInput[vf.id()] = j.preparing
			jobs = append(jobs, j)
		}
	}
	// Inputs are prepared in the order the caller waits for them, so
	// that it works on the first episodes while later videos are read.
	queue := make(chan job, len(jobs))
	for _, j := range jobs {
		queue <- j
	}
	close(queue)
	for range min(runtime.GOMAXPROCS(0), len(jobs)) {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for j := range queue {
				if err := ctx.Err(); err != nil {
					j.err = err
				} else {
					j.pv, j.err = t.prepareVideo(ctx, j.vf, schema.Image, withSizes, stored)
				}
				close(j.done)
			}
		}()
	}
	return p
}

// get waits for the preparation of a video input.
func (p *preparedVideos) get(vf VideoFile) (*preparedVideo, error) {
	job := p.byInput[vf.id()]
	if job == nil {
		return nil, fmt.Errorf("%w: %s was not prepared", ErrInvalidInput, vf.describe())
	}
	<-job.done
	return job.pv, job.err
}

// stop cancels what is still being prepared and waits for it.
func (p *preparedVideos) stop() {
	p.cancel()
	p.wg.Wait()
}

// storedPayloads maps the SHA-256 of every payload the head snapshot
// references to one reference to it.
func (t *Table) storedPayloads(ctx context.Context) (map[string]VideoRef, error) {
	out := map[string]VideoRef{}
	head, err := t.Head(ctx)
	if err != nil || head == nil {
		return out, err
	}
	eps, err := t.Episodes(ctx, head)
	if err != nil {
		return nil, err
	}
	for _, e := range eps {
		for _, ref := range e.Videos {
			if _, ok := out[ref.SHA256]; !ok && ref.SHA256 != "" {
				out[ref.SHA256] = ref
			}
		}
	}
	return out, nil
}

// reusedObjects lists the objects (packs and sizes objects) of stored
// payloads the videos reference instead of storing them.
func reusedObjects(videos []*preparedVideo) []string {
	seen := map[string]bool{}
	var out []string
	add := func(key string) {
		if !seen[key] {
			seen[key] = true
			out = append(out, key)
		}
	}
	for _, v := range videos {
		if v.stored == nil {
			continue
		}
		add(v.stored.Pack)
		for _, sz := range v.stored.Sizes {
			add(sz.Object)
		}
	}
	return out
}

// packEntry is one payload of a pack with its index and sizes blocks.
type packEntry struct {
	v *preparedVideo
	// copied is set when the object store copies the payload itself
	// from copy, instead of it being streamed.
	copied bool
	copy   storage.CopySource
	ref    VideoRef
}

// packPlan is one pack object to write: its key, its payloads and the
// parts to stream.
type packPlan struct {
	key     string
	entries []*packEntry
	// pieces are the payloads the store copies itself, in pack order;
	// tail (tailSize bytes) is streamed after them.
	pieces   []storage.Piece
	tail     []packPart
	tailSize int64
	size     int64
}

// packLayout is where the videos of a commit go, decided before anything
// is written so that the rows referencing them can be written at the same
// time.
type packLayout struct {
	refs []VideoRef // one per video, in order
	// payloads are the videos whose bytes each reference points at (the
	// video itself, or an identical one stored first): their SHA-256 is
	// known once the packs are written.
	payloads []*preparedVideo
	plans    []packPlan
}

// planPacks lays the videos out in pack objects of about target bytes
// each. Identical payloads within one commit are stored once, and videos
// the table already stores are not stored again.
//
// When the store can copy an input server-side (an S3 table and an S3
// input on the same service), the payload is copied by the server and
// never passes through this machine. S3 wants every part of a multipart
// upload but the last to be at least 5 MiB, so copied payloads (each one
// part) come first in the pack, and the streamed payloads, frame indexes
// and sizes blocks follow as the last parts. Otherwise each payload is
// followed by its index and sizes. Readers find everything by the offsets
// in the manifest either way.
//
// The references' SHA-256 is left empty for payloads hashed while they
// are packed (S3 inputs); see packLayout.sha256.
func (t *Table) planPacks(videos []*preparedVideo, target int64) packLayout {
	copier, _ := t.store.(storage.Copier)
	lay := packLayout{refs: make([]VideoRef, len(videos)), payloads: make([]*preparedVideo, len(videos))}
	seen := map[string]*packEntry{}
	for start := 0; start < len(videos); {
		plan := packPlan{key: newObjectKey(prefixVideo, ".video")}
		var placed []int // videos of this pack, to fill in once it is laid out
		end := start
		for size := int64(0); end < len(videos) && (end == start || size < target); end++ {
			v := videos[end]
			if v.stored != nil {
				ref := *v.stored
				ref.FirstFrame, ref.SourceName = 0, ""
				lay.refs[end], lay.payloads[end] = ref, v
				continue
			}
			if e, ok := seen[v.payloadKey]; ok {
				lay.refs[end], lay.payloads[end] = e.ref, e.v // e is laid out already or below
				placed = append(placed, end)
				continue
			}
			e := &packEntry{v: v}
			if cs, ok := input.CopySourceOf(v.src); ok && copier != nil && copier.CanCopy(cs) {
				e.copied, e.copy = true, cs
			}
			plan.entries = append(plan.entries, e)
			seen[v.payloadKey] = e
			lay.payloads[end] = v
			placed = append(placed, end)
			size += v.size + int64(len(v.indexData)) + int64(len(v.sizes))
		}
		for _, e := range plan.entries {
			if e.copied {
				e.ref.Offset = plan.size
				plan.pieces = append(plan.pieces, storage.Piece{Copy: &e.copy, Size: e.v.size})
				plan.size += e.v.size
			}
		}
		tailStart := plan.size
		for _, e := range plan.entries {
			v := e.v
			if !e.copied {
				e.ref.Offset = plan.size
				plan.tail = append(plan.tail, packPart{video: v})
				plan.size += v.size
			}
			e.ref.IndexOffset, e.ref.IndexLength = plan.size, int64(len(v.indexData))
			plan.tail = append(plan.tail, packPart{data: v.indexData})
			plan.size += int64(len(v.indexData))
			if v.sizes != nil {
				e.ref.Sizes = []SizesRef{{Identity: v.sizesIdentity, Object: plan.key, Offset: plan.size, Length: int64(len(v.sizes))}}
				plan.tail = append(plan.tail, packPart{data: v.sizes})
				plan.size += int64(len(v.sizes))
			}
			e.ref.Pack, e.ref.Length, e.ref.SHA256 = plan.key, v.size, v.sha256
			e.ref.Frames, e.ref.Codec = int64(v.index.Frames()), v.index.Codec
			e.ref.Width, e.ref.Height = v.index.Width, v.index.Height
		}
		plan.tailSize = plan.size - tailStart
		for _, i := range placed {
			lay.refs[i] = seen[lay.payloads[i].payloadKey].ref
		}
		if len(plan.entries) > 0 { // else only stored or repeated videos: no pack
			lay.plans = append(lay.plans, plan)
		}
		start = end
	}
	return lay
}

// sha256 returns the SHA-256 of video i's payload, known once the packs
// are written.
func (l packLayout) sha256(i int) string { return l.payloads[i].sha256 }

// writePlannedPacks writes the planned pack objects and returns the bytes
// written. The SHA-256 of payloads hashed while packed is recorded on
// their preparedVideo.
func (t *Table) writePlannedPacks(ctx context.Context, plans []packPlan) (int64, error) {
	var written int64
	for _, plan := range plans {
		if err := t.writePack(ctx, plan); err != nil {
			return 0, err
		}
		written += plan.size
	}
	return written, nil
}

func (t *Table) writePack(ctx context.Context, plan packPlan) error {
	parts := &partsReader{ctx: ctx, parts: plan.tail}
	defer parts.closeInput() // a store that stopped reading midway
	if len(plan.pieces) == 0 {
		n, err := t.store.Put(ctx, plan.key, parts)
		if err != nil {
			return fmt.Errorf("write pack: %w", err)
		}
		if parts.err != nil {
			return parts.err
		}
		if n != plan.size {
			return fmt.Errorf("write pack %s: wrote %d bytes, expected %d (did a video change while it was read?)", plan.key, n, plan.size)
		}
		return nil
	}
	copier := t.store.(storage.Copier) // planPacks copies only into a Copier
	pieces := append(plan.pieces[:len(plan.pieces):len(plan.pieces)], storage.Piece{R: parts, Size: plan.tailSize})
	digests, err := copier.PutPieces(ctx, plan.key, pieces)
	if err != nil {
		return fmt.Errorf("write pack: %w", err)
	}
	if parts.err != nil {
		return parts.err
	}
	i := 0
	for _, e := range plan.entries {
		if !e.copied {
			continue
		}
		if e.v.sha256 = digests[i]; e.v.sha256 == "" {
			// The server computed no SHA-256 of the part: the payload
			// is read once to hash it.
			slog.Warn("the S3 server gave no SHA-256 of a copied payload; reading it to hash it", "input", e.v.src.Name())
			h, err := hashInput(ctx, e.v.src)
			if err != nil {
				return fmt.Errorf("hash %s: %w", e.v.src.Name(), err)
			}
			e.v.sha256 = h
		}
		i++
	}
	return nil
}

// writePacks lays out and writes the videos' packs (see planPacks) and
// returns one complete reference per video, in order (first frame and
// source name left for the caller), and the bytes written.
func (t *Table) writePacks(ctx context.Context, videos []*preparedVideo, target int64) ([]VideoRef, int64, error) {
	lay := t.planPacks(videos, target)
	written, err := t.writePlannedPacks(ctx, lay.plans)
	if err != nil {
		return nil, 0, err
	}
	for i := range lay.refs {
		lay.refs[i].SHA256 = lay.sha256(i)
	}
	return lay.refs, written, nil
}

// packPart is a video payload or bytes to append to a pack.
type packPart struct {
	video *preparedVideo
	data  []byte
}

// partsReader streams pack parts one after another, opening each input
// only when it is reached so that a commit of many videos holds one open.
// A payload must come out of its input complete and, when its SHA-256
// was known before, with that hash; otherwise the hash is recorded.
type partsReader struct {
	ctx   context.Context
	parts []packPart
	cur   io.Reader
	video *preparedVideo
	rc    io.ReadCloser
	hash  hash.Hash
	read  int64
	err   error // the first failure, kept: a store may not pass it on
}

func (r *partsReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.read1(p)
	if err != nil && err != io.EOF {
		r.err = err
		r.closeInput()
	}
	return n, err
}

func (r *partsReader) read1(p []byte) (int, error) {
	for {
		if err := r.ctx.Err(); err != nil {
			return 0, err
		}
		if r.cur == nil {
			if len(r.parts) == 0 {
				return 0, io.EOF
			}
			part := r.parts[0]
			r.parts = r.parts[1:]
			if part.video == nil {
				r.cur = &byteReader{b: part.data}
				continue
			}
			r.video, r.rc, r.hash, r.read = part.video, part.video.src.Stream(r.ctx), sha256.New(), 0
			r.cur = r.rc
		}
		n, err := r.cur.Read(p)
		if r.video != nil {
			r.hash.Write(p[:n])
			r.read += int64(n)
		}
		if err == io.EOF {
			if r.video != nil {
				if err := r.finishVideo(); err != nil {
					return n, err
				}
			}
			r.cur = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

// WriteTo streams the remaining parts to w. A local payload, whose
// SHA-256 is known from its preparation, is written by its stream's own
// WriteTo, which a file destination (the local store) turns into
// copy_file_range: its bytes do not pass through user space, and the
// stream checks that the file kept the size and modification time it was
// hashed with. Every other part goes through Read, hashed as it passes.
func (r *partsReader) WriteTo(w io.Writer) (int64, error) {
	if r.cur != nil || r.err != nil { // Read started a part: go on reading
		return io.Copy(w, struct{ io.Reader }{r})
	}
	var total int64
	for len(r.parts) > 0 {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			return total, err
		}
		if v := r.parts[0].video; v != nil && v.sha256 != "" {
			r.parts = r.parts[1:]
			n, err := copyLocalPayload(r.ctx, w, v)
			total += n
			if err != nil {
				r.err = err
				return total, err
			}
			continue
		}
		// The parts up to the next local payload, through Read.
		k := 1
		for k < len(r.parts) && (r.parts[k].video == nil || r.parts[k].video.sha256 == "") {
			k++
		}
		rest := r.parts[k:]
		r.parts = r.parts[:k]
		n, err := io.Copy(w, struct{ io.Reader }{r})
		total += n
		if err != nil {
			return total, err
		}
		r.parts = rest
	}
	return total, nil
}

// copyLocalPayload writes a prepared local payload to w.
func copyLocalPayload(ctx context.Context, w io.Writer, v *preparedVideo) (int64, error) {
	rc := v.src.Stream(ctx)
	defer rc.Close()
	n, err := io.Copy(w, rc)
	if err != nil {
		return n, err
	}
	if n != v.size {
		return n, fmt.Errorf("%w: %s: read %d bytes, %d when it was indexed", storage.ErrChanged, v.src.Name(), n, v.size)
	}
	return n, nil
}

// finishVideo checks a payload that was read to its end.
func (r *partsReader) finishVideo() error {
	v := r.video
	r.closeInput()
	if r.read != v.size {
		return fmt.Errorf("%w: %s: read %d bytes, %d when it was indexed", storage.ErrChanged, v.src.Name(), r.read, v.size)
	}
	sum := hex.EncodeToString(r.hash.Sum(nil))
	if v.sha256 != "" && sum != v.sha256 {
		return fmt.Errorf("%w: %s: its content changed after it was indexed", storage.ErrChanged, v.src.Name())
	}
	v.sha256 = sum
	return nil
}

func (r *partsReader) closeInput() {
	if r.rc != nil {
		r.rc.Close()
		r.rc, r.video = nil, nil
	}
}

type byteReader struct{ b []byte }

func (r *byteReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Sizes block: "FSZS", uvarint count, count uvarint sizes, CRC-32C (LE).
const sizesMagic = "FSZS"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func encodeSizes(sizes []int64) []byte {
	b := append([]byte(sizesMagic), binary.AppendUvarint(nil, uint64(len(sizes)))...)
	for _, s := range sizes {
		b = binary.AppendUvarint(b, uint64(s))
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// DecodeSizes parses a sizes block.
func DecodeSizes(b []byte) ([]int64, error) {
	if len(b) < len(sizesMagic)+4 || string(b[:len(sizesMagic)]) != sizesMagic {
		return nil, fmt.Errorf("%w: sizes block: bad magic", ErrCorrupt)
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil, fmt.Errorf("%w: sizes block: checksum mismatch", ErrCorrupt)
	}
	body = body[len(sizesMagic):]
	n, k := binary.Uvarint(body)
	if k <= 0 || n > uint64(len(body)) {
		return nil, fmt.Errorf("%w: sizes block: bad count", ErrCorrupt)
	}
	body = body[k:]
	out := make([]int64, n)
	for i := range out {
		v, k := binary.Uvarint(body)
		if k <= 0 || v > 1<<40 {
			return nil, fmt.Errorf("%w: sizes block: bad size %d", ErrCorrupt, i)
		}
		out[i] = int64(v)
		body = body[k:]
	}
	if len(body) != 0 {
		return nil, fmt.Errorf("%w: sizes block: trailing bytes", ErrCorrupt)
	}
	return out, nil
}
