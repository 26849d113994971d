package table

import "errors"

// Errors at the package boundary; test with errors.Is.
var (
	// ErrNotFound means a table, snapshot, tag or episode does not exist.
	ErrNotFound = errors.New("not found")
	// ErrExists means a table, tag or episode already exists.
	ErrExists = errors.New("already exists")
	// ErrInvalidName means a user-chosen name cannot be used.
	ErrInvalidName = errors.New("invalid name")
	// ErrInvalidInput means rows, sidecars, schemas or videos given to an
	// operation are unusable; the message names the file, row and column.
	ErrInvalidInput = errors.New("invalid input")
	// ErrConflict means a concurrent commit changed the same episodes.
	ErrConflict = errors.New("conflicting commit")
	// ErrCorrupt means table metadata or data is damaged.
	ErrCorrupt = errors.New("corrupt table")
	// ErrUnsupportedFormat means the table was written by a newer framefs
	// (unknown format version or feature).
	ErrUnsupportedFormat = errors.New("unsupported table format")
)
