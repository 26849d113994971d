package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestErrorsEscapeControls: an error that echoes an argument holding ESC
// and BEL (a terminal's window-title sequence) prints them escaped.
func TestErrorsEscapeControls(t *testing.T) {
	src := filepath.Join(t.TempDir(), "x\x1b]0;owned\x07\u202e")
	var stderr bytes.Buffer
	cmd := framefsCmd(t.Context(), "mount", src, t.TempDir())
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatal("mount of a missing source succeeded")
	}
	got := stderr.String()
	if strings.ContainsAny(got, "\x1b\x07\u202e") || !strings.Contains(got, `x\x1b]0;owned\x07\u202e: not a warehouse`) {
		t.Errorf("stderr %q: want the argument with ESC, BEL and U+202E escaped", got)
	}
}
