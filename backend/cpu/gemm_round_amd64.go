//go:build amd64 && !purego

package cpu

// roundBF16AVX2 rounds n (a multiple of 8) f32 values at x in place to
// bfloat16 as dtype.BF16FromF32 (ties to even, NaN quieted): each becomes
// RoundBF16(x) when lo is 0, RoundBF16(x - RoundBF16(x)) when lo is 1.
//
//go:noescape
func roundBF16AVX2(x *float32, n int, lo int)

func init() {
	if haveAVX2() {
		roundBF16Vec = roundBF16AVX2
	}
}
