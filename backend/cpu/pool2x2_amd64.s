//go:build amd64 && !purego

#include "textflag.h"

// 2x2 stride-2 max pooling of one output row of up to 16 outputs (level
// avx512): the two input rows are loaded under masks (2n values each), split
// into even and odd columns by VPERMI2PS, and the window's four values are
// taken in the scalar loop's order — a larger value or a NaN replaces the
// running maximum (and its index) — lane by lane, one output per lane.

DATA pool2x2even<>+0(SB)/4, $0
DATA pool2x2even<>+4(SB)/4, $2
DATA pool2x2even<>+8(SB)/4, $4
DATA pool2x2even<>+12(SB)/4, $6
DATA pool2x2even<>+16(SB)/4, $8
DATA pool2x2even<>+20(SB)/4, $10
DATA pool2x2even<>+24(SB)/4, $12
DATA pool2x2even<>+28(SB)/4, $14
DATA pool2x2even<>+32(SB)/4, $16
DATA pool2x2even<>+36(SB)/4, $18
DATA pool2x2even<>+40(SB)/4, $20
DATA pool2x2even<>+44(SB)/4, $22
DATA pool2x2even<>+48(SB)/4, $24
DATA pool2x2even<>+52(SB)/4, $26
DATA pool2x2even<>+56(SB)/4, $28
DATA pool2x2even<>+60(SB)/4, $30
GLOBL pool2x2even<>(SB), RODATA|NOPTR, $64

// POOLSETUP: Z0/Z1 = row 0 (even/odd columns), Z2/Z3 = row 1, Z10 = the
// even-column offsets (0, 2, ..., 30), K7 = the n output lanes. Uses AX,
// CX, K1, K2, Z8, Z9.
#define POOLSETUP \
	MOVQ r0+0(FP), SI; \
	MOVQ r1+8(FP), DX; \
	MOVQ n+32(FP), CX; \
	MOVL $1, AX; \
	SHLL CX, AX; \
	DECL AX; \
	KMOVW AX, K7; \
	SHLQ $1, CX; \
	MOVQ $1, AX; \
	SHLQ CX, AX; \
	DECQ AX; \
	KMOVW AX, K1; \
	SHRQ $16, AX; \
	KMOVW AX, K2; \
	VMOVUPS.Z (SI), K1, Z8; \
	VMOVUPS.Z 64(SI), K2, Z9; \
	VMOVDQU32 pool2x2even<>(SB), Z10; \
	VMOVDQA32 Z10, Z0; \
	VPERMI2PS Z9, Z8, Z0; \
	VPBROADCASTD one<>(SB), Z11; \
	VPADDD Z11, Z10, Z1; \
	VPERMI2PS Z9, Z8, Z1; \
	VMOVUPS.Z (DX), K1, Z8; \
	VMOVUPS.Z 64(DX), K2, Z9; \
	VMOVDQA32 Z10, Z2; \
	VPERMI2PS Z9, Z8, Z2; \
	VPADDD Z11, Z10, Z3; \
	VPERMI2PS Z9, Z8, Z3

DATA one<>+0(SB)/4, $1
GLOBL one<>(SB), RODATA|NOPTR, $4

// STEP(V, VI): where V > best (Z4) or V is NaN, best = V and its index
// (Z5) = VI.
#define STEP(V, VI) \
	VCMPPS $0x1e, Z4, V, K3; \
	VCMPPS $3, V, V, K4; \
	KORW K4, K3, K3; \
	VMOVAPS V, K3, Z4; \
	VMOVDQA32 VI, K3, Z5

// func pool2x2IdxRowZ(r0, r1 *float32, vals *float32, idx *int64, n int, i0, i1 int)
TEXT ·pool2x2IdxRowZ(SB), NOSPLIT, $0-56
	POOLSETUP
	// Indices: row 0 columns i0 + 2j (+1), row 1 i1 + 2j (+1).
	VPBROADCASTD i0+40(FP), Z12
	VPADDD Z10, Z12, Z12
	VPADDD Z11, Z12, Z13
	VPBROADCASTD i1+48(FP), Z14
	VPADDD Z10, Z14, Z14
	VPADDD Z11, Z14, Z15
	VMOVAPS Z0, Z4
	VMOVDQA32 Z12, Z5
	STEP(Z1, Z13)
	STEP(Z2, Z14)
	STEP(Z3, Z15)
	MOVQ vals+16(FP), DI
	VMOVUPS Z4, K7, (DI)
	MOVQ idx+24(FP), DI
	VPMOVSXDQ Y5, Z6
	VMOVDQU64 Z6, K7, (DI)
	KSHIFTRW $8, K7, K6
	VEXTRACTI32X8 $1, Z5, Y7
	VPMOVSXDQ Y7, Z6
	VMOVDQU64 Z6, K6, 64(DI)
	VZEROUPPER
	RET

DATA quiet<>+0(SB)/4, $0x00400000
GLOBL quiet<>(SB), RODATA|NOPTR, $4

// func pool2x2RowZ(r0, r1 *float32, vals *float32, _ *int64, n int)
// The values only, a NaN maximum quieted (as the float64 round trip of the
// scalar loop does).
TEXT ·pool2x2RowZ(SB), NOSPLIT, $0-40
	POOLSETUP
	VMOVAPS Z0, Z4
	STEP(Z1, Z13)
	STEP(Z2, Z14)
	STEP(Z3, Z15)
	VCMPPS $3, Z4, Z4, K3
	VPBROADCASTD quiet<>(SB), Z6
	VPORD Z6, Z4, K3, Z4
	MOVQ vals+16(FP), DI
	VMOVUPS Z4, K7, (DI)
	VZEROUPPER
	RET
