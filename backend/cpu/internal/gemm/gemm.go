// Package gemm holds the CPU backend's matrix-product micro-kernels, in
// assembly, with their Go declarations beside them: the register-tiled
// f32/f64 GEMM tiles (AVX2 6x16 and 6x8, AVX-512 6x64 and 6x32), the
// strided kernels of the small and streaming products, the panel packing
// and transposing kernels, the matrix-vector kernels of a decode step
// (f32 and bf16, dot and axpy forms), the AVX512_BF16 (VDPBF16PS) tiles
// and pair-interleaving kernels, and the AMX tile. Each kernel's comment
// states its contract: the element order of its sums (the f32 GEMM's is
// one FMA chain over k, in order, at every level), what it reads and
// writes, and the CPU features it needs.
//
// The package has no drivers: blocking, packing plans, threading and the
// choice of kernel for a CPU level live in backend/cpu (gemm_*.go,
// bf16_gemm.go, bf16_gemv.go, amx.go), which calls these kernels only
// when the level in use has them. The kernels exist on amd64 without the
// purego tag; elsewhere the package declares nothing but GemvRowWalk.
//
// Their tests are backend/cpu's, which call every kernel both directly
// (TestDPBF16Contract, TestZMMKernels, TestZMMSmallKernel, TestAMXContract,
// TestGEMVDotKernels...) and through the drivers at every level the CPU
// runs (TestGEMMLevelsBitwise, TestGEMMBF16Pairs, the GEMV tests), against
// references of the stated contracts.
package gemm

// GemvRowWalk, when not zero, makes the dot-form kernels (GemvDotF32AVX512,
// GemvDotBF16AVX512, GemvDotF32AVX2, GemvDotBF16AVX2) take their rows one
// at a time instead of two, four or eight side by side: the same lane
// arithmetic and bits,
// one sequential stream per thread instead of several a row apart. It is
// set on AMD CPUs: on the 2-vCPU Zen 4 EPYC of 2026-12-06 one thread read
// a 576x576 bf16 matrix at 18-20 GB/s one row at a time against 10 GB/s
// eight rows at a time, 768->2304 at 22-23 against 10-11 (f32 576x576: 19-20
// against 13-14; BenchmarkGEMVDotKernels walk1 and walk0), where on the
// Sapphire Rapids-class Xeon the row groups with their prefetch of the
// next group were what measured fastest (commit 629db91). On an AVX2-only
// Zen 3 (2026-12-07) the AVX2 kernels one row at a time made SmolLM2-135M's
// decode faster in alternating runs: BF16 68-74 -> 73-97 tok/s (the bf16
// kernel with a prefetch 1 KiB ahead), F32 41-45 -> 48-54.
// backend/cpu sets it at start (GOTPU_GEMV_WALK=rows or groups overrides
// the choice there).
var GemvRowWalk uint8
