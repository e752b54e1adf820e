//go:build amd64 && !purego

package cpu

import "github.com/gotpu/gotpu/backend/cpu/internal/gemm"

func init() {
	gemvDotBF16Z, gemvDotBF16Y = gemm.GemvDotBF16AVX512, gemm.GemvDotBF16AVX2
	gemvDotBF16x4Z = gemm.GemvDotBF16x4AVX512
	gemvAxpyBF16Z = gemm.GemvAxpyBF16AVX512
	if haveAVX512BF16() {
		gemvAxpyBF16DPZ = gemm.GemvAxpyBF16DP
	}
}
