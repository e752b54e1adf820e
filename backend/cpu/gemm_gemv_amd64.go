//go:build amd64 && !purego

package cpu

import (
	"os"

	"github.com/gotpu/gotpu/backend/cpu/internal/gemm"
	"github.com/gotpu/gotpu/internal/cpulevel"
)

func init() {
	gemvAsmF32 = &gemvKernelsF32{dot8: gemm.GemvDotF32x8, dot16: gemm.GemvDotF32x16, axpy: gemm.GemvAxpyF32}
}

func init() {
	gemvDotF32Z, gemvDotF32Y = gemm.GemvDotF32AVX512, gemm.GemvDotF32AVX2
	gemvDotF32x4Z = gemm.GemvDotF32x4AVX512
	gemvAxpyF32Z = gemm.GemvAxpyF32AVX512
	gemm.GemvRowWalk = gemvWalk(os.Getenv("GOTPU_GEMV_WALK"), cpulevel.AMD())
}
