//go:build amd64 && !purego

package cpu

// cmpF32AVX2 sets d[i] = x[i] op y[i] (op the comparison kind, cmpEq ..
// cmpGe; y[0] for every i when scalar) for i < n, n a multiple of 32.
//
//go:noescape
func cmpF32AVX2(kind int, d *bool, x, y *float32, scalar bool, n int)

// cmpAsm compares the longest multiple-of-32 prefix of d (x op y, or x op
// y[0] when scalar; kind cmpEq..cmpGe) and returns its length, 0 without
// AVX2.
func cmpAsm(kind int, d []bool, x, y []float32, scalar bool) int {
	n := len(d) &^ 31
	if n == 0 || !vecAsm() {
		return 0
	}
	_, _ = x[n-1], y[0]
	if !scalar {
		_ = y[n-1]
	}
	cmpF32AVX2(kind, &d[0], &x[0], &y[0], scalar, n)
	return n
}
