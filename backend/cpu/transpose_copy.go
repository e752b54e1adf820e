package cpu

import (
	"unsafe"

	"github.com/gotpu/gotpu/device"
)

// A cache-blocked transposing copy for 2-byte and 4-byte elements: the
// copy kernel's path for a matrix whose source and destination disagree on
// which axis is contiguous (a transposed view made contiguous, or a
// contiguous tensor written into a transposed one). The generic strided
// loop (moveLoop) reads or writes one element per cache line along the
// strided side; here 8x8 blocks are moved through registers (AVX2/AVX
// shuffles on amd64, plain loops elsewhere), walking tiles of B's rows so
// that the lines both sides touch stay in cache until they are full.

// transposeTile is the number of B rows (A columns) one tile covers: with
// 8 A rows per strip, the tile's B lines (transposeTile of them, half
// written by each strip for 4-byte elements) stay in L1 while A streams.
const transposeTile = 64

// transposeMinElems is the size below which the strided loop is as fast
// (the call and setup costs dominate).
const transposeMinElems = 256

// transposeCopy copies s into d (same dtype, same shape) when, after
// dropping size-1 axes, their layouts are a batch of 2-D matrices that one
// reads along rows and the other along columns, with 2-byte or 4-byte
// elements; it reports whether it did. Leading (batch) axes may have any
// strides.
func transposeCopy(ks *kset, s device.Operand, srcB []byte, d device.Operand, dstB []byte) bool {
	size := s.DType.Size()
	if (size != 2 && size != 4) || d.DType.Size() != size || len(d.Shape) < 2 {
		return false
	}
	total := 1
	for _, n := range d.Shape {
		total *= n
	}
	if total < transposeMinElems {
		return false
	}
	shape, strides := coalesce(d.Shape, [][]int{d.Strides, s.Strides})
	r := len(shape)
	if r < 2 {
		return false
	}
	ds, ss := strides[0], strides[1]
	R, C := shape[r-2], shape[r-1]
	// The matrix A is read row by row, B written row by row, with
	// B[j][i] = A[i][j]: rows x cols of A.
	// Element (i, j) of the last two axes is at i*ds[r-2] + j*ds[r-1] in d
	// and i*ss[r-2] + j*ss[r-1] in s.
	var rows, cols, lda, ldb int
	switch {
	case ds[r-1] == 1 && ss[r-2] == 1 && ss[r-1] != 1:
		// d row-major, s column-major: A is s seen as C x R, B is d.
		rows, cols, lda, ldb = C, R, ss[r-1], ds[r-2]
	case ss[r-1] == 1 && ds[r-2] == 1 && ds[r-1] != 1:
		// s row-major, d column-major: A is s, B is d seen as C x R.
		rows, cols, lda, ldb = R, C, ss[r-2], ds[r-1]
	default:
		return false
	}
	if lda < cols || ldb < rows || rows < 8 || cols < 8 {
		return false
	}
	for k := 0; k < r-2; k++ {
		if ds[k] < 0 || ss[k] < 0 {
			return false
		}
	}
	batch := total / (R * C)
	bshape := shape[:r-2]
	offs := func(b int) (so, do int) {
		so, do = s.Offset, d.Offset
		for k := r - 3; k >= 0; k-- {
			i := b % bshape[k]
			b /= bshape[k]
			so += i * ss[k]
			do += i * ds[k]
		}
		return so, do
	}
	switch size {
	case 4:
		src, dst := as[uint32](srcB), as[uint32](dstB)
		for b := 0; b < batch; b++ {
			so, do := offs(b)
			transpose2D(ks, src[so:], lda, rows, cols, dst[do:], ldb, transposeStrip32)
		}
	case 2:
		src, dst := as[uint16](srcB), as[uint16](dstB)
		for b := 0; b < batch; b++ {
			so, do := offs(b)
			transpose2D(ks, src[so:], lda, rows, cols, dst[do:], ldb, transposeStrip16)
		}
	}
	return true
}

// transpose2D sets b[j*ldb+i] = a[i*lda+j] for i < rows, j < cols, in
// tiles of transposeTile B rows split over the worker goroutines. Within a
// tile, A is taken in groups of 8*ngrp rows, ngrp chosen so that each B row
// gets one whole 64-byte cache line per 8-column block (with power-of-two
// strides, B's rows share a few cache sets, and half-written lines would
// be evicted before their other half came). strip is the assembly kernel,
// used when haveTransposeAsm.
func transpose2D[T uint16 | uint32](ks *kset, a []T, lda, rows, cols int, b []T, ldb int, strip func(a []T, lda int, b []T, ldb int, nblk, ngrp int)) {
	asm := haveTransposeAsm(ks)
	var z T
	line := 64 / (8 * int(unsafe.Sizeof(z))) // 8-row groups per B cache line
	tiles := ceilDiv(cols, transposeTile)
	parallelFor(tiles, rows*cols, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			j0 := t * transposeTile
			j1 := min(j0+transposeTile, cols)
			jb := j0 + (j1-j0)/8*8 // end of the whole 8-column blocks
			i := 0
			for i+8 <= rows {
				ngrp := min(line, (rows-i)/8)
				if jb > j0 {
					if asm {
						strip(a[i*lda+j0:], lda, b[j0*ldb+i:], ldb, (jb-j0)/8, ngrp)
					} else {
						transposeBlocks(a[i*lda+j0:], lda, b[j0*ldb+i:], ldb, (jb-j0)/8, ngrp)
					}
				}
				transposeEdge(a, lda, i, i+8*ngrp, jb, j1, b, ldb)
				i += 8 * ngrp
			}
			transposeEdge(a, lda, i, rows, j0, j1, b, ldb)
		}
	})
}

// transposeBlocks is the portable strip kernel: B[8k+j][8g+i] =
// A[8g+i][8k+j] for k < nblk, g < ngrp, i, j < 8, a block column at a
// time, each block read row by row and written row by row.
func transposeBlocks[T uint16 | uint32](a []T, lda int, b []T, ldb int, nblk, ngrp int) {
	for k := 0; k < nblk; k++ {
		for g := 0; g < ngrp; g++ {
			a0 := a[8*g*lda+8*k:]
			b0 := b[8*k*ldb+8*g:]
			for j := 0; j < 8; j++ {
				row := b0[j*ldb : j*ldb+8 : j*ldb+8]
				row[0] = a0[j]
				row[1] = a0[lda+j]
				row[2] = a0[2*lda+j]
				row[3] = a0[3*lda+j]
				row[4] = a0[4*lda+j]
				row[5] = a0[5*lda+j]
				row[6] = a0[6*lda+j]
				row[7] = a0[7*lda+j]
			}
		}
	}
}

// transposeEdge moves A rows i0..i1, columns j0..j1 element by element.
func transposeEdge[T uint16 | uint32](a []T, lda, i0, i1, j0, j1 int, b []T, ldb int) {
	for j := j0; j < j1; j++ {
		row := b[j*ldb:]
		for i := i0; i < i1; i++ {
			row[i] = a[i*lda+j]
		}
	}
}
