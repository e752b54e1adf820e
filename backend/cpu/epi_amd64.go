//go:build amd64 && !purego

package cpu

// epiU8ToF32AVX2 sets dst[i] = float32(src[i]) for i < n, n a multiple
// of 8.
//
//go:noescape
func epiU8ToF32AVX2(dst *float32, src *uint8, n int)

func init() {
	if haveAVX2() {
		epiU8ToF32Vec = epiU8ToF32AVX2
	}
}
