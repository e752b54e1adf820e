package tensor

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gotpu/gotpu/dtype"
)

// PrintOptions control String, as torch.set_printoptions.
type PrintOptions struct {
	Precision int // digits after the point (default 4)
	Threshold int // summarise above this many elements (default 1000)
	EdgeItems int // items shown at each end of a summarised dim (default 3)
	LineWidth int // characters per line (default 80)
}

var printOpts = PrintOptions{Precision: 4, Threshold: 1000, EdgeItems: 3, LineWidth: 80}

// SetPrintOptions changes the process-wide print options; zero fields keep
// their current values. It returns the previous options.
func SetPrintOptions(o PrintOptions) PrintOptions {
	prev := printOpts
	if o.Precision > 0 {
		printOpts.Precision = o.Precision
	}
	if o.Threshold > 0 {
		printOpts.Threshold = o.Threshold
	}
	if o.EdgeItems > 0 {
		printOpts.EdgeItems = o.EdgeItems
	}
	if o.LineWidth > 0 {
		printOpts.LineWidth = o.LineWidth
	}
	return prev
}

// String formats t as PyTorch prints a tensor (a sync point):
//
//	tensor([[1.0000, 2.5000],
//	        [3.0000, 4.0000]], dtype=torch.float64)
func (t *Tensor) String() string {
	var suffix []string
	dev := "cpu"
	if t.st != nil {
		dev = t.st.dev.String()
	}
	if dev != "cpu" {
		suffix = append(suffix, fmt.Sprintf("device='%s'", dev))
	}
	defaultDT := t.dt == dtype.F32 || t.dt == dtype.I64 || t.dt == dtype.Bool
	if dev == "meta" {
		suffix = append(suffix, "size="+sizeString(t.l.Shape))
		if !defaultDT {
			suffix = append(suffix, "dtype="+t.dt.TorchName())
		}
		return "tensor(..., " + strings.Join(suffix, ", ") + ")"
	}
	if t.st != nil && t.st.freed.Load() {
		return "tensor(<freed>)"
	}
	if t.Numel() == 0 && t.Dim() != 1 {
		suffix = append(suffix, "size="+sizeString(t.l.Shape))
	}
	if !defaultDT {
		suffix = append(suffix, "dtype="+t.dt.TorchName())
	}
	body := formatBody(t)
	if len(suffix) > 0 {
		return "tensor(" + body + ", " + strings.Join(suffix, ", ") + ")"
	}
	return "tensor(" + body + ")"
}

func sizeString(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.Itoa(d)
	}
	if len(shape) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// formatter formats elements with a common width.
type formatter struct {
	dt      dtype.DType
	intMode bool
	sci     bool
	width   int
}

func newFormatter(dt dtype.DType, vals []float64) *formatter {
	f := &formatter{dt: dt}
	if dt.IsFloat() {
		f.intMode = true
		var maxAbs, minAbs float64 = 0, math.Inf(1)
		nonzero := false
		for _, v := range vals {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			if v != math.Trunc(v) {
				f.intMode = false
			}
			if a := math.Abs(v); a != 0 {
				nonzero = true
				maxAbs = math.Max(maxAbs, a)
				minAbs = math.Min(minAbs, a)
			}
		}
		if nonzero {
			if f.intMode {
				f.sci = maxAbs > 1e8
			} else {
				f.sci = maxAbs/minAbs > 1000 || maxAbs > 1e8 || minAbs < 1e-4
			}
		}
	}
	for _, v := range vals {
		if w := len(f.format(v)); w > f.width {
			f.width = w
		}
	}
	return f
}

func (f *formatter) format(v float64) string {
	switch {
	case f.dt == dtype.Bool:
		if v != 0 {
			return "True"
		}
		return "False"
	case !f.dt.IsFloat():
		return strconv.FormatInt(int64(v), 10)
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	case f.sci:
		return strconv.FormatFloat(v, 'e', printOpts.Precision, 64)
	case f.intMode:
		return strconv.FormatFloat(v, 'f', 0, 64) + "."
	}
	return strconv.FormatFloat(v, 'f', printOpts.Precision, 64)
}

func (f *formatter) pad(v float64) string {
	s := f.format(v)
	return strings.Repeat(" ", f.width-len(s)) + s
}

func formatBody(t *Tensor) string {
	vals := t.Float64s()
	if t.dt == dtype.I64 {
		for i, v := range t.Int64s() {
			vals[i] = float64(v)
		}
	}
	summarize := len(vals) > printOpts.Threshold
	shown := vals
	if summarize {
		shown = summaryValues(vals, t.l.Shape)
	}
	f := newFormatter(t.dt, shown)
	if t.Dim() == 0 {
		return f.format(vals[0])
	}
	var sb strings.Builder
	writeDim(&sb, f, vals, t.l.Shape, 0, len("tensor("), summarize)
	return sb.String()
}

// summaryValues returns the values a summarised print shows (for widths).
func summaryValues(vals []float64, shape []int) []float64 {
	var out []float64
	var rec func(off, d int)
	stride := make([]int, len(shape))
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		stride[i] = s
		s *= shape[i]
	}
	rec = func(off, d int) {
		if d == len(shape) {
			out = append(out, vals[off])
			return
		}
		for _, i := range edgeIndices(shape[d], true) {
			if i >= 0 {
				rec(off+i*stride[d], d+1)
			}
		}
	}
	rec(0, 0)
	return out
}

// edgeIndices lists the indices shown along a dim of size n; -1 marks "...".
func edgeIndices(n int, summarize bool) []int {
	e := printOpts.EdgeItems
	if !summarize || n <= 2*e {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	idx := make([]int, 0, 2*e+1)
	for i := 0; i < e; i++ {
		idx = append(idx, i)
	}
	idx = append(idx, -1)
	for i := n - e; i < n; i++ {
		idx = append(idx, i)
	}
	return idx
}

func writeDim(sb *strings.Builder, f *formatter, vals []float64, shape []int, off, indent int, summarize bool) {
	stride := 1
	for _, d := range shape[1:] {
		stride *= d
	}
	sb.WriteByte('[')
	idx := edgeIndices(shape[0], summarize)
	if len(shape) == 1 {
		perLine := max(1, (printOpts.LineWidth-indent)/(f.width+2))
		col := 0
		for k, i := range idx {
			if k > 0 {
				sb.WriteByte(',')
				if col == perLine {
					sb.WriteString("\n" + strings.Repeat(" ", indent+1))
					col = 0
				} else {
					sb.WriteByte(' ')
				}
			}
			if i < 0 {
				sb.WriteString("...")
			} else {
				sb.WriteString(f.pad(vals[off+i*stride]))
			}
			col++
		}
		sb.WriteByte(']')
		return
	}
	sep := ",\n" + strings.Repeat("\n", len(shape)-2) + strings.Repeat(" ", indent+1)
	for k, i := range idx {
		if k > 0 {
			sb.WriteString(sep)
		}
		if i < 0 {
			sb.WriteString("...")
			continue
		}
		writeDim(sb, f, vals, shape[1:], off+i*stride, indent+1, summarize)
	}
	sb.WriteByte(']')
}
