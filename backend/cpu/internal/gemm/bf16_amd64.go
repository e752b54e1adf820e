//go:build amd64 && !purego

package gemm

//go:generate sh -c "python3 ../../../../tools/bf16asm/gen.py > bf16_amd64.s"

// DPBF16Vec runs one VDPBF16PS on 16 lanes: acc[i] += a.bf16[2i+1] *
// b.bf16[2i+1], then += a.bf16[2i] * b.bf16[2i], with the instruction's
// rounding (backend/cpu/bf16_gemm.go). The tests probe the instruction with it.
//
//go:noescape
func DPBF16Vec(acc *float32, a, b *uint32)

// BF16x12x32 accumulates a packed 12-row A panel times a packed
// 32-column B panel, both in the pair layout (packPairs), over kc k steps
// (ceil(kc/2) pair steps) into the 12x32 f32 tile at c (row stride ldc),
// loaded first when load is 1 and zero when load is 0; pf is the tile to
// be updated next, whose rows are prefetched.
//
//go:noescape
func BF16x12x32(kc int, a, b, c *float32, ldc int, pf *float32, load int)

// BF16x8x32 is BF16x12x32 with an 8x32 tile.
//
//go:noescape
func BF16x8x32(kc int, a, b, c *float32, ldc int, pf *float32, load int)

// BF16x14x32 is BF16x12x32 with a 14x32 tile.
//
//go:noescape
func BF16x14x32(kc int, a, b, c *float32, ldc int, pf *float32, load int)

// PairT16AVX512 packs rows (1 to 16) of bf16 values, lds elements apart
// and each contiguous along k, into the pair layout transposed:
// dst[j*ldd + r] = src[r*lds+2j]<<16 | src[r*lds+2j+1] for r < rows, j < n
// (a multiple of 16), leaving dst's other lanes as they are.
//
//go:noescape
func PairT16AVX512(dst *uint32, ldd int, src *uint16, lds int, n int, rows int)
