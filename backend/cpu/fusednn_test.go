package cpu

import (
	"math"
	"math/rand"
	"runtime"
	"sync"
	"testing"

	"github.com/gotpu/gotpu/backend/cpu/internal/vec"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// f32Operand is a dense f32 operand holding v with the given layout (the
// buffer is v itself, so the layout may describe a strided view of it).
func f32Operand(v []float32, lay op.Layout) device.Operand {
	b := make([]byte, 4*len(v))
	copy(as[float32](b), v)
	return device.Operand{Buf: &Buf{b: b}, DType: dtype.F32, Layout: lay}
}

// runF32 executes op name on the operands (an absent optional input is an
// operand with a nil Buf) and returns its dense f32 output of outShape.
func runF32(t *testing.T, ks *kset, name string, attrs op.Attrs, outShape []int, in ...device.Operand) []float32 {
	t.Helper()
	d := op.MustLookup(name)
	a, err := d.Normalize(attrs)
	if err != nil {
		t.Fatal(err)
	}
	n := op.Numel(outShape)
	l := &device.Launch{Op: d, Attrs: a, In: in,
		Out: []device.Operand{{Buf: &Buf{b: make([]byte, 4*n)}, DType: dtype.F32, Layout: op.Contiguous(outShape)}}}
	if err := execAt(ks, l, func(b device.Buffer) []byte { return b.(*Buf).b }); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return as[float32](l.Out[0].Buf.(*Buf).b)
}

func randF32(r *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * scale)
	}
	return v
}

// fusedClose reports whether got is within f32 tolerances of want (torch's
// rtol 1.3e-6, atol 1e-5 scaled by atol), NaN matching NaN and infinities
// matching exactly.
func fusedClose(got float32, want, rtol, atol float64) bool {
	g := float64(got)
	if math.IsNaN(want) || math.IsNaN(g) {
		return math.IsNaN(want) && math.IsNaN(g)
	}
	if math.IsInf(want, 0) || math.IsInf(g, 0) {
		return g == want
	}
	return math.Abs(g-want) <= atol+rtol*math.Abs(want)
}

func softmaxRef(x []float32, logSM bool) []float64 {
	m := math.Inf(-1)
	for _, v := range x {
		if float64(v) > m || v != v {
			m = float64(v)
		}
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v) - m)
	}
	y := make([]float64, len(x))
	for i, v := range x {
		if logSM {
			y[i] = float64(v) - m - math.Log(s)
		} else {
			y[i] = math.Exp(float64(v)-m) / s
		}
	}
	return y
}

// TestFusedSoftmax checks the fused f32 softmax/log_softmax rows against a
// float64 reference and against the generic kernel (softmaxRedLanes), at
// both levels, for ragged rows, many rows (the parallel path) and rows
// with -Inf, +Inf and NaN.
func TestFusedSoftmax(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(5))
	inf := float32(math.Inf(1))
	special := [][]float32{
		{1, float32(math.Inf(-1)), 2, 3, 4, 5, 6, 7, 8},
		{-inf, -inf, -inf},
		{1, 2, float32(math.NaN()), 4, 5, 6, 7, 8, 9, 10},
		{1, inf, 3},
		{1e30, -1e30, 0, 88, 89, 1e-40},
	}
	shapes := [][2]int{{1, 1}, {3, 7}, {5, 33}, {2, 1000}, {140, 1000}}
	for _, level := range levels() {
		for _, logSM := range []bool{false, true} {
			name := map[bool]string{false: "softmax", true: "log_softmax"}[logSM]
			cases := [][]float32{}
			rowsOf := []int{}
			for _, sh := range shapes {
				cases = append(cases, randF32(r, sh[0]*sh[1], 3))
				rowsOf = append(rowsOf, sh[0])
			}
			for _, sp := range special {
				cases = append(cases, sp)
				rowsOf = append(rowsOf, 1)
			}
			for ci, x := range cases {
				rows := rowsOf[ci]
				d := len(x) / rows
				var got []float32
				ks := ksetFor(level)
				got = runF32(t, ks, name, op.Attrs{"dim": -1}, []int{rows, d}, f32Operand(x, op.Contiguous([]int{rows, d})))
				old := make([]float32, len(x))
				in := device.Operand{DType: dtype.F32, Layout: op.Contiguous([]int{rows, d})}
				softmaxRedLanes(newRedLanes(in, in, 1), x, old, logSM)
				for row := 0; row < rows; row++ {
					want := softmaxRef(x[row*d:(row+1)*d], logSM)
					for j, w := range want {
						i := row*d + j
						if !fusedClose(got[i], w, 4e-6, 1e-7) || !fusedClose(got[i], float64(old[i]), 4e-6, 1e-7) {
							t.Fatalf("%s %s case %d [%d,%d] = %g, want %g (generic kernel %g)", level, name, ci, row, j, got[i], w, old[i])
						}
					}
				}
			}
		}
	}
}

// TestFusedNorms checks fused layer_norm (with and without weight/bias)
// against the generic float64 kernel run on the same data in f64, and
// rms_norm (dense, and a transposed input that takes the gather path)
// against a float64 reference, at both levels.
func TestFusedNorms(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(6))
	for _, level := range levels() {
		for _, sh := range [][2]int{{1, 1}, {4, 7}, {3, 64}, {9, 100}, {70, 2048}} {
			rows, d := sh[0], sh[1]
			x := randF32(r, rows*d, 2)
			for i := range x {
				x[i] += 3 // a mean far from 0 tests the two-pass variance
			}
			w, b := randF32(r, d, 1), randF32(r, d, 1)
			for _, affine := range []bool{false, true} {
				ins := []device.Operand{f32Operand(x, op.Contiguous([]int{rows, d})), {}, {}}
				if affine {
					ins[1], ins[2] = f32Operand(w, op.Contiguous([]int{d})), f32Operand(b, op.Contiguous([]int{d}))
				}
				attrs := op.Attrs{"normalized_shape": []int{d}, "eps": 1e-5}
				var got []float32
				ks := ksetFor(level)
				got = runF32(t, ks, "layer_norm", attrs, []int{rows, d}, ins...)
				// The generic kernel, through an f64 launch of the same values.
				want := layerNormF64(t, x, w, b, rows, d, affine)
				for i := range got {
					if !fusedClose(got[i], want[i], 1e-5, 1e-5) {
						t.Fatalf("%s layer_norm %v affine=%v [%d] = %g, want %g", level, sh, affine, i, got[i], want[i])
					}
				}
				// rms_norm: dense, then x^T read through a transposed view.
				rins := []device.Operand{ins[0], ins[1]}
				var rgot, tgot []float32
				xt := make([]float32, len(x))
				for i := 0; i < rows; i++ {
					for j := 0; j < d; j++ {
						xt[j*rows+i] = x[i*d+j]
					}
				}
				tins := []device.Operand{f32Operand(xt, op.Layout{Shape: []int{rows, d}, Strides: []int{1, rows}}), ins[1]}
				rgot = runF32(t, ks, "rms_norm", op.Attrs{"normalized_shape": []int{d}}, []int{rows, d}, rins...)
				tgot = runF32(t, ks, "rms_norm", op.Attrs{"normalized_shape": []int{d}}, []int{rows, d}, tins...)
				for row := 0; row < rows; row++ {
					var ms float64
					for j := 0; j < d; j++ {
						v := float64(x[row*d+j])
						ms += v * v
					}
					rs := 1 / math.Sqrt(ms/float64(d)+0x1p-23)
					for j := 0; j < d; j++ {
						want := float64(x[row*d+j]) * rs
						if affine {
							want *= float64(w[j])
						}
						i := row*d + j
						if !fusedClose(rgot[i], want, 1e-5, 1e-6) || math.Float32bits(tgot[i]) != math.Float32bits(rgot[i]) {
							t.Fatalf("%s rms_norm %v [%d,%d] = %g (strided %g), want %g", level, sh, row, j, rgot[i], tgot[i], want)
						}
					}
				}
			}
		}
	}
}

// layerNormF64 runs the generic layer_norm kernel on float64 copies.
func layerNormF64(t *testing.T, x, w, b []float32, rows, d int, affine bool) []float64 {
	t.Helper()
	f64 := func(v []float32, shape []int) device.Operand {
		buf := make([]byte, 8*len(v))
		for i, e := range v {
			dtype.PutFloat64(dtype.F64, buf, i, float64(e))
		}
		return device.Operand{Buf: &Buf{b: buf}, DType: dtype.F64, Layout: op.Contiguous(shape)}
	}
	ins := []device.Operand{f64(x, []int{rows, d}), {}, {}}
	if affine {
		ins[1], ins[2] = f64(w, []int{d}), f64(b, []int{d})
	}
	dd := op.MustLookup("layer_norm")
	a, err := dd.Normalize(op.Attrs{"normalized_shape": []int{d}, "eps": 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	l := &device.Launch{Op: dd, Attrs: a, In: ins,
		Out: []device.Operand{{Buf: &Buf{b: make([]byte, 8*rows*d)}, DType: dtype.F64, Layout: op.Contiguous([]int{rows, d})}}}
	if err := execAt(procKS, l, func(b device.Buffer) []byte { return b.(*Buf).b }); err != nil {
		t.Fatal(err)
	}
	return as[float64](l.Out[0].Buf.(*Buf).b)
}

// TestVecRouting runs the routed elementwise kernels through Exec on dense
// operands (vec path, both levels, sizes crossing the parallel split), a
// broadcast scalar second operand, and a transposed input (generic path),
// against float64 references.
func TestVecRouting(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	unary := map[string]func(float64) float64{
		"exp": math.Exp, "log": func(x float64) float64 { return math.Log(math.Abs(x)) }, "tanh": math.Tanh, "erf": math.Erf,
		"sigmoid": sigmoid, "silu": siluRef, "relu": func(x float64) float64 { return math.Max(x, 0) }, "gelu": geluRef,
	}
	binary := map[string]func(a, b float64) float64{
		"add": func(a, b float64) float64 { return a + b }, "sub": func(a, b float64) float64 { return a - b },
		"mul": func(a, b float64) float64 { return a * b }, "div": func(a, b float64) float64 { return a / b },
		"maximum": maxNaN,
	}
	for _, level := range levels() {
		for _, shape := range [][]int{{5}, {3, 17}, {2, 70000}} {
			n := op.Numel(shape)
			x := randF32(r, n, 2)
			y := randF32(r, n, 2)
			s := []float32{1.75}
			dense := f32Operand(x, op.Contiguous(shape))
			trans := dense
			if len(shape) == 2 {
				trans = f32Operand(x, op.Layout{Shape: shape, Strides: []int{1, shape[0]}})
			}
			xAt := func(lay op.Layout, i int) float64 {
				if len(shape) == 2 {
					row, col := i/shape[1], i%shape[1]
					return float64(x[row*lay.Strides[0]+col*lay.Strides[1]])
				}
				return float64(x[i])
			}
			for name, f := range unary {
				for _, in := range []device.Operand{dense, trans} {
					arg := in
					if name == "log" {
						ax := make([]float32, n)
						for i, v := range x {
							ax[i] = float32(math.Abs(float64(v)))
						}
						arg = f32Operand(ax, in.Layout)
					}
					var got []float32
					ks := ksetFor(level)
					got = runF32(t, ks, name, nil, shape, arg)
					for i := range got {
						if want := f(xAt(in.Layout, i)); !fusedClose(got[i], want, 1.3e-6, 1e-5) {
							t.Fatalf("%s %s%v strides %v [%d] = %g, want %g", level, name, shape, in.Strides, i, got[i], want)
						}
					}
				}
			}
			for name, f := range binary {
				others := map[string]device.Operand{
					"dense":  f32Operand(y, op.Contiguous(shape)),
					"scalar": f32Operand(s, op.Layout{Shape: shape, Strides: make([]int, len(shape))}),
				}
				for kind, other := range others {
					for _, in := range []device.Operand{dense, trans} {
						var got []float32
						ks := ksetFor(level)
						got = runF32(t, ks, name, nil, shape, in, other)
						for i := range got {
							b := float64(s[0])
							if kind == "dense" {
								b = float64(y[i])
							}
							want := float64(float32(f(xAt(in.Layout, i), b)))
							if !fusedClose(got[i], want, 0, 0) {
								t.Fatalf("%s %s(%s) %v strides %v [%d] = %g, want %g", level, name, kind, shape, in.Strides, i, got[i], want)
							}
						}
					}
				}
			}
		}
	}
}

// TestVecOperand checks which layouts take the vec path: dense arrays
// (size-1 dimensions' strides ignored, offsets kept), broadcast scalars,
// and nothing else.
func TestVecOperand(t *testing.T) {
	buf := make([]byte, 4*64)
	for _, tc := range []struct {
		lay           op.Layout
		n             int
		ok, scalar    bool
		first, length int
	}{
		{op.Contiguous([]int{4, 8}), 32, true, false, 0, 32},
		{op.Layout{Shape: []int{4, 1, 8}, Strides: []int{8, 99, 1}, Offset: 3}, 32, true, false, 3, 32},
		{op.Layout{Shape: []int{4, 8}, Strides: []int{0, 0}, Offset: 5}, 32, true, true, 5, 1},
		{op.Layout{Shape: []int{4, 8}, Strides: []int{1, 4}}, 32, false, false, 0, 0},
		{op.Layout{Shape: []int{4, 8}, Strides: []int{8, 0}}, 32, false, false, 0, 0},
		{op.Layout{Shape: []int{4, 8}, Strides: []int{16, 1}}, 32, false, false, 0, 0},
		{op.Contiguous([]int{4, 8}), 0, false, false, 0, 0},
		{op.Layout{Shape: []int{40, 8}, Strides: []int{8, 1}}, 320, false, false, 0, 0}, // past the buffer
	} {
		o := device.Operand{DType: dtype.F32, Layout: tc.lay}
		s, scalar, ok := vecOperand(o, buf, tc.n)
		if ok != tc.ok || scalar != tc.scalar || len(s) != tc.length ||
			(ok && &s[0] != &as[float32](buf)[tc.first]) {
			t.Errorf("%+v n=%d: ok=%v scalar=%v len=%d, want %v %v %d at %d", tc.lay, tc.n, ok, scalar, len(s), tc.ok, tc.scalar, tc.length, tc.first)
		}
	}
	if _, _, ok := vecOperand(device.Operand{DType: dtype.F64, Layout: op.Contiguous([]int{4})}, buf, 4); ok {
		t.Error("f64 operand took the f32 path")
	}
}

// BenchmarkVecOps runs whole f32 ops on a (4096, 4096) tensor through
// Exec (all threads): softmax, log_softmax and layer_norm fused vs the
// generic kernels they replaced ("before": fusedNN off), and exp, gelu
// and add at level avx2 vs generic (the float64 math loops of before).
func BenchmarkVecOps(b *testing.B) {
	const rows, d = 4096, 4096
	shape := []int{rows, d}
	r := rand.New(rand.NewSource(9))
	x := f32Operand(randF32(r, rows*d, 2), op.Contiguous(shape))
	y := f32Operand(randF32(r, rows*d, 2), op.Contiguous(shape))
	w := f32Operand(randF32(r, d, 1), op.Contiguous([]int{d}))
	bias := f32Operand(randF32(r, d, 1), op.Contiguous([]int{d}))
	out := []device.Operand{{Buf: &Buf{b: make([]byte, 4*rows*d)}, DType: dtype.F32, Layout: op.Contiguous(shape)}}
	launch := func(name string, attrs op.Attrs, in ...device.Operand) *device.Launch {
		dd := op.MustLookup(name)
		a, err := dd.Normalize(attrs)
		if err != nil {
			b.Fatal(err)
		}
		return &device.Launch{Op: dd, Attrs: a, In: in, Out: out}
	}
	mem := func(buf device.Buffer) []byte { return buf.(*Buf).b }
	run := func(b *testing.B, ks *kset, l *device.Launch) {
		b.SetBytes(4 * rows * d)
		for b.Loop() {
			if err := execAt(ks, l, mem); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(rows*d)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
	}
	for _, tc := range []struct {
		name string
		l    *device.Launch
	}{
		{"softmax", launch("softmax", op.Attrs{"dim": -1}, x)},
		{"log_softmax", launch("log_softmax", op.Attrs{"dim": -1}, x)},
		{"layer_norm", launch("layer_norm", op.Attrs{"normalized_shape": []int{d}}, x, w, bias)},
	} {
		for _, fused := range []bool{true, false} {
			b.Run(tc.name+map[bool]string{true: "/fused", false: "/before"}[fused], func(b *testing.B) {
				prev := fusedNN
				fusedNN = fused
				defer func() { fusedNN = prev }()
				run(b, procKS, tc.l)
			})
		}
	}
	for _, tc := range []struct {
		name string
		l    *device.Launch
	}{
		{"exp", launch("exp", nil, x)},
		{"gelu", launch("gelu", nil, x)},
		{"tanh", launch("tanh", nil, x)},
		{"add", launch("add", nil, x, y)},
	} {
		for _, level := range levels() {
			b.Run(tc.name+"/"+level, func(b *testing.B) { run(b, ksetFor(level), tc.l) })
		}
	}
}

// TestVecRoutingBF16 runs the routed unary kernels on dense bf16 tensors
// (widened to f32 in blocks, rounded once) at both levels: within one
// bfloat16 ulp of the float64 reference rounded to bf16, NaN kept.
func TestVecRoutingBF16(t *testing.T) {
	r := rand.New(rand.NewSource(10))
	unary := map[string]func(float64) float64{
		"exp": math.Exp, "log": logRef, "tanh": math.Tanh, "erf": math.Erf,
		"sigmoid": sigmoid, "silu": siluRef, "gelu": geluRef,
	}
	for _, n := range []int{5, 3000} {
		x := make([]dtype.BFloat16, n)
		for i := range x {
			x[i] = dtype.BF16FromF32(float32(r.NormFloat64() * 4))
		}
		x[0] = dtype.BF16FromF32(float32(math.NaN()))
		for name, f := range unary {
			for _, level := range levels() {
				b := make([]byte, 2*n)
				copy(as[dtype.BFloat16](b), x)
				d := op.MustLookup(name)
				a, err := d.Normalize(nil)
				if err != nil {
					t.Fatal(err)
				}
				l := &device.Launch{Op: d, Attrs: a,
					In:  []device.Operand{{Buf: &Buf{b: b}, DType: dtype.BF16, Layout: op.Contiguous([]int{n})}},
					Out: []device.Operand{{Buf: &Buf{b: make([]byte, 2*n)}, DType: dtype.BF16, Layout: op.Contiguous([]int{n})}}}
				ks := ksetFor(level)
				if err := execAt(ks, l, func(b device.Buffer) []byte { return b.(*Buf).b }); err != nil {
					t.Fatal(err)
				}
				got := as[dtype.BFloat16](l.Out[0].Buf.(*Buf).b)
				for i := range got {
					want := dtype.BF16FromF32(float32(f(float64(x[i].F32()))))
					g, w := got[i].F32(), want.F32()
					if g != w && !(g != g && w != w) && vec.ULPDist(g, w) > 1<<16 {
						t.Fatalf("%s bf16 %s(%g) = %g, want %g", level, name, x[i].F32(), g, w)
					}
				}
			}
		}
	}
}

// TestParallelSplits checks that vecParallel and fusedRows cover every
// index exactly once, and split large problems (when threads allow).
func TestParallelSplits(t *testing.T) {
	var mu sync.Mutex
	for _, tc := range []struct{ rows, d int }{{1, 1}, {3, 5}, {1, 1 << 18}, {4096, 4096}, {7, 40000}, {300001, 1}} {
		seen := make([]int, tc.rows)
		calls := 0
		fusedRows(tc.rows, tc.d, func(lo, hi int) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			for r := lo; r < hi; r++ {
				seen[r]++
			}
		})
		for r, k := range seen {
			if k != 1 {
				t.Fatalf("fusedRows(%d, %d): row %d run %d times", tc.rows, tc.d, r, k)
			}
		}
		if want := min(runtime.GOMAXPROCS(0), tc.rows*tc.d/vecChunk, tc.rows); want > 1 && calls != want {
			t.Errorf("fusedRows(%d, %d): %d chunks, want %d", tc.rows, tc.d, calls, want)
		}
		n := tc.rows * tc.d
		cover := make([]int8, n)
		calls = 0
		vecParallel(n, func(lo, hi int) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			for i := lo; i < hi; i++ {
				cover[i]++
			}
		})
		for i, k := range cover {
			if k != 1 {
				t.Fatalf("vecParallel(%d): index %d run %d times", n, i, k)
			}
		}
		if want := min(runtime.GOMAXPROCS(0), n/vecChunk); want > 1 && calls != want {
			t.Errorf("vecParallel(%d): %d chunks, want %d", n, calls, want)
		}
	}
}

// TestVecRoutingBF16Binary runs bf16 add/sub/mul/div on dense and
// broadcast-scalar operands at both levels: bit for bit the float64 result
// rounded to f32 then bf16 (the generic kernels' and PyTorch's value).
func TestVecRoutingBF16Binary(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	ops := map[string]func(a, b float64) float64{
		"add": func(a, b float64) float64 { return a + b }, "sub": func(a, b float64) float64 { return a - b },
		"mul": func(a, b float64) float64 { return a * b }, "div": func(a, b float64) float64 { return a / b },
	}
	bf := func(v []float32) []byte {
		b := make([]byte, 2*len(v))
		for i, x := range v {
			as[dtype.BFloat16](b)[i] = dtype.BF16FromF32(x)
		}
		return b
	}
	for _, n := range []int{1, 9, 2500} {
		x, y := randF32(r, n, 3), randF32(r, n, 3)
		x[0], y[n-1] = float32(math.Inf(1)), 0
		if n > 2 {
			x[1] = float32(math.NaN())
		}
		for name, f := range ops {
			for _, scalar := range []bool{false, true} {
				for _, level := range levels() {
					d := op.MustLookup(name)
					a, err := d.Normalize(nil)
					if err != nil {
						t.Fatal(err)
					}
					ylay := op.Contiguous([]int{n})
					if scalar {
						ylay = op.Layout{Shape: []int{n}, Strides: []int{0}}
					}
					l := &device.Launch{Op: d, Attrs: a,
						In: []device.Operand{
							{Buf: &Buf{b: bf(x)}, DType: dtype.BF16, Layout: op.Contiguous([]int{n})},
							{Buf: &Buf{b: bf(y)}, DType: dtype.BF16, Layout: ylay}},
						Out: []device.Operand{{Buf: &Buf{b: make([]byte, 2*n)}, DType: dtype.BF16, Layout: op.Contiguous([]int{n})}}}
					ks := ksetFor(level)
					if err := execAt(ks, l, func(b device.Buffer) []byte { return b.(*Buf).b }); err != nil {
						t.Fatal(err)
					}
					got := as[dtype.BFloat16](l.Out[0].Buf.(*Buf).b)
					xb, yb := as[dtype.BFloat16](l.In[0].Buf.(*Buf).b), as[dtype.BFloat16](l.In[1].Buf.(*Buf).b)
					for i := range got {
						yi := yb[i]
						if scalar {
							yi = yb[0]
						}
						want := dtype.BF16FromF32(float32(f(float64(xb[i].F32()), float64(yi.F32()))))
						if got[i] != want && !(got[i].F32() != got[i].F32() && want.F32() != want.F32()) {
							t.Fatalf("%s bf16 %s scalar=%v [%d]: %g, %g -> %g, want %g", level, name, scalar, i, xb[i].F32(), yi.F32(), got[i].F32(), want.F32())
						}
					}
				}
			}
		}
	}
}

// TestVecLayoutIndependent checks that the routed unary kernels give the
// same bits for a transposed view, a broadcast row and the dense copy of
// the same values, at both levels and in f32 and bf16.
func TestVecLayoutIndependent(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(12))
	const rows, cols = 37, 45
	x := randF32(r, rows*cols, 3)
	xt := make([]float32, len(x)) // x^T stored densely: x[i][j] = xt[j*rows+i]
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			xt[j*rows+i] = x[i*cols+j]
		}
	}
	bcast := make([]float32, rows*cols) // row 0 repeated
	for i := range bcast {
		bcast[i] = x[i%cols]
	}
	shape := []int{rows, cols}
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		operand := func(v []float32, lay op.Layout) device.Operand {
			if dt == dtype.F32 {
				return f32Operand(v, lay)
			}
			b := make([]byte, 2*len(v))
			for i, e := range v {
				as[dtype.BFloat16](b)[i] = dtype.BF16FromF32(e)
			}
			return device.Operand{Buf: &Buf{b: b}, DType: dt, Layout: lay}
		}
		run := func(ks *kset, name string, in device.Operand) []byte {
			d := op.MustLookup(name)
			a, err := d.Normalize(nil)
			if err != nil {
				t.Fatal(err)
			}
			n := rows * cols * dt.Size()
			l := &device.Launch{Op: d, Attrs: a, In: []device.Operand{in},
				Out: []device.Operand{{Buf: &Buf{b: make([]byte, n)}, DType: dt, Layout: op.Contiguous(shape)}}}
			if err := execAt(ks, l, func(b device.Buffer) []byte { return b.(*Buf).b }); err != nil {
				t.Fatal(err)
			}
			return l.Out[0].Buf.(*Buf).b
		}
		for _, name := range []string{"exp", "tanh", "erf", "sigmoid", "silu", "gelu"} {
			for _, level := range levels() {
				ks := ksetFor(level)
				dense := run(ks, name, operand(x, op.Contiguous(shape)))
				trans := run(ks, name, operand(xt, op.Layout{Shape: shape, Strides: []int{1, rows}}))
				if string(dense) != string(trans) {
					t.Errorf("%s %s %s: transposed input gives different bits", level, dt, name)
				}
				bd := run(ks, name, operand(bcast, op.Contiguous(shape)))
				bb := run(ks, name, operand(x[:cols], op.Layout{Shape: shape, Strides: []int{0, 1}}))
				if string(bd) != string(bb) {
					t.Errorf("%s %s %s: broadcast input gives different bits", level, dt, name)
				}
			}
		}
	}
}

// TestFusedSoftmaxLayouts checks that f32 softmax and log_softmax give the
// same bits over the last dim of a dense tensor, over the last dim of a
// transposed view of the same values, and over dim 0 of the dense
// transpose (gathered lanes), at both levels.
func TestFusedSoftmaxLayouts(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(13))
	const rows, d = 23, 300
	x := randF32(r, rows*d, 4)
	xt := make([]float32, len(x))
	for i := 0; i < rows; i++ {
		for j := 0; j < d; j++ {
			xt[j*rows+i] = x[i*d+j]
		}
	}
	for _, name := range []string{"softmax", "log_softmax"} {
		for _, level := range levels() {
			ks := ksetFor(level)
			dense := runF32(t, ks, name, op.Attrs{"dim": -1}, []int{rows, d}, f32Operand(x, op.Contiguous([]int{rows, d})))
			view := runF32(t, ks, name, op.Attrs{"dim": -1}, []int{rows, d}, f32Operand(xt, op.Layout{Shape: []int{rows, d}, Strides: []int{1, rows}}))
			dim0 := runF32(t, ks, name, op.Attrs{"dim": 0}, []int{d, rows}, f32Operand(xt, op.Contiguous([]int{d, rows})))
			for i := 0; i < rows; i++ {
				for j := 0; j < d; j++ {
					a, b, c := dense[i*d+j], view[i*d+j], dim0[j*rows+i]
					if math.Float32bits(a) != math.Float32bits(b) || math.Float32bits(a) != math.Float32bits(c) {
						t.Fatalf("%s %s [%d,%d]: dense %g, view %g, dim 0 %g", level, name, i, j, a, b, c)
					}
				}
			}
		}
	}
}
