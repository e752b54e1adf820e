//go:build amd64 && !purego

package quant

// addLevel installs a level's own kernels into k and reports whether it
// has any.
func addLevel(k *Kernels, level string) bool {
	switch level {
	case LevelAVX2:
		k.rows[Q4_0] = rows4(Q4_0, dot4Q4_0AVX2)
		k.gemm[Q4_0] = gemm48(Q4_0, gemm4x8Q4_0AVX2, gemm4x4Q4_0AVX2, k.rows[Q4_0])
		k.rows[Q4_1] = rows4(Q4_1, dot4Q4_1AVX2)
		k.gemm[Q4_1] = gemm48(Q4_1, gemm4x8Q4_1AVX2, gemm4x4Q4_1AVX2, k.rows[Q4_1])
		k.rows[Q5_0] = rows4(Q5_0, dot4Q5_0AVX2)
		k.gemm[Q5_0] = gemm48(Q5_0, gemm4x8Q5_0AVX2, gemm4x4Q5_0AVX2, k.rows[Q5_0])
		k.rows[Q5_1] = rows4(Q5_1, dot4Q5_1AVX2)
		k.gemm[Q5_1] = gemm48(Q5_1, gemm4x8Q5_1AVX2, gemm4x4Q5_1AVX2, k.rows[Q5_1])
		k.rows[Q8_0] = rows4(Q8_0, dot4Q8_0AVX2)
		k.gemm[Q8_0] = gemm4(Q8_0, gemm4x4Q8_0AVX2, k.rows[Q8_0])
		k.rows[Q4_K], k.need[Q4_K] = rowsK(Q4_K, dotQ4KAVX2, actK6S), needK6S
		k.gemm[Q4_K] = gemmKY(Q4_K, gemm1x4Q4KAVX2, k.rows[Q4_K], actK6S)
		k.rows[Q5_K], k.need[Q5_K] = rowsK(Q5_K, dotQ5KAVX2, actK6S), needK6S
		k.gemm[Q5_K] = gemmKY(Q5_K, gemm1x4Q5KAVX2, k.rows[Q5_K], actK6S)
		k.rows[Q6_K], k.need[Q6_K] = rowsK(Q6_K, dotQ6KAVX2, actK6), needK6
		k.gemm[Q6_K] = gemmKY(Q6_K, gemm1x4Q6KAVX2, k.rows[Q6_K], actK6)
		k.pack[Q4_0] = rows16(Q4_0, dot16Q4_0AVX2)
		k.pack[Q4_1] = rows16(Q4_1, dot16Q4_1AVX2)
		return true
	case LevelAVX512BF16:
		k.rows[Q4_0] = rows8(Q4_0, dot8Q4_0VNNI, dot4Q4_0VNNI)
		k.gemm[Q4_0] = gemm4(Q4_0, gemm4x4Q4_0VNNI, k.rows[Q4_0])
		k.rows[Q4_1] = rows8(Q4_1, dot8Q4_1VNNI, dot4Q4_1VNNI)
		k.gemm[Q4_1] = gemm4(Q4_1, gemm4x4Q4_1VNNI, k.rows[Q4_1])
		k.rows[Q5_0] = rows8(Q5_0, dot8Q5_0VNNI, dot4Q5_0VNNI)
		k.rows[Q5_1] = rows8(Q5_1, dot8Q5_1VNNI, dot4Q5_1VNNI)
		k.rows[Q8_0] = rows4(Q8_0, dot4Q8_0VNNI)
		k.gemm[Q8_0] = gemm4(Q8_0, gemm4x4Q8_0VNNI, k.rows[Q8_0])
		k.rows[Q4_K], k.need[Q4_K] = rowsK(Q4_K, dotQ4KVNNI, actKP), needKP
		k.gemm[Q4_K] = gemmK(Q4_K, gemm1x4Q4KVNNI, k.rows[Q4_K], actKP)
		k.rows[Q5_K], k.need[Q5_K] = rowsK(Q5_K, dotQ5KVNNI, actKP), needKP
		k.gemm[Q5_K] = gemmK(Q5_K, gemm1x4Q5KVNNI, k.rows[Q5_K], actKP)
		k.rows[Q6_K], k.need[Q6_K] = rowsK(Q6_K, dotQ6KVNNI, actK6), needK6
		k.gemm[Q6_K] = gemmK(Q6_K, gemm1x4Q6KZ, k.rows[Q6_K], actK6)
		k.pack[Q4_0] = rows16(Q4_0, dot16Q4_0VNNI)
		k.pack[Q4_1] = rows16(Q4_1, dot16Q4_1VNNI)
		k.pack[Q8_0] = rows16(Q8_0, dot16Q8_0VNNI)
		k.pack[Q5_0] = rows16(Q5_0, dot16Q5_0VNNI)
		k.pack[Q5_1] = rows16(Q5_1, dot16Q5_1VNNI)
		k.packGemm[Q4_0] = packGemm16(Q4_0, gemm16x4Q4_0VNNI, k.pack[Q4_0])
		k.packGemm[Q4_1] = packGemm16(Q4_1, gemm16x4Q4_1VNNI, k.pack[Q4_1])
		k.packGemm[Q8_0] = packGemm16(Q8_0, gemm16x4Q8_0VNNI, k.pack[Q8_0])
		k.packGemm[Q5_0] = packGemm16(Q5_0, gemm16x4Q5_0VNNI, k.pack[Q5_0])
		k.packGemm[Q5_1] = packGemm16(Q5_1, gemm16x4Q5_1VNNI, k.pack[Q5_1])
		k.pack[Q4_K] = rows16K(dot16Q4KVNNI)
		return true
	}
	return false
}
