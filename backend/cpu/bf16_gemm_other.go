//go:build !amd64 || purego

package cpu

// asmTileBF16 is nil without the amd64 assembly kernels.
var asmTileBF16 *gemmTile[float32]
