//go:build amd64 && !purego

#include "textflag.h"
#include "transpose8_amd64.h"

// The bf16 packers of the f32 tiles: the same moves as the f32 ones
// (PackT8WF32, PackA6F32AVX2), each value widened to f32 on the way in
// (zero-extended to 32 bits and shifted up 16: exact).

// WIDEN8(ADDR, Y): eight bf16 at ADDR as f32 in Y.
#define WIDEN8(ADDR, YR) \
	VPMOVZXWD ADDR, YR; \
	VPSLLD    $16, YR, YR

// func PackT8WBF16(dst *float32, src *uint16, lds, n, w int)
TEXT ·PackT8WBF16(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R8
	SHLQ $1, R8
	MOVQ n+24(FP), CX
	MOVQ w+32(FP), R10
	SHLQ $2, R10
	LEAQ (R8)(R8*2), R9
	LEAQ (SI)(R8*4), R11
	ADDQ R8, R11
	LEAQ (R10)(R10*2), R12 // 3 columns
	MOVQ R10, R13
	SHLQ $3, R13           // 8 columns

bt8loop:
	CMPQ CX, $8
	JLT  bt8done
	WIDEN8((SI), Y0)
	WIDEN8((SI)(R8*1), Y1)
	WIDEN8((SI)(R8*2), Y2)
	WIDEN8((SI)(R9*1), Y3)
	WIDEN8((SI)(R8*4), Y4)
	WIDEN8((R11), Y5)
	WIDEN8((R11)(R8*1), Y6)
	WIDEN8((R11)(R8*2), Y7)
	TRANSPOSE8
	STORET8W
	ADDQ $16, SI
	ADDQ $16, R11
	ADDQ R13, DI
	SUBQ $8, CX
	JMP  bt8loop

bt8done:
	VZEROUPPER
	RET

// func PackA6BF16AVX2(dst *float32, src *uint16, lda, n int)
TEXT ·PackA6BF16AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lda+16(FP), R8
	MOVQ n+24(FP), CX
	SHLQ $1, R8
	LEAQ (SI)(R8*1), R9
	LEAQ (R9)(R8*1), R10
	LEAQ (R10)(R8*1), R11
	LEAQ (R11)(R8*1), R12
	LEAQ (R12)(R8*1), R13
	VXORPS Y15, Y15, Y15
	XORQ AX, AX

ba6loop:
	CMPQ CX, $8
	JLT  ba6done
	WIDEN8((SI)(AX*1), Y0)
	WIDEN8((R9)(AX*1), Y1)
	WIDEN8((R10)(AX*1), Y2)
	WIDEN8((R11)(AX*1), Y3)
	WIDEN8((R12)(AX*1), Y4)
	WIDEN8((R13)(AX*1), Y5)
	TRANSPOSE6ROWS
	STOREA6
	ADDQ       $16, AX
	ADDQ       $192, DI
	SUBQ       $8, CX
	JMP        ba6loop

ba6done:
	VZEROUPPER
	RET
