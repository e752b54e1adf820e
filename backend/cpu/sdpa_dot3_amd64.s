//go:build amd64 && !purego

#include "textflag.h"

// sdpaDot3F32x16: the scores of three query rows (grouped-query heads that
// share one key head) against sixteen key rows. Each 8x8 block of keys is
// loaded and transposed once and multiplied into all three queries'
// accumulators, so the six chains (three queries, two 8-row halves) hide
// the FMA latency that a single query's two chains expose; every output
// is still one FMA chain over k in order from zero, the bits of
// gemvDotF32x16.
//
// Registers: SI, R12, R13, R14 key rows 0, 4, 8, 12 (R8 bytes apart, R11
// = 3*R8); R15 key row 16 (prefetched one step ahead); AX the byte offset
// along k; DI, BX, DX the three queries; CX loop count; Y9-Y11 rows 0-7
// and Y12-Y14 rows 8-15 of queries 0, 1, 2.

// S3LOAD loads rows RA..RA+3 and RB..RB+3 at byte OFF past AX into Y0-Y7.
#define S3LOAD(RA, RB, OFF) \
	LEAQ OFF(RA)(AX*1), R9; \
	LEAQ OFF(RB)(AX*1), R10; \
	VMOVUPS (R9), Y0; \
	VMOVUPS (R9)(R8*1), Y1; \
	VMOVUPS (R9)(R8*2), Y2; \
	VMOVUPS (R9)(R11*1), Y3; \
	VMOVUPS (R10), Y4; \
	VMOVUPS (R10)(R8*1), Y5; \
	VMOVUPS (R10)(R8*2), Y6; \
	VMOVUPS (R10)(R11*1), Y7

// S3TRANS transposes Y0-Y7 with one spare register (Y8): afterwards
// column c of the block is in Y5, Y6, Y0, Y8, Y1, Y4, Y2, Y7 (c = 0..7),
// and Y3 is free.
#define S3TRANS \
	VUNPCKLPS Y1, Y0, Y8; \
	VUNPCKHPS Y1, Y0, Y1; \
	VUNPCKLPS Y3, Y2, Y0; \
	VUNPCKHPS Y3, Y2, Y3; \
	VUNPCKLPS Y5, Y4, Y2; \
	VUNPCKHPS Y5, Y4, Y5; \
	VUNPCKLPS Y7, Y6, Y4; \
	VUNPCKHPS Y7, Y6, Y7; \
	VSHUFPS $0x44, Y0, Y8, Y6; \
	VSHUFPS $0xEE, Y0, Y8, Y0; \
	VSHUFPS $0x44, Y3, Y1, Y8; \
	VSHUFPS $0xEE, Y3, Y1, Y3; \
	VSHUFPS $0x44, Y4, Y2, Y1; \
	VSHUFPS $0xEE, Y4, Y2, Y4; \
	VSHUFPS $0x44, Y7, Y5, Y2; \
	VSHUFPS $0xEE, Y7, Y5, Y7; \
	VPERM2F128 $0x20, Y1, Y6, Y5; \
	VPERM2F128 $0x31, Y1, Y6, Y1; \
	VPERM2F128 $0x20, Y4, Y0, Y6; \
	VPERM2F128 $0x31, Y4, Y0, Y4; \
	VPERM2F128 $0x20, Y2, Y8, Y0; \
	VPERM2F128 $0x31, Y2, Y8, Y2; \
	VPERM2F128 $0x20, Y7, Y3, Y8; \
	VPERM2F128 $0x31, Y7, Y3, Y7

// S3COL adds column C (byte offset COFF past OFF) times the three queries.
#define S3COL(C, COFF, A0, A1, A2) \
	VBROADCASTSS COFF(DI)(AX*1), Y3; \
	VFMADD231PS Y3, C, A0; \
	VBROADCASTSS COFF(BX)(AX*1), Y3; \
	VFMADD231PS Y3, C, A1; \
	VBROADCASTSS COFF(DX)(AX*1), Y3; \
	VFMADD231PS Y3, C, A2

// S3STEP: eight k steps (from byte OFF past AX) of the 8 rows at RA, RB.
#define S3STEP(RA, RB, OFF, A0, A1, A2) \
	S3LOAD(RA, RB, OFF); \
	S3TRANS; \
	S3COL(Y5, OFF+0, A0, A1, A2); \
	S3COL(Y6, OFF+4, A0, A1, A2); \
	S3COL(Y0, OFF+8, A0, A1, A2); \
	S3COL(Y8, OFF+12, A0, A1, A2); \
	S3COL(Y1, OFF+16, A0, A1, A2); \
	S3COL(Y4, OFF+20, A0, A1, A2); \
	S3COL(Y2, OFF+24, A0, A1, A2); \
	S3COL(Y7, OFF+28, A0, A1, A2)

// S3PF prefetches the line at AX of the sixteen rows from R15.
#define S3PF \
	LEAQ (R15)(AX*1), R10; \
	PREFETCHT0 (R10); \
	PREFETCHT0 (R10)(R8*1); \
	PREFETCHT0 (R10)(R8*2); \
	PREFETCHT0 (R10)(R11*1); \
	LEAQ (R10)(R8*4), R10; \
	PREFETCHT0 (R10); \
	PREFETCHT0 (R10)(R8*1); \
	PREFETCHT0 (R10)(R8*2); \
	PREFETCHT0 (R10)(R11*1); \
	LEAQ (R10)(R8*4), R10; \
	PREFETCHT0 (R10); \
	PREFETCHT0 (R10)(R8*1); \
	PREFETCHT0 (R10)(R8*2); \
	PREFETCHT0 (R10)(R11*1); \
	LEAQ (R10)(R8*4), R10; \
	PREFETCHT0 (R10); \
	PREFETCHT0 (R10)(R8*1); \
	PREFETCHT0 (R10)(R8*2); \
	PREFETCHT0 (R10)(R11*1)

// func sdpaDot3F32x16(k int, a *float32, lda int, x *float32, ldx int, y *float32, ldy int)
TEXT ·sdpaDot3F32x16(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $2, R8
	MOVQ x+24(FP), DI
	MOVQ ldx+32(FP), BX
	SHLQ $2, BX
	LEAQ (DI)(BX*2), DX
	ADDQ DI, BX
	LEAQ (R8)(R8*2), R11
	LEAQ (SI)(R8*4), R12
	LEAQ (R12)(R8*4), R13
	LEAQ (R13)(R8*4), R14
	LEAQ (R14)(R8*4), R15
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	XORQ AX, AX
	SHRQ $4, CX
	JZ   s3rem8
s3loop16:
	S3PF
	S3STEP(SI, R12, 0, Y9, Y10, Y11)
	S3STEP(R13, R14, 0, Y12, Y13, Y14)
	S3STEP(SI, R12, 32, Y9, Y10, Y11)
	S3STEP(R13, R14, 32, Y12, Y13, Y14)
	ADDQ $64, AX
	DECQ CX
	JNZ  s3loop16
s3rem8:
	MOVQ k+0(FP), CX
	TESTQ $8, CX
	JZ   s3done
	S3STEP(SI, R12, 0, Y9, Y10, Y11)
	S3STEP(R13, R14, 0, Y12, Y13, Y14)
s3done:
	MOVQ y+40(FP), DX
	MOVQ ldy+48(FP), BX
	SHLQ $2, BX
	VMOVUPS Y9, (DX)
	VMOVUPS Y12, 32(DX)
	VMOVUPS Y10, (DX)(BX*1)
	VMOVUPS Y13, 32(DX)(BX*1)
	VMOVUPS Y11, (DX)(BX*2)
	VMOVUPS Y14, 32(DX)(BX*2)
	VZEROUPPER
	RET

// sdpaDot3BF16x16 is sdpaDot3F32x16 with bf16 key rows: each row's eight
// values widened in the register as they are loaded (VPMOVZXWD, VPSLLD
// 16: exact), then the same transposes and FMA chains, so the bits of
// sdpaDot3F32x16 over the widened rows. The key row pointers (SI, R12,
// R13, R14, R15) advance with k instead of sharing AX, which steps the
// f32 queries.

// S3LOADH loads eight bf16 values of rows RA..RA+3 and RB..RB+3 at byte
// OFF into Y0-Y7 as float32.
#define S3LOADH(RA, RB, OFF) \
	LEAQ OFF(RA), R9; \
	LEAQ OFF(RB), R10; \
	VPMOVZXWD (R9), Y0; \
	VPMOVZXWD (R9)(R8*1), Y1; \
	VPMOVZXWD (R9)(R8*2), Y2; \
	VPMOVZXWD (R9)(R11*1), Y3; \
	VPMOVZXWD (R10), Y4; \
	VPMOVZXWD (R10)(R8*1), Y5; \
	VPMOVZXWD (R10)(R8*2), Y6; \
	VPMOVZXWD (R10)(R11*1), Y7; \
	VPSLLD $16, Y0, Y0; \
	VPSLLD $16, Y1, Y1; \
	VPSLLD $16, Y2, Y2; \
	VPSLLD $16, Y3, Y3; \
	VPSLLD $16, Y4, Y4; \
	VPSLLD $16, Y5, Y5; \
	VPSLLD $16, Y6, Y6; \
	VPSLLD $16, Y7, Y7

// S3STEPH: eight k steps of the 8 bf16 rows at RA, RB (from byte KOFF
// past them), the queries from byte QOFF past AX.
#define S3STEPH(RA, RB, KOFF, QOFF, A0, A1, A2) \
	S3LOADH(RA, RB, KOFF); \
	S3TRANS; \
	S3COL(Y5, QOFF+0, A0, A1, A2); \
	S3COL(Y6, QOFF+4, A0, A1, A2); \
	S3COL(Y0, QOFF+8, A0, A1, A2); \
	S3COL(Y8, QOFF+12, A0, A1, A2); \
	S3COL(Y1, QOFF+16, A0, A1, A2); \
	S3COL(Y4, QOFF+20, A0, A1, A2); \
	S3COL(Y2, QOFF+24, A0, A1, A2); \
	S3COL(Y7, QOFF+28, A0, A1, A2)

// S3PFH prefetches the line at R15 of the sixteen rows from R15.
#define S3PFH \
	MOVQ R15, R10; \
	PREFETCHT0 (R10); \
	PREFETCHT0 (R10)(R8*1); \
	PREFETCHT0 (R10)(R8*2); \
	PREFETCHT0 (R10)(R11*1); \
	LEAQ (R10)(R8*4), R10; \
	PREFETCHT0 (R10); \
	PREFETCHT0 (R10)(R8*1); \
	PREFETCHT0 (R10)(R8*2); \
	PREFETCHT0 (R10)(R11*1); \
	LEAQ (R10)(R8*4), R10; \
	PREFETCHT0 (R10); \
	PREFETCHT0 (R10)(R8*1); \
	PREFETCHT0 (R10)(R8*2); \
	PREFETCHT0 (R10)(R11*1); \
	LEAQ (R10)(R8*4), R10; \
	PREFETCHT0 (R10); \
	PREFETCHT0 (R10)(R8*1); \
	PREFETCHT0 (R10)(R8*2); \
	PREFETCHT0 (R10)(R11*1)

// func sdpaDot3BF16x16(k int, a *uint16, lda int, x *float32, ldx int, y *float32, ldy int)
TEXT ·sdpaDot3BF16x16(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $1, R8
	MOVQ x+24(FP), DI
	MOVQ ldx+32(FP), BX
	SHLQ $2, BX
	LEAQ (DI)(BX*2), DX
	ADDQ DI, BX
	LEAQ (R8)(R8*2), R11
	LEAQ (SI)(R8*4), R12
	LEAQ (R12)(R8*4), R13
	LEAQ (R13)(R8*4), R14
	LEAQ (R14)(R8*4), R15
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	XORQ AX, AX
	SHRQ $4, CX
	JZ   h3rem8
h3loop16:
	S3PFH
	S3STEPH(SI, R12, 0, 0, Y9, Y10, Y11)
	S3STEPH(R13, R14, 0, 0, Y12, Y13, Y14)
	S3STEPH(SI, R12, 16, 32, Y9, Y10, Y11)
	S3STEPH(R13, R14, 16, 32, Y12, Y13, Y14)
	ADDQ $64, AX
	ADDQ $32, SI
	ADDQ $32, R12
	ADDQ $32, R13
	ADDQ $32, R14
	ADDQ $32, R15
	DECQ CX
	JNZ  h3loop16
h3rem8:
	MOVQ k+0(FP), CX
	TESTQ $8, CX
	JZ   h3done
	S3STEPH(SI, R12, 0, 0, Y9, Y10, Y11)
	S3STEPH(R13, R14, 0, 0, Y12, Y13, Y14)
h3done:
	MOVQ y+40(FP), DX
	MOVQ ldy+48(FP), BX
	SHLQ $2, BX
	VMOVUPS Y9, (DX)
	VMOVUPS Y12, 32(DX)
	VMOVUPS Y10, (DX)(BX*1)
	VMOVUPS Y13, 32(DX)(BX*1)
	VMOVUPS Y11, (DX)(BX*2)
	VMOVUPS Y14, 32(DX)(BX*2)
	VZEROUPPER
	RET
