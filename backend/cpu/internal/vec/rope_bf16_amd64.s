//go:build amd64 && !purego

#include "textflag.h"
#include "bf16round_amd64.h"

// func ropeBF16AVX2(dst, x, c, s *uint16, h, n int)
// The rotate-half RoPE of one bf16 row (Kernels.RopeBF16, bf16.go) for
// j < n, n a multiple of 8 and at most h: dst[j] = R(R(x[j]·c[j]) + R(-x[j+h]·s[j]))
// and dst[j+h] = R(R(x[j+h]·c[j+h]) + R(x[j]·s[j+h])), R the rounding to
// bfloat16 (ties to even, NaN kept with its quiet bit set:
// dtype.BF16FromF32), each product and sum computed in float32 from the
// widened values with the left operand first, as the Go loop writes them.
//
// Y8-Y13 hold BF16ROUNDCONST's constants; Y14 the sign bit.

// WIDEN loads 8 bf16 values at ADDR into f32 lanes of Y.
#define WIDEN(ADDR, Y) \
	VPMOVZXWD ADDR, Y; \
	VPSLLD $16, Y, Y

// STORE narrows the rounded f32 lanes of Y to 8 bf16 values at ADDR.
#define STORE(Y, X, ADDR) \
	VPSRLD $16, Y, Y; \
	VEXTRACTI128 $1, Y, X3; \
	VPACKUSDW X3, X, X; \
	VMOVDQU X, ADDR

TEXT ·ropeBF16AVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ c+16(FP), R8
	MOVQ s+24(FP), R9
	MOVQ h+32(FP), BX
	MOVQ n+40(FP), CX
	SHLQ $1, BX // bytes to the second half
	SHRQ $3, CX
	JZ ropedone
	BF16ROUNDCONST
	MOVL $0x80000000, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14

roploop:
	WIDEN((SI), Y0)        // lo
	WIDEN((SI)(BX*1), Y1)  // hi
	// dst[j] = R(R(lo·c) + R(-hi·s))
	WIDEN((R8), Y5)
	VMULPS Y5, Y0, Y5
	BF16ROUND(Y5, Y5, Y2, Y3, Y4)
	VPXOR Y14, Y1, Y6
	WIDEN((R9), Y7)
	VMULPS Y7, Y6, Y6
	BF16ROUND(Y6, Y6, Y2, Y3, Y4)
	VADDPS Y6, Y5, Y5
	BF16ROUND(Y5, Y5, Y2, Y3, Y4)
	STORE(Y5, X5, (DI))
	// dst[j+h] = R(R(hi·c[j+h]) + R(lo·s[j+h]))
	WIDEN((R8)(BX*1), Y5)
	VMULPS Y5, Y1, Y5
	BF16ROUND(Y5, Y5, Y2, Y3, Y4)
	WIDEN((R9)(BX*1), Y6)
	VMULPS Y6, Y0, Y6
	BF16ROUND(Y6, Y6, Y2, Y3, Y4)
	VADDPS Y6, Y5, Y5
	BF16ROUND(Y5, Y5, Y2, Y3, Y4)
	STORE(Y5, X5, (DI)(BX*1))
	ADDQ $16, SI
	ADDQ $16, DI
	ADDQ $16, R8
	ADDQ $16, R9
	DECQ CX
	JNZ roploop

ropedone:
	VZEROUPPER
	RET
