package sample

// uniform returns the step-th (0-based) output of SplitMix64 seeded with seed
// (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
// OOPSLA 2014), as a float64 in [0, 1) with 53 random bits. It is
// counter-based: each draw is a pure function of (seed, step), so a draw never
// depends on how many draws came before it, on the machine, or on batching.
func uniform(seed, step uint64) float64 {
	z := seed + (step+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) * 0x1p-53
}
