package cpu

// pack6F32Go is the element loop of pack6F32: dst[p*6+r] = src[r*lda+p]
// for p < n, r < 6.
func pack6F32Go(dst, src []float32, lda, n int) {
	for p := 0; p < n; p++ {
		out := dst[p*6 : p*6+6 : p*6+6]
		out[0], out[1], out[2], out[3], out[4], out[5] = src[p], src[lda+p], src[2*lda+p], src[3*lda+p], src[4*lda+p], src[5*lda+p]
	}
}
