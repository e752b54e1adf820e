//go:build amd64 && !purego

package gemm

// PackA6F32AVX2 interleaves six rows: dst[p*6+r] = src[r*lda+p] for
// p < n (a multiple of 8), writing dst[n*6] and dst[n*6+1] as well (see
// packa6_amd64.s).
//
//go:noescape
func PackA6F32AVX2(dst, src *float32, lda, n int)
