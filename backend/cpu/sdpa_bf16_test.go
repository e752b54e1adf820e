package cpu

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
	"unsafe"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// sdpaBF16Matches runs the attention kernel run (sdpaDirect or
// pagedDirect) on in's first three inputs rounded to bf16, and on the
// same values widened back to f32 with the result rounded to bf16: the
// bf16 kernel is the f32 kernel on the widened operands with its output
// rounded once, so the two must agree bit for bit. It returns the row
// path's and the kernel's run counts during the bf16 call.
func sdpaBF16Matches(t *testing.T, name string, run func(*testing.T, []*tensor.Tensor, op.Attrs) *tensor.Tensor, in []*tensor.Tensor, a op.Attrs) (rows int64) {
	t.Helper()
	in16 := append([]*tensor.Tensor(nil), in...)
	in32 := append([]*tensor.Tensor(nil), in...)
	for i := range 3 {
		in16[i] = in[i].ToDType(dtype.BF16)
		in32[i] = in16[i].ToDType(dtype.F32)
	}
	before := sdpaRowRuns.Load()
	got := run(t, in16, a)
	rows = sdpaRowRuns.Load() - before
	if got.DType() != dtype.BF16 {
		t.Fatalf("%s: output %s, want bf16", name, got.DType())
	}
	want := run(t, in32, a).ToDType(dtype.BF16)
	g, w := got.ToDType(dtype.F32).Float32s(), want.ToDType(dtype.F32).Float32s()
	if len(g) != len(w) {
		t.Fatalf("%s: %d elements, want %d", name, len(g), len(w))
	}
	for i := range w {
		if g[i] != w[i] && (g[i] == g[i] || w[i] == w[i]) {
			t.Fatalf("%s: element %d = %v, the f32 kernel on the widened operands gives %v", name, i, g[i], w[i])
		}
	}
	return rows
}

// TestSDPABF16 checks the bf16 attention kernels (dense and paged)
// against the f32 kernels on the same values, bit for bit, on every
// path: the row path (decode: a cache longer than the attended keys, a
// boolean mask, grouped heads scored together or one head alone, key and
// value rows further apart than their width), the
// exact and flash paths (causal, float mask, strided query, key and value
// views, value width other than E, small blocks), and S = 0.
func TestSDPABF16(t *testing.T) {
	r := rand.New(rand.NewSource(31))
	row := gemvAsmF32 != nil && procKS.atLeast(LevelAVX2)
	boolMask := func(l, s, valid int) *tensor.Tensor {
		v := make([]bool, l*s)
		for i := range l {
			for j := range s {
				v[i*s+j] = j < valid-l+1+i
			}
		}
		return tensor.FromSlice(sdpaCPU(), v, 1, 1, l, s)
	}
	cases := []struct {
		name    string
		q, k, v *tensor.Tensor
		mask    *tensor.Tensor
		a       op.Attrs
		rowPath bool
	}{
		{"decode gqa", sdpaRand(r, 1, 9, 1, 64), sdpaRand(r, 1, 3, 193, 64), sdpaRand(r, 1, 3, 193, 64), boolMask(1, 193, 160), op.Attrs{"enable_gqa": true}, true},
		{"decode mha", sdpaRand(r, 1, 2, 1, 40), sdpaRand(r, 1, 2, 50, 40), sdpaRand(r, 1, 2, 50, 24), boolMask(1, 50, 37), op.Attrs{}, true},
		{"decode rows", sdpaRand(r, 1, 4, 3, 64), sdpaRand(r, 1, 2, 70, 64), sdpaRand(r, 1, 2, 70, 64), boolMask(3, 70, 66), op.Attrs{"enable_gqa": true}, true},
		{"decode long", sdpaRand(r, 1, 4, 1, 64), sdpaRand(r, 1, 2, 600, 64), sdpaRand(r, 1, 2, 600, 64), boolMask(1, 600, 550), op.Attrs{"enable_gqa": true}, true},
		{"decode odd width", sdpaRand(r, 1, 2, 1, 16), sdpaRand(r, 1, 2, 40, 16), sdpaRand(r, 1, 2, 40, 20), boolMask(1, 40, 29), op.Attrs{}, true},
		{"strided rows", sdpaRand(r, 1, 4, 2, 48), sdpaRand(r, 1, 2, 90, 64).Narrow(3, 8, 48), sdpaRand(r, 1, 2, 90, 40).Narrow(3, 0, 24), boolMask(2, 90, 81), op.Attrs{"enable_gqa": true}, true},
		{"strided q", sdpaRand(r, 1, 1, 6, 32).Transpose(1, 2), sdpaRand(r, 1, 6, 33, 32), sdpaRand(r, 1, 6, 33, 32), nil, op.Attrs{"scale": 0.4}, true},
		{"prefill causal", sdpaRand(r, 1, 9, 40, 64), sdpaRand(r, 1, 3, 40, 64), sdpaRand(r, 1, 3, 40, 64), nil, op.Attrs{"enable_gqa": true, "is_causal": true}, false},
		{"prefill over cache", sdpaRand(r, 1, 4, 30, 16), sdpaRand(r, 1, 2, 70, 16), sdpaRand(r, 1, 2, 70, 16), boolMask(30, 70, 45), op.Attrs{"enable_gqa": true}, false},
		{"float mask", sdpaRand(r, 2, 17, 8), sdpaRand(r, 2, 300, 8), sdpaRand(r, 2, 300, 20), sdpaRand(r, 17, 300), op.Attrs{}, false},
		{"kᵀ vᵀ views", sdpaRand(r, 2, 12, 8), sdpaRand(r, 2, 8, 20).Transpose(1, 2), sdpaRand(r, 2, 16, 20).Transpose(1, 2), nil, op.Attrs{"is_causal": true}, false},
		{"dropout", sdpaRand(r, 2, 5, 16), sdpaRand(r, 2, 40, 16), sdpaRand(r, 2, 40, 16), nil, op.Attrs{"dropout_p": 0.3, "seed": int64(5), "offset": int64(2)}, true},
		{"non-finite", withSpecials(sdpaRand(r, 1, 4, 1, 32)), withSpecials(sdpaRand(r, 1, 2, 70, 32)), withSpecials(sdpaRand(r, 1, 2, 70, 32)), boolMask(1, 70, 50), op.Attrs{"enable_gqa": true}, true},
		{"non-finite prefill", sdpaRand(r, 1, 2, 30, 16), withSpecials(sdpaRand(r, 1, 2, 30, 16)), withSpecials(sdpaRand(r, 1, 2, 30, 16)), nil, op.Attrs{"is_causal": true}, false},
		{"empty keys", sdpaRand(r, 2, 3, 8), sdpaRand(r, 2, 0, 8), sdpaRand(r, 2, 0, 5), nil, op.Attrs{}, false},
	}
	for _, c := range cases {
		for _, blocks := range [][2]int{{sdpaBlockQ, sdpaBlockK}, {12, 16}} {
			name := fmt.Sprintf("%s/blocks %v", c.name, blocks)
			withSDPABlocks(blocks[0], blocks[1], func() {
				rows := sdpaBF16Matches(t, name, func(t *testing.T, in []*tensor.Tensor, a op.Attrs) *tensor.Tensor {
					return sdpaDirect(t, procKS, in, a)
				}, []*tensor.Tensor{c.q, c.k, c.v, c.mask}, c.a)
				if want := c.rowPath && row; (rows > 0) != want {
					t.Errorf("%s: the row path ran %d times, want it to run: %v", name, rows, want)
				}
			})
		}
	}
	// Paged: a decode step and a prefill over blocks, bool mask, GQA.
	for _, l := range []int{1, 4, 20} {
		nb, heads, hkv, page, m, e := 2, 4, 2, 16, 5, 64
		nblk := nb * m
		q := sdpaRand(r, nb, heads, l, e)
		kc, vc := sdpaRand(r, nblk, page, hkv, e), sdpaRand(r, nblk, page, hkv, e)
		tab := make([]int64, nb*m)
		for i := range tab {
			tab[i] = int64(r.Intn(nblk))
		}
		table := tensor.FromSlice(sdpaCPU(), tab, nb, m)
		s := m * page
		v := make([]bool, nb*l*s)
		for b := range nb {
			n := s - 7 - 5*b
			for i := range l {
				for j := range s {
					v[(b*l+i)*s+j] = j <= n-l+i
				}
			}
		}
		mask := tensor.FromSlice(sdpaCPU(), v, nb, 1, l, s)
		rows := sdpaBF16Matches(t, fmt.Sprintf("paged L%d", l), pagedDirect, []*tensor.Tensor{q, kc, vc, table, mask}, op.Attrs{})
		if want := l <= sdpaRowMaxL && row; (rows > 0) != want {
			t.Errorf("paged L%d: the row path ran %d times, want it to run: %v", l, rows, want)
		}
	}
}

// withSpecials returns t with a NaN, an infinity of each sign and a
// subnormal written at fixed places (before and past a decode mask's last
// attended key).
func withSpecials(t *tensor.Tensor) *tensor.Tensor {
	v := t.Float32s()
	n := len(v)
	for i, x := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-40} {
		v[(i*n/4+n/9)%n] = x
	}
	return tensor.FromSlice(t.Device(), v, t.Shape()...)
}

// TestSDPADot3BF16 checks the grouped score kernel on bf16 key rows
// against the f32 one on the widened rows, bit for bit: k around its
// 16- and 8-step loops, rows further apart than k, NaN, infinities and
// subnormals among the keys.
func TestSDPADot3BF16(t *testing.T) {
	if sdpaDot3BF16 == nil || sdpaDot3 == nil {
		t.Skipf("no grouped score kernels at CPU level %s", CPULevel())
	}
	r := rand.New(rand.NewSource(33))
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-40, -0.0}
	for _, k := range []int{8, 16, 24, 64, 136} {
		for _, lda := range []int{k, k + 8} {
			a16 := make([]dtype.BFloat16, 16*lda+16)
			a32 := make([]float32, len(a16))
			for i := range a16 {
				v := float32(r.NormFloat64())
				if r.Intn(50) == 0 {
					v = specials[r.Intn(len(specials))]
				}
				a16[i] = dtype.BF16FromF32(v)
				a32[i] = a16[i].F32()
			}
			x := make([]float32, 3*k)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			const ldy = 20
			got, want := make([]float32, 3*ldy), make([]float32, 3*ldy)
			sdpaDot3BF16(k, (*uint16)(unsafe.Pointer(&a16[0])), lda, &x[0], k, &got[0], ldy)
			sdpaDot3(k, &a32[0], lda, &x[0], k, &want[0], ldy)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
					t.Fatalf("k %d lda %d: y[%d] = %v, the f32 kernel gives %v", k, lda, i, got[i], want[i])
				}
			}
		}
	}
}
