//go:build amd64 && !purego

package cpu

import "github.com/gotpu/gotpu/backend/cpu/internal/gemm"

//go:generate sh -c "python3 ../../tools/bf16asm/gen_conv.py > conv_bf16_amd64.s"
//go:generate sh -c "python3 ../../tools/bf16asm/gen_conv_direct.py > conv_bf16_direct_amd64.s"

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

// convDirectBF16x8x32, x12x32 and x14x32 accumulate a packed A panel
// (kc/2 pair steps of 8, 12 or 14 dwords; kc even) times B read from the
// padded input (pair step j: the 32 values at src+koff[2j], step 2j, and
// at src+koff[2j+1]) into the tile at c (row stride ldc), loaded first
// when load is 1 (conv_bf16_direct_amd64.s, AVX512_BF16): the packed
// kernels' arithmetic without the packed panel. The caller checks the
// bounds: 32 values from src+koff[k] for every k.
//
//go:noescape
func convDirectBF16x8x32(kc int, a *float32, src *uint16, koff *int, c *float32, ldc int, load int)

//go:noescape
func convDirectBF16x12x32(kc int, a *float32, src *uint16, koff *int, c *float32, ldc int, load int)

//go:noescape
func convDirectBF16x14x32(kc int, a *float32, src *uint16, koff *int, c *float32, ldc int, load int)

func init() {
	if haveAVX512BF16() {
		convPairKerns[8] = gemm.BF16x8x32
		convPairKerns[12] = gemm.BF16x12x32
		convPairKerns[14] = gemm.BF16x14x32
		convDirectBF16Kerns[8] = convDirectBF16x8x32
		convDirectBF16Kerns[12] = convDirectBF16x12x32
		convDirectBF16Kerns[14] = convDirectBF16x14x32
	}
}
