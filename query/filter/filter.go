// Package filter is the row filter language of framefs: SQL WHERE
// expressions over the columns of frame rows ("ego_speed_kmh >= 60 AND task
// IN ('pick', 'place')"). It owns three things:
//
//   - Parse turns filter text into an expression, with a maintained SQL
//     parser (TiDB's, in ANSI_QUOTES and NO_BACKSLASH_ESCAPES mode, so that
//     "col" is a column and 'text' a string, as in DuckDB, PostgreSQL and
//     Lance); only the subset below is accepted.
//   - Compile checks the names and types of an expression against the
//     columns of a table (an Arrow schema) before anything is read.
//   - A compiled Filter decides from column statistics (minimum, maximum,
//     null count) whether a group of rows may match at all, and evaluates
//     itself over Arrow arrays a batch at a time.
//
// The language: = != <> < <= > >=, AND OR NOT, parentheses, IS [NOT] NULL,
// IS [NOT] TRUE/FALSE, [NOT] IN (literals), [NOT] BETWEEN x AND y,
// [NOT] LIKE with % and _ (and an optional ESCAPE), literals (strings,
// integers, decimals, TRUE, FALSE, NULL, TIMESTAMP '2026-01-02 03:04:05',
// DATE '2026-01-02'), and the list functions len(list), list_contains(list,
// value) and list_extract(list, index). NULLs follow SQL's three-valued
// logic; a row matches when the expression is TRUE. Strings compare byte by
// byte; integers and floats compare as numbers; timestamps are UTC.
//
// The package reads no files and knows nothing of tables: callers give it
// the columns and the statistics.
package filter

import (
	"errors"
	"fmt"
)

// ErrInvalid is wrapped by every error about filter text: syntax, unknown
// columns, type mismatches. Test with errors.Is.
var ErrInvalid = errors.New("invalid filter")

// MaxLength bounds the text of a filter. Filters are typed by people or
// written by scripts; anything longer is a mistake (or an attack on the
// parser), and is refused before parsing.
const MaxLength = 64 << 10

// maxDepth bounds the nesting of expressions, so that evaluation (which
// recurses) has a bounded stack.
const maxDepth = 256

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
