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
		gemvAsmBF16 = &gemvKernelsBF16{axpy: gemvAxpyBF16}
	}
}
