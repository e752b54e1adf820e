//go:build amd64 && !purego

package cpu

import "github.com/gotpu/gotpu/backend/cpu/internal/gemm"

func init() {
	if haveAVX2() {
		packN16Asm, packN6Asm = gemm.PackN16F32, gemm.PackN6F32
		packT8Asm = gemm.PackT8F32
		packT8WAsm = gemm.PackT8WF32
		storeT6Asm = gemm.StoreT6F32
		t8x8Asm = gemm.T8x8F32
		packT8WBF16Asm = gemm.PackT8WBF16
		packA6BF16Asm = gemm.PackA6BF16AVX2
	}
}
