//go:build !amd64 || purego

package cpu

// Without the amd64 assembly every vec kernel runs its Go loop.

func vecAsm() bool { return false }

func vecBinaryAsm(k vecOp, dst, a, b []float32) int { return 0 }

func vecFmaAsm(dst, a, b, c []float32) int { return 0 }

func vecRopeAsm(dst, x, c, s []float32, h int) int { return 0 }

func vecScalarAsm(k vecOp, dst, a []float32, s float32) int { return 0 }

func vecUnaryAsm(k vecOp, dst, a []float32) bool { return false }

func vecSumLanesAsm(a []float32, acc *[vecSumLanes]float32) int { return 0 }

func vecMaxAsm(a []float32) (float32, int) { return 0, 0 }
