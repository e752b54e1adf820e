//go:build !amd64 || purego

package cpu

// No AVX-512 kernels without the amd64 assembly.
var (
	asm512TileF32 *gemmTile[float32]
	asm512TileF64 *gemmTile[float64]
)
