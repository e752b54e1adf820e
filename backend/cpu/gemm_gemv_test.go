package cpu

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/gotpu/gotpu/backend/cpu/internal/gemm"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// gemvOrderF32 is the exact Go model of the dot form's summation order
// (gemm_gemv.go): 32 lanes, lane p%32 the FMA chain from +0 over its
// products in k order; then lane[j] + lane[j+16] and the halving tree
// +8, +4, +2, +1.
func gemvOrderF32(k int, w, x func(p int) float32) float32 {
	return gemvOrder(k, w, x, func(c int) int { return c })
}

// gemvOrderBF16 is the model of the bf16 dot order: lane j < 16 takes
// p%32 == 2j, lane 16+j takes p%32 == 2j+1; w's values are bf16 (as f32).
func gemvOrderBF16(k int, w, x func(p int) float32) float32 {
	return gemvOrder(k, w, x, func(c int) int { return c/2 + 16*(c&1) })
}

// gemvOrder is the dot order with lane(p%32) the lane of element p.
func gemvOrder(k int, w, x func(p int) float32, lane32 func(c int) int) float32 {
	var lane [32]float32
	for p := 0; p < k; p++ {
		l := lane32(p % 32)
		lane[l] = fma32(w(p), x(p), lane[l])
	}
	var s [16]float32
	for j := range s {
		s[j] = lane[j] + lane[j+16]
	}
	for h := 8; h >= 1; h /= 2 {
		for j := 0; j < h; j++ {
			s[j] += s[j+h]
		}
	}
	return s[0]
}

// gemvIsDot reports whether the matrix-vector kernels read the [m,k]·[k,n]
// problem (m == 1 or n == 1) in the dot form: the matrix side (b unless n
// == 1) contiguous along k.
func gemvIsDot[T any](a, b operand[T], n, k int) bool {
	if k == 1 {
		return true
	}
	if n == 1 {
		return a.lay.Strides[1] == 1
	}
	return b.lay.Strides[0] == 1
}

// checkGEMVDotF32 checks a matrix-vector product (m == 1 or n == 1) in
// the dot form: within tolerance of the float64 dot product and bitwise
// equal to gemvOrderF32. (checkF32 calls it for such products when exact.)
func checkGEMVDotF32(got []float32, a, b operand[float32], m, n, k int) string {
	if bad := checkF32(got, a, b, m, n, k, false); bad != "" {
		return bad
	}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			want := gemvOrderF32(k, func(p int) float32 { return a.at(i, p) }, func(p int) float32 { return b.at(p, j) })
			if g := got[i*n+j]; !sameF32(g, want) {
				return fmt.Sprintf("[%d,%d] = %v (%#08x), want the dot order's %v (%#08x)", i, j, g, math.Float32bits(g), want, math.Float32bits(want))
			}
		}
	}
	return ""
}

// checkGEMVF32 checks a matrix-vector product on level: at the generic
// level within tolerance of the float64 dot product; on the kernels
// bitwise against gemvOrderF32 (dot form) or the in-order FMA chain (axpy
// form).
func checkGEMVF32(got []float32, a, b operand[float32], m, n, k int, level string) string {
	return checkF32(got, a, b, m, n, k, level != LevelGeneric)
}

// TestGEMVOrderModel checks the Go model of the dot order on sums whose
// lanes and tree are easy to follow by hand.
func TestGEMVOrderModel(t *testing.T) {
	one := func(int) float32 { return 1 }
	for _, k := range []int{0, 1, 31, 32, 33, 100} {
		if got := gemvOrderF32(k, one, one); got != float32(k) {
			t.Errorf("k=%d: sum of ones %v", k, got)
		}
	}
	// 2^24 in lane 0 and 1 in each of lanes 1..16: in k order all ones
	// are lost (2^24 + 1 rounds to 2^24). Here lane 16 joins lane 0 and is
	// lost, lanes 1..15 pair up by the tree into 2, 4, 8 before meeting
	// lane 0: 2^24 + 1 (lost) + 2 + 4 + 8.
	w := func(p int) float32 {
		if p == 0 {
			return 0x1p24
		}
		return 1
	}
	if got, want := gemvOrderF32(17, w, one), float32(0x1p24+14); got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestGEMVDotKernels runs the f32 and bf16 dot kernels of every level the
// CPU supports directly, against gemvOrderF32 bit for bit (signed zeros
// included): k around the 32-step and its tail groups, row counts around
// the kernels' 8-, 4- and 2-row blocks, a row stride past k (the gap
// holding +Inf, which must not count), and NaN, ±Inf, subnormal and tiny
// values (products rounding to ±0) in some trials.
func TestGEMVDotKernels(t *testing.T) {
	type kf32 = func(k int, a *float32, lda int, x, y *float32, rows int, tail *int32)
	type kbf16 = func(k int, a *uint16, lda int, x, y *float32, rows int, tail *int16)
	var f32s []kf32
	var bf16s []kbf16
	var names []string
	var walks []uint8
	sup := SupportedLevels()
	has := func(l string) bool { return levelRank(sup[len(sup)-1]) >= levelRank(l) }
	// Every kernel runs twice: in row groups (pairs at AVX2) and one row at
	// a time (gemm.GemvRowWalk), which must give the same bits.
	add := func(f kf32, b kbf16, level string) {
		for _, w := range []uint8{0, 1} {
			f32s, bf16s, names = append(f32s, f), append(bf16s, b), append(names, fmt.Sprintf("%s/rowwalk=%d", level, w))
			walks = append(walks, w)
		}
	}
	defer func(w uint8) { gemm.GemvRowWalk = w }(gemm.GemvRowWalk)
	if gemvDotF32Y != nil && has(LevelAVX2) {
		add(gemvDotF32Y, gemvDotBF16Y, LevelAVX2)
	} else {
		t.Logf("AVX2 dot kernels not run (not on this CPU or build)")
	}
	if gemvDotF32Z != nil && has(LevelAVX512) {
		add(gemvDotF32Z, gemvDotBF16Z, LevelAVX512)
	} else {
		t.Logf("AVX-512 dot kernels not run (not on this CPU or build)")
	}
	if len(names) == 0 {
		t.Skip("no dot kernels")
	}
	r := rand.New(rand.NewPCG(61, 62))
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-40, -1e-40, 1e-30, 0, float32(math.Copysign(0, -1))}
	ks := []int{1, 2, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 40, 47, 48, 49, 63, 64, 65, 96, 100, 576, 1031}
	for _, k := range ks {
		for _, rows := range []int{1, 2, 3, 4, 5, 7, 8, 9, 16, 17} {
			for trial := 0; trial < 4; trial++ {
				lda := k + trial%2*5
				a := make([]float32, (rows-1)*lda+k)
				x := make([]float32, k)
				for i := range a {
					a[i] = dtype.RoundBF16(float32(r.NormFloat64()))
				}
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				if trial >= 2 {
					for n := 0; n < 1+k/16; n++ {
						a[r.IntN(len(a))] = dtype.RoundBF16(specials[r.IntN(len(specials))])
						x[r.IntN(k)] = specials[r.IntN(len(specials))]
					}
				}
				if trial == 3 {
					for i := range a {
						a[i] = dtype.RoundBF16(a[i] * 1e-25)
					}
				}
				// The bf16 matrix has 16 values of NaN slack (the AVX2
				// kernel's reads past k; they must not count).
				ab := make([]dtype.BFloat16, len(a)+16)
				for i := range ab {
					ab[i] = dtype.BF16FromF32(float32(math.NaN()))
				}
				for i, v := range a {
					ab[i] = dtype.BF16FromF32(v)
				}
				if lda > k {
					for i := 0; i < rows-1; i++ {
						for p := k; p < lda; p++ {
							ab[i*lda+p] = dtype.BF16FromF32(float32(math.Inf(1)))
						}
					}
				}
				xd := make([]float32, roundUp(k, 32))
				gemvDeinterleave(xd, x)
				want := make([]float32, rows)
				wantB := make([]float32, rows)
				for i := range want {
					want[i] = gemvOrderF32(k, func(p int) float32 { return a[i*lda+p] }, func(p int) float32 { return x[p] })
					wantB[i] = gemvOrderBF16(k, func(p int) float32 { return a[i*lda+p] }, func(p int) float32 { return x[p] })
				}
				for li, name := range names {
					gemm.GemvRowWalk = walks[li]
					for _, bf := range []bool{false, true} {
						y := make([]float32, rows+1)
						y[rows] = 42
						if bf {
							bf16s[li](k, (*uint16)(&ab[0]), lda, &xd[0], &y[0], rows, gemvTailMask16(k))
						} else {
							f32s[li](k, &a[0], lda, &x[0], &y[0], rows, gemvTailMask(k))
						}
						if y[rows] != 42 {
							t.Fatalf("%s bf16=%v k=%d rows=%d: wrote past y", name, bf, k, rows)
						}
						want := want
						if bf {
							want = wantB
						}
						for i := range want {
							if !sameF32(y[i], want[i]) {
								t.Fatalf("%s bf16=%v k=%d rows=%d lda=%d trial %d: row %d = %v (%#08x), want %v (%#08x)",
									name, bf, k, rows, lda, trial, i, y[i], math.Float32bits(y[i]), want[i], math.Float32bits(want[i]))
							}
						}
					}
				}
			}
		}
	}
}

// TestGEMV checks the matrix-vector shapes (m == 1 or n == 1) on every
// level — bitwise against the dot order or the in-order chain on the
// kernels, within tolerance of float64 everywhere — for the matrix in both
// contiguous orientations (the dot and axpy forms), strided and
// broadcast, and checks the gemv kernels ran for the contiguous ones.
func TestGEMV(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	lens := []int{1, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 100, 129}
	ks := []int{1, 7, 8, 9, 17, 64, 300}
	for _, vecLeft := range []bool{true, false} {
		for _, ml := range layoutNames {
			for _, rows := range lens {
				for _, k := range ks {
					var a, b operand[float32]
					m, n := 1, rows
					if vecLeft {
						a = makeOperand(r, "rowmajor", 1, k, genF32)
						b = makeOperand(r, ml, k, rows, genF32)
					} else {
						m, n = rows, 1
						a = makeOperand(r, ml, rows, k, genF32)
						b = makeOperand(r, "transposed", k, 1, genF32)
					}
					for _, level := range levels() {
						before := gemvHits.Load()
						var got []float32
						var err error
						ks := ksetFor(level)
						got, err = matmul(ks, dtype.F32, op.PrecisionHighest, a, b)
						if err != nil {
							t.Fatal(err)
						}
						name := fmt.Sprintf("%s m=%d n=%d k=%d matrix=%s", level, m, n, k, ml)
						if bad := checkGEMVF32(got, a, b, m, n, k, level); bad != "" {
							t.Fatalf("%s: %s", name, bad)
						}
						if hit := gemvHits.Load() > before; level != LevelGeneric && ml != "strided" && !hit {
							t.Fatalf("%s: the gemv kernels did not run", name)
						}
					}
				}
			}
		}
	}
}

// TestGEMVThreads checks the matrix-vector products' results are the same
// bits with 1 and 2 threads and between runs (the dot order does not
// depend on the row split), batched ([nb,1,k] times [nb,k,n], the matrix
// stored [nb,k,n] (axpy form) or [nb,n,k] (dot form)) and large enough to
// be shared between threads, and that they match the order's model.
func TestGEMVThreads(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	shapes := [][3]int{{3, 777, 1031}, {1, 2048, 2049}}
	if testing.Short() {
		shapes[0] = [3]int{3, 77, 131}
	}
	for _, sh := range shapes {
		nb, n, k := sh[0], sh[1], sh[2]
		av := make([]float32, nb*k)
		bv := make([]float32, nb*k*n)
		for i := range av {
			av[i] = genF32(r)
		}
		for i := range bv {
			bv[i] = genF32(r)
		}
		for _, level := range levels() {
			for _, bT := range []bool{false, true} {
				var first []float32
				for _, procs := range []int{1, 2, 2, 1} {
					runtime.GOMAXPROCS(procs)
					out := make([]float32, nb*n)
					bl, rc := op.Contiguous([]int{nb, k, n}), 1
					if bT {
						bl, rc = op.Contiguous([]int{nb, n, k}), 2
					}
					c := &Call{
						Launch: &device.Launch{
							Attrs: op.Attrs{"lhs_batch": []int{0}, "rhs_batch": []int{0}, "lhs_contract": []int{2}, "rhs_contract": []int{rc}, "precision": ""},
							In:    []device.Operand{{DType: dtype.F32, Layout: op.Contiguous([]int{nb, 1, k})}, {DType: dtype.F32, Layout: bl}},
							Out:   []device.Operand{{DType: dtype.F32, Layout: op.Contiguous([]int{nb, 1, n})}},
						},
						InB: [][]byte{bytesOf(av), bytesOf(bv)}, OutB: [][]byte{bytesOf(out)},
					}
					ks := ksetFor(level)
					c.ks = ks
					if err := dotGeneralKernel(c); err != nil {
						t.Fatal(err)
					}
					name := fmt.Sprintf("%s nb=%d n=%d k=%d procs=%d bT=%v", level, nb, n, k, procs, bT)
					if first == nil {
						first = out
						for bb := 0; bb < nb; bb++ {
							a := operand[float32]{av, op.Layout{Shape: []int{1, k}, Strides: []int{k, 1}, Offset: bb * k}}
							b := operand[float32]{bv, op.Layout{Shape: []int{k, n}, Strides: []int{n, 1}, Offset: bb * k * n}}
							if bT {
								b.lay.Strides = []int{1, k}
							}
							if bad := checkGEMVF32(out[bb*n:(bb+1)*n], a, b, 1, n, k, level); bad != "" {
								t.Fatalf("%s batch %d: %s", name, bb, bad)
							}
						}
						continue
					}
					for i := range out {
						if math.Float32bits(out[i]) != math.Float32bits(first[i]) {
							t.Fatalf("%s: [%d] = %#08x, first run %#08x", name, i, math.Float32bits(out[i]), math.Float32bits(first[i]))
						}
					}
				}
			}
		}
	}
}

// TestGEMVCompiled checks a compiled batch-1 MLP block (two linears, one
// with a fused epilogue) takes the gemv kernels in f32 and bf16 on every
// level that has them, and agrees with interp (bf16: bit for bit; f32:
// within the fused epilogue's tolerance).
func TestGEMVCompiled(t *testing.T) {
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		params := mlpParams(1, 96, 200)
		for i := range params {
			params[i].DType = dt
		}
		g, err := ir.Trace(params, mlpBlock)
		if err != nil {
			t.Fatal(err)
		}
		ins := inputsFor(params, 9, 0)
		for _, level := range levels() {
			ks := ksetFor(level)
			be := levelBackend(ks.level)
			ip, p := interpAndCompiled(t, be, g)
			want := runProg(t, be, ip, g, ins, device.RunOptions{})
			before := gemvHits.Load()
			got := runProg(t, be, p, g, ins, device.RunOptions{})
			if hits := gemvHits.Load() - before; level != LevelGeneric && hits < 2 {
				t.Errorf("%s %s: %d gemv runs, want 2", dt, level, hits)
			}
			if dt == dtype.BF16 {
				if !bytes.Equal(got[0], want[0]) {
					t.Errorf("%s %s: compiled differs from interp", dt, level)
				}
			} else if k, ok := closeF32(got[0], want[0], 4); !ok {
				t.Errorf("%s %s: element %d: %v vs interp %v", dt, level, k, as[float32](got[0])[k], as[float32](want[0])[k])
			}
		}
	}
}

// gemvDecodeShapes are the [in→out] linear layers of SmolLM2-135M and
// GPT-2 small (x·Wᵀ with W [out, in]) whose batch-1 products a decode step
// runs.
var gemvDecodeShapes = [][2]int{{576, 576}, {576, 192}, {576, 1536}, {1536, 576}, {768, 2304}, {3072, 768}, {576, 49152}, {768, 50257}}

// BenchmarkGEMVDecode runs x·Wᵀ (the dot form) and x·W (the axpy form,
// GPT-2's Conv1D layout) on the decode shapes in f32 and bf16 at each
// level with the gemv kernels, through dot_general, and reports GB/s
// of the weight read. Each iteration cycles through enough copies of W to
// leave the caches (48 MiB), as a decode step's weights do.
func BenchmarkGEMVDecode(b *testing.B) {
	for _, sh := range gemvDecodeShapes {
		in, out := sh[0], sh[1]
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
			wbytes := in * out * dt.Size()
			copies := max(1, (48<<20)/wbytes)
			r := rand.New(rand.NewPCG(1, 1))
			xs := make([]byte, in*dt.Size())
			ws := make([]byte, copies*wbytes)
			for i := 0; i < in; i++ {
				dtype.PutFloat64(dt, xs, i, r.NormFloat64())
			}
			for i := 0; i < len(ws)/dt.Size(); i++ {
				dtype.PutFloat64(dt, ws, i, r.NormFloat64())
			}
			y := make([]byte, out*dt.Size())
			for _, level := range levels() {
				if level == LevelGeneric {
					continue
				}
				for _, form := range []string{"dot", "axpy"} {
					wshape, rc := []int{out, in}, 1 // x·Wᵀ: the dot form
					if form == "axpy" {
						wshape, rc = []int{in, out}, 0 // x·W (GPT-2's Conv1D): the axpy form
					}
					b.Run(fmt.Sprintf("%dto%d/%s/%s/%s", in, out, dt, level, form), func(b *testing.B) {
						ks := ksetFor(level)
						b.SetBytes(int64(wbytes))
						for i := 0; i < b.N; i++ {
							c := i % copies
							call := &Call{ks: ks,
								Launch: &device.Launch{
									Attrs: op.Attrs{"lhs_batch": []int{}, "rhs_batch": []int{}, "lhs_contract": []int{1}, "rhs_contract": []int{rc}, "precision": ""},
									In:    []device.Operand{{DType: dt, Layout: op.Contiguous([]int{1, in})}, {DType: dt, Layout: op.Contiguous(wshape)}},
									Out:   []device.Operand{{DType: dt, Layout: op.Contiguous([]int{1, out})}},
								},
								InB: [][]byte{xs, ws[c*wbytes : (c+1)*wbytes]}, OutB: [][]byte{y},
							}
							if err := dotGeneralKernel(call); err != nil {
								b.Fatal(err)
							}
						}
					})
				}
			}
		}
	}
}

// BenchmarkGEMVThreads runs x·Wᵀ on the decode shapes (f32 and bf16, the
// weights cycled through 48 MiB of copies) on one thread and shared by
// all of GOMAXPROCS (gemvParallelMACs forced low), reporting ns/op and
// the CPU time per op: the data for gemvParallelMACs.
func BenchmarkGEMVThreads(b *testing.B) {
	defer func(v int) { gemvParallelMACs = v }(gemvParallelMACs)
	for _, sh := range gemvDecodeShapes {
		in, out := sh[0], sh[1]
		for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
			wbytes := in * out * dt.Size()
			copies := max(1, (48<<20)/wbytes)
			xs := make([]byte, in*dt.Size())
			ws := make([]byte, copies*wbytes)
			y := make([]byte, out*dt.Size())
			for _, shared := range []bool{false, true} {
				b.Run(fmt.Sprintf("%dto%d/%s/shared=%v", in, out, dt, shared), func(b *testing.B) {
					gemvParallelMACs = 1 << 40
					if shared {
						gemvParallelMACs = 0
					}
					cpu0 := cpuSeconds()
					for i := 0; i < b.N; i++ {
						c := i % copies
						call := xwtCall(dt, 1, out, in, xs, ws[c*wbytes:(c+1)*wbytes], y)
						if err := dotGeneralKernel(call); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N)*1e6, "cpu-us/op")
				})
			}
		}
	}
}

// TestGEMVDirect checks the direct batch-1 x·Wᵀ paths (dotF32GEMV,
// dotBF16GEMV) against the general driver's gemv path on the same problem
// stated with a unit batch dimension (which the direct paths do not take):
// the same bits at every level, on one thread and shared between two
// (gemvParallelMACs forced to 0), with offsets, row strides past k and
// k not a multiple of 16 or 32.
func TestGEMVDirect(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer func(v int) { gemvParallelMACs = v }(gemvParallelMACs)
	type shape struct{ n, k, ldw, xoff, woff int }
	shapes := []shape{{17, 16, 16, 0, 0}, {33, 40, 40, 3, 5}, {100, 300, 311, 1, 7}, {64, 576, 576, 0, 0}, {49, 97, 100, 2, 0}}
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		for _, sh := range shapes {
			n, k, ldw := sh.n, sh.k, sh.ldw
			xv := make([]float32, sh.xoff+k)
			wv := make([]float32, sh.woff+(n-1)*ldw+k)
			for i := range xv {
				xv[i] = dtype.RoundBF16(genF32(r))
			}
			for i := range wv {
				wv[i] = dtype.RoundBF16(genF32(r))
			}
			in, win := bytesOf(xv), bytesOf(wv)
			if dt == dtype.BF16 {
				xb, wb := make([]dtype.BFloat16, len(xv)), make([]dtype.BFloat16, len(wv))
				for i, v := range xv {
					xb[i] = dtype.BF16FromF32(v)
				}
				for i, v := range wv {
					wb[i] = dtype.BF16FromF32(v)
				}
				in, win = bytesOf(xb), bytesOf(wb)
			}
			run := func(ks *kset, batched bool) ([]byte, bool) {
				out := make([]byte, n*dt.Size())
				xl := op.Layout{Shape: []int{1, k}, Strides: []int{k, 1}, Offset: sh.xoff}
				wl := op.Layout{Shape: []int{n, k}, Strides: []int{ldw, 1}, Offset: sh.woff}
				ol := op.Contiguous([]int{1, n})
				a := op.Attrs{"lhs_batch": []int{}, "rhs_batch": []int{}, "lhs_contract": []int{1}, "rhs_contract": []int{1}, "precision": ""}
				if batched {
					xl = op.Layout{Shape: []int{1, 1, k}, Strides: []int{k, k, 1}, Offset: sh.xoff}
					wl = op.Layout{Shape: []int{1, n, k}, Strides: []int{n * ldw, ldw, 1}, Offset: sh.woff}
					ol = op.Contiguous([]int{1, 1, n})
					a = op.Attrs{"lhs_batch": []int{0}, "rhs_batch": []int{0}, "lhs_contract": []int{2}, "rhs_contract": []int{2}, "precision": ""}
				}
				c := &Call{
					Launch: &device.Launch{Attrs: a,
						In:  []device.Operand{{DType: dt, Layout: xl}, {DType: dt, Layout: wl}},
						Out: []device.Operand{{DType: dt, Layout: ol}}},
					InB: [][]byte{in, win}, OutB: [][]byte{out}, ks: ks,
				}
				direct := false
				if !batched {
					direct = dotF32GEMV(c) || dotBF16GEMV(c)
					if direct {
						return out, true
					}
				}
				if err := dotGeneralKernel(c); err != nil {
					t.Fatal(err)
				}
				return out, direct
			}
			for _, level := range levels() {
				for _, procs := range []int{1, 2} {
					runtime.GOMAXPROCS(procs)
					for _, macs := range []int{1 << 40, 0} {
						gemvParallelMACs = macs
						var want, got []byte
						var direct bool
						ks := ksetFor(level)
						want, _ = run(ks, true)
						got, direct = run(ks, false)
						name := fmt.Sprintf("%s %s n=%d k=%d ldw=%d procs=%d macs=%d", dt, level, n, k, ldw, procs, macs)
						if takes := level != LevelGeneric; direct != takes {
							t.Fatalf("%s: direct path taken %v, want %v", name, direct, takes)
						}
						if !bytes.Equal(got, want) {
							t.Fatalf("%s: direct path differs from the general gemv path", name)
						}
					}
				}
			}
		}
	}
}

// TestGEMVWalk checks GOTPU_GEMV_WALK's reading: rows or groups where set,
// else one row at a time on AMD only.
func TestGEMVWalk(t *testing.T) {
	for _, c := range []struct {
		env  string
		amd  bool
		want uint8
	}{
		{"", true, 1}, {"", false, 0}, {"rows", false, 1}, {"rows", true, 1},
		{"groups", true, 0}, {"groups", false, 0}, {"bogus", true, 1}, {"bogus", false, 0},
	} {
		if got := gemvWalk(c.env, c.amd); got != c.want {
			t.Errorf("gemvWalk(%q, amd=%v) = %d, want %d", c.env, c.amd, got, c.want)
		}
	}
}

// BenchmarkGEMVRows runs f32 x·Wᵀ with m activation rows on the decode
// shapes (the weights cycled through 48 MiB of copies) on the dot-form
// kernels (gemvRunF32, path=gemv) and on the path it replaces up to
// gemvRowsMax rows (the streaming x·Wᵀ, path=stream): the data for
// gemvRowsMax and gemvMultiBlock. GOMAXPROCS threads.
func BenchmarkGEMVRows(b *testing.B) {
	benchGEMVRows(b, dtype.F32, []int{1, 2, 4, 8, 12, 16}, "stream")
}

// benchGEMVRows times x·Wᵀ of dtype dt for each activation row count in
// ms on SmolLM2's decode shapes, W cycled through 48 MiB of copies, on the
// GEMV kernels ("gemv", gemvRowsMax 16) and on the path they replace (alt,
// gemvRowsMax 0).
func benchGEMVRows(b *testing.B, dt dtype.DType, ms []int, alt string) {
	defer func(v int) { gemvRowsMax = v }(gemvRowsMax)
	for _, sh := range gemvDecodeShapes {
		in, out := sh[0], sh[1]
		wbytes := in * out * dt.Size()
		copies := max(1, (48<<20)/wbytes)
		r := rand.New(rand.NewPCG(1, 1))
		ws := make([]byte, copies*wbytes)
		for i := 0; i < copies*in*out; i++ {
			dtype.PutFloat64(dt, ws, i, r.NormFloat64())
		}
		for _, m := range ms {
			xs := make([]byte, m*in*dt.Size())
			for i := 0; i < m*in; i++ {
				dtype.PutFloat64(dt, xs, i, r.NormFloat64())
			}
			y := make([]byte, m*out*dt.Size())
			for _, path := range []string{"gemv", alt} {
				b.Run(fmt.Sprintf("%dto%d/m%d/%s", in, out, m, path), func(b *testing.B) {
					gemvRowsMax = 16
					if path == alt {
						gemvRowsMax = 0
					}
					b.SetBytes(int64(wbytes))
					for i := 0; i < b.N; i++ {
						c := i % copies
						if err := dotGeneralKernel(xwtCall(dt, m, out, in, xs, ws[c*wbytes:(c+1)*wbytes], y)); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// xwtCall is the dot_general call of x [m, k] times the transpose of w
// [n, k] into y [m, n], contiguous operands of dtype dt.
func xwtCall(dt dtype.DType, m, n, k int, x, w, y []byte) *Call {
	return &Call{
		Launch: &device.Launch{
			Attrs: op.Attrs{"lhs_batch": []int{}, "rhs_batch": []int{}, "lhs_contract": []int{1}, "rhs_contract": []int{1}, "precision": ""},
			In:    []device.Operand{{DType: dt, Layout: op.Contiguous([]int{m, k})}, {DType: dt, Layout: op.Contiguous([]int{n, k})}},
			Out:   []device.Operand{{DType: dt, Layout: op.Contiguous([]int{m, n})}},
		},
		InB: [][]byte{x, w}, OutB: [][]byte{y},
	}
}

// TestGEMVDotF32x4 checks the four-vector AVX-512 dot kernel against the
// dot order's model (gemvOrderF32) bit for bit: every k tail, odd and even
// row counts, row strides past k for W, x and y, non-finite and tiny
// values; and that it writes nothing outside its outputs.
func TestGEMVDotF32x4(t *testing.T) {
	sup := SupportedLevels()
	if gemvDotF32x4Z == nil || levelRank(sup[len(sup)-1]) < levelRank(LevelAVX512) {
		t.Skip("no AVX-512 on this CPU or build")
	}
	r := rand.New(rand.NewPCG(71, 72))
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-40, -1e-40, 0, float32(math.Copysign(0, -1))}
	for _, k := range []int{1, 7, 16, 31, 32, 33, 63, 64, 65, 100, 576, 1031} {
		for _, rows := range []int{1, 2, 3, 4, 5, 16} {
			for trial := 0; trial < 3; trial++ {
				lda, ldx, ldy := k+trial*3, k+trial, rows+2*trial
				a := make([]float32, (rows-1)*lda+k)
				x := make([]float32, 3*ldx+k)
				for i := range a {
					a[i] = float32(r.NormFloat64())
				}
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				if trial == 2 {
					for n := 0; n < 1+k/8; n++ {
						a[r.IntN(len(a))] = specials[r.IntN(len(specials))]
						x[r.IntN(len(x))] = specials[r.IntN(len(specials))]
					}
				}
				y := make([]float32, 3*ldy+rows+1)
				for i := range y {
					y[i] = 42
				}
				gemvDotF32x4Z(k, &a[0], lda, &x[0], ldx, &y[0], ldy, rows, gemvTailMask(k))
				for i := 0; i < 4; i++ {
					for rr := 0; rr < rows; rr++ {
						want := gemvOrderF32(k, func(p int) float32 { return a[rr*lda+p] }, func(p int) float32 { return x[i*ldx+p] })
						if got := y[i*ldy+rr]; !sameF32(got, want) {
							t.Fatalf("k=%d rows=%d trial %d: y[%d][%d] = %v, want %v", k, rows, trial, i, rr, got, want)
						}
					}
					for rr := rows; rr < ldy && i*ldy+rr < len(y); rr++ {
						if y[i*ldy+rr] != 42 {
							t.Fatalf("k=%d rows=%d trial %d: wrote y[%d][%d]", k, rows, trial, i, rr)
						}
					}
				}
			}
		}
	}
}

// TestGEMVRowsBatchInvariant checks that an f32 or bf16 x·Wᵀ of m ≤
// gemvRowsMax activation rows runs on the dot-form kernels and gives
// every row the bits of that row's batch-1 product, at every level with
// the gemv kernels, on one thread and shared; one row more takes another
// path.
func TestGEMVRowsBatchInvariant(t *testing.T) {
	r := rand.New(rand.NewPCG(81, 82))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer func(v int) { gemvParallelMACs = v }(gemvParallelMACs)
	enc := func(dt dtype.DType, v []float32) []byte {
		b := make([]byte, len(v)*dt.Size())
		for i, x := range v {
			dtype.PutFloat64(dt, b, i, float64(x))
		}
		return b
	}
	dot := func(ks *kset, dt dtype.DType, m, n, k int, x, w []byte) []byte {
		out := make([]byte, m*n*dt.Size())
		c := xwtCall(dt, m, n, k, x, w, out)
		c.ks = ks
		if err := dotGeneralKernel(c); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, dt := range []dtype.DType{dtype.F32, dtype.BF16} {
		for _, sh := range [][2]int{{40, 33}, {100, 64}, {300, 576}, {1536, 97}} {
			n, k := sh[0], sh[1]
			wv := make([]float32, n*k)
			for i := range wv {
				wv[i] = float32(r.NormFloat64())
			}
			w := enc(dt, wv)
			for _, level := range levels() {
				if level == LevelGeneric {
					continue
				}
				for _, procs := range []int{1, 2} {
					runtime.GOMAXPROCS(procs)
					for _, macs := range []int{1 << 40, 0} {
						gemvParallelMACs = macs
						ks := ksetFor(level)
						for m := 2; m <= gemvRowsMax+1; m++ {
							if m >= n {
								break
							}
							xv := make([]float32, m*k)
							for i := range xv {
								xv[i] = float32(r.NormFloat64())
							}
							x := enc(dt, xv)
							hits := gemvHits.Load()
							got := dot(ks, dt, m, n, k, x, w)
							if took := gemvHits.Load() > hits; took != (m <= gemvRowsMax) {
								t.Fatalf("%s %s n=%d k=%d m=%d: gemv path taken %v", dt, level, n, k, m, took)
							}
							if m > gemvRowsMax {
								continue
							}
							es := dt.Size()
							for i := 0; i < m; i++ {
								one := dot(ks, dt, 1, n, k, x[i*k*es:(i+1)*k*es], w)
								if !bytes.Equal(got[i*n*es:(i+1)*n*es], one) {
									t.Fatalf("%s %s procs=%d macs=%d n=%d k=%d m=%d: row %d differs from its batch-1 product", dt, level, procs, macs, n, k, m, i)
								}
							}
						}
					}
				}
			}
		}
	}
}

// BenchmarkGEMVRowsBF16 is BenchmarkGEMVRows for bf16 x, W and output:
// the dot-form kernels (dotBF16GEMV, path=gemv) against the general
// driver's path (the VDPBF16PS or f32 GEMM, path=gemm).
func BenchmarkGEMVRowsBF16(b *testing.B) { benchGEMVRows(b, dtype.BF16, []int{1, 2, 4, 8}, "gemm") }

// TestGEMVDotBF16x4 is TestGEMVDotF32x4 for the four-vector bf16 kernel
// against the bf16 dot order's model (gemvOrderBF16), the vectors
// deinterleaved as dotBF16GEMV passes them.
func TestGEMVDotBF16x4(t *testing.T) {
	sup := SupportedLevels()
	if gemvDotBF16x4Z == nil || levelRank(sup[len(sup)-1]) < levelRank(LevelAVX512) {
		t.Skip("no AVX-512 on this CPU or build")
	}
	r := rand.New(rand.NewPCG(73, 74))
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-40, -1e-40, 0, float32(math.Copysign(0, -1))}
	for _, k := range []int{1, 7, 16, 31, 32, 33, 63, 64, 65, 100, 576, 1031} {
		kp := roundUp(k, 32)
		for _, rows := range []int{1, 2, 3, 5, 16} {
			for trial := 0; trial < 3; trial++ {
				lda, ldx, ldy := k+trial*3, kp+32*trial, rows+2*trial
				a := make([]float32, (rows-1)*lda+k)
				for i := range a {
					a[i] = dtype.RoundBF16(float32(r.NormFloat64()))
				}
				xn := make([][]float32, 4)
				for i := range xn {
					xn[i] = make([]float32, k)
					for p := range xn[i] {
						xn[i][p] = float32(r.NormFloat64())
					}
				}
				if trial == 2 {
					for n := 0; n < 1+k/8; n++ {
						a[r.IntN(len(a))] = dtype.RoundBF16(specials[r.IntN(len(specials))])
						xn[r.IntN(4)][r.IntN(k)] = specials[r.IntN(len(specials))]
					}
				}
				ab := make([]dtype.BFloat16, len(a))
				for i, v := range a {
					ab[i] = dtype.BF16FromF32(v)
				}
				xd := make([]float32, 3*ldx+kp)
				for i := range xn {
					gemvDeinterleave(xd[i*ldx:i*ldx+kp], xn[i])
				}
				y := make([]float32, 3*ldy+rows+1)
				for i := range y {
					y[i] = 42
				}
				gemvDotBF16x4Z(k, (*uint16)(&ab[0]), lda, &xd[0], ldx, &y[0], ldy, rows, gemvTailMask16(k))
				for i := 0; i < 4; i++ {
					for rr := 0; rr < rows; rr++ {
						want := gemvOrderBF16(k, func(p int) float32 { return a[rr*lda+p] }, func(p int) float32 { return xn[i][p] })
						if got := y[i*ldy+rr]; !sameF32(got, want) {
							t.Fatalf("k=%d rows=%d trial %d: y[%d][%d] = %v, want %v", k, rows, trial, i, rr, got, want)
						}
					}
					for rr := rows; rr < ldy && i*ldy+rr < len(y); rr++ {
						if y[i*ldy+rr] != 42 {
							t.Fatalf("k=%d rows=%d trial %d: wrote y[%d][%d]", k, rows, trial, i, rr)
						}
					}
				}
			}
		}
	}
}

// TestGEMVDeinterleave checks the dot kernels' activation order (and
// its fused bf16 widening) against its definition, at every length
// through three 32-value chunks, with dirty destinations.
func TestGEMVDeinterleave(t *testing.T) {
	for k := range 100 {
		x := make([]float32, k)
		xb := make([]dtype.BFloat16, k)
		for i := range x {
			xb[i] = dtype.BF16FromF32(float32(i+1) * 0.75)
			x[i] = xb[i].F32()
		}
		kp := roundUp(k, 32)
		want := make([]float32, kp)
		for i, v := range x {
			want[i/32*32+i%32/2+16*(i%2)] = v
		}
		got, gotB := make([]float32, kp), make([]float32, kp)
		for i := range got {
			got[i], gotB[i] = -1, -1
		}
		gemvDeinterleave(got, x)
		gemvWidenDeinterleave(gotB, xb)
		if !slices.Equal(got, want) || !slices.Equal(gotB, want) {
			t.Fatalf("k=%d:\n got  %v\n bf16 %v\n want %v", k, got, gotB, want)
		}
	}
}
