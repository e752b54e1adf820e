//go:build amd64 && !purego

package cpu

import "github.com/gotpu/gotpu/backend/cpu/internal/gemm"

// pack6F32 is the six-row interleave of packF32Fast for rows lda elements
// apart starting at src[0]: dst[p*6+r] = src[r*lda+p] for p < n. dst must
// hold n*6 values and src the six rows.
func pack6F32(ks *kset, dst, src []float32, lda, n int) {
	_ = dst[n*6-1]
	_ = src[5*lda+n-1]
	done := 0
	if ks.atLeast(LevelAVX2) && haveAVX2() && n > 8 {
		// The assembly writes two values past each block of eight steps:
		// keep the last step (at least) for the loop below.
		done = (n - 1) / 8 * 8
		gemm.PackA6F32AVX2(&dst[0], &src[0], lda, done)
	}
	pack6F32Go(dst[done*6:], src[done:], lda, n-done)
}
