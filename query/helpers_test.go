package query

import "path/filepath"

// fixture is a test video of the repository.
func fixture(name string) string { return filepath.Join("../testdata/video", name) }
