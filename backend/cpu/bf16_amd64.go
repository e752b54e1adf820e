//go:build amd64 && !purego

package cpu

// bf16WidenAVX2 sets dst[i] to the float32 value of the bfloat16 src[i]
// for i < n, a multiple of 8.
//
//go:noescape
func bf16WidenAVX2(dst *float32, src *uint16, n int)

// bf16PackAVX2 sets dst[i] to the top 16 bits of src[i] for i < n, a
// multiple of 8: the bfloat16 of a value already rounded to bfloat16.
//
//go:noescape
func bf16PackAVX2(dst *uint16, src *float32, n int)

// gemvDotBF16x16 sets y[r] (r < 16) to the FMA chain over p < k (a
// multiple of 8), in order from zero, of float32(a[r*lda+p])*x[p].
//
//go:noescape
func gemvDotBF16x16(k int, a *uint16, lda int, x, y *float32)

// gemvDotBF16x16s is gemvDotBF16x16 for k >= 32 with the rows of the
// high lane a cache line behind (fewer L1 conflicts for strides that are
// multiples of 4 KiB); the same results.
//
//go:noescape
func gemvDotBF16x16s(k int, a *uint16, lda int, x, y *float32)

// gemvAxpyBF16 continues (load 1) or starts from zero (load 0) y[j] (j <
// n, a multiple of 8) with the FMA chain over p < k, in order, of
// x[p]*float32(b[p*ldb+j]).
//
//go:noescape
func gemvAxpyBF16(k int, x *float32, b *uint16, ldb int, y *float32, n int, load int)

func init() {
	if haveAVX2() {
		bf16WidenAsm = bf16WidenAVX2
		bf16PackAsm = bf16PackAVX2
		gemvAsmBF16 = &gemvKernelsBF16{dot16: gemvDotBF16x16, dot16s: gemvDotBF16x16s, axpy: gemvAxpyBF16}
	}
}
