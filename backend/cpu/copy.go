package cpu

import (
	"math"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

func init() {
	RegisterKernel(op.Copy, Kernel{Run: func(c *Call) error { castLoop(c.kernels(), c.In[0], c.InB[0], c.Out[0], c.OutB[0]); return nil }})
	RegisterKernel(op.Convert, Kernel{Run: func(c *Call) error { castLoop(c.kernels(), c.In[0], c.InB[0], c.Out[0], c.OutB[0]); return nil }})
	// copy_(dst, src): src (broadcast to dst) cast into dst's strided layout.
	RegisterKernel(op.CopyInPlace, Kernel{Run: func(c *Call) error {
		dst, src := c.In[0], c.In[1]
		bl, ok := src.Layout.BroadcastTo(dst.Shape)
		if !ok {
			bl = src.Layout
		}
		src.Layout = bl
		castLoop(c.kernels(), src, c.InB[1], dst, c.InB[0])
		return nil
	}})
}

// castLoop copies src into dst (same shape, any layouts), converting dtypes as
// PyTorch's .to(dtype) does: float -> int truncates toward zero; NaN -> int
// gives the integer minimum as x86 does; any -> bool is "!= 0".
func castLoop(ks *kset, s device.Operand, srcB []byte, d device.Operand, dstB []byte) {
	sdt, ddt := s.DType, d.DType
	if sdt == ddt && transposeCopy(ks, s, srcB, d, dstB) {
		return
	}
	if sdt == ddt {
		switch sdt.Size() {
		case 1:
			moveLoop[uint8](s, srcB, d, dstB)
		case 2:
			moveLoop[uint16](s, srcB, d, dstB)
		case 4:
			moveLoop[uint32](s, srcB, d, dstB)
		case 8:
			moveLoop[uint64](s, srcB, d, dstB)
		}
		return
	}
	if castFloat16s(ks, s, srcB, d, dstB) {
		return
	}
	load := loader(sdt)
	store := storer(ddt)
	forEachRun(d.Shape, [][]int{d.Strides, s.Strides}, []int{d.Offset, s.Offset}, func(offs []int, n int, inner []int) {
		o, a, so, sa := offs[0], offs[1], inner[0], inner[1]
		for i := 0; i < n; i++ {
			store(dstB, o+i*so, load(srcB, a+i*sa))
		}
	})
}

func moveLoop[T uint8 | uint16 | uint32 | uint64](s device.Operand, srcB []byte, d device.Operand, dstB []byte) {
	src, dst := as[T](srcB), as[T](dstB)
	forEachRun(d.Shape, [][]int{d.Strides, s.Strides}, []int{d.Offset, s.Offset}, func(offs []int, n int, inner []int) {
		o, a, so, sa := offs[0], offs[1], inner[0], inner[1]
		if so == 1 && sa == 1 {
			copy(dst[o:o+n], src[a:a+n])
			return
		}
		if so == 1 && sa == 0 {
			// A broadcast element (zeros expanded to a shape): a fill.
			if v := src[a]; v == 0 {
				clear(dst[o : o+n])
			} else {
				d := dst[o : o+n]
				for i := range d {
					d[i] = v
				}
			}
			return
		}
		for i := 0; i < n; i++ {
			dst[o+i*so] = src[a+i*sa]
		}
	})
}

// value is an element in transit between dtypes: a float64 for floats, an
// int64 for integers, so that i64 <-> i64-range conversions stay exact.
type value struct {
	f     float64
	i     int64
	isInt bool
}

func loader(d dtype.DType) func(b []byte, i int) value {
	if d.IsFloat() {
		return func(b []byte, i int) value { return value{f: dtype.Float64At(d, b, i)} }
	}
	return func(b []byte, i int) value { return value{i: dtype.Int64At(d, b, i), isInt: true} }
}

func storer(d dtype.DType) func(b []byte, i int, v value) {
	switch {
	case d == dtype.Bool:
		return func(b []byte, i int, v value) {
			nz := v.i != 0
			if !v.isInt {
				nz = v.f != 0
			}
			if nz {
				b[i] = 1
			} else {
				b[i] = 0
			}
		}
	case d.IsFloat():
		return func(b []byte, i int, v value) {
			f := v.f
			if v.isInt {
				f = float64(v.i)
			}
			dtype.PutFloat64(d, b, i, f)
		}
	}
	return func(b []byte, i int, v value) {
		x := v.i
		if !v.isInt {
			x = floatToInt(v.f)
		}
		dtype.PutInt64(d, b, i, x)
	}
}

// floatToInt truncates like a C cast on x86-64: NaN and out-of-range values
// give math.MinInt64 (the "integer indefinite" value).
func floatToInt(f float64) int64 {
	if math.IsNaN(f) || f >= 9.223372036854775807e18 || f < -9.223372036854775808e18 {
		return math.MinInt64
	}
	return int64(f)
}
