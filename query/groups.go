package query

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// NullGroup is the folder value of a NULL in a group-by column.
const NullGroup = "__null__"

// GroupFolder names the folders of one combination of group-by values:
// "COL=VALUE" per column, joined by "/". Values that cannot be file names
// as they are ('/', '%', control characters, a leading '.', surrounding
// spaces) are percent-escaped; a NULL is __null__.
func GroupFolder(columns []string, values []any) string {
	parts := make([]string, len(columns))
	for i, c := range columns {
		parts[i] = c + "=" + groupValue(values[i])
	}
	return strings.Join(parts, "/")
}

func groupValue(v any) string {
	var s string
	switch x := v.(type) {
	case nil:
		return NullGroup
	case string:
		s = x
	case bool:
		s = strconv.FormatBool(x)
	case int64:
		s = strconv.FormatInt(x, 10)
	case float64:
		s = strconv.FormatFloat(x, 'g', -1, 64)
	case time.Time:
		s = x.UTC().Format(time.RFC3339Nano)
	default:
		s = fmt.Sprint(x)
	}
	return escapeFolder(s)
}

// maxGroupValueBytes keeps COL=VALUE folder names within file name limits.
const maxGroupValueBytes = 160

func escapeFolder(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '/' || r == '\\' || r == '%' || r < 0x20 || r == 0x7f || r == utf8.RuneError,
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
		// Cut long values, keeping them distinct by a hash of the whole.
		sum := sha256.Sum256([]byte(s))
		cut := maxGroupValueBytes - 17
		for cut > 0 && !utf8.RuneStart(out[cut]) {
			cut--
		}
		out = out[:cut] + "~" + hex.EncodeToString(sum[:8])
	}
	return out
}
