//go:build amd64 && !purego

package cpu

import "github.com/gotpu/gotpu/backend/cpu/internal/gemm"

// asmTileBF16 is the VDPBF16PS kernel with its blocking (kc counts k
// steps, two per packed pair; it must be even), and asmTileBF16Deep the
// same kernel blocked for long reductions (pairTile takes it from k =
// deepBF16K): deeper k blocks save the C tiles' reloads and the threads'
// waits between k blocks, smaller row blocks keep A in L2. Measured on
// Zen 5 (1 MiB L2), bf16 2048³ on 2 threads, two alternating passes:
// 670–723 GFLOP/s at kc 384 / mc 192, 802–814 at kc 512 / mc 144; kc 256
// was slower (640–654). On Zen 4 (1 MiB L2; four interleaved passes, 2
// threads) kc 2048 / mc 144 — the whole reduction of a 2048³ product in
// one block, A's 576 KB block in L2 — went further: 387–397 GFLOP/s
// against 339–342 at kc 512 (1536: 371–382, 1024 / mc 192: 353–376), 204–212
// against 190–193 on one thread. The model products (k 576–3072 with
// 128-row prompts) keep the first: kc 2048 for them was within noise
// (128x1536x576 355–367 either way).
var asmTileBF16, asmTileBF16Deep *gemmTile[float32]

func init() {
	if haveAVX512BF16() {
		asmTileBF16 = &gemmTile[float32]{mr: 12, nr: 32, kc: 384, mc: 192, nc: 4096, kern: gemm.BF16x12x32, pairs: true}
		asmTileBF16Deep = &gemmTile[float32]{mr: 12, nr: 32, kc: 2048, mc: 144, nc: 4096, kern: gemm.BF16x12x32, pairs: true}
	}
}

func init() {
	if haveAVX512() {
		pairT16Asm = gemm.PairT16AVX512
	}
}
