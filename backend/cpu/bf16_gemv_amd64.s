//go:build amd64 && !purego

#include "textflag.h"

// bf16 dot-form matrix-vector kernels in the order of gemm_gemv.go
// (gemvDotF32AVX512/AVX2 of gemm_gemv_amd64.s with the matrix's bf16
// values widened to f32 in registers, exactly): the same bits as the f32
// kernels on the widened matrix, at both levels. x is f32.

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

// BF16FMAZ(ROW, OFF, X, ACC): ACC += widen(16 bf16 at OFF(ROW)(AX*2)) * X.
#define BF16FMAZ(ROW, OFF, XR, ACC) \
	VPMOVZXWD OFF(ROW)(AX*2), Z10; \
	VPSLLD $16, Z10, Z10; \
	VFMADD231PS Z10, XR, ACC

// BF16TAILZ is BF16FMAZ for the masked tail (lanes off in KM load zero).
#define BF16TAILZ(ROW, OFF, KM, XR, ACC) \
	VPMOVZXWD.Z OFF(ROW)(AX*2), KM, Z10; \
	VPSLLD $16, Z10, Z10; \
	VFMADD231PS Z10, XR, ACC

// func gemvDotBF16AVX512(k int, a *uint16, lda int, x, y *float32, rows int, tail *int32)
TEXT ·gemvDotBF16AVX512(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $1, R8
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
	VMOVUPS.Z (DI)(CX*4), K1, Z28
	VMOVUPS.Z 64(DI)(CX*4), K2, Z29
	LEAQ (R8)(R8*2), R11
gemvDotBF16Z4:
	CMPQ BX, $4
	JLT gemvDotBF16Z1
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
	XORQ AX, AX
	CMPQ AX, CX
	JGE gemvDotBF16Z4tail
gemvDotBF16Z4loop:
	VMOVUPS (DI)(AX*4), Z8
	VMOVUPS 64(DI)(AX*4), Z9
	BF16FMAZ(SI, 0, Z8, Z0)
	BF16FMAZ(SI, 32, Z9, Z1)
	BF16FMAZ(R12, 0, Z8, Z2)
	BF16FMAZ(R12, 32, Z9, Z3)
	BF16FMAZ(R13, 0, Z8, Z4)
	BF16FMAZ(R13, 32, Z9, Z5)
	BF16FMAZ(R14, 0, Z8, Z6)
	BF16FMAZ(R14, 32, Z9, Z7)
	ADDQ $32, AX
	CMPQ AX, CX
	JLT gemvDotBF16Z4loop
gemvDotBF16Z4tail:
	TESTQ R9, R9
	JEQ gemvDotBF16Z4red
	BF16TAILZ(SI, 0, K1, Z28, Z0)
	BF16TAILZ(SI, 32, K2, Z29, Z1)
	BF16TAILZ(R12, 0, K1, Z28, Z2)
	BF16TAILZ(R12, 32, K2, Z29, Z3)
	BF16TAILZ(R13, 0, K1, Z28, Z4)
	BF16TAILZ(R13, 32, K2, Z29, Z5)
	BF16TAILZ(R14, 0, K1, Z28, Z6)
	BF16TAILZ(R14, 32, K2, Z29, Z7)
gemvDotBF16Z4red:
	BF16REDZ(Z0, Z1, Y0, Y1, X0, X1, 0(DX))
	BF16REDZ(Z2, Z3, Y2, Y3, X2, X3, 4(DX))
	BF16REDZ(Z4, Z5, Y4, Y5, X4, X5, 8(DX))
	BF16REDZ(Z6, Z7, Y6, Y7, X6, X7, 12(DX))
	LEAQ (SI)(R8*4), SI
	ADDQ $16, DX
	SUBQ $4, BX
	JMP gemvDotBF16Z4
gemvDotBF16Z1:
	TESTQ BX, BX
	JEQ gemvDotBF16Zdone
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	XORQ AX, AX
	CMPQ AX, CX
	JGE gemvDotBF16Z1tail
gemvDotBF16Z1loop:
	VMOVUPS (DI)(AX*4), Z8
	VMOVUPS 64(DI)(AX*4), Z9
	BF16FMAZ(SI, 0, Z8, Z0)
	BF16FMAZ(SI, 32, Z9, Z1)
	ADDQ $32, AX
	CMPQ AX, CX
	JLT gemvDotBF16Z1loop
gemvDotBF16Z1tail:
	TESTQ R9, R9
	JEQ gemvDotBF16Z1red
	BF16TAILZ(SI, 0, K1, Z28, Z0)
	BF16TAILZ(SI, 32, K2, Z29, Z1)
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

// BF16FMAY(ROW, OFF, X, ACC): ACC += widen(8 bf16 at OFF(ROW)(AX*2)) * X.
#define BF16FMAY(ROW, OFF, XR, ACC) \
	VPMOVZXWD OFF(ROW)(AX*2), Y12; \
	VPSLLD $16, Y12, Y12; \
	VFMADD231PS Y12, XR, ACC

// BF16TAILY(OFF, XOFF, ACC0, ACC1): the tail of the 8-lane group at bf16
// byte offset OFF (f32 offset XOFF) of rows SI and R12: x loaded masked (from the lane mask at
// XOFF(R9)), the rows' 8 values loaded whole (the caller keeps that read
// inside the matrix) and their lanes past k cleared.
#define BF16TAILY(OFF, XOFF, ACC0, ACC1) \
	VMOVDQU XOFF(R9), Y13; \
	VMASKMOVPS XOFF(DI)(AX*4), Y13, Y8; \
	VPMOVZXWD OFF(SI)(AX*2), Y12; \
	VPSLLD $16, Y12, Y12; \
	VPAND Y13, Y12, Y12; \
	VFMADD231PS Y12, Y8, ACC0; \
	VPMOVZXWD OFF(R12)(AX*2), Y12; \
	VPSLLD $16, Y12, Y12; \
	VPAND Y13, Y12, Y12; \
	VFMADD231PS Y12, Y8, ACC1

// func gemvDotBF16AVX2(k int, a *uint16, lda int, x, y *float32, rows int, tail *int32)
// The tail reads each row's last group of eight values whole: up to seven
// values past k, which the caller keeps inside the matrix's memory.
TEXT ·gemvDotBF16AVX2(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $1, R8
	MOVQ x+24(FP), DI
	MOVQ y+32(FP), DX
	MOVQ rows+40(FP), BX
	MOVQ tail+48(FP), R9
	MOVQ CX, R10
	ANDQ $31, R10
	ANDQ $-32, CX
gemvDotBF16Y2:
	TESTQ BX, BX
	JEQ gemvDotBF16Ydone
	MOVQ SI, R12
	CMPQ BX, $2
	JLT gemvDotBF16Y2go
	ADDQ R8, R12
gemvDotBF16Y2go:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ AX, AX
	CMPQ AX, CX
	JGE gemvDotBF16Y2tail
gemvDotBF16Y2loop:
	VMOVUPS (DI)(AX*4), Y8
	VMOVUPS 32(DI)(AX*4), Y9
	VMOVUPS 64(DI)(AX*4), Y10
	VMOVUPS 96(DI)(AX*4), Y11
	BF16FMAY(SI, 0, Y8, Y0)
	BF16FMAY(SI, 16, Y9, Y1)
	BF16FMAY(SI, 32, Y10, Y2)
	BF16FMAY(SI, 48, Y11, Y3)
	BF16FMAY(R12, 0, Y8, Y4)
	BF16FMAY(R12, 16, Y9, Y5)
	BF16FMAY(R12, 32, Y10, Y6)
	BF16FMAY(R12, 48, Y11, Y7)
	ADDQ $32, AX
	CMPQ AX, CX
	JLT gemvDotBF16Y2loop
gemvDotBF16Y2tail:
	// Groups wholly past k are skipped (they would add nothing).
	CMPQ R10, $0
	JEQ gemvDotBF16Y2red
	BF16TAILY(0, 0, Y0, Y4)
	CMPQ R10, $8
	JLE gemvDotBF16Y2red
	BF16TAILY(16, 32, Y1, Y5)
	CMPQ R10, $16
	JLE gemvDotBF16Y2red
	BF16TAILY(32, 64, Y2, Y6)
	CMPQ R10, $24
	JLE gemvDotBF16Y2red
	BF16TAILY(48, 96, Y3, Y7)
gemvDotBF16Y2red:
	BF16REDY(Y0, Y1, Y2, Y3, X0, X1, 0(DX))
	CMPQ BX, $2
	JLT gemvDotBF16Ydone
	BF16REDY(Y4, Y5, Y6, Y7, X4, X5, 4(DX))
	LEAQ (SI)(R8*2), SI
	ADDQ $8, DX
	SUBQ $2, BX
	JMP gemvDotBF16Y2
gemvDotBF16Ydone:
	VZEROUPPER
	RET
