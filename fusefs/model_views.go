package fusefs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/framefs/framefs/media"
	"github.com/framefs/framefs/table"
)

// viewContent is what a view's folder needs: the view object and its
// image setting.
type viewContent struct {
	def table.View
	// version names the view object's content, so that a view deleted and
	// created again with another filter gets folders of other names
	// (the kernel caches what it saw under the old ones).
	version string
	image   *viewImage
}

func newViewContent(v table.View) *viewContent {
	data, _ := json.Marshal(v)
	sum := sha256.Sum256(data)
	vc := &viewContent{def: v, version: hex.EncodeToString(sum[:4])}
	if v.Image != nil {
		vc.image = &viewImage{ViewImage: *v.Image}
	}
	return vc
}

// folder is the name of the view's folder for a snapshot.
func (vc *viewContent) folder(snap int64) string {
	return fmt.Sprintf(".%s@%d-%s", vc.def.Name, snap, vc.version)
}

// parseViewFolder splits ".NAME@N-V" into its parts.
func parseViewFolder(name string) (view string, snap int64, version string, ok bool) {
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

// viewTree returns the folders of a view over a snapshot: the matching
// frames under the snapshot's partition folders, or under COL=VALUE
// folders of the view's group-by columns.
func (c *catalog) viewTree(ctx context.Context, vc *viewContent, snap *table.Snapshot) (*snapshotTree, error) {
	ctx = uninterrupted(ctx)
	key := vc.folder(snap.ID)
	return cached(c, c.views, key, "view "+key, func() (*snapshotTree, error) {
		schema, err := c.tbl.Schema(ctx, snap.SchemaID)
		if err != nil {
			return nil, err
		}
		f, err := c.tbl.CompileFilter(ctx, snap, vc.def.Where)
		if err != nil {
			return nil, err
		}
		if w := vc.def.Window; w != nil {
			cs, err := c.tbl.SelectClips(ctx, snap, f, *w, table.SelectOptions{GroupBy: vc.def.GroupBy})
			if err != nil {
				return nil, err
			}
			root, clips := buildClipTree(schema, cs, vc.def.GroupBy)
			return &snapshotTree{schema: schema, root: root, clips: clips}, nil
		}
		sel, err := c.tbl.Select(ctx, snap, f, table.SelectOptions{GroupBy: vc.def.GroupBy})
		if err != nil {
			return nil, err
		}
		return &snapshotTree{schema: schema, root: buildViewTree(schema, sel, vc.def.GroupBy)}, nil
	})
}

func buildViewTree(s *table.Schema, sel *table.Selection, groupBy []string) *treeDir {
	root := &treeDir{subdirs: map[string]*treeDir{}}
	for i := range sel.Episodes {
		se := &sel.Episodes[i]
		e := &se.Entry
		for _, part := range se.Parts {
			d := root
			if len(groupBy) > 0 {
				for _, folder := range strings.Split(part.Group, "/") {
					d = d.child(folder)
				}
			} else {
				for _, p := range s.PartitionColumns {
					d = d.child(p + "=" + e.Partition[p])
				}
			}
			ep := d.child(e.Episode)
			ep.episode, ep.rows = e, part.Ordinals
			if len(s.VideoColumns) > 1 {
				for _, col := range s.VideoColumns {
					c := ep.child(col)
					c.episode, c.column, c.rows = e, col, part.Ordinals
				}
			} else {
				ep.column = s.VideoColumns[0]
			}
		}
	}
	return root
}
