//go:build amd64 && !purego

#include "textflag.h"

// quantQ8RowAVX2: the reference Q8_0/Q8_1 activation quantizer of
// acts.quantizeQ8Row on AVX2+F16C, block by block of 32 values, with the
// same bits: amax the largest magnitude (an unsigned max of the bits with
// the sign cleared), d = amax/127, id = 1/d (0 when d is 0), q =
// roundf(x*id) as trunc(v) plus ±1 where |v - trunc(v)| >= 0.5 (exact:
// v - trunc(v) is), the stored d and s = float32(Σq)*d rounded through
// binary16 (VCVTPS2PH with round-to-nearest-even, as dtype.F16FromF32).
// Out-of-range products (x*id infinite or NaN) convert as Go converts
// them: int32 0x80000000, then its low byte.

DATA q8c<>+0(SB)/4, $0x7fffffff  // magnitude mask
DATA q8c<>+4(SB)/4, $0x80000000  // sign mask
DATA q8c<>+8(SB)/4, $0x3f800000  // 1.0
DATA q8c<>+12(SB)/4, $0x3f000000 // 0.5
DATA q8c<>+16(SB)/4, $0x42fe0000 // 127.0
GLOBL q8c<>(SB), RODATA|NOPTR, $20

DATA q8perm<>+0(SB)/4, $0
DATA q8perm<>+4(SB)/4, $4
DATA q8perm<>+8(SB)/4, $1
DATA q8perm<>+12(SB)/4, $5
DATA q8perm<>+16(SB)/4, $2
DATA q8perm<>+20(SB)/4, $6
DATA q8perm<>+24(SB)/4, $3
DATA q8perm<>+28(SB)/4, $7
GLOBL q8perm<>(SB), RODATA|NOPTR, $32

// Q8ROUND(Y, T): Y = roundf(Y) (float), T a scratch register.
#define Q8ROUND(Y, T) \
	VROUNDPS $3, Y, T; \
	VSUBPS   T, Y, Y5; \
	VANDPS   Y15, Y5, Y5; \
	VCMPPS   $13, Y12, Y5, Y5; \
	VANDPS   Y14, Y, Y; \
	VORPS    Y13, Y, Y; \
	VANDPS   Y5, Y, Y; \
	VADDPS   T, Y, Y

// func quantQ8RowAVX2(x *float32, nb int, qs *int8, d *float32, s *float32, isum *int32)
// s may be nil (Q8_0: no sums scaled by d).
TEXT ·quantQ8RowAVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), R8
	MOVQ s+32(FP), R9
	MOVQ isum+40(FP), R10
	VBROADCASTSS q8c<>+0(SB), Y15
	VBROADCASTSS q8c<>+4(SB), Y14
	VBROADCASTSS q8c<>+8(SB), Y13
	VBROADCASTSS q8c<>+12(SB), Y12
	VMOVDQU q8perm<>(SB), Y11
	VXORPS X10, X10, X10
	TESTQ CX, CX
	JZ   q8done
q8loop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	// amax: unsigned max of the magnitudes' bits.
	VANDPS  Y15, Y0, Y4
	VANDPS  Y15, Y1, Y5
	VPMAXUD Y5, Y4, Y4
	VANDPS  Y15, Y2, Y5
	VPMAXUD Y5, Y4, Y4
	VANDPS  Y15, Y3, Y5
	VPMAXUD Y5, Y4, Y4
	VEXTRACTI128 $1, Y4, X5
	VPMAXUD X5, X4, X4
	VPSHUFD $0x4e, X4, X5
	VPMAXUD X5, X4, X4
	VPSHUFD $0xb1, X4, X5
	VPMAXUD X5, X4, X4
	// d = amax/127; id = 1/d, or 0 when d is 0.
	VDIVSS  q8c<>+16(SB), X4, X8
	VDIVSS  X8, X13, X9
	VCMPSS  $0, X10, X8, X6
	VANDNPS X9, X6, X9
	VBROADCASTSS X9, Y9
	VMULPS  Y9, Y0, Y0
	VMULPS  Y9, Y1, Y1
	VMULPS  Y9, Y2, Y2
	VMULPS  Y9, Y3, Y3
	Q8ROUND(Y0, Y6)
	Q8ROUND(Y1, Y6)
	Q8ROUND(Y2, Y6)
	Q8ROUND(Y3, Y6)
	VCVTTPS2DQ Y0, Y0
	VCVTTPS2DQ Y1, Y1
	VCVTTPS2DQ Y2, Y2
	VCVTTPS2DQ Y3, Y3
	// int8 of each int32 (its low byte, sign-extended), as Go's int8(int32(...))
	// converts: the same as the value for |x*id| <= 127.5, and 0 for
	// x*id infinite (a block of subnormals, whose 1/d overflows).
	VPSLLD  $24, Y0, Y0
	VPSRAD  $24, Y0, Y0
	VPSLLD  $24, Y1, Y1
	VPSRAD  $24, Y1, Y1
	VPSLLD  $24, Y2, Y2
	VPSRAD  $24, Y2, Y2
	VPSLLD  $24, Y3, Y3
	VPSRAD  $24, Y3, Y3
	// Σq.
	VPADDD  Y1, Y0, Y4
	VPADDD  Y3, Y2, Y5
	VPADDD  Y5, Y4, Y4
	VEXTRACTI128 $1, Y4, X5
	VPADDD  X5, X4, X4
	VPSHUFD $0x4e, X4, X5
	VPADDD  X5, X4, X4
	VPSHUFD $0xb1, X4, X5
	VPADDD  X5, X4, X4
	VMOVD   X4, (R10)
	// The 32 quants, in order.
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD  Y0, Y11, Y0
	VMOVDQU Y0, (DI)
	// d and s through binary16.
	VCVTPS2PH $0, X8, X6
	VCVTPH2PS X6, X6
	VMOVSS  X6, (R8)
	TESTQ   R9, R9
	JZ      q8nos
	VCVTDQ2PS X4, X4
	VMULSS  X8, X4, X4
	VCVTPS2PH $0, X4, X6
	VCVTPH2PS X6, X6
	VMOVSS  X6, (R9)
	ADDQ    $4, R9
q8nos:
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $4, R8
	ADDQ $4, R10
	DECQ CX
	JNZ  q8loop
q8done:
	VZEROUPPER
	RET

// func finiteAVX2(x *float32, n int) bool
// Reports whether no value of x[0:n] has an all-ones exponent (Inf, NaN).
TEXT ·finiteAVX2(SB), NOSPLIT, $0-17
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVL $0x7f800000, AX
	MOVD AX, X15
	VPBROADCASTD X15, Y15
	VPXOR Y14, Y14, Y14
	MOVQ CX, DX
	SHRQ $5, DX
	JZ   fin8
fin32:
	VPAND (SI), Y15, Y0
	VPAND 32(SI), Y15, Y1
	VPAND 64(SI), Y15, Y2
	VPAND 96(SI), Y15, Y3
	VPCMPEQD Y15, Y0, Y0
	VPCMPEQD Y15, Y1, Y1
	VPCMPEQD Y15, Y2, Y2
	VPCMPEQD Y15, Y3, Y3
	VPOR Y1, Y0, Y0
	VPOR Y3, Y2, Y2
	VPOR Y2, Y0, Y0
	VPOR Y0, Y14, Y14
	ADDQ $128, SI
	DECQ DX
	JNZ  fin32
fin8:
	ANDQ $31, CX
	JZ   finend
fin1:
	MOVL (SI), AX
	ANDL $0x7f800000, AX
	CMPL AX, $0x7f800000
	JEQ  finbad
	ADDQ $4, SI
	DECQ CX
	JNZ  fin1
finend:
	VPTEST Y14, Y14
	JNZ  finbad
	MOVB $1, ret+16(FP)
	VZEROUPPER
	RET
finbad:
	MOVB $0, ret+16(FP)
	VZEROUPPER
	RET

// quantQ8KRowAVX2: the reference Q8_K quantizer (quantQ8K, ggml's
// quantize_row_q8_K_ref) on AVX2, block by block of 256 values, with its
// bits: amax by an unsigned max of the magnitudes' bits, max the first
// value of that magnitude, iscale = -127/max, q = min(127,
// nearest_int(iscale·x)) computed as nearest_int is (x + 1.5·2^23, the low
// 23 bits less 2^22: the same for Inf and NaN), stored as its low byte;
// d = 1/iscale; bsums the sums of 16 quants. A block whose amax is 0 gets
// d = 0 and zero quants and sums.

DATA q8kc<>+0(SB)/4, $0xc2fe0000 // -127.0
DATA q8kc<>+4(SB)/4, $0x3f800000 // 1.0
DATA q8kc<>+8(SB)/4, $0x4b400000 // 12582912.0
DATA q8kc<>+12(SB)/4, $0x007fffff
DATA q8kc<>+16(SB)/4, $0x00400000
DATA q8kc<>+20(SB)/4, $127
GLOBL q8kc<>(SB), RODATA|NOPTR, $24

// Q8KQ(Y): Y (x·iscale) to min(127, nearest_int(Y)) as the low byte,
// sign-extended.
#define Q8KQ(Y) \
	VADDPS   Y12, Y, Y; \
	VPAND    Y13, Y, Y; \
	VPSUBD   Y14, Y, Y; \
	VPMINSD  Y10, Y, Y; \
	VPSLLD   $24, Y, Y; \
	VPSRAD   $24, Y, Y

// func quantQ8KRowAVX2(x *float32, nb int, qs *int8, d *float32, bsum *int16)
TEXT ·quantQ8KRowAVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), R8
	MOVQ bsum+32(FP), R9
	VBROADCASTSS q8c<>+0(SB), Y15
	VBROADCASTSS q8kc<>+8(SB), Y12
	VBROADCASTSS q8kc<>+12(SB), Y13
	VBROADCASTSS q8kc<>+16(SB), Y14
	VBROADCASTSS q8kc<>+20(SB), Y10
	VMOVDQU q8perm<>(SB), Y11
	TESTQ CX, CX
	JZ   kqdone
kqloop:
	// amax: unsigned max of the magnitudes' bits.
	VPXOR Y0, Y0, Y0
	MOVQ SI, R10
	MOVQ $8, AX
kqmax:
	VANDPS  0(R10), Y15, Y1
	VPMAXUD Y1, Y0, Y0
	VANDPS  32(R10), Y15, Y1
	VPMAXUD Y1, Y0, Y0
	VANDPS  64(R10), Y15, Y1
	VPMAXUD Y1, Y0, Y0
	VANDPS  96(R10), Y15, Y1
	VPMAXUD Y1, Y0, Y0
	ADDQ $128, R10
	DECQ AX
	JNZ  kqmax
	VEXTRACTI128 $1, Y0, X1
	VPMAXUD X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPMAXUD X1, X0, X0
	VPSHUFD $0xb1, X0, X1
	VPMAXUD X1, X0, X0
	VMOVD X0, AX
	TESTL AX, AX
	JZ   kqzero
	VPBROADCASTD X0, Y0
	// max: the first value of magnitude amax.
	MOVQ SI, R10
kqfind:
	VANDPS    (R10), Y15, Y1
	VPCMPEQD  Y0, Y1, Y1
	VMOVMSKPS Y1, BX
	TESTL BX, BX
	JNZ  kqfound
	ADDQ $32, R10
	JMP  kqfind
kqfound:
	BSFL   BX, BX
	VMOVSS (R10)(BX*4), X2
	VMOVSS q8kc<>+0(SB), X3
	VDIVSS X2, X3, X3
	VMOVSS q8kc<>+4(SB), X4
	VDIVSS X3, X4, X4
	VMOVSS X4, (R8)
	VBROADCASTSS X3, Y3
	MOVQ $8, AX
kqq:
	VMULPS (SI), Y3, Y4
	VMULPS 32(SI), Y3, Y5
	VMULPS 64(SI), Y3, Y6
	VMULPS 96(SI), Y3, Y7
	Q8KQ(Y4)
	Q8KQ(Y5)
	Q8KQ(Y6)
	Q8KQ(Y7)
	// the two sums of 16
	VPADDD Y5, Y4, Y8
	VPADDD Y7, Y6, Y9
	VPHADDD Y9, Y8, Y8
	VPHADDD Y8, Y8, Y8
	VEXTRACTI128 $1, Y8, X9
	VPADDD X9, X8, X8
	VPACKSSDW X8, X8, X8
	VMOVD X8, (R9)
	// the 32 quants, in order
	VPACKSSDW Y5, Y4, Y4
	VPACKSSDW Y7, Y6, Y6
	VPACKSSWB Y6, Y4, Y4
	VPERMD  Y4, Y11, Y4
	VMOVDQU Y4, (DI)
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $4, R9
	DECQ AX
	JNZ  kqq
	ADDQ $4, R8
	DECQ CX
	JNZ  kqloop
	JMP  kqdone
kqzero:
	MOVL $0, (R8)
	VPXOR Y1, Y1, Y1
	MOVQ $8, AX
kqz:
	VMOVDQU Y1, (DI)
	ADDQ $32, DI
	DECQ AX
	JNZ  kqz
	VMOVDQU Y1, (R9)
	ADDQ $32, R9
	ADDQ $1024, SI
	ADDQ $4, R8
	DECQ CX
	JNZ  kqloop
kqdone:
	VZEROUPPER
	RET
