//go:build amd64 && !purego

package cpu

// gemvAxpyBF16 continues (load 1) or starts from zero (load 0) y[j] (j <
// n, a multiple of 8) with the FMA chain over p < k, in order, of
// x[p]*float32(b[p*ldb+j]).
//
//go:noescape
func gemvAxpyBF16(k int, x *float32, b *uint16, ldb int, y *float32, n int, load int)

func init() {
	if haveAVX2() {
		gemvAsmBF16 = &gemvKernelsBF16{axpy: gemvAxpyBF16}
	}
}
