//go:build amd64 && !purego

package cpu

// gemvDotBF16AVX512 sets y[r] (r < rows) to row r of the bf16 matrix a
// (rows lda values apart) dotted with x in the bf16 dot order of
// gemm_gemv.go: x is gemvDeinterleave's form of the f32 vector (k rounded
// up to 32 values), tail is gemvTailMask16(k). Eight rows at a time.
// AVX-512 F/BW.
//
//go:noescape
func gemvDotBF16AVX512(k int, a *uint16, lda int, x, y *float32, rows int, tail *int16)

// gemvDotBF16AVX2 is gemvDotBF16AVX512 on AVX2 (the same bits, two rows
// at a time). When k%32 is not zero it reads each row's values up to k
// rounded up to 16: the caller keeps those reads inside the matrix's
// memory.
//
//go:noescape
func gemvDotBF16AVX2(k int, a *uint16, lda int, x, y *float32, rows int, tail *int16)

// gemvAxpyBF16AVX512 is gemvAxpyBF16 on AVX-512 (the same bits): strips
// of 256 columns, then 16, then 8 (n is a multiple of 8).
//
//go:noescape
func gemvAxpyBF16AVX512(k int, x *float32, b *uint16, ldb int, y *float32, n int, load int)

func init() {
	gemvDotBF16Z, gemvDotBF16Y = gemvDotBF16AVX512, gemvDotBF16AVX2
	gemvAxpyBF16Z = gemvAxpyBF16AVX512
}
