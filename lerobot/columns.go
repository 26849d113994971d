package lerobot

import (
	"fmt"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/framefs/framefs/table"
)

// TaskColumn is the column the import adds next to task_index: the text
// of the row's task.
const TaskColumn = "task"

// Column is a dataset column as it becomes a table column.
type Column struct {
	Name string
	// Type is the table column type.
	Type table.Type
	// DType is the dataset's dtype (info.json), or the Parquet type of a
	// column info.json does not list.
	DType string
	// Widened is set when Type holds the values in a wider type than
	// DType (int8/int16/uint8/uint16 as int32, uint32/uint64 as int64,
	// float16 as float32).
	Widened bool
	list    bool
	// length is the number of values every row of a list column holds:
	// its feature's one-dimensional shape (0 when no shape is declared).
	length int64
}

// elemType maps a dtype to the table scalar type holding it, and whether
// that widens it.
func elemType(dtype string) (table.Type, bool, bool) {
	switch dtype {
	case "float32", "float64", "int32", "int64", "bool", "string":
		return table.Type(dtype), false, true
	case "float16":
		return "float32", true, true
	case "int8", "int16", "uint8", "uint16":
		return "int32", true, true
	case "uint32", "uint64":
		return "int64", true, true
	}
	return "", false, false
}

// arrowDType names the dtype of an Arrow scalar type.
func arrowDType(dt arrow.DataType) (string, bool) {
	switch dt.ID() {
	case arrow.BOOL:
		return "bool", true
	case arrow.INT8:
		return "int8", true
	case arrow.INT16:
		return "int16", true
	case arrow.INT32:
		return "int32", true
	case arrow.INT64:
		return "int64", true
	case arrow.UINT8:
		return "uint8", true
	case arrow.UINT16:
		return "uint16", true
	case arrow.UINT32:
		return "uint32", true
	case arrow.UINT64:
		return "uint64", true
	case arrow.FLOAT16:
		return "float16", true
	case arrow.FLOAT32:
		return "float32", true
	case arrow.FLOAT64:
		return "float64", true
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return "string", true
	}
	return "", false
}

// listElem returns the element type of an Arrow list type.
func listElem(dt arrow.DataType) (arrow.DataType, bool) {
	switch t := dt.(type) {
	case *arrow.ListType:
		return t.Elem(), true
	case *arrow.LargeListType:
		return t.Elem(), true
	case *arrow.FixedSizeListType:
		return t.Elem(), true
	}
	return nil, false
}

// compatible reports whether values of Arrow type dt can be stored in a
// column of dtype (same kind: integers, floats, bool or string).
func compatible(dtype string, dt arrow.DataType) bool {
	have, ok := arrowDType(dt)
	if !ok {
		return false
	}
	switch {
	case isFloatDType(dtype):
		return isFloatDType(have) || isIntegerDType(have)
	case isIntegerDType(dtype):
		return isIntegerDType(have)
	}
	return have == dtype
}

// columnsFrom derives the table columns from info.json's features and
// the Arrow fields of a data file: features in order (videos excepted),
// then columns the file has beyond them, with the task text after
// task_index.
func (ds *Dataset) columnsFrom(fields []arrow.Field, file string, ps *problems) []Column {
	byName := map[string]arrow.Field{}
	for _, f := range fields {
		byName[f.Name] = f
	}
	var cols []Column
	listed := map[string]bool{}
	add := func(name, dtype string, shape []int64, dt arrow.DataType) {
		listed[name] = true
		elem, isList := listElem(dt)
		if !isList {
			elem = dt
		} else if _, nested := listElem(elem); nested {
			ps.add(RuleFeature, file, -1, -1, "column %q is a nested list (%s): only scalars and one-dimensional arrays become columns", name, describeType(dt))
			return
		}
		if dtype == "" {
			var ok bool
			if dtype, ok = arrowDType(elem); !ok {
				ps.add(RuleFeature, file, -1, -1, "column %q has Parquet type %s, which framefs cannot store", name, describeType(dt))
				return
			}
		}
		if !compatible(dtype, elem) {
			ps.add(RuleFeature, file, -1, -1, "column %q holds %s, but info.json says dtype %q", name, describeType(dt), dtype)
			return
		}
		typ, widened, _ := elemType(dtype)
		if isList {
			typ = "list<" + typ + ">"
		}
		col := Column{Name: name, Type: typ, DType: dtype, Widened: widened, list: isList}
		if isList && len(shape) == 1 && shape[0] > 0 {
			col.length = shape[0]
		}
		cols = append(cols, col)
		if name == "task_index" {
			cols = append(cols, Column{Name: TaskColumn, Type: "string", DType: "string"})
		}
	}
	for _, f := range ds.Info.Features {
		if f.IsVideo() {
			continue
		}
		af, ok := byName[f.Key]
		if !ok {
			ps.add(RuleFeature, file, -1, -1, "column %q (a feature in info.json) is missing", f.Key)
			continue
		}
		add(f.Key, f.DType, f.Shape, af.Type)
	}
	for _, f := range fields {
		if listed[f.Name] {
			continue
		}
		if err := table.CheckColumnName("column", f.Name); err != nil {
			ps.add(RuleFeature, file, -1, -1, "%v: the file's columns become table columns", err)
			continue
		}
		add(f.Name, "", nil, f.Type)
	}
	if _, clash := ds.Info.Feature(TaskColumn); clash || byName[TaskColumn].Name != "" {
		ps.add(RuleFeature, file, -1, -1, "the dataset has a column %q; framefs adds the task text under that name", TaskColumn)
	}
	return cols
}

// Columns derives the table columns from info.json and the first data
// file's Parquet schema.
func (ds *Dataset) Columns() ([]Column, error) {
	ps := newProblems(ds.Dir)
	if len(ds.Episodes) == 0 {
		return nil, fmt.Errorf("%s: %w: the dataset has no episodes", ds.Dir, ErrInvalidDataset)
	}
	file := ds.Episodes[0].DataFile
	fields, _, err := parquetFooter(filepath.Join(ds.Dir, filepath.FromSlash(file)))
	if err != nil {
		readFileProblem(ps, file, 0, err, "the frame rows")
		return nil, ps.err()
	}
	cols := ds.columnsFrom(fields, file, ps)
	return cols, ps.err()
}

// valueReader converts element i of a column to a table row value.
type valueReader func(i int) (any, error)

func newValueReader(a arrow.Array, c Column) valueReader {
	if c.list {
		return func(i int) (any, error) {
			vals, start, end, ok := listAt(a, i)
			if !ok {
				return nil, fmt.Errorf("null")
			}
			if c.length > 0 && int64(end-start) != c.length {
				return nil, shapeError(end-start, c.length)
			}
			out := make([]any, end-start)
			for j := start; j < end; j++ {
				v, err := scalarValue(vals, j, c.DType)
				if err != nil {
					return nil, fmt.Errorf("element %d: %v", j-start, err)
				}
				out[j-start] = v
			}
			return out, nil
		}
	}
	return func(i int) (any, error) { return scalarValue(a, i, c.DType) }
}

// shapeError says that a row's array does not have its feature's shape.
func shapeError(n int, length int64) error {
	return fmt.Errorf("holds %d values, but its feature's shape in info.json is [%d]", n, length)
}

// firstMisshapen returns the first row of a list column of c whose array
// does not hold c.length values, and how many rows are so, or -1.
func firstMisshapen(a arrow.Array, c Column) (row, count int) {
	row = -1
	if c.length <= 0 {
		return row, 0
	}
	for i := 0; i < a.Len(); i++ {
		if _, start, end, ok := listAt(a, i); ok && int64(end-start) != c.length {
			if row < 0 {
				row = i
			}
			count++
		}
	}
	return row, count
}

func scalarValue(a arrow.Array, i int, dtype string) (any, error) {
	if a.IsNull(i) {
		return nil, fmt.Errorf("null")
	}
	switch {
	case isFloatDType(dtype):
		v, ok := floatAt(a, i)
		if !ok {
			return nil, fmt.Errorf("not a number")
		}
		return v, nil
	case isIntegerDType(dtype):
		v, ok := intAt(a, i)
		if !ok {
			return nil, fmt.Errorf("%s does not fit in int64", a.ValueStr(i))
		}
		return v, nil
	case dtype == "bool":
		if b, ok := a.(*array.Boolean); ok {
			return b.Value(i), nil
		}
	case dtype == "string":
		if s, ok := stringAt(a, i); ok {
			return s, nil
		}
	}
	return nil, fmt.Errorf("not a %s", dtype)
}
