//go:build amd64 && !purego

package gemm

// AMX32x32 accumulates a 32-row A panel in tile rows (packPairRows)
// times a 32-column B panel in the pair layout (packPairs), both padded
// to whole chunks of 16 pairs, over kc k steps (ceil(kc/32) chunks) into
// the 32x32 f32 tile at c (row stride ldc), loaded first when load is 1
// and zero when load is 0. pf is unused (the signature is gemmTile's).
// The tile configuration is loaded and released in every call: a
// goroutine may move to another thread between calls.
//
//go:noescape
func AMX32x32(kc int, a, b, c *float32, ldc int, pf *float32, load int)

// PairRowsAMX is pairRowsAsm on AVX-512 (amx.go).
//
//go:noescape
func PairRowsAMX(dst *uint32, dstStride int, src *uint16, chunks int)
