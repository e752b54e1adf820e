//go:build amd64 && !purego

package cpu

// transposeStrip32AVX2 transposes nblk 8x8 blocks of 4-byte elements: for
// k < nblk, B[8k+j][i] = A[i][8k+j] for i, j < 8 (row strides lda and ldb,
// in elements). A's eight rows and B's 8*nblk rows must be in bounds.
//
//go:noescape
func transposeStrip32AVX2(a *uint32, lda int, b *uint32, ldb int, nblk int)

// transposeStrip16AVX is transposeStrip32AVX2 for 2-byte elements.
//
//go:noescape
func transposeStrip16AVX(a *uint16, lda int, b *uint16, ldb int, nblk int)

// haveTransposeAsm reports whether the strip kernels can run: at the avx2
// level (GOTPU_CPU_LEVEL=generic asks for the portable loops).
func haveTransposeAsm() bool { return cpuLevel == LevelAVX2 }

func transposeStrip32(a []uint32, lda int, b []uint32, ldb int, nblk int) {
	transposeStrip32AVX2(&a[0], lda, &b[0], ldb, nblk)
}

func transposeStrip16(a []uint16, lda int, b []uint16, ldb int, nblk int) {
	transposeStrip16AVX(&a[0], lda, &b[0], ldb, nblk)
}
