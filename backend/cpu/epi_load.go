package cpu

// Loading a fused group's inputs into registers (compile_fuse.go's
// evalRange) without a conversion call or a bounds check per element: a
// contiguous bool input (a ReLU backward's mask) is widened eight bytes at
// a time, and a broadcast scalar is filled by doubling copies. Measured on
// the MNIST step's [64, 512] ReLU-backward select: the per-element gather
// of the mask took 57 µs of the group's ~75 µs.

// epiU8ToF32Vec is the vector widening (epi_amd64.s), nil where there is
// none: dst[i] = float32(src[i]) for i < n, n a multiple of 8.
var epiU8ToF32Vec func(dst *float32, src *uint8, n int)

// epiU8ToF32 sets dst[i] = float32(src[i]) for i < len(dst) (bools as
// 0/1).
func epiU8ToF32(ks *kset, dst []float32, src []uint8) {
	src = src[:len(dst)]
	done := 0
	if epiU8ToF32Vec != nil && ks.atLeast(LevelAVX2) && len(dst) >= 8 {
		done = len(dst) &^ 7
		epiU8ToF32Vec(&dst[0], &src[0], done)
	}
	for i := done; i < len(dst); i++ {
		dst[i] = float32(src[i])
	}
}

// epiFill sets every element of d to v.
func epiFill(d []float32, v float32) {
	if len(d) == 0 {
		return
	}
	d[0] = v
	for i := 1; i < len(d); i *= 2 {
		copy(d[i:], d[:i])
	}
}
