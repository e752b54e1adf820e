//go:build amd64 && !purego

package cpu

// pool2x2IdxRowZ sets vals[j], idx[j] (j < n <= 16) to the maximum of the
// 2x2 window of rows r0, r1 at columns 2j, 2j+1 and its flat index (i0 +
// column in row 0, i1 + column in row 1), as maxPool2x2Indices (level
// avx512). It reads 2n values of each row.
//
//go:noescape
func pool2x2IdxRowZ(r0, r1 *float32, vals *float32, idx *int64, n int, i0, i1 int)

// pool2x2RowZ is pool2x2IdxRowZ for the values only, a NaN maximum quieted
// as maxPool2x2 does.
//
//go:noescape
func pool2x2RowZ(r0, r1 *float32, vals *float32, idx *int64, n int)

func init() {
	if haveAVX512() {
		pool2x2RowAsm, pool2x2IdxRowAsm = pool2x2RowZ, pool2x2IdxRowZ
	}
}
