package cpu

import "math"

// The elementwise and fused-row tests' level helpers and float64
// references (the vec kernels' own tests are in internal/vec).

// vecLevels returns the CPU levels this machine can run the kernels at.
func vecLevels() []string { return SupportedLevels() }

// withVecLevel runs fn with the kernels forced to level.
func withVecLevel(level string, fn func()) {
	prev := cpuLevel
	cpuLevel = level
	defer func() { cpuLevel = prev }()
	fn()
}

func geluRef(x float64) float64 { return x * 0.5 * math.Erfc(-x/math.Sqrt2) }

func siluRef(x float64) float64 { return x / (1 + math.Exp(-x)) }

func logRef(x float64) float64 { return math.Log(x) }
