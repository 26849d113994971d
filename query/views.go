package query

import (
	"context"

	"github.com/framefs/framefs/table"
)

// CheckView checks a view's filter and group-by columns against the schema
// s of the snapshot it shows: the filter compiles, and each group-by column
// is the episode column or a user column of single values. It is the
// table.ViewCheck of every view this package creates.
func CheckView(s *table.Schema, v table.View) error {
	if _, err := compileFilter(s, v.Where); err != nil {
		return err
	}
	for _, g := range v.GroupBy {
		if err := checkGroupColumn(s, g); err != nil {
			return err
		}
	}
	return nil
}

// CreateView stores a new view of t after checking all of it, its filter
// and group-by columns included (see table.Table.CreateView).
func CreateView(ctx context.Context, t *table.Table, v table.View) (table.View, error) {
	return t.CreateView(ctx, v, CheckView)
}

// VerifyViews checks every view of t that table.Table.Verify finds
// readable against the schema of the snapshot it shows now, and returns a
// problem for each one whose filter or group-by columns no longer fit.
func VerifyViews(ctx context.Context, t *table.Table) ([]table.Problem, error) {
	views, errs, err := t.Views(ctx)
	if err != nil {
		return nil, err
	}
	var problems []table.Problem
	for i, v := range views {
		if errs[i] != nil {
			continue // table.Verify reports it
		}
		snap, err := t.ResolveView(ctx, v)
		if err != nil {
			continue // no snapshots yet, or a problem table.Verify reports
		}
		s, err := t.Schema(ctx, snap.SchemaID)
		if err != nil {
			continue // table.Verify reports it
		}
		if err := CheckView(s, v); err != nil {
			problems = append(problems, table.Problem{Snapshot: snap.ID, Object: table.ViewKey(v.Name), Problem: err.Error()})
		}
	}
	return problems, nil
}
