//go:build amd64 && !purego

#include "textflag.h"

// AVX2 kernels: four weight rows against one activation row. Each block's
// integer dot products come from VPMADDUBSW (unsigned weight levels ×
// signed activations; no pair can saturate) and VPMADDWD, the four rows'
// sums are reduced with VPHADDD into one XMM, and the float32 steps of
// ggml's generic vec_dot run on that XMM, one lane per row, in the generic
// order, so every lane's result is the generic code's bits.
//
// Registers shared by the kernels: SI row 0, SI+BX row 1, R11 row 2,
// R11+BX row 3 (at the current block), DI activation quants, R8 activation
// scales, R9 the extra activation array, CX blocks left, X13 the four
// sums, Y14 0x0f bytes, Y15 int16 ones.

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
	VPCMPEQW Y15, Y15, Y15; \
	VPSRLW $15, Y15, Y15; \
	MOVL $0x0f0f0f0f, AX; \
	VMOVD AX, X14; \
	VPBROADCASTD X14, Y14; \
	VXORPS X13, X13, X13

#define FINISH \
	MOVQ out+48(FP), R10; \
	VMOVUPS X13, (R10); \
	VZEROUPPER; \
	RET

// NIB: Y = the 32 levels of 16 nibble bytes at mem (lows, then highs).
#define NIB(mem, X, Y, XT) \
	VMOVDQU mem, X; \
	VPSRLW $4, X, XT; \
	VINSERTI128 $1, XT, Y, Y; \
	VPAND Y14, Y, Y

// DOT: Y = eight int32 sums of Y (unsigned bytes) times Y0 (signed bytes).
#define DOT(Y) \
	VPMADDUBSW Y0, Y, Y; \
	VPMADDWD Y15, Y, Y

// RED4: X1 = the totals of Y1..Y4 (rows 0..3); clobbers Y2, Y3.
#define RED4 \
	VPHADDD Y2, Y1, Y1; \
	VPHADDD Y4, Y3, Y3; \
	VPHADDD Y3, Y1, Y1; \
	VEXTRACTI128 $1, Y1, X2; \
	VPADDD X2, X1, X1

// HALF4: X = the four rows' half-precision values at off in the block,
// converted to float32.
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

// QH5(off, Y): Y = 0x10 in byte p where bit p of the u32 at off is set.
#define QH5(off, Y, YT) \
	VPBROADCASTD off, Y; \
	VPSHUFB Y12, Y, Y; \
	VPOR Y11, Y, Y; \
	VPCMPEQB Y10, Y, Y; \
	VPAND Y9, Y, Y

// qh5 constants: Y12 the byte shuffle, Y11 all bits but bit p%8, Y10 all
// ones, Y9 0x10 bytes.
#define QH5SETUP \
	VMOVDQU qhShuf<>(SB), Y12; \
	VPBROADCASTQ qhBits<>(SB), Y11; \
	VPCMPEQB Y10, Y10, Y10; \
	MOVL $0x10101010, AX; \
	VMOVD AX, X9; \
	VPBROADCASTD X9, Y9

DATA qhShuf<>+0(SB)/8, $0x0000000000000000
DATA qhShuf<>+8(SB)/8, $0x0101010101010101
DATA qhShuf<>+16(SB)/8, $0x0202020202020202
DATA qhShuf<>+24(SB)/8, $0x0303030303030303
GLOBL qhShuf<>(SB), RODATA|NOPTR, $32

DATA qhBits<>+0(SB)/8, $0x7fbfdfeff7fbfdfe
GLOBL qhBits<>(SB), RODATA|NOPTR, $8

// func dot4Q4_0AVX2(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
// aux: per-block sums of the activation quants (int32).
// sumf += (float(Σ(q-8)·y) * dx) * dy
TEXT ·dot4Q4_0AVX2(SB), NOSPLIT, $0-56
	SETUP
	TESTQ CX, CX
	JZ    q40done
q40loop:
	VMOVDQU (DI), Y0
	NIB(2(SI), X1, Y1, X5)
	DOT(Y1)
	NIB(2(SI)(BX*1), X2, Y2, X5)
	DOT(Y2)
	NIB(2(R11), X3, Y3, X5)
	DOT(Y3)
	NIB(2(R11)(BX*1), X4, Y4, X5)
	DOT(Y4)
	RED4
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
	JNZ  q40loop
q40done:
	FINISH

// func dot4Q4_1AVX2(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
// aux: per-block s of the Q8_1 activation (float32).
// sumf += (dx*dy)*float(Σq·y) + mx*sy
TEXT ·dot4Q4_1AVX2(SB), NOSPLIT, $0-56
	SETUP
	TESTQ CX, CX
	JZ    q41done
q41loop:
	VMOVDQU (DI), Y0
	NIB(4(SI), X1, Y1, X5)
	DOT(Y1)
	NIB(4(SI)(BX*1), X2, Y2, X5)
	DOT(Y2)
	NIB(4(R11), X3, Y3, X5)
	DOT(Y3)
	NIB(4(R11)(BX*1), X4, Y4, X5)
	DOT(Y4)
	RED4
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
	JNZ  q41loop
q41done:
	FINISH

// func dot4Q5_0AVX2(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
// aux: per-block sums of the activation quants (int32).
// sumf += (dx*dy) * float(Σ(q-16)·y)
TEXT ·dot4Q5_0AVX2(SB), NOSPLIT, $0-56
	SETUP
	QH5SETUP
	TESTQ CX, CX
	JZ    q50done
q50loop:
	VMOVDQU (DI), Y0
	NIB(6(SI), X1, Y1, X5)
	QH5(2(SI), Y6, Y7)
	VPOR Y6, Y1, Y1
	DOT(Y1)
	NIB(6(SI)(BX*1), X2, Y2, X5)
	QH5(2(SI)(BX*1), Y6, Y7)
	VPOR Y6, Y2, Y2
	DOT(Y2)
	NIB(6(R11), X3, Y3, X5)
	QH5(2(R11), Y6, Y7)
	VPOR Y6, Y3, Y3
	DOT(Y3)
	NIB(6(R11)(BX*1), X4, Y4, X5)
	QH5(2(R11)(BX*1), Y6, Y7)
	VPOR Y6, Y4, Y4
	DOT(Y4)
	RED4
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
	JNZ  q50loop
q50done:
	FINISH

// func dot4Q5_1AVX2(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
// aux: per-block s of the Q8_1 activation (float32).
// sumf += (dx*dy)*float(Σq·y) + mx*sy
TEXT ·dot4Q5_1AVX2(SB), NOSPLIT, $0-56
	SETUP
	QH5SETUP
	TESTQ CX, CX
	JZ    q51done
q51loop:
	VMOVDQU (DI), Y0
	NIB(8(SI), X1, Y1, X5)
	QH5(4(SI), Y6, Y7)
	VPOR Y6, Y1, Y1
	DOT(Y1)
	NIB(8(SI)(BX*1), X2, Y2, X5)
	QH5(4(SI)(BX*1), Y6, Y7)
	VPOR Y6, Y2, Y2
	DOT(Y2)
	NIB(8(R11), X3, Y3, X5)
	QH5(4(R11), Y6, Y7)
	VPOR Y6, Y3, Y3
	DOT(Y3)
	NIB(8(R11)(BX*1), X4, Y4, X5)
	QH5(4(R11)(BX*1), Y6, Y7)
	VPOR Y6, Y4, Y4
	DOT(Y4)
	RED4
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
	JNZ  q51loop
q51done:
	FINISH

// Q8_0 rows are signed: VPSIGNB moves the weight's sign onto the
// activation (the activation quants are within ±127, so no negation
// overflows) and VPABSB makes the weight unsigned (-128 becomes 128).
#define Q8ROW(mem, Y) \
	VMOVDQU mem, Y; \
	VPSIGNB Y, Y0, Y6; \
	VPABSB  Y, Y; \
	VPMADDUBSW Y6, Y, Y; \
	VPMADDWD Y15, Y, Y

// func dot4Q8_0AVX2(w *byte, rb, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
// sumf += float(Σq·y) * (dx*dy)
TEXT ·dot4Q8_0AVX2(SB), NOSPLIT, $0-56
	SETUP
	TESTQ CX, CX
	JZ    q80done
q80loop:
	VMOVDQU (DI), Y0
	Q8ROW(2(SI), Y1)
	Q8ROW(2(SI)(BX*1), Y2)
	Q8ROW(2(R11), Y3)
	Q8ROW(2(R11)(BX*1), Y4)
	RED4
	VCVTDQ2PS    X1, X1
	HALF4(0, X2)
	VBROADCASTSS (R8), X3
	VMULPS       X3, X2, X2
	VMULPS       X2, X1, X1
	VADDPS       X1, X13, X13
	NEXT(34)
	DECQ CX
	JNZ  q80loop
q80done:
	FINISH

// AVX2 GEMM: four weight rows against four activation rows, the weight
// nibbles unpacked once per block (Y1..Y4) for all four; activation row a's
// quants at DI, DX, R14, R15, scales at R8 + a·R10, extra array at
// R9 + a·R10 (R10 = 4·nb). Sums: X13, X12, X11, X10.

// bytes0f and bytes10 are 32 bytes of 0x0f and of 0x10, the nibble mask
// and the fifth bit (package symbols: dotk_amd64.s uses them too).
DATA ·bytes0f+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA ·bytes0f+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA ·bytes0f+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA ·bytes0f+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL ·bytes0f(SB), RODATA|NOPTR, $32

DATA ·bytes10+0(SB)/8, $0x1010101010101010
DATA ·bytes10+8(SB)/8, $0x1010101010101010
DATA ·bytes10+16(SB)/8, $0x1010101010101010
DATA ·bytes10+24(SB)/8, $0x1010101010101010
GLOBL ·bytes10(SB), RODATA|NOPTR, $32

#define WNIB(mem, X, Y) \
	VMOVDQU mem, X; \
	VPSRLW $4, X, X5; \
	VINSERTI128 $1, X5, Y, Y; \
	VPAND ·bytes0f(SB), Y, Y

#define W4NIB(off) \
	WNIB(off(SI), X1, Y1); \
	WNIB(off(SI)(BX*1), X2, Y2); \
	WNIB(off(R11), X3, Y3); \
	WNIB(off(R11)(BX*1), X4, Y4)

// A4DOT(yp): X5 = the four rows' Σ level·y against the quants at yp.
#define A4DOT(yp) \
	VMOVDQU (yp), Y0; \
	VPMADDUBSW Y0, Y1, Y5; \
	VPMADDWD Y15, Y5, Y5; \
	VPMADDUBSW Y0, Y2, Y6; \
	VPMADDWD Y15, Y6, Y6; \
	VPMADDUBSW Y0, Y3, Y7; \
	VPMADDWD Y15, Y7, Y7; \
	VPMADDUBSW Y0, Y4, Y8; \
	VPMADDWD Y15, Y8, Y8; \
	VPHADDD Y6, Y5, Y5; \
	VPHADDD Y8, Y7, Y7; \
	VPHADDD Y7, Y5, Y5; \
	VEXTRACTI128 $1, Y5, X6; \
	VPADDD X6, X5, X5

#define G40STEP(yp, dmem, smem, acc) \
	A4DOT(yp); \
	VPBROADCASTD smem, X6; \
	VPSLLD $3, X6, X6; \
	VPSUBD X6, X5, X5; \
	VCVTDQ2PS X5, X5; \
	VMULPS X9, X5, X5; \
	VBROADCASTSS dmem, X6; \
	VMULPS X6, X5, X5; \
	VADDPS X5, acc, acc

#define G41STEP(yp, dmem, smem, acc) \
	A4DOT(yp); \
	VCVTDQ2PS X5, X5; \
	VBROADCASTSS dmem, X6; \
	VMULPS X9, X6, X6; \
	VMULPS X5, X6, X5; \
	VBROADCASTSS smem, X6; \
	VMULPS X14, X6, X6; \
	VADDPS X6, X5, X5; \
	VADDPS X5, acc, acc

// G80STEP: one activation row of the Q8_0 GEMM against the four weight
// rows, whose magnitudes are in Y1..Y4 (their signs are read again from
// memory: VPSIGNB gives the activation each weight's sign, as Q8ROW does).
#define G80STEP(yp, dmem, acc) \
	VMOVDQU (yp), Y0; \
	VPSIGNB 2(SI), Y0, Y5; \
	VPMADDUBSW Y5, Y1, Y5; \
	VPMADDWD Y15, Y5, Y5; \
	VPSIGNB 2(SI)(BX*1), Y0, Y6; \
	VPMADDUBSW Y6, Y2, Y6; \
	VPMADDWD Y15, Y6, Y6; \
	VPSIGNB 2(R11), Y0, Y7; \
	VPMADDUBSW Y7, Y3, Y7; \
	VPMADDWD Y15, Y7, Y7; \
	VPSIGNB 2(R11)(BX*1), Y0, Y8; \
	VPMADDUBSW Y8, Y4, Y8; \
	VPMADDWD Y15, Y8, Y8; \
	VPHADDD Y6, Y5, Y5; \
	VPHADDD Y8, Y7, Y7; \
	VPHADDD Y7, Y5, Y5; \
	VEXTRACTI128 $1, Y5, X6; \
	VPADDD X6, X5, X5; \
	VCVTDQ2PS X5, X5; \
	VBROADCASTSS dmem, X6; \
	VMULPS X9, X6, X6; \
	VMULPS X6, X5, X5; \
	VADDPS X5, acc, acc

// GPTRS: the GEMM kernels' pointers: weight rows at SI, SI+BX, R11,
// R11+BX; activation rows at DI, DX, R14, R15 (R13 = lda apart); scales
// and the extra array at R8 and R9 (R10 = 4·nb apart); CX blocks.
#define GPTRS \
	MOVQ w+0(FP), SI; \
	MOVQ rb+8(FP), BX; \
	MOVQ nb+16(FP), CX; \
	MOVQ qa+24(FP), DI; \
	MOVQ lda+32(FP), R13; \
	LEAQ (DI)(R13*1), DX; \
	LEAQ (DX)(R13*1), R14; \
	LEAQ (R14)(R13*1), R15; \
	MOVQ da+40(FP), R8; \
	MOVQ aux+48(FP), R9; \
	LEAQ (SI)(BX*2), R11; \
	MOVQ CX, R10; \
	SHLQ $2, R10

#define GSETUP2 \
	GPTRS; \
	VPCMPEQW Y15, Y15, Y15; \
	VPSRLW $15, Y15, Y15; \
	VXORPS X13, X13, X13; \
	VXORPS X12, X12, X12; \
	VXORPS X11, X11, X11; \
	VXORPS X10, X10, X10

#define GNEXT2(size) \
	ADDQ $size, SI; \
	ADDQ $size, R11; \
	ADDQ $32, DI; \
	ADDQ $32, DX; \
	ADDQ $32, R14; \
	ADDQ $32, R15; \
	ADDQ $4, R8; \
	ADDQ $4, R9

// OUTPAIR(Xa, Xb): two activation rows' four sums to (AX) and
// (AX)(BX*4) (BX = ldo), then AX two rows on.
#define OUTPAIR(Xa, Xb) \
	VMOVUPS Xa, (AX); \
	VMOVUPS Xb, (AX)(BX*4); \
	LEAQ (AX)(BX*8), AX

#define GFINISH2 \
	MOVQ out+56(FP), AX; \
	MOVQ ldo+64(FP), BX; \
	OUTPAIR(X13, X12); \
	OUTPAIR(X11, X10); \
	VZEROUPPER; \
	RET

// func gemm4x4Q4_0AVX2(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)
TEXT ·gemm4x4Q4_0AVX2(SB), NOSPLIT, $0-72
	GSETUP2
	TESTQ CX, CX
	JZ    a40done
a40loop:
	HALF4(0, X9)
	W4NIB(2)
	LEAQ (R8)(R10*2), AX
	LEAQ (R9)(R10*2), R12
	G40STEP(DI, (R8), (R9), X13)
	G40STEP(DX, (R8)(R10*1), (R9)(R10*1), X12)
	G40STEP(R14, (AX), (R12), X11)
	G40STEP(R15, (AX)(R10*1), (R12)(R10*1), X10)
	GNEXT2(18)
	DECQ CX
	JNZ  a40loop
a40done:
	GFINISH2

// func gemm4x4Q8_0AVX2(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)
// Per block and pair: sumf += float(Σq·y) * (dx*dy), as dot4Q8_0AVX2.
TEXT ·gemm4x4Q8_0AVX2(SB), NOSPLIT, $0-72
	GSETUP2
	TESTQ CX, CX
	JZ    a80done
a80loop:
	HALF4(0, X9)
	VPABSB 2(SI), Y1
	VPABSB 2(SI)(BX*1), Y2
	VPABSB 2(R11), Y3
	VPABSB 2(R11)(BX*1), Y4
	LEAQ (R8)(R10*2), AX
	G80STEP(DI, (R8), X13)
	G80STEP(DX, (R8)(R10*1), X12)
	G80STEP(R14, (AX), X11)
	G80STEP(R15, (AX)(R10*1), X10)
	GNEXT2(34)
	DECQ CX
	JNZ  a80loop
a80done:
	GFINISH2

// func gemm4x4Q4_1AVX2(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)
TEXT ·gemm4x4Q4_1AVX2(SB), NOSPLIT, $0-72
	GSETUP2
	TESTQ CX, CX
	JZ    a41done
a41loop:
	HALF4(0, X9)
	HALF4(2, X14)
	W4NIB(4)
	LEAQ (R8)(R10*2), AX
	LEAQ (R9)(R10*2), R12
	G41STEP(DI, (R8), (R9), X13)
	G41STEP(DX, (R8)(R10*1), (R9)(R10*1), X12)
	G41STEP(R14, (AX), (R12), X11)
	G41STEP(R15, (AX)(R10*1), (R12)(R10*1), X10)
	GNEXT2(20)
	DECQ CX
	JNZ  a41loop
a41done:
	GFINISH2

// The Q5 GEMM kernels make the fifth bits as QH5 does, with the constants
// from memory (the accumulators X10..X13 hold the registers the row
// kernels keep them in) and Y7 all ones.

DATA qhBits32<>+0(SB)/8, $0x7fbfdfeff7fbfdfe
DATA qhBits32<>+8(SB)/8, $0x7fbfdfeff7fbfdfe
DATA qhBits32<>+16(SB)/8, $0x7fbfdfeff7fbfdfe
DATA qhBits32<>+24(SB)/8, $0x7fbfdfeff7fbfdfe
GLOBL qhBits32<>(SB), RODATA|NOPTR, $32


// QH5G(mem, Y): Y |= 0x10 in byte p where bit p of the u32 at mem is set;
// clobbers Y6.
#define QH5G(mem, Y) \
	VPBROADCASTD mem, Y6; \
	VPSHUFB qhShuf<>(SB), Y6, Y6; \
	VPOR qhBits32<>(SB), Y6, Y6; \
	VPCMPEQB Y7, Y6, Y6; \
	VPAND ·bytes10(SB), Y6, Y6; \
	VPOR Y6, Y, Y

// W4QH5(off): the four rows' fifth bits (qh at off) into Y1..Y4.
#define W4QH5(off) \
	VPCMPEQB Y7, Y7, Y7; \
	QH5G(off(SI), Y1); \
	QH5G(off(SI)(BX*1), Y2); \
	QH5G(off(R11), Y3); \
	QH5G(off(R11)(BX*1), Y4)

// G50STEP: one activation row of the Q5_0 GEMM; per block and pair
// sumf += (dx*dy) * float(Σ(q-16)·y), as dot4Q5_0AVX2.
#define G50STEP(yp, dmem, smem, acc) \
	A4DOT(yp); \
	VPBROADCASTD smem, X6; \
	VPSLLD $4, X6, X6; \
	VPSUBD X6, X5, X5; \
	VCVTDQ2PS X5, X5; \
	VBROADCASTSS dmem, X6; \
	VMULPS X9, X6, X6; \
	VMULPS X6, X5, X5; \
	VADDPS X5, acc, acc

// func gemm4x4Q5_0AVX2(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)
TEXT ·gemm4x4Q5_0AVX2(SB), NOSPLIT, $0-72
	GSETUP2
	TESTQ CX, CX
	JZ    a50done
a50loop:
	HALF4(0, X9)
	W4NIB(6)
	W4QH5(2)
	LEAQ (R8)(R10*2), AX
	LEAQ (R9)(R10*2), R12
	G50STEP(DI, (R8), (R9), X13)
	G50STEP(DX, (R8)(R10*1), (R9)(R10*1), X12)
	G50STEP(R14, (AX), (R12), X11)
	G50STEP(R15, (AX)(R10*1), (R12)(R10*1), X10)
	GNEXT2(22)
	DECQ CX
	JNZ  a50loop
a50done:
	GFINISH2

// func gemm4x4Q5_1AVX2(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)
// Per block and pair: sumf += (dx*dy)*float(Σq·y) + mx*sy, as
// dot4Q5_1AVX2 (the steps of the Q4_1 GEMM).
TEXT ·gemm4x4Q5_1AVX2(SB), NOSPLIT, $0-72
	GSETUP2
	TESTQ CX, CX
	JZ    a51done
a51loop:
	HALF4(0, X9)
	HALF4(2, X14)
	W4NIB(8)
	W4QH5(4)
	LEAQ (R8)(R10*2), AX
	LEAQ (R9)(R10*2), R12
	G41STEP(DI, (R8), (R9), X13)
	G41STEP(DX, (R8)(R10*1), (R9)(R10*1), X12)
	G41STEP(R14, (AX), (R12), X11)
	G41STEP(R15, (AX)(R10*1), (R12)(R10*1), X10)
	GNEXT2(24)
	DECQ CX
	JNZ  a51loop
a51done:
	GFINISH2

// AVX2 GEMM, four weight rows against eight activation rows: the 4x4
// kernels' steps with each block's four rows unpacked once for eight
// activation rows (the unpacking, qh most of all, is what the 4x4 kernel
// repeats per four). Registers: Y1..Y4 the levels, Y0 and Y5..Y7 the
// steps' scratch, X8..X15 the sums of activation rows 0..7; the weight's
// dx (and mx) at 0(SP) (16(SP)); activation row a's quants at DI, DX,
// R14, R15 (rows 0..3) and those plus 4·R13 (rows 4..7, R13 = lda), its
// scales and extra array at R8 and R9 plus a·R10 (R10 = 4·nb), reached
// through AX and R12.

DATA ones16<>+0(SB)/8, $0x0001000100010001
DATA ones16<>+8(SB)/8, $0x0001000100010001
DATA ones16<>+16(SB)/8, $0x0001000100010001
DATA ones16<>+24(SB)/8, $0x0001000100010001
GLOBL ones16<>(SB), RODATA|NOPTR, $32

// A4DOT3(ymem): X5 = the four rows' Σ level·y against the 32 quants at
// ymem, as A4DOT, with three scratch registers and the ones from memory.
#define A4DOT3(ymem) \
	VMOVDQU    ymem, Y0; \
	VPMADDUBSW Y0, Y1, Y5; \
	VPMADDWD   Y7, Y5, Y5; \
	VPMADDUBSW Y0, Y2, Y6; \
	VPMADDWD   Y7, Y6, Y6; \
	VPHADDD    Y6, Y5, Y5; \
	VPMADDUBSW Y0, Y3, Y6; \
	VPMADDWD   Y7, Y6, Y6; \
	VPMADDUBSW Y0, Y4, Y0; \
	VPMADDWD   Y7, Y0, Y0; \
	VPHADDD    Y0, Y6, Y6; \
	VPHADDD    Y6, Y5, Y5; \
	VEXTRACTI128 $1, Y5, X6; \
	VPADDD     X6, X5, X5

// QH5H(mem, Y): QH5G with the all-ones in Y0.
#define QH5H(mem, Y) \
	VPBROADCASTD mem, Y6; \
	VPSHUFB qhShuf<>(SB), Y6, Y6; \
	VPOR qhBits32<>(SB), Y6, Y6; \
	VPCMPEQB Y0, Y6, Y6; \
	VPAND ·bytes10(SB), Y6, Y6; \
	VPOR Y6, Y, Y

#define W4QH5H(off) \
	VPCMPEQB Y0, Y0, Y0; \
	QH5H(off(SI), Y1); \
	QH5H(off(SI)(BX*1), Y2); \
	QH5H(off(R11), Y3); \
	QH5H(off(R11)(BX*1), Y4)

// H50STEP: G50STEP with dx at 0(SP).
#define H50STEP(ymem, dmem, smem, acc) \
	A4DOT3(ymem); \
	VPBROADCASTD smem, X6; \
	VPSLLD $4, X6, X6; \
	VPSUBD X6, X5, X5; \
	VCVTDQ2PS X5, X5; \
	VBROADCASTSS dmem, X6; \
	VMULPS 0(SP), X6, X6; \
	VMULPS X6, X5, X5; \
	VADDPS X5, acc, acc

// H8ROWS(STEP): STEP for the eight activation rows of the block.
#define H8ROWS(STEP) \
	LEAQ (R8)(R10*2), AX; \
	LEAQ (R9)(R10*2), R12; \
	STEP((DI), (R8), (R9), X8); \
	STEP((DX), (R8)(R10*1), (R9)(R10*1), X9); \
	STEP((R14), (AX), (R12), X10); \
	STEP((R15), (AX)(R10*1), (R12)(R10*1), X11); \
	LEAQ (AX)(R10*2), AX; \
	LEAQ (R12)(R10*2), R12; \
	STEP((DI)(R13*4), (AX), (R12), X12); \
	STEP((DX)(R13*4), (AX)(R10*1), (R12)(R10*1), X13); \
	LEAQ (AX)(R10*2), AX; \
	LEAQ (R12)(R10*2), R12; \
	STEP((R14)(R13*4), (AX), (R12), X14); \
	STEP((R15)(R13*4), (AX)(R10*1), (R12)(R10*1), X15)

// H8NEXT(size): the next block of each row.
#define H8NEXT(size) \
	ADDQ $size, SI; \
	ADDQ $size, R11; \
	ADDQ $32, DI; \
	ADDQ $32, DX; \
	ADDQ $32, R14; \
	ADDQ $32, R15; \
	ADDQ $4, R8; \
	ADDQ $4, R9

// H8SETUP: the 4x8 kernels' pointers, zeroed sums and ones.
#define H8SETUP \
	GPTRS; \
	VXORPS Y8, Y8, Y8; \
	VXORPS Y9, Y9, Y9; \
	VXORPS Y10, Y10, Y10; \
	VXORPS Y11, Y11, Y11; \
	VXORPS Y12, Y12, Y12; \
	VXORPS Y13, Y13, Y13; \
	VXORPS Y14, Y14, Y14; \
	VXORPS Y15, Y15, Y15; \
	VMOVDQU ones16<>(SB), Y7

// H8FINISH: the eight activation rows' four sums to out.
#define H8FINISH \
	MOVQ out+56(FP), AX; \
	MOVQ ldo+64(FP), BX; \
	OUTPAIR(X8, X9); \
	OUTPAIR(X10, X11); \
	OUTPAIR(X12, X13); \
	OUTPAIR(X14, X15); \
	VZEROUPPER; \
	RET

// func gemm4x8Q5_0AVX2(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)
TEXT ·gemm4x8Q5_0AVX2(SB), NOSPLIT, $32-72
	H8SETUP
	TESTQ CX, CX
	JZ    b50done
b50loop:
	HALF4(0, X5)
	VMOVUPS X5, 0(SP)
	W4NIB(6)
	W4QH5H(2)
	H8ROWS(H50STEP)
	H8NEXT(22)
	DECQ CX
	JNZ  b50loop
b50done:
	H8FINISH

// H40STEP: G40STEP with dx at 0(SP).
#define H40STEP(ymem, dmem, smem, acc) \
	A4DOT3(ymem); \
	VPBROADCASTD smem, X6; \
	VPSLLD $3, X6, X6; \
	VPSUBD X6, X5, X5; \
	VCVTDQ2PS X5, X5; \
	VMULPS 0(SP), X5, X5; \
	VBROADCASTSS dmem, X6; \
	VMULPS X6, X5, X5; \
	VADDPS X5, acc, acc

// H41STEP: G41STEP with dx at 0(SP) and mx at 16(SP).
#define H41STEP(ymem, dmem, smem, acc) \
	A4DOT3(ymem); \
	VCVTDQ2PS X5, X5; \
	VBROADCASTSS dmem, X6; \
	VMULPS 0(SP), X6, X6; \
	VMULPS X5, X6, X5; \
	VBROADCASTSS smem, X6; \
	VMULPS 16(SP), X6, X6; \
	VADDPS X6, X5, X5; \
	VADDPS X5, acc, acc

// func gemm4x8Q4_0AVX2(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)
TEXT ·gemm4x8Q4_0AVX2(SB), NOSPLIT, $32-72
	H8SETUP
	TESTQ CX, CX
	JZ    b40done
b40loop:
	HALF4(0, X5)
	VMOVUPS X5, 0(SP)
	W4NIB(2)
	H8ROWS(H40STEP)
	H8NEXT(18)
	DECQ CX
	JNZ  b40loop
b40done:
	H8FINISH

// func gemm4x8Q4_1AVX2(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)
TEXT ·gemm4x8Q4_1AVX2(SB), NOSPLIT, $32-72
	H8SETUP
	TESTQ CX, CX
	JZ    b41done
b41loop:
	HALF4(0, X5)
	VMOVUPS X5, 0(SP)
	HALF4(2, X5)
	VMOVUPS X5, 16(SP)
	W4NIB(4)
	H8ROWS(H41STEP)
	H8NEXT(20)
	DECQ CX
	JNZ  b41loop
b41done:
	H8FINISH

// func gemm4x8Q5_1AVX2(w *byte, rb, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)
TEXT ·gemm4x8Q5_1AVX2(SB), NOSPLIT, $32-72
	H8SETUP
	TESTQ CX, CX
	JZ    b51done
b51loop:
	HALF4(0, X5)
	VMOVUPS X5, 0(SP)
	HALF4(2, X5)
	VMOVUPS X5, 16(SP)
	W4NIB(8)
	W4QH5H(4)
	H8ROWS(H41STEP)
	H8NEXT(24)
	DECQ CX
	JNZ  b51loop
b51done:
	H8FINISH
