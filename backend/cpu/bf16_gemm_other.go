//go:build !amd64 || purego

package cpu

// asmTileBF16 and asmTileBF16Deep are nil without the amd64 assembly kernels.
var asmTileBF16, asmTileBF16Deep *gemmTile[float32]
