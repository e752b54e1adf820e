//go:build amd64 && !purego

package gemm

// GemvDotF32x8 sets y[r] (r < 8) to the FMA chain over p < k, in order
// from zero, of a[r*lda+p]*x[p]: eight rows at a time, transposed in
// registers so each lane runs one row's chain.
//
//go:noescape
func GemvDotF32x8(k int, a *float32, lda int, x, y *float32)

// GemvDotF32x16 is GemvDotF32x8 for sixteen rows (two independent chains
// in flight).
//
//go:noescape
func GemvDotF32x16(k int, a *float32, lda int, x, y *float32)

// GemvAxpyF32 continues (load 1) or starts from zero (load 0) y[j] (j < n)
// with the FMA chain over p < k, in order, of x[p]*b[p*ldb+j]: a strip of
// columns at a time, each lane one column. mask points at eight int32
// lanes, -1 for the first n%8 and 0 for the rest, for the last partial
// strip.
//
//go:noescape
func GemvAxpyF32(k int, x, b *float32, ldb int, y *float32, n int, mask *int32, load int)

// GemvDotF32AVX512 sets y[r] (r < rows) to row r of a (rows lda apart)
// dotted with x, both of length k, in the lane order of gemm_gemv.go
// (four rows at a time, two 16-lane accumulators each); tail is
// gemvTailMask(k). AVX-512 F/DQ.
//
//go:noescape
func GemvDotF32AVX512(k int, a *float32, lda int, x, y *float32, rows int, tail *int32)

// GemvDotF32AVX2 is GemvDotF32AVX512 on AVX2 (two rows at a time, or one
// where GemvRowWalk says so; four 8-lane accumulators a row): the same
// bits.
//
//go:noescape
func GemvDotF32AVX2(k int, a *float32, lda int, x, y *float32, rows int, tail *int32)

// GemvAxpyF32AVX512 is GemvAxpyF32 on AVX-512 (mask unused; the same
// bits): strips of 256 columns, then 16, then the rest under a lane mask.
//
//go:noescape
func GemvAxpyF32AVX512(k int, x, b *float32, ldb int, y *float32, n int, mask *int32, load int)

// GemvDotF32x4AVX512 sets y[i*ldy+r] (i < 4, r < rows) to row r of a
// (rows lda apart) dotted with row i of x (rows ldx apart), all of length
// k, each with GemvDotF32AVX512's lane arithmetic and so its bits: W is
// read once for four rows of x (two W rows at a time, sixteen
// accumulators). tail is gemvTailMask(k). AVX-512 F/DQ.
//
//go:noescape
func GemvDotF32x4AVX512(k int, a *float32, lda int, x *float32, ldx int, y *float32, ldy int, rows int, tail *int32)
