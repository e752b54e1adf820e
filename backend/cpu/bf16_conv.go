package cpu

import (
	"unsafe"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
)

// Block conversions between bfloat16 and float32, the first and last step
// of every bf16 fast path here (elementwise ops, softmax, norms, GEMV):
// PyTorch computes bf16 ops in float32 and rounds each result to bf16
// once, so a bf16 kernel is a widen, the float32 kernel, and a narrow. At
// CPU level avx2 the bulk of a block runs in assembly (bf16_amd64.s, and
// the rounding of gemm_round_amd64.s); the generic level and the last
// len%8 elements run the Go loops, which give the same bits.

// The assembly block conversions (bf16_amd64.go), nil where there are none.
var (
	bf16WidenAsm func(dst *float32, src *uint16, n int)
	bf16PackAsm  func(dst *uint16, src *float32, n int)
	// bf16NarrowAsm512 rounds and packs in one pass (level avx512).
	bf16NarrowAsm512 func(dst *uint16, src *float32, n int)
)

// bf16Widen sets dst[i] to the float32 value of src[i] (exact) for i <
// len(dst); src must be at least as long.
func bf16Widen(dst []float32, src []dtype.BFloat16) {
	n := len(dst)
	src = src[:n]
	i := 0
	if n8 := n &^ 7; n8 > 0 && bf16WidenAsm != nil && atLeast(LevelAVX2) {
		bf16WidenAsm(&dst[0], (*uint16)(unsafe.Pointer(&src[0])), n8)
		i = n8
	}
	for ; i < n; i++ {
		dst[i] = src[i].F32()
	}
}

// bf16Narrow sets dst[i] to dtype.BF16FromF32(src[i]) (round to nearest
// even, NaN kept with its quiet bit set) for i < len(src); dst must be at
// least as long. src is scratch: its contents are unspecified afterwards
// (the avx2 path rounds it in place, the avx512 one reads it only).
func bf16Narrow(dst []dtype.BFloat16, src []float32) {
	n := len(src)
	dst = dst[:n]
	i := 0
	if n16 := n &^ 15; n16 > 0 && bf16NarrowAsm512 != nil && atLeast(LevelAVX512) {
		bf16NarrowAsm512((*uint16)(unsafe.Pointer(&dst[0])), &src[0], n16)
		i = n16
	} else if n8 := n &^ 7; n8 > 0 && bf16PackAsm != nil && roundBF16Vec != nil && atLeast(LevelAVX2) {
		roundBF16Vec(&src[0], n8, 0)
		bf16PackAsm((*uint16)(unsafe.Pointer(&dst[0])), &src[0], n8)
		i = n8
	}
	for ; i < n; i++ {
		dst[i] = dtype.BF16FromF32(src[i])
	}
}

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
func castFloat16s(s device.Operand, srcB []byte, d device.Operand, dstB []byte) bool {
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
					bf16Narrow(dst[o+i:o+i+c], buf[:c])
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
				bf16Widen(dst[o:o+n], src[a:a+n])
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
