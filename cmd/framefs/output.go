package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// progressBar returns a progress callback that redraws one line on stderr,
// or nil when stderr is not a terminal (scripts and logs get no noise).
func progressBar() func(step string, done, total int) {
	st, err := os.Stderr.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return func(step string, done, total int) {
		const width = 30
		filled := width
		if total > 0 {
			filled = width * done / total
		}
		fmt.Fprintf(os.Stderr, "\r%-16s [%s%s] %d/%d", step, strings.Repeat("#", filled), strings.Repeat(".", width-filled), done, total)
		if step == "committed" {
			fmt.Fprintln(os.Stderr)
		}
	}
}
