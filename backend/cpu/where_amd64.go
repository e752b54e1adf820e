//go:build amd64 && !purego

package cpu

// whereF32AVX2 is vecWhereF32's vector loop (n a multiple of 8).
//
//go:noescape
func whereF32AVX2(d, c, a, b *float32, n int)

// vecWhereF32 sets d[i] = a[i] where c[i] != 0, else b[i], without a
// branch per element (a ReLU's backward mask is a coin toss for the
// branch predictor: the branchy loop cost ~6 ns an element).
func vecWhereF32(d, c, a, b []float32) {
	n := len(d)
	c, a, b = c[:n], a[:n], b[:n]
	done := 0
	if atLeast(LevelAVX2) && haveAVX2() && n >= 8 {
		done = n &^ 7
		whereF32AVX2(&d[0], &c[0], &a[0], &b[0], done)
	}
	whereF32Go(d[done:], c[done:], a[done:], b[done:])
}
