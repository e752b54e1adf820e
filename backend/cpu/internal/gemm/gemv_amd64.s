//go:build amd64 && !purego

#include "textflag.h"

// AVX2+FMA matrix-vector kernels. Every output element is one fused
// multiply-add chain over k in order, starting from zero: the same
// arithmetic as the GEMM micro-kernels, so a matrix-vector product equals
// the corresponding row or column of a matrix product bit for bit.

// GEMVDOT8(RA, RB, OFF, ACC) adds eight k steps (from byte OFF past AX)
// of eight rows — four from RA and four from RB, R8 bytes apart (R11 =
// 3*R8) — times x into the eight lanes of ACC: the rows are loaded, the
// 8x8 block transposed, then one broadcast FMA per k step, in order.
#define GEMVDOT8(RA, RB, OFF, ACC) \
	LEAQ OFF(RA)(AX*1), R9; \
	LEAQ OFF(RB)(AX*1), R10; \
	VMOVUPS (R9), Y0; \
	VMOVUPS (R9)(R8*1), Y1; \
	VMOVUPS (R9)(R8*2), Y2; \
	VMOVUPS (R9)(R11*1), Y3; \
	VMOVUPS (R10), Y4; \
	VMOVUPS (R10)(R8*1), Y5; \
	VMOVUPS (R10)(R8*2), Y6; \
	VMOVUPS (R10)(R11*1), Y7; \
	VUNPCKLPS Y1, Y0, Y8; \
	VUNPCKHPS Y1, Y0, Y9; \
	VUNPCKLPS Y3, Y2, Y10; \
	VUNPCKHPS Y3, Y2, Y11; \
	VUNPCKLPS Y5, Y4, Y0; \
	VUNPCKHPS Y5, Y4, Y1; \
	VUNPCKLPS Y7, Y6, Y2; \
	VUNPCKHPS Y7, Y6, Y3; \
	VSHUFPS $0x44, Y10, Y8, Y4; \
	VSHUFPS $0xEE, Y10, Y8, Y5; \
	VSHUFPS $0x44, Y11, Y9, Y6; \
	VSHUFPS $0xEE, Y11, Y9, Y7; \
	VSHUFPS $0x44, Y2, Y0, Y8; \
	VSHUFPS $0xEE, Y2, Y0, Y9; \
	VSHUFPS $0x44, Y3, Y1, Y10; \
	VSHUFPS $0xEE, Y3, Y1, Y11; \
	VPERM2F128 $0x20, Y8, Y4, Y0; \
	VPERM2F128 $0x20, Y9, Y5, Y1; \
	VPERM2F128 $0x20, Y10, Y6, Y2; \
	VPERM2F128 $0x20, Y11, Y7, Y3; \
	VPERM2F128 $0x31, Y8, Y4, Y12; \
	VPERM2F128 $0x31, Y9, Y5, Y13; \
	VPERM2F128 $0x31, Y10, Y6, Y4; \
	VPERM2F128 $0x31, Y11, Y7, Y5; \
	VBROADCASTSS OFF+0(DI)(AX*1), Y6; \
	VFMADD231PS Y6, Y0, ACC; \
	VBROADCASTSS OFF+4(DI)(AX*1), Y7; \
	VFMADD231PS Y7, Y1, ACC; \
	VBROADCASTSS OFF+8(DI)(AX*1), Y8; \
	VFMADD231PS Y8, Y2, ACC; \
	VBROADCASTSS OFF+12(DI)(AX*1), Y9; \
	VFMADD231PS Y9, Y3, ACC; \
	VBROADCASTSS OFF+16(DI)(AX*1), Y10; \
	VFMADD231PS Y10, Y12, ACC; \
	VBROADCASTSS OFF+20(DI)(AX*1), Y11; \
	VFMADD231PS Y11, Y13, ACC; \
	VBROADCASTSS OFF+24(DI)(AX*1), Y6; \
	VFMADD231PS Y6, Y4, ACC; \
	VBROADCASTSS OFF+28(DI)(AX*1), Y7; \
	VFMADD231PS Y7, Y5, ACC

// func GemvDotF32x8(k int, a *float32, lda int, x, y *float32)
TEXT ·GemvDotF32x8(SB), NOSPLIT, $0-40
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $2, R8
	MOVQ x+24(FP), DI
	MOVQ y+32(FP), DX
	LEAQ (R8)(R8*2), R11
	LEAQ (SI)(R8*4), R12
	VXORPS Y15, Y15, Y15
	XORQ AX, AX
	MOVQ CX, BX
	SHRQ $4, BX
	JZ gemvDotF32x8rem8
gemvDotF32x8loop16:
	GEMVDOT8(SI, R12, 0, Y15)
	GEMVDOT8(SI, R12, 32, Y15)
	ADDQ $64, AX
	DECQ BX
	JNZ gemvDotF32x8loop16
gemvDotF32x8rem8:
	TESTQ $8, CX
	JZ gemvDotF32x8tail
	GEMVDOT8(SI, R12, 0, Y15)
	ADDQ $32, AX
gemvDotF32x8tail:
	ANDQ $7, CX
	JZ gemvDotF32x8done
gemvDotF32x8loop1:
	LEAQ (SI)(AX*1), R9
	LEAQ (R12)(AX*1), R10
	VMOVSS (R9), X0
	VINSERTPS $0x10, (R9)(R8*1), X0, X0
	VINSERTPS $0x20, (R9)(R8*2), X0, X0
	VINSERTPS $0x30, (R9)(R11*1), X0, X0
	VMOVSS (R10), X1
	VINSERTPS $0x10, (R10)(R8*1), X1, X1
	VINSERTPS $0x20, (R10)(R8*2), X1, X1
	VINSERTPS $0x30, (R10)(R11*1), X1, X1
	VINSERTF128 $1, X1, Y0, Y0
	VBROADCASTSS (DI)(AX*1), Y2
	VFMADD231PS Y2, Y0, Y15
	ADDQ $4, AX
	DECQ CX
	JNZ gemvDotF32x8loop1
gemvDotF32x8done:
	VMOVUPS Y15, 0(DX)
	VZEROUPPER
	RET

// func GemvDotF32x16(k int, a *float32, lda int, x, y *float32)
TEXT ·GemvDotF32x16(SB), NOSPLIT, $0-40
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $2, R8
	MOVQ x+24(FP), DI
	MOVQ y+32(FP), DX
	LEAQ (R8)(R8*2), R11
	LEAQ (SI)(R8*4), R12
	LEAQ (R12)(R8*4), R13
	LEAQ (R13)(R8*4), R14
	VXORPS Y15, Y15, Y15
	VXORPS Y14, Y14, Y14
	XORQ AX, AX
	MOVQ CX, BX
	SHRQ $4, BX
	JZ gemvDotF32x16rem8
gemvDotF32x16loop16:
	GEMVDOT8(SI, R12, 0, Y15)
	GEMVDOT8(SI, R12, 32, Y15)
	GEMVDOT8(R13, R14, 0, Y14)
	GEMVDOT8(R13, R14, 32, Y14)
	ADDQ $64, AX
	DECQ BX
	JNZ gemvDotF32x16loop16
gemvDotF32x16rem8:
	TESTQ $8, CX
	JZ gemvDotF32x16tail
	GEMVDOT8(SI, R12, 0, Y15)
	GEMVDOT8(R13, R14, 0, Y14)
	ADDQ $32, AX
gemvDotF32x16tail:
	ANDQ $7, CX
	JZ gemvDotF32x16done
gemvDotF32x16loop1:
	LEAQ (SI)(AX*1), R9
	LEAQ (R12)(AX*1), R10
	VMOVSS (R9), X0
	VINSERTPS $0x10, (R9)(R8*1), X0, X0
	VINSERTPS $0x20, (R9)(R8*2), X0, X0
	VINSERTPS $0x30, (R9)(R11*1), X0, X0
	VMOVSS (R10), X1
	VINSERTPS $0x10, (R10)(R8*1), X1, X1
	VINSERTPS $0x20, (R10)(R8*2), X1, X1
	VINSERTPS $0x30, (R10)(R11*1), X1, X1
	VINSERTF128 $1, X1, Y0, Y0
	VBROADCASTSS (DI)(AX*1), Y2
	VFMADD231PS Y2, Y0, Y15
	LEAQ (R13)(AX*1), R9
	LEAQ (R14)(AX*1), R10
	VMOVSS (R9), X0
	VINSERTPS $0x10, (R9)(R8*1), X0, X0
	VINSERTPS $0x20, (R9)(R8*2), X0, X0
	VINSERTPS $0x30, (R9)(R11*1), X0, X0
	VMOVSS (R10), X1
	VINSERTPS $0x10, (R10)(R8*1), X1, X1
	VINSERTPS $0x20, (R10)(R8*2), X1, X1
	VINSERTPS $0x30, (R10)(R11*1), X1, X1
	VINSERTF128 $1, X1, Y0, Y0
	VBROADCASTSS (DI)(AX*1), Y2
	VFMADD231PS Y2, Y0, Y14
	ADDQ $4, AX
	DECQ CX
	JNZ gemvDotF32x16loop1
gemvDotF32x16done:
	VMOVUPS Y15, 0(DX)
	VMOVUPS Y14, 32(DX)
	VZEROUPPER
	RET

// func GemvAxpyF32(k int, x, b *float32, ldb int, y *float32, n int, mask *int32, load int)
TEXT ·GemvAxpyF32(SB), NOSPLIT, $0-64
	MOVQ load+56(FP), R11
	MOVQ k+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ ldb+24(FP), R8
	SHLQ $2, R8
	MOVQ y+32(FP), DX
	MOVQ n+40(FP), BX
	TESTQ CX, CX
	JEQ gemvAxpyF32zero
gemvAxpyF32strip64:
	CMPQ BX, $64
	JLT gemvAxpyF32strip8
	TESTQ R11, R11
	JNE gemvAxpyF32ld64
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	JMP gemvAxpyF32go64
gemvAxpyF32ld64:
	VMOVUPS 0(DX), Y0
	VMOVUPS 32(DX), Y1
	VMOVUPS 64(DX), Y2
	VMOVUPS 96(DX), Y3
	VMOVUPS 128(DX), Y4
	VMOVUPS 160(DX), Y5
	VMOVUPS 192(DX), Y6
	VMOVUPS 224(DX), Y7
gemvAxpyF32go64:
	MOVQ DI, R9
	XORQ AX, AX
gemvAxpyF32loop64:
	VBROADCASTSS (SI)(AX*4), Y8
	VFMADD231PS 0(R9), Y8, Y0
	VFMADD231PS 32(R9), Y8, Y1
	VFMADD231PS 64(R9), Y8, Y2
	VFMADD231PS 96(R9), Y8, Y3
	VFMADD231PS 128(R9), Y8, Y4
	VFMADD231PS 160(R9), Y8, Y5
	VFMADD231PS 192(R9), Y8, Y6
	VFMADD231PS 224(R9), Y8, Y7
	ADDQ R8, R9
	INCQ AX
	CMPQ AX, CX
	JLT gemvAxpyF32loop64
	VMOVUPS Y0, 0(DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	VMOVUPS Y4, 128(DX)
	VMOVUPS Y5, 160(DX)
	VMOVUPS Y6, 192(DX)
	VMOVUPS Y7, 224(DX)
	ADDQ $256, DI
	ADDQ $256, DX
	SUBQ $64, BX
	JMP gemvAxpyF32strip64
gemvAxpyF32strip8:
	CMPQ BX, $8
	JLT gemvAxpyF32masked
	VXORPS Y0, Y0, Y0
	TESTQ R11, R11
	JEQ gemvAxpyF32go8
	VMOVUPS (DX), Y0
gemvAxpyF32go8:
	MOVQ DI, R9
	XORQ AX, AX
gemvAxpyF32loop8:
	VBROADCASTSS (SI)(AX*4), Y8
	VFMADD231PS (R9), Y8, Y0
	ADDQ R8, R9
	INCQ AX
	CMPQ AX, CX
	JLT gemvAxpyF32loop8
	VMOVUPS Y0, (DX)
	ADDQ $32, DI
	ADDQ $32, DX
	SUBQ $8, BX
	JMP gemvAxpyF32strip8
gemvAxpyF32masked:
	TESTQ BX, BX
	JEQ gemvAxpyF32done
	MOVQ mask+48(FP), R10
	VMOVDQU (R10), Y9
	VXORPS Y0, Y0, Y0
	TESTQ R11, R11
	JEQ gemvAxpyF32gom
	VMASKMOVPS (DX), Y9, Y0
gemvAxpyF32gom:
	MOVQ DI, R9
	XORQ AX, AX
gemvAxpyF32loopm:
	VBROADCASTSS (SI)(AX*4), Y8
	VMASKMOVPS (R9), Y9, Y1
	VFMADD231PS Y1, Y8, Y0
	ADDQ R8, R9
	INCQ AX
	CMPQ AX, CX
	JLT gemvAxpyF32loopm
	VMASKMOVPS Y0, Y9, (DX)
gemvAxpyF32done:
	VZEROUPPER
	RET
gemvAxpyF32zero:
	XORQ AX, AX
gemvAxpyF32zloop:
	CMPQ AX, BX
	JGE gemvAxpyF32zdone
	MOVL $0, (DX)(AX*4)
	INCQ AX
	JMP gemvAxpyF32zloop
gemvAxpyF32zdone:
	RET

// Dot-form kernels in the documented order of gemm_gemv.go (gemvOrderF32):
// each row's products go to 32 f32 lanes, lane p%32 taking element p in k
// order (two 16-lane halves L0 and L1), then L0+L1 and a halving tree. The
// AVX-512 and AVX2 kernels run the same lane arithmetic (one ZMM is two
// YMM), so they give the same bits. A tail of k%32 elements is loaded
// masked (lanes past k add nothing: a lane starting at +0 is never -0, so
// adding +0 leaves it unchanged). tail points at 32 int32 lanes, -1 for
// the first k%32 and 0 for the rest.

// GEMVREDZ(A, B, OUT) sets OUT (a memory operand) to the tree reduction of
// the two 16-lane halves A and B (ZMM numbers as registers).
#define GEMVREDZ(ZA, ZB, YA, YB, XA, XB, OUT) \
	VADDPS ZB, ZA, ZA; \
	VEXTRACTF32X8 $1, ZA, YB; \
	VADDPS YB, YA, YA; \
	VEXTRACTF128 $1, YA, XB; \
	VADDPS XB, XA, XA; \
	VMOVHLPS XA, XA, XB; \
	VADDPS XB, XA, XA; \
	VMOVSHDUP XA, XB; \
	VADDSS XB, XA, XA; \
	VMOVSS XA, OUT

// func GemvDotF32AVX512(k int, a *float32, lda int, x, y *float32, rows int, tail *int32)
TEXT ·GemvDotF32AVX512(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $2, R8
	MOVQ x+24(FP), DI
	MOVQ y+32(FP), DX
	MOVQ rows+40(FP), BX
	MOVQ tail+48(FP), R9
	VMOVDQU32 (R9), Z30
	VMOVDQU32 64(R9), Z31
	VPMOVD2M Z30, K1
	VPMOVD2M Z31, K2
	MOVQ CX, R9
	ANDQ $31, R9
	ANDQ $-32, CX
	SHLQ $2, CX
	// x's masked tail, once.
	VMOVUPS.Z (DI)(CX*1), K1, Z28
	VMOVUPS.Z 64(DI)(CX*1), K2, Z29
	LEAQ (R8)(R8*2), R11
	// One row at a time where GemvRowWalk says so (the same bits).
	CMPB ·GemvRowWalk(SB), $0
	JNE gemvDotF32Z1
gemvDotF32Z4:
	CMPQ BX, $4
	JLT gemvDotF32Z1
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	LEAQ (SI)(R8*1), R12
	LEAQ (SI)(R8*2), R13
	LEAQ (SI)(R11*1), R14
	LEAQ (SI)(R8*4), R10
	LEAQ (R13)(R8*4), R15
	XORQ AX, AX
	CMPQ AX, CX
	JGE gemvDotF32Z4tail
gemvDotF32Z4loop:
	// Prefetch the same columns of the next four rows (R10: rows 4 and
	// 5 down, R15: 6 and 7), as the AVX2 kernel does.
	PREFETCHT0 (R10)
	PREFETCHT0 64(R10)
	PREFETCHT0 (R10)(R8*1)
	PREFETCHT0 64(R10)(R8*1)
	PREFETCHT0 (R15)
	PREFETCHT0 64(R15)
	PREFETCHT0 (R15)(R8*1)
	PREFETCHT0 64(R15)(R8*1)
	ADDQ $128, R10
	ADDQ $128, R15
	VMOVUPS (DI)(AX*1), Z8
	VMOVUPS 64(DI)(AX*1), Z9
	VFMADD231PS (SI)(AX*1), Z8, Z0
	VFMADD231PS 64(SI)(AX*1), Z9, Z1
	VFMADD231PS (R12)(AX*1), Z8, Z2
	VFMADD231PS 64(R12)(AX*1), Z9, Z3
	VFMADD231PS (R13)(AX*1), Z8, Z4
	VFMADD231PS 64(R13)(AX*1), Z9, Z5
	VFMADD231PS (R14)(AX*1), Z8, Z6
	VFMADD231PS 64(R14)(AX*1), Z9, Z7
	ADDQ $128, AX
	CMPQ AX, CX
	JLT gemvDotF32Z4loop
gemvDotF32Z4tail:
	TESTQ R9, R9
	JEQ gemvDotF32Z4red
	VFMADD231PS (SI)(AX*1), Z28, K1, Z0
	VFMADD231PS 64(SI)(AX*1), Z29, K2, Z1
	VFMADD231PS (R12)(AX*1), Z28, K1, Z2
	VFMADD231PS 64(R12)(AX*1), Z29, K2, Z3
	VFMADD231PS (R13)(AX*1), Z28, K1, Z4
	VFMADD231PS 64(R13)(AX*1), Z29, K2, Z5
	VFMADD231PS (R14)(AX*1), Z28, K1, Z6
	VFMADD231PS 64(R14)(AX*1), Z29, K2, Z7
gemvDotF32Z4red:
	GEMVREDZ(Z0, Z1, Y0, Y1, X0, X1, 0(DX))
	GEMVREDZ(Z2, Z3, Y2, Y3, X2, X3, 4(DX))
	GEMVREDZ(Z4, Z5, Y4, Y5, X4, X5, 8(DX))
	GEMVREDZ(Z6, Z7, Y6, Y7, X6, X7, 12(DX))
	LEAQ (SI)(R8*4), SI
	ADDQ $16, DX
	SUBQ $4, BX
	JMP gemvDotF32Z4
gemvDotF32Z1:
	TESTQ BX, BX
	JEQ gemvDotF32Zdone
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	XORQ AX, AX
	CMPQ AX, CX
	JGE gemvDotF32Z1tail
gemvDotF32Z1loop:
	VMOVUPS (DI)(AX*1), Z8
	VMOVUPS 64(DI)(AX*1), Z9
	VFMADD231PS (SI)(AX*1), Z8, Z0
	VFMADD231PS 64(SI)(AX*1), Z9, Z1
	ADDQ $128, AX
	CMPQ AX, CX
	JLT gemvDotF32Z1loop
gemvDotF32Z1tail:
	TESTQ R9, R9
	JEQ gemvDotF32Z1red
	VFMADD231PS (SI)(AX*1), Z28, K1, Z0
	VFMADD231PS 64(SI)(AX*1), Z29, K2, Z1
gemvDotF32Z1red:
	GEMVREDZ(Z0, Z1, Y0, Y1, X0, X1, 0(DX))
	ADDQ R8, SI
	ADDQ $4, DX
	DECQ BX
	JMP gemvDotF32Z1
gemvDotF32Zdone:
	VZEROUPPER
	RET

// GEMVREDY(A, B, C, D, OUT): the tree reduction of L0 = A|B, L1 = C|D.
#define GEMVREDY(YA, YB, YC, YD, XA, XB, OUT) \
	VADDPS YC, YA, YA; \
	VADDPS YD, YB, YB; \
	VADDPS YB, YA, YA; \
	VEXTRACTF128 $1, YA, XB; \
	VADDPS XB, XA, XA; \
	VMOVHLPS XA, XA, XB; \
	VADDPS XB, XA, XA; \
	VMOVSHDUP XA, XB; \
	VADDSS XB, XA, XA; \
	VMOVSS XA, OUT

// GEMVTAILY(G, OFF): the masked tail FMA of 8-lane group G (byte OFF) of
// the two rows SI and R12 into Y(G) and Y(4+G) — as a macro per group.
#define GEMVTAILY(OFF, ACC0, ACC1) \
	VMOVDQU OFF(R9), Y12; \
	VMASKMOVPS OFF(DI)(AX*1), Y12, Y8; \
	VMASKMOVPS OFF(SI)(AX*1), Y12, Y9; \
	VFMADD231PS Y9, Y8, ACC0; \
	VMASKMOVPS OFF(R12)(AX*1), Y12, Y10; \
	VFMADD231PS Y10, Y8, ACC1

// GEMVTAILY1(OFF, ACC0): GEMVTAILY for the row SI alone.
#define GEMVTAILY1(OFF, ACC0) \
	VMOVDQU OFF(R9), Y12; \
	VMASKMOVPS OFF(DI)(AX*1), Y12, Y8; \
	VMASKMOVPS OFF(SI)(AX*1), Y12, Y9; \
	VFMADD231PS Y9, Y8, ACC0

// func GemvDotF32AVX2(k int, a *float32, lda int, x, y *float32, rows int, tail *int32)
TEXT ·GemvDotF32AVX2(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $2, R8
	MOVQ x+24(FP), DI
	MOVQ y+32(FP), DX
	MOVQ rows+40(FP), BX
	MOVQ tail+48(FP), R9
	MOVQ CX, R10
	ANDQ $31, R10
	ANDQ $-32, CX
	SHLQ $2, CX
	// One row at a time where GemvRowWalk says so (the same bits).
	CMPB ·GemvRowWalk(SB), $0
	JNE gemvDotF32Y1
gemvDotF32Y2:
	TESTQ BX, BX
	JEQ gemvDotF32Ydone
	// Two rows (the second repeats the first when one is left).
	MOVQ SI, R12
	CMPQ BX, $2
	JLT gemvDotF32Y2go
	ADDQ R8, R12
gemvDotF32Y2go:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	LEAQ (SI)(R8*4), R13
	LEAQ (R12)(R8*4), R14
	XORQ AX, AX
	CMPQ AX, CX
	JGE gemvDotF32Y2tail
gemvDotF32Y2loop:
	// Software prefetch of the same columns four rows down (R13, R14):
	// the rows two row pairs later. Before, 512 bytes ahead in each row
	// (10-15% over none); four rows down streamed 5-15% faster on one
	// thread (BenchmarkGEMVDotKernels, 2-core Zen 3) and made SmolLM2's
	// F32 decode products 4-7% faster.
	PREFETCHT0 (R13)(AX*1)
	PREFETCHT0 64(R13)(AX*1)
	PREFETCHT0 (R14)(AX*1)
	PREFETCHT0 64(R14)(AX*1)
	VMOVUPS (DI)(AX*1), Y8
	VMOVUPS 32(DI)(AX*1), Y9
	VMOVUPS 64(DI)(AX*1), Y10
	VMOVUPS 96(DI)(AX*1), Y11
	VFMADD231PS (SI)(AX*1), Y8, Y0
	VFMADD231PS 32(SI)(AX*1), Y9, Y1
	VFMADD231PS 64(SI)(AX*1), Y10, Y2
	VFMADD231PS 96(SI)(AX*1), Y11, Y3
	VFMADD231PS (R12)(AX*1), Y8, Y4
	VFMADD231PS 32(R12)(AX*1), Y9, Y5
	VFMADD231PS 64(R12)(AX*1), Y10, Y6
	VFMADD231PS 96(R12)(AX*1), Y11, Y7
	ADDQ $128, AX
	CMPQ AX, CX
	JLT gemvDotF32Y2loop
gemvDotF32Y2tail:
	TESTQ R10, R10
	JEQ gemvDotF32Y2red
	GEMVTAILY(0, Y0, Y4)
	GEMVTAILY(32, Y1, Y5)
	GEMVTAILY(64, Y2, Y6)
	GEMVTAILY(96, Y3, Y7)
gemvDotF32Y2red:
	GEMVREDY(Y0, Y1, Y2, Y3, X0, X1, 0(DX))
	CMPQ BX, $2
	JLT gemvDotF32Ydone
	GEMVREDY(Y4, Y5, Y6, Y7, X4, X5, 4(DX))
	LEAQ (SI)(R8*2), SI
	ADDQ $8, DX
	SUBQ $2, BX
	JMP gemvDotF32Y2
gemvDotF32Y1:
	// One row: a single sequential stream through the matrix, which AMD's
	// hardware prefetchers follow best. No software prefetch: 1 to 4 KiB
	// ahead made SmolLM2-135M's F32 decode 5-10% slower (Zen 3).
	TESTQ BX, BX
	JEQ gemvDotF32Ydone
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ AX, AX
	CMPQ AX, CX
	JGE gemvDotF32Y1tail
gemvDotF32Y1loop:
	VMOVUPS (DI)(AX*1), Y8
	VMOVUPS 32(DI)(AX*1), Y9
	VMOVUPS 64(DI)(AX*1), Y10
	VMOVUPS 96(DI)(AX*1), Y11
	VFMADD231PS (SI)(AX*1), Y8, Y0
	VFMADD231PS 32(SI)(AX*1), Y9, Y1
	VFMADD231PS 64(SI)(AX*1), Y10, Y2
	VFMADD231PS 96(SI)(AX*1), Y11, Y3
	ADDQ $128, AX
	CMPQ AX, CX
	JLT gemvDotF32Y1loop
gemvDotF32Y1tail:
	TESTQ R10, R10
	JEQ gemvDotF32Y1red
	GEMVTAILY1(0, Y0)
	GEMVTAILY1(32, Y1)
	GEMVTAILY1(64, Y2)
	GEMVTAILY1(96, Y3)
gemvDotF32Y1red:
	GEMVREDY(Y0, Y1, Y2, Y3, X0, X1, 0(DX))
	ADDQ R8, SI
	ADDQ $4, DX
	DECQ BX
	JMP gemvDotF32Y1
gemvDotF32Ydone:
	VZEROUPPER
	RET

// func GemvAxpyF32AVX512(k int, x, b *float32, ldb int, y *float32, n int, mask *int32, load int)
// GemvAxpyF32 on ZMM registers (mask unused): strips of 256 columns in
// sixteen accumulators (1 KiB of each matrix row per k step), then of 16,
// then the last n%16 under a lane mask. The same in-order chains, so the
// same bits.
TEXT ·GemvAxpyF32AVX512(SB), NOSPLIT, $0-64
	MOVQ load+56(FP), R11
	MOVQ k+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ ldb+24(FP), R8
	SHLQ $2, R8
	MOVQ y+32(FP), DX
	MOVQ n+40(FP), BX
	TESTQ CX, CX
	JEQ axpyZzero
axpyZ256:
	CMPQ BX, $256
	JLT axpyZ16
	TESTQ R11, R11
	JNE axpyZld256
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	JMP axpyZgo256
axpyZld256:
	VMOVUPS 0(DX), Z0
	VMOVUPS 64(DX), Z1
	VMOVUPS 128(DX), Z2
	VMOVUPS 192(DX), Z3
	VMOVUPS 256(DX), Z4
	VMOVUPS 320(DX), Z5
	VMOVUPS 384(DX), Z6
	VMOVUPS 448(DX), Z7
	VMOVUPS 512(DX), Z8
	VMOVUPS 576(DX), Z9
	VMOVUPS 640(DX), Z10
	VMOVUPS 704(DX), Z11
	VMOVUPS 768(DX), Z12
	VMOVUPS 832(DX), Z13
	VMOVUPS 896(DX), Z14
	VMOVUPS 960(DX), Z15
axpyZgo256:
	MOVQ DI, R9
	XORQ AX, AX
axpyZloop256:
	VBROADCASTSS (SI)(AX*4), Z16
	VFMADD231PS 0(R9), Z16, Z0
	VFMADD231PS 64(R9), Z16, Z1
	VFMADD231PS 128(R9), Z16, Z2
	VFMADD231PS 192(R9), Z16, Z3
	VFMADD231PS 256(R9), Z16, Z4
	VFMADD231PS 320(R9), Z16, Z5
	VFMADD231PS 384(R9), Z16, Z6
	VFMADD231PS 448(R9), Z16, Z7
	VFMADD231PS 512(R9), Z16, Z8
	VFMADD231PS 576(R9), Z16, Z9
	VFMADD231PS 640(R9), Z16, Z10
	VFMADD231PS 704(R9), Z16, Z11
	VFMADD231PS 768(R9), Z16, Z12
	VFMADD231PS 832(R9), Z16, Z13
	VFMADD231PS 896(R9), Z16, Z14
	VFMADD231PS 960(R9), Z16, Z15
	ADDQ R8, R9
	INCQ AX
	CMPQ AX, CX
	JLT axpyZloop256
	VMOVUPS Z0, 0(DX)
	VMOVUPS Z1, 64(DX)
	VMOVUPS Z2, 128(DX)
	VMOVUPS Z3, 192(DX)
	VMOVUPS Z4, 256(DX)
	VMOVUPS Z5, 320(DX)
	VMOVUPS Z6, 384(DX)
	VMOVUPS Z7, 448(DX)
	VMOVUPS Z8, 512(DX)
	VMOVUPS Z9, 576(DX)
	VMOVUPS Z10, 640(DX)
	VMOVUPS Z11, 704(DX)
	VMOVUPS Z12, 768(DX)
	VMOVUPS Z13, 832(DX)
	VMOVUPS Z14, 896(DX)
	VMOVUPS Z15, 960(DX)
	ADDQ $1024, DI
	ADDQ $1024, DX
	SUBQ $256, BX
	JMP axpyZ256
axpyZ16:
	CMPQ BX, $16
	JLT axpyZmasked
	VPXORD Z0, Z0, Z0
	TESTQ R11, R11
	JEQ axpyZgo16
	VMOVUPS (DX), Z0
axpyZgo16:
	MOVQ DI, R9
	XORQ AX, AX
axpyZloop16:
	VBROADCASTSS (SI)(AX*4), Z16
	VFMADD231PS (R9), Z16, Z0
	ADDQ R8, R9
	INCQ AX
	CMPQ AX, CX
	JLT axpyZloop16
	VMOVUPS Z0, (DX)
	ADDQ $64, DI
	ADDQ $64, DX
	SUBQ $16, BX
	JMP axpyZ16
axpyZmasked:
	TESTQ BX, BX
	JEQ axpyZdone
	MOVL $1, AX
	MOVQ CX, R10
	MOVQ BX, CX
	SHLL CX, AX
	MOVQ R10, CX
	DECL AX
	KMOVW AX, K1
	VPXORD Z0, Z0, Z0
	TESTQ R11, R11
	JEQ axpyZgom
	VMOVUPS.Z (DX), K1, Z0
axpyZgom:
	MOVQ DI, R9
	XORQ AX, AX
axpyZloopm:
	VBROADCASTSS (SI)(AX*4), Z16
	VFMADD231PS (R9), Z16, K1, Z0
	ADDQ R8, R9
	INCQ AX
	CMPQ AX, CX
	JLT axpyZloopm
	VMOVUPS Z0, K1, (DX)
axpyZdone:
	VZEROUPPER
	RET
axpyZzero:
	XORQ AX, AX
axpyZzloop:
	CMPQ AX, BX
	JGE axpyZzdone
	MOVL $0, (DX)(AX*4)
	INCQ AX
	JMP axpyZzloop
axpyZzdone:
	RET

// GEMVX4ROW2(XOFF, ACC0, ACC1, ACC2, ACC3): one 32-value chunk of x row
// XOFF (a register) against the two W rows in Z24|Z25 and Z26|Z27.
#define GEMVX4ROW2(XR, A0, A1, B0, B1) \
	VMOVUPS (XR)(AX*1), Z16; \
	VMOVUPS 64(XR)(AX*1), Z17; \
	VFMADD231PS Z24, Z16, A0; \
	VFMADD231PS Z25, Z17, A1; \
	VFMADD231PS Z26, Z16, B0; \
	VFMADD231PS Z27, Z17, B1

// GEMVX4TAIL2: the masked tail of x row XR against W rows SI and R12.
#define GEMVX4TAIL2(XR, A0, A1, B0, B1) \
	VMOVUPS.Z (XR)(AX*1), K1, Z16; \
	VMOVUPS.Z 64(XR)(AX*1), K2, Z17; \
	VFMADD231PS (SI)(AX*1), Z16, K1, A0; \
	VFMADD231PS 64(SI)(AX*1), Z17, K2, A1; \
	VFMADD231PS (R12)(AX*1), Z16, K1, B0; \
	VFMADD231PS 64(R12)(AX*1), Z17, K2, B1

// GEMVX4ROW1 and GEMVX4TAIL1: the same against the one W row Z24|Z25
// (SI).
#define GEMVX4ROW1(XR, A0, A1) \
	VMOVUPS (XR)(AX*1), Z16; \
	VMOVUPS 64(XR)(AX*1), Z17; \
	VFMADD231PS Z24, Z16, A0; \
	VFMADD231PS Z25, Z17, A1

#define GEMVX4TAIL1(XR, A0, A1) \
	VMOVUPS.Z (XR)(AX*1), K1, Z16; \
	VMOVUPS.Z 64(XR)(AX*1), K2, Z17; \
	VFMADD231PS (SI)(AX*1), Z16, K1, A0; \
	VFMADD231PS 64(SI)(AX*1), Z17, K2, A1

// func GemvDotF32x4AVX512(k int, a *float32, lda int, x *float32, ldx int, y *float32, ldy int, rows int, tail *int32)
// y[i*ldy+r] (i < 4, r < rows) = row r of a dotted with row i of x (rows
// ldx apart), each in GemvDotF32AVX512's lane order and so with its bits:
// two W rows at a time against the four x rows (sixteen accumulators, W
// loaded once for all four), the last odd row alone; or, where
// GemvRowWalk says so, one W row at a time (eight accumulators: a single
// stream through W, which Zen 4's prefetchers follow better).
TEXT ·GemvDotF32x4AVX512(SB), NOSPLIT, $0-72
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $2, R8
	MOVQ x+24(FP), DI
	MOVQ ldx+32(FP), R10
	SHLQ $2, R10
	MOVQ y+40(FP), DX
	MOVQ ldy+48(FP), R11
	SHLQ $2, R11
	MOVQ rows+56(FP), BX
	MOVQ tail+64(FP), R9
	VMOVDQU32 (R9), Z30
	VMOVDQU32 64(R9), Z31
	VPMOVD2M Z30, K1
	VPMOVD2M Z31, K2
	MOVQ CX, R9
	ANDQ $31, R9
	ANDQ $-32, CX
	SHLQ $2, CX
	LEAQ (DI)(R10*1), R13
	LEAQ (DI)(R10*2), R14
	LEAQ (R13)(R10*2), R15
	LEAQ (R11)(R11*2), R10 // 3*ldy bytes
	// One W row at a time where GemvRowWalk says so (the same bits).
	CMPB ·GemvRowWalk(SB), $0
	JNE gemvDotX4Z1
gemvDotX4Z2:
	CMPQ BX, $2
	JLT gemvDotX4Z1
	LEAQ (SI)(R8*1), R12
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	XORQ AX, AX
	CMPQ AX, CX
	JGE gemvDotX4Z2tail
gemvDotX4Z2loop:
	VMOVUPS (SI)(AX*1), Z24
	VMOVUPS 64(SI)(AX*1), Z25
	VMOVUPS (R12)(AX*1), Z26
	VMOVUPS 64(R12)(AX*1), Z27
	GEMVX4ROW2(DI, Z0, Z1, Z8, Z9)
	GEMVX4ROW2(R13, Z2, Z3, Z10, Z11)
	GEMVX4ROW2(R14, Z4, Z5, Z12, Z13)
	GEMVX4ROW2(R15, Z6, Z7, Z14, Z15)
	ADDQ $128, AX
	CMPQ AX, CX
	JLT gemvDotX4Z2loop
gemvDotX4Z2tail:
	TESTQ R9, R9
	JEQ gemvDotX4Z2red
	GEMVX4TAIL2(DI, Z0, Z1, Z8, Z9)
	GEMVX4TAIL2(R13, Z2, Z3, Z10, Z11)
	GEMVX4TAIL2(R14, Z4, Z5, Z12, Z13)
	GEMVX4TAIL2(R15, Z6, Z7, Z14, Z15)
gemvDotX4Z2red:
	GEMVREDZ(Z0, Z1, Y0, Y1, X0, X1, 0(DX))
	GEMVREDZ(Z2, Z3, Y2, Y3, X2, X3, 0(DX)(R11*1))
	GEMVREDZ(Z4, Z5, Y4, Y5, X4, X5, 0(DX)(R11*2))
	GEMVREDZ(Z6, Z7, Y6, Y7, X6, X7, 0(DX)(R10*1))
	GEMVREDZ(Z8, Z9, Y8, Y9, X8, X9, 4(DX))
	GEMVREDZ(Z10, Z11, Y10, Y11, X10, X11, 4(DX)(R11*1))
	GEMVREDZ(Z12, Z13, Y12, Y13, X12, X13, 4(DX)(R11*2))
	GEMVREDZ(Z14, Z15, Y14, Y15, X14, X15, 4(DX)(R10*1))
	LEAQ (SI)(R8*2), SI
	ADDQ $8, DX
	SUBQ $2, BX
	JMP gemvDotX4Z2
gemvDotX4Z1:
	TESTQ BX, BX
	JEQ gemvDotX4Zdone
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	XORQ AX, AX
	CMPQ AX, CX
	JGE gemvDotX4Z1tail
gemvDotX4Z1loop:
	VMOVUPS (SI)(AX*1), Z24
	VMOVUPS 64(SI)(AX*1), Z25
	GEMVX4ROW1(DI, Z0, Z1)
	GEMVX4ROW1(R13, Z2, Z3)
	GEMVX4ROW1(R14, Z4, Z5)
	GEMVX4ROW1(R15, Z6, Z7)
	ADDQ $128, AX
	CMPQ AX, CX
	JLT gemvDotX4Z1loop
gemvDotX4Z1tail:
	TESTQ R9, R9
	JEQ gemvDotX4Z1red
	GEMVX4TAIL1(DI, Z0, Z1)
	GEMVX4TAIL1(R13, Z2, Z3)
	GEMVX4TAIL1(R14, Z4, Z5)
	GEMVX4TAIL1(R15, Z6, Z7)
gemvDotX4Z1red:
	GEMVREDZ(Z0, Z1, Y0, Y1, X0, X1, 0(DX))
	GEMVREDZ(Z2, Z3, Y2, Y3, X2, X3, 0(DX)(R11*1))
	GEMVREDZ(Z4, Z5, Y4, Y5, X4, X5, 0(DX)(R11*2))
	GEMVREDZ(Z6, Z7, Y6, Y7, X6, X7, 0(DX)(R10*1))
	ADDQ R8, SI
	ADDQ $4, DX
	DECQ BX
	JMP gemvDotX4Z1
gemvDotX4Zdone:
	VZEROUPPER
	RET
