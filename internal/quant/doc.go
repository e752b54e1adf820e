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
// rounding only.)
//
// Kernels are chosen per call through For(level), so tests can run every
// level side by side; the levels are the names of backend/cpu's levels,
// which this package cannot import (backend/cpu imports it).
package quant
