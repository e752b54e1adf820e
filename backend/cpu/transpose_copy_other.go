//go:build !amd64 || purego

package cpu

// haveTransposeAsm is false without the amd64 assembly kernels.
func haveTransposeAsm(*kset) bool { return false }

func transposeStrip32(a []uint32, lda int, b []uint32, ldb int, nblk, ngrp int) {
	panic("cpu: transposeStrip32 without assembly")
}

func transposeStrip16(a []uint16, lda int, b []uint16, ldb int, nblk, ngrp int) {
	panic("cpu: transposeStrip16 without assembly")
}
