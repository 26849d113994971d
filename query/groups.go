package query

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/framefs/framefs/internal/safetext"
	"github.com/framefs/framefs/table"
)

// NullGroup is the folder value of a NULL in a group-by column.
const NullGroup = "__null__"

// GroupFolder names the folders of one combination of group-by values:
// "COL=VALUE" per column, joined by "/". Values that cannot be file names
// as they are ('/', '%', control characters, invisible format characters,
// a leading '.', surrounding spaces) are percent-escaped; a NULL is
// __null__. Each folder name fits in table.MaxFileName bytes.
func GroupFolder(columns []string, values []any) string {
	parts := make([]string, len(columns))
	for i, c := range columns {
		value := groupValue(values[i])
		if budget := table.MaxFileName - len(c) - 1; len(value) > budget {
			value = shorten(value, groupValueText(values[i]), budget)
		}
		parts[i] = c + "=" + value
	}
	return strings.Join(parts, "/")
}

func groupValue(v any) string { return escapeFolder(groupValueText(v)) }

func groupValueText(v any) string {
	switch x := v.(type) {
	case nil:
		return NullGroup
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v)
}

// maxGroupValueBytes keeps COL=VALUE folder names within file name limits.
const maxGroupValueBytes = 160

func escapeFolder(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '/' || r == '\\' || r == '%' || safetext.Hidden(r) || r == utf8.RuneError,
			i == 0 && (r == '.' || r == ' '),
			r == ' ' && i == len(s)-1:
			for _, c := range []byte(string(r)) {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		default:
			b.WriteRune(r)
		}
	}
	out := b.String()
	if len(out) > maxGroupValueBytes {
		out = shorten(out, s, maxGroupValueBytes)
	}
	return out
}

// shorten cuts the escaped value out to n bytes, keeping values distinct
// by a hash of the whole value s.
func shorten(out, s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	cut := max(n-17, 0)
	for cut > 0 && !utf8.RuneStart(out[cut]) {
		cut--
	}
	return out[:cut] + "~" + hex.EncodeToString(sum[:8])
}
