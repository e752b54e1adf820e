//go:build amd64 && !purego

#include "textflag.h"

// func whereF32AVX2(d, c, a, b *float32, n int)
// d[i] = c[i] != 0 ? a[i] : b[i] for i < n, n a multiple of 8 (NaN in c
// selects a, -0 selects b, as the Go comparison does).
TEXT ·whereF32AVX2(SB), NOSPLIT, $0-40
	MOVQ   d+0(FP), DI
	MOVQ   c+8(FP), SI
	MOVQ   a+16(FP), R8
	MOVQ   b+24(FP), R9
	MOVQ   n+32(FP), CX
	VXORPS Y15, Y15, Y15

loop:
	CMPQ      CX, $8
	JLT       done
	VMOVUPS   (SI), Y0
	VCMPPS    $4, Y15, Y0, Y1
	VMOVUPS   (R8), Y2
	VMOVUPS   (R9), Y3
	VBLENDVPS Y1, Y2, Y3, Y4
	VMOVUPS   Y4, (DI)
	ADDQ      $32, SI
	ADDQ      $32, R8
	ADDQ      $32, R9
	ADDQ      $32, DI
	SUBQ      $8, CX
	JMP       loop

done:
	VZEROUPPER
	RET
