// Package quant holds the CPU kernels that multiply with weights kept in
// their GGUF quantization blocks (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K,
// Q6_K), never dequantizing a whole weight, and the row quantizers that
// make such weights and the activations they are multiplied with (Q8_0,
// Q8_1, Q8_K), following ggml (llama.cpp).
//
// # Semantics
//
// QuantizeRow reproduces ggml's reference quantizers (quantize_row_*_ref)
// bit for bit: every float32 operation is one IEEE operation in the C
// code's order, without fused multiply-adds (products that feed an addition
// are wrapped in float32 conversions, which forbid fusion on the
// architectures whose Go compiler would fuse). That is the C code built
// with -ffp-contract=off; a ggml binary built with FMA contraction can
// differ in the last bit of an intermediate and so, rarely, in a quant.
// DequantizeRow is package gguf's bit-exact dequantizer.
//
// MatMul multiplies float32 activations by a quantized weight the way
// ggml's CPU matmul does: each activation row is quantized per block to the
// weight type's partner (Q8_0 for Q4_0, Q5_0 and Q8_0; Q8_1 for Q4_1 and
// Q5_1; Q8_K for the K types) with the reference quantizer, each output is
// ggml's vec_dot of a weight row with that row, with integer block dot
// products and the float32 accumulation of ggml's generic (scalar) vec_dot
// in its order. Every kernel level (generic, avx2, avx512, avx512bf16)
// gives the same bits: the SIMD kernels compute the integer block sums with
// VPMADDUBSW/VPMADDWD or VPDPBUSD (exact) and then combine them with
// exactly the generic code's float32 operations, several weight rows at a
// time in vector lanes so that the sequential per-row float chain does not
// limit speed. (ggml's own AVX2 vec_dot reorders the float32 sums; its
// results differ from its generic code, and so from this package, by
// rounding only. So does a generic vec_dot that the C compiler contracted
// into fused multiply-adds: the libggml-python build used for the golden
// data fuses Q4_1's and Q5_1's d·Σ + m·s and the K types' lane updates;
// the tests reproduce those bits with a fused model and check this
// package's unfused results against them within rounding.)
//
// The golden data (testdata, tools/quant) come from the gguf Python
// package's numpy quantizers and from ggml's own libraries (libggml-base's
// quantize_row_*_ref, libggml-cpu's vec_dot generic code) called through
// ctypes.
//
// Kernels are chosen per call through For(level), the activation
// quantizers with them (Go loops at generic, assembly from avx2 up, the
// same bits), and no package state changes: tests run every level side
// by side, in parallel if they like. The levels are the names of
// backend/cpu's levels, which this package cannot import (backend/cpu
// imports it). A level without a kernel of its own for a type runs the
// best lower level's:
//
//	type   avx2 (VPMADDUBSW/VPMADDWD)       avx512bf16 (AVX512_VNNI)
//	Q4_0   4 rows per call; GEMM 4x8, 4x4   VPDPBUSD ZMM, 8 rows; GEMM 4x4
//	Q4_1   4 rows; GEMM 4x8, 4x4            VPDPBUSD ZMM, 8 rows; GEMM 4x4
//	Q5_0   4 rows; GEMM 4x8, 4x4            VPDPBUSD ZMM, 8 rows (qh via VPTESTMB)
//	Q5_1   4 rows; GEMM 4x8, 4x4            VPDPBUSD ZMM, 8 rows (qh via VPTESTMB)
//	Q8_0   4 rows; GEMM 4x4                 VPDPBUSD ZMM, 4 rows; GEMM 4x4
//	Q4_K   1 row; GEMM 1x4                  VPDPBUSD ZMM, VPERMB layout; GEMM 1x4
//	Q5_K   1 row; GEMM 1x4                  VPDPBUSD ZMM, qh under VPTESTMB; GEMM 1x4
//	Q6_K   1 row, VPERMD layout; GEMM 1x4   avx2's on ZMM (acts.k6); GEMM 1x4
//
// (rows: weight rows per kernel call against one activation row; GEMM
// AxB: A weight rows against B activation rows, the weight unpacked once.)
//
// Weights of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and Q4_K may come in the
// interleaved r16 layout (pack.go, Weight.Packed): at avx512bf16 a kernel
// runs a group of 16 rows against an activation row with one row per ZMM
// lane (VPDPBUSD with the activation dword broadcast; Q5's fifth bits by
// VPTESTMB; Q4_K's eight class lanes as eight accumulators), and
// for m > 1 (except Q4_K) against four activation rows at a time, each
// chunk unpacked once (GEMM 16x4); at avx2, Q4_0 and Q4_1 as two halves of
// 8 lanes (VPMADDUBSW); elsewhere (and Q5_0, Q5_1, Q8_0, Q4_K at avx2) each
// group is unpacked.
//
// The avx512 level (no VNNI) has no kernels of its own: For("avx512")
// runs avx2's and reports Level() "avx2".
//
// # Shapes
//
// MatMul with m == 1 is the decode product: each group of four weight rows
// is read once, with software prefetch ahead, since a decoding model streams
// its weights from memory. With m > 1 the activation rows are quantized
// once and each group of 16 weight rows is run against all m rows while it
// is in L1 (with the GEMM kernels, four activation rows per weight load).
// par splits the weight rows (in groups of 16) over the caller's workers.
package quant
