//go:build amd64 && !purego

package cpu

// gemvDotBF16AVX512 sets y[r] (r < rows) to row r of the bf16 matrix a
// (rows lda values apart, widened to f32) dotted with the f32 vector x of
// length k, in the lane order of gemvOrderF32; tail points at 32 int32
// lanes, -1 for the first k%32 (gemvTailMask). AVX-512 F/BW/DQ.
//
//go:noescape
func gemvDotBF16AVX512(k int, a *uint16, lda int, x, y *float32, rows int, tail *int32)

// gemvDotBF16AVX2 is gemvDotBF16AVX512 on AVX2 (the same bits). When k%8
// is not zero it reads each row's values up to k rounded up to 8: the
// caller keeps those reads inside the matrix's memory.
//
//go:noescape
func gemvDotBF16AVX2(k int, a *uint16, lda int, x, y *float32, rows int, tail *int32)

func init() {
	gemvDotBF16Z, gemvDotBF16Y = gemvDotBF16AVX512, gemvDotBF16AVX2
}
