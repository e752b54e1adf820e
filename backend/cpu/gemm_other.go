//go:build !amd64 || purego

package cpu

// haveAVX2 is false without the amd64 assembly kernels.
func haveAVX2() bool { return false }

// haveAVX512 is false without the amd64 assembly kernels.
func haveAVX512() bool { return false }

// haveAVX512BF16 is false without the amd64 assembly kernels.
func haveAVX512BF16() bool { return false }

var (
	asmTileF32 *gemmTile[float32]
	asmTileF64 *gemmTile[float64]
)
