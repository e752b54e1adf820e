//go:build amd64 && !purego

#include "textflag.h"

// AVX512_VNNI kernels (level avx512bf16): four weight rows against one
// activation row with VPDPBUSD on ZMM registers, one 128-bit lane per row
// for the 4-bit types (the 16 bytes of a block's nibbles; the low nibbles
// meet activation quants 0..15, the high ones 16..31, both broadcast to the
// four lanes) and one 256-bit half per row for Q8_0. The row totals land in
// one XMM and the float32 steps are the AVX2 kernels' (ggml's generic
// order per lane), so the results are the same bits.

#define SETUP \
	MOVQ w+0(FP), SI; \
	MOVQ rb+8(FP), BX; \
	MOVQ nb+16(FP), CX; \
	MOVQ qa+24(FP), DI; \
	MOVQ da+32(FP), R8; \
	MOVQ aux+40(FP), R9; \
	LEAQ (SI)(BX*2), R11; \
	MOVQ BX, R12; \
	SHLQ $4, R12; \
	ADDQ SI, R12; \
	MOVL $0x0f0f0f0f, AX; \
	VPBROADCASTD AX, Z14; \
	VXORPS X13, X13, X13

#define FINISH \
	MOVQ out+48(FP), R10; \
	VMOVUPS X13, (R10); \
	VZEROUPPER; \
	RET

#define HALF4(off, X) \
	MOVWLZX off(SI), AX; \
	VMOVD AX, X; \
	VPINSRW $1, off(SI)(BX*1), X, X; \
	VPINSRW $2, off(R11), X, X; \
	VPINSRW $3, off(R11)(BX*1), X, X; \
	VCVTPH2PS X, X

#define NEXT(size) \
	PREFETCHT0 (R12); \
	PREFETCHT0 64(R12); \
	ADDQ $size, SI; \
	ADDQ $size, R11; \
	ADDQ $(4*size), R12; \
	ADDQ $32, DI; \
	ADDQ $4, R8; \
	ADDQ $4, R9

// NIBDOT(off): X1 = the four rows' integer sums Σ level·y of the 16 nibble
// bytes at off in each row's block.
#define NIBDOT(off) \
	VBROADCASTI32X4 (DI), Z0; \
	VBROADCASTI32X4 16(DI), Z1; \
	VMOVDQU off(SI), X2; \
	VINSERTI32X4 $1, off(SI)(BX*1), Z2, Z2; \
	VINSERTI32X4 $2, off(R11), Z2, Z2; \
	VINSERTI32X4 $3, off(R11)(BX*1), Z2, Z2; \
	VPSRLW $4, Z2, Z3; \
	VPANDD Z14, Z2, Z2; \
	VPANDD Z14, Z3, Z3; \
	VPXORD Z4, Z4, Z4; \
	VPDPBUSD Z0, Z2, Z4; \
	VPDPBUSD Z1, Z3, Z4; \
	VEXTRACTI64X4 $1, Z4, Y5; \
	VPHADDD Y5, Y4, Y4; \
	VPHADDD Y4, Y4, Y4; \
	VEXTRACTI128 $1, Y4, X5; \
	VPUNPCKLDQ X5, X4, X1

// func dot4Q4_0VNNI(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
TEXT ·dot4Q4_0VNNI(SB), NOSPLIT, $0-56
	SETUP
	TESTQ CX, CX
	JZ    v40done
v40loop:
	NIBDOT(2)
	VPBROADCASTD (R9), X2
	VPSLLD       $3, X2, X2
	VPSUBD       X2, X1, X1
	VCVTDQ2PS    X1, X1
	HALF4(0, X2)
	VMULPS       X2, X1, X1
	VBROADCASTSS (R8), X2
	VMULPS       X2, X1, X1
	VADDPS       X1, X13, X13
	NEXT(18)
	DECQ CX
	JNZ  v40loop
v40done:
	FINISH

// func dot4Q4_1VNNI(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
TEXT ·dot4Q4_1VNNI(SB), NOSPLIT, $0-56
	SETUP
	TESTQ CX, CX
	JZ    v41done
v41loop:
	NIBDOT(4)
	VCVTDQ2PS    X1, X1
	HALF4(0, X2)
	VBROADCASTSS (R8), X3
	VMULPS       X3, X2, X2
	VMULPS       X1, X2, X1
	HALF4(2, X2)
	VBROADCASTSS (R9), X3
	VMULPS       X3, X2, X2
	VADDPS       X2, X1, X1
	VADDPS       X1, X13, X13
	NEXT(20)
	DECQ CX
	JNZ  v41loop
v41done:
	FINISH

// func dot4Q8_0VNNI(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
// aux: per-block sums of the activation quants (int32). The signed
// weights are offset by 128 (XOR 0x80) to meet VPDPBUSD's unsigned
// operand, and 128·Σy is taken off again.
TEXT ·dot4Q8_0VNNI(SB), NOSPLIT, $0-56
	SETUP
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z15
	TESTQ CX, CX
	JZ    v80done
v80loop:
	VBROADCASTI64X4 (DI), Z0
	VMOVDQU 2(SI), Y2
	VINSERTI64X4 $1, 2(SI)(BX*1), Z2, Z2
	VMOVDQU 2(R11), Y3
	VINSERTI64X4 $1, 2(R11)(BX*1), Z3, Z3
	VPXORD Z15, Z2, Z2
	VPXORD Z15, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPDPBUSD Z0, Z2, Z4
	VPDPBUSD Z0, Z3, Z5
	VEXTRACTI64X4 $1, Z4, Y2
	VEXTRACTI64X4 $1, Z5, Y3
	VPHADDD Y2, Y4, Y4
	VPHADDD Y3, Y5, Y5
	VPHADDD Y5, Y4, Y4
	VEXTRACTI128 $1, Y4, X2
	VPADDD X2, X4, X1
	VPBROADCASTD (R9), X2
	VPSLLD       $7, X2, X2
	VPSUBD       X2, X1, X1
	VCVTDQ2PS    X1, X1
	HALF4(0, X2)
	VBROADCASTSS (R8), X3
	VMULPS       X3, X2, X2
	VMULPS       X2, X1, X1
	VADDPS       X1, X13, X13
	NEXT(34)
	DECQ CX
	JNZ  v80loop
v80done:
	FINISH

// Four weight rows against four activation rows (GEMM): the weight
// nibbles and scales are unpacked once per block for all four activation
// rows, whose quants are at DI, DX, R14, R15, scales at R8 + a·R10 and
// block sums at R9 + a·R10 (R10 = 4·nb). Sums: X13, X12, X11, X10.

// NIBW(off): Z2, Z3 = the four rows' low and high nibbles at off.
#define NIBW(off) \
	VMOVDQU off(SI), X2; \
	VINSERTI32X4 $1, off(SI)(BX*1), Z2, Z2; \
	VINSERTI32X4 $2, off(R11), Z2, Z2; \
	VINSERTI32X4 $3, off(R11)(BX*1), Z2, Z2; \
	VPSRLW $4, Z2, Z3; \
	VPANDD Z14, Z2, Z2; \
	VPANDD Z14, Z3, Z3

// ADOT(yp): X1 = the four weight rows' Σ level·y against the activation
// quants at yp.
#define ADOT(yp) \
	VBROADCASTI32X4 (yp), Z0; \
	VBROADCASTI32X4 16(yp), Z1; \
	VPXORD Z4, Z4, Z4; \
	VPDPBUSD Z0, Z2, Z4; \
	VPDPBUSD Z1, Z3, Z4; \
	VEXTRACTI64X4 $1, Z4, Y5; \
	VPHADDD Y5, Y4, Y4; \
	VPHADDD Y4, Y4, Y4; \
	VEXTRACTI128 $1, Y4, X5; \
	VPUNPCKLDQ X5, X4, X1

// Q40STEP(yp, dmem, smem, acc): Q4_0's float steps for one activation row.
#define Q40STEP(yp, dmem, smem, acc) \
	ADOT(yp); \
	VPBROADCASTD smem, X6; \
	VPSLLD $3, X6, X6; \
	VPSUBD X6, X1, X1; \
	VCVTDQ2PS X1, X1; \
	VMULPS X9, X1, X1; \
	VBROADCASTSS dmem, X6; \
	VMULPS X6, X1, X1; \
	VADDPS X1, acc, acc

// func gemm4x4Q4_0VNNI(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)
TEXT ·gemm4x4Q4_0VNNI(SB), NOSPLIT, $0-72
	MOVQ w+0(FP), SI
	MOVQ rb+8(FP), BX
	MOVQ nb+16(FP), CX
	MOVQ qa+24(FP), DI
	MOVQ lda+32(FP), AX
	LEAQ (DI)(AX*1), DX
	LEAQ (DX)(AX*1), R14
	LEAQ (R14)(AX*1), R15
	MOVQ da+40(FP), R8
	MOVQ aux+48(FP), R9
	LEAQ (SI)(BX*2), R11
	MOVQ CX, R10
	SHLQ $2, R10
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z14
	VXORPS X13, X13, X13
	VXORPS X12, X12, X12
	VXORPS X11, X11, X11
	VXORPS X10, X10, X10
	TESTQ CX, CX
	JZ    g40done
g40loop:
	HALF4(0, X9)
	NIBW(2)
	LEAQ (R8)(R10*2), AX
	LEAQ (R9)(R10*2), R12
	Q40STEP(DI, (R8), (R9), X13)
	Q40STEP(DX, (R8)(R10*1), (R9)(R10*1), X12)
	Q40STEP(R14, (AX), (R12), X11)
	Q40STEP(R15, (AX)(R10*1), (R12)(R10*1), X10)
	ADDQ $18, SI
	ADDQ $18, R11
	ADDQ $32, DI
	ADDQ $32, DX
	ADDQ $32, R14
	ADDQ $32, R15
	ADDQ $4, R8
	ADDQ $4, R9
	DECQ CX
	JNZ  g40loop
g40done:
	MOVQ out+56(FP), AX
	MOVQ ldo+64(FP), BX
	VMOVUPS X13, (AX)
	VMOVUPS X12, (AX)(BX*4)
	LEAQ (AX)(BX*8), AX
	VMOVUPS X11, (AX)
	VMOVUPS X10, (AX)(BX*4)
	VZEROUPPER
	RET

// Q41STEP: Q4_1's float steps for one activation row; X9 holds dx, X8 mx.
#define Q41STEP(yp, dmem, smem, acc) \
	ADOT(yp); \
	VCVTDQ2PS X1, X1; \
	VBROADCASTSS dmem, X6; \
	VMULPS X9, X6, X6; \
	VMULPS X1, X6, X1; \
	VBROADCASTSS smem, X6; \
	VMULPS X8, X6, X6; \
	VADDPS X6, X1, X1; \
	VADDPS X1, acc, acc

#define GSETUP \
	MOVQ w+0(FP), SI; \
	MOVQ rb+8(FP), BX; \
	MOVQ nb+16(FP), CX; \
	MOVQ qa+24(FP), DI; \
	MOVQ lda+32(FP), AX; \
	LEAQ (DI)(AX*1), DX; \
	LEAQ (DX)(AX*1), R14; \
	LEAQ (R14)(AX*1), R15; \
	MOVQ da+40(FP), R8; \
	MOVQ aux+48(FP), R9; \
	LEAQ (SI)(BX*2), R11; \
	MOVQ CX, R10; \
	SHLQ $2, R10; \
	MOVL $0x0f0f0f0f, AX; \
	VPBROADCASTD AX, Z14; \
	VXORPS X13, X13, X13; \
	VXORPS X12, X12, X12; \
	VXORPS X11, X11, X11; \
	VXORPS X10, X10, X10

#define GNEXT(size) \
	ADDQ $size, SI; \
	ADDQ $size, R11; \
	ADDQ $32, DI; \
	ADDQ $32, DX; \
	ADDQ $32, R14; \
	ADDQ $32, R15; \
	ADDQ $4, R8; \
	ADDQ $4, R9

#define GFINISH \
	MOVQ out+56(FP), AX; \
	MOVQ ldo+64(FP), BX; \
	VMOVUPS X13, (AX); \
	VMOVUPS X12, (AX)(BX*4); \
	LEAQ (AX)(BX*8), AX; \
	VMOVUPS X11, (AX); \
	VMOVUPS X10, (AX)(BX*4); \
	VZEROUPPER; \
	RET

// func gemm4x4Q4_1VNNI(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)
TEXT ·gemm4x4Q4_1VNNI(SB), NOSPLIT, $0-72
	GSETUP
	TESTQ CX, CX
	JZ    g41done
g41loop:
	HALF4(0, X9)
	HALF4(2, X8)
	NIBW(4)
	LEAQ (R8)(R10*2), AX
	LEAQ (R9)(R10*2), R12
	Q41STEP(DI, (R8), (R9), X13)
	Q41STEP(DX, (R8)(R10*1), (R9)(R10*1), X12)
	Q41STEP(R14, (AX), (R12), X11)
	Q41STEP(R15, (AX)(R10*1), (R12)(R10*1), X10)
	GNEXT(20)
	DECQ CX
	JNZ  g41loop
g41done:
	GFINISH

// Q80W: Z2, Z3 = rows 0,1 and rows 2,3 of the Q8_0 quants, offset by 128.
#define Q80W \
	VMOVDQU 2(SI), Y2; \
	VINSERTI64X4 $1, 2(SI)(BX*1), Z2, Z2; \
	VMOVDQU 2(R11), Y3; \
	VINSERTI64X4 $1, 2(R11)(BX*1), Z3, Z3; \
	VPXORD Z15, Z2, Z2; \
	VPXORD Z15, Z3, Z3

// Q80STEP: Q8_0's steps for one activation row; X9 holds dx.
#define Q80STEP(yp, dmem, smem, acc) \
	VBROADCASTI64X4 (yp), Z0; \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPDPBUSD Z0, Z2, Z4; \
	VPDPBUSD Z0, Z3, Z5; \
	VEXTRACTI64X4 $1, Z4, Y6; \
	VEXTRACTI64X4 $1, Z5, Y7; \
	VPHADDD Y6, Y4, Y4; \
	VPHADDD Y7, Y5, Y5; \
	VPHADDD Y5, Y4, Y4; \
	VEXTRACTI128 $1, Y4, X6; \
	VPADDD X6, X4, X1; \
	VPBROADCASTD smem, X6; \
	VPSLLD $7, X6, X6; \
	VPSUBD X6, X1, X1; \
	VCVTDQ2PS X1, X1; \
	VBROADCASTSS dmem, X6; \
	VMULPS X9, X6, X6; \
	VMULPS X6, X1, X1; \
	VADDPS X1, acc, acc

// func gemm4x4Q8_0VNNI(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)
TEXT ·gemm4x4Q8_0VNNI(SB), NOSPLIT, $0-72
	GSETUP
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z15
	TESTQ CX, CX
	JZ    g80done
g80loop:
	HALF4(0, X9)
	Q80W
	LEAQ (R8)(R10*2), AX
	LEAQ (R9)(R10*2), R12
	Q80STEP(DI, (R8), (R9), X13)
	Q80STEP(DX, (R8)(R10*1), (R9)(R10*1), X12)
	Q80STEP(R14, (AX), (R12), X11)
	Q80STEP(R15, (AX)(R10*1), (R12)(R10*1), X10)
	GNEXT(34)
	DECQ CX
	JNZ  g80loop
g80done:
	GFINISH

// Q5_0 and Q5_1 (VNNI, four rows): the fifth bits come from each row's
// 32-bit qh: VPERMD puts row r's qh in lane r, VPSHUFB spreads its bytes
// (0,1 for the low nibbles' elements, 2,3 for the high ones) and VPTESTMB
// against 1<<(j%8) gives the byte mask where VPADDB adds 16.

DATA q5Idx<>+0(SB)/8, $0x0000000000000000
DATA q5Idx<>+8(SB)/8, $0x0000000000000000
DATA q5Idx<>+16(SB)/8, $0x0000000100000001
DATA q5Idx<>+24(SB)/8, $0x0000000100000001
DATA q5Idx<>+32(SB)/8, $0x0000000200000002
DATA q5Idx<>+40(SB)/8, $0x0000000200000002
DATA q5Idx<>+48(SB)/8, $0x0000000300000003
DATA q5Idx<>+56(SB)/8, $0x0000000300000003
GLOBL q5Idx<>(SB), RODATA|NOPTR, $64

#define REP4(name, a, b) \
	DATA name+0(SB)/8, $a; \
	DATA name+8(SB)/8, $b; \
	DATA name+16(SB)/8, $a; \
	DATA name+24(SB)/8, $b; \
	DATA name+32(SB)/8, $a; \
	DATA name+40(SB)/8, $b; \
	DATA name+48(SB)/8, $a; \
	DATA name+56(SB)/8, $b; \
	GLOBL name(SB), RODATA|NOPTR, $64

REP4(q5Lo<>, 0x0000000000000000, 0x0101010101010101)
REP4(q5Hi<>, 0x0202020202020202, 0x0303030303030303)
REP4(q5Bits<>, 0x8040201008040201, 0x8040201008040201)

#define Q5SETUP \
	VMOVDQU64 q5Idx<>(SB), Z16; \
	VMOVDQU64 q5Lo<>(SB), Z17; \
	VMOVDQU64 q5Hi<>(SB), Z18; \
	VMOVDQU64 q5Bits<>(SB), Z19; \
	MOVL $0x10101010, AX; \
	VPBROADCASTD AX, Z20

// NIB5DOT(qhoff, qsoff): X1 = the four rows' Σ level·y with 5-bit levels.
#define NIB5DOT(qhoff, qsoff) \
	VBROADCASTI32X4 (DI), Z0; \
	VBROADCASTI32X4 16(DI), Z1; \
	VMOVDQU qsoff(SI), X2; \
	VINSERTI32X4 $1, qsoff(SI)(BX*1), Z2, Z2; \
	VINSERTI32X4 $2, qsoff(R11), Z2, Z2; \
	VINSERTI32X4 $3, qsoff(R11)(BX*1), Z2, Z2; \
	VPSRLW $4, Z2, Z3; \
	VPANDD Z14, Z2, Z2; \
	VPANDD Z14, Z3, Z3; \
	VMOVD qhoff(SI), X6; \
	VPINSRD $1, qhoff(SI)(BX*1), X6, X6; \
	VPINSRD $2, qhoff(R11), X6, X6; \
	VPINSRD $3, qhoff(R11)(BX*1), X6, X6; \
	VPERMD Z6, Z16, Z6; \
	VPSHUFB Z17, Z6, Z7; \
	VPTESTMB Z19, Z7, K1; \
	VPADDB Z20, Z2, K1, Z2; \
	VPSHUFB Z18, Z6, Z7; \
	VPTESTMB Z19, Z7, K2; \
	VPADDB Z20, Z3, K2, Z3; \
	VPXORD Z4, Z4, Z4; \
	VPDPBUSD Z0, Z2, Z4; \
	VPDPBUSD Z1, Z3, Z4; \
	VEXTRACTI64X4 $1, Z4, Y5; \
	VPHADDD Y5, Y4, Y4; \
	VPHADDD Y4, Y4, Y4; \
	VEXTRACTI128 $1, Y4, X5; \
	VPUNPCKLDQ X5, X4, X1

// func dot4Q5_0VNNI(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
TEXT ·dot4Q5_0VNNI(SB), NOSPLIT, $0-56
	SETUP
	Q5SETUP
	TESTQ CX, CX
	JZ    v50done
v50loop:
	NIB5DOT(2, 6)
	VPBROADCASTD (R9), X2
	VPSLLD       $4, X2, X2
	VPSUBD       X2, X1, X1
	VCVTDQ2PS    X1, X1
	HALF4(0, X2)
	VBROADCASTSS (R8), X3
	VMULPS       X3, X2, X2
	VMULPS       X1, X2, X1
	VADDPS       X1, X13, X13
	NEXT(22)
	DECQ CX
	JNZ  v50loop
v50done:
	FINISH

// func dot4Q5_1VNNI(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
TEXT ·dot4Q5_1VNNI(SB), NOSPLIT, $0-56
	SETUP
	Q5SETUP
	TESTQ CX, CX
	JZ    v51done
v51loop:
	NIB5DOT(4, 8)
	VCVTDQ2PS    X1, X1
	HALF4(0, X2)
	VBROADCASTSS (R8), X3
	VMULPS       X3, X2, X2
	VMULPS       X1, X2, X1
	HALF4(2, X2)
	VBROADCASTSS (R9), X3
	VMULPS       X3, X2, X2
	VADDPS       X2, X1, X1
	VADDPS       X1, X13, X13
	NEXT(24)
	DECQ CX
	JNZ  v51loop
v51done:
	FINISH

// Eight weight rows against one activation row (GEMV): rows 0..3 in the
// 128-bit lanes of one ZMM, rows 4..7 of another, against the same
// broadcast activation quants. Three VPHADDD leave the row totals in the
// dword order 0, 2, 4, 6, 1, 3, 5, 7, which the half-precision scales are
// gathered in as well; the sums are put back in row order at the end.
// Rows: SI, SI+BX, R11 (=SI+2BX), R11+BX, R14 (=SI+4BX), R14+BX, R15
// (=R14+2BX), R15+BX.

DATA ord8<>+0(SB)/8, $0x0000000400000000
DATA ord8<>+8(SB)/8, $0x0000000500000001
DATA ord8<>+16(SB)/8, $0x0000000600000002
DATA ord8<>+24(SB)/8, $0x0000000700000003
GLOBL ord8<>(SB), RODATA|NOPTR, $32

#define SETUP8 \
	MOVQ w+0(FP), SI; \
	MOVQ rb+8(FP), BX; \
	MOVQ nb+16(FP), CX; \
	MOVQ qa+24(FP), DI; \
	MOVQ da+32(FP), R8; \
	MOVQ aux+40(FP), R9; \
	LEAQ (SI)(BX*2), R11; \
	LEAQ (SI)(BX*4), R14; \
	LEAQ (R14)(BX*2), R15; \
	MOVQ BX, R12; \
	SHLQ $4, R12; \
	ADDQ SI, R12; \
	MOVL $0x0f0f0f0f, AX; \
	VPBROADCASTD AX, Z14; \
	VXORPS Y13, Y13, Y13

// HALF8(off, X, Y): Y = the eight rows' halves at off, in the order
// 0, 2, 4, 6, 1, 3, 5, 7, as float32.
#define HALF8(off, X, Y) \
	MOVWLZX off(SI), AX; \
	VMOVD AX, X; \
	VPINSRW $1, off(R11), X, X; \
	VPINSRW $2, off(R14), X, X; \
	VPINSRW $3, off(R15), X, X; \
	VPINSRW $4, off(SI)(BX*1), X, X; \
	VPINSRW $5, off(R11)(BX*1), X, X; \
	VPINSRW $6, off(R14)(BX*1), X, X; \
	VPINSRW $7, off(R15)(BX*1), X, X; \
	VCVTPH2PS X, Y

// NIB8LD(off): the eight rows' 16 nibble bytes at off: rows 0..3's low
// nibbles in Z2, high in Z3, rows 4..7's in Z6, Z7; the activation quants
// 0..15 and 16..31 broadcast in Z0, Z1.
#define NIB8LD(off) \
	VBROADCASTI32X4 (DI), Z0; \
	VBROADCASTI32X4 16(DI), Z1; \
	VMOVDQU off(SI), X2; \
	VINSERTI32X4 $1, off(SI)(BX*1), Z2, Z2; \
	VINSERTI32X4 $2, off(R11), Z2, Z2; \
	VINSERTI32X4 $3, off(R11)(BX*1), Z2, Z2; \
	VMOVDQU off(R14), X6; \
	VINSERTI32X4 $1, off(R14)(BX*1), Z6, Z6; \
	VINSERTI32X4 $2, off(R15), Z6, Z6; \
	VINSERTI32X4 $3, off(R15)(BX*1), Z6, Z6; \
	VPSRLW $4, Z2, Z3; \
	VPSRLW $4, Z6, Z7; \
	VPANDD Z14, Z2, Z2; \
	VPANDD Z14, Z3, Z3; \
	VPANDD Z14, Z6, Z6; \
	VPANDD Z14, Z7, Z7

// NIB8SUM: Y1 = the eight rows' Σ level·y of NIB8LD's levels (order
// 0,2,4,6,1,3,5,7).
#define NIB8SUM \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z8, Z8, Z8; \
	VPDPBUSD Z0, Z2, Z4; \
	VPDPBUSD Z1, Z3, Z4; \
	VPDPBUSD Z0, Z6, Z8; \
	VPDPBUSD Z1, Z7, Z8; \
	VEXTRACTI64X4 $1, Z4, Y5; \
	VEXTRACTI64X4 $1, Z8, Y9; \
	VPHADDD Y5, Y4, Y4; \
	VPHADDD Y9, Y8, Y8; \
	VPHADDD Y8, Y4, Y1

// NIB8DOT(off): Y1 = the eight rows' Σ level·y (order 0,2,4,6,1,3,5,7).
#define NIB8DOT(off) \
	NIB8LD(off); \
	NIB8SUM

#define NEXT8(size) \
	PREFETCHT0 (R12); \
	PREFETCHT0 64(R12); \
	PREFETCHT0 128(R12); \
	ADDQ $size, SI; \
	ADDQ $size, R11; \
	ADDQ $size, R14; \
	ADDQ $size, R15; \
	ADDQ $(8*size), R12; \
	ADDQ $32, DI; \
	ADDQ $4, R8; \
	ADDQ $4, R9

#define FINISH8 \
	VMOVDQU ord8<>(SB), Y0; \
	VPERMD Y13, Y0, Y13; \
	MOVQ out+48(FP), R10; \
	VMOVUPS Y13, (R10); \
	VZEROUPPER; \
	RET

// F8M: the float steps of the types with a min (Q4_1, Q5_1) for eight
// rows: Y13 += (dx·dy)·Σ + mx·s, in ggml's order.
#define F8M \
	VCVTDQ2PS    Y1, Y1; \
	HALF8(0, X2, Y2); \
	VBROADCASTSS (R8), Y3; \
	VMULPS       Y3, Y2, Y2; \
	VMULPS       Y1, Y2, Y1; \
	HALF8(2, X2, Y2); \
	VBROADCASTSS (R9), Y3; \
	VMULPS       Y3, Y2, Y2; \
	VADDPS       Y2, Y1, Y1; \
	VADDPS       Y1, Y13, Y13

// func dot8Q4_0VNNI(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
TEXT ·dot8Q4_0VNNI(SB), NOSPLIT, $0-56
	SETUP8
	TESTQ CX, CX
	JZ    e40done
e40loop:
	NIB8DOT(2)
	VPBROADCASTD (R9), Y2
	VPSLLD       $3, Y2, Y2
	VPSUBD       Y2, Y1, Y1
	VCVTDQ2PS    Y1, Y1
	HALF8(0, X2, Y2)
	VMULPS       Y2, Y1, Y1
	VBROADCASTSS (R8), Y2
	VMULPS       Y2, Y1, Y1
	VADDPS       Y1, Y13, Y13
	NEXT8(18)
	DECQ CX
	JNZ  e40loop
e40done:
	FINISH8

// func dot8Q4_1VNNI(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
TEXT ·dot8Q4_1VNNI(SB), NOSPLIT, $0-56
	SETUP8
	TESTQ CX, CX
	JZ    e41done
e41loop:
	NIB8DOT(4)
	F8M
	NEXT8(20)
	DECQ CX
	JNZ  e41loop
e41done:
	FINISH8

// QH4(qhoff, base0, base1, Zlo, Zhi): add 16 to the levels in Zlo (low
// nibbles) and Zhi (high nibbles) whose qh bit is set, for the four rows at
// base0, base0+BX, base1, base1+BX (lanes 0..3).
#define QH4(qhoff, base0, base1, Zlo, Zhi) \
	VMOVD qhoff(base0), X10; \
	VPINSRD $1, qhoff(base0)(BX*1), X10, X10; \
	VPINSRD $2, qhoff(base1), X10, X10; \
	VPINSRD $3, qhoff(base1)(BX*1), X10, X10; \
	VPERMD Z10, Z16, Z10; \
	VPSHUFB Z17, Z10, Z11; \
	VPTESTMB Z19, Z11, K1; \
	VPADDB Z20, Zlo, K1, Zlo; \
	VPSHUFB Z18, Z10, Z11; \
	VPTESTMB Z19, Z11, K2; \
	VPADDB Z20, Zhi, K2, Zhi

// NIB5x8(qsoff, qhoff): NIB8DOT with 5-bit levels: nibbles at qsoff, qh at
// qhoff of each row.
#define NIB5x8(qsoff, qhoff) \
	NIB8LD(qsoff); \
	QH4(qhoff, SI, R11, Z2, Z3); \
	QH4(qhoff, R14, R15, Z6, Z7); \
	NIB8SUM

// func dot8Q5_0VNNI(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
TEXT ·dot8Q5_0VNNI(SB), NOSPLIT, $0-56
	SETUP8
	Q5SETUP
	TESTQ CX, CX
	JZ    e50done
e50loop:
	NIB5x8(6, 2)
	VPBROADCASTD (R9), Y2
	VPSLLD       $4, Y2, Y2
	VPSUBD       Y2, Y1, Y1
	VCVTDQ2PS    Y1, Y1
	HALF8(0, X2, Y2)
	VBROADCASTSS (R8), Y3
	VMULPS       Y3, Y2, Y2
	VMULPS       Y1, Y2, Y1
	VADDPS       Y1, Y13, Y13
	NEXT8(22)
	DECQ CX
	JNZ  e50loop
e50done:
	FINISH8

// func dot8Q5_1VNNI(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
// dot8Q5_0VNNI's integer sums with dot8Q4_1VNNI's float steps.
TEXT ·dot8Q5_1VNNI(SB), NOSPLIT, $0-56
	SETUP8
	Q5SETUP
	TESTQ CX, CX
	JZ    e51done
e51loop:
	NIB5x8(8, 4)
	F8M
	NEXT8(24)
	DECQ CX
	JNZ  e51loop
e51done:
	FINISH8
