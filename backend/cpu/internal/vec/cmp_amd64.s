//go:build amd64 && !purego

#include "textflag.h"

// Comparisons of f32 vectors into bools, 32 elements a step on AVX2.
// Each result is the Go loop's: VCMPPS with the ordered predicates for
// ==, <, <=, >, >= and the unordered one for != (NaN compares as Go
// compares it).

// The bytes of four packed dword masks come out lane by lane; this
// restores element order.
DATA cmpPermIdx<>+0(SB)/4, $0
DATA cmpPermIdx<>+4(SB)/4, $4
DATA cmpPermIdx<>+8(SB)/4, $1
DATA cmpPermIdx<>+12(SB)/4, $5
DATA cmpPermIdx<>+16(SB)/4, $2
DATA cmpPermIdx<>+20(SB)/4, $6
DATA cmpPermIdx<>+24(SB)/4, $3
DATA cmpPermIdx<>+28(SB)/4, $7
GLOBL cmpPermIdx<>(SB), RODATA|NOPTR, $32

// CMPSTEP compares 32 values of x (SI) at byte offset AX with Y15 (VS) or
// with y (DX) and stores 32 bools at DI + AX/4.
#define CMPVS(IMM) \
	VMOVUPS 0(SI)(AX*1), Y0; \
	VMOVUPS 32(SI)(AX*1), Y1; \
	VMOVUPS 64(SI)(AX*1), Y2; \
	VMOVUPS 96(SI)(AX*1), Y3; \
	VCMPPS IMM, Y15, Y0, Y0; \
	VCMPPS IMM, Y15, Y1, Y1; \
	VCMPPS IMM, Y15, Y2, Y2; \
	VCMPPS IMM, Y15, Y3, Y3

#define CMPVV(IMM) \
	VMOVUPS 0(SI)(AX*1), Y0; \
	VMOVUPS 32(SI)(AX*1), Y1; \
	VMOVUPS 64(SI)(AX*1), Y2; \
	VMOVUPS 96(SI)(AX*1), Y3; \
	VCMPPS IMM, 0(DX)(AX*1), Y0, Y0; \
	VCMPPS IMM, 32(DX)(AX*1), Y1, Y1; \
	VCMPPS IMM, 64(DX)(AX*1), Y2, Y2; \
	VCMPPS IMM, 96(DX)(AX*1), Y3, Y3

// CMPSTORE packs the masks in Y0-Y3 to 32 bools at DI + AX/4.
#define CMPSTORE \
	VPACKSSDW Y1, Y0, Y4; \
	VPACKSSDW Y3, Y2, Y5; \
	VPACKSSWB Y5, Y4, Y6; \
	VPERMD Y6, Y14, Y6; \
	VPAND Y13, Y6, Y6; \
	MOVQ AX, R8; \
	SHRQ $2, R8; \
	VMOVDQU Y6, (DI)(R8*1)

#define CMPLOOP(NAME, STEP, IMM) \
NAME: \
	CMPQ AX, CX; \
	JAE cdone; \
	STEP(IMM); \
	CMPSTORE; \
	ADDQ $128, AX; \
	JMP NAME

// func cmpF32AVX2(kind int, d *bool, x, y *float32, scalar bool, n int)
// kind: CmpEq..CmpGe (select.go); with scalar, y[0] is compared with every x[i];
// n is a multiple of 32.
TEXT ·cmpF32AVX2(SB), NOSPLIT, $0-48
	MOVQ kind+0(FP), BX
	MOVQ d+8(FP), DI
	MOVQ x+16(FP), SI
	MOVQ y+24(FP), DX
	MOVBLZX scalar+32(FP), R9
	MOVQ n+40(FP), CX
	SHLQ $2, CX
	XORQ AX, AX
	VMOVDQU cmpPermIdx<>(SB), Y14
	MOVL $0x01010101, R8
	MOVQ R8, X13
	VPBROADCASTD X13, Y13
	TESTQ R9, R9
	JZ vv
	VBROADCASTSS (DX), Y15
	CMPQ BX, $0
	JEQ vseq
	CMPQ BX, $1
	JEQ vsne
	CMPQ BX, $2
	JEQ vslt
	CMPQ BX, $3
	JEQ vsle
	CMPQ BX, $4
	JEQ vsgt
	JMP vsge
vv:
	CMPQ BX, $0
	JEQ vveq
	CMPQ BX, $1
	JEQ vvne
	CMPQ BX, $2
	JEQ vvlt
	CMPQ BX, $3
	JEQ vvle
	CMPQ BX, $4
	JEQ vvgt
	JMP vvge

	CMPLOOP(vseq, CMPVS, $0x00)
	CMPLOOP(vsne, CMPVS, $0x04)
	CMPLOOP(vslt, CMPVS, $0x11)
	CMPLOOP(vsle, CMPVS, $0x12)
	CMPLOOP(vsgt, CMPVS, $0x1e)
	CMPLOOP(vsge, CMPVS, $0x1d)
	CMPLOOP(vveq, CMPVV, $0x00)
	CMPLOOP(vvne, CMPVV, $0x04)
	CMPLOOP(vvlt, CMPVV, $0x11)
	CMPLOOP(vvle, CMPVV, $0x12)
	CMPLOOP(vvgt, CMPVV, $0x1e)
	CMPLOOP(vvge, CMPVV, $0x1d)

cdone:
	VZEROUPPER
	RET
