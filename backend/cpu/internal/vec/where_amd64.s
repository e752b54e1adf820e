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

// The bool-conditioned select of 4-byte values (whereLoop32), 32 a step:
// a bitwise blend, the Go loop's bits. At element offset R8 (byte offset
// AX of the values), WMASK widens 8 condition bytes into Y0 and compares
// them with zero (all ones where the condition is false); the W* steps
// then take a (Y10, or memory at SI) where it is true and b (Y11, or
// memory at DX) where it is false.
#define WMASK(OFF) \
	VPMOVZXBD OFF(BX)(R8*1), Y0; \
	VPCMPEQD Y12, Y0, Y0

#define WVV(OFF) \
	WMASK(OFF/4); \
	VMOVDQU OFF(SI)(AX*1), Y1; \
	VBLENDVPS Y0, OFF(DX)(AX*1), Y1, Y1; \
	VMOVDQU Y1, OFF(DI)(AX*1)

#define WVS(OFF) \
	WMASK(OFF/4); \
	VMOVDQU OFF(SI)(AX*1), Y1; \
	VBLENDVPS Y0, Y11, Y1, Y1; \
	VMOVDQU Y1, OFF(DI)(AX*1)

#define WSV(OFF) \
	WMASK(OFF/4); \
	VBLENDVPS Y0, OFF(DX)(AX*1), Y10, Y1; \
	VMOVDQU Y1, OFF(DI)(AX*1)

#define WLOOP(NAME, STEP) \
NAME: \
	CMPQ AX, CX; \
	JAE wdone; \
	MOVQ AX, R8; \
	SHRQ $2, R8; \
	STEP(0); \
	STEP(32); \
	STEP(64); \
	STEP(96); \
	ADDQ $128, AX; \
	JMP NAME

// func whereB32AVX2(c *byte, a, b, d *uint32, mode, n int)
// d[i] = c[i] ? a[i] : b[i]; mode 1: b is b[0] for every i, mode 2: a is
// a[0] for every i; n is a multiple of 32.
TEXT ·whereB32AVX2(SB), NOSPLIT, $0-48
	MOVQ c+0(FP), BX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ d+24(FP), DI
	MOVQ mode+32(FP), R9
	MOVQ n+40(FP), CX
	SHLQ $2, CX
	XORQ AX, AX
	VPXOR Y12, Y12, Y12
	CMPQ R9, $1
	JEQ wvs
	CMPQ R9, $2
	JEQ wsv
	JMP wvv
wvs:
	VPBROADCASTD (DX), Y11
	JMP wvsloop
wsv:
	VPBROADCASTD (SI), Y10
	JMP wsvloop

	WLOOP(wvv, WVV)
	WLOOP(wvsloop, WVS)
	WLOOP(wsvloop, WSV)

wdone:
	VZEROUPPER
	RET
