package cpu

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// sdpaDecomposed evaluates scaled_dot_product_attention's decomposition.
func sdpaDecomposed(t *testing.T, in []*tensor.Tensor, a op.Attrs) *tensor.Tensor {
	return sdpaDecomposeWith(t, tensorBuilder{}, in, a)
}

// sdpaDecomposeWith runs the op's decomposition on in through builder b.
func sdpaDecomposeWith(t *testing.T, b op.Builder, in []*tensor.Tensor, a op.Attrs) *tensor.Tensor {
	t.Helper()
	d := op.MustLookup("scaled_dot_product_attention")
	na, err := d.Normalize(a)
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]op.Value, len(in))
	for i, x := range in {
		if x != nil {
			vals[i] = x
		}
	}
	return d.Decompose(b, vals, na)[0].(*tensor.Tensor)
}

// sdpaDecomposedAt is sdpaDecomposed on the device of ks's level
// (levelDevice), so that its matmuls and softmax run that level's kernels.
func sdpaDecomposedAt(t *testing.T, ks *kset, in []*tensor.Tensor, a op.Attrs) *tensor.Tensor {
	if ks == procKS {
		return sdpaDecomposed(t, in, a)
	}
	dev := levelDevice(ks.level)
	return sdpaDecomposeWith(t, deviceBuilder{dev}, tensorsTo(in, dev), a).To(sdpaCPU())
}

// tensorsTo copies the tensors of in (nil stays nil) to dev.
func tensorsTo(in []*tensor.Tensor, dev device.Device) []*tensor.Tensor {
	on := make([]*tensor.Tensor, len(in))
	for i, x := range in {
		if x != nil {
			on[i] = x.To(dev)
		}
	}
	return on
}

// deviceBuilder is tensorBuilder with the decomposition's constants and
// created tensors moved to dev (tensor.Apply makes them on the default
// device).
type deviceBuilder struct{ dev device.Device }

func (b deviceBuilder) Call(name string, in []op.Value, a op.Attrs) []op.Value {
	out := tensorBuilder{}.Call(name, in, a)
	for _, v := range in {
		if v != nil {
			return out
		}
	}
	for i, v := range out { // a creation op: made on the default device
		out[i] = v.(*tensor.Tensor).To(b.dev)
	}
	return out
}

func (b deviceBuilder) Meta(v op.Value) op.Meta { return tensorBuilder{}.Meta(v) }

func (b deviceBuilder) Scalar(v any, like op.Value) op.Value {
	return tensor.Scalar(v).To(b.dev)
}

// sdpaDirect runs the op through dispatch (the direct kernel for f32) on
// the device of ks's level (levelDevice; the inputs are copied there, the
// output back) and fails unless the kernel ran.
func sdpaDirect(t *testing.T, ks *kset, in []*tensor.Tensor, a op.Attrs) *tensor.Tensor {
	t.Helper()
	dev := sdpaCPU()
	if ks != procKS {
		dev = levelDevice(ks.level)
	}
	on := tensorsTo(in, dev)
	before := sdpaRuns.Load()
	out := tensor.Apply("scaled_dot_product_attention", on, a)[0]
	if sdpaRuns.Load() == before {
		t.Fatalf("the direct kernel did not run")
	}
	return out.To(sdpaCPU())
}

func sdpaCPU() device.Device { return tensor.MustDevice("cpu") }

func sdpaRand(r *rand.Rand, shape ...int) *tensor.Tensor {
	v := make([]float32, op.Numel(shape))
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return tensor.FromSlice(sdpaCPU(), v, shape...)
}

// sdpaClose compares got with want elementwise: NaN where want is NaN,
// equal infinities, else |got-want| <= atol + rtol*|want|; exact demands
// equal bits.
func sdpaClose(t *testing.T, name string, got, want *tensor.Tensor, exact bool, rtol, atol float64) {
	t.Helper()
	if fmt.Sprint(got.Shape()) != fmt.Sprint(want.Shape()) {
		t.Fatalf("%s: shape %v, want %v", name, got.Shape(), want.Shape())
	}
	g, w := got.Float32s(), want.Float32s()
	bad := 0
	for i := range w {
		gv, wv := float64(g[i]), float64(w[i])
		ok := false
		switch {
		case exact:
			ok = math.Float32bits(g[i]) == math.Float32bits(w[i]) || (gv != gv && wv != wv)
		case wv != wv:
			ok = gv != gv
		case math.IsInf(wv, 0):
			ok = gv == wv
		default:
			ok = math.Abs(gv-wv) <= atol+rtol*math.Abs(wv)
		}
		if !ok {
			if bad < 3 {
				t.Errorf("%s: element %d = %v, want %v (exact %v)", name, i, g[i], w[i], exact)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d elements differ", name, bad, len(w))
	}
}

// withSDPABlocks runs fn with the kernel's block sizes set to bq, bk.
func withSDPABlocks(bq, bk int, fn func()) {
	pq, pk := sdpaBlockQ, sdpaBlockK
	sdpaBlockQ, sdpaBlockK = bq, bk
	defer func() { sdpaBlockQ, sdpaBlockK = pq, pk }()
	fn()
}

// TestSDPAShapes compares the kernel with the decomposition over the
// sizes of the issue: L, S in {1, 7, 16, 17, 63, 65, 200}, E in {1, 8, 64,
// 65}, causal or not, at the default block sizes and at small ones (many
// key blocks, ragged edges). One key block runs the exact path, which
// must equal the decomposition bit for bit — except where one of the
// decomposition's matmuls is a matrix-vector product (L, S or the value
// width 1), whose dot form has its own summation order (gemm_gemv.go),
// not the GEMM's in-order chain that the kernel runs: there within
// tolerance.
func TestSDPAShapes(t *testing.T) {
	sizes := []int{1, 7, 16, 17, 63, 65, 200}
	dims := []int{1, 8, 64, 65}
	if testing.Short() {
		sizes = []int{1, 7, 17, 65, 200}
		dims = []int{1, 8, 65}
	}
	for _, lv := range levels() {
		sdpaShapes(t, ksetFor(lv), sizes, dims)
	}
}

func sdpaShapes(t *testing.T, ks *kset, sizes, dims []int) {
	lv := ks.level
	r := rand.New(rand.NewSource(1))
	for _, blocks := range [][2]int{{192, 256}, {12, 32}} {
		withSDPABlocks(blocks[0], blocks[1], func() {
			for _, l := range sizes {
				for _, s := range sizes {
					for _, e := range dims {
						ev := e // 64: V read in place (row-major, a multiple of 16 wide)
						switch e {
						case 8:
							ev = 5 // a value width unlike the key width, V packed
						case 65:
							ev = 32 // V read in place
						}
						q, k, v := sdpaRand(r, 2, l, e), sdpaRand(r, 2, s, e), sdpaRand(r, 2, s, ev)
						for _, causal := range []bool{false, true} {
							a := op.Attrs{"is_causal": causal}
							name := fmt.Sprintf("%s/blocks%v/L%d/S%d/E%d/causal=%v", lv, blocks, l, s, e, causal)
							got := sdpaDirect(t, ks, []*tensor.Tensor{q, k, v, nil}, a)
							want := sdpaDecomposedAt(t, ks, []*tensor.Tensor{q, k, v, nil}, a)
							sdpaClose(t, name, got, want, s <= blocks[1] && l > 1 && s > 1 && ev > 1, 2e-6, 2e-6)
						}
					}
				}
			}
		})
	}
}

// TestSDPAMasks covers bool and float masks broadcast from fewer dims, a
// strided mask, a bf16 mask, GQA, a fully masked row (NaN, as the
// decomposition and PyTorch give), scale, strided q/k/v and batch
// broadcasting between q, k and v.
func TestSDPAMasks(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	const b, h, l, s, e = 2, 4, 37, 70, 16
	boolMask := func(p float64, shape ...int) *tensor.Tensor {
		v := make([]bool, op.Numel(shape))
		for i := range v {
			v[i] = r.Float64() < p
		}
		return tensor.FromSlice(sdpaCPU(), v, shape...)
	}
	floatMask := func(shape ...int) *tensor.Tensor {
		v := make([]float32, op.Numel(shape))
		for i := range v {
			v[i] = float32(r.NormFloat64())
			if r.Intn(7) == 0 {
				v[i] = float32(math.Inf(-1))
			}
		}
		return tensor.FromSlice(sdpaCPU(), v, shape...)
	}
	// A [l, s] mask whose row 3 masks every key.
	dead := func() *tensor.Tensor {
		v := make([]bool, l*s)
		for i := range v {
			v[i] = i/s != 3 && r.Intn(3) > 0
		}
		return tensor.FromSlice(sdpaCPU(), v, l, s)
	}
	q4, k4, v4 := sdpaRand(r, b, h, l, e), sdpaRand(r, b, h, s, e), sdpaRand(r, b, h, s, 24)
	cases := []struct {
		name    string
		q, k, v *tensor.Tensor
		mask    *tensor.Tensor
		a       op.Attrs
	}{
		{"bool[L,S]", q4, k4, v4, boolMask(0.7, l, s), nil},
		{"bool[B,1,L,S]", q4, k4, v4, boolMask(0.5, b, 1, l, s), op.Attrs{"is_causal": true}},
		{"bool[S]", q4, k4, v4, boolMask(0.8, s), nil},
		{"bool[H,1,1]", q4, k4, v4, boolMask(0.6, h, 1, 1), nil},
		{"float[L,S]", q4, k4, v4, floatMask(l, s), nil},
		{"float[B,H,L,S]", q4, k4, v4, floatMask(b, h, l, s), op.Attrs{"is_causal": true, "scale": 0.3}},
		{"float[L,1]", q4, k4, v4, floatMask(l, 1), nil},
		{"float[S,L]ᵀ", q4, k4, v4, floatMask(s, l).Transpose(0, 1), nil},
		{"bf16[L,S]", q4, k4, v4, tensor.Apply1("convert", []*tensor.Tensor{floatMask(l, s)}, op.Attrs{"dtype": dtype.BF16}), nil},
		{"dead row", q4, k4, v4, dead(), nil},
		{"dead row causal", q4, k4, v4, dead(), op.Attrs{"is_causal": true}},
		{"gqa", q4, sdpaRand(r, b, 2, s, e), sdpaRand(r, b, 1, s, 9), boolMask(0.7, l, s), op.Attrs{"enable_gqa": true}},
		{"gqa causal", q4, sdpaRand(r, b, 1, s, e), sdpaRand(r, b, 2, s, 9), nil, op.Attrs{"enable_gqa": true, "is_causal": true}},
		{"strided q,k,v", sdpaRand(r, b, l, h, e).Transpose(1, 2), sdpaRand(r, b, s, h, e).Transpose(1, 2),
			sdpaRand(r, b, h, 24, s).Transpose(2, 3), nil, op.Attrs{"is_causal": true}},
		{"broadcast batch", sdpaRand(r, 3, 1, l, e), sdpaRand(r, 1, h, s, e), sdpaRand(r, h, s, 7), floatMask(3, 1, l, s), nil},
		{"L>S causal", sdpaRand(r, 2, 150, e), sdpaRand(r, 2, 40, e), sdpaRand(r, 2, 40, 3), nil, op.Attrs{"is_causal": true}},
	}
	for _, lv := range levels() {
		for _, blocks := range [][2]int{{192, 256}, {12, 16}} {
			ks := ksetFor(lv)
			withSDPABlocks(blocks[0], blocks[1], func() {
				for _, c := range cases {
					a := op.Attrs{}
					for k, v := range c.a {
						a[k] = v
					}
					in := []*tensor.Tensor{c.q, c.k, c.v, c.mask}
					got := sdpaDirect(t, ks, in, a)
					want := sdpaDecomposedAt(t, ks, in, a)
					sdpaClose(t, fmt.Sprintf("%s/%s/blocks%v", lv, c.name, blocks), got, want, false, 2e-6, 2e-6)
				}
			})
		}
	}
	// The fully masked row is NaN, the others are not.
	out := sdpaDirect(t, procKS, []*tensor.Tensor{q4, k4, v4, dead()}, op.Attrs{}).Float32s()
	for i, x := range out {
		if row := i / 24 % l; (x != x) != (row == 3) {
			t.Fatalf("dead row: element %d (row %d) = %v", i, row, x)
		}
	}
}

// TestSDPANonFinite puts NaN and Inf in q, k and v: the kernel gives NaN
// where the decomposition does (a NaN or Inf in V poisons its column for
// every query row, even rows that mask that key, because the weights
// multiply it by zero).
func TestSDPANonFinite(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	const l, s, e, ev = 40, 150, 8, 16 // V read in place
	set := func(x *tensor.Tensor, i int, v float32) *tensor.Tensor {
		d := x.Float32s()
		d[i] = v
		return tensor.FromSlice(sdpaCPU(), d, x.Shape()...)
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	q, k, v := sdpaRand(r, l, e), sdpaRand(r, s, e), sdpaRand(r, s, ev)
	cases := []struct {
		name    string
		q, k, v *tensor.Tensor
	}{
		{"q NaN", set(q, 5*e+2, nan), k, v},
		{"q Inf", set(q, 7*e, inf), k, v},
		{"q -Inf", set(q, 7*e, -inf), k, v},
		{"k NaN early", q, set(k, 3*e+1, nan), v},
		{"k NaN late", q, set(k, 140*e+1, nan), v},
		{"k Inf late", q, set(k, 130*e, inf), v},
		{"v NaN late", q, k, set(v, 140*ev+3, nan)},
		{"v Inf early", q, k, set(v, 2*ev+4, inf)},
		{"v -Inf late", q, k, set(v, 149*ev, -inf)},
		{"vᵀ NaN late", q, k, set(v, 140*ev+3, nan).Transpose(0, 1).Contiguous().Transpose(0, 1)},
	}
	// A KV cache's mask: row i attends keys j <= i+60, so keys past 100
	// weigh zero in every row (a late NaN or Inf in V must still reach
	// the output, as 0*NaN does in the decomposition).
	mb := make([]bool, l*s)
	for i := range l {
		for j := 0; j <= i+60; j++ {
			mb[i*s+j] = true
		}
	}
	prefix := tensor.FromSlice(sdpaCPU(), mb, l, s)
	for _, blocks := range [][2]int{{192, 256}, {12, 32}} {
		withSDPABlocks(blocks[0], blocks[1], func() {
			for _, c := range cases {
				for _, causal := range []bool{false, true} {
					for _, mask := range []*tensor.Tensor{nil, prefix} {
						a := op.Attrs{"is_causal": causal}
						in := []*tensor.Tensor{c.q, c.k, c.v, mask}
						got := sdpaDirect(t, procKS, in, a)
						want := sdpaDecomposed(t, in, a)
						sdpaClose(t, fmt.Sprintf("%s/causal=%v/mask=%v/blocks%v", c.name, causal, mask != nil, blocks), got, want, false, 2e-6, 2e-6)
					}
				}
			}
		})
	}
}

// TestSDPADropout checks that with dropout_p > 0 the kernel equals the
// decomposition bit for bit for the same seed (the same dropped weights),
// and that different seeds differ.
func TestSDPADropout(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	q, k, v := sdpaRand(r, 2, 3, 50, 16), sdpaRand(r, 2, 3, 300, 16), sdpaRand(r, 2, 3, 300, 10)
	mask := tensor.FromSlice(sdpaCPU(), []bool{true, false, true}, 3, 1, 1)
	for _, p := range []float64{0.1, 0.5, 0.9, 1} {
		for _, causal := range []bool{false, true} {
			a := op.Attrs{"dropout_p": p, "is_causal": causal, "seed": int64(1234), "offset": int64(56)}
			in := []*tensor.Tensor{q, k, v, mask}
			got := sdpaDirect(t, procKS, in, a)
			want := sdpaDecomposed(t, in, a)
			sdpaClose(t, fmt.Sprintf("p=%v/causal=%v", p, causal), got, want, true, 0, 0)
		}
	}
	a1 := op.Attrs{"dropout_p": 0.5, "seed": int64(1)}
	a2 := op.Attrs{"dropout_p": 0.5, "seed": int64(2)}
	x1 := sdpaDirect(t, procKS, []*tensor.Tensor{q, k, v, nil}, a1).Float32s()
	x2 := sdpaDirect(t, procKS, []*tensor.Tensor{q, k, v, nil}, a2).Float32s()
	same := 0
	for i := range x1 {
		if x1[i] == x2[i] {
			same++
		}
	}
	if same == len(x1) {
		t.Errorf("seeds 1 and 2 gave the same output")
	}
}

// TestSDPAFlashLong compares the flash path with the exact path (the
// decomposition's arithmetic) over long sequences, where the online
// softmax rescales the accumulator across many key blocks.
func TestSDPAFlashLong(t *testing.T) {
	n := 2048
	if testing.Short() {
		n = 1024
	}
	r := rand.New(rand.NewSource(11))
	in := []*tensor.Tensor{sdpaRand(r, 2, n, 64), sdpaRand(r, 2, n, 64), sdpaRand(r, 2, n, 64), nil}
	for _, lv := range levels() {
		ks := ksetFor(lv)
		for _, causal := range []bool{false, true} {
			a := op.Attrs{"is_causal": causal}
			got := sdpaDirect(t, ks, in, a)
			sdpaFlashOff = true
			want := sdpaDirect(t, ks, in, a)
			sdpaFlashOff = false
			sdpaClose(t, fmt.Sprintf("%s/L=S=%d/causal=%v", lv, n, causal), got, want, false, 2e-6, 2e-6)
		}
	}
}

// TestSDPAThreadsInvariant checks that the result does not depend on the
// thread count (which changes the query blocks, not the key blocks).
func TestSDPAThreadsInvariant(t *testing.T) {
	r := rand.New(rand.NewSource(12))
	in := []*tensor.Tensor{sdpaRand(r, 3, 700, 40), sdpaRand(r, 3, 900, 40), sdpaRand(r, 3, 900, 24), nil}
	a := op.Attrs{"is_causal": true}
	prev := runtime.GOMAXPROCS(1)
	one := sdpaDirect(t, procKS, in, a)
	runtime.GOMAXPROCS(7)
	seven := sdpaDirect(t, procKS, in, a)
	runtime.GOMAXPROCS(prev)
	sdpaClose(t, "GOMAXPROCS 1 vs 7", seven, one, true, 0, 0)
}

// TestSDPAExactPath runs every call on the exact path (sdpaFlashOff): it
// equals the decomposition bit for bit however many key blocks there are.
func TestSDPAExactPath(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	prev := sdpaFlashOff
	sdpaFlashOff = true
	defer func() { sdpaFlashOff = prev }()
	mask := func() *tensor.Tensor {
		v := make([]float32, 45*300)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return tensor.FromSlice(sdpaCPU(), v, 45, 300)
	}()
	for _, causal := range []bool{false, true} {
		in := []*tensor.Tensor{sdpaRand(r, 3, 45, 33), sdpaRand(r, 3, 300, 33), sdpaRand(r, 3, 300, 17), mask}
		a := op.Attrs{"is_causal": causal}
		sdpaClose(t, fmt.Sprintf("causal=%v", causal), sdpaDirect(t, procKS, in, a), sdpaDecomposed(t, in, a), true, 0, 0)
	}
}

// TestSDPARowPath checks the row path (at most sdpaRowMaxL query rows,
// the decode shapes) against the decomposition bit for bit (within
// tolerance at L or S = 1, as in TestSDPAShapes): K and V row-major or
// contiguous along S, masks, causal, GQA, dropout.
func TestSDPARowPath(t *testing.T) {
	if gemvAsmF32 == nil || !procKS.atLeast(LevelAVX2) {
		t.Skip("no gemv kernels at this CPU level")
	}
	r := rand.New(rand.NewSource(10))
	for _, l := range []int{1, 3, sdpaRowMaxL} {
		for _, s := range []int{1, 7, 16, 17, 300, 600} {
			for _, e := range []int{1, 8, 65, 128} {
				mask := func() *tensor.Tensor {
					v := make([]bool, l*s)
					for i := range v {
						v[i] = r.Intn(4) > 0 || i%s == 0
					}
					return tensor.FromSlice(sdpaCPU(), v, l, s)
				}()
				cases := []struct {
					name    string
					q, k, v *tensor.Tensor
					mask    *tensor.Tensor
					a       op.Attrs
				}{
					{"plain", sdpaRand(r, 2, 3, l, e), sdpaRand(r, 2, 3, s, e), sdpaRand(r, 2, 3, s, 20), nil, op.Attrs{}},
					{"causal mask", sdpaRand(r, 2, l, e), sdpaRand(r, 2, s, e), sdpaRand(r, 2, s, 9), mask, op.Attrs{"is_causal": true}},
					{"kᵀ vᵀ", sdpaRand(r, 2, l, e), sdpaRand(r, 2, e, s).Transpose(1, 2), sdpaRand(r, 2, 17, s).Transpose(1, 2), nil, op.Attrs{"scale": 0.7}},
					{"gqa", sdpaRand(r, 1, 4, l, e), sdpaRand(r, 1, 2, s, e), sdpaRand(r, 1, 2, s, 8), nil, op.Attrs{"enable_gqa": true}},
					{"dropout", sdpaRand(r, 2, l, e), sdpaRand(r, 2, s, e), sdpaRand(r, 2, s, 8), mask,
						op.Attrs{"dropout_p": 0.3, "seed": int64(9), "offset": int64(3)}},
				}
				for _, c := range cases {
					in := []*tensor.Tensor{c.q, c.k, c.v, c.mask}
					before := sdpaRowRuns.Load()
					got := sdpaDirect(t, procKS, in, c.a)
					if sdpaRowRuns.Load() == before {
						t.Fatalf("L%d S%d E%d %s: the row path did not run", l, s, e, c.name)
					}
					sdpaClose(t, fmt.Sprintf("L%d/S%d/E%d/%s", l, s, e, c.name), got, sdpaDecomposed(t, in, c.a), l > 1 && s > 1, 2e-6, 2e-6)
				}
			}
		}
	}
}

// TestSDPAEdges covers empty dims and E = 0.
func TestSDPAEdges(t *testing.T) {
	r := rand.New(rand.NewSource(6))
	for _, c := range []struct{ l, s, e, ev int }{{0, 5, 4, 3}, {5, 0, 4, 3}, {5, 6, 4, 0}, {5, 6, 0, 3}, {5, 300, 0, 3}} {
		in := []*tensor.Tensor{sdpaRand(r, 2, c.l, c.e), sdpaRand(r, 2, c.s, c.e), sdpaRand(r, 2, c.s, c.ev), nil}
		got := tensor.Apply("scaled_dot_product_attention", in, nil)[0]
		want := sdpaDecomposed(t, in, op.Attrs{})
		sdpaClose(t, fmt.Sprintf("%+v", c), got, want, false, 2e-6, 2e-6)
	}
}

// TestSDPAGradUsesDecomposition checks that with gradients required the
// op runs its decomposition (the kernel has no VJP) and that the gradient
// flows.
func TestSDPAGradUsesDecomposition(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	q := sdpaRand(r, 2, 20, 8).SetRequiresGrad(true)
	k, v := sdpaRand(r, 2, 150, 8), sdpaRand(r, 2, 150, 8)
	before := sdpaRuns.Load()
	out := tensor.ScaledDotProductAttention(q, k, v, tensor.SDPAOpts{IsCausal: true})
	if sdpaRuns.Load() != before {
		t.Fatalf("the kernel ran although q requires grad")
	}
	out.Sum(nil, false).Backward()
	if q.Grad() == nil {
		t.Fatalf("no gradient for q")
	}
}

// TestSDPAMemory measures L = S = 4096, E = 64, one head: the kernel
// allocates no device memory beyond its output (the backend's peak counter)
// and O(S·E) Go memory for its packed K, V and per-thread blocks, where
// the decomposition's peak holds L×S score matrices.
func TestSDPAMemory(t *testing.T) {
	const n, e = 4096, 64
	be, err := device.Lookup("cpu")
	if err != nil {
		t.Fatal(err)
	}
	cb := be.(*Backend)
	r := rand.New(rand.NewSource(8))
	q, k, v := sdpaRand(r, 1, n, e), sdpaRand(r, 1, n, e), sdpaRand(r, 1, n, e)
	in := []*tensor.Tensor{q, k, v, nil}
	measure := func(run func() *tensor.Tensor) (peak, heap int64) {
		runtime.GC()
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		cb.ResetPeakMemory(0)
		base := cb.MemStats(0).Allocated
		out := run()
		peak = cb.MemStats(0).PeakAllocated - base
		runtime.ReadMemStats(&ms1)
		out.Free()
		return peak, int64(ms1.TotalAlloc - ms0.TotalAlloc)
	}
	for _, causal := range []bool{false, true} {
		a := op.Attrs{"is_causal": causal}
		peak, heap := measure(func() *tensor.Tensor { return sdpaDirect(t, procKS, in, a) })
		t.Logf("kernel causal=%v: device peak %d KiB, Go heap allocated %d KiB", causal, peak>>10, heap>>10)
		outBytes := int64(n * e * 4)
		if peak > outBytes {
			t.Errorf("kernel: device peak %d bytes, want at most the output's %d", peak, outBytes)
		}
		// K and V packed (2·S·E), per-thread blocks and the output: far
		// below one L×S f32 matrix (64 MiB).
		if lim := int64(8*n*e*4) + int64(runtime.GOMAXPROCS(0))<<20; heap > lim {
			t.Errorf("kernel: %d bytes of Go memory allocated, want at most %d (O(S·E))", heap, lim)
		}
	}
	if testing.Short() {
		return
	}
	peak, _ := measure(func() *tensor.Tensor { return sdpaDecomposed(t, in, op.Attrs{}) })
	t.Logf("decomposition: device peak %d MiB", peak>>20)
	if peak < int64(n*n*4) {
		t.Errorf("decomposition peak %d bytes, expected at least one L×S matrix", peak)
	}
}

// BenchmarkSDPA times the kernel (flash and exact paths) and the
// decomposition at L = S in {512, 2048}, E = 64, 8 heads.
func BenchmarkSDPA(b *testing.B) {
	r := rand.New(rand.NewSource(9))
	for _, n := range []int{512, 2048} {
		q, k, v := sdpaRand(r, 1, 8, n, 64), sdpaRand(r, 1, 8, n, 64), sdpaRand(r, 1, 8, n, 64)
		in := []*tensor.Tensor{q, k, v, nil}
		for _, causal := range []bool{false, true} {
			a := op.Attrs{"is_causal": causal}
			flops := float64(8*n*n*64*4) / map[bool]float64{false: 1, true: 2}[causal]
			for _, impl := range []string{"flash", "exact", "decomposed"} {
				b.Run(fmt.Sprintf("L%d/causal=%v/%s", n, causal, impl), func(b *testing.B) {
					prev := sdpaFlashOff
					sdpaFlashOff = impl == "exact"
					defer func() { sdpaFlashOff = prev }()
					for i := 0; i < b.N; i++ {
						var out *tensor.Tensor
						if impl == "decomposed" {
							out = sdpaDecomposed(&testing.T{}, in, a)
						} else {
							out = tensor.Apply("scaled_dot_product_attention", in, a)[0]
						}
						out.Free()
					}
					b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

// TestSDPARowCut: a decode step's row (keys past the written cache slots
// masked off, or is_causal) skips those keys, with the bits of the full row.
func TestSDPARowCut(t *testing.T) {
	if gemvAsmF32 == nil || !procKS.atLeast(LevelAVX2) {
		t.Skip("no gemv kernels at this CPU level")
	}
	r := rand.New(rand.NewSource(12))
	for _, s := range []int{5, 17, 160, 600} {
		for _, valid := range []int{1, s / 3, s - 1, s} {
			v := make([]bool, s)
			for i := range valid {
				v[i] = r.Intn(5) > 0 || i == 0
			}
			mask := tensor.FromSlice(sdpaCPU(), v, 1, s)
			cases := []struct {
				name    string
				q, k, v *tensor.Tensor
				mask    *tensor.Tensor
				a       op.Attrs
			}{
				{"gqa mask", sdpaRand(r, 1, 9, 1, 64), sdpaRand(r, 1, 3, s, 64), sdpaRand(r, 1, 3, s, 64), mask, op.Attrs{"enable_gqa": true}},
				{"causal", sdpaRand(r, 2, 3, 64), sdpaRand(r, 2, s, 64), sdpaRand(r, 2, s, 20), nil, op.Attrs{"is_causal": true}},
				{"all masked", sdpaRand(r, 2, 1, 8), sdpaRand(r, 2, s, 8), sdpaRand(r, 2, s, 8), tensor.FromSlice(sdpaCPU(), make([]bool, s), 1, s), op.Attrs{}},
			}
			for _, c := range cases {
				in := []*tensor.Tensor{c.q, c.k, c.v, c.mask}
				got := sdpaDirect(t, procKS, in, c.a).Float32s()
				sdpaCut = false
				want := sdpaDirect(t, procKS, in, c.a).Float32s()
				sdpaCut = true
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("S%d valid %d %s: out[%d] = %g, the full row gives %g", s, valid, c.name, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestSDPAGroupedRows checks that scoring grouped-query heads together
// (rowGroup's shared key blocks) gives the bits of scoring each head
// alone: query-head groups of 2, 3 and 4 (run as 3+1) per key head,
// several query rows, key counts around the 16-row blocks, per-head masks
// that cut rows at different keys, and E at and past the 16-wide step.
func TestSDPAGroupedRows(t *testing.T) {
	if sdpaDot3 == nil || gemvAsmF32 == nil || !procKS.atLeast(LevelAVX2) {
		t.Skip("no grouped kernel at this CPU level")
	}
	r := rand.New(rand.NewSource(13))
	ran := sdpaGroupRuns.Load()
	for _, c := range []struct{ heads, kv, l, s, e int }{
		{9, 3, 1, 192, 64}, {9, 3, 1, 17, 64}, {8, 2, 2, 40, 8}, {4, 1, 1, 160, 24},
		{6, 3, 3, 33, 128}, {6, 2, 1, 15, 64}, {3, 3, 1, 50, 64},
	} {
		for _, perHead := range []bool{false, true} {
			mh := 1
			if perHead {
				mh = c.heads
			}
			mv := make([]bool, mh*c.l*c.s)
			for h := range mh {
				valid := c.s - r.Intn(c.s/2+1)
				for i := range c.l {
					for j := range valid {
						mv[(h*c.l+i)*c.s+j] = r.Intn(6) > 0 || j == 0
					}
				}
			}
			mask := tensor.FromSlice(sdpaCPU(), mv, mh, c.l, c.s)
			in := []*tensor.Tensor{sdpaRand(r, 1, c.heads, c.l, c.e), sdpaRand(r, 1, c.kv, c.s, c.e), sdpaRand(r, 1, c.kv, c.s, 40), mask}
			a := op.Attrs{"enable_gqa": true}
			got := sdpaDirect(t, procKS, in, a).Float32s()
			sdpaGroup = false
			want := sdpaDirect(t, procKS, in, a).Float32s()
			sdpaGroup = true
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%+v perHead=%v: out[%d] = %g, one head at a time gives %g", c, perHead, i, got[i], want[i])
				}
			}
		}
	}
	if sdpaGroupRuns.Load() == ran {
		t.Fatal("no row group ran")
	}
}

// TestSDPABlockCut: the tiled paths (exact: one key block; flash: several)
// stop each row group or query block after the last key its rows attend
// under a boolean mask (a KV cache's, with holes) or is_causal, with the
// bits of computing every key; a NaN in V past the cut still reaches the
// output as the full chain gives it.
func TestSDPABlockCut(t *testing.T) {
	r := rand.New(rand.NewSource(14))
	const l, s = 50, 90
	mb := make([]bool, l*s)
	for i := range l {
		for j := 0; j <= i+20; j++ {
			mb[i*s+j] = r.Intn(6) > 0 || j == 0
		}
	}
	cacheMask := tensor.FromSlice(sdpaCPU(), mb, l, s)
	v := sdpaRand(r, 2, s, 24)
	vd := v.Float32s()
	vd[s*24-5] = float32(math.NaN())   // key s-1 of head 0: masked in every row
	vd[2*s*24-5] = float32(math.NaN()) // and of head 1
	vNaN := tensor.FromSlice(sdpaCPU(), vd, 2, s, 24)
	for _, blocks := range [][2]int{{192, 256}, {12, 32}} {
		withSDPABlocks(blocks[0], blocks[1], func() {
			for _, c := range []struct {
				name string
				v    *tensor.Tensor
				mask *tensor.Tensor
				a    op.Attrs
			}{
				{"cache mask", v, cacheMask, op.Attrs{}},
				{"cache mask, causal", v, cacheMask, op.Attrs{"is_causal": true}},
				{"causal", v, nil, op.Attrs{"is_causal": true}},
				{"cache mask, NaN in V past the cut", vNaN, cacheMask, op.Attrs{}},
			} {
				in := []*tensor.Tensor{sdpaRand(r, 2, l, 16), sdpaRand(r, 2, s, 16), c.v, c.mask}
				cuts := sdpaCuts.Load()
				got := sdpaDirect(t, procKS, in, c.a).Float32s()
				// The cache mask's rows end at key i+20 < S, and is_causal's
				// at i: a group (exact path) or a block under the mask
				// (flash; is_causal alone skips whole blocks there) stops
				// early unless V is not finite past the cut.
				wantCut := c.v == v && (c.mask != nil || blocks[1] == 256)
				if cut := sdpaCuts.Load() > cuts; cut != wantCut {
					t.Errorf("blocks %v %s: cut ran %v, want %v", blocks, c.name, cut, wantCut)
				}
				sdpaCut = false
				want := sdpaDirect(t, procKS, in, c.a).Float32s()
				sdpaCut = true
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
						t.Fatalf("blocks %v %s: out[%d] = %g, every key gives %g", blocks, c.name, i, got[i], want[i])
					}
				}
			}
		})
	}
}
