package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gotpu/gotpu/backend/cpu/internal/vec"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// bf16ULPs returns how many bf16 steps apart a and b are (0 for two
// NaNs, a large number for a NaN and a number).
func bf16ULPs(a, b dtype.BFloat16) int {
	an, bn := a.F32() != a.F32(), b.F32() != b.F32()
	if an || bn {
		if an && bn {
			return 0
		}
		return 1 << 20
	}
	ord := func(v dtype.BFloat16) int {
		if v&0x8000 != 0 {
			return -int(v & 0x7fff)
		}
		return int(v)
	}
	d := ord(a) - ord(b)
	if d < 0 {
		d = -d
	}
	return d
}

// bf16RowCase is one row layout of the row-kernel tests.
type bf16RowCase struct{ rows, d int }

func bf16RowCases() []bf16RowCase {
	var cs []bf16RowCase
	for _, d := range []int{1, 7, 15, 16, 17, 31, 33, 63, 65, 1000} {
		cs = append(cs, bf16RowCase{3, d})
	}
	return append(cs, bf16RowCase{0, 16}, bf16RowCase{150, 1000}, bf16RowCase{1, 2*bf16Block + 3})
}

// bf16RowInput returns rows*d values with specials in some rows: a NaN
// in row 1, an infinity in row 2, subnormals and large values elsewhere.
func bf16RowInput(r *rand.Rand, rows, d int, scale float64) []float32 {
	x := make([]float32, rows*d)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	if rows > 2 {
		x[1*d+d/2] = float32(math.NaN())
		x[2*d+d/3] = float32(math.Inf(1))
	}
	if rows > 0 && d > 4 {
		x[0] = math.Float32frombits(0x00010000)
		x[3] = -math.Float32frombits(0x00400000)
	}
	return x
}

// TestBF16SoftmaxRows checks bf16 softmax and log_softmax over the last
// dim: bit for bit equal to the f32 row kernel on the widened row rounded
// once, within one bf16 ulp of the float64 generic kernel, at both
// levels, into bf16 and f32 outputs.
func TestBF16SoftmaxRows(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	for _, tc := range bf16RowCases() {
		x := bf16RowInput(r, tc.rows, tc.d, 3)
		for _, name := range []string{"softmax", "log_softmax"} {
			for _, outDT := range []dtype.DType{dtype.BF16, dtype.F32} {
				for _, level := range levels() {
					sh := []int{tc.rows, tc.d}
					in := bf16Operand(x, op.Contiguous(sh))
					xb := as[dtype.BFloat16](in.Buf.(*Buf).b)
					attrs := op.Attrs{"dim": 1}
					if outDT == dtype.F32 {
						attrs["dtype"] = dtype.F32
					}
					l := bf16Launch(t, name, attrs, sh, outDT, in)
					ks := ksetFor(level)
					execBF16(t, ks, l)
					lg := bf16Launch(t, name, attrs, sh, outDT, in)
					fusedNN = false
					execBF16(t, procKS, lg)
					fusedNN = true
					row := (*vec.Kernels).SoftmaxRow
					if name == "log_softmax" {
						row = (*vec.Kernels).LogSoftmaxRow
					}
					xr, yr := make([]float32, tc.d), make([]float32, tc.d)
					for i := 0; i < tc.rows; i++ {
						for j := range xr {
							xr[j] = xb[i*tc.d+j].F32()
						}
						ks := ksetFor(level)
						row(ks.vec, yr, xr)
						for j := range yr {
							k := i*tc.d + j
							what := fmt.Sprintf("%s %s %dx%d -> %s [%d,%d]", level, name, tc.rows, tc.d, outDT, i, j)
							if outDT == dtype.F32 {
								got, gen := as[float32](l.Out[0].Buf.(*Buf).b)[k], as[float32](lg.Out[0].Buf.(*Buf).b)[k]
								if math.Float32bits(got) != math.Float32bits(yr[j]) && !(got != got && yr[j] != yr[j]) {
									t.Fatalf("%s: %g, want %g", what, got, yr[j])
								}
								if !fusedClose(got, float64(gen), 1e-5, 1e-6) {
									t.Fatalf("%s: %g, generic kernel %g", what, got, gen)
								}
								continue
							}
							got, gen := as[dtype.BFloat16](l.Out[0].Buf.(*Buf).b)[k], as[dtype.BFloat16](lg.Out[0].Buf.(*Buf).b)[k]
							if want := dtype.BF16FromF32(yr[j]); got != want {
								t.Fatalf("%s: %#04x, want %#04x", what, uint16(got), uint16(want))
							}
							if bf16ULPs(got, gen) > 1 {
								t.Fatalf("%s: %g, generic kernel %g", what, got.F32(), gen.F32())
							}
						}
					}
				}
			}
		}
	}
}

// TestBF16Norms checks bf16 layer_norm (with and without weight and bias)
// and rms_norm: bit for bit equal to the f32 row kernels on the widened
// row rounded once, within one bf16 ulp of the float64 generic layer_norm
// kernel (and of the float64 definition for rms_norm), at both levels.
func TestBF16Norms(t *testing.T) {
	r := rand.New(rand.NewPCG(63, 64))
	for _, tc := range bf16RowCases() {
		x := bf16RowInput(r, tc.rows, tc.d, 2)
		for i := range x {
			x[i] += 0.5
		}
		w, b := bf16RowInput(r, 1, tc.d, 1), bf16RowInput(r, 1, tc.d, 1)
		for _, name := range []string{"layer_norm", "rms_norm"} {
			for _, affine := range []bool{false, true} {
				for _, level := range levels() {
					sh := []int{tc.rows, tc.d}
					in := bf16Operand(x, op.Contiguous(sh))
					wo, bo := device.Operand{}, device.Operand{}
					if affine {
						wo, bo = bf16Operand(w, op.Contiguous([]int{tc.d})), bf16Operand(b, op.Contiguous([]int{tc.d}))
					}
					ins := []device.Operand{in, wo, bo}
					eps := 1e-5
					attrs := op.Attrs{"normalized_shape": []int{tc.d}, "eps": eps}
					if name == "rms_norm" {
						ins = ins[:2]
						attrs = op.Attrs{"normalized_shape": []int{tc.d}}
						eps = math.Ldexp(1, -7)
					}
					l := bf16Launch(t, name, attrs, sh, dtype.BF16, ins...)
					ks := ksetFor(level)
					execBF16(t, ks, l)
					got := as[dtype.BFloat16](l.Out[0].Buf.(*Buf).b)
					var gen []dtype.BFloat16
					if name == "layer_norm" {
						lg := bf16Launch(t, name, attrs, sh, dtype.BF16, ins...)
						fusedNN = false
						execBF16(t, procKS, lg)
						fusedNN = true
						gen = as[dtype.BFloat16](lg.Out[0].Buf.(*Buf).b)
					}
					xb := as[dtype.BFloat16](in.Buf.(*Buf).b)
					var wf, bf []float32
					if affine {
						wf, bf = make([]float32, tc.d), make([]float32, tc.d)
						for j := range wf {
							wf[j] = as[dtype.BFloat16](wo.Buf.(*Buf).b)[j].F32()
							bf[j] = as[dtype.BFloat16](bo.Buf.(*Buf).b)[j].F32()
						}
					}
					xr, yr, tmp := make([]float32, tc.d), make([]float32, tc.d), make([]float32, tc.d)
					for i := 0; i < tc.rows; i++ {
						for j := range xr {
							xr[j] = xb[i*tc.d+j].F32()
						}
						ks := ksetFor(level)
						if name == "rms_norm" {
							ks.vec.RMSNormRow(yr, xr, wf, tmp, eps)
						} else {
							ks.vec.LayerNormRow(yr, xr, wf, bf, tmp, eps)
						}
						var ref []float64
						if name == "rms_norm" {
							ref = make([]float64, tc.d)
							ms := 0.0
							for _, v := range xr {
								ms += float64(v) * float64(v)
							}
							rs := 1 / math.Sqrt(ms/float64(tc.d)+eps)
							for j, v := range xr {
								ref[j] = float64(v) * rs
								if affine {
									ref[j] *= float64(wf[j])
								}
							}
						}
						for j := range yr {
							k := i*tc.d + j
							what := fmt.Sprintf("%s %s affine=%v %dx%d [%d,%d]", level, name, affine, tc.rows, tc.d, i, j)
							if want := dtype.BF16FromF32(yr[j]); got[k] != want {
								t.Fatalf("%s: %#04x, want %#04x", what, uint16(got[k]), uint16(want))
							}
							want := dtype.BF16FromF32(float32(0))
							if gen != nil {
								want = gen[k]
							} else {
								want = dtype.BF16FromF32(float32(ref[j]))
							}
							if bf16ULPs(got[k], want) > 1 {
								t.Fatalf("%s: %g, reference %g", what, got[k].F32(), want.F32())
							}
						}
					}
				}
			}
		}
	}
}

// TestBF16RMSNormStrided checks rms_norm on a transposed bf16 view (the
// gather fallback), with and without a weight, equals it on the dense
// copy.
func TestBF16RMSNormStrided(t *testing.T) {
	r := rand.New(rand.NewPCG(65, 66))
	rows, d := 9, 33
	x := bf16RowInput(r, d, rows, 1) // stored [d, rows]
	tr := bf16Operand(x, op.Layout{Shape: []int{rows, d}, Strides: []int{1, rows}})
	dense := make([]float32, rows*d)
	for i := 0; i < rows; i++ {
		for j := 0; j < d; j++ {
			dense[i*d+j] = x[j*rows+i]
		}
	}
	attrs := op.Attrs{"normalized_shape": []int{d}}
	for _, w := range []device.Operand{{}, bf16Operand(bf16RowInput(r, 1, d, 1), op.Contiguous([]int{d}))} {
		ls := bf16Launch(t, "rms_norm", attrs, []int{rows, d}, dtype.BF16, tr, w)
		ld := bf16Launch(t, "rms_norm", attrs, []int{rows, d}, dtype.BF16, bf16Operand(dense, op.Contiguous([]int{rows, d})), w)
		execBF16(t, procKS, ls)
		execBF16(t, procKS, ld)
		gs, gd := as[dtype.BFloat16](ls.Out[0].Buf.(*Buf).b), as[dtype.BFloat16](ld.Out[0].Buf.(*Buf).b)
		for i := range gd {
			if gs[i] != gd[i] && !(gs[i].F32() != gs[i].F32() && gd[i].F32() != gd[i].F32()) {
				t.Fatalf("[%d]: strided %#04x, dense %#04x", i, uint16(gs[i]), uint16(gd[i]))
			}
		}
	}
}

// TestBF16NNAllocs checks the bf16 softmax and layer_norm paths allocate
// no more in steady state than the f32 paths of the same shape.
func TestBF16NNAllocs(t *testing.T) {
	for _, sh := range [][]int{{4, 100}, {64, 4096}} {
		n := sh[0] * sh[1]
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(i%100) / 7
		}
		for _, name := range []string{"softmax", "layer_norm"} {
			allocs := func(dt dtype.DType) float64 {
				operand := func(v []float32, s []int) device.Operand {
					if dt == dtype.BF16 {
						return bf16Operand(v, op.Contiguous(s))
					}
					return f32Operand(v, op.Contiguous(s))
				}
				ins := []device.Operand{operand(x, sh)}
				attrs := op.Attrs{"dim": 1}
				if name == "layer_norm" {
					ins = append(ins, operand(x[:sh[1]], sh[1:]), operand(x[:sh[1]], sh[1:]))
					attrs = op.Attrs{"normalized_shape": sh[1:]}
				}
				l := bf16Launch(t, name, attrs, sh, dt, ins...)
				c := &Call{Launch: l, OutB: [][]byte{l.Out[0].Buf.(*Buf).b}}
				for _, o := range ins {
					c.InB = append(c.InB, o.Buf.(*Buf).b)
				}
				run := kernels[op.MustLookup(name)].Run
				return testing.AllocsPerRun(10, func() {
					if err := run(c); err != nil {
						t.Fatal(err)
					}
				})
			}
			if b, f := allocs(dtype.BF16), allocs(dtype.F32); b > f {
				t.Errorf("%s %v: bf16 %v allocations per run, f32 %v", name, sh, b, f)
			} else {
				t.Logf("%s %v: bf16 %v, f32 %v allocations per run", name, sh, b, f)
			}
		}
	}
}

// TestBF16SoftmaxLayouts checks bf16 softmax and log_softmax give the same
// bits for a dense input, a transposed view and the transposed storage
// over dim 0, at both levels, into bf16 and f32.
func TestBF16SoftmaxLayouts(t *testing.T) {
	r := rand.New(rand.NewPCG(67, 68))
	const rows, d = 23, 300
	x := bf16RowInput(r, rows, d, 4)
	xt := make([]float32, len(x))
	for i := 0; i < rows; i++ {
		for j := 0; j < d; j++ {
			xt[j*rows+i] = x[i*d+j]
		}
	}
	for _, name := range []string{"softmax", "log_softmax"} {
		for _, outDT := range []dtype.DType{dtype.BF16, dtype.F32} {
			for _, level := range levels() {
				run := func(dim int, sh []int, in device.Operand) *device.Launch {
					attrs := op.Attrs{"dim": dim}
					if outDT == dtype.F32 {
						attrs["dtype"] = dtype.F32
					}
					l := bf16Launch(t, name, attrs, sh, outDT, in)
					ks := ksetFor(level)
					execBF16(t, ks, l)
					return l
				}
				dense := run(-1, []int{rows, d}, bf16Operand(x, op.Contiguous([]int{rows, d})))
				view := run(-1, []int{rows, d}, bf16Operand(xt, op.Layout{Shape: []int{rows, d}, Strides: []int{1, rows}}))
				dim0 := run(0, []int{d, rows}, bf16Operand(xt, op.Contiguous([]int{d, rows})))
				w := outDT.Size()
				for i := 0; i < rows; i++ {
					for j := 0; j < d; j++ {
						k, kt := i*d+j, j*rows+i
						a := dense.Out[0].Buf.(*Buf).b[k*w : (k+1)*w]
						b := view.Out[0].Buf.(*Buf).b[k*w : (k+1)*w]
						c := dim0.Out[0].Buf.(*Buf).b[kt*w : (kt+1)*w]
						if string(a) != string(b) || string(a) != string(c) {
							t.Fatalf("%s %s -> %s [%d,%d]: dense %x, view %x, dim 0 %x", level, name, outDT, i, j, a, b, c)
						}
					}
				}
			}
		}
	}
}
