//go:build amd64 && !purego

package cpu

// pairInterleaveAVX512 interleaves panels of w columns (a multiple of 16)
// of two k steps: dst[p*stride+c] = a[p*w+c]<<16 | b[p*w+c] for p <
// panels, c < w (level avx512).
//
//go:noescape
func pairInterleaveAVX512(dst *uint32, a, b *uint16, w, panels, stride int)

func init() {
	if haveAVX512() {
		pairInterleaveAsm = pairInterleaveAVX512
	}
}
