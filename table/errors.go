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

// InputError is an error of one input of a multi-episode operation: the
// caller can set that input aside and retry the others.
type InputError struct {
	// Index is the input's position in the call, or -1 when only the
	// episode is known (an episode found to exist at commit time).
	Index int
	// Episode is the episode id, when known.
	Episode string
	Err     error
}

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputError(i int, in EpisodeInput, err error) error {
	return &InputError{Index: i, Episode: in.Episode, Err: err}
}
