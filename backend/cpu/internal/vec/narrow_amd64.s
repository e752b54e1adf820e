//go:build amd64 && !purego

#include "textflag.h"

// func bf16NarrowAVX512(dst *uint16, src *float32, n int)
// Rounds n (a multiple of 16) f32 values to bfloat16 in one pass, as
// dtype.BF16FromF32: ties to even; a NaN keeps its sign and payload's top
// bits with the quiet bit set.
TEXT ·bf16NarrowAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z8 // abs mask
	MOVL $0x7f800000, AX
	VPBROADCASTD AX, Z9 // infinity
	MOVL $1, AX
	VPBROADCASTD AX, Z10 // 1
	MOVL $0x7fff, AX
	VPBROADCASTD AX, Z11 // rounding bias
	MOVL $0x00400000, AX
	VPBROADCASTD AX, Z13 // quiet bit
	SHRQ $4, CX
	JZ done
loop:
	VMOVDQU32 (SI), Z0
	VPANDD Z8, Z0, Z2
	VPCMPUD $6, Z9, Z2, K1 // |x| > inf: NaN lanes
	VPSRLD $16, Z0, Z3
	VPANDD Z10, Z3, Z3
	VPADDD Z11, Z0, Z1
	VPADDD Z3, Z1, Z1
	VPORD Z13, Z0, K1, Z1 // NaN lanes: x | quiet bit
	VPSRLD $16, Z1, Z1
	VPMOVDW Z1, (DI)
	ADDQ $64, SI
	ADDQ $32, DI
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

