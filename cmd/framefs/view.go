package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/framefs/framefs/query"
	"github.com/framefs/framefs/table"
)

// viewCreateOptions are the flags of `framefs view create`; they map onto
// table.View.
type viewCreateOptions struct {
	// where is the filter (SQL WHERE syntax).
	where string
	// snapshot and tag pin the view; neither follows the head.
	snapshot int64
	tag      string
	// groupBy lays the view out in COL=VALUE folders.
	groupBy []string
	// imageFormat, jpegQuality, scale (WxH) and maxSide set the view's
	// own image setting.
	imageFormat string
	jpegQuality int
	scale       string
	maxSide     int
	// window makes a clip view.
	window windowFlags
}

func (o viewCreateOptions) view(name string) (table.View, error) {
	v := table.View{Name: name, Where: o.where, Snapshot: o.snapshot, Tag: o.tag}
	for _, g := range o.groupBy {
		for _, c := range strings.Split(g, ",") {
			if c = strings.TrimSpace(c); c != "" {
				v.GroupBy = append(v.GroupBy, c)
			}
		}
	}
	img := table.ViewImage{Format: o.imageFormat, JPEGQuality: o.jpegQuality, MaxSide: o.maxSide}
	if o.scale != "" {
		var err error
		if img.Width, img.Height, err = parseScale(o.scale); err != nil {
			return v, err
		}
	}
	if img != (table.ViewImage{}) {
		v.Image = &img
	}
	w, err := o.window.window()
	if err != nil {
		return v, err
	}
	v.Window = w
	if v.Window != nil && v.Where == "" {
		v.Where = "TRUE" // every window of every episode
	}
	return v, nil
}

// parseScale reads WxH (either may be 0 to keep the aspect ratio).
func parseScale(s string) (int, int, error) {
	ws, hs, ok := strings.Cut(s, "x")
	w, err1 := strconv.Atoi(ws)
	h, err2 := strconv.Atoi(hs)
	if !ok || err1 != nil || err2 != nil || w < 0 || h < 0 || w == 0 && h == 0 {
		return 0, 0, fmt.Errorf("--scale %q: want WxH, e.g. 224x224 (0 for one side keeps the aspect ratio)", s)
	}
	return w, h, nil
}

func newViewCommand(stores *storeFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "view TABLE create NAME --where EXPR [--window N] | delete NAME | list",
		Short: "Create, delete or list views (named filters shown as folders in mounts)",
		Long: `A view is a named filter over a table's frame rows. Mounts show it as
TABLE/views/NAME/, shaped like a snapshot folder but holding only the matching
frames. A view follows the head (it changes with each commit) unless pinned
with --snapshot or --tag; a pinned view keeps its snapshot through expire and
gc, as a tag does. Views are immutable: to change one, delete and create it.

With --window N a view is a clip view: it shows clips of N frames (every
(S+1)-th frame with --frame-skip S), starting every H frames with --hop H
(default N), as TABLE/views/NAME/[PART=VALUE/]EPISODE/clip-SSSSSS/ folders.
A clip is kept only if every frame in it matches the filter (--where is
optional for a clip view).`,
		Example: `  framefs view create data/robot fast --where "ego_speed_kmh >= 60"
  framefs view create data/robot thumbs --where "TRUE" --max-side 128 --tag v1
  framefs view create data/robot by-label --where "label IS NOT NULL" --group-by label --image-format bmp
  framefs view create data/robot clips16 --where "ego_speed_kmh >= 10" --window 16 --hop 8
  framefs view list data/robot --json
  framefs view delete data/robot fast`,
	}
	var o viewCreateOptions
	create := &cobra.Command{
		Use:   "create TABLE NAME --where EXPR | --window N [--frame-skip S] [--hop H]",
		Short: "Create a view",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.where == "" && !cmd.Flags().Changed("window") {
				return fmt.Errorf("give the view's filter with --where (e.g. --where \"speed >= 60\"; --where TRUE for every frame)")
			}
			if o.snapshot != 0 && o.tag != "" {
				return fmt.Errorf("pin the view with --snapshot or --tag, not both")
			}
			v, err := o.view(args[1])
			if err != nil {
				return err
			}
			tbl, err := stores.openTable(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			v, err = query.CreateView(cmd.Context(), tbl, v)
			if err != nil {
				return err
			}
			pin := "follows the head"
			if v.Snapshot != 0 {
				pin = fmt.Sprintf("pinned to snapshot %d", v.Snapshot)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "view %s (%s): %s\n", v.Name, pin, v.Where)
			if v.Window != nil {
				cs, err := countClips(cmd.Context(), tbl, v)
				if err != nil {
					return fmt.Errorf("view %s was created; counting its clips: %w", v.Name, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "clip view, %s: %s\n", describeWindow(v.Window), clipsSummary(cs))
			}
			return nil
		},
	}
	f := create.Flags()
	f.StringVar(&o.where, "where", "", "the filter, in SQL WHERE syntax")
	f.Int64Var(&o.snapshot, "snapshot", 0, "pin the view to this snapshot")
	f.StringVar(&o.tag, "tag", "", "pin the view to this tag's snapshot")
	f.StringArrayVar(&o.groupBy, "group-by", nil, "lay frames out in COL=VALUE folders above the episodes (comma-separated, repeatable)")
	f.StringVar(&o.imageFormat, "image-format", "", "serve the view's frames as jpg, png, bmp, ppm or npy")
	f.IntVar(&o.jpegQuality, "jpeg-quality", 0, "JPEG quality 1-100 of the view's frames")
	f.StringVar(&o.scale, "scale", "", "resize the view's frames to WxH (0 for one side keeps the aspect ratio)")
	f.IntVar(&o.maxSide, "max-side", 0, "shrink the view's frames so that their longer side is at most N pixels")
	positive(f, "snapshot", "jpeg-quality", "max-side")
	emptyOK(f, "where") // "give the view's filter"
	o.window.add(f)

	del := &cobra.Command{
		Use:   "delete TABLE NAME",
		Short: "Delete a view",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			tbl, err := stores.openTable(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return tbl.DeleteView(cmd.Context(), args[1])
		},
	}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list TABLE",
		Short: "List views",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tbl, err := stores.openTable(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			views, errs, err := tbl.Views(cmd.Context())
			if err != nil {
				return err
			}
			type viewJSON struct {
				table.View
				Error string `json:"error,omitempty"`
			}
			out := []viewJSON{}
			for i, v := range views {
				vj := viewJSON{View: v}
				if errs[i] != nil {
					vj.Error = errs[i].Error()
				}
				out = append(out, vj)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				enc.SetEscapeHTML(false) // filters hold < and >
				return enc.Encode(out)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "VIEW\tSNAPSHOT\tCREATED\tGROUP BY\tIMAGE\tCLIPS\tWHERE")
			for _, v := range out {
				snap := "head"
				if v.Snapshot != 0 {
					snap = strconv.FormatInt(v.Snapshot, 10)
				}
				where := v.Where
				if v.Error != "" {
					where = "(" + v.Error + ")"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Name, snap, v.Time.Format(time.RFC3339),
					strings.Join(v.GroupBy, ","), describeViewImage(v.Image), describeWindow(v.Window), where)
			}
			return w.Flush()
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(create, del, list)
	acceptTableFirst(cmd)
	return cmd
}

func describeViewImage(img *table.ViewImage) string {
	if img == nil {
		return ""
	}
	var parts []string
	if img.Format != "" {
		parts = append(parts, img.Format)
	}
	if img.JPEGQuality != 0 {
		parts = append(parts, fmt.Sprintf("q=%d", img.JPEGQuality))
	}
	if img.Width != 0 || img.Height != 0 {
		parts = append(parts, fmt.Sprintf("%dx%d", img.Width, img.Height))
	}
	if img.MaxSide != 0 {
		parts = append(parts, fmt.Sprintf("max-side=%d", img.MaxSide))
	}
	return strings.Join(parts, ",")
}
