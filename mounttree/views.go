package mounttree

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/query"
	"github.com/framefs/framefs/table"
)

// View is what a view's folder needs: the view object and its image
// setting.
type View struct {
	Def table.View
	// Version names the view object's content, so that a view deleted and
	// created again with another filter gets folders of other names
	// (the kernel caches what it saw under the old ones).
	Version string
	image   *viewImage
}

// NewView returns the View of a view object.
func NewView(v table.View) *View {
	data, _ := json.Marshal(v)
	sum := sha256.Sum256(data)
	vc := &View{Def: v, Version: hex.EncodeToString(sum[:4])}
	if v.Image != nil {
		vc.image = &viewImage{ViewImage: *v.Image}
	}
	return vc
}

// FolderName is the name of the view's folder for a snapshot,
// ".NAME@N-V".
func (vc *View) FolderName(snap int64) string {
	return fmt.Sprintf(".%s@%d-%s", vc.Def.Name, snap, vc.Version)
}

// ParseViewFolder splits ".NAME@N-V" into its parts.
func ParseViewFolder(name string) (view string, snap int64, version string, ok bool) {
	rest, ok := strings.CutPrefix(name, ".")
	if !ok {
		return "", 0, "", false
	}
	at := strings.LastIndexByte(rest, '@')
	if at <= 0 {
		return "", 0, "", false
	}
	ids, version, ok := strings.Cut(rest[at+1:], "-")
	if !ok {
		return "", 0, "", false
	}
	snap, err := strconv.ParseInt(ids, 10, 64)
	if err != nil || snap <= 0 || strconv.FormatInt(snap, 10) != ids {
		return "", 0, "", false
	}
	return rest[:at], snap, version, true
}

// viewImage is a view's own image setting over the mount's.
type viewImage struct {
	table.ViewImage
}

func (v *viewImage) format(base media.ImageSetting) media.ImageFormat {
	if v.Format == "" {
		return base.Format
	}
	f, err := media.ParseImageFormat(v.Format)
	if err != nil {
		return base.Format // checked when the view was created
	}
	return f
}

// forVideo returns the setting for frames of a video coded at w x h.
func (v *viewImage) forVideo(base media.ImageSetting, w, h int) media.ImageSetting {
	s := base
	if f := v.format(base); f != base.Format {
		s.Format, s.JPEGQuality = f, 0
	}
	if v.JPEGQuality != 0 {
		s.JPEGQuality = v.JPEGQuality
	}
	if v.Width != 0 || v.Height != 0 {
		s.Width, s.Height = v.Width, v.Height
	}
	if v.MaxSide != 0 {
		// Shrink (never enlarge) so that the longer side is MaxSide; the
		// decoder works out the other side from the display aspect ratio.
		s.Width, s.Height = 0, 0
		switch {
		case w >= h && w > v.MaxSide:
			s.Width = v.MaxSide
		case h > w && h > v.MaxSide:
			s.Height = v.MaxSide
		}
	}
	return s.Normalize()
}

// ViewTree returns the folders of a view over a snapshot: the matching
// frames under the snapshot's partition folders, or under COL=VALUE
// folders of the view's group-by columns.
func (c *Catalog) ViewTree(ctx context.Context, vc *View, snap *table.Snapshot) (*Tree, error) {
	ctx = uninterrupted(ctx)
	key := vc.FolderName(snap.ID)
	return cached(c, c.views, key, "view "+key, func() (*Tree, error) {
		schema, err := c.tbl.Schema(ctx, snap.SchemaID)
		if err != nil {
			return nil, err
		}
		f, err := query.CompileFilter(ctx, c.tbl, snap, vc.Def.Where)
		if err != nil {
			return nil, err
		}
		if w := vc.Def.Window; w != nil {
			cs, err := query.SelectClips(ctx, c.tbl, snap, f, *w, query.SelectOptions{GroupBy: vc.Def.GroupBy})
			if err != nil {
				return nil, err
			}
			ix, clips := buildClipTree(&c.records, schema, cs, vc.Def.GroupBy)
			clips.render() // now, so that the tree is charged its files
			t := newTree(c, snap, schema, vc, ix)
			t.window, t.clips = &cs.Window, clips
			return t, nil
		}
		sel, err := query.Select(ctx, c.tbl, snap, f, query.SelectOptions{GroupBy: vc.Def.GroupBy})
		if err != nil {
			return nil, err
		}
		return newTree(c, snap, schema, vc, buildViewTree(&c.records, schema, sel, vc.Def.GroupBy)), nil
	})
}

// buildViewTree indexes a view's matching rows, by episode, under the
// folders of their partition values or group-by values.
func buildViewTree(records *episodeRecords, s *table.Schema, sel *query.Selection, groupBy []string) builtIndex {
	b := newIndexBuilder()
	var d dedupe
	for i := range sel.Episodes {
		se := &sel.Episodes[i]
		e := &se.Entry
		for _, part := range se.Parts {
			b.add(viewFolders(s, e, part.Group, groupBy), shownEpisode{e: records.record(e, &d), episodePart: episodePart{rows: part.Ordinals}})
		}
	}
	return b.build()
}

// viewFolders are the folders a view shows a part of episode e in: its
// group's COL=VALUE folders with group-by, else its partition folders.
func viewFolders(s *table.Schema, e *table.EpisodeEntry, group string, groupBy []string) []string {
	if len(groupBy) > 0 {
		return strings.Split(group, "/")
	}
	folders := make([]string, len(s.PartitionColumns))
	for k, p := range s.PartitionColumns {
		folders[k] = p + "=" + e.Partition[p]
	}
	return folders
}
