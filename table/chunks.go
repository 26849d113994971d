package table

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/framefs/framefs/table/storage"
)

// A chunk index (data/UUID.chunks, beside data/UUID.parquet) says where
// each flat column of each row group of a data file lies. A filter that
// needs a few episodes' columns reads the index (a few bytes per column
// chunk) and those column chunks, instead of the Parquet footer (about a
// hundred bytes per column chunk, all of which must be decoded). It is an
// optional accelerator: without it (or when it does not check out),
// readers use the footer.
//
//	"FCIX"  uv version (1)  uv codec (Parquet compression codec number)
//	uv columns, then per column: uv name length, name bytes
//	uv row groups, then per row group: uv rows, then per column:
//	   uv offset, uv length   (the column chunk's bytes in the data file)
//	4 bytes CRC-32C (Castagnoli) of everything before, little-endian
const chunkIndexMagic = "FCIX"

// Bounds checked before allocating while decoding an index.
const (
	maxIndexColumns   = 4096
	maxIndexRowGroups = 1 << 22
)

func chunkIndexKey(dataKey string) string {
	return strings.TrimSuffix(dataKey, ".parquet") + ".chunks"
}

// ChunkIndex is a decoded chunk index: where each flat column chunk of a
// data file lies, so that a reader of a few columns of a few row groups
// reads those chunks alone.
type ChunkIndex struct {
	codec   compress.Compression
	columns map[string]int
	groups  []chunkGroup
}

// Codec is the compression of the file's column chunks.
func (ix *ChunkIndex) Codec() compress.Compression { return ix.codec }

// Column returns the index of a flat column among the indexed ones; false
// for a column the index does not cover (a list, a struct, or one the
// file does not have).
func (ix *ChunkIndex) Column(name string) (int, bool) {
	c, ok := ix.columns[name]
	return c, ok
}

// Rows returns the number of rows of row group g; false when the file has
// no such row group.
func (ix *ChunkIndex) Rows(g int) (int64, bool) {
	if g < 0 || g >= len(ix.groups) {
		return 0, false
	}
	return ix.groups[g].rows, true
}

// Chunk returns where column c (from Column) of row group g lies in the
// data file: its offset and length. Both must be checked against the
// file's size before reading.
func (ix *ChunkIndex) Chunk(g, c int) (offset, length int64) {
	loc := ix.groups[g].chunks[c]
	return loc.offset, loc.length
}

type chunkGroup struct {
	rows   int64
	chunks []chunkLoc // by column
}

type chunkLoc struct{ offset, length int64 }

// encodeChunkIndex makes the index of a data file from its footer, for
// the columns that are one leaf (not lists or structs).
func encodeChunkIndex(md *metadata.FileMetaData) []byte {
	var cols []int
	var names []string
	for i := 0; i < md.Schema.NumColumns(); i++ {
		if path := md.Schema.Column(i).ColumnPath(); len(path) == 1 && md.Schema.Column(i).MaxRepetitionLevel() == 0 {
			cols = append(cols, i)
			names = append(names, path[0])
		}
	}
	b := []byte(chunkIndexMagic)
	b = binary.AppendUvarint(b, 1)
	codec := compress.Codecs.Zstd
	if md.NumRowGroups() > 0 && len(cols) > 0 {
		if cc, err := md.RowGroup(0).ColumnChunk(cols[0]); err == nil {
			codec = cc.Compression()
		}
	}
	b = binary.AppendUvarint(b, uint64(codec))
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, n := range names {
		b = binary.AppendUvarint(b, uint64(len(n)))
		b = append(b, n...)
	}
	b = binary.AppendUvarint(b, uint64(md.NumRowGroups()))
	for g := 0; g < md.NumRowGroups(); g++ {
		rg := md.RowGroup(g)
		b = binary.AppendUvarint(b, uint64(rg.NumRows()))
		for _, c := range cols {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				return nil
			}
			start := cc.DataPageOffset()
			if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < start {
				start = cc.DictionaryPageOffset()
			}
			b = binary.AppendUvarint(b, uint64(start))
			b = binary.AppendUvarint(b, uint64(cc.TotalCompressedSize()))
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

var errBadChunkIndex = errors.New("bad chunk index")

// decodeChunkIndex reads an index; every count is checked against the
// bytes left before anything is allocated.
func decodeChunkIndex(data []byte) (*ChunkIndex, error) {
	if len(data) < len(chunkIndexMagic)+4 || string(data[:4]) != chunkIndexMagic {
		return nil, fmt.Errorf("%w: no FCIX header", errBadChunkIndex)
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(data[len(data)-4:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", errBadChunkIndex)
	}
	r := bytes.NewReader(body[4:])
	next := func() (uint64, error) { return binary.ReadUvarint(r) }
	if v, err := next(); err != nil || v != 1 {
		return nil, fmt.Errorf("%w: version %d", errBadChunkIndex, v)
	}
	codec, err := next()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errBadChunkIndex, err)
	}
	ncols, err := next()
	if err != nil || ncols > maxIndexColumns || ncols > uint64(r.Len()) {
		return nil, fmt.Errorf("%w: %d columns", errBadChunkIndex, ncols)
	}
	ix := &ChunkIndex{codec: compress.Compression(codec), columns: make(map[string]int, ncols)}
	for c := 0; c < int(ncols); c++ {
		n, err := next()
		if err != nil || n > uint64(r.Len()) {
			return nil, fmt.Errorf("%w: column name", errBadChunkIndex)
		}
		name := make([]byte, n)
		io.ReadFull(r, name)
		ix.columns[string(name)] = c
	}
	ngroups, err := next()
	if err != nil || ngroups > maxIndexRowGroups || ngroups*(1+2*ncols) > uint64(r.Len()) {
		return nil, fmt.Errorf("%w: %d row groups", errBadChunkIndex, ngroups)
	}
	ix.groups = make([]chunkGroup, ngroups)
	locs := make([]chunkLoc, ngroups*ncols)
	for g := range ix.groups {
		rows, err := next()
		if err != nil || rows > 1<<40 {
			return nil, fmt.Errorf("%w: row group %d", errBadChunkIndex, g)
		}
		grp := &ix.groups[g]
		grp.rows, grp.chunks = int64(rows), locs[g*int(ncols):(g+1)*int(ncols)]
		for c := range grp.chunks {
			off, err1 := next()
			n, err2 := next()
			if err1 != nil || err2 != nil || off > 1<<50 || n > 1<<40 {
				return nil, fmt.Errorf("%w: row group %d column %d", errBadChunkIndex, g, c)
			}
			grp.chunks[c] = chunkLoc{int64(off), int64(n)}
		}
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the row groups", errBadChunkIndex, r.Len())
	}
	return ix, nil
}

// ChunkIndex returns the chunk index of a data file, or nil when it has
// none or it does not check out (readers use the Parquet footer then).
// Indexes are cached.
func (t *Table) ChunkIndex(ctx context.Context, dataKey string) *ChunkIndex {
	key := chunkIndexKey(dataKey)
	if ix, ok := t.chunkIndexes.Get(key); ok {
		return ix
	}
	data, err := t.store.ReadAll(ctx, key)
	var ix *ChunkIndex
	if err == nil {
		ix, err = decodeChunkIndex(data)
	}
	if err != nil && !errors.Is(err, storage.ErrNotFound) && ctx.Err() == nil {
		ix = nil // a damaged index only costs speed; verify reports it
	}
	if ctx.Err() != nil {
		return nil
	}
	t.chunkIndexes.Add(key, ix, ix.bytes())
	return ix
}

// maxChunkIndexBytes bounds the memory of the chunk indexes a Table keeps:
// about 50 bytes per row group of a five-column data file, so the indexes
// of a few hundred thousand episodes' row groups.
const maxChunkIndexBytes = 16 << 20

// bytes estimates the memory of ix (a nil index: its key and entry only).
func (ix *ChunkIndex) bytes() int64 {
	if ix == nil {
		return 0
	}
	n := int64(unsafe.Sizeof(*ix)) + int64(cap(ix.groups))*int64(unsafe.Sizeof(chunkGroup{}))
	for name := range ix.columns {
		n += 64 + int64(len(name))
	}
	if len(ix.groups) > 0 {
		n += int64(len(ix.groups)) * int64(len(ix.groups[0].chunks)) * int64(unsafe.Sizeof(chunkLoc{}))
	}
	return n
}

// ParquetSchema returns the Parquet schema of the data files written with
// schema s (cached by schema id).
func (t *Table) ParquetSchema(s *Schema) (*schema.Schema, error) {
	t.mu.Lock()
	ps := t.parquetSchemas[s.ID]
	t.mu.Unlock()
	if ps != nil {
		return ps, nil
	}
	sc, err := DataFileSchema(s)
	if err != nil {
		return nil, err
	}
	ps, err = pqarrow.ToParquet(sc, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.parquetSchemas[s.ID] = ps
	t.mu.Unlock()
	return ps, nil
}
