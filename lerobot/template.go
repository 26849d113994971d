package lerobot

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// pathTemplate is a data_path or video_path of info.json: a relative path
// with Python format placeholders such as {episode_index:06d}. Only the
// placeholders of the dataset's version are accepted, integers only with
// an optional zero-padded width, so that a template can never name a file
// outside the dataset.
type pathTemplate struct {
	raw   string
	parts []templatePart
}

type templatePart struct {
	literal string
	field   string // "" for a literal part
	width   int    // minimum digits (zero-padded) of an integer field
}

// textFields are placeholders replaced by text (the camera key) rather
// than numbers.
var textFields = map[string]bool{"video_key": true}

// parseTemplate checks a template against the placeholders allowed.
func parseTemplate(raw string, allowed ...string) (pathTemplate, error) {
	t := pathTemplate{raw: raw}
	if raw == "" {
		return t, fmt.Errorf("the template is empty")
	}
	if strings.HasPrefix(raw, "/") || strings.Contains(raw, "\\") || (len(raw) > 1 && raw[1] == ':') {
		return t, fmt.Errorf("%q is not a relative path inside the dataset", raw)
	}
	var lit strings.Builder
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '{' && i+1 < len(raw) && raw[i+1] == '{', c == '}' && i+1 < len(raw) && raw[i+1] == '}':
			lit.WriteByte(c)
			i++
		case c == '}':
			return t, fmt.Errorf("%q has an unmatched '}'", raw)
		case c == '{':
			end := strings.IndexByte(raw[i:], '}')
			if end < 0 {
				return t, fmt.Errorf("%q has an unmatched '{'", raw)
			}
			part, err := parsePlaceholder(raw[i+1:i+end], allowed)
			if err != nil {
				return t, fmt.Errorf("%q: %v", raw, err)
			}
			if lit.Len() > 0 {
				t.parts = append(t.parts, templatePart{literal: lit.String()})
				lit.Reset()
			}
			t.parts = append(t.parts, part)
			i += end
		default:
			lit.WriteByte(c)
		}
	}
	if lit.Len() > 0 {
		t.parts = append(t.parts, templatePart{literal: lit.String()})
	}
	for _, p := range t.parts {
		for _, elem := range strings.Split(p.literal, "/") {
			if elem == ".." {
				return t, fmt.Errorf("%q climbs out of the dataset with \"..\"", raw)
			}
		}
	}
	return t, nil
}

func parsePlaceholder(spec string, allowed []string) (templatePart, error) {
	name, format, _ := strings.Cut(spec, ":")
	known := false
	for _, a := range allowed {
		known = known || a == name
	}
	if !known {
		return templatePart{}, fmt.Errorf("unknown placeholder {%s} (this version knows %s)", spec, placeholderList(allowed))
	}
	part := templatePart{field: name}
	if textFields[name] {
		if format != "" && format != "s" {
			return part, fmt.Errorf("placeholder {%s}: %s is text, format %q is not supported", spec, name, format)
		}
		return part, nil
	}
	digits, ok := strings.CutSuffix(format, "d")
	if format != "" && !ok {
		return part, fmt.Errorf("placeholder {%s}: only integer formats such as {%s:03d} are supported", spec, name)
	}
	digits = strings.TrimPrefix(digits, "0")
	if digits != "" {
		w, err := strconv.Atoi(digits)
		if err != nil || w > 20 {
			return part, fmt.Errorf("placeholder {%s}: bad width %q", spec, digits)
		}
		part.width = w
	}
	return part, nil
}

func placeholderList(names []string) string {
	var out []string
	for _, n := range names {
		out = append(out, "{"+n+"}")
	}
	return strings.Join(out, ", ")
}

// templateValues fill a template's placeholders.
type templateValues struct {
	ints map[string]int64
	text map[string]string
}

// format fills the template; the result is a clean relative path that
// stays inside the dataset (checked again, since text values are
// inserted).
func (t pathTemplate) format(v templateValues) (string, error) {
	var b strings.Builder
	for _, p := range t.parts {
		switch {
		case p.field == "":
			b.WriteString(p.literal)
		case textFields[p.field]:
			b.WriteString(v.text[p.field])
		default:
			n := v.ints[p.field]
			if n < 0 {
				return "", fmt.Errorf("%s is negative (%d)", p.field, n)
			}
			fmt.Fprintf(&b, "%0*d", p.width, n)
		}
	}
	out := b.String()
	clean := path.Clean(out)
	if clean != out || strings.HasPrefix(clean, "../") || clean == ".." || path.IsAbs(clean) {
		return "", fmt.Errorf("template %q gives %q, not a plain path inside the dataset", t.raw, out)
	}
	return out, nil
}

// Placeholders of each version's templates.
var (
	v2DataFields  = []string{"episode_chunk", "episode_index"}
	v2VideoFields = []string{"episode_chunk", "video_key", "episode_index"}
	v3DataFields  = []string{"chunk_index", "file_index"}
	v3VideoFields = []string{"video_key", "chunk_index", "file_index"}
)
