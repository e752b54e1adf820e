//go:build !amd64 || purego

package cpu

// optimAVX2 is false without the amd64 assembly loops.
var optimAVX2 = false

func adamF32Vec(p, g, m, v, mx []float32, s *adamScalars[float32]) int { return 0 }

func sgdF32Vec(p, g, buf []float32, s *sgdScalars[float32]) int { return 0 }
