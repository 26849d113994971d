package query

import (
	"testing"

	"github.com/framefs/framefs/internal/docmap"
)

// TestFileMap: doc.go lists every file of the package, and no other.
func TestFileMap(t *testing.T) { docmap.Check(t, ".") }
