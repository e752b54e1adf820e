//go:build amd64 && !purego

package cpu

import "github.com/gotpu/gotpu/backend/cpu/internal/gemm"

//go:generate sh -c "python3 ../../tools/bf16asm/gen_conv.py > conv_bf16_amd64.s"

// convPair32 sets dst[32j+c] = src[koff[2j]+c]<<16 | src[koff[2j+1]+c] for
// c < 32 and j < n (conv_bf16_amd64.s, AVX-512): a 32-column B panel of
// the VDPBF16PS kernel whose columns are one contiguous run of the input.
// The caller checks the bounds.
//
//go:noescape
func convPair32(dst *uint32, src *uint16, koff *int, n int)

// convPairT16 sets dst[j*ldd+r] = src[offs[r]+2j]<<16 | src[offs[r]+2j+1]
// for r < 16 and j < n (conv_bf16_amd64.s, AVX-512): sixteen columns whose
// k steps run contiguously in the input, transposed into the pair layout.
// The caller checks the bounds.
//
//go:noescape
func convPairT16(dst *uint32, ldd int, src *uint16, offs *[16]int, n int)

func init() {
	if haveAVX512BF16() {
		convPairKerns[8] = gemm.BF16x8x32
		convPairKerns[12] = gemm.BF16x12x32
		convPairKerns[14] = gemm.BF16x14x32
	}
}
