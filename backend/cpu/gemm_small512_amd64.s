//go:build amd64 && !purego

#include "textflag.h"

// gemmF32x6x16sz is gemmF32x6x16s (gemm_small_amd64.s) on ZMM registers,
// level avx512: the same 6x16 tile on unpacked operands, one 16-lane
// accumulator per row instead of two 8-lane ones, so that each k step is
// six FMAs instead of twelve. Same arithmetic: one FMA chain per element
// over p in order, from the tile (load 1) or from zero (load 0).

// func gemmF32x6x16sz(kc int, a *float32, rsa, csa int, b *float32, rsb int, c *float32, ldc int, load int)
TEXT ·gemmF32x6x16sz(SB), NOSPLIT, $0-72
	MOVQ kc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ rsa+16(FP), R8
	SHLQ $2, R8
	MOVQ csa+24(FP), R13
	SHLQ $2, R13
	MOVQ b+32(FP), DI
	MOVQ rsb+40(FP), R14
	SHLQ $2, R14
	MOVQ c+48(FP), DX
	MOVQ ldc+56(FP), R10
	SHLQ $2, R10
	LEAQ (SI)(R8*2), R12
	ADDQ R8, R12
	MOVQ load+64(FP), R11
	TESTQ R11, R11
	JNE szload
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	JMP szloaded
szload:
	MOVQ DX, R9
	VMOVUPS (R9), Z0
	ADDQ R10, R9
	VMOVUPS (R9), Z1
	ADDQ R10, R9
	VMOVUPS (R9), Z2
	ADDQ R10, R9
	VMOVUPS (R9), Z3
	ADDQ R10, R9
	VMOVUPS (R9), Z4
	ADDQ R10, R9
	VMOVUPS (R9), Z5
szloaded:
	TESTQ CX, CX
	JEQ szstore
szloop:
	VMOVUPS (DI), Z16
	VBROADCASTSS (SI), Z20
	VFMADD231PS Z16, Z20, Z0
	VBROADCASTSS (SI)(R8*1), Z21
	VFMADD231PS Z16, Z21, Z1
	VBROADCASTSS (SI)(R8*2), Z22
	VFMADD231PS Z16, Z22, Z2
	VBROADCASTSS (R12), Z23
	VFMADD231PS Z16, Z23, Z3
	VBROADCASTSS (R12)(R8*1), Z24
	VFMADD231PS Z16, Z24, Z4
	VBROADCASTSS (R12)(R8*2), Z25
	VFMADD231PS Z16, Z25, Z5
	ADDQ R13, SI
	ADDQ R13, R12
	ADDQ R14, DI
	DECQ CX
	JNZ szloop
szstore:
	MOVQ DX, R9
	VMOVUPS Z0, (R9)
	ADDQ R10, R9
	VMOVUPS Z1, (R9)
	ADDQ R10, R9
	VMOVUPS Z2, (R9)
	ADDQ R10, R9
	VMOVUPS Z3, (R9)
	ADDQ R10, R9
	VMOVUPS Z4, (R9)
	ADDQ R10, R9
	VMOVUPS Z5, (R9)
	VZEROUPPER
	RET
