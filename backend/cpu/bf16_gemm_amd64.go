//go:build amd64 && !purego

package cpu

//go:generate sh -c "python3 ../../tools/bf16asm/gen.py > bf16_gemm_amd64.s"

// dpbf16Vec runs one VDPBF16PS on 16 lanes: acc[i] += a.bf16[2i+1] *
// b.bf16[2i+1], then += a.bf16[2i] * b.bf16[2i], with the instruction's
// rounding (bf16_gemm.go). The tests probe the instruction with it.
//
//go:noescape
func dpbf16Vec(acc *float32, a, b *uint32)

// gemmBF16x12x32 accumulates a packed 12-row A panel times a packed
// 32-column B panel, both in the pair layout (packPairs), over kc k steps
// (ceil(kc/2) pair steps) into the 12x32 f32 tile at c (row stride ldc),
// loaded first when load is 1 and zero when load is 0; pf is the tile to
// be updated next, whose rows are prefetched.
//
//go:noescape
func gemmBF16x12x32(kc int, a, b, c *float32, ldc int, pf *float32, load int)

// gemmBF16x8x32 is gemmBF16x12x32 with an 8x32 tile.
//
//go:noescape
func gemmBF16x8x32(kc int, a, b, c *float32, ldc int, pf *float32, load int)

// gemmBF16x14x32 is gemmBF16x12x32 with a 14x32 tile.
//
//go:noescape
func gemmBF16x14x32(kc int, a, b, c *float32, ldc int, pf *float32, load int)

// asmTileBF16 is the VDPBF16PS kernel with its blocking (kc counts k
// steps, two per packed pair; it must be even), and asmTileBF16Deep the
// same kernel blocked for long reductions (pairTile takes it from k =
// deepBF16K): deeper k blocks halve the C tiles' reloads, smaller row
// blocks keep A in L2. Measured on Zen 5 (1 MiB L2), bf16 2048³ on 2
// threads, two alternating passes: 670–723 GFLOP/s at kc 384 / mc 192,
// 802–814 at kc 512 / mc 144; kc 256 was slower (640–654). The model
// products (k 576–3072 with 128-row prompts) keep the first.
var asmTileBF16, asmTileBF16Deep *gemmTile[float32]

func init() {
	if haveAVX512BF16() {
		asmTileBF16 = &gemmTile[float32]{mr: 12, nr: 32, kc: 384, mc: 192, nc: 4096, kern: gemmBF16x12x32, pairs: true}
		asmTileBF16Deep = &gemmTile[float32]{mr: 12, nr: 32, kc: 512, mc: 144, nc: 4096, kern: gemmBF16x12x32, pairs: true}
	}
}

// pairT16AVX512 packs rows (1 to 16) of bf16 values, lds elements apart
// and each contiguous along k, into the pair layout transposed:
// dst[j*ldd + r] = src[r*lds+2j]<<16 | src[r*lds+2j+1] for r < rows, j < n
// (a multiple of 16), leaving dst's other lanes as they are.
//
//go:noescape
func pairT16AVX512(dst *uint32, ldd int, src *uint16, lds int, n int, rows int)

func init() {
	if haveAVX512() {
		pairT16Asm = pairT16AVX512
	}
}
