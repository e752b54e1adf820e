package cpu

import (
	"fmt"
	"math"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// Convolution (im2col / col2im around the shared GEMM) and pooling kernels.

// convPlan holds the per-dtype pieces of a convolution: the GEMM
// micro-kernel, converters from the stored dtype S to the accumulation type T
// for each precision pass (weight side, input side, and the already
// converted im2col columns), and the final rounding.
type convPlan[S any, T gemmNum] struct {
	kern    func(int, []T, []T, *[16]T)
	dot     func(x, y []T) T
	wConv   []func(S) T
	xConv   []func(S) T
	colConv []func(T) T
	toT     func(S) T
	fromT   func(T) S
	plain   bool // single pass of plain numeric conversions (see gemmSide.plain)
	tile    *gemmTile[T]
}

func narrowPlan[S any](ks *kset, to func(S) float32, from func(float32) S) convPlan[S, float32] {
	return convPlan[S, float32]{kern: kern4x4[float32], dot: dotPlain[float32], wConv: []func(S) float32{to}, xConv: []func(S) float32{to},
		colConv: []func(float32) float32{idF32}, toT: to, fromT: from, tile: tileF32(ks)}
}

func convolutionKernel(c *Call) error {
	ks := c.kernels()
	var bias []int
	if c.In[2].Buf != nil {
		bias = c.In[2].Shape
	}
	p, err := op.ResolveConv(c.In[0].Shape, c.In[1].Shape, bias, c.Attrs)
	if err != nil {
		return err
	}
	prec := c.Attrs.String("precision")
	switch c.In[0].DType {
	case dtype.F32:
		t := tileF32(ks)
		if isHighest(prec) && t == nil {
			w := []func(float32) float64{widen32}
			runConv(c, p, convPlan[float32, float64]{kern: kern4x4F32, dot: dotF32, wConv: w, xConv: w, colConv: []func(float64) float64{ident[float64]},
				toT: widen32, fromT: narrow32, plain: true})
			break
		}
		if isHighest(prec) && convFastOK(ks, p) {
			runConvFast(c, p)
			break
		}
		if isHighest(prec) {
			id := []func(float32) float32{idF32}
			runConv(c, p, convPlan[float32, float32]{kern: kern4x4[float32], dot: dotPlain[float32], wConv: id, xConv: id, colConv: id, toT: idF32, fromT: idF32, plain: true, tile: t})
			break
		}
		if convFastOK(ks, p) && !(p.Transposed && convStrided(p)) {
			runConvFast(c, p)
			break
		}
		pa, pb := bf16Passes(prec)
		runConv(c, p, convPlan[float32, float32]{kern: kern4x4[float32], dot: dotPlain[float32], wConv: pa, xConv: pb, colConv: pb, toT: idF32, fromT: idF32, tile: t})
	case dtype.F64:
		id := []func(float64) float64{ident[float64]}
		runConv(c, p, convPlan[float64, float64]{kern: kern4x4F64, dot: dotF64, wConv: id, xConv: id, colConv: id, toT: ident[float64], fromT: ident[float64], plain: true, tile: tileF64(ks)})
	case dtype.BF16:
		if conv16FastOK(ks, dtype.BF16, p) {
			runConv16(c, p)
			break
		}
		runConv(c, p, narrowPlan(ks, func(x dtype.BFloat16) float32 { return x.F32() }, dtype.BF16FromF32))
	case dtype.F16:
		if conv16FastOK(ks, dtype.F16, p) {
			runConv16(c, p)
			break
		}
		runConv(c, p, narrowPlan(ks, func(x dtype.Float16) float32 { return x.F32() }, dtype.F16FromF32))
	default:
		return fmt.Errorf("convolution: unsupported dtype %s", c.In[0].DType)
	}
	return nil
}

// seq returns [0, step, 2*step, ...) of length n.
func seq(n, step int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i * step
	}
	return out
}

// convTap maps each of n coordinates i along one spatial dim to i*s-lo+kk*d,
// the input coordinate an output position reads (forward) or the output
// coordinate an input position writes (transposed), or -1 outside [0, other).
func convTap(n, other, s, lo, kk, d int) []int {
	out := make([]int, n)
	for i := range out {
		v := i*s - lo + kk*d
		if v < 0 || v >= other {
			v = -1
		}
		out[i] = v
	}
	return out
}

func runConv[S any, T gemmNum](c *Call, p op.ConvParams, pl convPlan[S, T]) {
	x, w := as[S](c.InB[0][c.In[0].Offset*c.In[0].DType.Size():]), as[S](c.InB[1][c.In[1].Offset*c.In[1].DType.Size():])
	out := as[S](c.OutB[0][c.Out[0].Offset*c.Out[0].DType.Size():])
	var bias []T
	if c.In[2].Buf != nil {
		bs := as[S](c.InB[2][c.In[2].Offset*c.In[2].DType.Size():])
		bias = make([]T, p.Cout)
		for i := range bias {
			bias[i] = pl.toT(bs[i])
		}
	}
	nd := len(p.In)
	kprod, lin, lout := 1, 1, 1
	for i := 0; i < nd; i++ {
		kprod *= p.Kernel[i]
		lin *= p.In[i]
		lout *= p.Out[i]
	}
	if p.N == 0 || p.Cout == 0 || lout == 0 {
		return
	}
	cinG, coutG := p.Cin/p.Groups, p.Cout/p.Groups
	passes := len(pl.wConv)
	// Row-major strides of the input and output spatial grids.
	inSt, outSt := make([]int, nd), make([]int, nd)
	si, so := 1, 1
	for d := nd - 1; d >= 0; d-- {
		inSt[d], outSt[d] = si, so
		si *= p.In[d]
		so *= p.Out[d]
	}
	// Per kernel tap (multi-index kk), per dim, the coordinate map.
	taps := make([][][]int, kprod)
	for t := 0; t < kprod; t++ {
		taps[t] = make([][]int, nd)
		rem := t
		for d := nd - 1; d >= 0; d-- {
			kk := rem % p.Kernel[d]
			rem /= p.Kernel[d]
			if p.Transposed {
				taps[t][d] = convTap(p.In[d], p.Out[d], p.Stride[d], p.PadLo[d], kk, p.Dilation[d])
			} else {
				taps[t][d] = convTap(p.Out[d], p.In[d], p.Stride[d], p.PadLo[d], kk, p.Dilation[d])
			}
		}
	}
	finish := func(n, g int, acc []T) {
		for co := 0; co < coutG; co++ {
			oc := g*coutG + co
			var b T
			if bias != nil {
				b = bias[oc]
			}
			dst := out[(n*p.Cout+oc)*lout : (n*p.Cout+oc+1)*lout]
			src := acc[co*lout : (co+1)*lout]
			for j := range dst {
				dst[j] = pl.fromT(src[j] + b)
			}
		}
	}
	if !p.Transposed {
		kc := cinG * kprod
		cols := make([]T, kc*lout)
		acc := make([]T, coutG*lout)
		g := gemmProblem[S, T, T]{nb: 1, m: coutG, n: lout, k: kc * passes, kern: pl.kern, dot: pl.dot, tile: pl.tile, ks: c.kernels(),
			a:     gemmSide[S, T]{src: w, row: seq(coutG, kc), k: seq(kc, 1), conv: pl.wConv, plain: pl.plain},
			b:     gemmSide[T, T]{src: cols, row: seq(lout, 1), k: seq(kc, lout), conv: pl.colConv, plain: pl.plain},
			store: storeTile(acc, coutG, lout, ident[T]),
		}
		for n := 0; n < p.N; n++ {
			for gi := 0; gi < p.Groups; gi++ {
				// im2col: row (ci, tap) holds the input read by every output position.
				parallelFor(kc, kc*lout, func(lo, hi int) {
					for r := lo; r < hi; r++ {
						ci, t := r/kprod, r%kprod
						xin := x[(n*p.Cin+gi*cinG+ci)*lin:]
						im2colRow(cols[r*lout:(r+1)*lout], xin, taps[t], inSt, outSt, 0, 0, 0, true, pl.toT)
					}
				})
				g.a.base = gi * coutG * kc
				g.run()
				finish(n, gi, acc)
			}
		}
		return
	}
	// Transposed: cols = W_g^T . X_g, then scatter-add (col2im).
	m := coutG * kprod
	cols := make([]T, m*lin)
	acc := make([]T, coutG*lout)
	g := gemmProblem[S, S, T]{nb: 1, m: m, n: lin, k: cinG * passes, kern: pl.kern, dot: pl.dot, tile: pl.tile, ks: c.kernels(),
		a:     gemmSide[S, T]{src: w, row: seq(m, 1), k: seq(cinG, m), conv: pl.wConv, plain: pl.plain},
		b:     gemmSide[S, T]{src: x, row: seq(lin, 1), k: seq(cinG, lin), conv: pl.xConv, plain: pl.plain},
		store: storeTile(cols, m, lin, ident[T]),
	}
	if cinG == 0 {
		g.k = 0
	}
	for n := 0; n < p.N; n++ {
		for gi := 0; gi < p.Groups; gi++ {
			g.a.base = gi * cinG * m
			g.b.base = (n*p.Cin + gi*cinG) * lin
			g.run()
			clear(acc)
			parallelFor(coutG, coutG*kprod*lin, func(lo, hi int) {
				for co := lo; co < hi; co++ {
					dst := acc[co*lout : (co+1)*lout]
					for t := 0; t < kprod; t++ {
						col2imRow(dst, cols[(co*kprod+t)*lin:(co*kprod+t+1)*lin], taps[t], inSt, outSt, 0, 0, 0, true)
					}
				}
			})
			finish(n, gi, acc)
		}
	}
}

// im2colRow fills row (indexed by output position) with the input values a
// kernel tap reads, recursing over spatial dims; positions in the padding
// read zero.
func im2colRow[S any, T gemmNum](row []T, x []S, tap [][]int, inSt, outSt []int, d, inOff, outOff int, valid bool, toT func(S) T) {
	t := tap[d]
	if d == len(tap)-1 {
		r := row[outOff : outOff+len(t)]
		if !valid {
			clear(r)
			return
		}
		for o, v := range t {
			if v < 0 {
				r[o] = 0
			} else {
				r[o] = toT(x[inOff+v])
			}
		}
		return
	}
	for o, v := range t {
		im2colRow(row, x, tap, inSt, outSt, d+1, inOff+max(v, 0)*inSt[d], outOff+o*outSt[d], valid && v >= 0, toT)
	}
}

// col2imRow adds one (channel, tap) row of columns, indexed by input
// position, into the output positions the tap writes.
func col2imRow[T gemmNum](dst, src []T, tap [][]int, inSt, outSt []int, d, inOff, outOff int, valid bool) {
	if !valid {
		return
	}
	t := tap[d]
	if d == len(tap)-1 {
		s := src[inOff : inOff+len(t)]
		for i, v := range t {
			if v >= 0 {
				dst[outOff+v] += s[i]
			}
		}
		return
	}
	for i, v := range t {
		col2imRow(dst, src, tap, inSt, outSt, d+1, inOff+i*inSt[d], outOff+max(v, 0)*outSt[d], v >= 0)
	}
}

// reduceWindowKernel is StableHLO reduce_window with max (NaN propagates,
// padding is -inf / the integer minimum) or sum (padding is 0; narrow floats
// accumulate in float64 and round once, integers wrap).
func reduceWindowKernel(c *Call) error {
	ks := c.kernels()
	in, o := c.In[0], c.Out[0]
	w, err := op.ResolveWindow(in.Shape, c.Attrs)
	if err != nil {
		return err
	}
	isMax := c.Attrs.String("kind") == "max"
	dt := in.DType
	src, dst := c.InB[0], c.OutB[0]
	if planeWindow(in.Shape, w) && !slowPools {
		switch dt {
		case dtype.F32:
			reduceWindowPlanes(ks, in.Shape, w, isMax, as[float32](src), in.Offset, as[float32](dst), o.Offset)
			return nil
		case dtype.F64:
			reduceWindowPlanes(ks, in.Shape, w, isMax, as[float64](src), in.Offset, as[float64](dst), o.Offset)
			return nil
		}
	}
	if dt.IsFloat() {
		load, store := floatAccess(dt)
		windowLoop(in.Shape, in.Offset, o.Offset, w, func(dstI int, idx []int) {
			acc := 0.0
			if isMax {
				acc = math.Inf(-1)
			}
			for _, i := range idx {
				v := load(src, i)
				if isMax {
					if v > acc || math.IsNaN(v) {
						acc = v
					}
				} else {
					acc += v
				}
			}
			store(dst, dstI, acc)
		})
		return nil
	}
	lo := int64(math.MinInt64)
	switch dt {
	case dtype.U8:
		lo = 0
	case dtype.I8:
		lo = math.MinInt8
	case dtype.I16:
		lo = math.MinInt16
	case dtype.I32:
		lo = math.MinInt32
	}
	windowLoop(in.Shape, in.Offset, o.Offset, w, func(dstI int, idx []int) {
		var acc int64
		if isMax {
			acc = lo
		}
		for _, i := range idx {
			v := dtype.Int64At(dt, src, i)
			if isMax {
				acc = max(acc, v)
			} else {
				acc += v
			}
		}
		dtype.PutInt64(dt, dst, dstI, acc)
	})
	return nil
}

func floatAccess(dt dtype.DType) (func([]byte, int) float64, func([]byte, int, float64)) {
	switch dt {
	case dtype.F32:
		return func(b []byte, i int) float64 { return float64(as[float32](b)[i]) },
			func(b []byte, i int, v float64) { as[float32](b)[i] = float32(v) }
	case dtype.F64:
		return func(b []byte, i int) float64 { return as[float64](b)[i] },
			func(b []byte, i int, v float64) { as[float64](b)[i] = v }
	}
	return func(b []byte, i int) float64 { return dtype.Float64At(dt, b, i) },
		func(b []byte, i int, v float64) { dtype.PutFloat64(dt, b, i, v) }
}

// windowLoop calls fn for every output element of a reduce_window over a
// contiguous input with the flat input indices its window covers (padding
// positions left out). Output elements are split across goroutines.
func windowLoop(shape []int, inOff, outOff int, w op.Window, fn func(dst int, idx []int)) {
	r := len(shape)
	total := op.Numel(w.Out)
	if total == 0 {
		return
	}
	st := op.ContiguousStrides(shape)
	wn := op.Numel(w.Window)
	// Window taps as per-dim offsets.
	taps := make([][]int, wn)
	for t := range taps {
		taps[t] = make([]int, r)
		rem := t
		for d := r - 1; d >= 0; d-- {
			taps[t][d] = (rem % w.Window[d]) * w.Dilation[d]
			rem /= w.Window[d]
		}
	}
	parallelFor(total, total*wn, func(lo, hi int) {
		idx := make([]int, 0, wn)
		o := make([]int, r)
		rem := lo
		for d := r - 1; d >= 0; d-- {
			o[d] = rem % w.Out[d]
			rem /= w.Out[d]
		}
		for e := lo; e < hi; e++ {
			idx = idx[:0]
		tapLoop:
			for _, tp := range taps {
				off := inOff
				for d := 0; d < r; d++ {
					p := o[d]*w.Strides[d] - w.PadLo[d] + tp[d]
					if p < 0 || p >= shape[d] {
						continue tapLoop
					}
					off += p * st[d]
				}
				idx = append(idx, off)
			}
			fn(outOff+e, idx)
			for d := r - 1; d >= 0; d-- {
				o[d]++
				if o[d] < w.Out[d] {
					break
				}
				o[d] = 0
			}
		}
	})
}

// maxPool2dIndicesKernel is PyTorch's CPU max_pool2d_with_indices: the first
// maximum in row-major window order wins, a NaN always replaces the current
// maximum, and indices are h*W+w within the plane.
func maxPool2dIndicesKernel(c *Call) error {
	ks := c.kernels()
	in := c.In[0]
	p, err := op.ResolvePool2d("max_pool2d_with_indices", in.Shape, c.Attrs, true)
	if err != nil {
		return err
	}
	src, vals := c.InB[0], c.OutB[0]
	idxs := as[int64](c.OutB[1])
	planes := op.Numel(in.Shape[:len(in.Shape)-2])
	if !slowPools {
		switch in.DType {
		case dtype.F32:
			maxPool2dIndicesTyped(ks, p, planes, in.Offset, as[float32](src), as[float32](vals), idxs)
			return nil
		case dtype.F64:
			maxPool2dIndicesTyped(ks, p, planes, in.Offset, as[float64](src), as[float64](vals), idxs)
			return nil
		}
	}
	load, store := floatAccess(in.DType)
	plane, oplane := p.H*p.W, p.OH*p.OW
	parallelFor(planes, planes*oplane*p.KH*p.KW, func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			base := in.Offset + pl*plane
			for oh := 0; oh < p.OH; oh++ {
				h0 := oh*p.SH - p.PH
				h1 := min(h0+(p.KH-1)*p.DH+1, p.H)
				for h0 < 0 {
					h0 += p.DH
				}
				for ow := 0; ow < p.OW; ow++ {
					w0 := ow*p.SW - p.PW
					w1 := min(w0+(p.KW-1)*p.DW+1, p.W)
					for w0 < 0 {
						w0 += p.DW
					}
					best, bi := math.Inf(-1), h0*p.W+w0
					for h := h0; h < h1; h += p.DH {
						for w := w0; w < w1; w += p.DW {
							v := load(src, base+h*p.W+w)
							if v > best || math.IsNaN(v) {
								best, bi = v, h*p.W+w
							}
						}
					}
					oi := pl*oplane + oh*p.OW + ow
					store(vals, oi, best)
					idxs[oi] = int64(bi)
				}
			}
		}
	})
	return nil
}

// adaptiveKernel runs adaptive average or max pooling: output cell (i, j)
// covers rows [floor(i*H/OH), ceil((i+1)*H/OH)) and likewise columns.
func adaptiveKernel(isMax bool) func(c *Call) error {
	return func(c *Call) error {
		in, o := c.In[0], c.Out[0]
		r := len(in.Shape)
		H, W := in.Shape[r-2], in.Shape[r-1]
		OH, OW := o.Shape[r-2], o.Shape[r-1]
		load, store := floatAccess(in.DType)
		src, dst := c.InB[0], c.OutB[0]
		var idxs []int64
		if isMax {
			idxs = as[int64](c.OutB[1])
		}
		planes := op.Numel(in.Shape[:r-2])
		if OH == 0 || OW == 0 {
			return nil
		}
		parallelFor(planes, planes*H*W, func(lo, hi int) {
			for pl := lo; pl < hi; pl++ {
				base := in.Offset + pl*H*W
				for oh := 0; oh < OH; oh++ {
					h0, h1 := oh*H/OH, ((oh+1)*H+OH-1)/OH
					for ow := 0; ow < OW; ow++ {
						w0, w1 := ow*W/OW, ((ow+1)*W+OW-1)/OW
						oi := o.Offset + pl*OH*OW + oh*OW + ow
						if isMax {
							best, bi := math.Inf(-1), h0*W+w0
							for h := h0; h < h1; h++ {
								for w := w0; w < w1; w++ {
									v := load(src, base+h*W+w)
									if v > best || math.IsNaN(v) {
										best, bi = v, h*W+w
									}
								}
							}
							store(dst, oi, best)
							idxs[oi-o.Offset] = int64(bi)
							continue
						}
						sum := 0.0
						for h := h0; h < h1; h++ {
							for w := w0; w < w1; w++ {
								sum += load(src, base+h*W+w)
							}
						}
						store(dst, oi, sum/float64((h1-h0)*(w1-w0)))
					}
				}
			}
		})
		return nil
	}
}

func init() {
	RegisterKernel(op.Convolution, Kernel{DTypes: op.SetFloats, Run: convolutionKernel})
	RegisterKernel(op.ReduceWindow, Kernel{DTypes: op.SetNumeric, Run: reduceWindowKernel})
	RegisterKernel(op.MaxPool2dWithIndices, Kernel{DTypes: op.SetFloats, Run: maxPool2dIndicesKernel})
	RegisterKernel(op.AdaptiveAvgPool2d, Kernel{DTypes: op.SetFloats, Run: adaptiveKernel(false)})
	RegisterKernel(op.AdaptiveMaxPool2d, Kernel{DTypes: op.SetFloats, Run: adaptiveKernel(true)})
}
