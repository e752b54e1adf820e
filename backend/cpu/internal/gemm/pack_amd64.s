//go:build amd64 && !purego

#include "textflag.h"
#include "transpose8_amd64.h"

// Packing and tile-transposing loops of the GEMM drivers (gemm_pack.go):
// pure data movement, no arithmetic.

// func PackN16F32(dst, src *float32, lds, kc, np, dps int)
// For p < kc and q < np: dst[q*dps + p*16 + j] = src[p*lds + q*16 + j],
// j < 16. Step by step across the panels, so the reads are contiguous.
TEXT ·PackN16F32(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R8
	SHLQ $2, R8
	MOVQ kc+24(FP), CX
	MOVQ np+32(FP), R9
	MOVQ dps+40(FP), R10
	SHLQ $2, R10
	TESTQ CX, CX
	JEQ  n16done
	TESTQ R9, R9
	JEQ  n16done

n16row:
	MOVQ SI, AX
	MOVQ DI, BX
	MOVQ R9, DX

n16pan:
	VMOVUPS (AX), Y0
	VMOVUPS 32(AX), Y1
	VMOVUPS Y0, (BX)
	VMOVUPS Y1, 32(BX)
	ADDQ $64, AX
	ADDQ R10, BX
	DECQ DX
	JNZ  n16pan
	ADDQ R8, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  n16row

n16done:
	VZEROUPPER
	RET

// func PackN6F32(dst, src *float32, lds, kc, np, dps int)
// For p < kc and q < np: dst[q*dps + p*6 + j] = src[p*lds + q*6 + j],
// j < 6 (16 bytes and 8 bytes per panel and step; nothing outside the
// six values is read or written).
TEXT ·PackN6F32(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R8
	SHLQ $2, R8
	MOVQ kc+24(FP), CX
	MOVQ np+32(FP), R9
	MOVQ dps+40(FP), R10
	SHLQ $2, R10
	TESTQ CX, CX
	JEQ  n6done
	TESTQ R9, R9
	JEQ  n6done

n6row:
	MOVQ SI, AX
	MOVQ DI, BX
	MOVQ R9, DX

n6pan:
	VMOVUPS (AX), X0
	VMOVQ   16(AX), X1
	VMOVUPS X0, (BX)
	VMOVQ   X1, 16(BX)
	ADDQ $24, AX
	ADDQ R10, BX
	DECQ DX
	JNZ  n6pan
	ADDQ R8, SI
	ADDQ $24, DI
	DECQ CX
	JNZ  n6row

n6done:
	RET

// TRANS8 transposes the 8x8 block in Y0..Y7 (row r in Yr) through
// Y8..Y15 and stores column c (eight values, rows 0..7) at off+c*64(DI).
#define TRANS8(off) \
	TRANSPOSE8; \
	VMOVUPS Y8, off(DI); \
	VMOVUPS Y9, off+64(DI); \
	VMOVUPS Y10, off+128(DI); \
	VMOVUPS Y11, off+192(DI); \
	VMOVUPS Y12, off+256(DI); \
	VMOVUPS Y13, off+320(DI); \
	VMOVUPS Y14, off+384(DI); \
	VMOVUPS Y15, off+448(DI)

TEXT ·PackT8F32(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R8
	SHLQ $2, R8
	MOVQ n+24(FP), CX
	LEAQ (R8)(R8*2), R9
	LEAQ (SI)(R8*4), R11
	ADDQ R8, R11

t8loop:
	CMPQ CX, $8
	JLT  t8done
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(R8*1), Y1
	VMOVUPS (SI)(R8*2), Y2
	VMOVUPS (SI)(R9*1), Y3
	VMOVUPS (SI)(R8*4), Y4
	VMOVUPS (R11), Y5
	VMOVUPS (R11)(R8*1), Y6
	VMOVUPS (R11)(R8*2), Y7
	TRANS8(0)
	ADDQ $32, SI
	ADDQ $32, R11
	ADDQ $512, DI
	SUBQ $8, CX
	JMP  t8loop

t8done:
	VZEROUPPER
	RET

// func StoreT6F32(out *float32, ldo int, t *float32, ldt, n int)
// Writes a 6-row tile transposed: out[i*ldo + r] = t[r*ldt + i] for
// r < 6, i < n (n a multiple of 8). Eight i at a time: the six rows of
// eight are transposed as an 8x8 block whose last two rows are zero
// (as PackA6F32AVX2), and each column's six values are stored as 16 and
// 8 bytes, so nothing past them is written.
TEXT ·StoreT6F32(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), DI
	MOVQ ldo+8(FP), DX
	SHLQ $2, DX
	MOVQ t+16(FP), SI
	MOVQ ldt+24(FP), R8
	SHLQ $2, R8
	MOVQ n+32(FP), CX
	LEAQ (SI)(R8*1), R9
	LEAQ (R9)(R8*1), R10
	LEAQ (R10)(R8*1), R11
	LEAQ (R11)(R8*1), R12
	LEAQ (R12)(R8*1), R13
	VXORPS Y15, Y15, Y15

st6loop:
	CMPQ CX, $8
	JLT  st6done
	VMOVUPS    (SI), Y0
	VMOVUPS    (R9), Y1
	VMOVUPS    (R10), Y2
	VMOVUPS    (R11), Y3
	VMOVUPS    (R12), Y4
	VMOVUPS    (R13), Y5
	TRANSPOSE6ROWS
	// Columns 0..3: the low lanes of Y0..Y3 (rows 0..3) and Y4..Y7
	// (rows 4, 5); columns 4..7: the high lanes.
	MOVQ DI, AX
	VMOVUPS     X0, (AX)
	VMOVQ       X4, 16(AX)
	ADDQ DX, AX
	VMOVUPS     X1, (AX)
	VMOVQ       X5, 16(AX)
	ADDQ DX, AX
	VMOVUPS     X2, (AX)
	VMOVQ       X6, 16(AX)
	ADDQ DX, AX
	VMOVUPS     X3, (AX)
	VMOVQ       X7, 16(AX)
	ADDQ DX, AX
	VEXTRACTF128 $1, Y0, X8
	VEXTRACTF128 $1, Y4, X9
	VMOVUPS     X8, (AX)
	VMOVQ       X9, 16(AX)
	ADDQ DX, AX
	VEXTRACTF128 $1, Y1, X8
	VEXTRACTF128 $1, Y5, X9
	VMOVUPS     X8, (AX)
	VMOVQ       X9, 16(AX)
	ADDQ DX, AX
	VEXTRACTF128 $1, Y2, X8
	VEXTRACTF128 $1, Y6, X9
	VMOVUPS     X8, (AX)
	VMOVQ       X9, 16(AX)
	ADDQ DX, AX
	VEXTRACTF128 $1, Y3, X8
	VEXTRACTF128 $1, Y7, X9
	VMOVUPS     X8, (AX)
	VMOVQ       X9, 16(AX)
	ADDQ DX, AX
	MOVQ AX, DI
	ADDQ $32, SI
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R13
	SUBQ $8, CX
	JMP  st6loop

st6done:
	VZEROUPPER
	RET

// func T8x8F32(dst *float32, ldd int, src *float32, lds int)
// Transposes one 8x8 block: dst[c*ldd + r] = src[r*lds + c] for r, c < 8.
TEXT ·T8x8F32(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), DX
	SHLQ $2, DX
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	LEAQ (SI)(R8*4), R11
	ADDQ R8, R11
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(R8*1), Y1
	VMOVUPS (SI)(R8*2), Y2
	VMOVUPS (SI)(R9*1), Y3
	VMOVUPS (SI)(R8*4), Y4
	VMOVUPS (R11), Y5
	VMOVUPS (R11)(R8*1), Y6
	VMOVUPS (R11)(R8*2), Y7
	TRANSPOSE8
	VMOVUPS Y8, (DI)
	ADDQ    DX, DI
	VMOVUPS Y9, (DI)
	ADDQ    DX, DI
	VMOVUPS Y10, (DI)
	ADDQ    DX, DI
	VMOVUPS Y11, (DI)
	ADDQ    DX, DI
	VMOVUPS Y12, (DI)
	ADDQ    DX, DI
	VMOVUPS Y13, (DI)
	ADDQ    DX, DI
	VMOVUPS Y14, (DI)
	ADDQ    DX, DI
	VMOVUPS Y15, (DI)
	VZEROUPPER
	RET

// func PackT8WF32(dst, src *float32, lds, n, w int)
// PackT8F32 into a w-wide panel: dst[p*w+r] = src[r*lds+p] for
// r < 8, p < n (n a multiple of 8).
TEXT ·PackT8WF32(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R8
	SHLQ $2, R8
	MOVQ n+24(FP), CX
	MOVQ w+32(FP), R10
	SHLQ $2, R10
	LEAQ (R8)(R8*2), R9
	LEAQ (SI)(R8*4), R11
	ADDQ R8, R11
	LEAQ (R10)(R10*2), R12 // 3 columns
	MOVQ R10, R13
	SHLQ $3, R13 // 8 columns

tw8loop:
	CMPQ CX, $8
	JLT  tw8done
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(R8*1), Y1
	VMOVUPS (SI)(R8*2), Y2
	VMOVUPS (SI)(R9*1), Y3
	VMOVUPS (SI)(R8*4), Y4
	VMOVUPS (R11), Y5
	VMOVUPS (R11)(R8*1), Y6
	VMOVUPS (R11)(R8*2), Y7
	TRANSPOSE8
	STORET8W
	ADDQ $32, SI
	ADDQ $32, R11
	ADDQ R13, DI
	SUBQ $8, CX
	JMP  tw8loop

tw8done:
	VZEROUPPER
	RET
