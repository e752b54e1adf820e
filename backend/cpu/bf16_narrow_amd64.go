//go:build amd64 && !purego

package cpu

// bf16NarrowAVX512 sets dst[i] to dtype.BF16FromF32(src[i]) for i < n, a
// multiple of 16, in one pass (level avx512).
//
//go:noescape
func bf16NarrowAVX512(dst *uint16, src *float32, n int)

// pairInterleaveAVX512 interleaves panels of w columns (a multiple of 16)
// of two k steps: dst[p*stride+c] = a[p*w+c]<<16 | b[p*w+c] for p <
// panels, c < w (level avx512).
//
//go:noescape
func pairInterleaveAVX512(dst *uint32, a, b *uint16, w, panels, stride int)

func init() {
	if haveAVX512() {
		bf16NarrowAsm512 = bf16NarrowAVX512
		pairInterleaveAsm = pairInterleaveAVX512
	}
}
