//go:build amd64 && !purego

#include "textflag.h"

// AVX2+FMA loops of the f32 optimizer steps (optim.go), eight elements per
// iteration with the very instructions PyTorch's AVX2 kernels use: a
// product rounds (VMULPS), add(x, y, alpha) and addcmul's final add are one
// VFMADD231PS, maximum propagates NaN (max, then OR with the unordered
// mask), and sqrt and divisions are VSQRTPS and VDIVPS. n is a positive
// multiple of 8.

// func adamF32AVX2(p, grad, m, v, mx *float32, n int, k *[9]float32, flags int)
// k: decay, wd, beta1, 1-beta1, beta2, 1-beta2, sqrt(bc2), eps, -lr/bc1.
// flags: 1 decoupled (AdamW), 2 L2 weight decay (Adam), 4 amsgrad.
TEXT ·adamF32AVX2(SB), NOSPLIT, $0-64
	MOVQ p+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ m+16(FP), R8
	MOVQ v+24(FP), R9
	MOVQ mx+32(FP), R10
	MOVQ n+40(FP), CX
	MOVQ k+48(FP), AX
	MOVQ flags+56(FP), BX
	VBROADCASTSS 0(AX), Y8
	VBROADCASTSS 4(AX), Y9
	VBROADCASTSS 8(AX), Y10
	VBROADCASTSS 12(AX), Y11
	VBROADCASTSS 16(AX), Y12
	VBROADCASTSS 20(AX), Y13
	VBROADCASTSS 24(AX), Y14
	VBROADCASTSS 28(AX), Y15
	XORQ R11, R11

adamloop:
	VMOVUPS (DI)(R11*1), Y0 // p
	VMOVUPS (SI)(R11*1), Y1 // g
	TESTQ $1, BX
	JZ adamnodecay
	VMULPS Y8, Y0, Y0 // p *= 1 - lr*wd
	JMP adammoments

adamnodecay:
	TESTQ $2, BX
	JZ adammoments
	VFMADD231PS Y9, Y0, Y1 // g = p*wd + g

adammoments:
	VMOVUPS (R8)(R11*1), Y2
	VMULPS Y10, Y2, Y2      // m *= beta1
	VFMADD231PS Y11, Y1, Y2 // m = g*(1-beta1) + m
	VMOVUPS Y2, (R8)(R11*1)
	VMOVUPS (R9)(R11*1), Y3
	VMULPS Y12, Y3, Y3      // v *= beta2
	VMULPS Y13, Y1, Y4      // (1-beta2)*g
	VFMADD231PS Y1, Y4, Y3  // v = ((1-beta2)*g)*g + v
	VMOVUPS Y3, (R9)(R11*1)
	TESTQ $4, BX
	JZ adamdenom
	VMOVUPS (R10)(R11*1), Y5
	VMAXPS Y3, Y5, Y6
	VCMPPS $3, Y3, Y5, Y7 // unordered: either is NaN
	VORPS Y7, Y6, Y3
	VMOVUPS Y3, (R10)(R11*1)

adamdenom:
	VSQRTPS Y3, Y4
	VDIVPS Y14, Y4, Y4 // / sqrt(bc2)
	VADDPS Y15, Y4, Y4 // + eps
	VBROADCASTSS 32(AX), Y5
	VMULPS Y2, Y5, Y5  // (-lr/bc1)*m
	VDIVPS Y4, Y5, Y5  // / denom
	VADDPS Y5, Y0, Y0  // p + ...
	VMOVUPS Y0, (DI)(R11*1)
	ADDQ $32, R11
	SUBQ $8, CX
	JNZ adamloop
	VZEROUPPER
	RET

// func sgdF32AVX2(p, grad, buf *float32, n int, k *[4]float32, flags int)
// k: wd, momentum, 1-dampening, -lr.
// flags: 1 L2 weight decay, 2 momentum, 4 nesterov, 8 first step.
TEXT ·sgdF32AVX2(SB), NOSPLIT, $0-48
	MOVQ p+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ buf+16(FP), R8
	MOVQ n+24(FP), CX
	MOVQ k+32(FP), AX
	MOVQ flags+40(FP), BX
	VBROADCASTSS 0(AX), Y8
	VBROADCASTSS 4(AX), Y9
	VBROADCASTSS 8(AX), Y10
	VBROADCASTSS 12(AX), Y11
	XORQ R11, R11

sgdloop:
	VMOVUPS (DI)(R11*1), Y0 // p
	VMOVUPS (SI)(R11*1), Y1 // d = g
	TESTQ $1, BX
	JZ sgdmomentum
	VFMADD231PS Y8, Y0, Y1 // d = p*wd + d

sgdmomentum:
	TESTQ $2, BX
	JZ sgdupdate
	TESTQ $8, BX
	JZ sgdrunning
	VMOVAPS Y1, Y2 // buf = d
	JMP sgdstore

sgdrunning:
	VMOVUPS (R8)(R11*1), Y2
	VMULPS Y9, Y2, Y2       // buf *= momentum
	VFMADD231PS Y10, Y1, Y2 // buf = d*(1-dampening) + buf

sgdstore:
	VMOVUPS Y2, (R8)(R11*1)
	TESTQ $4, BX
	JZ sgdplain
	VFMADD231PS Y9, Y2, Y1 // d = buf*momentum + d
	JMP sgdupdate

sgdplain:
	VMOVAPS Y2, Y1 // d = buf

sgdupdate:
	VFMADD231PS Y11, Y1, Y0 // p = d*(-lr) + p
	VMOVUPS Y0, (DI)(R11*1)
	ADDQ $32, R11
	SUBQ $8, CX
	JNZ sgdloop
	VZEROUPPER
	RET
