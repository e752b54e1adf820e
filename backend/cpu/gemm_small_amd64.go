//go:build amd64 && !purego

package cpu

import "github.com/gotpu/gotpu/backend/cpu/internal/gemm"

func init() { smallKernF32 = gemm.F32x6x16s }
