// Package promtext writes gathered metric families in the Prometheus text
// exposition format (version 0.0.4) as framefs has always shown them in a
// mount's .stats: a family without help has no HELP line, labels print in
// the order the caller names, and every value prints in plain decimal,
// whole numbers as integers (1234567, where prometheus/common's expfmt
// writes 1.234567e+06), so that scripts read counters as integers.
//
// It writes counters, gauges and untyped metrics, the kinds framefs has;
// a family of any other kind is an error.
package promtext

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// Write writes families, in their order, to w. The labels of a metric
// named in first print first, in that order; the others follow by name.
func Write(w io.Writer, families []*dto.MetricFamily, first ...string) error {
	bw := bufio.NewWriter(w)
	for _, f := range families {
		if err := writeFamily(bw, f, first); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func writeFamily(w *bufio.Writer, f *dto.MetricFamily, first []string) error {
	name := f.GetName()
	var kind string
	switch f.GetType() {
	case dto.MetricType_COUNTER:
		kind = "counter"
	case dto.MetricType_GAUGE:
		kind = "gauge"
	case dto.MetricType_UNTYPED:
		kind = "untyped"
	default:
		return fmt.Errorf("promtext: metric %s is a %s; only counters, gauges and untyped metrics are written", name, f.GetType())
	}
	if help := f.GetHelp(); help != "" {
		fmt.Fprintf(w, "# HELP %s %s\n", name, helpEscaper.Replace(help))
	}
	fmt.Fprintf(w, "# TYPE %s %s\n", name, kind)
	for _, m := range f.GetMetric() {
		var v float64
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			v = m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			v = m.GetGauge().GetValue()
		default:
			v = m.GetUntyped().GetValue()
		}
		w.WriteString(name)
		writeLabels(w, m.GetLabel(), first)
		w.WriteByte(' ')
		w.WriteString(FormatValue(v))
		w.WriteByte('\n')
	}
	return nil
}

// writeLabels writes {name="value",...}, nothing for no labels.
func writeLabels(w *bufio.Writer, labels []*dto.LabelPair, first []string) {
	if len(labels) == 0 {
		return
	}
	rank := func(name string) int {
		if i := slices.Index(first, name); i >= 0 {
			return i
		}
		return len(first)
	}
	sorted := slices.Clone(labels)
	slices.SortStableFunc(sorted, func(a, b *dto.LabelPair) int {
		if r := rank(a.GetName()) - rank(b.GetName()); r != 0 {
			return r
		}
		return strings.Compare(a.GetName(), b.GetName())
	})
	w.WriteByte('{')
	for i, l := range sorted {
		if i > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(w, "%s=\"%s\"", l.GetName(), labelEscaper.Replace(l.GetValue()))
	}
	w.WriteByte('}')
}

// FormatValue is a sample value as Write prints it: plain decimal, the
// shortest that reads back as v, whole numbers without a fraction.
func FormatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case v == 0:
		return "0" // also for -0
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// The escapes the text format defines for HELP text and label values.
var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)
