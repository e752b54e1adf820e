package cpu

import (
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
)

// The bf16 convert kernel over any layout, on internal/vec's block
// conversions (vec.Kernels.Widen and Narrow).

// bf16Block is the number of elements the bf16 elementwise paths convert
// at a time: blocks of it stay in L1 between the widen, the float32
// kernel and the narrow.
const bf16Block = 2048

// bf16Scratch returns pooled scratch of n float32 values (putScratch
// returns it).
func bf16Scratch(n int) (*[]byte, []float32) {
	p := getScratch(4 * n)
	return p, as[float32](*p)[:n:n]
}

// castFloat16s runs the conversions between float32 and bfloat16 or
// float16 of castLoop without its per-element float64 round trip (the
// bits are the same: widening is exact, and narrowing rounds to nearest
// even once, as BF16FromF32 and F16FromF32 do). It reports false for other
// dtype pairs.
func castFloat16s(ks *kset, s device.Operand, srcB []byte, d device.Operand, dstB []byte) bool {
	type pair struct{ from, to dtype.DType }
	switch (pair{s.DType, d.DType}) {
	case pair{dtype.F32, dtype.BF16}:
		src, dst := as[float32](srcB), as[dtype.BFloat16](dstB)
		forEachRun(d.Shape, [][]int{d.Strides, s.Strides}, []int{d.Offset, s.Offset}, func(offs []int, n int, inner []int) {
			o, a, so, sa := offs[0], offs[1], inner[0], inner[1]
			if so == 1 && sa == 1 {
				p, buf := bf16Scratch(min(n, bf16Block))
				for i := 0; i < n; i += len(buf) {
					c := min(len(buf), n-i)
					copy(buf[:c], src[a+i:a+i+c])
					ks.vec.Narrow(dst[o+i:o+i+c], buf[:c])
				}
				putScratch(p)
				return
			}
			for i := 0; i < n; i++ {
				dst[o+i*so] = dtype.BF16FromF32(src[a+i*sa])
			}
		})
	case pair{dtype.BF16, dtype.F32}:
		src, dst := as[dtype.BFloat16](srcB), as[float32](dstB)
		forEachRun(d.Shape, [][]int{d.Strides, s.Strides}, []int{d.Offset, s.Offset}, func(offs []int, n int, inner []int) {
			o, a, so, sa := offs[0], offs[1], inner[0], inner[1]
			if so == 1 && sa == 1 {
				ks.vec.Widen(dst[o:o+n], src[a:a+n])
				return
			}
			for i := 0; i < n; i++ {
				dst[o+i*so] = src[a+i*sa].F32()
			}
		})
	case pair{dtype.F32, dtype.F16}:
		src, dst := as[float32](srcB), as[dtype.Float16](dstB)
		forEachRun(d.Shape, [][]int{d.Strides, s.Strides}, []int{d.Offset, s.Offset}, func(offs []int, n int, inner []int) {
			o, a, so, sa := offs[0], offs[1], inner[0], inner[1]
			for i := 0; i < n; i++ {
				dst[o+i*so] = dtype.F16FromF32(src[a+i*sa])
			}
		})
	case pair{dtype.F16, dtype.F32}:
		src, dst := as[dtype.Float16](srcB), as[float32](dstB)
		forEachRun(d.Shape, [][]int{d.Strides, s.Strides}, []int{d.Offset, s.Offset}, func(offs []int, n int, inner []int) {
			o, a, so, sa := offs[0], offs[1], inner[0], inner[1]
			for i := 0; i < n; i++ {
				dst[o+i*so] = src[a+i*sa].F32()
			}
		})
	default:
		return false
	}
	return true
}
