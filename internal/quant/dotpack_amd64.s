//go:build amd64 && !purego

#include "textflag.h"

// AVX512_VNNI kernels (level avx512bf16) on the interleaved r16 layout
// (pack.go): one group of 16 weight rows against one activation row, one
// ZMM lane per row. Each chunk of 64 bytes holds four quant bytes of every
// row; VPDPBUSD multiplies them by the four activation quants they meet,
// broadcast from memory, so each lane sums its own row's block with no
// horizontal reduction, and the block's float32 steps (ggml's generic
// order) run on the 16 rows' scales as one vector. The results are the bits
// of the row-major kernels.
//
// Registers: SI the group's block column, CX blocks left, DI the
// activation quants, R8 their scales, R9 aux (Q4_1: s; Q4_0, Q8_0: the
// blocks' quant sums), Z13 the 16 sums, Z15 the nibble mask (Q8_0: the
// 0x80 bias), Z4..Z7 integer partial sums. Each block column is prefetched
// 16 columns ahead (SmolLM2 Q4_1 decode, weights from DRAM: 5-10% more
// tokens/s than 4 columns ahead, about the same at 64).

#define SETUP16 \
	MOVQ w+0(FP), SI; \
	MOVQ nb+8(FP), CX; \
	MOVQ qa+16(FP), DI; \
	MOVQ da+24(FP), R8; \
	MOVQ aux+32(FP), R9; \
	VPXORD Z13, Z13, Z13

#define FINISH16 \
	MOVQ out+40(FP), R10; \
	VMOVUPS Z13, (R10); \
	VZEROUPPER; \
	RET

// ARGS16x4 and OUT16x4: the 16x4 GEMM kernels' arguments (w, nb, qa,
// lda, da, aux into SI, CX, DI, BX, R8, R9; out, ldo into AX, BX). Defined
// before the first TEXT, as SETUP16 is, for vet's frame check.
#define ARGS16x4 \
	MOVQ w+0(FP), SI; \
	MOVQ nb+8(FP), CX; \
	MOVQ qa+16(FP), DI; \
	MOVQ lda+24(FP), BX; \
	MOVQ da+32(FP), R8; \
	MOVQ aux+40(FP), R9

#define OUT16x4 \
	MOVQ out+48(FP), AX; \
	MOVQ ldo+56(FP), BX

// NIB2(off, qoff, A, B): the 64-byte chunk at off(SI): its low nibbles
// times activation quants qoff..qoff+3 into A, its high nibbles times
// qoff+16..qoff+19 into B.
#define NIB2(off, qoff, A, B) \
	VMOVDQU32 off(SI), Z0; \
	VPSRLW    $4, Z0, Z1; \
	VPANDD    Z15, Z0, Z0; \
	VPANDD    Z15, Z1, Z1; \
	VPDPBUSD.BCST qoff(DI), Z0, A; \
	VPDPBUSD.BCST (qoff+16)(DI), Z1, B

// NIBSUM(head): Z4 = the 16 rows' Σ level·y over a 4-bit block whose
// chunks start at head(SI).
#define NIBSUM(head) \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPXORD Z6, Z6, Z6; \
	VPXORD Z7, Z7, Z7; \
	NIB2(head, 0, Z4, Z5); \
	NIB2(head+64, 4, Z6, Z7); \
	NIB2(head+128, 8, Z4, Z5); \
	NIB2(head+192, 12, Z6, Z7); \
	VPADDD Z5, Z4, Z4; \
	VPADDD Z7, Z6, Z6; \
	VPADDD Z6, Z4, Z4

#define NEXT16(size) \
	ADDQ $(16*size), SI; \
	ADDQ $32, DI; \
	ADDQ $4, R8; \
	ADDQ $4, R9

// func dot16Q4_0VNNI(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
TEXT ·dot16Q4_0VNNI(SB), NOSPLIT, $0-48
	SETUP16
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	TESTQ CX, CX
	JZ    p40done

p40loop:
	PREFETCHT0 4608(SI)
	PREFETCHT0 4672(SI)
	PREFETCHT0 4736(SI)
	PREFETCHT0 4800(SI)
	PREFETCHT0 4864(SI)
	NIBSUM(32)
	// Σ(q-8)·y = Σq·y - 8·Σy
	VPBROADCASTD (R9), Z2
	VPSLLD       $3, Z2, Z2
	VPSUBD       Z2, Z4, Z4
	VCVTDQ2PS    Z4, Z4
	VCVTPH2PS    (SI), Z2
	VMULPS       Z2, Z4, Z4
	VBROADCASTSS (R8), Z2
	VMULPS       Z2, Z4, Z4
	VADDPS       Z4, Z13, Z13
	NEXT16(18)
	DECQ CX
	JNZ  p40loop

p40done:
	FINISH16

// func dot16Q4_1VNNI(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
TEXT ·dot16Q4_1VNNI(SB), NOSPLIT, $0-48
	SETUP16
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	TESTQ CX, CX
	JZ    p41done

p41loop:
	PREFETCHT0 5120(SI)
	PREFETCHT0 5184(SI)
	PREFETCHT0 5248(SI)
	PREFETCHT0 5312(SI)
	PREFETCHT0 5376(SI)
	NIBSUM(64)
	VCVTDQ2PS    Z4, Z4
	VCVTPH2PS    (SI), Z2
	VBROADCASTSS (R8), Z3
	VMULPS       Z3, Z2, Z2
	VMULPS       Z4, Z2, Z4
	VCVTPH2PS    32(SI), Z2
	VBROADCASTSS (R9), Z3
	VMULPS       Z3, Z2, Z2
	VADDPS       Z2, Z4, Z4
	VADDPS       Z4, Z13, Z13
	NEXT16(20)
	DECQ CX
	JNZ  p41loop

p41done:
	FINISH16

// Q8C(off, qoff, A): chunk off(SI) of signed weights, offset by 128 (XOR
// 0x80) to meet VPDPBUSD's unsigned operand, times quants qoff..qoff+3.
#define Q8C(off, qoff, A) \
	VPXORD off(SI), Z15, Z0; \
	VPDPBUSD.BCST qoff(DI), Z0, A

// func dot16Q8_0VNNI(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
TEXT ·dot16Q8_0VNNI(SB), NOSPLIT, $0-48
	SETUP16
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z15
	TESTQ CX, CX
	JZ    p80done

p80loop:
	PREFETCHT0 8704(SI)
	PREFETCHT0 8768(SI)
	PREFETCHT0 8832(SI)
	PREFETCHT0 8896(SI)
	PREFETCHT0 8960(SI)
	PREFETCHT0 9024(SI)
	PREFETCHT0 9088(SI)
	PREFETCHT0 9152(SI)
	PREFETCHT0 9216(SI)
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	Q8C(32, 0, Z4)
	Q8C(96, 4, Z5)
	Q8C(160, 8, Z6)
	Q8C(224, 12, Z7)
	Q8C(288, 16, Z4)
	Q8C(352, 20, Z5)
	Q8C(416, 24, Z6)
	Q8C(480, 28, Z7)
	VPADDD Z5, Z4, Z4
	VPADDD Z7, Z6, Z6
	VPADDD Z6, Z4, Z4
	// Σ(w+128)·y - 128·Σy
	VPBROADCASTD (R9), Z2
	VPSLLD       $7, Z2, Z2
	VPSUBD       Z2, Z4, Z4
	VCVTDQ2PS    Z4, Z4
	VCVTPH2PS    (SI), Z2
	VBROADCASTSS (R8), Z3
	VMULPS       Z3, Z2, Z2
	VMULPS       Z2, Z4, Z4
	VADDPS       Z4, Z13, Z13
	NEXT16(34)
	DECQ CX
	JNZ  p80loop

p80done:
	FINISH16

// AVX2 kernels on the r16 layout: the same group of 16 rows as two halves
// of 8 lanes (rows 0-7 and 8-15 of each 64-byte chunk). VPMADDUBSW
// multiplies a chunk half's quant bytes (unsigned) by the four activation
// quants broadcast to every dword and adds pairs into int16 lanes;
// VPMADDWD by ones then gives each row's int32 sum. For the 4-bit types the
// int16 lanes take all 8 chunk halves of a block before that (at most
// 8·2·15·127 = 30480, no saturation). The float32 steps are the VNNI
// kernels', per half, so every level gives the same bits. (Q8_0 has no
// AVX2 r16 kernel: one with VPABSB/VPSIGNB ran 10% slower than the
// row-major AVX2 kernel on the Xeon, so its weights stay row-major there.)
//
// Registers: as the VNNI kernels; Y15 the nibble mask, Y14 int16 ones,
// Y12 and Y13 the two halves' sums, Y10 and Y11 their integer sums.

#define SETUPY \
	MOVQ w+0(FP), SI; \
	MOVQ nb+8(FP), CX; \
	MOVQ qa+16(FP), DI; \
	MOVQ da+24(FP), R8; \
	MOVQ aux+32(FP), R9; \
	MOVL $0x0f0f0f0f, AX; \
	MOVQ AX, X15; \
	VPBROADCASTD X15, Y15; \
	MOVL $0x00010001, AX; \
	MOVQ AX, X14; \
	VPBROADCASTD X14, Y14; \
	VXORPS Y12, Y12, Y12; \
	VXORPS Y13, Y13, Y13

#define FINISHY \
	MOVQ out+40(FP), R10; \
	VMOVUPS Y12, (R10); \
	VMOVUPS Y13, 32(R10); \
	VZEROUPPER; \
	RET

// NIBY(off, qoff): chunk off(SI)'s two halves, low nibbles times
// activation quants qoff.., high nibbles times qoff+16.., added into the
// int16 lanes of Y10 (rows 0-7) and Y11 (rows 8-15).
#define NIBY(off, qoff) \
	VPBROADCASTD qoff(DI), Y2; \
	VPBROADCASTD (qoff+16)(DI), Y3; \
	VMOVDQU off(SI), Y0; \
	VPSRLW $4, Y0, Y1; \
	VPAND Y15, Y0, Y0; \
	VPAND Y15, Y1, Y1; \
	VPMADDUBSW Y2, Y0, Y0; \
	VPMADDUBSW Y3, Y1, Y1; \
	VPADDW Y0, Y10, Y10; \
	VPADDW Y1, Y10, Y10; \
	VMOVDQU (off+32)(SI), Y4; \
	VPSRLW $4, Y4, Y5; \
	VPAND Y15, Y4, Y4; \
	VPAND Y15, Y5, Y5; \
	VPMADDUBSW Y2, Y4, Y4; \
	VPMADDUBSW Y3, Y5, Y5; \
	VPADDW Y4, Y11, Y11; \
	VPADDW Y5, Y11, Y11

// NIBSUMY(head): Y10, Y11 = the two halves' int32 Σ level·y of a 4-bit
// block whose chunks start at head(SI).
#define NIBSUMY(head) \
	VPXOR Y10, Y10, Y10; \
	VPXOR Y11, Y11, Y11; \
	NIBY(head, 0); \
	NIBY(head+64, 4); \
	NIBY(head+128, 8); \
	NIBY(head+192, 12); \
	VPMADDWD Y14, Y10, Y10; \
	VPMADDWD Y14, Y11, Y11

// func dot16Q4_0AVX2(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
TEXT ·dot16Q4_0AVX2(SB), NOSPLIT, $0-48
	SETUPY
	TESTQ CX, CX
	JZ    y40done

y40loop:
	PREFETCHT0 4608(SI)
	PREFETCHT0 4672(SI)
	PREFETCHT0 4736(SI)
	PREFETCHT0 4800(SI)
	PREFETCHT0 4864(SI)
	NIBSUMY(32)
	VPBROADCASTD (R9), Y2
	VPSLLD       $3, Y2, Y2
	VPSUBD       Y2, Y10, Y10
	VPSUBD       Y2, Y11, Y11
	VCVTDQ2PS    Y10, Y10
	VCVTDQ2PS    Y11, Y11
	VCVTPH2PS    (SI), Y0
	VCVTPH2PS    16(SI), Y1
	VMULPS       Y0, Y10, Y10
	VMULPS       Y1, Y11, Y11
	VBROADCASTSS (R8), Y2
	VMULPS       Y2, Y10, Y10
	VMULPS       Y2, Y11, Y11
	VADDPS       Y10, Y12, Y12
	VADDPS       Y11, Y13, Y13
	NEXT16(18)
	DECQ CX
	JNZ  y40loop

y40done:
	FINISHY

// func dot16Q4_1AVX2(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
TEXT ·dot16Q4_1AVX2(SB), NOSPLIT, $0-48
	SETUPY
	TESTQ CX, CX
	JZ    y41done

y41loop:
	PREFETCHT0 5120(SI)
	PREFETCHT0 5184(SI)
	PREFETCHT0 5248(SI)
	PREFETCHT0 5312(SI)
	PREFETCHT0 5376(SI)
	NIBSUMY(64)
	VCVTDQ2PS    Y10, Y10
	VCVTDQ2PS    Y11, Y11
	VBROADCASTSS (R8), Y2
	VCVTPH2PS    (SI), Y0
	VCVTPH2PS    16(SI), Y1
	VMULPS       Y2, Y0, Y0
	VMULPS       Y2, Y1, Y1
	VMULPS       Y10, Y0, Y10
	VMULPS       Y11, Y1, Y11
	VBROADCASTSS (R9), Y2
	VCVTPH2PS    32(SI), Y0
	VCVTPH2PS    48(SI), Y1
	VMULPS       Y2, Y0, Y0
	VMULPS       Y2, Y1, Y1
	VADDPS       Y0, Y10, Y10
	VADDPS       Y1, Y11, Y11
	VADDPS       Y10, Y12, Y12
	VADDPS       Y11, Y13, Y13
	NEXT16(20)
	DECQ CX
	JNZ  y41loop

y41done:
	FINISHY

// Q5_0 and Q5_1 on the r16 layout: the block's qh chunk (Z8, bits moved by
// Pack so that byte i, bit c flags the level that byte i of quant chunk c
// meets) gives each nibble chunk its fifth bits with one VPTESTMB against
// the byte mask 1<<c (Z16..Z23), and VPADDB adds 16 under it (Z14).

// NIB5(off, qoff, A, B, mlo, mhi): NIB2 with the fifth bits of the low
// nibbles under mlo and of the high ones under mhi.
#define NIB5(off, qoff, A, B, mlo, mhi) \
	VMOVDQU32 off(SI), Z0; \
	VPSRLW    $4, Z0, Z1; \
	VPANDD    Z15, Z0, Z0; \
	VPANDD    Z15, Z1, Z1; \
	VPTESTMB  mlo, Z8, K1; \
	VPADDB    Z14, Z0, K1, Z0; \
	VPTESTMB  mhi, Z8, K2; \
	VPADDB    Z14, Z1, K2, Z1; \
	VPDPBUSD.BCST qoff(DI), Z0, A; \
	VPDPBUSD.BCST (qoff+16)(DI), Z1, B

// NIB5SUM(head): Z4 = the 16 rows' Σ level·y over a 5-bit block whose qh
// chunk is at head(SI) and quant chunks follow it.
#define NIB5SUM(head) \
	VMOVDQU32 head(SI), Z8; \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPXORD Z6, Z6, Z6; \
	VPXORD Z7, Z7, Z7; \
	NIB5(head+64, 0, Z4, Z5, Z16, Z20); \
	NIB5(head+128, 4, Z6, Z7, Z17, Z21); \
	NIB5(head+192, 8, Z4, Z5, Z18, Z22); \
	NIB5(head+256, 12, Z6, Z7, Z19, Z23); \
	VPADDD Z5, Z4, Z4; \
	VPADDD Z7, Z6, Z6; \
	VPADDD Z6, Z4, Z4

// SETUP5: the nibble mask, 16 as bytes and the eight bit masks.
#define SETUP5 \
	MOVL $0x0f0f0f0f, AX; \
	VPBROADCASTD AX, Z15; \
	MOVL $0x10101010, AX; \
	VPBROADCASTD AX, Z14; \
	MOVL $0x01010101, AX; \
	VPBROADCASTD AX, Z16; \
	VPADDB Z16, Z16, Z17; \
	VPADDB Z17, Z17, Z18; \
	VPADDB Z18, Z18, Z19; \
	VPADDB Z19, Z19, Z20; \
	VPADDB Z20, Z20, Z21; \
	VPADDB Z21, Z21, Z22; \
	VPADDB Z22, Z22, Z23

// func dot16Q5_0VNNI(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
TEXT ·dot16Q5_0VNNI(SB), NOSPLIT, $0-48
	SETUP16
	SETUP5
	TESTQ CX, CX
	JZ    p50done

p50loop:
	PREFETCHT0 5632(SI)
	PREFETCHT0 5696(SI)
	PREFETCHT0 5760(SI)
	PREFETCHT0 5824(SI)
	PREFETCHT0 5888(SI)
	PREFETCHT0 5952(SI)
	NIB5SUM(32)
	// Σ(q-16)·y = Σq·y - 16·Σy
	VPBROADCASTD (R9), Z2
	VPSLLD       $4, Z2, Z2
	VPSUBD       Z2, Z4, Z4
	VCVTDQ2PS    Z4, Z4
	// (dx·dy)·Σ, ggml's order for Q5_0
	VCVTPH2PS    (SI), Z2
	VBROADCASTSS (R8), Z3
	VMULPS       Z3, Z2, Z2
	VMULPS       Z4, Z2, Z4
	VADDPS       Z4, Z13, Z13
	NEXT16(22)
	DECQ CX
	JNZ  p50loop

p50done:
	FINISH16

// func dot16Q5_1VNNI(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
TEXT ·dot16Q5_1VNNI(SB), NOSPLIT, $0-48
	SETUP16
	SETUP5
	TESTQ CX, CX
	JZ    p51done

p51loop:
	PREFETCHT0 6144(SI)
	PREFETCHT0 6208(SI)
	PREFETCHT0 6272(SI)
	PREFETCHT0 6336(SI)
	PREFETCHT0 6400(SI)
	PREFETCHT0 6464(SI)
	NIB5SUM(64)
	VCVTDQ2PS    Z4, Z4
	VCVTPH2PS    (SI), Z2
	VBROADCASTSS (R8), Z3
	VMULPS       Z3, Z2, Z2
	VMULPS       Z4, Z2, Z4
	VCVTPH2PS    32(SI), Z2
	VBROADCASTSS (R9), Z3
	VMULPS       Z3, Z2, Z2
	VADDPS       Z2, Z4, Z4
	VADDPS       Z4, Z13, Z13
	NEXT16(24)
	DECQ CX
	JNZ  p51loop

p51done:
	FINISH16

// Sixteen r16 weight rows against four activation rows (GEMM): each quant
// chunk is unpacked once (nibbles, Q5's fifth bits, Q8_0's bias) and meets
// the four activation rows' broadcast quants. Activation row a's quants are
// at DI + a·BX (DI, R11, R12, R13), its scales at R8 + a·R10 (R10 = 4·nb)
// and its aux (Q5_0: quant sums; Q5_1: s) at R9 + a·R10; integer sums
// Z24..Z31 (row a: low nibbles Z24+2a, high Z25+2a), float sums Z9..Z12;
// Z7 the block's d as float32, Z13 Q5_1's m.

// CH5x4(off, qoff, mlo, mhi): one quant chunk against the four rows.
#define CH5x4(off, qoff, mlo, mhi) \
	VMOVDQU32 off(SI), Z0; \
	VPSRLW    $4, Z0, Z1; \
	VPANDD    Z15, Z0, Z0; \
	VPANDD    Z15, Z1, Z1; \
	VPTESTMB  mlo, Z8, K1; \
	VPADDB    Z14, Z0, K1, Z0; \
	VPTESTMB  mhi, Z8, K2; \
	VPADDB    Z14, Z1, K2, Z1; \
	VPDPBUSD.BCST qoff(DI), Z0, Z24; \
	VPDPBUSD.BCST (qoff+16)(DI), Z1, Z25; \
	VPDPBUSD.BCST qoff(R11), Z0, Z26; \
	VPDPBUSD.BCST (qoff+16)(R11), Z1, Z27; \
	VPDPBUSD.BCST qoff(R12), Z0, Z28; \
	VPDPBUSD.BCST (qoff+16)(R12), Z1, Z29; \
	VPDPBUSD.BCST qoff(R13), Z0, Z30; \
	VPDPBUSD.BCST (qoff+16)(R13), Z1, Z31

// SUM5x4(head): Z24, Z26, Z28, Z30 = the four rows' Σ level·y over the
// block whose qh chunk is at head(SI).
#define SUM5x4(head) \
	VMOVDQU32 head(SI), Z8; \
	VPXORD Z24, Z24, Z24; \
	VPXORD Z25, Z25, Z25; \
	VPXORD Z26, Z26, Z26; \
	VPXORD Z27, Z27, Z27; \
	VPXORD Z28, Z28, Z28; \
	VPXORD Z29, Z29, Z29; \
	VPXORD Z30, Z30, Z30; \
	VPXORD Z31, Z31, Z31; \
	CH5x4(head+64, 0, Z16, Z20); \
	CH5x4(head+128, 4, Z17, Z21); \
	CH5x4(head+192, 8, Z18, Z22); \
	CH5x4(head+256, 12, Z19, Z23); \
	VPADDD Z25, Z24, Z24; \
	VPADDD Z27, Z26, Z26; \
	VPADDD Z29, Z28, Z28; \
	VPADDD Z31, Z30, Z30

// F50(acc, dmem, amem, sum): Q5_0's float steps of one activation row.
#define F50(acc, dmem, amem, sum) \
	VPBROADCASTD amem, Z2; \
	VPSLLD       $4, Z2, Z2; \
	VPSUBD       Z2, acc, acc; \
	VCVTDQ2PS    acc, acc; \
	VBROADCASTSS dmem, Z2; \
	VMULPS       Z2, Z7, Z2; \
	VMULPS       acc, Z2, acc; \
	VADDPS       acc, sum, sum

// F51(acc, dmem, amem, sum): Q5_1's float steps of one activation row.
#define F51(acc, dmem, amem, sum) \
	VCVTDQ2PS    acc, acc; \
	VBROADCASTSS dmem, Z2; \
	VMULPS       Z2, Z7, Z2; \
	VMULPS       acc, Z2, acc; \
	VBROADCASTSS amem, Z2; \
	VMULPS       Z2, Z13, Z2; \
	VADDPS       Z2, acc, acc; \
	VADDPS       acc, sum, sum

// SETUP5x4: after ARGS16x4 (the GEMM kernels of every r16 type use it).
#define SETUP5x4 \
	LEAQ (DI)(BX*1), R11; \
	LEAQ (DI)(BX*2), R12; \
	LEAQ (R12)(BX*1), R13; \
	MOVQ CX, R10; \
	SHLQ $2, R10; \
	LEAQ (R8)(R10*2), R14; \
	LEAQ (R9)(R10*2), DX; \
	VPXORD Z9, Z9, Z9; \
	VPXORD Z10, Z10, Z10; \
	VPXORD Z11, Z11, Z11; \
	VPXORD Z12, Z12, Z12

#define NEXT5x4(size) \
	ADDQ $(16*size), SI; \
	ADDQ $32, DI; \
	ADDQ $32, R11; \
	ADDQ $32, R12; \
	ADDQ $32, R13; \
	ADDQ $4, R8; \
	ADDQ $4, R14; \
	ADDQ $4, R9; \
	ADDQ $4, DX

// FINISH5x4: after OUT16x4.
#define FINISH5x4 \
	SHLQ $2, BX; \
	VMOVUPS Z9, (AX); \
	VMOVUPS Z10, (AX)(BX*1); \
	LEAQ (AX)(BX*2), AX; \
	VMOVUPS Z11, (AX); \
	VMOVUPS Z12, (AX)(BX*1); \
	VZEROUPPER; \
	RET

// func gemm16x4Q5_0VNNI(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)
TEXT ·gemm16x4Q5_0VNNI(SB), NOSPLIT, $0-64
	ARGS16x4
	SETUP5x4
	SETUP5
	TESTQ CX, CX
	JZ    g50done

g50loop:
	SUM5x4(32)
	VCVTPH2PS (SI), Z7
	F50(Z24, (R8), (R9), Z9)
	F50(Z26, (R8)(R10*1), (R9)(R10*1), Z10)
	F50(Z28, (R14), (DX), Z11)
	F50(Z30, (R14)(R10*1), (DX)(R10*1), Z12)
	NEXT5x4(22)
	DECQ CX
	JNZ  g50loop

g50done:
	OUT16x4
	FINISH5x4

// func gemm16x4Q5_1VNNI(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)
TEXT ·gemm16x4Q5_1VNNI(SB), NOSPLIT, $0-64
	ARGS16x4
	SETUP5x4
	SETUP5
	TESTQ CX, CX
	JZ    g51done

g51loop:
	SUM5x4(64)
	VCVTPH2PS (SI), Z7
	VCVTPH2PS 32(SI), Z13
	F51(Z24, (R8), (R9), Z9)
	F51(Z26, (R8)(R10*1), (R9)(R10*1), Z10)
	F51(Z28, (R14), (DX), Z11)
	F51(Z30, (R14)(R10*1), (DX)(R10*1), Z12)
	NEXT5x4(24)
	DECQ CX
	JNZ  g51loop

g51done:
	OUT16x4
	FINISH5x4

// CH4x4(off, qoff): one 4-bit quant chunk against the four rows.
#define CH4x4(off, qoff) \
	VMOVDQU32 off(SI), Z0; \
	VPSRLW    $4, Z0, Z1; \
	VPANDD    Z15, Z0, Z0; \
	VPANDD    Z15, Z1, Z1; \
	VPDPBUSD.BCST qoff(DI), Z0, Z24; \
	VPDPBUSD.BCST (qoff+16)(DI), Z1, Z25; \
	VPDPBUSD.BCST qoff(R11), Z0, Z26; \
	VPDPBUSD.BCST (qoff+16)(R11), Z1, Z27; \
	VPDPBUSD.BCST qoff(R12), Z0, Z28; \
	VPDPBUSD.BCST (qoff+16)(R12), Z1, Z29; \
	VPDPBUSD.BCST qoff(R13), Z0, Z30; \
	VPDPBUSD.BCST (qoff+16)(R13), Z1, Z31

// ZERO4x4 and FOLD4x4: clear the integer sums; add each row's two.
#define ZERO4x4 \
	VPXORD Z24, Z24, Z24; \
	VPXORD Z25, Z25, Z25; \
	VPXORD Z26, Z26, Z26; \
	VPXORD Z27, Z27, Z27; \
	VPXORD Z28, Z28, Z28; \
	VPXORD Z29, Z29, Z29; \
	VPXORD Z30, Z30, Z30; \
	VPXORD Z31, Z31, Z31

#define FOLD4x4 \
	VPADDD Z25, Z24, Z24; \
	VPADDD Z27, Z26, Z26; \
	VPADDD Z29, Z28, Z28; \
	VPADDD Z31, Z30, Z30

// SUM4x4(head): Z24, Z26, Z28, Z30 = the four rows' Σ level·y over a
// 4-bit block whose quant chunks start at head(SI).
#define SUM4x4(head) \
	ZERO4x4; \
	CH4x4(head, 0); \
	CH4x4(head+64, 4); \
	CH4x4(head+128, 8); \
	CH4x4(head+192, 12); \
	FOLD4x4

// CH8x4(off, qoff, A, B, C, D): one Q8_0 chunk, offset by 128, against the
// four rows into A, B, C, D.
#define CH8x4(off, qoff, A, B, C, D) \
	VPXORD off(SI), Z15, Z0; \
	VPDPBUSD.BCST qoff(DI), Z0, A; \
	VPDPBUSD.BCST qoff(R11), Z0, B; \
	VPDPBUSD.BCST qoff(R12), Z0, C; \
	VPDPBUSD.BCST qoff(R13), Z0, D

// SUM8x4: Z24, Z26, Z28, Z30 = the four rows' Σ (w+128)·y over a Q8_0
// block.
#define SUM8x4 \
	ZERO4x4; \
	CH8x4(32, 0, Z24, Z26, Z28, Z30); \
	CH8x4(96, 4, Z25, Z27, Z29, Z31); \
	CH8x4(160, 8, Z24, Z26, Z28, Z30); \
	CH8x4(224, 12, Z25, Z27, Z29, Z31); \
	CH8x4(288, 16, Z24, Z26, Z28, Z30); \
	CH8x4(352, 20, Z25, Z27, Z29, Z31); \
	CH8x4(416, 24, Z24, Z26, Z28, Z30); \
	CH8x4(480, 28, Z25, Z27, Z29, Z31); \
	FOLD4x4

// F40(acc, dmem, amem, sum): Q4_0's float steps of one activation row,
// (Σ·dx)·dy in ggml's order.
#define F40(acc, dmem, amem, sum) \
	VPBROADCASTD amem, Z2; \
	VPSLLD       $3, Z2, Z2; \
	VPSUBD       Z2, acc, acc; \
	VCVTDQ2PS    acc, acc; \
	VMULPS       Z7, acc, acc; \
	VBROADCASTSS dmem, Z2; \
	VMULPS       Z2, acc, acc; \
	VADDPS       acc, sum, sum

// F80(acc, dmem, amem, sum): Q8_0's float steps of one activation row,
// Σ·(dx·dy).
#define F80(acc, dmem, amem, sum) \
	VPBROADCASTD amem, Z2; \
	VPSLLD       $7, Z2, Z2; \
	VPSUBD       Z2, acc, acc; \
	VCVTDQ2PS    acc, acc; \
	VBROADCASTSS dmem, Z2; \
	VMULPS       Z2, Z7, Z2; \
	VMULPS       Z2, acc, acc; \
	VADDPS       acc, sum, sum

// func gemm16x4Q4_0VNNI(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)
TEXT ·gemm16x4Q4_0VNNI(SB), NOSPLIT, $0-64
	ARGS16x4
	SETUP5x4
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	TESTQ CX, CX
	JZ    g40done

g40loop:
	SUM4x4(32)
	VCVTPH2PS (SI), Z7
	F40(Z24, (R8), (R9), Z9)
	F40(Z26, (R8)(R10*1), (R9)(R10*1), Z10)
	F40(Z28, (R14), (DX), Z11)
	F40(Z30, (R14)(R10*1), (DX)(R10*1), Z12)
	NEXT5x4(18)
	DECQ CX
	JNZ  g40loop

g40done:
	OUT16x4
	FINISH5x4

// func gemm16x4Q4_1VNNI(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)
TEXT ·gemm16x4Q4_1VNNI(SB), NOSPLIT, $0-64
	ARGS16x4
	SETUP5x4
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	TESTQ CX, CX
	JZ    g41done

g41loop:
	SUM4x4(64)
	VCVTPH2PS (SI), Z7
	VCVTPH2PS 32(SI), Z13
	F51(Z24, (R8), (R9), Z9)
	F51(Z26, (R8)(R10*1), (R9)(R10*1), Z10)
	F51(Z28, (R14), (DX), Z11)
	F51(Z30, (R14)(R10*1), (DX)(R10*1), Z12)
	NEXT5x4(20)
	DECQ CX
	JNZ  g41loop

g41done:
	OUT16x4
	FINISH5x4

// func gemm16x4Q8_0VNNI(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32, ldo int)
TEXT ·gemm16x4Q8_0VNNI(SB), NOSPLIT, $0-64
	ARGS16x4
	SETUP5x4
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z15
	TESTQ CX, CX
	JZ    g80done

g80loop:
	SUM8x4
	VCVTPH2PS (SI), Z7
	F80(Z24, (R8), (R9), Z9)
	F80(Z26, (R8)(R10*1), (R9)(R10*1), Z10)
	F80(Z28, (R14), (DX), Z11)
	F80(Z30, (R14)(R10*1), (DX)(R10*1), Z12)
	NEXT5x4(34)
	DECQ CX
	JNZ  g80loop

g80done:
	OUT16x4
	FINISH5x4

// Q4_K on the r16 layout (one row per ZMM lane). ggml's lane sums aux32[l]
// (the classes l = e%8 of the block's elements) are eight accumulators
// Z4..Z11 of 16 rows each: qs chunk 8p+l holds class l of sub-blocks 2p
// (low nibbles) and 2p+1 (high), four levels a row, so VPDPBUSD against the
// activation's acts.kp dword of that sub-block and class gives the 16 rows'
// class sums (they fit in 16 bits), and VPDPWSSD against [scale, 0] adds
// them scaled. The 6-bit scales and mins of the 16 rows are unpacked with
// ggml's masks on dwords (chunks 0..2 are its utmp[0..2]); the float32
// steps are ggml's per lane: sums[l] += (dx·dy)·aux32[l] (Z12..Z19),
// sumf -= (dminx·dy)·Σ mins·msum (Z20), and at the end sumf += sums[l] in
// order of l.

DATA k4m1<>+0(SB)/4, $0x3f3f3f3f
GLOBL k4m1<>(SB), RODATA|NOPTR, $4
DATA k4m3<>+0(SB)/4, $0x03030303
GLOBL k4m3<>(SB), RODATA|NOPTR, $4


// K4DW(name, d0, d1, d2, d3): a 64-byte VPSHUFB control whose four dwords
// d0..d3 repeat in every 128-bit lane.
#define K4DW(name, d0, d1, d2, d3) \
	DATA name+0(SB)/8, $((d1)<<32|(d0)); \
	DATA name+8(SB)/8, $((d3)<<32|(d2)); \
	DATA name+16(SB)/8, $((d1)<<32|(d0)); \
	DATA name+24(SB)/8, $((d3)<<32|(d2)); \
	DATA name+32(SB)/8, $((d1)<<32|(d0)); \
	DATA name+40(SB)/8, $((d3)<<32|(d2)); \
	DATA name+48(SB)/8, $((d1)<<32|(d0)); \
	DATA name+56(SB)/8, $((d3)<<32|(d2)); \
	GLOBL name(SB), RODATA|NOPTR, $64

// k4scJ: byte J of each dword, zero-extended (a [scale, 0] word pair).
#define K4SC(name, j) K4DW(name, 0x80808000|(j), 0x80808000|(4+j), 0x80808000|(8+j), 0x80808000|(12+j))

K4SC(k4sc0<>, 0)
K4SC(k4sc1<>, 1)
K4SC(k4sc2<>, 2)
K4SC(k4sc3<>, 3)

// k4mw01, k4mw23: bytes 0, 1 (2, 3) of each dword as two zero-extended
// words.
#define K4MW(name, j) K4DW(name, 0x80008000|((j+1)<<16)|(j), 0x80008000|((j+5)<<16)|(j+4), 0x80008000|((j+9)<<16)|(j+8), 0x80008000|((j+13)<<16)|(j+12))

K4MW(k4mw01<>, 0)
K4MW(k4mw23<>, 2)

// K4C(off, yo0, yo1, sc0, sc1, acc): qs chunk off(SI) against the
// activation dwords at yo0(DI) (low nibbles) and yo1(DI) (high), scaled
// by sc0 and sc1, into acc.
#define K4C(off, yo0, yo1, sc0, sc1, acc) \
	VMOVDQU32 off(SI), Z0; \
	VPSRLW    $4, Z0, Z1; \
	VPANDD    Z21, Z0, Z0; \
	VPANDD    Z21, Z1, Z1; \
	VPXORD    Z2, Z2, Z2; \
	VPXORD    Z3, Z3, Z3; \
	VPDPBUSD.BCST yo0(DI), Z0, Z2; \
	VPDPBUSD.BCST yo1(DI), Z1, Z3; \
	VPDPWSSD  sc0, Z2, acc; \
	VPDPWSSD  sc1, Z3, acc

// K4P(p, y0, y1, sa, sb): qs chunks 8p..8p+7 (classes 0..7 of sub-blocks
// 2p and 2p+1, activation dwords from y0 and y1, scales sa and sb) into
// Z4..Z11.
#define K4P(p, y0, y1, sa, sb) \
	K4C(256+512*p+0, y0+0, y1+0, sa, sb, Z4); \
	K4C(256+512*p+64, y0+4, y1+4, sa, sb, Z5); \
	K4C(256+512*p+128, y0+8, y1+8, sa, sb, Z6); \
	K4C(256+512*p+192, y0+12, y1+12, sa, sb, Z7); \
	K4C(256+512*p+256, y0+16, y1+16, sa, sb, Z8); \
	K4C(256+512*p+320, y0+20, y1+20, sa, sb, Z9); \
	K4C(256+512*p+384, y0+24, y1+24, sa, sb, Z10); \
	K4C(256+512*p+448, y0+28, y1+28, sa, sb, Z11)

// K4F(aux, sum): one lane class's float step, sum += (dx·dy)·aux (Z0).
#define K4F(aux, sum) \
	VCVTDQ2PS aux, aux; \
	VMULPS    Z0, aux, aux; \
	VADDPS    aux, sum, sum

// K4SB: one block column: scales and mins unpacked, sumf's mins term, the
// 32 chunks into Z4..Z11 and the float steps into Z12..Z19.
#define K4SB \
	VMOVDQU32 64(SI), Z0; \
	VMOVDQU32 128(SI), Z1; \
	VMOVDQU32 192(SI), Z2; \
	VPANDD.BCST k4m1<>(SB), Z1, Z30; \
	VPSRLD    $4, Z2, Z31; \
	VPANDD    Z21, Z31, Z31; \
	VPSRLD    $6, Z1, Z3; \
	VPANDD.BCST k4m3<>(SB), Z3, Z3; \
	VPSLLD    $4, Z3, Z3; \
	VPORD     Z3, Z31, Z31; \
	VPANDD    Z21, Z2, Z2; \
	VPSRLD    $6, Z0, Z3; \
	VPANDD.BCST k4m3<>(SB), Z3, Z3; \
	VPSLLD    $4, Z3, Z3; \
	VPORD     Z3, Z2, Z2; \
	VPANDD.BCST k4m1<>(SB), Z0, Z0; \
	VPSHUFB   k4sc0<>(SB), Z0, Z22; \
	VPSHUFB   k4sc1<>(SB), Z0, Z23; \
	VPSHUFB   k4sc2<>(SB), Z0, Z24; \
	VPSHUFB   k4sc3<>(SB), Z0, Z25; \
	VPSHUFB   k4sc0<>(SB), Z2, Z26; \
	VPSHUFB   k4sc1<>(SB), Z2, Z27; \
	VPSHUFB   k4sc2<>(SB), Z2, Z28; \
	VPSHUFB   k4sc3<>(SB), Z2, Z29; \
	VPXORD    Z1, Z1, Z1; \
	VPSHUFB   k4mw01<>(SB), Z30, Z0; \
	VPDPWSSD.BCST 0(R9), Z0, Z1; \
	VPSHUFB   k4mw23<>(SB), Z30, Z0; \
	VPDPWSSD.BCST 4(R9), Z0, Z1; \
	VPSHUFB   k4mw01<>(SB), Z31, Z0; \
	VPDPWSSD.BCST 8(R9), Z0, Z1; \
	VPSHUFB   k4mw23<>(SB), Z31, Z0; \
	VPDPWSSD.BCST 12(R9), Z0, Z1; \
	VBROADCASTSS (R8), Z2; \
	VCVTPH2PS 32(SI), Z0; \
	VMULPS    Z2, Z0, Z0; \
	VCVTDQ2PS Z1, Z1; \
	VMULPS    Z1, Z0, Z0; \
	VSUBPS    Z0, Z20, Z20; \
	VPXORD    Z4, Z4, Z4; \
	VPXORD    Z5, Z5, Z5; \
	VPXORD    Z6, Z6, Z6; \
	VPXORD    Z7, Z7, Z7; \
	VPXORD    Z8, Z8, Z8; \
	VPXORD    Z9, Z9, Z9; \
	VPXORD    Z10, Z10, Z10; \
	VPXORD    Z11, Z11, Z11; \
	K4P(0, 0, 64, Z22, Z23); \
	K4P(1, 32, 96, Z24, Z25); \
	K4P(2, 128, 192, Z26, Z27); \
	K4P(3, 160, 224, Z28, Z29); \
	VBROADCASTSS (R8), Z2; \
	VCVTPH2PS (SI), Z0; \
	VMULPS    Z2, Z0, Z0; \
	K4F(Z4, Z12); \
	K4F(Z5, Z13); \
	K4F(Z6, Z14); \
	K4F(Z7, Z15); \
	K4F(Z8, Z16); \
	K4F(Z9, Z17); \
	K4F(Z10, Z18); \
	K4F(Z11, Z19)

// func dot16Q4KVNNI(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
// qa: acts.kp; aux: acts.m16.
TEXT ·dot16Q4KVNNI(SB), NOSPLIT, $0-48
	SETUP16
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z21
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	TESTQ CX, CX
	JZ    p4kdone

p4kloop:
	PREFETCHT0 4608(SI)
	PREFETCHT0 4672(SI)
	PREFETCHT0 4736(SI)
	PREFETCHT0 4800(SI)
	K4SB
	ADDQ $2304, SI
	ADDQ $256, DI
	ADDQ $4, R8
	ADDQ $16, R9
	DECQ CX
	JNZ  p4kloop

p4kdone:
	VADDPS Z12, Z20, Z20
	VADDPS Z13, Z20, Z20
	VADDPS Z14, Z20, Z20
	VADDPS Z15, Z20, Z20
	VADDPS Z16, Z20, Z20
	VADDPS Z17, Z20, Z20
	VADDPS Z18, Z20, Z20
	VADDPS Z19, Z20, Z20
	MOVQ out+40(FP), R10
	VMOVUPS Z20, (R10)
	VZEROUPPER
	RET
