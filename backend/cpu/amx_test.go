package cpu

// amxRef is the contract of the AMX GEMM for one element (amx.go): k in
// chunks of 32 steps from step 0; per chunk an fmaDAZ chain over the even
// steps and one over the odd steps, from +0, their sum rounded and added
// to the accumulator (from acc).
func amxRef(acc float32, a, b func(p int) float32, k int) float32 {
	for c := 0; c < k; c += 2 * amxChunk {
		var e, o float32
		for p := c; p < c+2*amxChunk; p += 2 {
			if p < k {
				e = fmaDAZ(e, a(p), b(p))
			}
			if p+1 < k {
				o = fmaDAZ(o, a(p+1), b(p+1))
			}
		}
		acc = fmaDAZ(acc, fmaDAZ(e, o, 1), 1)
	}
	return acc
}

// amxProduct reports whether an m x n f32-accumulated bf16 product (bf16
// operands, or f32 at medium or high) runs the AMX contract at level:
// level amx and neither side a vector.
func amxProduct(level string, m, n int) bool {
	return levelRank(level) >= levelRank(LevelAMX) && asmTileAMX != nil && m > 1 && n > 1
}
