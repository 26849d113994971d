package query

import (
	"context"
	"testing"

	"github.com/framefs/framefs/internal/frozentable"
)

// TestFrozenViews checks what the views of every frozen table show (the
// snapshot each resolves to, the matching rows by group, the clips)
// against what the writer worked out from the rows it ingested.
func TestFrozenViews(t *testing.T) {
	frozentable.Run(t, func(t *testing.T, v int, exp *frozentable.Expected) {
		ctx := context.Background()
		tbl := frozentable.Open(t, v)
		for _, want := range exp.Selections {
			view, err := tbl.View(ctx, want.View)
			if err != nil {
				t.Fatal(err)
			}
			snap, err := tbl.ResolveView(ctx, view)
			if err != nil || snap.ID != want.Snapshot {
				t.Fatalf("view %s resolves to %+v, %v; want snapshot %d", want.View, snap, err, want.Snapshot)
			}
			f, err := CompileFilter(ctx, tbl, snap, view.Where)
			if err != nil {
				t.Fatal(err)
			}
			var got []frozentable.ViewEpisode
			if view.Window != nil {
				cs, err := SelectClips(ctx, tbl, snap, f, *view.Window, SelectOptions{GroupBy: view.GroupBy})
				if err != nil {
					t.Fatal(err)
				}
				for _, ce := range cs.Episodes {
					ve := frozentable.ViewEpisode{Episode: ce.Entry.Episode}
					for _, p := range ce.Parts {
						ve.Parts = append(ve.Parts, frozentable.ViewPart{Group: p.Group, Starts: p.Starts})
					}
					got = append(got, ve)
				}
			} else {
				sel, err := Select(ctx, tbl, snap, f, SelectOptions{GroupBy: view.GroupBy})
				if err != nil {
					t.Fatal(err)
				}
				for _, se := range sel.Episodes {
					ve := frozentable.ViewEpisode{Episode: se.Entry.Episode}
					for _, p := range se.Parts {
						ords := p.Ordinals
						if ords == nil { // every row of the episode
							for i := range se.Entry.Rows {
								ords = append(ords, i)
							}
						}
						ve.Parts = append(ve.Parts, frozentable.ViewPart{Group: p.Group, Ordinals: ords})
					}
					got = append(got, ve)
				}
			}
			if ok, g, w := frozentable.SameJSON(t, got, want.Episodes); !ok {
				t.Errorf("view %s shows\n%s\nwant\n%s", want.View, g, w)
			}
		}
	})
}
