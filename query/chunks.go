package query

import (
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// readChunk decodes one flat column chunk (length bytes at offset, located
// by a table.ChunkIndex) into an Arrow array of type dt.
func readChunk(obj io.ReaderAt, offset, length int64, codec compress.Compression, descr *schema.Column, rows int64, dt arrow.DataType) (arrow.Array, error) {
	mem := memory.DefaultAllocator
	stream, err := parquet.NewReaderProperties(mem).GetStream(obj, offset, length)
	if err != nil {
		return nil, err
	}
	//lint:ignore SA1019 a chunk found by the table's chunk index is decoded without the file's footer, which no other arrow-go v18 API can do
	pages, err := file.NewPageReader(stream, rows, codec, mem, nil)
	if err != nil {
		return nil, err
	}
	maxDef := descr.MaxDefinitionLevel()
	defs := make([]int16, rows)
	valid := func(i int) bool { return maxDef == 0 || defs[i] == maxDef }
	//lint:ignore SA1019 as NewPageReader above
	cr := file.NewColumnReader(descr, pages, mem, nil)
	switch r := cr.(type) {
	case *file.BooleanColumnChunkReader:
		vals, err := readLevels(rows, defs, r.ReadBatch)
		if err != nil {
			return nil, err
		}
		b := array.NewBooleanBuilder(mem)
		defer b.Release()
		appendValues(b, vals, rows, valid, b.Append)
		return b.NewArray(), nil
	case *file.Int32ColumnChunkReader:
		vals, err := readLevels(rows, defs, r.ReadBatch)
		if err != nil {
			return nil, err
		}
		b := array.NewInt32Builder(mem)
		defer b.Release()
		appendValues(b, vals, rows, valid, b.Append)
		return b.NewArray(), nil
	case *file.Int64ColumnChunkReader:
		vals, err := readLevels(rows, defs, r.ReadBatch)
		if err != nil {
			return nil, err
		}
		if ts, ok := dt.(*arrow.TimestampType); ok {
			b := array.NewTimestampBuilder(mem, ts)
			defer b.Release()
			appendValues(b, vals, rows, valid, func(v int64) { b.Append(arrow.Timestamp(v)) })
			return b.NewArray(), nil
		}
		b := array.NewInt64Builder(mem)
		defer b.Release()
		appendValues(b, vals, rows, valid, b.Append)
		return b.NewArray(), nil
	case *file.Float32ColumnChunkReader:
		vals, err := readLevels(rows, defs, r.ReadBatch)
		if err != nil {
			return nil, err
		}
		b := array.NewFloat32Builder(mem)
		defer b.Release()
		appendValues(b, vals, rows, valid, b.Append)
		return b.NewArray(), nil
	case *file.Float64ColumnChunkReader:
		vals, err := readLevels(rows, defs, r.ReadBatch)
		if err != nil {
			return nil, err
		}
		b := array.NewFloat64Builder(mem)
		defer b.Release()
		appendValues(b, vals, rows, valid, b.Append)
		return b.NewArray(), nil
	case *file.ByteArrayColumnChunkReader:
		vals, err := readLevels(rows, defs, r.ReadBatch)
		if err != nil {
			return nil, err
		}
		b := array.NewStringBuilder(mem)
		defer b.Release()
		appendValues(b, vals, rows, valid, func(v parquet.ByteArray) { b.Append(string(v)) })
		return b.NewArray(), nil
	}
	return nil, fmt.Errorf("column %s: unsupported physical type %s", descr.Name(), descr.PhysicalType())
}

// readLevels reads rows levels and their values from a column reader.
func readLevels[T any](rows int64, defs []int16, read func(int64, []T, []int16, []int16) (int64, int, error)) ([]T, error) {
	vals := make([]T, rows)
	var levels int64
	values := 0
	for levels < rows {
		l, v, err := read(rows-levels, vals[values:], defs[levels:], nil)
		if err != nil {
			return nil, err
		}
		if l == 0 {
			return nil, fmt.Errorf("column chunk has %d of %d rows", levels, rows)
		}
		levels += l
		values += v
	}
	return vals[:values], nil
}

// appendValues appends rows values, null where a row has none.
func appendValues[T any](b array.Builder, vals []T, rows int64, valid func(int) bool, add func(T)) {
	b.Reserve(int(rows))
	k := 0
	for i := 0; i < int(rows); i++ {
		if !valid(i) || k >= len(vals) {
			b.AppendNull()
			continue
		}
		add(vals[k])
		k++
	}
}
