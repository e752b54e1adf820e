//go:build !amd64 || purego

package cpu

// pack6F32 is the six-row interleave of packF32Fast for rows lda elements
// apart starting at src[0]: dst[p*6+r] = src[r*lda+p] for p < n.
func pack6F32(_ *kset, dst, src []float32, lda, n int) { pack6F32Go(dst, src, lda, n) }
