//go:build amd64 && !purego

#include "textflag.h"
#include "bf16round_amd64.h"

// func roundBF16AVX2(x *float32, n int, lo int)
// Rounds n (a multiple of 8) f32 values in place to bfloat16 (ties to
// even, NaN kept with its quiet bit set), as dtype.BF16FromF32: each value
// becomes RoundBF16(x) (lo 0) or RoundBF16(x - RoundBF16(x)) (lo 1).
TEXT ·roundBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	MOVQ lo+16(FP), R8
	BF16ROUNDCONST
	SHRQ $3, CX
	JZ done
loop:
	VMOVUPS (DI), Y0
	BF16ROUND(Y0, Y1, Y2, Y3, Y4) // Y1 = RoundBF16(Y0)
	TESTQ R8, R8
	JEQ store
	// Y1 = RoundBF16(Y0 - Y1)
	VSUBPS Y1, Y0, Y0
	BF16ROUND(Y0, Y1, Y2, Y3, Y4)
store:
	VMOVUPS Y1, (DI)
	ADDQ $32, DI
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET
