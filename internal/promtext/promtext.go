// Package promtext keeps counters, gauges and histograms and writes them
// in the Prometheus text exposition format (version 0.0.4), the format a
// Prometheus server scrapes from /metrics.
//
// It is what `gotpu serve` needs of a metrics library and no more: no
// protobuf, no process collectors, no exemplars or native histograms. Its
// output is byte for byte what github.com/prometheus/client_golang writes
// for the same metrics (families sorted by name, series by label values,
// floats spelled as client_golang spells them), so dashboards and
// recording rules written against either keep working.
package promtext

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/gotpu/gotpu/internal/iox"
)

// ContentType is the Content-Type of WriteTo's output.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Registry holds metric families. Its methods are safe for concurrent use.
type Registry struct {
	mu   sync.Mutex
	fams map[string]family
}

// family is one metric family: it writes its HELP, TYPE and samples.
type family interface {
	write(w *bufio.Writer, sc *scrape)
}

// scrape is one WriteTo call's state: the values of each NewFuncs group,
// read once per call.
type scrape struct {
	groups map[*funcGroup][]float64
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{fams: map[string]family{}} }

func (r *Registry) add(name string, labels []string, f family) error {
	return r.addAll([]string{name}, labels, []family{f})
}

// addAll registers families under names, all or none.
func (r *Registry) addAll(names, labels []string, fs []family) error {
	for _, name := range names {
		if !validName(name, false) {
			return fmt.Errorf("promtext: invalid metric name %q", name)
		}
	}
	for _, l := range labels {
		if !validName(l, true) || strings.HasPrefix(l, "__") || l == "le" {
			return fmt.Errorf("promtext: %s: invalid label name %q", names[0], l)
		}
	}
	for i := 1; i < len(labels); i++ {
		if slices.Contains(labels[:i], labels[i]) {
			return fmt.Errorf("promtext: %s: label %q given twice", names[0], labels[i])
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, name := range names {
		if _, dup := r.fams[name]; dup || slices.Contains(names[:i], name) {
			return fmt.Errorf("promtext: metric %q registered twice", name)
		}
	}
	for i, name := range names {
		r.fams[name] = fs[i]
	}
	return nil
}

// validName reports whether s is a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)
// or, with label set, a label name (the same without colons).
func validName(s string, label bool) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		ok := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || (c == ':' && !label) || (i > 0 && c >= '0' && c <= '9')
		if !ok {
			return false
		}
	}
	return true
}

// WriteTo writes every family with at least one series, sorted by name,
// in the text exposition format.
func (r *Registry) WriteTo(w io.Writer) (int64, error) {
	r.mu.Lock()
	names := make([]string, 0, len(r.fams))
	for n := range r.fams {
		names = append(names, n)
	}
	fams := make([]family, len(names))
	sort.Strings(names)
	for i, n := range names {
		fams[i] = r.fams[n]
	}
	r.mu.Unlock()
	cw := &iox.CountWriter{W: w}
	bw := bufio.NewWriter(cw)
	sc := &scrape{groups: map[*funcGroup][]float64{}}
	for _, f := range fams {
		f.write(bw, sc)
	}
	err := bw.Flush()
	return cw.N, err
}

// header writes a family's HELP and TYPE lines.
func header(w *bufio.Writer, name, help, typ string) {
	w.WriteString("# HELP ")
	w.WriteString(name)
	w.WriteByte(' ')
	helpEscaper.WriteString(w, help)
	w.WriteString("\n# TYPE ")
	w.WriteString(name)
	w.WriteByte(' ')
	w.WriteString(typ)
	w.WriteByte('\n')
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// sample writes one line: name{labels,extra="x"} value.
func sample(w *bufio.Writer, name string, labels, values []string, extra string, extraValue float64, v float64) {
	w.WriteString(name)
	if len(labels) > 0 || extra != "" {
		w.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				w.WriteByte(',')
			}
			w.WriteString(l)
			w.WriteString(`="`)
			labelEscaper.WriteString(w, values[i])
			w.WriteByte('"')
		}
		if extra != "" {
			if len(labels) > 0 {
				w.WriteByte(',')
			}
			w.WriteString(extra)
			w.WriteString(`="`)
			w.WriteString(formatFloat(extraValue))
			w.WriteByte('"')
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	w.WriteString(formatFloat(v))
	w.WriteByte('\n')
}

// formatFloat spells v as the exposition format (and client_golang) does.
func formatFloat(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// series is a labelled child of a vector family, kept sorted by values.
type series[T any] struct {
	values []string
	m      *T
}

// vec holds a family's children by label values. Its labels are sorted
// by name, as the exposition writes them; order maps them to the order
// in which the family was declared.
type vec[T any] struct {
	mu       sync.Mutex
	labels   []string
	order    []int // labels[i] was declared at order[i]
	children map[string]*series[T]
	make     func() *T
}

// init sets the labels, sorted, and the function that makes a child.
func (v *vec[T]) init(labels []string, mk func() *T) {
	v.order = make([]int, len(labels))
	for i := range v.order {
		v.order[i] = i
	}
	sort.SliceStable(v.order, func(i, j int) bool { return labels[v.order[i]] < labels[v.order[j]] })
	v.labels = make([]string, len(labels))
	for i, o := range v.order {
		v.labels[i] = labels[o]
	}
	v.children = map[string]*series[T]{}
	v.make = mk
}

func (v *vec[T]) with(declared []string) *T {
	if len(declared) != len(v.labels) {
		panic(fmt.Sprintf("promtext: %d label values for %d labels", len(declared), len(v.labels)))
	}
	values := make([]string, len(declared))
	for i, o := range v.order {
		values[i] = declared[o]
	}
	var kb strings.Builder
	for _, x := range values {
		kb.WriteString(strconv.Itoa(len(x)))
		kb.WriteByte(':')
		kb.WriteString(x)
	}
	key := kb.String()
	v.mu.Lock()
	defer v.mu.Unlock()
	if s, ok := v.children[key]; ok {
		return s.m
	}
	s := &series[T]{values: values, m: v.make()}
	v.children[key] = s
	return s.m
}

// sorted returns the children ordered by their label values.
func (v *vec[T]) sorted() []*series[T] {
	v.mu.Lock()
	out := make([]*series[T], 0, len(v.children))
	for _, s := range v.children {
		out = append(out, s)
	}
	v.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return slices.Compare(out[i].values, out[j].values) < 0 })
	return out
}

// Counter is a value that only goes up.
type Counter struct {
	mu sync.Mutex
	v  float64
}

// Inc adds one.
func (c *Counter) Inc() { c.Add(1) }

// Add adds d, which must not be negative (a negative d is ignored).
func (c *Counter) Add(d float64) {
	if !(d >= 0) {
		return
	}
	c.mu.Lock()
	c.v += d
	c.mu.Unlock()
}

// Value returns the count.
func (c *Counter) Value() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.v
}

// CounterVec is a counter family with labels.
type CounterVec struct {
	name, help string
	vec[Counter]
}

// NewCounterVec registers a counter family with the given label names.
func (r *Registry) NewCounterVec(name, help string, labels ...string) (*CounterVec, error) {
	c := &CounterVec{name: name, help: help}
	c.init(labels, func() *Counter { return &Counter{} })
	if err := r.add(name, labels, c); err != nil {
		return nil, err
	}
	return c, nil
}

// With returns the counter of these label values (in the order the labels
// were named), creating it at zero. It panics when the number of values
// differs from the number of labels, a programming error.
func (c *CounterVec) With(values ...string) *Counter { return c.with(values) }

func (c *CounterVec) write(w *bufio.Writer, _ *scrape) {
	ss := c.sorted()
	if len(ss) == 0 {
		return
	}
	header(w, c.name, c.help, "counter")
	for _, s := range ss {
		sample(w, c.name, c.labels, s.values, "", 0, s.m.Value())
	}
}

// Histogram counts observations in cumulative buckets.
type Histogram struct {
	bounds []float64 // upper bounds, increasing, without +Inf
	mu     sync.Mutex
	counts []uint64 // per bucket, not cumulative; the last is +Inf's
	sum    float64
	n      uint64
}

func newHistogram(bounds []float64) *Histogram {
	return &Histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

// Observe adds v to the bucket of the first upper bound ≥ v.
func (h *Histogram) Observe(v float64) {
	i := sort.SearchFloat64s(h.bounds, v)
	h.mu.Lock()
	h.counts[i]++
	h.sum += v
	h.n++
	h.mu.Unlock()
}

func (h *Histogram) writeSeries(w *bufio.Writer, name string, labels, values []string) {
	h.mu.Lock()
	counts := slices.Clone(h.counts)
	sum, n := h.sum, h.n
	h.mu.Unlock()
	var cum uint64
	for i, b := range h.bounds {
		cum += counts[i]
		sample(w, name+"_bucket", labels, values, "le", b, float64(cum))
	}
	sample(w, name+"_bucket", labels, values, "le", math.Inf(1), float64(n))
	sample(w, name+"_sum", labels, values, "", 0, sum)
	sample(w, name+"_count", labels, values, "", 0, float64(n))
}

// checkBuckets checks that upper bounds increase and drops a final +Inf,
// which every histogram has anyway.
func checkBuckets(name string, b []float64) ([]float64, error) {
	b = slices.Clone(b)
	if n := len(b); n > 0 && math.IsInf(b[n-1], 1) {
		b = b[:n-1]
	}
	for i, x := range b {
		if math.IsNaN(x) || i > 0 && !(x > b[i-1]) {
			return nil, fmt.Errorf("promtext: %s: bucket bounds must increase: %v", name, b)
		}
	}
	return b, nil
}

// HistogramVec is a histogram family with labels; without labels it has
// one series, which NewHistogram returns.
type HistogramVec struct {
	name, help string
	vec[Histogram]
}

// NewHistogramVec registers a histogram family with the given bucket upper
// bounds (increasing; +Inf is implied) and label names.
func (r *Registry) NewHistogramVec(name, help string, buckets []float64, labels ...string) (*HistogramVec, error) {
	b, err := checkBuckets(name, buckets)
	if err != nil {
		return nil, err
	}
	h := &HistogramVec{name: name, help: help}
	h.init(labels, func() *Histogram { return newHistogram(b) })
	if err := r.add(name, labels, h); err != nil {
		return nil, err
	}
	return h, nil
}

// NewHistogram registers a histogram without labels.
func (r *Registry) NewHistogram(name, help string, buckets []float64) (*Histogram, error) {
	v, err := r.NewHistogramVec(name, help, buckets)
	if err != nil {
		return nil, err
	}
	return v.With(), nil
}

// With returns the histogram of these label values, as CounterVec.With.
func (h *HistogramVec) With(values ...string) *Histogram { return h.with(values) }

func (h *HistogramVec) write(w *bufio.Writer, _ *scrape) {
	ss := h.sorted()
	if len(ss) == 0 {
		return
	}
	header(w, h.name, h.help, "histogram")
	for _, s := range ss {
		s.m.writeSeries(w, h.name, h.labels, s.values)
	}
}

// Kind is the TYPE of a value read at scrape time.
type Kind string

// The kinds of a value read at scrape time.
const (
	Gauge       Kind = "gauge"
	CounterKind Kind = "counter"
)

// FuncDesc names one unlabelled value of a group read at scrape time.
type FuncDesc struct {
	Name, Help string
	Kind       Kind
}

// funcGroup is a NewFuncs group: its values come from one call of read.
type funcGroup struct {
	descs []FuncDesc
	read  func() []float64
}

// funcFamily is one value of a group.
type funcFamily struct {
	g     *funcGroup
	index int
}

// NewFuncs registers len(descs) unlabelled gauges or counters whose values
// read returns, in the order of descs, once per scrape: a consistent
// snapshot of several values (queue depth and running requests, say) for
// the price of one call. A value read does not return is written as NaN.
func (r *Registry) NewFuncs(read func() []float64, descs ...FuncDesc) error {
	g := &funcGroup{descs: slices.Clone(descs), read: read}
	names := make([]string, len(descs))
	fs := make([]family, len(descs))
	for i, d := range descs {
		if d.Kind != Gauge && d.Kind != CounterKind {
			return fmt.Errorf("promtext: %s: kind %q is not gauge or counter", d.Name, d.Kind)
		}
		names[i], fs[i] = d.Name, &funcFamily{g: g, index: i}
	}
	return r.addAll(names, nil, fs)
}

func (f *funcFamily) write(w *bufio.Writer, sc *scrape) {
	vals, ok := sc.groups[f.g]
	if !ok {
		vals = f.g.read()
		sc.groups[f.g] = vals
	}
	v := math.NaN()
	if f.index < len(vals) {
		v = vals[f.index]
	}
	d := f.g.descs[f.index]
	header(w, d.Name, d.Help, string(d.Kind))
	sample(w, d.Name, nil, nil, "", 0, v)
}
