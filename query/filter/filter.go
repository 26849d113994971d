// Package filter is the row filter language of framefs: SQL WHERE
// expressions over the columns of frame rows ("ego_speed_kmh >= 60 AND task
// IN ('pick', 'place')"), with DuckDB's syntax, types and answers. It owns
// three things:
//
//   - Parse turns filter text into an expression tree, with DuckDB's
//     (PostgreSQL's) grammar: "col" is a column and 'text' a string,
//     operators bind as they do there, and a < b < c is a syntax error.
//   - Compile types an expression against the columns of a table (an
//     Arrow schema) before anything is read, casting literals and operands
//     as DuckDB does, folding constants, and deciding comparisons of a
//     column with a constant on the column's own values where that is
//     exact (count + 1 > 30 is count > 29).
//   - A compiled Filter decides from column statistics (minimum, maximum,
//     null count) whether a group of rows may match at all, and evaluates
//     itself over Arrow arrays a batch at a time.
//
// The language: comparisons (= == <> != < <= > >=), AND OR NOT,
// IS [NOT] NULL/TRUE/FALSE/DISTINCT FROM, [NOT] IN (values) and IN list,
// [NOT] BETWEEN, [NOT] LIKE and ILIKE (% and _, ESCAPE), arithmetic
// (+ - * / // % and unary minus; / of integers is a DOUBLE, integer
// overflow is an error, division by zero NULL for integers and IEEE for
// floats), || on strings and lists, CAST, TRY_CAST and ::, list literals
// [1, 2] and list[i], the functions abs, lower, upper, length, strlen,
// coalesce, concat, list_contains and list_extract, and literals:
// integers (INTEGER or BIGINT by size), decimals (exact DECIMALs),
// exponents (DOUBLE), 'strings', TRUE, FALSE, NULL, DATE '...',
// TIMESTAMP '...' and TIMESTAMPTZ '...'. Boolean expressions are values:
// (a > 5) = flag compares them. NULLs follow SQL's three-valued logic; a
// row matches when the condition is TRUE. A value that cannot be computed
// (an overflow, 'abc' cast to INTEGER) fails the filter when a row's
// outcome depends on it, as in DuckDB.
//
// The package reads no files and knows nothing of tables: callers give it
// the columns and the statistics. Timestamps written as text are read by
// internal/timestamp, which sidecars are read with too, so the same text
// is the same instant in a filter and in a stored row.
package filter

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrInvalid is wrapped by every error about filter text: syntax, unknown
// columns, type mismatches. Test with errors.Is.
var ErrInvalid = errors.New("invalid filter")

// MaxLength bounds the text of a filter. Filters are typed by people or
// written by scripts; anything longer is a mistake (or an attack on the
// parser), and is refused before parsing.
const MaxLength = 64 << 10

// invalidErr is an error about filter text; msg is the reason alone.
type invalidErr struct{ msg string }

func (e *invalidErr) Error() string        { return ErrInvalid.Error() + ": " + e.msg }
func (e *invalidErr) Is(target error) bool { return target == ErrInvalid }

func invalid(format string, args ...any) error {
	return &invalidErr{msg: fmt.Sprintf(format, args...)}
}

// reason is the message of an error without the "invalid filter" prefix.
func reason(err error) string {
	if e, ok := err.(*invalidErr); ok {
		return e.msg
	}
	return err.Error()
}

// clip shortens text quoted in an error message.
func clip(s string) string {
	const n = 80
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
