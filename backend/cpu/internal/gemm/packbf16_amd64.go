//go:build amd64 && !purego

package gemm

// PackT8WBF16 is PackT8WF32 for bf16 values, widened to f32:
// dst[p*w+r] = f32(src[r*lds+p]) for r < 8, p < n (n a multiple of 8).
// AVX2.
//
//go:noescape
func PackT8WBF16(dst *float32, src *uint16, lds, n, w int)

// PackA6BF16AVX2 is PackA6F32AVX2 for bf16 values, widened to f32:
// dst[p*6+r] = f32(src[r*lda+p]) for p < n, n a multiple of 8, with the
// same two values written past each block of eight steps (the caller owns
// dst[n*6], dst[n*6+1] and overwrites them afterwards).
//
//go:noescape
func PackA6BF16AVX2(dst *float32, src *uint16, lda, n int)
