package op

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// StableHLO emitters of the linalg primitives: dot_general and convolution
// map onto their StableHLO namesakes (precision highest -> HIGHEST, high ->
// HIGH, medium -> DEFAULT, the device default "" -> no precision_config);
// reduce_window likewise; the pooling primitives that return indices (and
// adaptive average pooling, whose cells overlap irregularly) gather each
// output's window candidates with constant flat indices and reduce them.

// hloPrecision returns the precision_config attribute for precision p, or
// nothing for the device default.
func hloPrecision(p string) []HLOAttr {
	var v string
	switch p {
	case PrecisionHighest:
		v = "HIGHEST"
	case PrecisionHigh:
		v = "HIGH"
	case PrecisionMedium:
		v = "DEFAULT"
	default:
		return nil
	}
	c := "#stablehlo<precision " + v + ">"
	return []HLOAttr{{"precision_config", "[" + c + ", " + c + "]"}}
}

// dotDims formats dot_dimension_numbers.
func dotDims(lb, rb, lc, rc []int) string {
	var parts []string
	add := func(name string, v []int) {
		if len(v) > 0 {
			parts = append(parts, name+" = "+HLOIntList(v))
		}
	}
	add("lhs_batching_dimensions", lb)
	add("rhs_batching_dimensions", rb)
	add("lhs_contracting_dimensions", lc)
	add("rhs_contracting_dimensions", rc)
	return "#stablehlo.dot<" + strings.Join(parts, ", ") + ">"
}

// dot emits stablehlo.dot_general.
func (b hb) dot(l, r HLOValue, d DotDims, precision string, elem string) HLOValue {
	attrs := append([]HLOAttr{{"dot_dimension_numbers", dotDims(d.LhsBatch, d.RhsBatch, d.LhsContract, d.RhsContract)}}, hloPrecision(precision)...)
	return b.op1("stablehlo.dot_general", HLOType{Shape: slices.Clone(d.Shape), Elem: elem}, attrs, l, r)
}

// convDimNumbers formats conv dimension numbers for [N, C, spatial...]
// operands and [O, I, spatial...] kernels.
func convDimNumbers(n int) string {
	sp := make([]string, n)
	for i := range sp {
		sp[i] = fmt.Sprint(i)
	}
	s := strings.Join(sp, ", ")
	if n > 0 {
		s = ", " + s
	}
	return fmt.Sprintf("#stablehlo.conv<[b, f%s]x[o, i%s]->[b, f%s]>", s, s, s)
}

func init() {
	DefStableHLO(DotGeneral, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		d, err := ResolveDotGeneral(in[0].Type.Shape, in[1].Type.Shape, a.Ints("lhs_batch"), a.Ints("rhs_batch"), a.Ints("lhs_contract"), a.Ints("rhs_contract"))
		if err != nil {
			return HLOValue{}, err
		}
		return b.dot(in[0], in[1], d, a.String("precision"), HLOElem(out.DType)), nil
	}))
	DefStableHLO(Convolution, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		x, w, bias := in[0], in[1], in[2]
		var bs []int
		if bias.Valid() {
			bs = bias.Type.Shape
		}
		p, err := ResolveConv(x.Type.Shape, w.Type.Shape, bs, a)
		if err != nil {
			return HLOValue{}, err
		}
		n := len(p.Kernel)
		ones := make([]int, n)
		for i := range ones {
			ones[i] = 1
		}
		strides, lhsDil, lo, hi := p.Stride, ones, p.PadLo, p.PadHi
		if p.Transposed {
			// The adjoint of a strided convolution: dilate the input by the
			// stride, pad by the dilated kernel's extent minus the padding,
			// and convolve with the spatially reversed kernel whose in and
			// out channels are swapped within each group.
			g := p.Groups
			cin, coutg := w.Type.Shape[0], w.Type.Shape[1]
			ks := w.Type.Shape[2:]
			w5 := b.reshape(w, append([]int{g, cin / g, coutg}, ks...))
			perm := []int{0, 2, 1}
			for i := range ks {
				perm = append(perm, 3+i)
			}
			w = b.reshape(b.transpose(w5, perm), append([]int{g * coutg, cin / g}, ks...))
			sp := make([]int, n)
			for i := range sp {
				sp[i] = 2 + i
			}
			w = b.op1("stablehlo.reverse", w.Type, []HLOAttr{{"dimensions", HLODims(sp)}}, w)
			lo, hi = make([]int, n), make([]int, n)
			for i := 0; i < n; i++ {
				ext := p.Dilation[i] * (p.Kernel[i] - 1)
				lo[i] = ext - p.PadLo[i]
				hi[i] = ext - p.PadHi[i] + p.OutPad[i]
			}
			strides, lhsDil = ones, p.Stride
		}
		attrs := []HLOAttr{
			{"window_strides", HLODims(strides)},
			{"padding", hloPadding(lo, hi)},
			{"lhs_dilation", HLODims(lhsDil)},
			{"rhs_dilation", HLODims(p.Dilation)},
			{"dimension_numbers", convDimNumbers(n)},
			{"feature_group_count", fmt.Sprintf("%d : i64", p.Groups)},
			{"batch_group_count", "1 : i64"},
		}
		attrs = append(attrs, hloPrecision(a.String("precision"))...)
		y := b.op1("stablehlo.convolution", HLOTypeOf(out), attrs, x, w)
		if bias.Valid() {
			y = b.bin("add", y, b.bcastDims(bias, out.Shape, []int{1}))
		}
		return y, nil
	}))
	DefStableHLO(ReduceWindow, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		x := in[0]
		w, err := ResolveWindow(x.Type.Shape, a)
		if err != nil {
			return HLOValue{}, err
		}
		comb, id := "add", any(int64(0))
		if a.String("kind") == "max" {
			comb, id = "maximum", lowest(x.Type.Elem)
		}
		return b.reduceWindow([]HLOValue{x}, []HLOValue{b.konst(scalarType(x.Type.Elem), id)}, w.Out, w.Window, w.Strides, w.Dilation, w.PadLo, w.PadHi,
			func(b hb, acc, v []HLOValue) []HLOValue { return []HLOValue{b.bin(comb, acc[0], v[0])} })[0], nil
	}))
	DefStableHLO(MaxPool2dWithIndices, func(e HLOEmitter, in []HLOValue, out []Meta, a Attrs) ([]HLOValue, error) {
		x := in[0]
		p, err := ResolvePool2d("max_pool2d_with_indices", x.Type.Shape, a, true)
		if err != nil {
			return nil, err
		}
		cells := func(oh, ow int) (hs, ws []int) {
			for k := 0; k < p.KH; k++ {
				hs = append(hs, oh*p.SH-p.PH+k*p.DH)
			}
			for k := 0; k < p.KW; k++ {
				ws = append(ws, ow*p.SW-p.PW+k*p.DW)
			}
			return hs, ws
		}
		return poolCandidates(hb{e}, x, p.H, p.W, p.OH, p.OW, p.KH*p.KW, cells, true, out)
	})
	DefStableHLO(AdaptiveMaxPool2d, func(e HLOEmitter, in []HLOValue, out []Meta, a Attrs) ([]HLOValue, error) {
		x := in[0]
		r := x.Type.Rank()
		h, w := x.Type.Shape[r-2], x.Type.Shape[r-1]
		oh, ow := out[0].Shape[r-2], out[0].Shape[r-1]
		cells, k := adaptiveCells(h, w, oh, ow)
		return poolCandidates(hb{e}, x, h, w, oh, ow, k, cells, true, out)
	})
	DefStableHLO(AdaptiveAvgPool2d, func(e HLOEmitter, in []HLOValue, out []Meta, a Attrs) ([]HLOValue, error) {
		x := in[0]
		r := x.Type.Rank()
		h, w := x.Type.Shape[r-2], x.Type.Shape[r-1]
		oh, ow := out[0].Shape[r-2], out[0].Shape[r-1]
		cells, k := adaptiveCells(h, w, oh, ow)
		return poolCandidates(hb{e}, x, h, w, oh, ow, k, cells, false, out)
	})
}

// adaptiveCells returns PyTorch's adaptive pooling cells: output row i
// covers [floor(i*H/oh), ceil((i+1)*H/oh)), and the largest cell's size.
func adaptiveCells(h, w, oh, ow int) (func(i, j int) ([]int, []int), int) {
	span := func(i, n, o int) (int, int) { return i * n / o, ((i+1)*n + o - 1) / o }
	kh, kw := 0, 0
	for i := 0; i < oh; i++ {
		s, e := span(i, h, oh)
		kh = max(kh, e-s)
	}
	for j := 0; j < ow; j++ {
		s, e := span(j, w, ow)
		kw = max(kw, e-s)
	}
	return func(i, j int) ([]int, []int) {
		var hs, ws []int
		s, e := span(i, h, oh)
		for k := s; k < e; k++ {
			hs = append(hs, k)
		}
		s, e = span(j, w, ow)
		for k := s; k < e; k++ {
			ws = append(ws, k)
		}
		return hs, ws
	}, kh * kw
}

// poolCandidates emits 2-d pooling over the last two axes of x: output
// (i, j) reduces the elements at rows × cols of cells(i, j) (positions
// outside the plane are skipped), padded to k candidates. max pooling
// returns values and flat h*W+w indices of the first maximum (NaN counts
// as the maximum); average pooling returns the mean of the candidates.
func poolCandidates(b hb, x HLOValue, h, w, oh, ow, k int, cells func(i, j int) ([]int, []int), max bool, out []Meta) ([]HLOValue, error) {
	r := x.Type.Rank()
	lead := x.Type.Shape[:r-2]
	bn := Numel(lead)
	q := oh * ow * k
	if bn == 0 || q == 0 {
		res := []HLOValue{b.dense(HLOTypeOf(out[0]), "")}
		if max {
			res = append(res, b.dense(HLOTypeOf(out[1]), ""))
		}
		return res, nil
	}
	idx := make([]int, q)
	valid := make([]int, q)
	count := make([]int, oh*ow)
	for i := 0; i < oh; i++ {
		for j := 0; j < ow; j++ {
			hs, ws := cells(i, j)
			c := (i*ow + j) * k
			for _, hh := range hs {
				for _, ww := range ws {
					if hh >= 0 && hh < h && ww >= 0 && ww < w {
						idx[c], valid[c] = hh*w+ww, 1
						count[i*ow+j]++
					}
					c++
				}
			}
		}
	}
	el := x.Type.Elem
	flat := b.reshape(x, []int{bn, h * w})
	g := b.gather(flat, b.ints("i64", []int{q, 1}, idx), gatherDims{OffsetDims: []int{0}, Collapsed: []int{1}, StartIndexMap: []int{1}, IndexVectorDim: 1}, []int{bn, 1}, []int{bn, q})
	ok := b.bcastDims(b.convert(b.ints("i8", []int{q}, valid), "i1"), []int{bn, q}, []int{1})
	cand := []int{bn, oh * ow, k}
	if !max {
		v := b.reshape(b.sel(ok, g, b.like(g, 0.0)), cand)
		s := b.reduce([]HLOValue{v}, []HLOValue{b.konst(scalarType(el), 0.0)}, []int{2}, func(b hb, acc, v []HLOValue) []HLOValue {
			return []HLOValue{b.bin("add", acc[0], v[0])}
		})[0]
		cnt := b.bcastDims(b.convert(b.ints("i64", []int{oh * ow}, count), el), []int{bn, oh * ow}, []int{1})
		return []HLOValue{b.reshape(b.bin("divide", s, cnt), out[0].Shape)}, nil
	}
	v := b.reshape(b.sel(ok, g, b.like(g, math.Inf(-1))), cand)
	// Skipped candidates carry the largest index, so they never win a tie.
	for c := range idx {
		if valid[c] == 0 {
			idx[c] = math.MaxInt64
		}
	}
	fi := b.bcastDims(b.ints("i64", []int{oh * ow, k}, idx), cand, []int{1, 2})
	inits := []HLOValue{b.konst(scalarType(el), math.Inf(-1)), b.konst(scalarType("i64"), int64(math.MaxInt64))}
	res := b.reduce([]HLOValue{v, fi}, inits, []int{2}, func(b hb, acc, v []HLOValue) []HLOValue {
		return argPick(b, acc, v, true, false)
	})
	return []HLOValue{b.reshape(res[0], out[0].Shape), b.reshape(res[1], out[1].Shape)}, nil
}
