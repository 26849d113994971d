package manifest

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Summary describes one manifest in a manifest list, so that readers
// choose the manifests they need without reading the others: a filter
// skips a manifest none of whose rows can match (or counts one all of
// whose rows match), a partition folder reads the manifests whose
// partition ranges hold it, an episode's lookup those whose episode range
// holds it.
type Summary struct {
	// Manifest is the manifest's key.
	Manifest string
	// Bytes is the manifest's size.
	Bytes int64
	// Episodes counts its entries, Rows their rows.
	Episodes, Rows int64
	// EpisodeMin and EpisodeMax bound its episode ids.
	EpisodeMin, EpisodeMax string
	// Partitions bound the values of each partition column.
	Partitions map[string]Range
	// Stats bound the user columns over all rows of the manifest, for the
	// columns every entry has statistics of.
	Stats map[string]Stats
}

// Range is the least and the greatest value of a column.
type Range struct{ Min, Max Bound }

// summarizer builds a manifest's summary as its entries are written.
type summarizer struct {
	l     Layout
	s     Summary
	parts []*Range
	stats []*statsAccumulator
}

func newSummarizer(l Layout) *summarizer {
	z := &summarizer{l: l, parts: make([]*Range, len(l.Partitions))}
	for range l.Columns {
		z.stats = append(z.stats, newStatsAccumulator())
	}
	return z
}

func (z *summarizer) add(e *Entry) error {
	if z.s.Episodes == 0 || e.Episode < z.s.EpisodeMin {
		z.s.EpisodeMin = e.Episode
	}
	if z.s.Episodes == 0 || e.Episode > z.s.EpisodeMax {
		z.s.EpisodeMax = e.Episode
	}
	z.s.Episodes++
	z.s.Rows += e.Rows
	for i, p := range z.l.Partitions {
		v, ok := ParsePartition(p.Type, e.Partition[p.Name])
		if !ok {
			return fmt.Errorf("%w: partition value %q is not of type %s", ErrInvalid, e.Partition[p.Name], p.Type)
		}
		r := z.parts[i]
		switch {
		case r == nil:
			z.parts[i] = &Range{v, v}
		case v.Compare(r.Min) < 0:
			r.Min = v
		case v.Compare(r.Max) > 0:
			r.Max = v
		}
	}
	for i, c := range z.l.Columns {
		cs, ok := e.Stats[c.Name]
		var st Stats
		if ok {
			st, ok = TypedStats(c.Type, cs, e.Rows)
		}
		z.stats[i].add(st, ok, e.Rows)
	}
	return nil
}

func (z *summarizer) result() Summary {
	s := z.s
	if len(z.l.Partitions) > 0 {
		s.Partitions = map[string]Range{}
		for i, p := range z.l.Partitions {
			if z.parts[i] != nil {
				s.Partitions[p.Name] = *z.parts[i]
			}
		}
	}
	for i, c := range z.l.Columns {
		if st, ok := z.stats[i].result(); ok {
			if s.Stats == nil {
				s.Stats = map[string]Stats{}
			}
			s.Stats[c.Name] = st
		}
	}
	return s
}

// Covers reports whether the manifest may hold episode id (its episode
// range holds it).
func (s *Summary) Covers(episode string) bool {
	return s.Episodes > 0 && s.EpisodeMin <= episode && episode <= s.EpisodeMax
}

// MayHoldPartition reports whether the manifest may hold episodes whose
// first len(values) partition columns (in the layout's order) have these
// values (as text); a value that does not parse as its column's type
// matches nothing.
func (s *Summary) MayHoldPartition(l Layout, values []string) bool {
	for i, v := range values {
		if i >= len(l.Partitions) {
			return false
		}
		p := l.Partitions[i]
		b, ok := ParsePartition(p.Type, v)
		if !ok {
			return false
		}
		r, known := s.Partitions[p.Name]
		if known && (b.Kind != r.Min.Kind || b.Compare(r.Min) < 0 || b.Compare(r.Max) > 0) {
			return false
		}
	}
	return true
}

// EncodeList writes a manifest list: one row per summary, in the order
// given. The layout names the columns whose partition ranges and
// statistics the list has room for; a summary's others are dropped.
func EncodeList(l Layout, sums []Summary) ([]byte, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	sc := l.listSchema()
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, s := range sums {
		f := 0
		next := func() array.Builder { f++; return b.Field(f - 1) }
		next().(*array.StringBuilder).Append(s.Manifest)
		next().(*array.Int64Builder).Append(s.Bytes)
		next().(*array.Int64Builder).Append(s.Episodes)
		next().(*array.Int64Builder).Append(s.Rows)
		next().(*array.StringBuilder).Append(s.EpisodeMin)
		next().(*array.StringBuilder).Append(s.EpisodeMax)
		if len(l.Partitions) > 0 {
			pb := next().(*array.StructBuilder)
			pb.Append(true)
			for i, p := range l.Partitions {
				r, ok := s.Partitions[p.Name]
				if !ok || r.Min.Kind != KindOf(p.Type) || r.Max.Kind != r.Min.Kind {
					return nil, fmt.Errorf("%w: summary of %s has no range of partition column %q", ErrInvalid, s.Manifest, p.Name)
				}
				rb := pb.FieldBuilder(i).(*array.StructBuilder)
				rb.Append(true)
				appendBound(rb.FieldBuilder(0), r.Min, true)
				appendBound(rb.FieldBuilder(1), r.Max, true)
			}
		}
		if len(l.Columns) > 0 {
			sb := next().(*array.StructBuilder)
			sb.Append(true)
			for i, c := range l.Columns {
				st, ok := s.Stats[c.Name]
				if ok && st.HasRange && (st.Min.Kind != KindOf(c.Type) || st.Max.Kind != st.Min.Kind) {
					ok = false
				}
				appendStats(sb.FieldBuilder(i).(*array.StructBuilder), c.Type, st, ok)
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	data, err := writeRecord(sc, rec, int64(max(len(sums), 1)))
	if err != nil {
		return nil, fmt.Errorf("write manifest list: %w", err)
	}
	return data, nil
}

// Summarize computes the summary of entries (Manifest and Bytes left
// empty), as Encode does.
func Summarize(l Layout, entries []Entry) (Summary, error) {
	z := NewSummarizer(l)
	if err := z.Add(entries...); err != nil {
		return Summary{}, err
	}
	return z.Summary(), nil
}

// Summarizer computes a summary as Summarize does, from entries added a
// few at a time: a reader of a large manifest need not hold all its
// entries decoded.
type Summarizer struct{ z *summarizer }

// NewSummarizer starts the summary of entries of layout l.
func NewSummarizer(l Layout) *Summarizer { return &Summarizer{newSummarizer(l)} }

// Add adds entries to the summary.
func (s *Summarizer) Add(entries ...Entry) error {
	for i := range entries {
		if err := s.z.add(&entries[i]); err != nil {
			return fmt.Errorf("entry of episode %q: %w", entries[i].Episode, err)
		}
	}
	return nil
}

// Summary is the summary of the entries added (Manifest and Bytes left
// empty).
func (s *Summarizer) Summary() Summary { return s.z.result() }

// Check reports the first claim of s that does not hold of the summary
// actual computed from the manifest's entries (Summarize): readers trust
// a summary to skip or count a manifest without reading it, so its counts
// must be exact and its ranges must bound what the entries hold.
func (s *Summary) Check(actual Summary) error {
	if s.Episodes != actual.Episodes || s.Rows != actual.Rows {
		return fmt.Errorf("the summary counts %d episodes of %d rows, the manifest holds %d of %d", s.Episodes, s.Rows, actual.Episodes, actual.Rows)
	}
	if actual.Episodes > 0 && (s.EpisodeMin > actual.EpisodeMin || s.EpisodeMax < actual.EpisodeMax) {
		return fmt.Errorf("the summary's episode ids %q..%q do not hold the manifest's %q..%q", s.EpisodeMin, s.EpisodeMax, actual.EpisodeMin, actual.EpisodeMax)
	}
	for name, r := range s.Partitions {
		a, ok := actual.Partitions[name]
		if !ok {
			continue // a column the manifest's entries do not have
		}
		if !boundsHold(r, a) {
			return fmt.Errorf("the summary's range of partition column %q does not hold the manifest's values", name)
		}
	}
	for name, st := range s.Stats {
		a, ok := actual.Stats[name]
		switch {
		case !ok:
			return fmt.Errorf("the summary has statistics of column %q, which some entries have none of", name)
		case a.Nulls != st.Nulls:
			return fmt.Errorf("the summary counts %d nulls in column %q, the entries %d", st.Nulls, name, a.Nulls)
		case !st.HasRange:
		case a.HasRange && !boundsHold(Range{st.Min, st.Max}, Range{a.Min, a.Max}):
			return fmt.Errorf("the summary's range of column %q does not hold the entries' values", name)
		case !a.HasRange && a.Nulls < actual.Rows:
			return fmt.Errorf("the summary bounds column %q, whose values some entries do not bound", name)
		}
	}
	return nil
}

// boundsHold reports whether r holds every value of a.
func boundsHold(r, a Range) bool {
	return r.Min.Kind == a.Min.Kind && r.Max.Kind == a.Max.Kind && r.Min.Compare(a.Min) <= 0 && r.Max.Compare(a.Max) >= 0
}
