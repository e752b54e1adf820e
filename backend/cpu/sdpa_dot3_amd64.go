//go:build amd64 && !purego

package cpu

// sdpaDot3F32x16 sets y[h*ldy+r] (h < 3, r < 16) to the FMA chain over
// p < k, in order from zero, of a[r*lda+p]*x[h*ldx+p]: gemm.GemvDotF32x16 for
// three vectors at once, each 8x8 block of a transposed once for all
// three. k must be a positive multiple of 8. It prefetches the sixteen
// rows that follow.
//
//go:noescape
func sdpaDot3F32x16(k int, a *float32, lda int, x *float32, ldx int, y *float32, ldy int)

// sdpaDot3BF16x16 is sdpaDot3F32x16 with bf16 rows in a, widened as they
// are loaded: the bits of sdpaDot3F32x16 over the widened rows.
//
//go:noescape
func sdpaDot3BF16x16(k int, a *uint16, lda int, x *float32, ldx int, y *float32, ldy int)

// The row path, the only caller, runs at level avx2 and above.
func init() {
	if haveAVX2() {
		sdpaDot3 = sdpaDot3F32x16
		sdpaDot3BF16 = sdpaDot3BF16x16
	}
}
