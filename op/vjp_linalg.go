package op

import (
	"math"
	"slices"

	"github.com/gotpu/gotpu/dtype"
)

// Gradients of the linalg group's primitives (dot_general, convolution,
// reduce_window, the pooling primitives) and of max_pool2d, whose
// decomposition into reduce_window would otherwise be differentiated tap by
// tap. The matmul family, linear, einsum, tensordot, the conv composites and
// avg pooling decompose into these primitives and need no VJP of their own.
// Backward products run at the forward's precision, as PyTorch does with
// torch.set_float32_matmul_precision and JAX with dot_general's precision.

func init() {
	DefVJP(DotGeneral, dotGeneralVJP)
	DefVJP(Convolution, convolutionVJP)
	DefVJP(ReduceWindow, reduceWindowVJP)
	// Pooling with indices: each output's gradient goes to the input
	// position its index names (PyTorch's max_pool2d_with_indices_backward
	// and adaptive_max_pool2d_backward).
	poolIndices := func(b Builder, in, out, g []Value, a Attrs) []Value {
		return []Value{scatterPlanes(b, g[0], out[1], b.Meta(in[0]).Shape)}
	}
	DefVJP(MaxPool2dWithIndices, poolIndices)
	DefVJP(AdaptiveMaxPool2d, poolIndices)
	// max_pool2d: the window's first maximum (NaN counts as the maximum) gets
	// the gradient, found by rerunning the pooling with indices; cheaper than
	// differentiating reduce_window, and the same routing.
	DefVJP(MaxPool2d, func(b Builder, in, out, g []Value, a Attrs) []Value {
		r := b.Call("max_pool2d_with_indices", []Value{in[0]}, a)
		return []Value{scatterPlanes(b, g[0], r[1], b.Meta(in[0]).Shape)}
	})
	DefVJP(AdaptiveAvgPool2d, adaptiveAvgPoolVJP)
}

// dotGeneralVJP contracts the output gradient with the other operand over
// its free axes and permutes the result into the operand's axis order.
func dotGeneralVJP(b Builder, in, out, g []Value, a Attrs) []Value {
	x, y, gy := in[0], in[1], g[0]
	xs, ys := b.Meta(x).Shape, b.Meta(y).Shape
	d, err := ResolveDotGeneral(xs, ys, a.Ints("lhs_batch"), a.Ints("rhs_batch"), a.Ints("lhs_contract"), a.Ints("rhs_contract"))
	if err != nil {
		panic(err)
	}
	prec := a["precision"]
	var gx, gyy Value
	if NeedsGrad(b, 0) {
		gx = dotGrad(b, gy, y, d, len(xs), prec)
	}
	if NeedsGrad(b, 1) {
		gyy = dotGradRHS(b, x, gy, d, len(ys), prec)
	}
	return []Value{gx, gyy}
}

// dotGrad is the lhs gradient of a dot_general with dims d: g[batch, lf, rf]
// contracted with y[rb, rc, rf] over rf gives [batch, lf, y's rc in axis
// order], permuted into the lhs's axis order. When that permutation moves
// axes and the swapped product y·g, [batch, rc, lf], is already in the
// lhs's axis order, the swapped product is computed instead, so the
// gradient comes out in the operand's own layout rather than as a permuted
// view (see swapKeepsBits).
func dotGrad(b Builder, gy, y Value, d DotDims, rankX int, prec any) Value {
	nb, nlf, nrf := len(d.LhsBatch), len(d.LhsFree), len(d.RhsFree)
	gb := laIota(0, nb)
	gf := laIota(nb+nlf, nb+nlf+nrf)
	rc := slices.Sorted(slices.Values(d.RhsContract))
	px, ps := make([]int, rankX), make([]int, rankX)
	for i, ax := range d.LhsBatch {
		px[ax], ps[ax] = i, i
	}
	for j, ax := range d.LhsFree {
		px[ax], ps[ax] = nb+j, nb+len(rc)+j
	}
	for k, ax := range d.LhsContract {
		c := slices.Index(rc, d.RhsContract[k])
		px[ax], ps[ax] = nb+nlf+c, nb+c
	}
	if !isIdentity(px) && isIdentity(ps) && swapKeepsBits(b, gy, prec) {
		return laDot(b, y, gy, slices.Clone(d.RhsBatch), gb, slices.Clone(d.RhsFree), gf, prec)
	}
	rx := laDot(b, gy, y, gb, slices.Clone(d.RhsBatch), gf, slices.Clone(d.RhsFree), prec)
	return laPermute(b, rx, px)
}

// dotGradRHS is the rhs gradient: x[lb, lc, lf] contracted with
// g[batch, lf, rf] over lf gives [batch, x's lc in axis order, rf]. As in
// dotGrad, the swapped product g·x, [batch, rf, lc], is computed instead
// when it is in the rhs's axis order and the other is not: for linear's
// weight, dW[out, in] comes out contiguous instead of as the transpose of
// a contiguous [in, out].
func dotGradRHS(b Builder, x, gy Value, d DotDims, rankY int, prec any) Value {
	nb, nlf, nrf := len(d.LhsBatch), len(d.LhsFree), len(d.RhsFree)
	gb := laIota(0, nb)
	gf := laIota(nb, nb+nlf)
	lc := slices.Sorted(slices.Values(d.LhsContract))
	nc := len(lc)
	py, ps := make([]int, rankY), make([]int, rankY)
	for i, ax := range d.RhsBatch {
		py[ax], ps[ax] = i, i
	}
	for j, ax := range d.RhsFree {
		py[ax], ps[ax] = nb+nc+j, nb+j
	}
	for k, ax := range d.RhsContract {
		c := slices.Index(lc, d.LhsContract[k])
		py[ax], ps[ax] = nb+c, nb+nrf+c
	}
	if !isIdentity(py) && isIdentity(ps) && swapKeepsBits(b, gy, prec) {
		return laDot(b, gy, x, gb, slices.Clone(d.LhsBatch), gf, slices.Clone(d.LhsFree), prec)
	}
	ry := laDot(b, x, gy, slices.Clone(d.LhsBatch), gb, slices.Clone(d.LhsFree), gf, prec)
	return laPermute(b, ry, py)
}

func isIdentity(perm []int) bool {
	for i, p := range perm {
		if p != i {
			return false
		}
	}
	return true
}

// swapKeepsBits reports whether a dot_general gives the same bits with its
// operands swapped (and its output axes reordered to match). Each output
// element is a sum over the contraction in its multi-index order, which
// the swap keeps; what could change is the products' order within one
// step. At precision highest, and for every dtype but f32 (for which
// precision is ignored), each step is one product a*b == b*a (backends
// compute every element as one FMA chain over k, or a widened exact
// equivalent); at medium, one exact product of bf16-rounded operands. At
// high, the three bf16 passes hi*hi + hi*lo + lo*hi would add the cross
// terms in the other order, so the swap is not made. The default precision
// ("") is the device's (highest on cpu, medium on tpu), or the compile
// options' in a compiled program: high there gives a result equally
// accurate, not necessarily with the same bits.
func swapKeepsBits(b Builder, v Value, prec any) bool {
	if b.Meta(v).DType != dtype.F32 {
		return true
	}
	p, _ := prec.(string)
	return p != PrecisionHigh
}

// convolutionVJP: the input gradient of a convolution is a transposed
// convolution of the output gradient with the same weight (and that of a
// transposed convolution is a convolution); the weight gradient correlates
// the input with the output gradient (convWeightGrad); the bias gradient
// sums the output gradient over everything but channels.
func convolutionVJP(b Builder, in, out, g []Value, a Attrs) []Value {
	x, w, bias, gy := in[0], in[1], in[2], g[0]
	xm, wm := b.Meta(x), b.Meta(w)
	var bshape []int
	if bias != nil {
		bshape = b.Meta(bias).Shape
	}
	p, err := ResolveConv(xm.Shape, wm.Shape, bshape, a)
	if err != nil {
		panic(err)
	}
	nd := len(p.In)
	prec := a["precision"]
	var gb Value
	if bias != nil && NeedsGrad(b, 2) {
		dims := []int{0}
		for i := 0; i < nd; i++ {
			dims = append(dims, 2+i)
		}
		gb = Call1(b, "sum", Attrs{"dims": dims}, gy)
	}
	empty := p.N == 0 || p.Cin == 0 || p.Cout == 0 || Numel(p.In) == 0 || Numel(p.Out) == 0
	if empty {
		return []Value{Zeros(b, xm.Shape, xm.DType), Zeros(b, wm.Shape, wm.DType), gb}
	}
	var gx, gw Value
	wantX, wantW := NeedsGrad(b, 0), NeedsGrad(b, 1)
	if !p.Transposed {
		// Transposed convolution back to the input size: output_padding
		// restores the rows the strided forward skipped at the end.
		outPad := make([]int, nd)
		for i := 0; i < nd; i++ {
			effK := p.Dilation[i]*(p.Kernel[i]-1) + 1
			outPad[i] = p.In[i] - ((p.Out[i]-1)*p.Stride[i] - p.PadLo[i] - p.PadHi[i] + effK)
		}
		if wantX {
			gx = Call1(b, "convolution", Attrs{
				"stride": slices.Clone(p.Stride), "padding": slices.Clone(p.PadLo), "padding_high": slices.Clone(p.PadHi),
				"dilation": slices.Clone(p.Dilation), "transposed": true, "output_padding": outPad, "groups": p.Groups, "precision": prec,
			}, gy, w, nil)
		}
		if wantW {
			gw = convWeightGrad(b, x, gy, p, prec)
		}
	} else {
		// The adjoint of a transposed convolution is the forward one; high
		// padding beyond what output_padding added is not needed, and rows
		// past the input size are dropped.
		hi := make([]int, nd)
		for i := 0; i < nd; i++ {
			hi[i] = max(0, p.PadHi[i]-p.OutPad[i])
		}
		if wantX {
			gx = Call1(b, "convolution", Attrs{
				"stride": slices.Clone(p.Stride), "padding": slices.Clone(p.PadLo), "padding_high": hi,
				"dilation": slices.Clone(p.Dilation), "groups": p.Groups, "precision": prec,
			}, gy, w, nil)
			gx = cropSpatial(b, gx, p.In)
		}
		if wantW {
			gw = convWeightGrad(b, gy, x, p, prec)
		}
	}
	return []Value{gx, gw, gb}
}

// convWeightGrad returns W[cg, cx, k] = sum over n, o of
// G[n, cg, o] * X[n, group(cg)*CXg + cx, o*stride + k*dilation - padLo]:
// the weight gradient of a convolution (X = input, G = output gradient) or
// of a transposed convolution (X = output gradient, G = input). It is itself
// a convolution with the batch as channels and stride and dilation swapped.
func convWeightGrad(b Builder, X, G Value, p ConvParams, prec any) Value {
	xs, gs := b.Meta(X).Shape, b.Meta(G).Shape
	nd := len(xs) - 2
	n, cx, cg, groups := xs[0], xs[1], gs[1], p.Groups
	cxg, cgg := cx/groups, cg/groups
	inS, outS := xs[2:], gs[2:]
	// X: [N, groups, CXg, *in] -> [CXg, groups*N, *in] (batch CXg, channels grouped by group).
	xr := laReshape(b, X, append([]int{n, groups, cxg}, inS...))
	perm := append([]int{2, 1, 0}, laIota(3, 3+nd)...)
	xr = laReshape(b, laPermute(b, xr, perm), append([]int{cxg, groups * n}, inS...))
	// G: [N, groups, CGg, *out] -> [CG, N, *out] (out channels CG, N per group).
	gr := laReshape(b, G, append([]int{n, groups, cgg}, outS...))
	perm = append([]int{1, 2, 0}, laIota(3, 3+nd)...)
	gr = laReshape(b, laPermute(b, gr, perm), append([]int{cg, n}, outS...))
	hi := make([]int, nd)
	for i := 0; i < nd; i++ {
		hi[i] = max(0, (outS[i]-1)*p.Stride[i]+(p.Kernel[i]-1)*p.Dilation[i]-p.PadLo[i]-(inS[i]-1))
	}
	r := Call1(b, "convolution", Attrs{
		"stride": slices.Clone(p.Dilation), "dilation": slices.Clone(p.Stride), "padding": slices.Clone(p.PadLo),
		"padding_high": hi, "groups": groups, "precision": prec,
	}, xr, gr, nil) // [CXg, CG, *k'] with k' >= kernel
	r = cropSpatial(b, r, p.Kernel)
	return laPermute(b, r, append([]int{1, 0}, laIota(2, 2+nd)...))
}

// cropSpatial keeps the first size[i] entries of spatial axis 2+i.
func cropSpatial(b Builder, v Value, size []int) Value {
	s := b.Meta(v).Shape
	for i, n := range size {
		if s[2+i] > n {
			v = Call1(b, "slice", Attrs{"dim": 2 + i, "start": 0, "end": n}, v)
		}
	}
	return v
}

// scatterPlanes adds g[..., oh, ow] into zeros of shape [..., H, W] at the
// flat in-plane positions idx (h*W + w), as max pooling's backward does.
func scatterPlanes(b Builder, g, idx Value, shape []int) Value {
	r := len(shape)
	lead := Numel(shape[:r-2])
	gs := b.Meta(g).Shape
	plane, oplane := shape[r-2]*shape[r-1], gs[r-2]*gs[r-1]
	dt := b.Meta(g).DType
	if lead == 0 || plane == 0 || oplane == 0 {
		return Zeros(b, shape, dt)
	}
	g2 := laReshape(b, g, []int{lead, oplane})
	i2 := laReshape(b, idx, []int{lead, oplane})
	// The zeros are one element expanded: scatter_add's copy of its input
	// is then a fill, not a read of a materialized zero tensor.
	z := Call1(b, "expand", Attrs{"shape": []int{lead, plane}}, Zeros(b, []int{}, dt))
	res := Call1(b, "scatter_add", Attrs{"dim": 1}, z, i2, g2)
	return laReshape(b, res, shape)
}

// adaptiveAvgPoolVJP spreads each cell's gradient evenly over the cell: with
// A[i, h] = [h in cell i] / |cell i| per axis, grad = A_hᵀ g A_w.
func adaptiveAvgPoolVJP(b Builder, in, out, g []Value, a Attrs) []Value {
	x, gy := in[0], g[0]
	xm := b.Meta(x)
	r := len(xm.Shape)
	h, w := xm.Shape[r-2], xm.Shape[r-1]
	gs := b.Meta(gy).Shape
	oh, ow := gs[r-2], gs[r-1]
	if Numel(xm.Shape) == 0 || oh == 0 || ow == 0 {
		return []Value{Zeros(b, xm.Shape, xm.DType)}
	}
	dt := b.Meta(gy).DType
	ah := adaptiveMatrix(b, oh, h, dt) // [oh, H]
	aw := adaptiveMatrix(b, ow, w, dt) // [ow, W]
	// [..., oh, ow] . [ow, W] -> [..., oh, W]
	t := laDot(b, gy, aw, []int{}, []int{}, []int{r - 1}, []int{0}, PrecisionHighest)
	// [..., oh, W] . [oh, H] over oh -> [..., W, H]
	t = laDot(b, t, ah, []int{}, []int{}, []int{r - 2}, []int{0}, PrecisionHighest)
	return []Value{Call1(b, "transpose", Attrs{"dim0": r - 2, "dim1": r - 1}, t)}
}

// adaptiveMatrix returns A[i, h] = 1/|cell i| for h in adaptive cell i of
// [floor(i*n/o), ceil((i+1)*n/o)), else 0, as an [o, n] tensor of dtype dt.
func adaptiveMatrix(b Builder, o, n int, dt dtype.DType) Value {
	i := Call1(b, "iota", Attrs{"shape": []int{o, n}, "dim": 0, "dtype": dtype.I64})
	h := Call1(b, "iota", Attrs{"shape": []int{o, n}, "dim": 1, "dtype": dtype.I64})
	// h >= floor(i*n/o)  <=>  (h+1)*o > i*n;  h < ceil((i+1)*n/o)  <=>  h*o < (i+1)*n.
	h1o := Call1(b, "mul", nil, Call1(b, "add", nil, h, b.Scalar(int64(1), h)), b.Scalar(int64(o), h))
	in := Call1(b, "mul", nil, i, b.Scalar(int64(n), i))
	ho := Call1(b, "mul", nil, h, b.Scalar(int64(o), h))
	i1n := Call1(b, "add", nil, in, b.Scalar(int64(n), in))
	m := Call1(b, "logical_and", nil, Call1(b, "gt", nil, h1o, in), Call1(b, "lt", nil, ho, i1n))
	mf := Call1(b, "convert", Attrs{"dtype": dt}, m)
	cnt := Call1(b, "sum", Attrs{"dims": []int{1}, "keepdim": true}, mf)
	return Call1(b, "div", nil, mf, cnt)
}

// reduceWindowVJP: a windowed sum sends each output's gradient to every
// position of its window (a correlation of the stride-dilated gradient with
// a window of ones); a windowed max sends it to the window's first maximum
// (NaN counts as the maximum), as PyTorch's max pooling backward.
func reduceWindowVJP(b Builder, in, out, g []Value, a Attrs) []Value {
	x, gy := in[0], g[0]
	xm := b.Meta(x)
	w, err := ResolveWindow(xm.Shape, a)
	if err != nil {
		panic(err)
	}
	r := len(xm.Shape)
	if Numel(xm.Shape) == 0 || Numel(w.Out) == 0 {
		return []Value{Zeros(b, xm.Shape, b.Meta(gy).DType)}
	}
	if r == 0 {
		return []Value{gy}
	}
	if a.String("kind") == "sum" {
		low, high, interior := make([]int, r), make([]int, r), make([]int, r)
		for i := 0; i < r; i++ {
			span := (w.Window[i] - 1) * w.Dilation[i]
			low[i] = span - w.PadLo[i]
			high[i] = xm.Shape[i] + w.PadLo[i] - (w.Out[i]-1)*w.Strides[i] - 1
			interior[i] = w.Strides[i] - 1
		}
		gp := Call1(b, "pad_nd", Attrs{"low": low, "high": high, "interior": interior, "value": 0.0}, gy)
		ones := make([]int, r)
		for i := range ones {
			ones[i] = 1
		}
		return []Value{Call1(b, "reduce_window", Attrs{"kind": "sum", "window": slices.Clone(w.Window), "strides": ones,
			"dilation": slices.Clone(w.Dilation), "padding_low": make([]int, r), "padding_high": make([]int, r)}, gp)}
	}
	return []Value{windowMaxGrad(b, x, gy, w)}
}

// windowMaxGrad routes each window's gradient to its first maximum: the
// window taps are visited in row-major order, keeping the first valid
// position and then any strictly greater value or NaN (PyTorch's max pooling
// scan); each tap's share is scattered back with an interior-padded pad_nd.
func windowMaxGrad(b Builder, x, gy Value, w Window) Value {
	xm := b.Meta(x)
	r := len(xm.Shape)
	padded := false
	for i := 0; i < r; i++ {
		if w.PadLo[i] != 0 || w.PadHi[i] != 0 {
			padded = true
		}
	}
	xp := x
	if padded {
		xp = Call1(b, "pad_nd", Attrs{"low": slices.Clone(w.PadLo), "high": slices.Clone(w.PadHi), "value": math.Inf(-1)}, x)
	}
	ntaps := Numel(w.Window)
	tapIndex := func(t int) []int {
		k := make([]int, r)
		for i := r - 1; i >= 0; i-- {
			k[i] = t % w.Window[i]
			t /= w.Window[i]
		}
		return k
	}
	tapView := func(k []int) Value {
		v := xp
		for i := 0; i < r; i++ {
			start := k[i] * w.Dilation[i]
			end := start + (w.Out[i]-1)*w.Strides[i] + 1
			if start == 0 && end == b.Meta(v).Shape[i] && w.Strides[i] == 1 {
				continue
			}
			v = Call1(b, "slice", Attrs{"dim": i, "start": start, "end": end, "step": w.Strides[i]}, v)
		}
		return v
	}
	// tapValid says which outputs' tap k reads a real (unpadded) element.
	tapValid := func(k []int) Value {
		var m Value
		for i := 0; i < r; i++ {
			if w.PadLo[i] == 0 && w.PadHi[i] == 0 {
				continue
			}
			off := k[i]*w.Dilation[i] - w.PadLo[i]
			o := Call1(b, "iota", Attrs{"shape": []int{w.Out[i]}, "dim": 0, "dtype": dtype.I64})
			pos := Call1(b, "add", nil, Call1(b, "mul", nil, o, b.Scalar(int64(w.Strides[i]), o)), b.Scalar(int64(off), o))
			ok := Call1(b, "logical_and", nil, Call1(b, "ge", nil, pos, b.Scalar(int64(0), pos)), Call1(b, "lt", nil, pos, b.Scalar(int64(xm.Shape[i]), pos)))
			shape := make([]int, r)
			for j := range shape {
				shape[j] = 1
			}
			shape[i] = w.Out[i]
			ok = laReshape(b, ok, shape)
			if m == nil {
				m = ok
			} else {
				m = Call1(b, "logical_and", nil, m, ok)
			}
		}
		return m
	}
	var best, sel Value
	for t := 0; t < ntaps; t++ {
		k := tapIndex(t)
		v := tapView(k)
		if t == 0 && !padded {
			best = v
			sel = Zeros(b, w.Out, dtype.I64)
			continue
		}
		if best == nil {
			best = Call1(b, "full", Attrs{"shape": slices.Clone(w.Out), "value": math.Inf(-1), "dtype": xm.DType})
			sel = Call1(b, "full", Attrs{"shape": slices.Clone(w.Out), "value": int64(-1), "dtype": dtype.I64})
		}
		upd := Call1(b, "logical_or", nil, Call1(b, "gt", nil, v, best), Call1(b, "ne", nil, v, v))
		if padded {
			upd = Call1(b, "logical_or", nil, upd, Call1(b, "eq", nil, sel, b.Scalar(int64(-1), sel)))
			if valid := tapValid(k); valid != nil {
				upd = Call1(b, "logical_and", nil, upd, valid)
			}
		}
		best = Call1(b, "where", nil, upd, v, best)
		sel = Call1(b, "where", nil, upd, b.Scalar(int64(t), sel), sel)
	}
	var gx Value
	zero := b.Scalar(0.0, gy)
	for t := 0; t < ntaps; t++ {
		k := tapIndex(t)
		share := Call1(b, "where", nil, Call1(b, "eq", nil, sel, b.Scalar(int64(t), sel)), gy, zero)
		low, high, interior := make([]int, r), make([]int, r), make([]int, r)
		for i := 0; i < r; i++ {
			low[i] = k[i]*w.Dilation[i] - w.PadLo[i]
			high[i] = xm.Shape[i] - low[i] - ((w.Out[i]-1)*w.Strides[i] + 1)
			interior[i] = w.Strides[i] - 1
		}
		s := Call1(b, "pad_nd", Attrs{"low": low, "high": high, "interior": interior, "value": 0.0}, share)
		if gx == nil {
			gx = s
		} else {
			gx = Call1(b, "add", nil, gx, s)
		}
	}
	return gx
}
