package promtext

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// gathered registers cs in a new registry and gathers it.
func gathered(t *testing.T, cs ...prometheus.Collector) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func gauge(name, help string, v float64) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return v })
}

// TestWrite: whole numbers print as integers however large, fractions in
// plain decimal, a family without help has no HELP line, labels come in
// the order asked for with their values escaped; and the text parses back
// (with the format's own parser) to the values written.
func TestWrite(t *testing.T) {
	served := prometheus.NewCounter(prometheus.CounterOpts{Name: "x_served_total", Help: "Frames served.\nTwo lines, a \\."})
	served.Add(1234567)
	staged := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "x_staged_bytes", Help: "Staged."}, []string{"table", "dir"})
	staged.WithLabelValues(`/data/"robot"`, "ingest").Set(5e6)
	staged.WithLabelValues("a\\b\nc", "replace").Set(0)
	reg := gathered(t, served, staged,
		gauge("x_big", "", 1e21),
		gauge("x_cpu_seconds", "", 0.008),
		gauge("x_negative", "", -2.5e-7),
		gauge("x_nan", "", math.NaN()),
		gauge("x_inf", "", math.Inf(1)),
		gauge("x_negative_zero", "", math.Copysign(0, -1)),
		prometheus.NewUntypedFunc(prometheus.UntypedOpts{Name: "x_untyped"}, func() float64 { return 3 }))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, families, "table", "dir"); err != nil {
		t.Fatal(err)
	}
	want := `# TYPE x_big gauge
x_big 1000000000000000000000
# TYPE x_cpu_seconds gauge
x_cpu_seconds 0.008
# TYPE x_inf gauge
x_inf +Inf
# TYPE x_nan gauge
x_nan NaN
# TYPE x_negative gauge
x_negative -0.00000025
# TYPE x_negative_zero gauge
x_negative_zero 0
# HELP x_served_total Frames served.\nTwo lines, a \\.
# TYPE x_served_total counter
x_served_total 1234567
# HELP x_staged_bytes Staged.
# TYPE x_staged_bytes gauge
x_staged_bytes{table="/data/\"robot\"",dir="ingest"} 5000000
x_staged_bytes{table="a\\b\nc",dir="replace"} 0
# TYPE x_untyped untyped
x_untyped 3
`
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}

	parser := expfmt.NewTextParser(model.UTF8Validation)
	back, err := parser.TextToMetricFamilies(strings.NewReader(b.String()))
	if err != nil {
		t.Fatalf("the text does not parse: %v", err)
	}
	for _, f := range families {
		g := back[f.GetName()]
		if g == nil || g.GetType() != f.GetType() || g.GetHelp() != f.GetHelp() || len(g.GetMetric()) != len(f.GetMetric()) {
			t.Errorf("%s parsed back as %v", f.GetName(), g)
			continue
		}
		for i, m := range f.GetMetric() {
			if got, want := sample(g.GetMetric()[i]), sample(m); got != want {
				t.Errorf("%s: parsed back %s, want %s", f.GetName(), got, want)
			}
		}
	}
}

// sample is a metric's labels (by name) and value, as text to compare.
func sample(m *dto.Metric) string {
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	v := m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()
	return fmt.Sprint(labels, " ", v)
}

// TestWriteRefusesOtherKinds: a histogram is an error naming it, not
// text a reader would misread.
func TestWriteRefusesOtherKinds(t *testing.T) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "x_latency_seconds", Help: "Latency."})
	h.Observe(1)
	families, err := gathered(t, h).Gather()
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(&bytes.Buffer{}, families); err == nil || !strings.Contains(err.Error(), "x_latency_seconds") {
		t.Errorf("writing a histogram: %v", err)
	}
}
