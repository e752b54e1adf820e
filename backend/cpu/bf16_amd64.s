//go:build amd64 && !purego

#include "textflag.h"

// AVX2 bfloat16 kernels: widening to float32 (exact: a bf16 is the top
// half of an f32), packing rounded f32 values back to bf16, and the bf16
// matrix-vector kernels (f32 FMA chains over k in order, as the f32
// kernels of gemm_gemv_amd64.s).

// func bf16WidenAVX2(dst *float32, src *uint16, n int)
// Sets dst[i] = float32 of the bf16 src[i] for i < n (a multiple of 8).
TEXT ·bf16WidenAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ widendone
	MOVQ CX, BX
	SHRQ $2, BX
	JZ widen1
widen4:
	VPMOVZXWD 0(SI), Y0
	VPMOVZXWD 16(SI), Y1
	VPMOVZXWD 32(SI), Y2
	VPMOVZXWD 48(SI), Y3
	VPSLLD $16, Y0, Y0
	VPSLLD $16, Y1, Y1
	VPSLLD $16, Y2, Y2
	VPSLLD $16, Y3, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $64, SI
	ADDQ $128, DI
	DECQ BX
	JNZ widen4
widen1:
	ANDQ $3, CX
	JZ widendone
widen1loop:
	VPMOVZXWD 0(SI), Y0
	VPSLLD $16, Y0, Y0
	VMOVUPS Y0, 0(DI)
	ADDQ $16, SI
	ADDQ $32, DI
	DECQ CX
	JNZ widen1loop
widendone:
	VZEROUPPER
	RET

// func bf16PackAVX2(dst *uint16, src *float32, n int)
// Sets dst[i] to the top 16 bits of src[i] for i < n (a multiple of 8):
// the bf16 of a value already rounded to bf16 (roundBF16AVX2).
TEXT ·bf16PackAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ packdone
	MOVQ CX, BX
	SHRQ $1, BX
	JZ pack1
pack2:
	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1
	VPSRLD $16, Y0, Y0
	VPSRLD $16, Y1, Y1
	VPACKUSDW Y1, Y0, Y0
	VPERMQ $0xD8, Y0, Y0
	VMOVDQU Y0, 0(DI)
	ADDQ $64, SI
	ADDQ $32, DI
	DECQ BX
	JNZ pack2
pack1:
	ANDQ $1, CX
	JZ packdone
	VMOVDQU 0(SI), Y0
	VPSRLD $16, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPACKUSDW X1, X0, X0
	VMOVDQU X0, 0(DI)
packdone:
	VZEROUPPER
	RET

// BF16LOAD16(ao) loads eight bf16 k steps (bytes ao..ao+15) of rows
// r (low 128-bit lane) and r+8 (high lane) into Y0-Y7, r < 8: broadcast
// loads and a blend, no shuffle (DOTBLOCK, MBLOCK).
#define BF16LOAD16(ao) \
	VBROADCASTI128 ao(SI), Y0; \
	VBROADCASTI128 ao(R13), Y8; \
	VPBLENDD $0xF0, Y8, Y0, Y0; \
	VBROADCASTI128 ao(SI)(R8*1), Y1; \
	VBROADCASTI128 ao(R13)(R8*1), Y9; \
	VPBLENDD $0xF0, Y9, Y1, Y1; \
	VBROADCASTI128 ao(SI)(R8*2), Y2; \
	VBROADCASTI128 ao(R13)(R8*2), Y10; \
	VPBLENDD $0xF0, Y10, Y2, Y2; \
	VBROADCASTI128 ao(SI)(R11*1), Y3; \
	VBROADCASTI128 ao(R13)(R11*1), Y11; \
	VPBLENDD $0xF0, Y11, Y3, Y3; \
	VBROADCASTI128 ao(R12), Y4; \
	VBROADCASTI128 ao(R10), Y8; \
	VPBLENDD $0xF0, Y8, Y4, Y4; \
	VBROADCASTI128 ao(R12)(R8*1), Y5; \
	VBROADCASTI128 ao(R10)(R8*1), Y9; \
	VPBLENDD $0xF0, Y9, Y5, Y5; \
	VBROADCASTI128 ao(R12)(R8*2), Y6; \
	VBROADCASTI128 ao(R10)(R8*2), Y10; \
	VPBLENDD $0xF0, Y10, Y6, Y6; \
	VBROADCASTI128 ao(R12)(R11*1), Y7; \
	VBROADCASTI128 ao(R10)(R11*1), Y11; \
	VPBLENDD $0xF0, Y11, Y7, Y7

// BF16INTERLEAVE runs the two interleave stages of the 16-bit 8x8
// transposes on rows Y0-Y7 (within each 128-bit lane): each of Y4-Y11
// then holds four rows' values at two k steps (DOTBLOCK, MBLOCK, EBLOCK).
#define BF16INTERLEAVE \
	VPUNPCKLWD Y1, Y0, Y8; \
	VPUNPCKHWD Y1, Y0, Y9; \
	VPUNPCKLWD Y3, Y2, Y10; \
	VPUNPCKHWD Y3, Y2, Y11; \
	VPUNPCKLWD Y5, Y4, Y0; \
	VPUNPCKHWD Y5, Y4, Y1; \
	VPUNPCKLWD Y7, Y6, Y2; \
	VPUNPCKHWD Y7, Y6, Y3; \
	VPUNPCKLDQ Y10, Y8, Y4; \
	VPUNPCKHDQ Y10, Y8, Y5; \
	VPUNPCKLDQ Y11, Y9, Y6; \
	VPUNPCKHDQ Y11, Y9, Y7; \
	VPUNPCKLDQ Y2, Y0, Y8; \
	VPUNPCKHDQ Y2, Y0, Y9; \
	VPUNPCKLDQ Y3, Y1, Y10; \
	VPUNPCKHDQ Y3, Y1, Y11

// BF16WIDENFMA8(XR, xo) finishes a block after BF16INTERLEAVE: for each
// of the eight k steps, the interleave with zero (Y13) widens one step's
// bf16 values to f32 and two FMAs add them times x (broadcast from byte
// xo+4i of XR) into Y14 and Y15, in k order.
#define BF16WIDENFMA8(XR, xo) \
	VBROADCASTSS xo+0(XR), Y12; \
	VPUNPCKLWD Y4, Y13, Y0; \
	VPUNPCKLWD Y8, Y13, Y1; \
	VFMADD231PS Y12, Y0, Y14; \
	VFMADD231PS Y12, Y1, Y15; \
	VBROADCASTSS xo+4(XR), Y12; \
	VPUNPCKHWD Y4, Y13, Y2; \
	VPUNPCKHWD Y8, Y13, Y3; \
	VFMADD231PS Y12, Y2, Y14; \
	VFMADD231PS Y12, Y3, Y15; \
	VBROADCASTSS xo+8(XR), Y12; \
	VPUNPCKLWD Y5, Y13, Y0; \
	VPUNPCKLWD Y9, Y13, Y1; \
	VFMADD231PS Y12, Y0, Y14; \
	VFMADD231PS Y12, Y1, Y15; \
	VBROADCASTSS xo+12(XR), Y12; \
	VPUNPCKHWD Y5, Y13, Y2; \
	VPUNPCKHWD Y9, Y13, Y3; \
	VFMADD231PS Y12, Y2, Y14; \
	VFMADD231PS Y12, Y3, Y15; \
	VBROADCASTSS xo+16(XR), Y12; \
	VPUNPCKLWD Y6, Y13, Y0; \
	VPUNPCKLWD Y10, Y13, Y1; \
	VFMADD231PS Y12, Y0, Y14; \
	VFMADD231PS Y12, Y1, Y15; \
	VBROADCASTSS xo+20(XR), Y12; \
	VPUNPCKHWD Y6, Y13, Y2; \
	VPUNPCKHWD Y10, Y13, Y3; \
	VFMADD231PS Y12, Y2, Y14; \
	VFMADD231PS Y12, Y3, Y15; \
	VBROADCASTSS xo+24(XR), Y12; \
	VPUNPCKLWD Y7, Y13, Y0; \
	VPUNPCKLWD Y11, Y13, Y1; \
	VFMADD231PS Y12, Y0, Y14; \
	VFMADD231PS Y12, Y1, Y15; \
	VBROADCASTSS xo+28(XR), Y12; \
	VPUNPCKHWD Y7, Y13, Y2; \
	VPUNPCKHWD Y11, Y13, Y3; \
	VFMADD231PS Y12, Y2, Y14; \
	VFMADD231PS Y12, Y3, Y15

// DOTBLOCK runs eight k steps of gemvDotBF16x16 at byte offsets ao of
// the rows and xo of x: rows r and r+8 are loaded into the two 128-bit
// lanes (broadcast loads and a blend, no shuffle), two interleave stages
// leave in each register four rows' values at two k steps, and the
// interleave with zero that widens bf16 to f32 picks one k step: rows 0-3
// and 8-11 go to Y14, rows 4-7 and 12-15 to Y15.
#define DOTBLOCK(ao, xo) \
	BF16LOAD16(ao); \
	BF16INTERLEAVE; \
	BF16WIDENFMA8(DI, xo)

// MBLOCK is DOTBLOCK with the high lane's rows 32 k steps behind the low
// lane's: their multiplier x[p-32] comes from R9 (blended into the upper
// half of the broadcast x[p]).
#define MBLOCK(ao, xo) \
	BF16LOAD16(ao); \
	BF16INTERLEAVE; \
	VBROADCASTSS xo+0(DI), Y12; \
	VBROADCASTSS xo+0(R9), Y2; \
	VBLENDPS $0xF0, Y2, Y12, Y12; \
	VPUNPCKLWD Y4, Y13, Y0; \
	VPUNPCKLWD Y8, Y13, Y1; \
	VFMADD231PS Y12, Y0, Y14; \
	VFMADD231PS Y12, Y1, Y15; \
	VBROADCASTSS xo+4(DI), Y12; \
	VBROADCASTSS xo+4(R9), Y0; \
	VBLENDPS $0xF0, Y0, Y12, Y12; \
	VPUNPCKHWD Y4, Y13, Y2; \
	VPUNPCKHWD Y8, Y13, Y3; \
	VFMADD231PS Y12, Y2, Y14; \
	VFMADD231PS Y12, Y3, Y15; \
	VBROADCASTSS xo+8(DI), Y12; \
	VBROADCASTSS xo+8(R9), Y2; \
	VBLENDPS $0xF0, Y2, Y12, Y12; \
	VPUNPCKLWD Y5, Y13, Y0; \
	VPUNPCKLWD Y9, Y13, Y1; \
	VFMADD231PS Y12, Y0, Y14; \
	VFMADD231PS Y12, Y1, Y15; \
	VBROADCASTSS xo+12(DI), Y12; \
	VBROADCASTSS xo+12(R9), Y0; \
	VBLENDPS $0xF0, Y0, Y12, Y12; \
	VPUNPCKHWD Y5, Y13, Y2; \
	VPUNPCKHWD Y9, Y13, Y3; \
	VFMADD231PS Y12, Y2, Y14; \
	VFMADD231PS Y12, Y3, Y15; \
	VBROADCASTSS xo+16(DI), Y12; \
	VBROADCASTSS xo+16(R9), Y2; \
	VBLENDPS $0xF0, Y2, Y12, Y12; \
	VPUNPCKLWD Y6, Y13, Y0; \
	VPUNPCKLWD Y10, Y13, Y1; \
	VFMADD231PS Y12, Y0, Y14; \
	VFMADD231PS Y12, Y1, Y15; \
	VBROADCASTSS xo+20(DI), Y12; \
	VBROADCASTSS xo+20(R9), Y0; \
	VBLENDPS $0xF0, Y0, Y12, Y12; \
	VPUNPCKHWD Y6, Y13, Y2; \
	VPUNPCKHWD Y10, Y13, Y3; \
	VFMADD231PS Y12, Y2, Y14; \
	VFMADD231PS Y12, Y3, Y15; \
	VBROADCASTSS xo+24(DI), Y12; \
	VBROADCASTSS xo+24(R9), Y2; \
	VBLENDPS $0xF0, Y2, Y12, Y12; \
	VPUNPCKLWD Y7, Y13, Y0; \
	VPUNPCKLWD Y11, Y13, Y1; \
	VFMADD231PS Y12, Y0, Y14; \
	VFMADD231PS Y12, Y1, Y15; \
	VBROADCASTSS xo+28(DI), Y12; \
	VBROADCASTSS xo+28(R9), Y0; \
	VBLENDPS $0xF0, Y0, Y12, Y12; \
	VPUNPCKHWD Y7, Y13, Y2; \
	VPUNPCKHWD Y11, Y13, Y3; \
	VFMADD231PS Y12, Y2, Y14; \
	VFMADD231PS Y12, Y3, Y15;

// EBLOCK runs eight k steps of the high lane's rows alone (loaded into
// both lanes; the low lanes' results are discarded), multiplier x from R9.
#define EBLOCK(ao, xo) \
	VBROADCASTI128 ao(R13), Y0; \
	VBROADCASTI128 ao(R13)(R8*1), Y1; \
	VBROADCASTI128 ao(R13)(R8*2), Y2; \
	VBROADCASTI128 ao(R13)(R11*1), Y3; \
	VBROADCASTI128 ao(R10), Y4; \
	VBROADCASTI128 ao(R10)(R8*1), Y5; \
	VBROADCASTI128 ao(R10)(R8*2), Y6; \
	VBROADCASTI128 ao(R10)(R11*1), Y7; \
	BF16INTERLEAVE; \
	BF16WIDENFMA8(R9, xo)

// func gemvDotBF16x16(k int, a *uint16, lda int, x, y *float32)
// Sets y[r] (r < 16) to the FMA chain over p < k (a multiple of 8), in
// order from zero, of float32(a[r*lda+p])*x[p]. Each step (DOTBLOCK) loads
// eight k values of rows r (low 128-bit lane) and r+8 (high lane),
// transposes the two 8x8 blocks of 16-bit values in their lanes, and
// widens each k step's words into two f32 vectors: rows 0-3 and 8-11
// (Y14), rows 4-7 and 12-15 (Y15), two chains in flight. The main loop takes 32 k steps, a
// whole cache line of each row: rows a multiple of 4 KiB apart share L1
// sets, and lines kept across iterations would be evicted before reuse.
TEXT ·gemvDotBF16x16(SB), NOSPLIT, $0-40
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $1, R8
	MOVQ x+24(FP), DI
	LEAQ (R8)(R8*2), R11
	LEAQ (SI)(R8*4), R12
	LEAQ (R12)(R8*4), R13
	LEAQ (R13)(R8*4), R10
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15
	VPXOR Y13, Y13, Y13
dotloop32:
	CMPQ CX, $32
	JLT dotloop8
	DOTBLOCK(0, 0)
	DOTBLOCK(16, 32)
	DOTBLOCK(32, 64)
	DOTBLOCK(48, 96)
	ADDQ $64, SI
	ADDQ $64, R12
	ADDQ $64, R13
	ADDQ $64, R10
	ADDQ $128, DI
	SUBQ $32, CX
	JMP dotloop32
dotloop8:
	CMPQ CX, $8
	JLT dotdone
	DOTBLOCK(0, 0)
	ADDQ $16, SI
	ADDQ $16, R12
	ADDQ $16, R13
	ADDQ $16, R10
	ADDQ $32, DI
	SUBQ $8, CX
	JMP dotloop8
dotdone:
	MOVQ y+32(FP), DX
	VPERM2F128 $0x20, Y15, Y14, Y0
	VPERM2F128 $0x31, Y15, Y14, Y1
	VMOVUPS Y0, 0(DX)
	VMOVUPS Y1, 32(DX)
	VZEROUPPER
	RET

// func gemvDotBF16x16s(k int, a *uint16, lda int, x, y *float32)
// gemvDotBF16x16 for k >= 32 with the rows of the high lane (8-15) 32 k
// steps (a cache line) behind those of the low lane (0-7): rows a
// multiple of 4 KiB apart then fall into twice as many L1 sets, which
// halves the conflict misses of such strides (k = 3072: 1.5x faster in
// L2). The low lane runs its first 32 steps alone (DOTBLOCK, the high
// lanes reset to zero after), the high lane its last 32 (EBLOCK, the low
// lanes restored after): every lane is still its row's chain in k order.
TEXT ·gemvDotBF16x16s(SB), NOSPLIT, $0-40
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $1, R8
	MOVQ x+24(FP), DI
	MOVQ y+32(FP), DX
	LEAQ (R8)(R8*2), R11
	LEAQ (SI)(R8*4), R12
	LEAQ (R12)(R8*4), R13
	LEAQ (R13)(R8*4), R10
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15
	VPXOR Y13, Y13, Y13
	DOTBLOCK(0, 0)
	DOTBLOCK(16, 32)
	DOTBLOCK(32, 64)
	DOTBLOCK(48, 96)
	VPBLENDD $0xF0, Y13, Y14, Y14
	VPBLENDD $0xF0, Y13, Y15, Y15
	ADDQ $64, SI
	ADDQ $64, R12
	MOVQ DI, R9
	ADDQ $128, DI
	SUBQ $32, CX
skewloop32:
	CMPQ CX, $32
	JLT skewloop8
	MBLOCK(0, 0)
	MBLOCK(16, 32)
	MBLOCK(32, 64)
	MBLOCK(48, 96)
	ADDQ $64, SI
	ADDQ $64, R12
	ADDQ $64, R13
	ADDQ $64, R10
	ADDQ $128, DI
	ADDQ $128, R9
	SUBQ $32, CX
	JMP skewloop32
skewloop8:
	CMPQ CX, $8
	JLT skewtail
	MBLOCK(0, 0)
	ADDQ $16, SI
	ADDQ $16, R12
	ADDQ $16, R13
	ADDQ $16, R10
	ADDQ $32, DI
	ADDQ $32, R9
	SUBQ $8, CX
	JMP skewloop8
skewtail:
	VMOVUPS Y14, 0(DX)
	VMOVUPS Y15, 32(DX)
	EBLOCK(0, 0)
	EBLOCK(16, 32)
	EBLOCK(32, 64)
	EBLOCK(48, 96)
	VPBLENDD $0x0F, 0(DX), Y14, Y14
	VPBLENDD $0x0F, 32(DX), Y15, Y15
	VPERM2F128 $0x20, Y15, Y14, Y0
	VPERM2F128 $0x31, Y15, Y14, Y1
	VMOVUPS Y0, 0(DX)
	VMOVUPS Y1, 32(DX)
	VZEROUPPER
	RET

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
