package cpu

import (
	"bytes"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/gotpu/gotpu/backend/cpu/internal/vec"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// TestFMAF32 checks the optimizer kernels' fast float32 FMA against the
// exactly rounded reference (gemm_test.go's fma32) on random operands and on
// constructed double-rounding ties, where a*b is a float32 midpoint and c
// is too small to move the float64 sum off it.
func TestFMAF32(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	check := func(a, b, c float32) {
		t.Helper()
		if got, want := vec.FMA(a, b, c), fma32(a, b, c); !sameF32(got, want) {
			t.Fatalf("vec.FMA(%g, %g, %g) = %g, want %g", a, b, c, got, want)
		}
	}
	for i := 0; i < 200000; i++ {
		a, b, c := float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())
		check(a, b, c)
		check(a, b, c*1e-30)                                  // subnormal-scale addend
		check(a*1e-20, b*1e-20, c*1e-39)                      // subnormal results
		check(a, b, -float32(float64(a)*float64(b))*(1+1e-7)) // cancellation
	}
	ties, naiveWrong := 0, 0
	for ties < 2000 {
		// 13-bit significands: the product has at most 26 bits, so it is a
		// float32 midpoint whenever its 25th bit is its last.
		a := float32(1 + float64(r.Intn(1<<12))*0x1p-12)
		b := float32(1 + float64(r.Intn(1<<12))*0x1p-12)
		p := float64(a) * float64(b)
		if math.Float64bits(p)&(1<<29-1) != 1<<28 {
			continue
		}
		ties++
		for _, c := range []float32{0x1p-70, -0x1p-70, 0x1p-60, -0x1p-60, 0} {
			check(a, b, c)
			check(-a, b, c)
			if float32(p+float64(c)) != fma32(a, b, c) {
				naiveWrong++
			}
		}
	}
	if naiveWrong == 0 {
		t.Fatal("no constructed case double-rounds: the tie cases test nothing")
	}
}

// TestOptimParallelChunks checks that splitting the kernels into parallel
// chunks gives the same bits as one sequential pass, for every dtype.
func TestOptimParallelChunks(t *testing.T) {
	const n = 100003
	r := rand.New(rand.NewSource(2))
	for _, dt := range []dtype.DType{dtype.F32, dtype.F64, dtype.BF16, dtype.F16} {
		for _, tc := range []struct {
			name  string
			attrs op.Attrs
			nin   int
		}{
			{"adam_step", op.Attrs{"lr": 1e-3, "step": 3, "decoupled": true, "amsgrad": true, "weight_decay": 0.01}, 5},
			{"sgd_step", op.Attrs{"lr": 0.1, "momentum": 0.9, "nesterov": true, "weight_decay": 1e-4}, 3},
		} {
			d := op.MustLookup(tc.name)
			a, err := d.Normalize(tc.attrs)
			if err != nil {
				t.Fatal(err)
			}
			init := make([][]byte, tc.nin)
			for i := range init {
				init[i] = make([]byte, n*dt.Size())
				for k := 0; k < n; k++ {
					v := r.NormFloat64()
					if tc.name == "adam_step" && i >= 3 {
						v = math.Abs(v) // second moments are non-negative
					}
					dtype.PutFloat64(dt, init[i], k, v)
				}
			}
			run := func(threshold int) [][]byte {
				prev := ParallelThreshold
				ParallelThreshold = threshold
				defer func() { ParallelThreshold = prev }()
				l := &device.Launch{Op: d, Attrs: a}
				for i := range init {
					l.In = append(l.In, device.Operand{Buf: &Buf{b: bytes.Clone(init[i])}, DType: dt, Layout: op.Contiguous([]int{n})})
				}
				if err := Exec(l, func(b device.Buffer) []byte { return b.(*Buf).b }); err != nil {
					t.Fatal(err)
				}
				out := make([][]byte, len(l.In))
				for i, o := range l.In {
					out[i] = o.Buf.(*Buf).b
				}
				return out
			}
			seq, par := run(math.MaxInt), run(1)
			for i := range seq {
				if !bytes.Equal(seq[i], par[i]) {
					t.Errorf("%s %s: operand %d differs between sequential and parallel runs", tc.name, dt, i)
				}
				if bytes.Equal(seq[i], init[i]) && slices.Contains(d.Inplace, i) {
					t.Errorf("%s %s: operand %d was not written", tc.name, dt, i)
				}
			}
		}
	}
}

// TestOptimF32RarePaths checks the per-element exact paths (taken where
// vec.FMAFast may double-round) against the loops on random data: both
// must give the same bits wherever the loop did not need them.
func TestOptimF32RarePaths(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	const n = 4096
	vec := func(abs bool) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
			if abs {
				v[i] = float32(math.Abs(float64(v[i])))
			}
		}
		return v
	}
	p, g, m, v := vec(false), vec(false), vec(false), vec(true)
	for _, decoupled := range []bool{false, true} {
		s := adamScalars[float32]{decay: 1 - 1e-5, wd: 0.1, b1: 0.9, omb1: 0.1, b2: 0.999, omb2: 0.001, bc2s: 0.03, eps: 1e-8, negss: -0.01, decoupled: decoupled, l2: !decoupled}
		p2, m2, v2 := slices.Clone(p), slices.Clone(m), slices.Clone(v)
		adamF32(p2, g, m2, v2, nil, &s)
		for i := range p {
			_, mi, vi := adamMomentsF32(p[i], g[i], m[i], v[i], &s)
			if mi != m2[i] || vi != v2[i] {
				t.Fatalf("adam decoupled=%v elem %d: exact path m %v v %v, loop %v %v", decoupled, i, mi, vi, m2[i], v2[i])
			}
		}
	}
	for _, first := range []bool{false, true} {
		s := sgdScalars[float32]{wd: 0.01, mom: 0.9, omd: 0.9, neglr: -0.05, l2: true, momentum: true, nesterov: !first, first: first}
		p2, b2 := slices.Clone(p), slices.Clone(m)
		sgdF32(p2, g, b2, &s)
		for i := range p {
			pi, bi := sgdElemF32(p[i], g[i], m[i], &s)
			if pi != p2[i] || bi != b2[i] {
				t.Fatalf("sgd first=%v elem %d: exact path %v %v, loop %v %v", first, i, pi, bi, p2[i], b2[i])
			}
		}
	}
}

// TestOptimF32VectorMatchesGo checks the AVX2 loops against the Go loops
// bit for bit (NaNs as NaNs), on data with zeros, infinities, NaNs and
// subnormals, for every flag combination and a length that leaves a tail.
func TestOptimF32VectorMatchesGo(t *testing.T) {
	if !optimAVX2 {
		t.Skip("no AVX2+FMA")
	}
	r := rand.New(rand.NewSource(4))
	const n = 1003
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-40, -1e-40, 1e30, 1}
	vec := func(abs bool) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
			if r.Intn(20) == 0 {
				v[i] = specials[r.Intn(len(specials))]
			}
			if abs && v[i] < 0 {
				v[i] = -v[i]
			}
		}
		return v
	}
	same := func(a, b []float32) int {
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
				return i
			}
		}
		return -1
	}
	both := func(f func() [][]float32) (vec, scalar [][]float32) {
		optimAVX2 = false
		scalar = f()
		optimAVX2 = true
		return f(), scalar
	}
	p, g, m, v, mx := vec(false), vec(false), vec(false), vec(true), vec(true)
	for _, mode := range []int{0, 1, 2} { // plain, decoupled, L2
		for _, ams := range []bool{false, true} {
			s := adamScalars[float32]{decay: 1 - 1e-4, wd: 0.01, b1: 0.9, omb1: 0.1, b2: 0.999, omb2: 0.001, bc2s: 0.1, eps: 1e-8, negss: -0.001,
				decoupled: mode == 1, l2: mode == 2}
			a, b := both(func() [][]float32 {
				x := [][]float32{slices.Clone(p), slices.Clone(m), slices.Clone(v), nil}
				if ams {
					x[3] = slices.Clone(mx)
				}
				adamF32(x[0], g, x[1], x[2], x[3], &s)
				return x
			})
			for k := range a {
				if a[k] == nil {
					continue
				}
				if i := same(a[k], b[k]); i >= 0 {
					t.Fatalf("adam mode %d amsgrad %v: operand %d elem %d: vector %v, Go %v", mode, ams, k, i, a[k][i], b[k][i])
				}
			}
		}
	}
	for flags := 0; flags < 16; flags++ {
		s := sgdScalars[float32]{wd: 0.01, mom: 0.9, omd: 0.9, neglr: -0.05, l2: flags&1 != 0, momentum: flags&2 != 0, nesterov: flags&4 != 0, first: flags&8 != 0}
		a, b := both(func() [][]float32 {
			x := [][]float32{slices.Clone(p), nil}
			if s.momentum {
				x[1] = slices.Clone(m)
			}
			sgdF32(x[0], g, x[1], &s)
			return x
		})
		for k := range a {
			if a[k] == nil {
				continue
			}
			if i := same(a[k], b[k]); i >= 0 {
				t.Fatalf("sgd flags %b: operand %d elem %d: vector %v, Go %v", flags, k, i, a[k][i], b[k][i])
			}
		}
	}
}
