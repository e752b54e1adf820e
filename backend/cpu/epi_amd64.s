//go:build amd64 && !purego

#include "textflag.h"

// func epiU8ToF32AVX2(dst *float32, src *uint8, n int)
// dst[i] = float32(src[i]) for i < n (n a multiple of 8): eight bytes
// zero-extended to eight int32 and converted, per step.
TEXT ·epiU8ToF32AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JEQ  u8done

u8loop:
	VPMOVZXBD (SI), Y0
	VCVTDQ2PS Y0, Y0
	VMOVUPS   Y0, (DI)
	ADDQ $8, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  u8loop

u8done:
	VZEROUPPER
	RET
