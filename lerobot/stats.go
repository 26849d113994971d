package lerobot

import (
	"encoding/json"
	"math"
	"sort"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// statNames are the statistics LeRobot keeps per numeric feature.
var statNames = []string{"min", "max", "mean", "std", "count"}

// featureStats accumulates per-element statistics of a numeric feature
// (a scalar has one element).
type featureStats struct {
	min, max, sum, sumSq []float64
	count                int64
}

func newFeatureStats(n int) *featureStats {
	s := &featureStats{min: make([]float64, n), max: make([]float64, n), sum: make([]float64, n), sumSq: make([]float64, n)}
	for i := range s.min {
		s.min[i], s.max[i] = math.Inf(1), math.Inf(-1)
	}
	return s
}

func (s *featureStats) add(vals []float64) {
	for i, v := range vals {
		s.min[i] = math.Min(s.min[i], v)
		s.max[i] = math.Max(s.max[i], v)
		s.sum[i] += v
		s.sumSq[i] += v * v
	}
	s.count++
}

func (s *featureStats) merge(o *featureStats) {
	for i := range s.min {
		s.min[i] = math.Min(s.min[i], o.min[i])
		s.max[i] = math.Max(s.max[i], o.max[i])
		s.sum[i] += o.sum[i]
		s.sumSq[i] += o.sumSq[i]
	}
	s.count += o.count
}

func (s *featureStats) meanStd() (mean, std []float64) {
	mean, std = make([]float64, len(s.sum)), make([]float64, len(s.sum))
	for i := range s.sum {
		if s.count == 0 {
			continue
		}
		m := s.sum[i] / float64(s.count)
		mean[i] = m
		std[i] = math.Sqrt(math.Max(0, s.sumSq[i]/float64(s.count)-m*m))
	}
	return mean, std
}

// numbers returns a row value of a numeric column as float64s, or false
// for columns that get no statistics (text, bool).
func numbers(col outColumn, v any) ([]float64, bool) {
	if col.dtype == "string" || col.dtype == "bool" {
		return nil, false
	}
	one := func(x any) (float64, bool) {
		switch n := x.(type) {
		case int64:
			return float64(n), true
		case float64:
			return n, true
		case time.Time:
			return float64(n.UnixMicro()) / 1e6, true
		}
		return 0, false
	}
	if col.listLen == 0 {
		f, ok := one(v)
		return []float64{f}, ok
	}
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]float64, len(list))
	for i, e := range list {
		if out[i], ok = one(e); !ok {
			return nil, false
		}
	}
	return out, true
}

func (ep *exportedEpisode) addStats(col outColumn, v any) {
	vals, ok := numbers(col, v)
	if !ok {
		return
	}
	st := ep.stats[col.name]
	if st == nil {
		st = newFeatureStats(len(vals))
		ep.stats[col.name] = st
	}
	if len(vals) == len(st.min) {
		st.add(vals)
	}
}

// statColumns are the features with statistics, sorted.
func (x *exporter) statColumns() []string {
	var out []string
	for name := range x.stats {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// append writes the episode statistics columns of one feature.
func (s *featureStats) append(next func() array.Builder) {
	mean, std := s.meanStd()
	for _, vals := range [][]float64{s.min, s.max, mean, std} {
		lb := next().(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Float64Builder).AppendValues(vals, nil)
	}
	lb := next().(*array.ListBuilder)
	lb.Append(true)
	lb.ValueBuilder().(*array.Int64Builder).Append(s.count)
}

// writeStats writes meta/stats.json: the statistics of every numeric
// feature over all exported rows. Cameras get none (that would mean
// decoding every frame).
func (x *exporter) writeStats() error {
	out := map[string]map[string]any{}
	for name, s := range x.stats {
		mean, std := s.meanStd()
		out[name] = map[string]any{"min": s.min, "max": s.max, "mean": mean, "std": std, "count": []int64{s.count}}
	}
	data, err := json.MarshalIndent(out, "", "    ")
	if err != nil {
		return err
	}
	f, err := create(x.tmp, legacyStats)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
