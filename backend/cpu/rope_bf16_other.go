//go:build !amd64 || purego

package cpu

import "github.com/gotpu/gotpu/dtype"

func ropeBF16Asm(dst, xr, cr, sr []dtype.BFloat16, h int) bool { return false }
