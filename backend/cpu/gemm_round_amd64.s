//go:build amd64 && !purego

#include "textflag.h"

// func roundBF16AVX2(x *float32, n int, lo int)
// Rounds n (a multiple of 8) f32 values in place to bfloat16 (ties to
// even, NaN kept with its quiet bit set), as dtype.BF16FromF32: each value
// becomes RoundBF16(x) (lo 0) or RoundBF16(x - RoundBF16(x)) (lo 1).
TEXT ·roundBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	MOVQ lo+16(FP), R8
	MOVL $0x7fffffff, AX
	VMOVD AX, X8
	VPBROADCASTD X8, Y8 // abs mask
	MOVL $0x7f800000, AX
	VMOVD AX, X9
	VPBROADCASTD X9, Y9 // infinity
	MOVL $1, AX
	VMOVD AX, X10
	VPBROADCASTD X10, Y10 // 1
	MOVL $0x7fff, AX
	VMOVD AX, X11
	VPBROADCASTD X11, Y11 // rounding bias
	MOVL $0xffff0000, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12 // bf16 mask
	MOVL $0x00400000, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13 // quiet bit
	SHRQ $3, CX
	JZ done
loop:
	VMOVUPS (DI), Y0
	// Y1 = RoundBF16(Y0)
	VPAND Y8, Y0, Y2
	VPCMPGTD Y9, Y2, Y2 // NaN lanes
	VPSRLD $16, Y0, Y3
	VPAND Y10, Y3, Y3
	VPADDD Y11, Y0, Y1
	VPADDD Y3, Y1, Y1
	VPAND Y12, Y1, Y1
	VPOR Y13, Y0, Y4
	VPAND Y12, Y4, Y4
	VBLENDVPS Y2, Y4, Y1, Y1
	TESTQ R8, R8
	JEQ store
	// Y1 = RoundBF16(Y0 - Y1)
	VSUBPS Y1, Y0, Y0
	VPAND Y8, Y0, Y2
	VPCMPGTD Y9, Y2, Y2
	VPSRLD $16, Y0, Y3
	VPAND Y10, Y3, Y3
	VPADDD Y11, Y0, Y1
	VPADDD Y3, Y1, Y1
	VPAND Y12, Y1, Y1
	VPOR Y13, Y0, Y4
	VPAND Y12, Y4, Y4
	VBLENDVPS Y2, Y4, Y1, Y1
store:
	VMOVUPS Y1, (DI)
	ADDQ $32, DI
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET
