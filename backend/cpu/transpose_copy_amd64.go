//go:build amd64 && !purego

package cpu

// transposeStrip32AVX2 transposes nblk x ngrp 8x8 blocks of 4-byte
// elements: B[8k+j][8g+i] = A[8g+i][8k+j] for k < nblk, g < ngrp and
// i, j < 8 (row strides lda and ldb, in elements), the ngrp blocks of one
// block column together. A's 8*ngrp rows and B's 8*nblk rows must be in
// bounds.
//
//go:noescape
func transposeStrip32AVX2(a *uint32, lda int, b *uint32, ldb int, nblk, ngrp int)

// transposeStrip16AVX is transposeStrip32AVX2 for 2-byte elements.
//
//go:noescape
func transposeStrip16AVX(a *uint16, lda int, b *uint16, ldb int, nblk, ngrp int)

// haveTransposeAsm reports whether the strip kernels can run: at the avx2
// level (GOTPU_CPU_LEVEL=generic asks for the portable loops).
func haveTransposeAsm(ks *kset) bool { return ks.atLeast(LevelAVX2) }

func transposeStrip32(a []uint32, lda int, b []uint32, ldb int, nblk, ngrp int) {
	transposeStrip32AVX2(&a[0], lda, &b[0], ldb, nblk, ngrp)
}

func transposeStrip16(a []uint16, lda int, b []uint16, ldb int, nblk, ngrp int) {
	transposeStrip16AVX(&a[0], lda, &b[0], ldb, nblk, ngrp)
}
