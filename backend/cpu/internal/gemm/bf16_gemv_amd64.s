//go:build amd64 && !purego

#include "textflag.h"

// bf16 dot-form matrix-vector kernels in the bf16 order of gemm_gemv.go:
// a 32-value chunk of a row is loaded whole and split without shuffles
// into its even values (shifted up 16 bits: lane j holds value 2j) and
// its odd values (low half cleared: lane j holds value 2j+1), each an
// exact f32; the vector x comes deinterleaved to match (per 32-chunk its
// 16 even values, then its 16 odd ones; gemvDeinterleave), zero past k.
// The even values go to the 16-lane accumulator L0, the odd ones to L1,
// then L0+L1 and the halving tree as in the f32 kernels. Both levels run
// the same lane arithmetic: the same bits. A partial last chunk's values
// past k are cleared (lane mask of 32 words, gemvTailMask16).

#define BF16REDZ(ZA, ZB, YA, YB, XA, XB, OUT) \
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

// BF16Z(ADDR, E, O): the chunk at ADDR loaded into Z18, split and
// accumulated into E (even values, times Z8) and O (odd, times Z9);
// BF16ZT the same for the last, partial chunk (values past k cleared).
#define BF16ZT(ADDR, E, O) \
	VMOVDQU16.Z ADDR, K1, Z18; \
	VPSLLD $16, Z18, Z19; \
	VPANDD Z31, Z18, Z18; \
	VFMADD231PS Z19, Z8, E; \
	VFMADD231PS Z18, Z9, O

#define BF16Z(ADDR, E, O) \
	VMOVDQU16 ADDR, Z18; \
	VPSLLD $16, Z18, Z19; \
	VPANDD Z31, Z18, Z18; \
	VFMADD231PS Z19, Z8, E; \
	VFMADD231PS Z18, Z9, O

// func GemvDotBF16AVX512(k int, a *uint16, lda int, x, y *float32, rows int, tail *int16)
TEXT ·GemvDotBF16AVX512(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $1, R8
	MOVQ x+24(FP), DI
	MOVQ y+32(FP), DX
	MOVQ rows+40(FP), BX
	MOVQ tail+48(FP), R9
	VMOVDQU16 (R9), Z30
	VPMOVW2M Z30, K1
	MOVL $0xFFFF0000, AX
	VPBROADCASTD AX, Z31
	MOVQ CX, R9
	ANDQ $31, R9
	SHRQ $5, CX
	LEAQ (R8)(R8*2), R11
	// One row at a time where GemvRowWalk says so (the same bits).
	CMPB ·GemvRowWalk(SB), $0
	JNE gemvDotBF16Z1
	// Eight rows at a time: row pointers R12 (rows 0-3) and R15 (4-7) and
	// x's R10 advance, rows addressed through R8 and R11.
gemvDotBF16Z8:
	CMPQ BX, $8
	JLT gemvDotBF16Z1
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27
	MOVQ SI, R12
	LEAQ (SI)(R8*4), R15
	LEAQ (SI)(R8*8), AX
	LEAQ (R15)(R8*8), R14
	MOVQ DI, R10
	MOVQ CX, R13
	TESTQ R13, R13
	JEQ gemvDotBF16Z8tail
gemvDotBF16Z8loop:
	VMOVUPS (R10), Z8
	VMOVUPS 64(R10), Z9
	// Prefetch the same columns of the next eight rows (AX, R14), as the
	// AVX2 kernel does four rows down: a decode row (1-6 KB) is too short
	// for a lead along it (512 bytes, before) to cover its first lines.
	PREFETCHT0 (AX)
	PREFETCHT0 (AX)(R8*1)
	PREFETCHT0 (AX)(R8*2)
	PREFETCHT0 (AX)(R11*1)
	PREFETCHT0 (R14)
	PREFETCHT0 (R14)(R8*1)
	PREFETCHT0 (R14)(R8*2)
	PREFETCHT0 (R14)(R11*1)
	ADDQ $64, AX
	ADDQ $64, R14
	BF16Z((R12), Z0, Z1)
	BF16Z((R12)(R8*1), Z2, Z3)
	BF16Z((R12)(R8*2), Z4, Z5)
	BF16Z((R12)(R11*1), Z6, Z7)
	BF16Z((R15), Z20, Z21)
	BF16Z((R15)(R8*1), Z22, Z23)
	BF16Z((R15)(R8*2), Z24, Z25)
	BF16Z((R15)(R11*1), Z26, Z27)
	ADDQ $64, R12
	ADDQ $64, R15
	ADDQ $128, R10
	DECQ R13
	JNZ gemvDotBF16Z8loop
gemvDotBF16Z8tail:
	TESTQ R9, R9
	JEQ gemvDotBF16Z8red
	VMOVUPS (R10), Z8
	VMOVUPS 64(R10), Z9
	BF16ZT((R12), Z0, Z1)
	BF16ZT((R12)(R8*1), Z2, Z3)
	BF16ZT((R12)(R8*2), Z4, Z5)
	BF16ZT((R12)(R11*1), Z6, Z7)
	BF16ZT((R15), Z20, Z21)
	BF16ZT((R15)(R8*1), Z22, Z23)
	BF16ZT((R15)(R8*2), Z24, Z25)
	BF16ZT((R15)(R11*1), Z26, Z27)
gemvDotBF16Z8red:
	BF16REDZ(Z0, Z1, Y0, Y1, X0, X1, 0(DX))
	BF16REDZ(Z2, Z3, Y2, Y3, X2, X3, 4(DX))
	BF16REDZ(Z4, Z5, Y4, Y5, X4, X5, 8(DX))
	BF16REDZ(Z6, Z7, Y6, Y7, X6, X7, 12(DX))
	VMOVAPS Z20, Z0
	VMOVAPS Z21, Z1
	VMOVAPS Z22, Z2
	VMOVAPS Z23, Z3
	VMOVAPS Z24, Z4
	VMOVAPS Z25, Z5
	VMOVAPS Z26, Z6
	VMOVAPS Z27, Z7
	BF16REDZ(Z0, Z1, Y0, Y1, X0, X1, 16(DX))
	BF16REDZ(Z2, Z3, Y2, Y3, X2, X3, 20(DX))
	BF16REDZ(Z4, Z5, Y4, Y5, X4, X5, 24(DX))
	BF16REDZ(Z6, Z7, Y6, Y7, X6, X7, 28(DX))
	LEAQ (SI)(R8*8), SI
	ADDQ $32, DX
	SUBQ $8, BX
	JMP gemvDotBF16Z8
gemvDotBF16Z1:
	TESTQ BX, BX
	JEQ gemvDotBF16Zdone
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	MOVQ SI, R12
	MOVQ DI, R10
	MOVQ CX, R13
	TESTQ R13, R13
	JEQ gemvDotBF16Z1tail
gemvDotBF16Z1loop:
	VMOVUPS (R10), Z8
	VMOVUPS 64(R10), Z9
	BF16Z((R12), Z0, Z1)
	ADDQ $64, R12
	ADDQ $128, R10
	DECQ R13
	JNZ gemvDotBF16Z1loop
gemvDotBF16Z1tail:
	TESTQ R9, R9
	JEQ gemvDotBF16Z1red
	VMOVUPS (R10), Z8
	VMOVUPS 64(R10), Z9
	BF16ZT((R12), Z0, Z1)
gemvDotBF16Z1red:
	BF16REDZ(Z0, Z1, Y0, Y1, X0, X1, 0(DX))
	ADDQ R8, SI
	ADDQ $4, DX
	DECQ BX
	JMP gemvDotBF16Z1
gemvDotBF16Zdone:
	VZEROUPPER
	RET

#define BF16REDY(YA, YB, YC, YD, XA, XB, OUT) \
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

// BF16Y(E, O, XE, XO): the 16 values in Y12 split and accumulated into E
// (even, times XE) and O (odd, times XO).
#define BF16Y(E, O, XE, XO) \
	VPSLLD $16, Y12, Y13; \
	VPAND Y15, Y12, Y12; \
	VFMADD231PS Y13, XE, E; \
	VFMADD231PS Y12, XO, O

// BF16ROWY(P, A, B, C, D): a whole 32-chunk of the row at P.
#define BF16ROWY(P, A, B, C, D) \
	VMOVDQU (P), Y12; \
	BF16Y(A, C, Y8, Y10); \
	VMOVDQU 32(P), Y12; \
	BF16Y(B, D, Y9, Y11)

// func GemvDotBF16AVX2(k int, a *uint16, lda int, x, y *float32, rows int, tail *int16)
// The partial last chunk reads each row up to k rounded up to 16 values
// (the caller keeps that inside the matrix's memory) and clears the
// values past k.
TEXT ·GemvDotBF16AVX2(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $1, R8
	MOVQ x+24(FP), DI
	MOVQ y+32(FP), DX
	MOVQ rows+40(FP), BX
	MOVQ tail+48(FP), R9
	MOVL $0xFFFF0000, AX
	MOVQ AX, X15
	VPBROADCASTD X15, Y15
	MOVQ CX, R11
	ANDQ $31, R11
	SHRQ $5, CX
	// One row at a time where GemvRowWalk says so (the same bits).
	CMPB ·GemvRowWalk(SB), $0
	JNE gemvDotBF16Y1
gemvDotBF16Y2:
	TESTQ BX, BX
	JEQ gemvDotBF16Ydone
	// Two rows (the second repeats the first when one is left).
	MOVQ SI, R12
	MOVQ SI, R14
	CMPQ BX, $2
	JLT gemvDotBF16Y2go
	ADDQ R8, R14
gemvDotBF16Y2go:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ DI, R10
	MOVQ CX, R13
	TESTQ R13, R13
	JEQ gemvDotBF16Y2tail
gemvDotBF16Y2loop:
	VMOVUPS (R10), Y8
	VMOVUPS 32(R10), Y9
	VMOVUPS 64(R10), Y10
	VMOVUPS 96(R10), Y11
	// Prefetch the same columns four rows down: the rows this loop
	// reaches two row pairs later. A row is too short (1-6 KB in the
	// models' products) for a lead along the row (512 bytes, before) to
	// cover its first lines, and the hardware does not start the next
	// rows early enough: 1.4-1.7x the copies-per-second on one thread
	// streaming 64 MiB (BenchmarkGEMVDotKernels, 2-core Zen 3), 10-14%
	// faster SmolLM2 BF16 decode products in the model.
	PREFETCHT0 (R12)(R8*4)
	PREFETCHT0 (R14)(R8*4)
	BF16ROWY(R12, Y0, Y1, Y2, Y3)
	BF16ROWY(R14, Y4, Y5, Y6, Y7)
	ADDQ $64, R12
	ADDQ $64, R14
	ADDQ $128, R10
	DECQ R13
	JNZ gemvDotBF16Y2loop
gemvDotBF16Y2tail:
	TESTQ R11, R11
	JEQ gemvDotBF16Y2red
	VMOVUPS (R10), Y8
	VMOVUPS 32(R10), Y9
	VMOVUPS 64(R10), Y10
	VMOVUPS 96(R10), Y11
	VMOVDQU (R12), Y12
	VPAND (R9), Y12, Y12
	BF16Y(Y0, Y2, Y8, Y10)
	VMOVDQU (R14), Y12
	VPAND (R9), Y12, Y12
	BF16Y(Y4, Y6, Y8, Y10)
	CMPQ R11, $16
	JLE gemvDotBF16Y2red
	VMOVDQU 32(R12), Y12
	VPAND 32(R9), Y12, Y12
	BF16Y(Y1, Y3, Y9, Y11)
	VMOVDQU 32(R14), Y12
	VPAND 32(R9), Y12, Y12
	BF16Y(Y5, Y7, Y9, Y11)
gemvDotBF16Y2red:
	BF16REDY(Y0, Y1, Y2, Y3, X0, X1, 0(DX))
	CMPQ BX, $2
	JLT gemvDotBF16Ydone
	BF16REDY(Y4, Y5, Y6, Y7, X4, X5, 4(DX))
	LEAQ (SI)(R8*2), SI
	ADDQ $8, DX
	SUBQ $2, BX
	JMP gemvDotBF16Y2
gemvDotBF16Y1:
	// One row: a single sequential stream through the matrix, which AMD's
	// hardware prefetchers follow best, with a software prefetch 1 KiB
	// ahead (past the row's end it reaches the next rows). On a 2-vCPU
	// Zen 3, SmolLM2-135M's BF16 decode: 71 tok/s in row pairs, 84 one
	// row at a time without the prefetch, 87 -> 98 with it (alternating
	// runs; 512 B and 2 KiB measured between).
	TESTQ BX, BX
	JEQ gemvDotBF16Ydone
	MOVQ SI, R12
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ DI, R10
	MOVQ CX, R13
	TESTQ R13, R13
	JEQ gemvDotBF16Y1tail
gemvDotBF16Y1loop:
	PREFETCHT0 1024(R12)
	VMOVUPS (R10), Y8
	VMOVUPS 32(R10), Y9
	VMOVUPS 64(R10), Y10
	VMOVUPS 96(R10), Y11
	BF16ROWY(R12, Y0, Y1, Y2, Y3)
	ADDQ $64, R12
	ADDQ $128, R10
	DECQ R13
	JNZ gemvDotBF16Y1loop
gemvDotBF16Y1tail:
	TESTQ R11, R11
	JEQ gemvDotBF16Y1red
	VMOVUPS (R10), Y8
	VMOVUPS 32(R10), Y9
	VMOVUPS 64(R10), Y10
	VMOVUPS 96(R10), Y11
	VMOVDQU (R12), Y12
	VPAND (R9), Y12, Y12
	BF16Y(Y0, Y2, Y8, Y10)
	CMPQ R11, $16
	JLE gemvDotBF16Y1red
	VMOVDQU 32(R12), Y12
	VPAND 32(R9), Y12, Y12
	BF16Y(Y1, Y3, Y9, Y11)
gemvDotBF16Y1red:
	BF16REDY(Y0, Y1, Y2, Y3, X0, X1, 0(DX))
	ADDQ R8, SI
	ADDQ $4, DX
	DECQ BX
	JMP gemvDotBF16Y1
gemvDotBF16Ydone:
	VZEROUPPER
	RET

// BF16AXZ(OFF, ACC): ACC += Z16 * widen(16 bf16 at OFF(R10)).
#define BF16AXZ(OFF, ACC) \
	VPMOVZXWD OFF(R10), Z17; \
	VPSLLD $16, Z17, Z17; \
	VFMADD231PS Z17, Z16, ACC

// func GemvAxpyBF16AVX512(k int, x *float32, b *uint16, ldb int, y *float32, n int, load int)
// gemvAxpyBF16 on ZMM registers: strips of 256 columns (512 bytes of each
// matrix row per k step) in sixteen accumulators, then of 16, then one of
// 8 (n is a multiple of 8). The same in-order chains, so the same bits.
TEXT ·GemvAxpyBF16AVX512(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ x+8(FP), DI
	MOVQ b+16(FP), SI
	MOVQ ldb+24(FP), R8
	SHLQ $1, R8
	MOVQ y+32(FP), DX
	MOVQ n+40(FP), BX
	MOVQ load+48(FP), R9
axpyBZ256:
	CMPQ BX, $256
	JLT axpyBZ16
	TESTQ R9, R9
	JNE axpyBZld256
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
	JMP axpyBZgo256
axpyBZld256:
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
axpyBZgo256:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ CX, R12
	TESTQ R12, R12
	JEQ axpyBZstore256
axpyBZloop256:
	VBROADCASTSS (R11), Z16
	BF16AXZ(0, Z0)
	BF16AXZ(32, Z1)
	BF16AXZ(64, Z2)
	BF16AXZ(96, Z3)
	BF16AXZ(128, Z4)
	BF16AXZ(160, Z5)
	BF16AXZ(192, Z6)
	BF16AXZ(224, Z7)
	BF16AXZ(256, Z8)
	BF16AXZ(288, Z9)
	BF16AXZ(320, Z10)
	BF16AXZ(352, Z11)
	BF16AXZ(384, Z12)
	BF16AXZ(416, Z13)
	BF16AXZ(448, Z14)
	BF16AXZ(480, Z15)
	ADDQ R8, R10
	ADDQ $4, R11
	DECQ R12
	JNZ axpyBZloop256
axpyBZstore256:
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
	ADDQ $512, SI
	ADDQ $1024, DX
	SUBQ $256, BX
	JMP axpyBZ256
axpyBZ16:
	CMPQ BX, $16
	JLT axpyBZ8
	VPXORD Z0, Z0, Z0
	TESTQ R9, R9
	JEQ axpyBZgo16
	VMOVUPS (DX), Z0
axpyBZgo16:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ CX, R12
	TESTQ R12, R12
	JEQ axpyBZstore16
axpyBZloop16:
	VBROADCASTSS (R11), Z16
	BF16AXZ(0, Z0)
	ADDQ R8, R10
	ADDQ $4, R11
	DECQ R12
	JNZ axpyBZloop16
axpyBZstore16:
	VMOVUPS Z0, (DX)
	ADDQ $32, SI
	ADDQ $64, DX
	SUBQ $16, BX
	JMP axpyBZ16
axpyBZ8:
	TESTQ BX, BX
	JEQ axpyBZdone
	VXORPS Y0, Y0, Y0
	TESTQ R9, R9
	JEQ axpyBZgo8
	VMOVUPS (DX), Y0
axpyBZgo8:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ CX, R12
	TESTQ R12, R12
	JEQ axpyBZstore8
axpyBZloop8:
	VBROADCASTSS (R11), Y1
	VPMOVZXWD (R10), Y2
	VPSLLD $16, Y2, Y2
	VFMADD231PS Y2, Y1, Y0
	ADDQ R8, R10
	ADDQ $4, R11
	DECQ R12
	JNZ axpyBZloop8
axpyBZstore8:
	VMOVUPS Y0, (DX)
axpyBZdone:
	VZEROUPPER
	RET

// BF16X4(XR, E, O): x row XR's chunk at byte offset AX (its 16 even
// values, then its 16 odd ones) against the split W chunk in Z19 (even)
// and Z18 (odd), into E and O.
#define BF16X4(XR, E, O) \
	VMOVUPS (XR)(AX*1), Z8; \
	VMOVUPS 64(XR)(AX*1), Z9; \
	VFMADD231PS Z19, Z8, E; \
	VFMADD231PS Z18, Z9, O

// func GemvDotBF16x4AVX512(k int, a *uint16, lda int, x *float32, ldx int, y *float32, ldy int, rows int, tail *int16)
// y[i*ldy+r] (i < 4, r < rows) = row r of a dotted with deinterleaved
// vector i (x + i*ldx), each with GemvDotBF16AVX512's lane arithmetic and
// so its bits: one W row at a time, each 32-value chunk loaded and split
// once for the four vectors (eight accumulators).
TEXT ·GemvDotBF16x4AVX512(SB), NOSPLIT, $0-72
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $1, R8
	MOVQ x+24(FP), DI
	MOVQ ldx+32(FP), R10
	SHLQ $2, R10
	MOVQ y+40(FP), DX
	MOVQ ldy+48(FP), R11
	SHLQ $2, R11
	MOVQ rows+56(FP), BX
	MOVQ tail+64(FP), R9
	VMOVDQU16 (R9), Z30
	VPMOVW2M Z30, K1
	MOVL $0xFFFF0000, AX
	VPBROADCASTD AX, Z31
	MOVQ CX, R9
	ANDQ $31, R9
	SHRQ $5, CX
	SHLQ $7, CX // full chunks as bytes of x (128 a chunk)
	LEAQ (DI)(R10*1), R13
	LEAQ (DI)(R10*2), R14
	LEAQ (R13)(R10*2), R15
	LEAQ (R11)(R11*2), R10 // 3*ldy bytes
gemvDotBF16X4row:
	TESTQ BX, BX
	JEQ gemvDotBF16X4done
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	MOVQ SI, R12
	XORQ AX, AX
	CMPQ AX, CX
	JGE gemvDotBF16X4tail
gemvDotBF16X4loop:
	VMOVDQU16 (R12), Z18
	VPSLLD $16, Z18, Z19
	VPANDD Z31, Z18, Z18
	BF16X4(DI, Z0, Z1)
	BF16X4(R13, Z2, Z3)
	BF16X4(R14, Z4, Z5)
	BF16X4(R15, Z6, Z7)
	ADDQ $64, R12
	ADDQ $128, AX
	CMPQ AX, CX
	JLT gemvDotBF16X4loop
gemvDotBF16X4tail:
	TESTQ R9, R9
	JEQ gemvDotBF16X4red
	VMOVDQU16.Z (R12), K1, Z18
	VPSLLD $16, Z18, Z19
	VPANDD Z31, Z18, Z18
	BF16X4(DI, Z0, Z1)
	BF16X4(R13, Z2, Z3)
	BF16X4(R14, Z4, Z5)
	BF16X4(R15, Z6, Z7)
gemvDotBF16X4red:
	BF16REDZ(Z0, Z1, Y0, Y1, X0, X1, 0(DX))
	BF16REDZ(Z2, Z3, Y2, Y3, X2, X3, 0(DX)(R11*1))
	BF16REDZ(Z4, Z5, Y4, Y5, X4, X5, 0(DX)(R11*2))
	BF16REDZ(Z6, Z7, Y6, Y7, X6, X7, 0(DX)(R10*1))
	ADDQ R8, SI
	ADDQ $4, DX
	DECQ BX
	JMP gemvDotBF16X4row
gemvDotBF16X4done:
	VZEROUPPER
	RET
