//go:build amd64 && !purego

#include "textflag.h"

// func pairInterleaveAVX512(dst *uint32, a, b *uint16, n int)
// Sets dst[c] = a[c]<<16 | b[c] for c < n, a multiple of 16: two k steps of
// a row-major bf16 B interleaved into the VDPBF16PS pair layout.
TEXT ·pairInterleaveAVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ w+24(FP), R9
	SHRQ $4, R9
	JZ pdone
	MOVQ panels+32(FP), R10
	TESTQ R10, R10
	JZ pdone
	MOVQ stride+40(FP), R11
	SHLQ $2, R11
ppanel:
	MOVQ DI, R8
	MOVQ R9, CX
ploop:
	VPMOVZXWD (SI), Z0
	VPMOVZXWD (DX), Z1
	VPSLLD $16, Z0, Z0
	VPORD Z1, Z0, Z0
	VMOVDQU32 Z0, (R8)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $64, R8
	DECQ CX
	JNZ ploop
	ADDQ R11, DI
	DECQ R10
	JNZ ppanel
pdone:
	VZEROUPPER
	RET
