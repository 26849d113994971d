package table

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/framefs/framefs/table/storage"
)

// View is a named selection of a table's frames: the rows that match a
// filter, in the head snapshot (a view that follows the head) or in one
// snapshot (a pinned view, which keeps that snapshot alive as a tag
// does). Views are immutable objects; changing one is deleting and
// creating it again.
type View struct {
	// FormatVersion and Features version the view object itself: a reader
	// refuses a view with a version or feature it does not know (a clip
	// view, to a framefs from before clip windows) rather than show it
	// wrongly.
	FormatVersion int      `json:"format_version"`
	Features      []string `json:"features"`
	Name          string   `json:"view"`
	// Where is the filter, SQL WHERE syntax (package filter).
	Where string `json:"where"`
	// Snapshot pins the view to a snapshot; 0 follows the head.
	Snapshot int64 `json:"snapshot_id,omitempty"`
	// Tag names the tag the snapshot was chosen by, if any (the view keeps
	// the snapshot even when the tag is deleted).
	Tag string `json:"tag,omitempty"`
	// GroupBy lays the view out in COL=VALUE folders above the episodes.
	GroupBy []string `json:"group_by,omitempty"`
	// Image overrides how the view's frames are served.
	Image *ViewImage `json:"image,omitempty"`
	// Window makes the view a clip view: it shows the windows of frames
	// whose frames all match, rather than the frames (feature
	// clip_windows).
	Window *Window   `json:"window,omitempty"`
	Time   time.Time `json:"time"`
}

// ViewImage is a view's own image setting. Zero fields keep the mount's.
type ViewImage struct {
	// Format is jpg, png, bmp, ppm or npy.
	Format string `json:"format,omitempty"`
	// JPEGQuality is 1-100.
	JPEGQuality int `json:"jpeg_quality,omitempty"`
	// Width and Height scale frames (one of them 0 keeps the aspect
	// ratio).
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
	// MaxSide scales frames whose longer side is larger down to that
	// many pixels, keeping the aspect ratio.
	MaxSide int `json:"max_side,omitempty"`
}

// View format versions. Version 1: filter, pin, group-by, image setting;
// optional features below.
const (
	ViewFormatVersion = 1
)

// FeatureClipWindows marks a clip view (View.Window): a reader that does
// not know it must refuse the view rather than show its frames as a plain
// view's.
const FeatureClipWindows = "clip_windows"

// FeatureNPYImages marks a view that serves its frames as NumPy .npy
// files (ViewImage.Format "npy"): a reader that does not know the format
// must refuse the view rather than fail on its frames.
const FeatureNPYImages = "npy_images"

// knownViewFeatures lists the optional view features this build knows.
var knownViewFeatures = map[string]bool{FeatureClipWindows: true, FeatureNPYImages: true}

// maxImageSide and maxImagePixels bound scaled sizes (the decoder's
// limits, media.MaxImageDimension and media.MaxImagePixels).
const (
	maxImageSide   = 16384
	maxImagePixels = 1 << 25
)

// Suffixes that mounts give to a view's files; view names cannot end
// with them.
var reservedViewSuffixes = []string{".where", ".error"}

// CheckViewName validates a view name: a name like any other, without
// the suffixes mounts use beside views, and without '@'.
func CheckViewName(name string) error {
	if err := CheckName("view", name); err != nil {
		return err
	}
	for _, suf := range reservedViewSuffixes {
		if strings.HasSuffix(name, suf) {
			return fmt.Errorf("%w: view name %q ends with %q, which mounts use for view files", ErrInvalidName, name, suf)
		}
	}
	if strings.Contains(name, "@") {
		return fmt.Errorf("%w: view name %q contains '@', which mounts use for view versions", ErrInvalidName, name)
	}
	return nil
}

// ViewKey is the object key of view NAME.
func ViewKey(name string) string { return prefixView + name + ".json" }

// Validate checks a view's image setting.
func (img *ViewImage) Validate() error {
	if img == nil {
		return nil
	}
	switch img.Format {
	case "", "jpg", "png", "bmp", "ppm", "npy":
	default:
		return fmt.Errorf("%w: image format %q (use jpg, png, bmp, ppm or npy)", ErrInvalidInput, img.Format)
	}
	if img.JPEGQuality < 0 || img.JPEGQuality > 100 {
		return fmt.Errorf("%w: JPEG quality %d is not within 1-100", ErrInvalidInput, img.JPEGQuality)
	}
	if img.JPEGQuality != 0 && img.Format != "" && img.Format != "jpg" {
		return fmt.Errorf("%w: a JPEG quality applies to jpg images, not %s", ErrInvalidInput, img.Format)
	}
	for _, v := range []int{img.Width, img.Height, img.MaxSide} {
		if v < 0 || v > maxImageSide {
			return fmt.Errorf("%w: image size %d is not within 1-%d", ErrInvalidInput, v, maxImageSide)
		}
	}
	if int64(img.Width)*int64(img.Height) > maxImagePixels || int64(img.MaxSide)*int64(img.MaxSide) > maxImagePixels {
		return fmt.Errorf("%w: image size %dx%d (max side %d) has more than %d pixels (8K UHD, 7680x4320, is the largest that fits)",
			ErrInvalidInput, img.Width, img.Height, img.MaxSide, maxImagePixels)
	}
	if img.MaxSide != 0 && (img.Width != 0 || img.Height != 0) {
		return fmt.Errorf("%w: give either a scale (WxH) or a maximum side, not both", ErrInvalidInput)
	}
	return nil
}

// ViewCheck checks what this package cannot about a view: that its filter
// and group-by columns fit the schema s of the snapshot it will show.
// The filter language is the query engine's (query.CheckView).
type ViewCheck func(s *Schema, v View) error

// CreateView stores a new view. Its name, image setting and window are
// checked, its tag resolved, and check called with the schema of the
// snapshot it will show (the pinned one, or the head's); nothing is
// stored if anything is wrong, and an existing view of the same name is
// an error (ErrExists). query.CreateView calls it with query.CheckView.
func (t *Table) CreateView(ctx context.Context, v View, check ViewCheck) (View, error) {
	if check == nil {
		return View{}, errors.New("table: CreateView needs a ViewCheck for the view's filter (query.CheckView)")
	}
	if err := CheckViewName(v.Name); err != nil {
		return View{}, err
	}
	if err := v.Image.Validate(); err != nil {
		return View{}, fmt.Errorf("view %q: %w", v.Name, err)
	}
	if v.Window != nil {
		if err := v.Window.Validate(); err != nil {
			return View{}, fmt.Errorf("view %q: %w", v.Name, err)
		}
	}
	var schema *Schema
	var err error
	if v.Tag != "" {
		tag, err := t.Tag(ctx, v.Tag)
		if err != nil {
			return View{}, err
		}
		if v.Snapshot != 0 && v.Snapshot != tag.Snapshot {
			return View{}, fmt.Errorf("%w: view %q: give a snapshot or a tag, not both", ErrInvalidInput, v.Name)
		}
		v.Snapshot = tag.Snapshot
	}
	if v.Snapshot != 0 {
		snap, err := t.Snapshot(ctx, v.Snapshot)
		if err != nil {
			return View{}, err
		}
		schema, err = t.Schema(ctx, snap.SchemaID)
		if err != nil {
			return View{}, err
		}
	} else if schema, err = t.LatestSchema(ctx); err != nil {
		return View{}, err
	}
	if err := check(schema, v); err != nil {
		return View{}, fmt.Errorf("view %q: %w", v.Name, err)
	}
	v.FormatVersion, v.Features, v.Time = ViewFormatVersion, []string{}, t.opts.Now().UTC()
	if v.Window != nil {
		v.Features = append(v.Features, FeatureClipWindows)
	}
	if v.Image != nil && v.Image.Format == "npy" {
		v.Features = append(v.Features, FeatureNPYImages)
	}
	if err := t.store.PutIfAbsent(ctx, ViewKey(v.Name), marshal(v)); err != nil {
		if errors.Is(err, storage.ErrExists) {
			return View{}, fmt.Errorf("%w: view %q (views are immutable: delete it first)", ErrExists, v.Name)
		}
		return View{}, err
	}
	if v.Snapshot != 0 {
		// As with tags: a concurrent expire may have removed the snapshot
		// between the check and the write.
		if _, err := t.store.ReadAll(ctx, snapshotKey(v.Snapshot)); errors.Is(err, storage.ErrNotFound) {
			_ = t.store.Delete(ctx, ViewKey(v.Name))
			return View{}, fmt.Errorf("%w: snapshot %d was expired while the view was created", ErrNotFound, v.Snapshot)
		}
	}
	return v, nil
}

// DeleteView removes a view.
func (t *Table) DeleteView(ctx context.Context, name string) error {
	if _, err := t.View(ctx, name); err != nil && !errors.Is(err, ErrUnsupportedFormat) && !errors.Is(err, ErrCorrupt) {
		return err
	}
	return t.store.Delete(ctx, ViewKey(name))
}

// View returns a view by name.
func (t *Table) View(ctx context.Context, name string) (View, error) {
	if err := CheckViewName(name); err != nil {
		return View{}, err
	}
	var v View
	if err := t.readJSON(ctx, ViewKey(name), &v); err != nil {
		if errors.Is(err, ErrNotFound) {
			return View{}, fmt.Errorf("%w: view %q", ErrNotFound, name)
		}
		return View{}, err
	}
	if v.FormatVersion < 1 || v.FormatVersion > ViewFormatVersion {
		return v, fmt.Errorf("%w: view %q has format version %d; this framefs reads views of version 1 to %d (upgrade framefs)",
			ErrUnsupportedFormat, name, v.FormatVersion, ViewFormatVersion)
	}
	for _, f := range v.Features {
		if !knownViewFeatures[f] {
			return v, fmt.Errorf("%w: view %q uses feature %q, unknown to this framefs (upgrade framefs)", ErrUnsupportedFormat, name, f)
		}
	}
	if v.Name != name {
		return v, fmt.Errorf("%w: %s names view %q", ErrCorrupt, ViewKey(name), v.Name)
	}
	if clips := slices.Contains(v.Features, FeatureClipWindows); clips != (v.Window != nil) {
		return v, fmt.Errorf("%w: view %q: feature %s and its window go together", ErrCorrupt, name, FeatureClipWindows)
	}
	if npy := slices.Contains(v.Features, FeatureNPYImages); npy != (v.Image != nil && v.Image.Format == "npy") {
		return v, fmt.Errorf("%w: view %q: feature %s and the npy image format go together", ErrCorrupt, name, FeatureNPYImages)
	}
	if v.Window != nil {
		if err := v.Window.Validate(); err != nil {
			return v, fmt.Errorf("%w: view %q: %v", ErrCorrupt, name, err)
		}
	}
	return v, nil
}

// ViewNames lists the names of the table's views, sorted.
func (t *Table) ViewNames(ctx context.Context) ([]string, error) {
	objs, err := t.store.List(ctx, prefixView)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, o := range objs {
		name, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, prefixView), ".json")
		if ok && CheckViewName(name) == nil {
			names = append(names, name)
		}
	}
	return names, nil
}

// Views lists the table's views, sorted by name. A view this framefs
// cannot read (newer format, damaged) is returned with the error in
// ViewError.
func (t *Table) Views(ctx context.Context) ([]View, []error, error) {
	names, err := t.ViewNames(ctx)
	if err != nil {
		return nil, nil, err
	}
	var views []View
	var errs []error
	for _, name := range names {
		v, err := t.View(ctx, name)
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil && !errors.Is(err, ErrUnsupportedFormat) && !errors.Is(err, ErrCorrupt) {
			return nil, nil, err
		}
		v.Name = name
		views = append(views, v)
		errs = append(errs, err)
	}
	return views, errs, nil
}

// ResolveView returns the snapshot a view shows now: its pinned snapshot,
// or the head.
func (t *Table) ResolveView(ctx context.Context, v View) (*Snapshot, error) {
	if v.Snapshot != 0 {
		s, err := t.Snapshot(ctx, v.Snapshot)
		if errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("%w: view %q pins snapshot %d, which no longer exists", ErrNotFound, v.Name, v.Snapshot)
		}
		return s, err
	}
	return t.Resolve(ctx, 0, "")
}

// pinnedSnapshots returns the snapshots tags and views keep alive.
func (t *Table) pinnedSnapshots(ctx context.Context) (map[int64]bool, error) {
	pinned := map[int64]bool{}
	tags, err := t.Tags(ctx)
	if err != nil {
		return nil, err
	}
	for _, tg := range tags {
		pinned[tg.Snapshot] = true
	}
	views, _, err := t.Views(ctx)
	if err != nil {
		return nil, err
	}
	for _, v := range views {
		if v.Snapshot != 0 {
			pinned[v.Snapshot] = true
		}
	}
	return pinned, nil
}
