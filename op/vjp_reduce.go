package op

import (
	"slices"

	"github.com/gotpu/gotpu/dtype"
)

// Gradients of the reduce group (PyTorch 1.13's derivatives.yaml
// conventions).

// restoreReduced reshapes a reduction result g (reduced over dims of a
// tensor of shape inShape, with or without keepdim) to keepdim form and
// expands it to inShape.
func restoreReduced(b Builder, g Value, inShape []int, dims []int) Value {
	red, err := ReduceAxes("backward", dims, len(inShape))
	if err != nil {
		panic(err)
	}
	keep := ReducedShape(inShape, red, true)
	if !slices.Equal(b.Meta(g).Shape, keep) {
		g = Call1(b, "reshape", Attrs{"shape": keep}, g)
	}
	if slices.Equal(keep, inShape) {
		return g
	}
	return Call1(b, "expand", Attrs{"shape": slices.Clone(inShape)}, g)
}

// axisOf normalises a dim attribute for a tensor of rank r (rank 0 acts as
// rank 1 for reshape purposes).
func axisOf(dim, r int) int {
	ax, err := NormAxis("backward", dim, r)
	if err != nil {
		panic(err)
	}
	return ax
}

func init() {
	DefVJP(Reduce, func(b Builder, in, out, g []Value, a Attrs) []Value {
		x := in[0]
		shape := b.Meta(x).Shape
		dims := a.Ints("dims")
		gx := restoreReduced(b, g[0], shape, dims)
		switch a.String("kind") {
		case ReduceSum:
			return []Value{gx}
		case ReduceMax, ReduceMin:
			// Ties share the gradient evenly (amax/amin, max()/min()).
			y := restoreReduced(b, out[0], shape, dims)
			mask := Call1(b, "convert", Attrs{"dtype": b.Meta(x).DType}, Call1(b, "eq", nil, x, y))
			cnt := Call1(b, "sum", Attrs{"dims": dims, "keepdim": true}, mask)
			return []Value{Call1(b, "div", nil, Call1(b, "mul", nil, gx, mask), cnt)}
		case ReduceProd:
			return []Value{prodBackward(b, x, gx, dims)}
		}
		return []Value{nil}
	})

	// cumulative sum: reversed cumsum of the gradient; prod: exact with zeros.
	DefVJP(Cumulative, func(b Builder, in, out, g []Value, a Attrs) []Value {
		x := in[0]
		r := len(b.Meta(x).Shape)
		if r == 0 {
			return []Value{g[0]}
		}
		dim := axisOf(a.Int("dim"), r)
		if a.String("kind") == "sum" {
			return []Value{reverseCumsum(b, g[0], dim)}
		}
		return []Value{cumprodBackward(b, x, g[0], dim)}
	})

	// Values gathered by index: the gradient scatters back to the indices.
	scatterBack := func(b Builder, in, out, g []Value, a Attrs) []Value {
		x := in[0]
		shape := b.Meta(x).Shape
		if len(shape) == 0 {
			return []Value{g[0]}
		}
		dim := axisOf(a.Int("dim"), len(shape))
		z := Zeros(b, shape, b.Meta(g[0]).DType)
		return []Value{Call1(b, "scatter_add", Attrs{"dim": dim}, z, out[1], g[0])}
	}
	DefVJP(Sort, scatterBack)
	DefVJP(Cummax, scatterBack)
	DefVJP(Cummin, scatterBack)

	// softmax: y * (g - sum(g*y)); log_softmax: g - exp(y) * sum(g).
	DefVJP(Softmax, func(b Builder, in, out, g []Value, a Attrs) []Value {
		y, gy := out[0], g[0]
		dims := []int{a.Int("dim")}
		s := Call1(b, "sum", Attrs{"dims": dims, "keepdim": true}, Call1(b, "mul", nil, gy, y))
		return []Value{Call1(b, "mul", nil, y, Call1(b, "sub", nil, gy, s))}
	})
	DefVJP(LogSoftmax, func(b Builder, in, out, g []Value, a Attrs) []Value {
		y, gy := out[0], g[0]
		dims := []int{a.Int("dim")}
		s := Call1(b, "sum", Attrs{"dims": dims, "keepdim": true}, gy)
		return []Value{Call1(b, "sub", nil, gy, Call1(b, "mul", nil, Call1(b, "exp", nil, y), s))}
	})
	// logsumexp: g * exp(x - out), with out broadcast back.
	DefVJP(Logsumexp, func(b Builder, in, out, g []Value, a Attrs) []Value {
		x := in[0]
		shape := b.Meta(x).Shape
		dims := a.Ints("dims")
		y := restoreReduced(b, out[0], shape, dims)
		gx := restoreReduced(b, g[0], shape, dims)
		return []Value{Call1(b, "mul", nil, gx, Call1(b, "exp", nil, Call1(b, "sub", nil, x, y)))}
	})
}

// reverseCumsum returns flip(cumsum(flip(g))) along dim.
func reverseCumsum(b Builder, g Value, dim int) Value {
	f := Call1(b, "flip", Attrs{"dims": []int{dim}}, g)
	c := Call1(b, "cumulative", Attrs{"kind": "sum", "dim": dim}, f)
	return Call1(b, "flip", Attrs{"dims": []int{dim}}, c)
}

// prodBackward is the gradient of a product over dims, exact when inputs
// contain zeros: the product of all other elements of each lane, computed
// with exclusive cumulative products from both ends.
func prodBackward(b Builder, x, gx Value, dims []int) Value {
	shape := b.Meta(x).Shape
	r := len(shape)
	if r == 0 {
		return gx
	}
	red, _ := ReduceAxes("prod", dims, r)
	// Move reduced axes last and flatten them into one.
	var keep, rdims []int
	for i := 0; i < r; i++ {
		if red[i] {
			rdims = append(rdims, i)
		} else {
			keep = append(keep, i)
		}
	}
	perm := append(slices.Clone(keep), rdims...)
	xp := Call1(b, "permute", Attrs{"dims": perm}, x)
	pshape := b.Meta(xp).Shape
	n := 1
	for _, d := range rdims {
		n *= shape[d]
	}
	flat := append(slices.Clone(pshape[:len(keep)]), n)
	xf := Call1(b, "reshape", Attrs{"shape": flat}, xp)
	last := len(flat) - 1
	others := exclusiveProducts(b, xf, last)
	// Back to the input layout.
	o := Call1(b, "reshape", Attrs{"shape": pshape}, others)
	o = Call1(b, "permute", Attrs{"dims": invertPerm(perm)}, o)
	return Call1(b, "mul", nil, gx, o)
}

// exclusiveProducts returns, along dim, the product of every other element.
func exclusiveProducts(b Builder, x Value, dim int) Value {
	n := b.Meta(x).Shape[dim]
	if n == 0 {
		return x
	}
	one := onesLike(b, Call1(b, "slice", Attrs{"dim": dim, "start": 0, "end": 1}, x))
	shiftR := func(v Value) Value { // [1, v0, ..., v(n-2)]
		head := Call1(b, "slice", Attrs{"dim": dim, "start": 0, "end": n - 1}, v)
		return b.Call("cat", []Value{one, head}, Attrs{"dim": dim})[0]
	}
	left := Call1(b, "cumulative", Attrs{"kind": "prod", "dim": dim}, shiftR(x))
	xr := Call1(b, "flip", Attrs{"dims": []int{dim}}, x)
	right := Call1(b, "flip", Attrs{"dims": []int{dim}}, Call1(b, "cumulative", Attrs{"kind": "prod", "dim": dim}, shiftR(xr)))
	return Call1(b, "mul", nil, left, right)
}

func onesLike(b Builder, v Value) Value {
	m := b.Meta(v)
	return Call1(b, "full", Attrs{"shape": slices.Clone(m.Shape), "value": 1.0, "dtype": m.DType})
}

// cumprodBackward is the exact gradient of cumprod along dim, also with
// zeros: grad_i = sum_{j>=i} g_j * prod_{m<=j, m!=i} x_m, computed by
// replacing x_i with 1 in an extra dimension (O(n^2) in the lane length).
func cumprodBackward(b Builder, x, g Value, dim int) Value {
	shape := b.Meta(x).Shape
	n := shape[dim]
	if n == 0 {
		return g
	}
	dt := b.Meta(x).DType
	// Move dim last: xs [..., n].
	r := len(shape)
	perm := make([]int, 0, r)
	for i := 0; i < r; i++ {
		if i != dim {
			perm = append(perm, i)
		}
	}
	perm = append(perm, dim)
	xs := Call1(b, "permute", Attrs{"dims": perm}, x)
	gs := Call1(b, "permute", Attrs{"dims": perm}, g)
	ps := b.Meta(xs).Shape
	lead := ps[:len(ps)-1]
	// X[..., i, m] = x_m, with X[..., i, i] = 1.
	bshape := append(append(slices.Clone(lead), n), n)
	xe := Call1(b, "expand", Attrs{"shape": bshape}, Call1(b, "unsqueeze", Attrs{"dim": len(lead)}, xs))
	eye := Call1(b, "eq", nil,
		Call1(b, "iota", Attrs{"shape": []int{n, n}, "dim": 0, "dtype": dtype.I64}),
		Call1(b, "iota", Attrs{"shape": []int{n, n}, "dim": 1, "dtype": dtype.I64}))
	xe = Call1(b, "where", nil, eye, b.Scalar(1.0, xe), xe)
	cp := Call1(b, "cumulative", Attrs{"kind": "prod", "dim": len(bshape) - 1}, xe) // [..., i, j]
	ge := Call1(b, "unsqueeze", Attrs{"dim": len(lead)}, gs)                        // [..., 1, j]
	// Keep j >= i.
	upper := Call1(b, "ge", nil,
		Call1(b, "iota", Attrs{"shape": []int{n, n}, "dim": 1, "dtype": dtype.I64}),
		Call1(b, "iota", Attrs{"shape": []int{n, n}, "dim": 0, "dtype": dtype.I64}))
	terms := Call1(b, "mul", nil, cp, ge)
	terms = Call1(b, "where", nil, upper, terms, Zeros(b, []int{}, dt))
	gi := Call1(b, "sum", Attrs{"dims": []int{len(bshape) - 1}}, terms) // [..., i]
	return Call1(b, "permute", Attrs{"dims": invertPerm(perm)}, gi)
}

// Value-selecting reductions with a dim route the gradient to the returned
// index (PyTorch's value_selecting_reduction_backward); full-tensor median
// shares it evenly among elements equal to the result.
func init() {
	selectBack := func(b Builder, in, out, g []Value, a Attrs) []Value {
		x := in[0]
		shape := b.Meta(x).Shape
		gv, idx := g[0], out[1]
		if len(shape) == 0 {
			return []Value{gv}
		}
		dim := axisOf(a.Int("dim"), len(shape))
		if !a.Bool("keepdim") {
			gv = Call1(b, "unsqueeze", Attrs{"dim": dim}, gv)
			idx = Call1(b, "unsqueeze", Attrs{"dim": dim}, idx)
		}
		z := Zeros(b, shape, b.Meta(gv).DType)
		return []Value{Call1(b, "scatter", Attrs{"dim": dim}, z, idx, gv)}
	}
	DefVJP(MaxDim, selectBack)
	DefVJP(MinDim, selectBack)
	DefVJP(MedianDim, selectBack)

	DefVJP(Median, func(b Builder, in, out, g []Value, a Attrs) []Value {
		x := in[0]
		shape := b.Meta(x).Shape
		y := Call1(b, "expand", Attrs{"shape": slices.Clone(shape)}, out[0])
		dt := b.Meta(x).DType
		// NaN results select the NaN elements.
		hit := Call1(b, "logical_or", nil, Call1(b, "eq", nil, x, y),
			Call1(b, "logical_and", nil, Call1(b, "isnan", nil, x), Call1(b, "isnan", nil, y)))
		mask := Call1(b, "convert", Attrs{"dtype": dt}, hit)
		cnt := Call1(b, "sum", nil, mask)
		gx := Call1(b, "expand", Attrs{"shape": slices.Clone(shape)}, g[0])
		return []Value{Call1(b, "div", nil, Call1(b, "mul", nil, gx, mask), cnt)}
	})

	// std: var's gradient scaled by 1/(2 std), zero where std is 0
	// (PyTorch's std_backward masks those lanes).
	stdGrad := func(b Builder, x, std, gs Value, a Attrs) Value {
		shape := b.Meta(x).Shape
		dims := a.Ints("dims")
		red, _ := ReduceAxes("std", dims, len(shape))
		n := 1
		for i, r := range red {
			if r && len(shape) > 0 {
				n *= shape[i]
			}
		}
		denom := float64(n) - a.Float("correction")
		mean := Call1(b, "mean", Attrs{"dims": dims, "keepdim": true}, x)
		sd := restoreReduced(b, std, shape, dims)
		gx := restoreReduced(b, gs, shape, dims)
		zero := Call1(b, "eq", nil, sd, b.Scalar(0.0, sd))
		scale := Call1(b, "where", nil, zero, b.Scalar(0.0, sd), Call1(b, "div", nil, gx, Call1(b, "mul", nil, sd, b.Scalar(denom, sd))))
		return Call1(b, "mul", nil, scale, Call1(b, "sub", nil, x, mean))
	}
	DefVJP(Std, func(b Builder, in, out, g []Value, a Attrs) []Value {
		return []Value{stdGrad(b, in[0], out[0], g[0], a)}
	})
	DefVJP(StdMean, func(b Builder, in, out, g []Value, a Attrs) []Value {
		x := in[0]
		shape := b.Meta(x).Shape
		gx := stdGrad(b, x, out[0], g[0], a)
		red, _ := ReduceAxes("std_mean", a.Ints("dims"), len(shape))
		n := 1
		for i, r := range red {
			if r && len(shape) > 0 {
				n *= shape[i]
			}
		}
		gm := restoreReduced(b, g[1], shape, a.Ints("dims"))
		gm = Call1(b, "div", nil, gm, b.Scalar(float64(n), gm))
		return []Value{Call1(b, "add", nil, gx, gm)}
	})
}
