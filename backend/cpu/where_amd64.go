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

// whereB32AVX2 is whereAsm's loop (n a multiple of 32).
//
//go:noescape
func whereB32AVX2(c *byte, a, b, d *uint32, mode, n int)

// whereAsm sets the longest multiple-of-32 prefix of d to c ? a : b (c
// true where its byte is not zero; mode 1: b[0] for every element, mode
// 2: a[0]) and returns its length, 0 without AVX2.
func whereAsm(d []uint32, c []byte, a, b []uint32, mode int) int {
	n := len(d) &^ 31
	if n == 0 || !vecAsm() {
		return 0
	}
	_, _, _ = c[n-1], a[0], b[0]
	if mode != 2 {
		_ = a[n-1]
	}
	if mode != 1 {
		_ = b[n-1]
	}
	whereB32AVX2(&c[0], &a[0], &b[0], &d[0], mode, n)
	return n
}
