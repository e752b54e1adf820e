package quant

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

var weightTypes = []Type{Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K}

var allTypes = []Type{Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q4_K, Q5_K, Q6_K, Q8_K}

// levels returns the kernels of every level this CPU runs and logs the
// ones it cannot.
func levels(t *testing.T) []Kernels {
	t.Helper()
	var out []Kernels
	have := Levels()
	for _, l := range allLevels {
		if !slices.Contains(have, l) {
			t.Logf("level %s: not supported by this CPU, not run", l)
			continue
		}
		out = append(out, For(l))
	}
	return out
}

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("golden data (tools/quant/gen_golden.py): %v", err)
	}
	return b
}

func goldenInput(t *testing.T) []float32 {
	raw := readGolden(t, "input.f32")
	x := make([]float32, len(raw)/4)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return x
}

// TestQuantizeRowGolden compares QuantizeRow with the gguf Python
// package's numpy ports of ggml's reference quantizers, byte for byte.
func TestQuantizeRowGolden(t *testing.T) {
	x := goldenInput(t)
	for _, typ := range []Type{Q4_0, Q4_1, Q5_0, Q5_1, Q8_0} {
		t.Run(typ.String(), func(t *testing.T) {
			want := readGolden(t, typ.String()+".bin")
			rb, err := RowBytes(typ, len(x))
			if err != nil {
				t.Fatal(err)
			}
			got := make([]byte, rb)
			if err := QuantizeRow(typ, x, got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				ts := typ.TypeSize()
				for b := 0; b < len(got)/ts; b++ {
					if !bytes.Equal(got[b*ts:(b+1)*ts], want[b*ts:(b+1)*ts]) {
						t.Fatalf("block %d differs:\n got %x\nwant %x", b, got[b*ts:(b+1)*ts], want[b*ts:(b+1)*ts])
					}
				}
			}
		})
	}
}

// TestQuantizeRoundTrip checks every type's quantizer against its
// dequantizer: the error of each element is bounded by the block's scale.
func TestQuantizeRoundTrip(t *testing.T) {
	x := goldenInput(t)
	// Worst error relative to the block's largest magnitude (levels of
	// the type; K types carry an extra 6-bit scale quantization and a
	// weighted fit, so they get a looser bound).
	tol := map[Type]float64{Q4_0: 1.0 / 8, Q4_1: 1.0 / 15, Q5_0: 1.0 / 16, Q5_1: 1.0 / 31, Q8_0: 1.0 / 127, Q8_1: 1.0 / 127,
		Q4_K: 0.25, Q5_K: 0.12, Q6_K: 0.06, Q8_K: 1.0 / 127}
	for _, typ := range allTypes {
		t.Run(typ.String(), func(t *testing.T) {
			rb, _ := RowBytes(typ, len(x))
			q := make([]byte, rb)
			if err := QuantizeRow(typ, x, q); err != nil {
				t.Fatal(err)
			}
			y := make([]float32, len(x))
			if err := DequantizeRow(typ, q, y); err != nil {
				t.Fatal(err)
			}
			bs := typ.BlockSize()
			for b := 0; b < len(x)/bs; b++ {
				var amax float64
				for _, v := range x[b*bs : (b+1)*bs] {
					amax = max(amax, math.Abs(float64(v)))
				}
				for j := b * bs; j < (b+1)*bs; j++ {
					if e := math.Abs(float64(y[j] - x[j])); e > tol[typ]*amax*1.01+1e-30 {
						t.Fatalf("element %d: %g dequantizes to %g (error %g > %g × block max %g)", j, x[j], y[j], e, tol[typ], amax)
					}
				}
			}
		})
	}
}

func TestQuantizeErrors(t *testing.T) {
	cases := []struct {
		name string
		t    Type
		n    int
		dst  int
		bad  bool
	}{
		{"unsupported", Type(1), 32, 64, false},
		{"partial block", Q4_0, 31, 18, false},
		{"short dst", Q4_0, 32, 17, false},
		{"long dst", Q8_K, 256, 293, false},
		{"nan", Q8_0, 32, 34, true},
	}
	for _, c := range cases {
		src := make([]float32, c.n)
		if c.bad {
			src[3] = float32(math.NaN())
		}
		if err := QuantizeRow(c.t, src, make([]byte, c.dst)); err == nil {
			t.Errorf("%s: QuantizeRow succeeded", c.name)
		}
	}
	if err := DequantizeRow(Q4_K, make([]byte, 143), make([]float32, 256)); err == nil {
		t.Error("DequantizeRow with a short source succeeded")
	}
	if _, err := RowBytes(Q6_K, 100); err == nil {
		t.Error("RowBytes(Q6_K, 100) succeeded")
	}
	if rb, err := RowBytes(Q6_K, 512); err != nil || rb != 420 {
		t.Errorf("RowBytes(Q6_K, 512) = %d, %v; want 420", rb, err)
	}
}

// randWeights returns n rows of k values with a per-row scale and a few
// outliers, and their quantization to t.
func randWeights(r *rand.Rand, t Type, n, k int) ([]float32, []byte) {
	w := make([]float32, n*k)
	for j := range n {
		s := float32(math.Exp(r.NormFloat64()))
		for p := range k {
			w[j*k+p] = float32(r.NormFloat64()) * s * 0.05
		}
		w[j*k+r.IntN(k)] *= 8
	}
	rb, _ := RowBytes(t, k)
	q := make([]byte, n*rb)
	for j := range n {
		if err := QuantizeRow(t, w[j*k:(j+1)*k], q[j*rb:(j+1)*rb]); err != nil {
			panic(err)
		}
	}
	return w, q
}

func randActs(r *rand.Rand, m, k int) []float32 {
	x := make([]float32, m*k)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	if len(x) > 5 {
		x[5] = 9 // an outlier
	}
	return x
}

// goPar splits [0,total) into up to 3 ranges run concurrently.
func goPar(total int, fn func(lo, hi int)) {
	var wg sync.WaitGroup
	parts := 3
	for p := range parts {
		lo, hi := total*p/parts, total*(p+1)/parts
		if lo < hi {
			wg.Go(func() { fn(lo, hi) })
		}
	}
	wg.Wait()
}

type shape struct{ m, n, k int }

func shapesFor(t Type) []shape {
	if t.BlockSize() == 256 {
		return []shape{{1, 1, 256}, {1, 37, 512}, {1, 64, 1536}, {3, 21, 256}, {5, 40, 768}, {4, 9, 256}, {9, 35, 512}}
	}
	// m 8..15: the 4x8 GEMM kernels, then 4x4 and single rows, over
	// several blocks.
	return []shape{{1, 1, 32}, {1, 37, 96}, {1, 64, 576}, {3, 21, 64}, {5, 40, 160}, {2, 70, 1536}, {4, 37, 96}, {6, 23, 64}, {9, 50, 32},
		{8, 12, 160}, {15, 22, 96}}
}

// TestMatMulModel checks every level's MatMul against the exact model of
// ggml's generic vec_dot, bit for bit, in GEMV and GEMM shapes, serially and
// with a parallel split.
func TestMatMulModel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	ks := levels(t)
	for _, typ := range weightTypes {
		at, _ := ActType(typ)
		for _, sh := range shapesFor(typ) {
			_, wq := randWeights(r, typ, sh.n, sh.k)
			x := randActs(r, sh.m, sh.k)
			rb, _ := RowBytes(typ, sh.k)
			arb, _ := RowBytes(at, sh.k)
			want := make([]float32, sh.m*sh.n)
			ya := make([]byte, arb)
			for i := range sh.m {
				if err := QuantizeRow(at, x[i*sh.k:(i+1)*sh.k], ya); err != nil {
					t.Fatal(err)
				}
				for j := range sh.n {
					want[i*sh.n+j] = modelDot(typ, wq[j*rb:(j+1)*rb], ya, sh.k, false)
				}
			}
			for _, kern := range ks {
				for _, par := range []func(int, func(int, int)){nil, goPar} {
					got := make([]float32, sh.m*sh.n)
					if err := kern.MatMul(typ, wq, sh.n, sh.k, x, sh.m, got, par); err != nil {
						t.Fatal(err)
					}
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%v %s m=%d n=%d k=%d par=%v: y[%d] = %g (%#x), model %g (%#x)", typ, kern.Level(), sh.m, sh.n, sh.k,
								par != nil, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
						}
					}
				}
			}
		}
	}
}

// TestMatMulVsF32 compares MatMul with the float64 product of the
// dequantized weight and the unquantized activations. The difference comes
// from quantizing the activations: element p's error is at most 0.5 of its
// block's activation scale, plus the scale's own rounding to half precision
// (Q8_0, Q8_1: at most 127·2^-11 of it), so the bound per output is
// Σ|w_p|·0.57·d_block(p) plus float32 rounding (1e-5 of Σ|w_p·x_p|).
func TestMatMulVsF32(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	kern := For(LevelAVX512BF16)
	for _, typ := range weightTypes {
		sh := shape{2, 33, 512}
		_, wq := randWeights(r, typ, sh.n, sh.k)
		x := randActs(r, sh.m, sh.k)
		rb, _ := RowBytes(typ, sh.k)
		wd := make([]float32, sh.n*sh.k)
		for j := range sh.n {
			if err := DequantizeRow(typ, wq[j*rb:(j+1)*rb], wd[j*sh.k:(j+1)*sh.k]); err != nil {
				t.Fatal(err)
			}
		}
		at, _ := ActType(typ)
		a := newActs(at, x, sh.m, sh.k, nil, 0, true)
		got := make([]float32, sh.m*sh.n)
		if err := kern.MatMul(typ, wq, sh.n, sh.k, x, sh.m, got, nil); err != nil {
			t.Fatal(err)
		}
		bs := at.BlockSize()
		for i := range sh.m {
			for j := range sh.n {
				var ref, bound, mag float64
				for p := range sh.k {
					wv, xv := float64(wd[j*sh.k+p]), float64(x[i*sh.k+p])
					ref += wv * xv
					mag += math.Abs(wv * xv)
					bound += math.Abs(wv) * 0.57 * math.Abs(float64(a.d[i*a.nb+p/bs]))
				}
				bound += 1e-5 * mag
				if e := math.Abs(float64(got[i*sh.n+j]) - ref); e > bound {
					t.Errorf("%v: y[%d,%d] = %g, f64 reference %g: error %g > bound %g", typ, i, j, got[i*sh.n+j], ref, e, bound)
				}
			}
		}
	}
}

func TestMatMulErrors(t *testing.T) {
	k := For(LevelGeneric)
	w := make([]byte, 4*18)
	x := make([]float32, 64)
	y := make([]float32, 8)
	cases := []struct {
		name string
		f    func() error
	}{
		{"activation type", func() error { return k.MatMul(Q8_K, w, 4, 32, x, 1, y, nil) }},
		{"partial block", func() error { return k.MatMul(Q4_0, w, 4, 30, x, 1, y, nil) }},
		{"short weight", func() error { return k.MatMul(Q4_0, w[:70], 4, 32, x, 1, y, nil) }},
		{"short x", func() error { return k.MatMul(Q4_0, w, 2, 64, x, 2, y, nil) }},
		{"short y", func() error { return k.MatMul(Q4_0, w, 4, 32, x, 2, y[:7], nil) }},
		{"negative", func() error { return k.MatMul(Q4_0, w, -1, 32, x, 1, y, nil) }},
		{"nan", func() error {
			xx := slices.Clone(x)
			xx[1] = float32(math.Inf(1))
			return k.MatMul(Q4_0, w, 4, 32, xx, 1, y, nil)
		}},
	}
	for _, c := range cases {
		if err := c.f(); err == nil {
			t.Errorf("%s: MatMul succeeded", c.name)
		}
	}
}

func TestForFallback(t *testing.T) {
	if l := For("no-such-level").Level(); l != LevelGeneric {
		t.Errorf("For(unknown).Level() = %s", l)
	}
	if l := (Kernels{}).Level(); l != LevelGeneric {
		t.Errorf("zero Kernels level %s", l)
	}
	best := Levels()[len(Levels())-1]
	if got := For(LevelAVX512BF16).Level(); slices.Index(allLevels, got) > slices.Index(allLevels, best) {
		t.Errorf("For(avx512bf16) = %s beyond the CPU's %s", got, best)
	}
}
