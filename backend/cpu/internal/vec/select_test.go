package vec

import (
	"math"
	"testing"
	"unsafe"
)

// TestCompare checks Compare and CompareScalar against Go's comparisons
// (Cmp.Of), every kind, at every level, bit for bit (bools of 0 or 1),
// lengths around the 32-element step, with NaN, signed zeros, infinities
// and subnormals on both sides, and stale outputs to overwrite.
func TestCompare(t *testing.T) {
	vals := []float32{float32(math.NaN()), 0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)),
		1e-45, -1e-45, 3.5, 2, 2, -7}
	ops := map[Cmp]func(a, b float32) bool{
		CmpEq: func(a, b float32) bool { return a == b }, CmpNe: func(a, b float32) bool { return a != b },
		CmpLt: func(a, b float32) bool { return a < b }, CmpLe: func(a, b float32) bool { return a <= b },
		CmpGt: func(a, b float32) bool { return a > b }, CmpGe: func(a, b float32) bool { return a >= b },
	}
	for c, f := range ops {
		for _, a := range vals {
			for _, b := range vals {
				if c.Of(a, b) != f(a, b) || c.Swapped().Of(b, a) != f(a, b) {
					t.Fatalf("kind %d: Of(%v, %v) = %v, Swapped().Of = %v, want %v", c, a, b, c.Of(a, b), c.Swapped().Of(b, a), f(a, b))
				}
			}
		}
	}
	for _, lv := range Levels() {
		k := For(lv)
		for _, n := range []int{0, 1, 31, 32, 33, 64, 95, 96, 200} {
			x := make([]float32, n+1)
			y := make([]float32, n+1)
			for i := range x {
				x[i], y[i] = vals[(i*7)%len(vals)], vals[(i*5+3)%len(vals)]
			}
			for c := CmpEq; c <= CmpGe; c++ {
				want := ops[c]
				for _, s := range vals {
					d := make([]bool, n)
					for i := range d {
						d[i] = i%3 == 0 // stale values the kernel must overwrite
					}
					k.CompareScalar(c, d, x[1:], s)
					for i := range d {
						if b := *(*byte)(unsafe.Pointer(&d[i])); d[i] != want(x[1+i], s) || b > 1 {
							t.Fatalf("%s n=%d kind %d: %v vs scalar %v = byte %d", lv, n, c, x[1+i], s, b)
						}
					}
				}
				d := make([]bool, n)
				for i := range d {
					d[i] = i%2 == 0
				}
				k.Compare(c, d, x[1:], y[:n])
				for i := range d {
					if b := *(*byte)(unsafe.Pointer(&d[i])); d[i] != want(x[1+i], y[i]) || b > 1 {
						t.Fatalf("%s n=%d kind %d: %v vs %v = byte %d", lv, n, c, x[1+i], y[i], b)
					}
				}
			}
		}
	}
}

// TestWhere checks the float-conditioned select against its definition
// at every level and length around the vector width, unaligned, in place
// over the condition, with NaN, -0 and +0 conditions, bit for bit.
func TestWhere(t *testing.T) {
	conds := []float32{0, 1, float32(math.NaN()), float32(math.Copysign(0, -1)), -2, 1e-45, float32(math.Inf(-1))}
	for _, lv := range Levels() {
		k := For(lv)
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 33, 100} {
			for _, off := range []int{0, 1} {
				c := make([]float32, n+off)
				a := make([]float32, n+off)
				b := make([]float32, n+off)
				for i := range c {
					c[i] = conds[(i*3)%len(conds)]
					a[i] = float32(i) + 0.5
					b[i] = -float32(i) - 0.25
				}
				want := make([]float32, n)
				for i := range want {
					if c[off+i] != 0 {
						want[i] = a[off+i]
					} else {
						want[i] = b[off+i]
					}
				}
				got := make([]float32, n)
				k.Where(got, c[off:], a[off:], b[off:])
				cc := append([]float32(nil), c[off:]...)
				k.Where(cc, cc, a[off:], b[off:])
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(cc[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s n=%d off=%d: element %d = %v (in place %v), want %v", lv, n, off, i, got[i], cc[i], want[i])
					}
				}
			}
		}
	}
}

// TestSelect32 checks the bool-conditioned select of 4-byte values (the
// where kernel's dense and one-value-broadcast runs) against its
// definition at every level: lengths around the 32-element step,
// unaligned starts, condition bytes other than 0 and 1, and NaN payloads
// and signed zeros passing through bit for bit.
func TestSelect32(t *testing.T) {
	vals := []uint32{math.Float32bits(float32(math.NaN())), 0x7fc00001, 0x80000000, 0, math.Float32bits(1.5), 0xffffffff}
	conds := []byte{0, 1, 0, 2, 255, 1, 1, 0, 0, 0, 1}
	for _, lv := range Levels() {
		k := For(lv)
		for _, n := range []int{0, 1, 31, 32, 33, 63, 64, 65, 96, 127, 128, 200, 1000} {
			for _, off := range []int{0, 1, 3} {
				for mode := range 3 {
					c := make([]byte, n+off)
					x := make([]uint32, n+off)
					y := make([]uint32, n+off)
					for i := range c {
						c[i] = conds[(i*7+off)%len(conds)]
						x[i] = vals[(i*5)%len(vals)] ^ uint32(i)
						y[i] = vals[(i*3+1)%len(vals)] + uint32(i)
					}
					got := make([]uint32, n)
					k.Select32(got, c[off:], x[off:], y[off:], mode)
					for i := range got {
						xv, yv := x[off+i], y[off+i]
						if mode == 2 {
							xv = x[off]
						}
						if mode == 1 {
							yv = y[off]
						}
						want := yv
						if c[off+i] != 0 {
							want = xv
						}
						if got[i] != want {
							t.Fatalf("%s n=%d off=%d mode=%d: d[%d] = %#x, want %#x", lv, n, off, mode, i, got[i], want)
						}
					}
				}
			}
		}
	}
}
