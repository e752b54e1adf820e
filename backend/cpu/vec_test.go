package cpu

import "math"

// The elementwise and fused-row tests' float64 references (the vec
// kernels' own tests are in internal/vec).

func geluRef(x float64) float64 { return x * 0.5 * math.Erfc(-x/math.Sqrt2) }

func siluRef(x float64) float64 { return x / (1 + math.Exp(-x)) }

func logRef(x float64) float64 { return math.Log(x) }
