package promtext

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMatchesClientGolang feeds the same operations to a Registry and to
// client_golang and compares the exposition byte for byte: family and
// series order, label order and escaping, float spelling, cumulative
// buckets.
func TestMatchesClientGolang(t *testing.T) {
	r := NewRegistry()
	pr := prometheus.NewRegistry()

	const help = "Requests by status and endpoint, with a \\ backslash\nand a newline."
	cv, err := r.NewCounterVec("test_requests_total", help, "status", "endpoint")
	if err != nil {
		t.Fatal(err)
	}
	pcv := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "test_requests_total", Help: help}, []string{"status", "endpoint"})
	pr.MustRegister(pcv)
	for _, c := range []struct {
		status, endpoint string
		add              float64
	}{
		{"200", "/v1/chat", 1}, {"404", "/v1/chat", 2}, {"200", "/a", 1e6},
		{"500", `/quote"back\slash` + "\nnewline", 0.25}, {"200", "/v1/chat", 3}, {"200", "ü/ñ", 1e21},
	} {
		cv.With(c.status, c.endpoint).Add(c.add)
		pcv.WithLabelValues(c.status, c.endpoint).Add(c.add)
	}

	// A vector nobody used writes nothing.
	if _, err := r.NewCounterVec("test_unused_total", "unused", "x"); err != nil {
		t.Fatal(err)
	}
	pr.MustRegister(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "test_unused_total", Help: "unused"}, []string{"x"}))

	buckets := []float64{0.001, 0.0025, 0.01, 0.1, 1, 2.5, 10}
	h, err := r.NewHistogram("test_latency_seconds", "Latency.", buckets)
	if err != nil {
		t.Fatal(err)
	}
	ph := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "test_latency_seconds", Help: "Latency.", Buckets: buckets})
	pr.MustRegister(ph)
	hv, err := r.NewHistogramVec("test_duration_seconds", "Duration.", append(buckets, math.Inf(1)), "endpoint")
	if err != nil {
		t.Fatal(err)
	}
	phv := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "test_duration_seconds", Help: "Duration.", Buckets: buckets}, []string{"endpoint"})
	pr.MustRegister(phv)
	for i, v := range []float64{0, 0.001, 0.0011, 0.0025, 0.3, 1, 1, 2.5000001, 9.99, 10, 11, 1e9, -3} {
		h.Observe(v)
		ph.Observe(v)
		ep := []string{"/b", "/a", "/c"}[i%3]
		hv.With(ep).Observe(v * 2)
		phv.WithLabelValues(ep).Observe(v * 2)
	}

	vals := []float64{3, math.NaN(), 7e-9, math.Inf(-1)}
	descs := []FuncDesc{
		{"test_queue_depth", "Queue.", Gauge},
		{"test_b_gauge", "B.", Gauge},
		{"test_tokens_total", "Tokens.", CounterKind},
		{"test_a_gauge", "A.", Gauge},
	}
	reads := 0
	if err := r.NewFuncs(func() []float64 { reads++; return vals }, descs...); err != nil {
		t.Fatal(err)
	}
	for i, d := range descs {
		v := vals[i]
		if d.Kind == Gauge {
			pr.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: d.Name, Help: d.Help}, func() float64 { return v }))
		} else {
			pr.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: d.Name, Help: d.Help}, func() float64 { return v }))
		}
	}

	var got bytes.Buffer
	n, err := r.WriteTo(&got)
	if err != nil || n != int64(got.Len()) {
		t.Fatalf("WriteTo: n=%d len=%d err=%v", n, got.Len(), err)
	}
	if reads != 1 {
		t.Errorf("NewFuncs read %d times in one scrape, want 1", reads)
	}
	mfs, err := pr.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&want, mf); err != nil {
			t.Fatal(err)
		}
	}
	if got.String() != want.String() {
		gl, wl := strings.Split(got.String(), "\n"), strings.Split(want.String(), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Errorf("line %d:\n got  %q\n want %q", i+1, g, w)
			}
		}
	}

	// And the official parser reads it back.
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(got.Bytes()))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if c := fams["test_latency_seconds"].GetMetric()[0].GetHistogram().GetSampleCount(); c != 13 {
		t.Errorf("parsed histogram count %d, want 13", c)
	}
}

func TestRegistryErrors(t *testing.T) {
	r := NewRegistry()
	if _, err := r.NewCounterVec("ok_total", "h", "a"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		f    func() error
	}{
		{"duplicate", func() error { _, err := r.NewCounterVec("ok_total", "h"); return err }},
		{"bad name", func() error { _, err := r.NewCounterVec("1bad", "h"); return err }},
		{"empty name", func() error { _, err := r.NewHistogram("", "h", nil); return err }},
		{"bad label", func() error { _, err := r.NewCounterVec("x_total", "h", "a:b"); return err }},
		{"reserved label", func() error { _, err := r.NewCounterVec("y_total", "h", "__x"); return err }},
		{"le label", func() error { _, err := r.NewHistogramVec("z", "h", nil, "le"); return err }},
		{"repeated label", func() error { _, err := r.NewCounterVec("w_total", "h", "a", "a"); return err }},
		{"unsorted buckets", func() error { _, err := r.NewHistogram("h1", "h", []float64{1, 0.5}); return err }},
		{"repeated bucket", func() error { _, err := r.NewHistogram("h2", "h", []float64{1, 1}); return err }},
		{"NaN bucket", func() error { _, err := r.NewHistogram("h3", "h", []float64{math.NaN()}); return err }},
		{"bad kind", func() error { return r.NewFuncs(nil, FuncDesc{"k", "h", "summary"}) }},
		{"funcs clash", func() error {
			return r.NewFuncs(nil, FuncDesc{"fresh_gauge", "h", Gauge}, FuncDesc{"ok_total", "h", CounterKind})
		}},
		{"funcs repeat", func() error {
			return r.NewFuncs(nil, FuncDesc{"twice", "h", Gauge}, FuncDesc{"twice", "h", Gauge})
		}},
	}
	for _, tc := range tests {
		if err := tc.f(); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	// A failed NewFuncs registers none of its values.
	if err := r.NewFuncs(func() []float64 { return nil }, FuncDesc{"fresh_gauge", "h", Gauge}); err != nil {
		t.Errorf("fresh_gauge was left registered by a failed NewFuncs: %v", err)
	}
	var b bytes.Buffer
	if _, err := r.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "fresh_gauge NaN\n") {
		t.Errorf("a value read did not return should be NaN:\n%s", b.String())
	}
}

func TestLabelArity(t *testing.T) {
	r := NewRegistry()
	cv, err := r.NewCounterVec("a_total", "h", "x", "y")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("With with one value for two labels did not panic")
		}
	}()
	cv.With("1")
}

// TestSeriesKeys checks that label values which join to the same string
// stay separate series.
func TestSeriesKeys(t *testing.T) {
	r := NewRegistry()
	cv, err := r.NewCounterVec("k_total", "h", "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	cv.With("x:y", "z").Inc()
	cv.With("x", "y:z").Inc()
	cv.With("x", "y:z").Add(-1) // ignored
	var b bytes.Buffer
	if _, err := r.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`k_total{a="x",b="y:z"} 1`, `k_total{a="x:y",b="z"} 1`} {
		if !strings.Contains(b.String(), want+"\n") {
			t.Errorf("missing %s in\n%s", want, b.String())
		}
	}
}
