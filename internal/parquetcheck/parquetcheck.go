// Package parquetcheck opens Parquet files that come from outside the
// process (dataset files, table manifests) so that a damaged or hostile
// file gives an error instead of a huge allocation or a crash: the
// footer's claims are checked before the reader allocates for them, the
// Arrow schema a writer may store beside the Parquet one is ignored, and
// the reader's panics on damaged pages become errors.
package parquetcheck

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// ErrMalformed means a Parquet file is damaged: its footer claims what
// the file cannot hold, or the reader failed on its pages.
var ErrMalformed = errors.New("malformed Parquet file")

// Limits bound what a footer may claim. Zero fields take the defaults of
// DefaultLimits.
type Limits struct {
	// MaxRows bounds the rows of the file and of each row group.
	MaxRows int64
	// MaxColumnChunk bounds a column chunk's size, compressed and not.
	MaxColumnChunk int64
	// MaxExpansion bounds how much a column chunk may grow when
	// decompressed (relative to at least 1 KiB).
	MaxExpansion int64
	// MaxPageSize bounds a page's uncompressed size.
	MaxPageSize int64
	// Allocator, when set, is where the reader takes its page buffers
	// (default: Go's heap, through memory.DefaultAllocator).
	Allocator memory.Allocator
}

// DefaultLimits fit files of up to 50 million rows with 1 MB pages (what
// pyarrow writes).
var DefaultLimits = Limits{MaxRows: 50_000_000, MaxColumnChunk: 1 << 30, MaxExpansion: 1000, MaxPageSize: 32 << 20}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxRows == 0 {
		l.MaxRows = d.MaxRows
	}
	if l.MaxColumnChunk == 0 {
		l.MaxColumnChunk = d.MaxColumnChunk
	}
	if l.MaxExpansion == 0 {
		l.MaxExpansion = d.MaxExpansion
	}
	if l.MaxPageSize == 0 {
		l.MaxPageSize = d.MaxPageSize
	}
	return l
}

// Open reads the footer of a Parquet file of size bytes and checks its
// claims: row counts, and column chunks that lie inside the file and
// expand within bounds. Call it (and every read of the file) under
// Recover.
func Open(r parquet.ReaderAtSeeker, size int64, lim Limits) (*file.Reader, error) {
	lim = lim.withDefaults()
	mem := lim.Allocator
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	props := parquet.NewReaderProperties(mem)
	props.MaxUncompressedPageSize = lim.MaxPageSize
	pf, err := file.NewParquetReader(r, file.WithReadProps(props))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if err := checkFooter(pf, size, lim); err != nil {
		pf.Close()
		return nil, err
	}
	// The Arrow schema pyarrow and arrow-go may store beside the Parquet
	// one (ARROW:schema) is a flatbuffer the reader decodes without
	// bounds checks: a damaged one makes it allocate without limit.
	// Parquet's own types are enough (a fixed-size list reads as a list).
	for _, kv := range pf.MetaData().KeyValueMetadata() {
		if kv.Key == "ARROW:schema" {
			kv.Key = "ignored:ARROW:schema"
		}
	}
	return pf, nil
}

func checkFooter(pf *file.Reader, size int64, lim Limits) error {
	md := pf.MetaData()
	if n := pf.NumRows(); n < 0 || n > lim.MaxRows {
		return fmt.Errorf("%w: %d rows (at most %d)", ErrMalformed, n, lim.MaxRows)
	}
	for rg := 0; rg < md.NumRowGroups(); rg++ {
		group := md.RowGroup(rg)
		if group.NumRows() < 0 || group.NumRows() > lim.MaxRows {
			return fmt.Errorf("%w: row group %d has %d rows", ErrMalformed, rg, group.NumRows())
		}
		for c := 0; c < md.Schema.NumColumns(); c++ {
			chunk, err := group.ColumnChunk(c)
			if err != nil {
				return fmt.Errorf("%w: %v", ErrMalformed, err)
			}
			start := chunk.DataPageOffset()
			if chunk.HasDictionaryPage() && chunk.DictionaryPageOffset() > 0 {
				start = min(start, chunk.DictionaryPageOffset())
			}
			compressed, uncompressed := chunk.TotalCompressedSize(), chunk.TotalUncompressedSize()
			if start < 0 || compressed < 0 || compressed > lim.MaxColumnChunk || start+compressed > size ||
				uncompressed < 0 || uncompressed > lim.MaxColumnChunk || uncompressed > lim.MaxExpansion*max(compressed, 1<<10) ||
				chunk.NumValues() < 0 || chunk.NumValues() > lim.MaxRows*1000 {
				return fmt.Errorf("%w: row group %d column %d claims %d bytes (%d uncompressed) at offset %d of a %d-byte file",
					ErrMalformed, rg, c, compressed, uncompressed, start, size)
			}
		}
	}
	return nil
}

// Recover turns a panic of the Parquet reader (which some damaged pages
// cause) into an error: defer it in every function that reads a file
// opened with Open.
func Recover(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: the reader failed: %v", ErrMalformed, r)
	}
}

// Pool is an allocator that keeps freed buffers for reuse, by power-of-two
// size: for a reader that opens many column chunks one after the other,
// each with page buffers of its own. Buffers must not be used after they
// are freed (the Parquet reader frees its page buffers when a column
// chunk's reader is closed). It is safe for concurrent use.
type Pool struct {
	classes [48]sync.Pool
}

var _ memory.Allocator = (*Pool)(nil)

// class is the size class of n bytes: buffers of class k hold 1<<k bytes.
func class(n int) int { return bits.Len(uint(max(n, 64) - 1)) }

// Allocate returns a zeroed buffer of size bytes.
func (p *Pool) Allocate(size int) []byte {
	k := class(size)
	if k >= len(p.classes) {
		return make([]byte, size)
	}
	if b, ok := p.classes[k].Get().(*[]byte); ok {
		buf := (*b)[:size]
		clear(buf)
		return buf
	}
	return make([]byte, size, 1<<k)
}

// Reallocate grows or shrinks b to size bytes, keeping its content.
func (p *Pool) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		old := len(b)
		b = b[:size]
		if size > old {
			clear(b[old:])
		}
		return b
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

// Free keeps b for reuse when it is of a size class.
func (p *Pool) Free(b []byte) {
	c := cap(b)
	if c == 0 || c&(c-1) != 0 {
		return
	}
	if k := class(c); k < len(p.classes) && 1<<k == c {
		b = b[:0]
		p.classes[k].Put(&b)
	}
}
