package quant

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRoundQ8AndAmax checks the fast rounding and magnitude of the Q8
// quantizers against the formulas they replace (int8(roundf(v)), float
// max of |v|), on ties, near-ties, tiny and extreme values.
func TestRoundQ8AndAmax(t *testing.T) {
	vals := []float32{0, float32(math.Copysign(0, -1)), 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 126.5, -126.5, 127, -127, 127.49998,
		math.Nextafter32(0.5, 0), math.Nextafter32(0.5, 1), -math.Nextafter32(0.5, 0), math.Nextafter32(1.5, 0), math.Nextafter32(1.5, 2),
		1e-30, -1e-30, math.SmallestNonzeroFloat32}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		vals = append(vals, (rng.Float32()*2-1)*127.5)
		vals = append(vals, float32(rng.IntN(255)-127)+0.5*float32(rng.IntN(2)))
	}
	for _, v := range vals {
		if got, want := roundQ8(v), int8(roundf(v)); got != want {
			t.Fatalf("roundQ8(%v) = %d, want %d", v, got, want)
		}
	}
	tests := []struct {
		name string
		x    []float32
	}{
		{"empty", nil},
		{"zeros", []float32{0, float32(math.Copysign(0, -1))}},
		{"mixed", []float32{1, -3, 2.5, -2.9}},
		{"inf", []float32{1, float32(math.Inf(-1)), 3}},
		{"random", vals[:4096]},
	}
	for _, tc := range tests {
		var want float32
		for _, v := range tc.x {
			want = max(want, absf(v))
		}
		if got := amaxOf(tc.x); got != want {
			t.Errorf("%s: amaxOf = %v, want %v", tc.name, got, want)
		}
	}
	if got := amaxOf([]float32{1, float32(math.NaN()), 2}); !math.IsNaN(float64(got)) {
		t.Errorf("amaxOf with a NaN = %v, want NaN", got)
	}
}

// TestQuantizeQ8RowMatchesBlocks checks that activation quantization
// straight into the arrays gives what the reference quantizer's blocks
// decode to: quants, d, s and the quant sums.
func TestQuantizeQ8RowMatchesBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const k = 128
	x := make([]float32, k)
	for i := range x {
		x[i] = (rng.Float32()*2 - 1) * float32(1+i%9)
	}
	x[3], x[40] = 0, 0.5
	clear(x[64:96]) // an all-zero block
	for _, tc := range []struct {
		t   Type
		off int
	}{{Q8_0, 2}, {Q8_1, 4}} {
		a := newActs(tc.t, x, 1, k, nil, 0, true)
		raw := make([]byte, k/32*tc.t.TypeSize())
		quantizeRow(tc.t, x, raw)
		for b := range k / 32 {
			blk := raw[b*tc.t.TypeSize():]
			if got, want := a.d[b], f16to32(le16(blk)); got != want {
				t.Errorf("%v block %d: d %v, want %v", tc.t, b, got, want)
			}
			if tc.t == Q8_1 {
				if got, want := a.s[b], f16to32(le16(blk[2:])); got != want {
					t.Errorf("%v block %d: s %v, want %v", tc.t, b, got, want)
				}
			}
			var sum int32
			for j := range 32 {
				q := int8(blk[tc.off+j])
				sum += int32(q)
				if a.qs[b*32+j] != q {
					t.Fatalf("%v block %d quant %d: %d, want %d", tc.t, b, j, a.qs[b*32+j], q)
				}
			}
			if a.isum[b] != sum {
				t.Errorf("%v block %d: isum %d, want %d", tc.t, b, a.isum[b], sum)
			}
		}
		a.release()
	}
}

// TestQuantQ8RowAsm checks the AVX2 activation quantizer against
// quantizeQ8Row's Go loop bit for bit, for Q8_0 and Q8_1 rows of random
// values at several scales, exact ties after scaling, blocks of zeros
// (d = 0), subnormal and huge magnitudes (d rounding to 0 or to
// infinity in binary16).
func TestQuantQ8RowAsm(t *testing.T) {
	if quantQ8Row == nil {
		t.Skip("no AVX2 quantizer on this CPU")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const k = 32 * 24
	rows := scaledRows(rng, k)
	ties := make([]float32, k)
	for i := range ties {
		// Multiples of 0.5 in blocks whose amax is 127: x*id = x exactly.
		ties[i] = float32(rng.IntN(255)-127) + 0.5*float32(rng.IntN(2))
		if i%32 == 0 {
			ties[i] = 127
		}
	}
	rows = append(rows, ties, make([]float32, k))
	mixed := make([]float32, k)
	copy(mixed, rows[0])
	clear(mixed[64:96])
	mixed[5] = float32(math.Copysign(0, -1))
	rows = append(rows, mixed)
	for _, typ := range []Type{Q8_0, Q8_1} {
		for ri, x := range rows {
			got := newActs(typ, x, 1, k, nil, 0, true)
			want := newActs(typ, x, 1, k, nil, 0, false)
			for i := range want.qs {
				if got.qs[i] != want.qs[i] {
					t.Fatalf("%v row %d: q[%d] = %d, want %d (x %v)", typ, ri, i, got.qs[i], want.qs[i], x[i])
				}
			}
			for b := range want.nb {
				if math.Float32bits(got.d[b]) != math.Float32bits(want.d[b]) || got.isum[b] != want.isum[b] {
					t.Fatalf("%v row %d block %d: d %v Σq %d, want %v %d", typ, ri, b, got.d[b], got.isum[b], want.d[b], want.isum[b])
				}
				if typ == Q8_1 && math.Float32bits(got.s[b]) != math.Float32bits(want.s[b]) {
					t.Fatalf("%v row %d block %d: s %v, want %v", typ, ri, b, got.s[b], want.s[b])
				}
			}
		}
	}
}

// TestFinite checks Finite (the AVX2 form where the CPU runs it) against
// the Go loop: every length to 70 with an Inf, a NaN or nothing at each
// position, and huge finite values.
func TestFinite(t *testing.T) {
	specials := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32, 0}
	for n := 0; n <= 70; n++ {
		for pos := 0; pos < max(n, 1); pos++ {
			for _, sv := range specials {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(i) - 3.5
				}
				if n > 0 {
					x[pos] = sv
				}
				got := Finite(x)
				want := finite(x, false)
				if got != want {
					t.Fatalf("n %d, %v at %d: Finite = %v, want %v", n, sv, pos, got, want)
				}
			}
		}
	}
}

// TestQuantQ8KRowAsm checks the AVX2 Q8_K quantizer against the Go
// reference path bit for bit: quants, d, bsums, the 32-sums and the kp
// and k6 layouts, on blocks of every scale (subnormal ones, whose
// 1/max overflows), a block of zeros, ties between +amax and -amax (the
// first wins) and values whose x·iscale falls on a half.
func TestQuantQ8KRowAsm(t *testing.T) {
	if quantQ8KRow == nil {
		t.Skip("no AVX2 quantizer on this CPU")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	const k = qkK * 3
	rows := scaledRows(rng, k)
	ties := make([]float32, k)
	for i := range ties {
		ties[i] = float32(rng.IntN(255)-127) + 0.5*float32(rng.IntN(2))
	}
	for b := range 3 {
		// -127 first in blocks 0 and 2, +127 first in block 1: iscale's
		// sign. Block 0's pair is in two vectors, the others' in one.
		s := float32(1 - 2*((b+1)%2))
		i, j := 7, 200
		if b > 0 {
			i, j = 8*b+1, 8*b+6
		}
		ties[b*qkK+i], ties[b*qkK+j] = -127*s, 127*s
	}
	rows = append(rows, ties, make([]float32, k))
	mixed := make([]float32, k)
	copy(mixed, rows[0])
	clear(mixed[qkK : 2*qkK])
	mixed[5] = float32(math.Copysign(0, -1))
	rows = append(rows, mixed)
	for _, need := range []int{needKP | needK6, needK6S} {
		testQuantQ8KRowAsm(t, rows, k, need)
	}
}

// testQuantQ8KRowAsm compares the two paths on rows with the extra
// layouts in need.
func testQuantQ8KRowAsm(t *testing.T, rows [][]float32, k, need int) {
	t.Helper()
	for ri, x := range rows {
		got := newActs(Q8_K, x, 1, k, nil, need, true)
		want := newActs(Q8_K, x, 1, k, nil, need, false)
		if (got.kp == nil) != (need&needKP == 0) || got.k6 == nil || (got.k6c == nil) != (need&needK6 == 0) {
			t.Fatalf("need %b: layouts kp %v k6 %v k6c %v", need, got.kp != nil, got.k6 != nil, got.k6c != nil)
		}
		for i := range want.qs {
			if got.qs[i] != want.qs[i] || got.k6[i] != want.k6[i] || got.kp != nil && got.kp[i] != want.kp[i] {
				t.Fatalf("need %b row %d: element %d: q %d k6 %d, want %d %d (x %v)", need, ri, i,
					got.qs[i], got.k6[i], want.qs[i], want.k6[i], x[i])
			}
		}
		for b := range want.nb {
			if math.Float32bits(got.d[b]) != math.Float32bits(want.d[b]) {
				t.Fatalf("row %d block %d: d %v, want %v", ri, b, got.d[b], want.d[b])
			}
		}
		if !slices.Equal(got.bsum, want.bsum) || !slices.Equal(got.m16, want.m16) || !slices.Equal(got.k6c, want.k6c) {
			t.Fatalf("row %d: sums differ: bsum %v / %v", ri, got.bsum, want.bsum)
		}
		got.release()
		want.release()
	}
}

// scaledRows returns rows of k uniform values in (-s, s) for scales from
// subnormal (whose blocks' inverse scales overflow) to near the largest
// float32.
func scaledRows(rng *rand.Rand, k int) [][]float32 {
	var rows [][]float32
	for _, scale := range []float32{1, 1e-3, 1e-38, 3e-42, 1e6, 3e38} {
		x := make([]float32, k)
		for i := range x {
			x[i] = (rng.Float32()*2 - 1) * scale
		}
		rows = append(rows, x)
	}
	return rows
}
