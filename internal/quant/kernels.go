package quant

import (
	"fmt"

	"github.com/gotpu/gotpu/internal/cpulevel"
)

// The kernel levels (internal/cpulevel, shared with backend/cpu), least
// capable first.
const (
	LevelGeneric    = cpulevel.Generic
	LevelAVX2       = cpulevel.AVX2
	LevelAVX512     = cpulevel.AVX512
	LevelAVX512BF16 = cpulevel.AVX512BF16
)

var allLevels = cpulevel.All()

// rowsFn computes y[j] = dot(W row j, activation row i) for j in [j0, j1);
// w holds all of W's rows (rb bytes each) and y is the output row of i.
type rowsFn func(w []byte, rb, j0, j1 int, a *acts, i int, y []float32)

// gemmFn computes y[i*ldy+j] for j in [j0, j1) and activation rows i in
// [i0, i1).
type gemmFn func(w []byte, rb, j0, j1 int, a *acts, i0, i1 int, y []float32, ldy int)

// Kernels are the kernel entry points of one CPU level.
type Kernels struct {
	level string
	rows  [Q8_K + 1]rowsFn // by weight type
	gemm  [Q8_K + 1]gemmFn // by weight type; nil: rows per activation row
	// pack: by weight type, the kernel for full groups of PackRows rows in
	// the r16 layout (j0 a multiple of PackRows, j1 - j0 of PackRows); nil:
	// each group is unpacked and rows runs.
	pack [Q8_K + 1]rowsFn
	// packGemm: by weight type, the r16 kernel for several activation
	// rows (full groups, as pack); nil: pack runs per activation row.
	packGemm [Q8_K + 1]gemmFn
	need     [Q8_K + 1]int // the extra activation layouts rows[t] reads
	// actAsm: the activations are quantized (and checked for Inf and
	// NaN) by the level's assembly (avx2 and up), else by the Go loops.
	actAsm bool
}

// For returns the kernels of the given level, or of the best level below it
// that this package implements and the CPU runs (an unknown name gives the
// generic kernels). It never changes global state.
func For(level string) Kernels {
	k := Kernels{level: LevelGeneric}
	for _, t := range []Type{Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K} {
		k.rows[t] = genericRows(dotGeneric(t))
	}
	want := cpulevel.Rank(level)
	for r := 1; r <= want && r < len(allLevels); r++ {
		if !cpulevel.Has(allLevels[r]) {
			break
		}
		if addLevel(&k, allLevels[r]) {
			k.level = allLevels[r]
		}
	}
	k.actAsm = cpulevel.Rank(k.level) >= cpulevel.Rank(LevelAVX2)
	return k
}

// Levels returns the levels whose kernels this CPU runs, generic first.
func Levels() []string {
	out := []string{LevelGeneric}
	for _, l := range allLevels[1:] {
		if !cpulevel.Has(l) {
			break
		}
		out = append(out, l)
	}
	return out
}

// Level returns the level whose kernels k runs (For's fallback applied).
func (k Kernels) Level() string {
	if k.level == "" {
		return LevelGeneric
	}
	return k.level
}

func genericRows(dot dotFn) rowsFn {
	return func(w []byte, rb, j0, j1 int, a *acts, i int, y []float32) {
		for j := j0; j < j1; j++ {
			y[j] = dot(w[j*rb:][:rb], a, i)
		}
	}
}

// rowGroup is the number of weight rows one unit of parallel work covers.
const rowGroup = 16

// MatMul computes y[i*n+j] = sum_p x[i*kdim+p] * W[j,p] for i < m, j < n,
// where W is n rows of RowBytes(t, kdim) bytes of weight type t in w. Each
// row of x is quantized per block to t's activation type (ActType) with the
// reference quantizer and every output is ggml's vec_dot of that row with a
// weight row: integer block dot products and the float32 accumulation of
// ggml's generic vec_dot, in its order; every level gives the same bits.
// kdim must be a multiple of t's block size; w must hold at least n rows, x
// at least m*kdim values and y at least m*n; x must be finite. par runs
// fn over [0, total) split into ranges, on the caller's worker pool (nil:
// serially); fn is safe to run concurrently on disjoint ranges. m == 1 is
// the decode-shaped product (W streamed once); for m > 1, x is quantized
// once and each group of weight rows is reused for all m rows while it is
// in cache.
func (k Kernels) MatMul(t Type, w []byte, n, kdim int, x []float32, m int, y []float32, par func(total int, fn func(lo, hi int))) error {
	return k.MatMulMulti(t, []Weight{{W: w, N: n, Y: y}}, kdim, x, m, par)
}

// Weight is one product of MatMulMulti: N rows of weight bytes W and the
// m×N output Y. Packed says W's full groups of PackRows rows are in the
// interleaved r16 layout (Pack; the rows after them row-major); the
// outputs have the same bits either way.
type Weight struct {
	W      []byte
	N      int
	Y      []float32
	Packed bool
}

// MatMulMulti computes MatMul for several weights of the same type and
// row length that multiply the same activations x, as one product: x is
// quantized once, and the row groups of all the weights are shared out by
// one call of par, so that small products (a layer's query, key and value
// projections) run on all threads for one hand-off instead of one each.
// Each output has the bits MatMul gives it.
func (k Kernels) MatMulMulti(t Type, ws []Weight, kdim int, x []float32, m int, par func(total int, fn func(lo, hi int))) error {
	if !IsWeight(t) {
		return fmt.Errorf("quant: MatMul: %v is not a supported weight type", t)
	}
	if m < 0 {
		return fmt.Errorf("quant: MatMul: negative shape m=%d", m)
	}
	rb, err := RowBytes(t, kdim)
	if err != nil {
		return fmt.Errorf("quant: MatMul: %w", err)
	}
	if m > 0 && kdim > 0 && len(x)/kdim < m {
		return fmt.Errorf("quant: MatMul: x has %d values, need %d×%d", len(x), m, kdim)
	}
	// first[i] is weight i's first row group in the shared numbering.
	first := make([]int, len(ws)+1)
	for i, wt := range ws {
		n := wt.N
		if n < 0 {
			return fmt.Errorf("quant: MatMul: negative shape n=%d", n)
		}
		if len(wt.W)/max(rb, 1) < n && rb > 0 {
			return fmt.Errorf("quant: MatMul: weight of %d bytes is shorter than %d rows of %d bytes", len(wt.W), n, rb)
		}
		if m > 0 && n > 0 && len(wt.Y)/n < m {
			return fmt.Errorf("quant: MatMul: y has %d values, need %d×%d", len(wt.Y), m, n)
		}
		first[i+1] = first[i] + (n+rowGroup-1)/rowGroup
	}
	groups := first[len(ws)]
	if m == 0 || groups == 0 {
		return nil
	}
	if kdim == 0 {
		for _, wt := range ws {
			clear(wt.Y[:m*wt.N])
		}
		return nil
	}
	if !finite(x[:m*kdim], k.actAsm) {
		for i, v := range x[:m*kdim] {
			if v-v != 0 {
				return fmt.Errorf("quant: MatMul: non-finite activation %v at index %d", v, i)
			}
		}
	}
	rows, gemm := k.rows[t], k.gemm[t]
	if rows == nil {
		rows = genericRows(dotGeneric(t))
	}
	pk, pg := k.pack[t], k.packGemm[t]
	at, _ := ActType(t)
	a := newActs(at, x, m, kdim, par, k.need[t], k.actAsm)
	defer a.release()
	run := func(lo, hi int) {
		wi := 0
		for lo < hi {
			for first[wi+1] <= lo {
				wi++
			}
			w, n, y := ws[wi].W, ws[wi].N, ws[wi].Y
			g1 := min(hi, first[wi+1])
			j0, j1 := (lo-first[wi])*rowGroup, min((g1-first[wi])*rowGroup, n)
			lo = g1
			if ws[wi].Packed {
				j0 = runPacked(t, pk, pg, rows, gemm, w, rb, j0, j1, a, m, y, n)
			}
			if m == 1 {
				rows(w, rb, j0, j1, a, 0, y[:n])
				continue
			}
			for g0 := j0; g0 < j1; g0 += rowGroup {
				g1 := min(g0+rowGroup, j1)
				if gemm != nil {
					gemm(w, rb, g0, g1, a, 0, m, y, n)
					continue
				}
				for i := range m {
					rows(w, rb, g0, g1, a, i, y[i*n:(i+1)*n])
				}
			}
		}
	}
	if par == nil {
		run(0, groups)
	} else {
		par(groups, run)
	}
	return nil
}
