package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gotpu/gotpu/backend/cpu/internal/vec"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// bf16TestSizes are the lengths the bf16 paths are tested on: empty, short,
// around the 8-lane vectors and their unrolled blocks, several blocks.
var bf16TestSizes = []int{0, 1, 7, 15, 16, 17, 31, 33, 63, 65, 1000, 2*bf16Block + 9}

// bf16Specials are f32 values every conversion test includes: NaNs
// (quiet, signalling, negative, with payload bits that rounding would
// carry), infinities, zeros, subnormals, the largest finite values and
// rounding ties.
var bf16Specials = []uint32{
	0x7fc00000, 0x7f800001, 0xffc00001, 0x7fbfffff, 0x7f800000, 0xff800000,
	0, 0x80000000, 0x00000001, 0x00008000, 0x00018000, 0x807fffff, 0x7f7fffff,
	0xff7fffff, 0x7f7f8000, 0x3f808000, 0x3f818000, 0x3f807fff, 0x3f808001,
}

// bf16RandF32 returns n f32 values: normals over a wide range with
// every tenth a special.
func bf16RandF32(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		if i%10 == 3 {
			v[i] = math.Float32frombits(bf16Specials[r.IntN(len(bf16Specials))])
			continue
		}
		v[i] = float32(r.NormFloat64() * math.Exp2(float64(r.IntN(20)-10)))
	}
	return v
}

// TestBF16Widen checks the widening of all 65536 bfloat16 values, at
// every offset of a vector and both levels.
func TestBF16Widen(t *testing.T) {
	t.Parallel()
	src := make([]dtype.BFloat16, 1<<16+7)
	for i := range src {
		src[i] = dtype.BFloat16(i)
	}
	for _, level := range levels() {
		for _, off := range []int{0, 1, 7} {
			dst := make([]float32, 1<<16)
			ks := ksetFor(level)
			ks.vec.Widen(dst, src[off:])
			for i, v := range dst {
				if want := math.Float32bits(src[off+i].F32()); math.Float32bits(v) != want {
					t.Fatalf("%s off %d: widen(%#04x) = %#08x, want %#08x", level, off, uint16(src[off+i]), math.Float32bits(v), want)
				}
			}
		}
	}
	for _, n := range bf16TestSizes {
		dst := make([]float32, n+1)
		dst[n] = 42
		procKS.vec.Widen(dst[:n], src)
		if dst[n] != 42 {
			t.Fatalf("n=%d: widen wrote past its length", n)
		}
	}
}

// TestBF16Narrow checks rounding to bf16 bit for bit against
// dtype.BF16FromF32 on specials, ties and random bit patterns, at every
// length and both levels, and that nothing past the length is written.
func TestBF16Narrow(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(51, 52))
	for _, level := range levels() {
		for _, n := range append(bf16TestSizes, 1<<16) {
			src := make([]float32, n)
			for i := range src {
				switch i % 3 {
				case 0:
					src[i] = math.Float32frombits(bf16Specials[r.IntN(len(bf16Specials))])
				case 1:
					src[i] = math.Float32frombits(r.Uint32())
				default: // a tie or near-tie
					src[i] = math.Float32frombits(r.Uint32()&^0xffff | 0x8000 + uint32(r.IntN(3)) - 1)
				}
			}
			want := make([]dtype.BFloat16, n)
			for i, v := range src {
				want[i] = dtype.BF16FromF32(v)
			}
			got := make([]dtype.BFloat16, n+1)
			got[n] = 0x1234
			ks := ksetFor(level)
			ks.vec.Narrow(got, src)
			if got[n] != 0x1234 {
				t.Fatalf("%s n=%d: narrow wrote past its length", level, n)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%s n=%d: narrow [%d] = %#04x, want %#04x", level, n, i, uint16(got[i]), uint16(want[i]))
				}
			}
		}
	}
}

// bf16Launch builds a launch of op name over bf16 operands with the given
// layouts (buffers hold vals), output dense of outShape.
func bf16Launch(t *testing.T, name string, attrs op.Attrs, outShape []int, outDT dtype.DType, ins ...device.Operand) *device.Launch {
	t.Helper()
	d := op.MustLookup(name)
	a, err := d.Normalize(attrs)
	if err != nil {
		t.Fatal(err)
	}
	n := op.Numel(outShape)
	return &device.Launch{Op: d, Attrs: a, In: ins,
		Out: []device.Operand{{Buf: &Buf{b: make([]byte, outDT.Size()*max(n, 1))}, DType: outDT, Layout: op.Contiguous(outShape)}}}
}

// bf16Operand is a bf16 operand over a copy of v (rounded) with layout lay.
func bf16Operand(v []float32, lay op.Layout) device.Operand {
	b := make([]byte, 2*max(len(v), 1))
	for i, x := range v {
		as[dtype.BFloat16](b)[i] = dtype.BF16FromF32(x)
	}
	return device.Operand{Buf: &Buf{b: b}, DType: dtype.BF16, Layout: lay}
}

func execBF16(t *testing.T, ks *kset, l *device.Launch) {
	t.Helper()
	if err := execAt(ks, l, func(b device.Buffer) []byte { return b.(*Buf).b }); err != nil {
		t.Fatalf("%s: %v", l.Op.Name, err)
	}
}

// TestBF16Unary checks the dense bf16 unary paths against their
// definition, the f32 vec kernel on the widened input rounded once
// (computed element by element here), bit for bit at both levels, for
// every size (ragged tails, several blocks) and special inputs, and in
// place.
func TestBF16Unary(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	kernels := []struct {
		name  string
		attrs op.Attrs
		f     func(k *vec.Kernels, dst, a []float32)
	}{
		{"exp", nil, (*vec.Kernels).Exp}, {"log", nil, (*vec.Kernels).Log}, {"tanh", nil, (*vec.Kernels).Tanh},
		{"erf", nil, (*vec.Kernels).Erf}, {"sigmoid", nil, (*vec.Kernels).Sigmoid}, {"silu", nil, (*vec.Kernels).Silu},
		{"gelu", nil, (*vec.Kernels).Gelu}, {"gelu", op.Attrs{"approximate": "tanh"}, (*vec.Kernels).GeluTanh},
		{"relu", nil, (*vec.Kernels).Relu},
	}
	for _, n := range bf16TestSizes {
		x := bf16RandF32(r, n)
		for _, k := range kernels {
			for _, level := range levels() {
				for _, inPlace := range []bool{false, true} {
					in := bf16Operand(x, op.Contiguous([]int{n}))
					xb := append([]dtype.BFloat16(nil), as[dtype.BFloat16](in.Buf.(*Buf).b)[:n]...)
					l := bf16Launch(t, k.name, k.attrs, []int{n}, dtype.BF16, in)
					if inPlace {
						l.Out[0].Buf = in.Buf
					}
					ks := ksetFor(level)
					execBF16(t, ks, l)
					got := as[dtype.BFloat16](l.Out[0].Buf.(*Buf).b)
					var one [1]float32
					for i := 0; i < n; i++ {
						ks := ksetFor(level)
						k.f(ks.vec, one[:], []float32{xb[i].F32()})
						want := dtype.BF16FromF32(one[0])
						if got[i] != want {
							t.Fatalf("%s n=%d %s%v in-place=%v: [%d] f(%g) = %#04x, want %#04x", level, n, k.name, k.attrs, inPlace, i, xb[i].F32(), uint16(got[i]), uint16(want))
						}
					}
				}
			}
		}
	}
}

// TestBF16Binary checks dense (and either operand a broadcast scalar) bf16
// add, sub, mul and div bit for bit against the generic kernels' float64
// operation rounded to bf16, at both levels and every size.
func TestBF16Binary(t *testing.T) {
	r := rand.New(rand.NewPCG(55, 56))
	ops := []struct {
		name string
		f    func(a, b float64) float64
	}{
		{"add", func(a, b float64) float64 { return a + b }}, {"sub", func(a, b float64) float64 { return a - b }},
		{"mul", func(a, b float64) float64 { return a * b }}, {"div", func(a, b float64) float64 { return a / b }},
	}
	for _, n := range bf16TestSizes {
		x, y := bf16RandF32(r, n), bf16RandF32(r, n)
		for _, o := range ops {
			for _, scalar := range []int{0, 1, 2} { // none, second, first
				for _, level := range levels() {
					xlay, ylay := op.Contiguous([]int{n}), op.Contiguous([]int{n})
					switch scalar {
					case 1:
						ylay = op.Layout{Shape: []int{n}, Strides: []int{0}}
					case 2:
						xlay = op.Layout{Shape: []int{n}, Strides: []int{0}}
					}
					xo, yo := bf16Operand(x, xlay), bf16Operand(y, ylay)
					l := bf16Launch(t, o.name, nil, []int{n}, dtype.BF16, xo, yo)
					ks := ksetFor(level)
					execBF16(t, ks, l)
					got := as[dtype.BFloat16](l.Out[0].Buf.(*Buf).b)
					xb, yb := as[dtype.BFloat16](xo.Buf.(*Buf).b), as[dtype.BFloat16](yo.Buf.(*Buf).b)
					for i := 0; i < n; i++ {
						xi, yi := xb[i], yb[i]
						switch scalar {
						case 1:
							yi = yb[0]
						case 2:
							xi = xb[0]
						}
						want := dtype.BF16FromF32(float32(o.f(float64(xi.F32()), float64(yi.F32()))))
						if got[i] != want {
							t.Fatalf("%s n=%d %s scalar=%d: [%d] %g, %g -> %#04x, want %#04x", level, n, o.name, scalar, i, xi.F32(), yi.F32(), uint16(got[i]), uint16(want))
						}
					}
				}
			}
		}
	}
}

// TestBF16ElemAllocs checks the bf16 elementwise paths allocate no more
// in steady state than the f32 paths of the same op and size.
func TestBF16ElemAllocs(t *testing.T) {
	for _, n := range []int{1000, 4 * vecChunk} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(i%100) / 7
		}
		for _, name := range []string{"exp", "mul"} {
			allocs := func(dt dtype.DType) float64 {
				var in []device.Operand
				for range op.MustLookup(name).Inputs {
					if dt == dtype.BF16 {
						in = append(in, bf16Operand(x, op.Contiguous([]int{n})))
					} else {
						in = append(in, f32Operand(x, op.Contiguous([]int{n})))
					}
				}
				l := bf16Launch(t, name, nil, []int{n}, dt, in...)
				c := &Call{Launch: l, InB: [][]byte{}, OutB: [][]byte{l.Out[0].Buf.(*Buf).b}}
				for _, o := range in {
					c.InB = append(c.InB, o.Buf.(*Buf).b)
				}
				run := kernels[op.MustLookup(name)].Run
				return testing.AllocsPerRun(20, func() {
					if err := run(c); err != nil {
						t.Fatal(err)
					}
				})
			}
			if b, f := allocs(dtype.BF16), allocs(dtype.F32); b > f {
				t.Errorf("%s n=%d: bf16 %v allocations per run, f32 %v", name, n, b, f)
			} else {
				t.Logf("%s n=%d: %s", name, n, fmt.Sprintf("bf16 %v, f32 %v allocations per run", b, f))
			}
		}
	}
}

// TestBF16Routes checks which layouts the bf16 elementwise paths take:
// dense operands and one scalar operand run, a strided view or a
// non-bf16 operand is left to the general kernels.
func TestBF16Routes(t *testing.T) {
	x := make([]float32, 64)
	call := func(ins ...device.Operand) *Call {
		l := bf16Launch(t, "mul", nil, []int{8, 4}, dtype.BF16, ins...)
		c := &Call{Launch: l, OutB: [][]byte{l.Out[0].Buf.(*Buf).b}}
		for _, o := range ins {
			c.InB = append(c.InB, o.Buf.(*Buf).b)
		}
		return c
	}
	dense := bf16Operand(x, op.Contiguous([]int{8, 4}))
	scalar := bf16Operand(x, op.Layout{Shape: []int{8, 4}, Strides: []int{0, 0}, Offset: 5})
	strided := bf16Operand(x, op.Layout{Shape: []int{8, 4}, Strides: []int{8, 1}})
	f32 := f32Operand(x, op.Contiguous([]int{8, 4}))
	for _, tc := range []struct {
		name   string
		ins    []device.Operand
		binary bool
		want   bool
	}{
		{"dense unary", []device.Operand{dense}, false, true},
		{"strided unary", []device.Operand{strided}, false, false},
		{"f32 unary", []device.Operand{f32}, false, false},
		{"dense binary", []device.Operand{dense, dense}, true, true},
		{"scalar second", []device.Operand{dense, scalar}, true, true},
		{"scalar first", []device.Operand{scalar, dense}, true, true},
		{"both scalar", []device.Operand{scalar, scalar}, true, false},
		{"strided second", []device.Operand{dense, strided}, true, false},
		{"row second", []device.Operand{dense, bf16Operand(x, op.Layout{Shape: []int{8, 4}, Strides: []int{0, 1}})}, true, true},
		{"column second", []device.Operand{dense, bf16Operand(x, op.Layout{Shape: []int{8, 4}, Strides: []int{1, 0}})}, true, false},
		{"row first", []device.Operand{bf16Operand(x, op.Layout{Shape: []int{8, 4}, Strides: []int{0, 1}}), dense}, true, false},
	} {
		c := call(tc.ins...)
		var got bool
		if tc.binary {
			got = bf16RunBinary(c, vecOpMul)
		} else {
			got = bf16RunUnary(c, procKS.vec.Exp)
		}
		if got != tc.want {
			t.Errorf("%s: ran %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestBF16BinaryRowBroadcast checks add, sub, mul and div of a [rows, cols]
// bf16 tensor and a broadcast row ([cols], or [1, cols] with a stride-0
// leading dim) bit for bit against the float64 operation rounded to bf16,
// for ragged sizes at both levels.
func TestBF16BinaryRowBroadcast(t *testing.T) {
	r := rand.New(rand.NewPCG(57, 58))
	ops := map[string]func(a, b float64) float64{
		"add": func(a, b float64) float64 { return a + b }, "sub": func(a, b float64) float64 { return a - b },
		"mul": func(a, b float64) float64 { return a * b }, "div": func(a, b float64) float64 { return a / b },
	}
	for _, sh := range [][2]int{{3, 7}, {5, 33}, {70, 1000}, {2, 2*bf16Block + 5}} {
		rows, cols := sh[0], sh[1]
		x, y := bf16RandF32(r, rows*cols), bf16RandF32(r, cols)
		for name, f := range ops {
			for _, level := range levels() {
				xo := bf16Operand(x, op.Contiguous([]int{rows, cols}))
				yo := bf16Operand(y, op.Layout{Shape: []int{rows, cols}, Strides: []int{0, 1}})
				l := bf16Launch(t, name, nil, []int{rows, cols}, dtype.BF16, xo, yo)
				c := &Call{Launch: l, InB: [][]byte{xo.Buf.(*Buf).b, yo.Buf.(*Buf).b}, OutB: [][]byte{l.Out[0].Buf.(*Buf).b}}
				k := map[string]vecOp{"add": vecOpAdd, "sub": vecOpSub, "mul": vecOpMul, "div": vecOpDiv}[name]
				var ran bool
				ks := ksetFor(level)
				c.ks = ks
				ran = bf16RunBinary(c, k)
				if !ran {
					t.Fatalf("%s %dx%d: the row-broadcast path did not run", name, rows, cols)
				}
				got := as[dtype.BFloat16](l.Out[0].Buf.(*Buf).b)
				xb, yb := as[dtype.BFloat16](xo.Buf.(*Buf).b), as[dtype.BFloat16](yo.Buf.(*Buf).b)
				for i := 0; i < rows*cols; i++ {
					want := dtype.BF16FromF32(float32(f(float64(xb[i].F32()), float64(yb[i%cols].F32()))))
					if got[i] != want {
						t.Fatalf("%s %s %dx%d [%d]: %#04x, want %#04x", level, name, rows, cols, i, uint16(got[i]), uint16(want))
					}
				}
			}
		}
	}
}

// TestBF16NarrowEveryExponent narrows every high half (sign, exponent,
// top mantissa bits: every bf16 value, infinities and NaN payloads) with
// the low halves that decide the rounding (exact, below, at and above a
// tie, the largest), at every level, against dtype.BF16FromF32.
func TestBF16NarrowEveryExponent(t *testing.T) {
	t.Parallel()
	lows := []uint32{0, 1, 0x7fff, 0x8000, 0x8001, 0xffff}
	src := make([]float32, 0, 65536*len(lows))
	for hi := uint32(0); hi < 65536; hi++ {
		for _, lo := range lows {
			src = append(src, math.Float32frombits(hi<<16|lo))
		}
	}
	want := make([]dtype.BFloat16, len(src))
	for i, v := range src {
		want[i] = dtype.BF16FromF32(v)
	}
	for _, level := range levels() {
		buf := slices.Clone(src)
		got := make([]dtype.BFloat16, len(src))
		ks := ksetFor(level)
		ks.vec.Narrow(got, buf)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: narrow(%#08x) = %#04x, want %#04x", level, math.Float32bits(src[i]), uint16(got[i]), uint16(want[i]))
			}
		}
	}
}
