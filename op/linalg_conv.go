package op

import (
	"fmt"
	"slices"

	"github.com/gotpu/gotpu/dtype"
)

// Convolution and pooling: the convolution primitive (torch.ops.aten.convolution
// with asymmetric padding allowed), the reduce_window primitive (StableHLO's
// windowed max/sum), pooling with indices and adaptive pooling as primitives,
// and the PyTorch functional ops as composites.

// ConvParams is a resolved convolution.
type ConvParams struct {
	N, Cin, Cout, Groups int
	Transposed           bool
	In, Kernel, Out      []int // spatial sizes
	Stride, Dilation     []int
	PadLo, PadHi, OutPad []int
}

// spatialList expands an attribute list of length 1 to n entries.
func spatialList(name, what string, v []int, n int, def int) ([]int, error) {
	switch len(v) {
	case 0:
		out := make([]int, n)
		for i := range out {
			out[i] = def
		}
		return out, nil
	case 1:
		out := make([]int, n)
		for i := range out {
			out[i] = v[0]
		}
		return out, nil
	case n:
		return slices.Clone(v), nil
	}
	return nil, fmt.Errorf("%s: expected %s to be a single integer value or a list of %d values to match the convolution dimensions, but got %s=%v", name, what, n, what, v)
}

// laShape renders a shape as PyTorch prints sizes: "[1, 2, 5, 5]".
func laShape(v []int) string {
	s := "["
	for i, x := range v {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(x)
	}
	return s + "]"
}

// laTuple renders spatial sizes as PyTorch's conv errors do: "(5 x 5)".
func laTuple(v []int) string {
	if len(v) == 1 {
		return fmt.Sprint(v[0])
	}
	s := "("
	for i, x := range v {
		if i > 0 {
			s += " x "
		}
		s += fmt.Sprint(x)
	}
	return s + ")"
}

// ResolveConv checks a convolution's operand shapes and attributes and
// returns its parameters. bias is nil when absent.
func ResolveConv(input, weight, bias []int, a Attrs) (ConvParams, error) {
	const name = "convolution"
	var p ConvParams
	if len(weight) < 3 {
		return p, fmt.Errorf("%s: weight should have at least three dimensions, got weight of size %s", name, laShape(weight))
	}
	if len(input) != len(weight) {
		return p, fmt.Errorf("%s: Expected %d-dimensional input for %d-dimensional weight %s, but got %d-dimensional input of size %s instead", name, len(weight), len(weight), laShape(weight), len(input), laShape(input))
	}
	n := len(weight) - 2
	var err error
	if p.Stride, err = spatialList(name, "stride", a.Ints("stride"), n, 1); err != nil {
		return p, err
	}
	if p.Dilation, err = spatialList(name, "dilation", a.Ints("dilation"), n, 1); err != nil {
		return p, err
	}
	if p.PadLo, err = spatialList(name, "padding", a.Ints("padding"), n, 0); err != nil {
		return p, err
	}
	p.PadHi = p.PadLo
	if a.Has("padding_high") {
		if p.PadHi, err = spatialList(name, "padding_high", a.Ints("padding_high"), n, 0); err != nil {
			return p, err
		}
	}
	if p.OutPad, err = spatialList(name, "output_padding", a.Ints("output_padding"), n, 0); err != nil {
		return p, err
	}
	p.Groups = a.Int("groups")
	p.Transposed = a.Bool("transposed")
	for i := 0; i < n; i++ {
		switch {
		case p.Stride[i] <= 0:
			return p, fmt.Errorf("%s: non-positive stride is not supported", name)
		case p.Dilation[i] <= 0:
			return p, fmt.Errorf("%s: dilation should be greater than zero", name)
		case p.PadLo[i] < 0 || p.PadHi[i] < 0:
			return p, fmt.Errorf("%s: negative padding is not supported", name)
		case p.OutPad[i] < 0:
			return p, fmt.Errorf("%s: negative output_padding is not supported", name)
		}
		if p.Transposed && p.OutPad[i] >= p.Stride[i] && p.OutPad[i] >= p.Dilation[i] {
			return p, fmt.Errorf("%s: output padding must be smaller than either stride or dilation, but got output_padding %v, stride %v, dilation %v", name, p.OutPad, p.Stride, p.Dilation)
		}
		if !p.Transposed && p.OutPad[i] != 0 {
			return p, fmt.Errorf("%s: output_padding is only allowed for transposed convolutions, got %v", name, p.OutPad)
		}
	}
	if p.Groups <= 0 {
		return p, fmt.Errorf("%s: non-positive groups is not supported", name)
	}
	p.N, p.Cin = input[0], input[1]
	p.In, p.Kernel = slices.Clone(input[2:]), slices.Clone(weight[2:])
	if p.Transposed {
		if input[1] != weight[0] {
			return p, fmt.Errorf("%s: Given transposed=1, weight of size %s, expected input%s to have %d channels, but got %d channels instead", name, laShape(weight), laShape(input), weight[0], input[1])
		}
		if weight[0]%p.Groups != 0 {
			return p, fmt.Errorf("%s: Given groups=%d, expected weight to be divisible by %d at dimension 0, but got weight of size %s instead", name, p.Groups, p.Groups, laShape(weight))
		}
		p.Cout = weight[1] * p.Groups
	} else {
		if weight[0]%p.Groups != 0 {
			return p, fmt.Errorf("%s: Given groups=%d, expected weight to be divisible by %d at dimension 0, but got weight of size %s instead", name, p.Groups, p.Groups, laShape(weight))
		}
		if input[1] != weight[1]*p.Groups {
			return p, fmt.Errorf("%s: Given groups=%d, weight of size %s, expected input%s to have %d channels, but got %d channels instead", name, p.Groups, laShape(weight), laShape(input), weight[1]*p.Groups, input[1])
		}
		p.Cout = weight[0]
	}
	if bias != nil && (len(bias) != 1 || bias[0] != p.Cout) {
		return p, fmt.Errorf("%s: Given weight of size %s, expected bias to be 1-dimensional with %d elements, but got bias of size %s instead", name, laShape(weight), p.Cout, laShape(bias))
	}
	p.Out = make([]int, n)
	padded := make([]int, n)
	effK := make([]int, n)
	for i := 0; i < n; i++ {
		padded[i] = p.In[i] + p.PadLo[i] + p.PadHi[i]
		effK[i] = p.Dilation[i]*(p.Kernel[i]-1) + 1
		if p.Transposed {
			p.Out[i] = (p.In[i]-1)*p.Stride[i] - p.PadLo[i] - p.PadHi[i] + effK[i] + p.OutPad[i]
		} else {
			p.Out[i] = (padded[i]-effK[i])/p.Stride[i] + 1
		}
	}
	for i := 0; i < n; i++ {
		if !p.Transposed && padded[i] < effK[i] {
			return p, fmt.Errorf("%s: Calculated padded input size per channel: %s. Kernel size: %s. Kernel size can't be greater than actual input size", name, laTuple(padded), laTuple(effK))
		}
		if p.Out[i] < 0 {
			return p, fmt.Errorf("%s: Given input size per channel: %s. Calculated output size per channel: %s. Output size is too small", name, laTuple(p.In), laTuple(p.Out))
		}
	}
	return p, nil
}

// Shape returns the convolution's output shape.
func (p ConvParams) Shape() []int { return append([]int{p.N, p.Cout}, p.Out...) }

var convAttrs = []AttrSpec{
	{Name: "stride", Type: AttrInts, Default: []int{1}},
	{Name: "padding", Type: AttrInts, Default: []int{0}},
	{Name: "dilation", Type: AttrInts, Default: []int{1}},
	{Name: "groups", Type: AttrInt, Default: 1},
}

// convComposite registers conv<n>d / conv_transpose<n>d: unbatched inputs
// get a batch axis, "same"/"valid" padding strings are resolved, and the
// convolution primitive does the rest.
func convComposite(name string, n int, transposed bool, doc string) {
	attrs := slices.Clone(convAttrs)
	if transposed {
		attrs = append(attrs, AttrSpec{Name: "output_padding", Type: AttrInts, Default: []int{0}})
	} else {
		attrs = append(attrs, AttrSpec{Name: "padding_str", Type: AttrString, Default: ""})
	}
	attrs = append(attrs, laPrecisionAttr)
	// prim resolves the primitive's attributes and whether to add a batch axis.
	prim := func(in []Meta, a Attrs) (Attrs, bool, error) {
		x, w := in[0].Shape, in[1].Shape
		if len(x) != n+1 && len(x) != n+2 {
			return nil, false, fmt.Errorf("%s: Expected %dD (unbatched) or %dD (batched) input to %s, but got input of size: %s", name, n+1, n+2, name, laShape(x))
		}
		if len(w) != n+2 {
			return nil, false, fmt.Errorf("%s: expected weight to be %d-dimensional, but got weight of size %s", name, n+2, laShape(w))
		}
		pa := Attrs{"stride": a.Ints("stride"), "padding": a.Ints("padding"), "dilation": a.Ints("dilation"),
			"groups": a.Int("groups"), "transposed": transposed, "precision": a["precision"]}
		if transposed {
			pa["output_padding"] = a.Ints("output_padding")
		} else {
			switch ps := a.String("padding_str"); ps {
			case "":
			case "valid":
				pa["padding"] = []int{0}
			case "same":
				st, err := spatialList(name, "stride", a.Ints("stride"), n, 1)
				if err != nil {
					return nil, false, err
				}
				dl, err := spatialList(name, "dilation", a.Ints("dilation"), n, 1)
				if err != nil {
					return nil, false, err
				}
				lo, hi := make([]int, n), make([]int, n)
				for i := 0; i < n; i++ {
					if st[i] != 1 {
						return nil, false, fmt.Errorf("%s: padding='same' is not supported for strided convolutions", name)
					}
					total := dl[i] * (w[2+i] - 1)
					lo[i] = total / 2
					hi[i] = total - lo[i]
				}
				pa["padding"], pa["padding_high"] = lo, hi
			default:
				return nil, false, fmt.Errorf("%s: Invalid padding string: '%s'", name, ps)
			}
		}
		return pa, len(x) == n+1, nil
	}
	Register(&Def{
		Name: name, Kind: Composite, Group: "linalg", Doc: doc,
		Inputs: []string{"input", "weight", "bias?"},
		Attrs:  attrs,
		DTypes: SetFloats,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if err := laSameDType(name, in...); err != nil {
				return nil, err
			}
			pa, unbatched, err := prim(in, a)
			if err != nil {
				return nil, err
			}
			x := in[0].Shape
			if unbatched {
				x = append([]int{1}, x...)
			}
			var bias []int
			if in[2].DType != dtype.Invalid {
				bias = in[2].Shape
			}
			na, err := MustLookup("convolution").Normalize(pa)
			if err != nil {
				return nil, err
			}
			p, err := ResolveConv(x, in[1].Shape, bias, na)
			if err != nil {
				return nil, err
			}
			s := p.Shape()
			if unbatched {
				s = s[1:]
			}
			return []Meta{{Shape: s, DType: in[0].DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			metas := []Meta{b.Meta(in[0]), b.Meta(in[1]), {}}
			pa, unbatched, _ := prim(metas, a)
			x := in[0]
			if unbatched {
				x = laReshape(b, x, append([]int{1}, metas[0].Shape...))
			}
			out := Call1(b, "convolution", pa, x, in[1], in[2])
			if unbatched {
				out = laReshape(b, out, b.Meta(out).Shape[1:])
			}
			return []Value{out}
		},
	})
}

// Pool2d is a resolved 2-d pooling window over the last two axes.
type Pool2d struct {
	KH, KW, SH, SW, PH, PW, DH, DW int
	H, W, OH, OW                   int
	Ceil                           bool
}

// PoolOutSize is PyTorch's pooling_output_shape.
func PoolOutSize(in, k, pad, stride, dil int, ceil bool) int {
	num := in + 2*pad - dil*(k-1) - 1
	if ceil {
		num += stride - 1
	}
	out := floorDiv(num, stride) + 1
	if ceil && (out-1)*stride >= in+pad {
		out--
	}
	return out
}

func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func pair(name, what string, v []int, def []int) ([2]int, error) {
	if len(v) == 0 {
		v = def
	}
	switch len(v) {
	case 1:
		return [2]int{v[0], v[0]}, nil
	case 2:
		return [2]int{v[0], v[1]}, nil
	}
	return [2]int{}, fmt.Errorf("%s: %s must either be a single int, or a tuple of two ints, got %v", name, what, v)
}

// ResolvePool2d checks a 2-d pooling's input shape and attributes
// (kernel_size, stride (empty: kernel_size), padding, dilation when dil,
// ceil_mode) and returns the window.
func ResolvePool2d(name string, shape []int, a Attrs, dil bool) (Pool2d, error) {
	var p Pool2d
	if len(shape) != 3 && len(shape) != 4 {
		return p, fmt.Errorf("%s: Expected 3D or 4D (batch mode) tensor for input, but got: %s", name, laShape(shape))
	}
	k, err := pair(name, "kernel_size", a.Ints("kernel_size"), nil)
	if err != nil {
		return p, err
	}
	s, err := pair(name, "stride", a.Ints("stride"), k[:])
	if err != nil {
		return p, err
	}
	pd, err := pair(name, "padding", a.Ints("padding"), []int{0})
	if err != nil {
		return p, err
	}
	d := [2]int{1, 1}
	if dil {
		if d, err = pair(name, "dilation", a.Ints("dilation"), []int{1}); err != nil {
			return p, err
		}
	}
	p = Pool2d{KH: k[0], KW: k[1], SH: s[0], SW: s[1], PH: pd[0], PW: pd[1], DH: d[0], DW: d[1], Ceil: a.Bool("ceil_mode")}
	r := len(shape)
	p.H, p.W = shape[r-2], shape[r-1]
	switch {
	case p.KH <= 0 || p.KW <= 0:
		return p, fmt.Errorf("%s: kernel size should be greater than zero, but got kH: %d kW: %d", name, p.KH, p.KW)
	case p.SH <= 0 || p.SW <= 0:
		return p, fmt.Errorf("%s: stride should be greater than zero, but got dH: %d dW: %d", name, p.SH, p.SW)
	case p.DH <= 0 || p.DW <= 0:
		return p, fmt.Errorf("%s: dilation should be greater than zero, but got dilationH: %d dilationW: %d", name, p.DH, p.DW)
	case p.PH < 0 || p.PW < 0:
		return p, fmt.Errorf("%s: pad must be non-negative, but got padH: %d padW: %d", name, p.PH, p.PW)
	case p.PH > p.KH/2 || p.PW > p.KW/2:
		return p, fmt.Errorf("%s: pad should be at most half of kernel size, but got pad=%d and kernel_size=%d", name, max(p.PH, p.PW), k[0])
	}
	for _, x := range shape[:r-2] {
		if x == 0 && r == 3 {
			return p, fmt.Errorf("%s: Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got: %s", name, laShape(shape))
		}
	}
	if len(shape) == 4 && shape[1] == 0 {
		return p, fmt.Errorf("%s: Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got: %s", name, laShape(shape))
	}
	p.OH = PoolOutSize(p.H, p.KH, p.PH, p.SH, p.DH, p.Ceil)
	p.OW = PoolOutSize(p.W, p.KW, p.PW, p.SW, p.DW, p.Ceil)
	if p.OH < 1 || p.OW < 1 {
		return p, fmt.Errorf("%s: Given input size: (%dx%dx%d). Calculated output size: (%dx%dx%d). Output size is too small", name, shape[r-3], p.H, p.W, shape[r-3], p.OH, p.OW)
	}
	return p, nil
}

// OutShape returns the pooled shape of an input of shape.
func (p Pool2d) OutShape(shape []int) []int {
	out := slices.Clone(shape)
	out[len(out)-2], out[len(out)-1] = p.OH, p.OW
	return out
}

// Window is a resolved reduce_window.
type Window struct {
	Window, Strides, Dilation, PadLo, PadHi, Out []int
}

// ResolveWindow checks reduce_window's attributes against an input shape.
func ResolveWindow(shape []int, a Attrs) (Window, error) {
	const name = "reduce_window"
	r := len(shape)
	var w Window
	w.Window = a.Ints("window")
	if len(w.Window) != r {
		return w, fmt.Errorf("%s: window %v must have one entry per input dimension (%d)", name, w.Window, r)
	}
	list := func(what string, v []int, def int) ([]int, error) {
		if len(v) == 0 {
			out := make([]int, r)
			for i := range out {
				out[i] = def
			}
			return out, nil
		}
		if len(v) != r {
			return nil, fmt.Errorf("%s: %s %v must have one entry per input dimension (%d)", name, what, v, r)
		}
		return slices.Clone(v), nil
	}
	var err error
	if w.Strides, err = list("strides", a.Ints("strides"), 1); err != nil {
		return w, err
	}
	if w.Dilation, err = list("dilation", a.Ints("dilation"), 1); err != nil {
		return w, err
	}
	if w.PadLo, err = list("padding_low", a.Ints("padding_low"), 0); err != nil {
		return w, err
	}
	if w.PadHi, err = list("padding_high", a.Ints("padding_high"), 0); err != nil {
		return w, err
	}
	switch k := a.String("kind"); k {
	case "max", "sum":
	default:
		return w, fmt.Errorf("%s: unknown kind %q (want \"max\" or \"sum\")", name, k)
	}
	w.Out = make([]int, r)
	for i := 0; i < r; i++ {
		if w.Window[i] <= 0 || w.Strides[i] <= 0 || w.Dilation[i] <= 0 || w.PadLo[i] < 0 || w.PadHi[i] < 0 {
			return w, fmt.Errorf("%s: window %v, strides %v and dilation %v must be positive and padding %v/%v non-negative", name, w.Window, w.Strides, w.Dilation, w.PadLo, w.PadHi)
		}
		span := shape[i] + w.PadLo[i] + w.PadHi[i] - (w.Dilation[i]*(w.Window[i]-1) + 1)
		if span >= 0 {
			w.Out[i] = span/w.Strides[i] + 1
		}
	}
	return w, nil
}

func laPoolWindow(b Builder, x Value, kind string, p Pool2d, padLoH, padHiH, padLoW, padHiW int) Value {
	r := len(b.Meta(x).Shape)
	ones := func(v int) []int {
		out := make([]int, r)
		for i := range out {
			out[i] = v
		}
		return out
	}
	win, st, dl, lo, hi := ones(1), ones(1), ones(1), ones(0), ones(0)
	win[r-2], win[r-1] = p.KH, p.KW
	st[r-2], st[r-1] = p.SH, p.SW
	dl[r-2], dl[r-1] = p.DH, p.DW
	lo[r-2], lo[r-1] = padLoH, padLoW
	hi[r-2], hi[r-1] = padHiH, padHiW
	return Call1(b, "reduce_window", Attrs{"kind": kind, "window": win, "strides": st, "dilation": dl, "padding_low": lo, "padding_high": hi}, x)
}

// highPad is the padding after the input that the last window reaches.
func highPad(in, out, k, s, d, lo int) int {
	return max(0, (out-1)*s+d*(k-1)+1-in-lo)
}

var poolAttrs = []AttrSpec{
	{Name: "kernel_size", Type: AttrInts},
	{Name: "stride", Type: AttrInts, Default: []int{}},
	{Name: "padding", Type: AttrInts, Default: []int{0}},
	{Name: "dilation", Type: AttrInts, Default: []int{1}},
	{Name: "ceil_mode", Type: AttrBool, Default: false},
}

var avgPoolAttrs = []AttrSpec{
	{Name: "kernel_size", Type: AttrInts},
	{Name: "stride", Type: AttrInts, Default: []int{}},
	{Name: "padding", Type: AttrInts, Default: []int{0}},
	{Name: "ceil_mode", Type: AttrBool, Default: false},
	{Name: "count_include_pad", Type: AttrBool, Default: true},
	{Name: "divisor_override", Type: AttrInt, Optional: true},
}

func decomposeMaxPool2d(b Builder, x Value, a Attrs) Value {
	m := b.Meta(x)
	p, _ := ResolvePool2d("max_pool2d", m.Shape, a, true)
	return laPoolWindow(b, x, "max", p, p.PH, highPad(p.H, p.OH, p.KH, p.SH, p.DH, p.PH), p.PW, highPad(p.W, p.OW, p.KW, p.SW, p.DW, p.PW))
}

func decomposeAvgPool2d(b Builder, x Value, a Attrs) Value {
	m := b.Meta(x)
	p, _ := ResolvePool2d("avg_pool2d", m.Shape, a, false)
	acc := m.DType
	if acc == dtype.BF16 || acc == dtype.F16 {
		acc = dtype.F32 // PyTorch sums narrow floats in f32 and rounds once
		x = Call1(b, "convert", Attrs{"dtype": acc}, x)
	}
	hiH, hiW := highPad(p.H, p.OH, p.KH, p.SH, 1, p.PH), highPad(p.W, p.OW, p.KW, p.SW, 1, p.PW)
	sum := laPoolWindow(b, x, "sum", p, p.PH, hiH, p.PW, hiW)
	var out Value
	if a.Has("divisor_override") {
		out = Call1(b, "div", nil, sum, b.Scalar(int64(a.Int("divisor_override")), sum))
	} else {
		one := Call1(b, "convert", Attrs{"dtype": acc}, b.Scalar(int64(1), x))
		var cnt Value
		q := p
		if a.Bool("count_include_pad") {
			// Count the window positions inside [-pad, size+pad).
			ones := Call1(b, "expand", Attrs{"shape": []int{p.H + 2*p.PH, p.W + 2*p.PW}}, one)
			cnt = laPoolWindow(b, ones, "sum", q, 0, max(0, hiH-p.PH), 0, max(0, hiW-p.PW))
		} else {
			ones := Call1(b, "expand", Attrs{"shape": []int{p.H, p.W}}, one)
			cnt = laPoolWindow(b, ones, "sum", q, p.PH, hiH, p.PW, hiW)
		}
		out = Call1(b, "div", nil, sum, cnt)
	}
	if acc != m.DType {
		out = Call1(b, "convert", Attrs{"dtype": m.DType}, out)
	}
	return out
}

func adaptiveInfer(name string) InferFunc {
	return func(in []Meta, a Attrs) ([]Meta, error) {
		s := in[0].Shape
		if len(s) != 3 && len(s) != 4 {
			return nil, fmt.Errorf("%s(): Expected 3D or 4D tensor, but got %s", name, laShape(s))
		}
		for i := 1; i < len(s); i++ {
			if s[i] == 0 {
				return nil, fmt.Errorf("%s(): Expected input to have non-zero size for non-batch dimensions, but input has sizes %s with dimension %d being empty", name, laShape(s), i)
			}
		}
		o, err := pair(name, "output_size", a.Ints("output_size"), nil)
		if err != nil {
			return nil, err
		}
		if o[0] < 0 || o[1] < 0 {
			return nil, fmt.Errorf("%s: output_size must be non-negative, got %v", name, a.Ints("output_size"))
		}
		out := slices.Clone(s)
		out[len(s)-2], out[len(s)-1] = o[0], o[1]
		res := []Meta{{Shape: out, DType: in[0].DType}}
		if name == "adaptive_max_pool2d" {
			res = append(res, Meta{Shape: out, DType: dtype.I64})
		}
		return res, nil
	}
}

func init() {
	Register(&Def{
		Name: "convolution", Kind: Primitive, Group: "linalg",
		Doc:             "N-d convolution or transposed convolution of [N, C, *spatial] with optional bias, stride, padding (padding_high for asymmetric), dilation, groups, output_padding (torch.ops.aten.convolution).",
		Inputs:          []string{"input", "weight", "bias?"},
		NeedsContiguous: true,
		Attrs: []AttrSpec{
			{Name: "stride", Type: AttrInts, Default: []int{1}},
			{Name: "padding", Type: AttrInts, Default: []int{0}},
			{Name: "dilation", Type: AttrInts, Default: []int{1}},
			{Name: "transposed", Type: AttrBool, Default: false},
			{Name: "output_padding", Type: AttrInts, Default: []int{0}},
			{Name: "groups", Type: AttrInt, Default: 1},
			{Name: "padding_high", Type: AttrInts, Optional: true},
			laPrecisionAttr,
		},
		DTypes: SetFloats,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if err := laSameDType("convolution", in...); err != nil {
				return nil, err
			}
			if err := CheckPrecision("convolution", a.String("precision")); err != nil {
				return nil, err
			}
			var bias []int
			if in[2].DType != dtype.Invalid {
				bias = in[2].Shape
			}
			p, err := ResolveConv(in[0].Shape, in[1].Shape, bias, a)
			if err != nil {
				return nil, err
			}
			return []Meta{{Shape: p.Shape(), DType: in[0].DType}}, nil
		},
	})
	convComposite("conv1d", 1, false, "1-d convolution over [N, C, L] or [C, L] (torch.nn.functional.conv1d); padding may be \"same\"/\"valid\" via padding_str.")
	convComposite("conv2d", 2, false, "2-d convolution over [N, C, H, W] or [C, H, W] (torch.nn.functional.conv2d); padding may be \"same\"/\"valid\" via padding_str.")
	convComposite("conv_transpose1d", 1, true, "1-d transposed convolution (torch.nn.functional.conv_transpose1d).")
	convComposite("conv_transpose2d", 2, true, "2-d transposed convolution (torch.nn.functional.conv_transpose2d).")

	Register(&Def{
		Name: "reduce_window", Kind: Primitive, Group: "linalg",
		Doc:             "Windowed max or sum over every axis (StableHLO reduce_window): window, strides, dilation and low/high padding per axis; padding holds the reduction's identity (-inf or 0).",
		Inputs:          []string{"input"},
		NeedsContiguous: true,
		Attrs: []AttrSpec{
			{Name: "kind", Type: AttrString},
			{Name: "window", Type: AttrInts},
			{Name: "strides", Type: AttrInts, Default: []int{}},
			{Name: "dilation", Type: AttrInts, Default: []int{}},
			{Name: "padding_low", Type: AttrInts, Default: []int{}},
			{Name: "padding_high", Type: AttrInts, Default: []int{}},
		},
		DTypes: SetNumeric,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			w, err := ResolveWindow(in[0].Shape, a)
			if err != nil {
				return nil, err
			}
			return []Meta{{Shape: w.Out, DType: in[0].DType}}, nil
		},
	})
	Register(&Def{
		Name: "max_pool2d", Kind: Composite, Group: "linalg",
		Doc:    "2-d max pooling over the last two axes of [N, C, H, W] or [C, H, W] (torch.nn.functional.max_pool2d); NaN propagates.",
		Inputs: []string{"input"},
		Attrs:  poolAttrs,
		DTypes: SetFloats,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			p, err := ResolvePool2d("max_pool2d", in[0].Shape, a, true)
			if err != nil {
				return nil, err
			}
			return []Meta{{Shape: p.OutShape(in[0].Shape), DType: in[0].DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			return []Value{decomposeMaxPool2d(b, in[0], a)}
		},
	})
	Register(&Def{
		Name: "max_pool2d_with_indices", Kind: Primitive, Group: "linalg",
		Doc:             "2-d max pooling returning values and the flat h*W+w index of each maximum within its plane (torch.nn.functional.max_pool2d with return_indices=True).",
		Inputs:          []string{"input"},
		Attrs:           poolAttrs,
		DTypes:          SetFloats,
		NeedsContiguous: true,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			p, err := ResolvePool2d("max_pool2d_with_indices", in[0].Shape, a, true)
			if err != nil {
				return nil, err
			}
			s := p.OutShape(in[0].Shape)
			return []Meta{{Shape: s, DType: in[0].DType}, {Shape: slices.Clone(s), DType: dtype.I64}}, nil
		},
	})
	Register(&Def{
		Name: "avg_pool2d", Kind: Composite, Group: "linalg",
		Doc:    "2-d average pooling (torch.nn.functional.avg_pool2d) with ceil_mode, count_include_pad and divisor_override.",
		Inputs: []string{"input"},
		Attrs:  avgPoolAttrs,
		DTypes: SetFloats,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			p, err := ResolvePool2d("avg_pool2d", in[0].Shape, a, false)
			if err != nil {
				return nil, err
			}
			if a.Has("divisor_override") && a.Int("divisor_override") == 0 {
				return nil, fmt.Errorf("avg_pool2d: divisor must be not zero")
			}
			return []Meta{{Shape: p.OutShape(in[0].Shape), DType: in[0].DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			return []Value{decomposeAvgPool2d(b, in[0], a)}
		},
	})
	pool1d := func(name, of string, attrs []AttrSpec, doc string) {
		// to2d maps 1-d pooling attributes onto a window of height 1.
		to2d := func(a Attrs) Attrs {
			out := Attrs{}
			for k, v := range a {
				out[k] = v
			}
			lead := map[string]int{"kernel_size": 1, "stride": 1, "padding": 0, "dilation": 1}
			for k, first := range lead {
				if l, ok := a[k].([]int); ok && len(l) == 1 {
					out[k] = []int{first, l[0]}
				}
			}
			return out
		}
		Register(&Def{
			Name: name, Kind: Composite, Group: "linalg", Doc: doc,
			Inputs: []string{"input"},
			Attrs:  attrs,
			DTypes: SetFloats,
			Infer: func(in []Meta, a Attrs) ([]Meta, error) {
				s := in[0].Shape
				if len(s) != 2 && len(s) != 3 {
					return nil, fmt.Errorf("%s: Expected 2D or 3D (batch mode) tensor for input, but got: %s", name, laShape(s))
				}
				for _, k := range []string{"kernel_size", "stride", "padding", "dilation"} {
					if l, ok := a[k].([]int); ok && len(l) > 1 {
						return nil, fmt.Errorf("%s: %s must be a single int, got %v", name, k, l)
					}
				}
				x := append(slices.Clone(s[:len(s)-1]), 1, s[len(s)-1])
				na, err := MustLookup(of).Normalize(to2d(a))
				if err != nil {
					return nil, err
				}
				p, err := ResolvePool2d(name, x, na, of == "max_pool2d")
				if err != nil {
					return nil, err
				}
				out := append(slices.Clone(s[:len(s)-1]), p.OW)
				return []Meta{{Shape: out, DType: in[0].DType}}, nil
			},
			Decompose: func(b Builder, in []Value, a Attrs) []Value {
				s := b.Meta(in[0]).Shape
				x := laReshape(b, in[0], append(slices.Clone(s[:len(s)-1]), 1, s[len(s)-1]))
				y := Call1(b, of, to2d(a), x)
				ys := b.Meta(y).Shape
				return []Value{laReshape(b, y, append(slices.Clone(ys[:len(ys)-2]), ys[len(ys)-1]))}
			},
		})
	}
	pool1d("max_pool1d", "max_pool2d", poolAttrs, "1-d max pooling over the last axis of [N, C, L] or [C, L] (torch.nn.functional.max_pool1d).")
	pool1d("avg_pool1d", "avg_pool2d", avgPoolAttrs[:5], "1-d average pooling over the last axis of [N, C, L] or [C, L] (torch.nn.functional.avg_pool1d).")
	Register(&Def{
		Name: "adaptive_avg_pool2d", Kind: Primitive, Group: "linalg",
		Doc:             "2-d adaptive average pooling to output_size: cell i covers [floor(i*H/oh), ceil((i+1)*H/oh)) (torch.nn.functional.adaptive_avg_pool2d).",
		Inputs:          []string{"input"},
		Attrs:           []AttrSpec{{Name: "output_size", Type: AttrInts}},
		DTypes:          SetFloats,
		NeedsContiguous: true,
		Infer:           adaptiveInfer("adaptive_avg_pool2d"),
	})
	Register(&Def{
		Name: "adaptive_max_pool2d", Kind: Primitive, Group: "linalg",
		Doc:             "2-d adaptive max pooling to output_size, returning values and flat h*W+w indices (torch.nn.functional.adaptive_max_pool2d with return_indices=True).",
		Inputs:          []string{"input"},
		Attrs:           []AttrSpec{{Name: "output_size", Type: AttrInts}},
		DTypes:          SetFloats,
		NeedsContiguous: true,
		Infer:           adaptiveInfer("adaptive_max_pool2d"),
	})
}
