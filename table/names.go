package table

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/framefs/framefs/internal/safetext"
)

// maxNameBytes bounds every user-chosen name; it stays well under the
// 255-byte file name limit of common filesystems once suffixes are added.
const maxNameBytes = 200

// MaxFileName is the longest file name Linux file systems take (NAME_MAX):
// a folder the mount makes of a column name and a value (COL=VALUE, for a
// partition or a group) must fit it.
const MaxFileName = 255

// CheckName validates a user-chosen name (a table, tag, episode or column):
// it becomes a directory or file name in the mount and part of object keys,
// so it must be valid UTF-8 without '/', '\', NUL, control characters,
// invisible characters that change how text is shown (bidi controls such
// as U+202E and other format characters) or leading/trailing spaces, and
// must not be "." or "..". kind names the thing in the error ("table",
// "tag", ...).
func CheckName(kind, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: %s name is empty", ErrInvalidName, kind)
	case len(name) > maxNameBytes:
		return fmt.Errorf("%w: %s name %.40q... is longer than %d bytes", ErrInvalidName, kind, name, maxNameBytes)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %s name %q is reserved", ErrInvalidName, kind, name)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: %s name %q is not valid UTF-8", ErrInvalidName, kind, name)
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("%w: %s name %q starts or ends with white space", ErrInvalidName, kind, name)
	case strings.HasPrefix(name, "."):
		return fmt.Errorf("%w: %s name %q starts with '.', which hides it in listings", ErrInvalidName, kind, name)
	}
	for _, r := range name {
		switch {
		case r == '/' || r == '\\' || unicode.IsControl(r):
			return fmt.Errorf("%w: %s name %q contains %q; use letters, digits, '-', '_', '.' or spaces", ErrInvalidName, kind, name, r)
		case safetext.Hidden(r):
			return fmt.Errorf("%w: %s name %q contains %U, an invisible character that changes how the text around it is shown; names cannot hold one",
				ErrInvalidName, kind, name, r)
		}
	}
	return nil
}
