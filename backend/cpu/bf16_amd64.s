//go:build amd64 && !purego

#include "textflag.h"

// The bf16 matrix-vector axpy kernel (f32 FMA chains over k in order, as
// the f32 kernels of gemm_gemv_amd64.s; the dot form is in
// bf16_gemv_amd64.s).

// func gemvAxpyBF16(k int, x *float32, b *uint16, ldb int, y *float32, n int, load int)
// Continues (load 1) or starts from zero (load 0) y[j] (j < n, a multiple
// of 8) with the FMA chain over p < k, in order, of x[p]*float32(b[p*ldb+j]):
// strips of 64 columns in eight accumulators, then strips of 8.
TEXT ·gemvAxpyBF16(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ x+8(FP), DI
	MOVQ b+16(FP), SI
	MOVQ ldb+24(FP), R8
	SHLQ $1, R8
	MOVQ y+32(FP), DX
	MOVQ n+40(FP), BX
	MOVQ load+48(FP), R9
axpy64:
	CMPQ BX, $64
	JLT axpy8
	TESTQ R9, R9
	JEQ axpyzero64
	VMOVUPS 0(DX), Y0
	VMOVUPS 32(DX), Y1
	VMOVUPS 64(DX), Y2
	VMOVUPS 96(DX), Y3
	VMOVUPS 128(DX), Y4
	VMOVUPS 160(DX), Y5
	VMOVUPS 192(DX), Y6
	VMOVUPS 224(DX), Y7
	JMP axpygo64
axpyzero64:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
axpygo64:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ CX, R12
	TESTQ R12, R12
	JEQ axpystore64
axpyloop64:
	VBROADCASTSS (R11), Y8
	VPMOVZXWD 0(R10), Y9
	VPMOVZXWD 16(R10), Y10
	VPMOVZXWD 32(R10), Y11
	VPMOVZXWD 48(R10), Y12
	VPSLLD $16, Y9, Y9
	VPSLLD $16, Y10, Y10
	VPSLLD $16, Y11, Y11
	VPSLLD $16, Y12, Y12
	VFMADD231PS Y8, Y9, Y0
	VFMADD231PS Y8, Y10, Y1
	VFMADD231PS Y8, Y11, Y2
	VFMADD231PS Y8, Y12, Y3
	VPMOVZXWD 64(R10), Y9
	VPMOVZXWD 80(R10), Y10
	VPMOVZXWD 96(R10), Y11
	VPMOVZXWD 112(R10), Y12
	VPSLLD $16, Y9, Y9
	VPSLLD $16, Y10, Y10
	VPSLLD $16, Y11, Y11
	VPSLLD $16, Y12, Y12
	VFMADD231PS Y8, Y9, Y4
	VFMADD231PS Y8, Y10, Y5
	VFMADD231PS Y8, Y11, Y6
	VFMADD231PS Y8, Y12, Y7
	ADDQ R8, R10
	ADDQ $4, R11
	DECQ R12
	JNZ axpyloop64
axpystore64:
	VMOVUPS Y0, 0(DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	VMOVUPS Y4, 128(DX)
	VMOVUPS Y5, 160(DX)
	VMOVUPS Y6, 192(DX)
	VMOVUPS Y7, 224(DX)
	ADDQ $128, SI
	ADDQ $256, DX
	SUBQ $64, BX
	JMP axpy64
axpy8:
	CMPQ BX, $8
	JLT axpydone
	VXORPS Y0, Y0, Y0
	TESTQ R9, R9
	JEQ axpygo8
	VMOVUPS 0(DX), Y0
axpygo8:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ CX, R12
	TESTQ R12, R12
	JEQ axpystore8
axpyloop8:
	VBROADCASTSS (R11), Y8
	VPMOVZXWD 0(R10), Y9
	VPSLLD $16, Y9, Y9
	VFMADD231PS Y8, Y9, Y0
	ADDQ R8, R10
	ADDQ $4, R11
	DECQ R12
	JNZ axpyloop8
axpystore8:
	VMOVUPS Y0, 0(DX)
	ADDQ $16, SI
	ADDQ $32, DX
	SUBQ $8, BX
	JMP axpy8
axpydone:
	VZEROUPPER
	RET
