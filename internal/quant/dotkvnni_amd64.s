//go:build amd64 && !purego

#include "textflag.h"

// AVX512_VNNI Q4_K kernel (level avx512bf16): one row; ggml's eight p%8
// integer lanes come straight out of VPDPBUSD, because the weight bytes are
// rearranged (one VPERMB: the pairs p, p+8 in each 16, joined with the
// pairs of p+16) so that a dword holds the four levels of one class, against
// activation quants rearranged the same way once per row (acts.kp). One ZMM
// covers two sub-blocks of 32 at a time, each 256-bit half its own scale
// (VPERMD), applied with VPDPWSSD against [scale, 0] dwords (the class sums
// fit in 16 bits, so a dword is the word pair [sum, its sign]). The float32
// steps are the AVX2 kernel's.

// The byte permutation of 32 levels that puts, in each 16 bytes, bytes p
// and p+8 side by side and then word c of the first 16 next to word c of
// the second: KP0..KP3 are its qwords for the first 32 bytes, KP4..KP7 the
// same for the second 32.
#define KP0 $0x1911090118100800
#define KP1 $0x1b130b031a120a02
#define KP2 $0x1d150d051c140c04
#define KP3 $0x1f170f071e160e06
#define KP4 $0x3931292138302820
#define KP5 $0x3b332b233a322a22
#define KP6 $0x3d352d253c342c24
#define KP7 $0x3f372f273e362e26

// PERM64(name, q0, ..., q7): a 64-byte VPERMB index table of 8 qwords.
#define PERM64(name, q0, q1, q2, q3, q4, q5, q6, q7) \
	DATA name+0(SB)/8, q0; \
	DATA name+8(SB)/8, q1; \
	DATA name+16(SB)/8, q2; \
	DATA name+24(SB)/8, q3; \
	DATA name+32(SB)/8, q4; \
	DATA name+40(SB)/8, q5; \
	DATA name+48(SB)/8, q6; \
	DATA name+56(SB)/8, q7; \
	GLOBL name(SB), RODATA|NOPTR, $64

// kPermB: the Q4_K/Q5_K levels, and each 256-bit half of Q6_K's ql (the
// AVX2 Q6_K kernel's VPERMD k6Perm then VPSHUFB k6Shuf: the same order).
PERM64(kPermB<>, KP0, KP1, KP2, KP3, KP4, KP5, KP6, KP7)

// scale dword indices: halves (0,2), (1,3), (4,6), (5,7)
#define SCIDX(name, a, b) \
	DATA name+0(SB)/8, $(a<<32|a); \
	DATA name+8(SB)/8, $(a<<32|a); \
	DATA name+16(SB)/8, $(a<<32|a); \
	DATA name+24(SB)/8, $(a<<32|a); \
	DATA name+32(SB)/8, $(b<<32|b); \
	DATA name+40(SB)/8, $(b<<32|b); \
	DATA name+48(SB)/8, $(b<<32|b); \
	DATA name+56(SB)/8, $(b<<32|b); \
	GLOBL name(SB), RODATA|NOPTR, $64

SCIDX(sc02<>, 0, 2)
SCIDX(sc13<>, 1, 3)
SCIDX(sc46<>, 4, 6)
SCIDX(sc57<>, 5, 7)

// KPAIR(woff, yoff, ilo, ihi): Z10 += the scaled class sums of the four
// sub-blocks whose nibbles are the 64 bytes at woff(SI).
#define KPAIR(woff, yoff, ilo, ihi) \
	VPERMB woff(SI), Z12, Z0; \
	VPSRLW $4, Z0, Z1; \
	VPANDD Z14, Z0, Z0; \
	VPANDD Z14, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPDPBUSD yoff(DI), Z0, Z2; \
	VPERMD Z5, ilo, Z3; \
	VPDPWSSD Z3, Z2, Z10; \
	VPXORD Z2, Z2, Z2; \
	VPDPBUSD yoff+64(DI), Z1, Z2; \
	VPERMD Z5, ihi, Z3; \
	VPDPWSSD Z3, Z2, Z10

// func dotQ4KVNNI(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
// qa: the activation row in acts.kp's layout; aux: per block eight int16
// sums of 32 activation quants (acts.m16).
TEXT ·dotQ4KVNNI(SB), NOSPLIT, $64-48
	MOVQ w+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ qa+16(FP), DI
	MOVQ da+24(FP), R8
	MOVQ aux+32(FP), R9
	VXORPS Y13, Y13, Y13
	VXORPS X15, X15, X15
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z14
	VMOVDQU64 kPermB<>(SB), Z12
	VMOVDQU64 sc02<>(SB), Z16
	VMOVDQU64 sc13<>(SB), Z17
	VMOVDQU64 sc46<>(SB), Z18
	VMOVDQU64 sc57<>(SB), Z19
	TESTQ CX, CX
	JZ    v4kdone
v4kloop:
	PREFETCHT0 512(SI)
	PREFETCHT0 576(SI)
	PREFETCHT0 640(SI)
	MOVL 4(SI), AX
	MOVL 8(SI), DX
	MOVL 12(SI), R10
	// (in registers: a load spanning two small stores would stall)
	MOVL R10, R12
	ANDL $0x0f0f0f0f, R12
	MOVL AX, R13
	SHRL $6, R13
	ANDL $0x03030303, R13
	SHLL $4, R13
	ORL  R13, R12
	SHLQ $32, R12
	MOVL AX, R13
	ANDL $0x3f3f3f3f, R13
	ORQ  R13, R12
	VMOVQ R12, X5
	MOVL R10, R12
	SHRL $4, R12
	ANDL $0x0f0f0f0f, R12
	MOVL DX, R13
	SHRL $6, R13
	ANDL $0x03030303, R13
	SHLL $4, R13
	ORL  R13, R12
	SHLQ $32, R12
	MOVL DX, R13
	ANDL $0x3f3f3f3f, R13
	ORQ  R13, R12
	VMOVQ R12, X6
	VPMOVZXBD X5, Y5
	VPMOVZXBW X6, X6
	VPMADDWD     (R9), X6, X6
	VPSHUFD      $0x4e, X6, X7
	VPADDD       X7, X6, X6
	VPSHUFD      $0xb1, X6, X7
	VPADDD       X7, X6, X6
	VCVTDQ2PS    X6, X6
	VPXORD Z10, Z10, Z10
	KPAIR(16, 0, Z16, Z17)
	KPAIR(80, 128, Z18, Z19)
	VEXTRACTI64X4 $1, Z10, Y2
	VPADDD        Y2, Y10, Y10
	VMOVD        (SI), X7
	VCVTPH2PS    X7, X7
	VBROADCASTSS (R8), X8
	VMULPS       X8, X7, X7
	VBROADCASTSS X7, Y9
	VCVTDQ2PS    Y10, Y10
	VMULPS       Y9, Y10, Y10
	VADDPS       Y10, Y13, Y13
	VMOVSHDUP    X7, X8
	VMULSS       X6, X8, X8
	VSUBSS       X8, X15, X15
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $4, R8
	ADDQ $16, R9
	DECQ CX
	JNZ  v4kloop
v4kdone:
	MOVQ    out+40(FP), R10
	VMOVUPS Y13, (R10)
	VMOVSS  X15, 32(R10)
	VZEROUPPER
	RET


// The Q6_K row kernel is the AVX2 kernel (dotk_amd64.s) on ZMM registers:
// the same acts.k6 / acts.k6c activation layouts, the same byte
// permutation (one VPERMB), applied to two sub-blocks of 32 at once. Each 256-bit half
// of a ZMM is one sub-block; VPMADDUBSW gives the words [A's class-c pair,
// B's class-c pair], VPSUBW takes off 32·(the activation pairs), and
// VPDPWSSD against the dword [scale A, scale B] of the half's sub-block
// adds the scaled class sums. The two halves are folded once per block, so
// the integer lanes are ggml's aux32, and the float32 steps are the AVX2
// kernel's.

// z6qh0, z6qh1: Q6_K's qh bytes 0..31 (32..63) in both halves of a ZMM, in
// kPermB's order.
PERM64(z6qh0<>, KP0, KP1, KP2, KP3, KP0, KP1, KP2, KP3)
PERM64(z6qh1<>, KP4, KP5, KP6, KP7, KP4, KP5, KP6, KP7)

// VPSLLVQ / VPSRLVQ counts: low half by a, high half by b
#define SHCNT(name, a, b) \
	DATA name+0(SB)/8, $a; \
	DATA name+8(SB)/8, $a; \
	DATA name+16(SB)/8, $a; \
	DATA name+24(SB)/8, $a; \
	DATA name+32(SB)/8, $b; \
	DATA name+40(SB)/8, $b; \
	DATA name+48(SB)/8, $b; \
	DATA name+56(SB)/8, $b; \
	GLOBL name(SB), RODATA|NOPTR, $64

SHCNT(z6sl<>, 4, 2)
SHCNT(z6sr<>, 0, 2)

// scale dword indices: halves (0,1), (2,3), (4,5), (6,7)
SCIDX(sc01<>, 0, 1)
SCIDX(sc23<>, 2, 3)
SCIDX(sc45<>, 4, 5)
SCIDX(sc67<>, 6, 7)

// Z6CONST(s01, s23, s45, s67): the Q6_K kernels' constants: the nibble and
// 0x30 masks (Z15, Z14), kPermB (Z13), the qh shift counts (Z16, Z17), the
// qh permutations (Z18, Z19) and the scale dword indices into s01..s67.
#define Z6CONST(s01, s23, s45, s67) \
	MOVL $0x0f0f0f0f, AX; \
	VPBROADCASTD AX, Z15; \
	MOVL $0x30303030, AX; \
	VPBROADCASTD AX, Z14; \
	VMOVDQU64 kPermB<>(SB), Z13; \
	VMOVDQU64 z6sl<>(SB), Z16; \
	VMOVDQU64 z6sr<>(SB), Z17; \
	VMOVDQU64 z6qh0<>(SB), Z18; \
	VMOVDQU64 z6qh1<>(SB), Z19; \
	VMOVDQU64 sc01<>(SB), s01; \
	VMOVDQU64 sc23<>(SB), s23; \
	VMOVDQU64 sc45<>(SB), s45; \
	VMOVDQU64 sc67<>(SB), s67

// Z6SUB(Zq, aoff, sidx): Z10 += the scaled class sums of the 64 levels in
// Zq (two sub-blocks of 32) against acts.k6 at aoff(DI), with the scale
// dwords of Z9 chosen by sidx. The 32-fold activation pair sums that take
// off the levels' offset come from a second VPMADDUBSW against Z24's bytes
// of 32 rather than from acts.k6c: with k6c a row of k = 14336 is 56 KiB
// and does not stay in a 32 KiB L1 from one weight row to the next, and
// Zen 4 ran the product at 11.2 GB/s against 16-18 GB/s this way (and the
// same speed at k = 4096, where k6c fits).
#define Z6SUB(Zq, aoff, sidx) \
	VMOVDQU64  aoff(DI), Z4; \
	VPMADDUBSW Z4, Zq, Zq; \
	VPMADDUBSW Z4, Z24, Z5; \
	VPSUBW     Z5, Zq, Zq; \
	VPERMD     Z9, sidx, Z8; \
	VPDPWSSD   Z8, Zq, Z10

// Z6HALF(qloff, qhidx, aoff, slo, shi): the 128 levels of one half of the
// block: ql at qloff(SI), qh (all 64 bytes in Z7) through qhidx.
#define Z6HALF(qloff, qhidx, aoff, slo, shi) \
	VPERMB  qloff(SI), Z13, Z0; \
	VPERMB  Z7, qhidx, Z2; \
	VPSLLVQ Z16, Z2, Z3; \
	VPANDD  Z14, Z3, Z3; \
	VPTERNLOGD $0xf8, Z15, Z0, Z3; \
	VPSRLW  $4, Z0, Z0; \
	VPSRLVQ Z17, Z2, Z2; \
	VPANDD  Z14, Z2, Z2; \
	VPTERNLOGD $0xf8, Z15, Z0, Z2; \
	Z6SUB(Z3, aoff, slo); \
	Z6SUB(Z2, aoff+64, shi)

// func dotQ6KVNNI(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
// qa: acts.k6; aux is not read.
TEXT ·dotQ6KVNNI(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ qa+16(FP), DI
	MOVQ da+24(FP), R8
	VXORPS Y11, Y11, Y11
	Z6CONST(Z20, Z21, Z22, Z23)
	MOVL $0x20202020, AX
	VPBROADCASTD AX, Z24
	TESTQ CX, CX
	JZ    z6kdone
z6kloop:
	// about ten blocks ahead, as the AVX2 kernel
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2176(SI)
	PREFETCHT0 2240(SI)
	// the 16 int8 scales as words: dword s is the [scale A, scale B] pair
	// of sub-block s
	VPMOVSXBW 192(SI), Y9
	VMOVDQU64 128(SI), Z7
	VPXORD    Z10, Z10, Z10
	Z6HALF(0, Z18, 0, Z20, Z21)
	Z6HALF(64, Z19, 128, Z22, Z23)
	VEXTRACTI64X4 $1, Z10, Y2
	VPADDD        Y2, Y10, Y10
	MOVWLZX      208(SI), AX
	VMOVD        AX, X7
	VCVTPH2PS    X7, X7
	VMULSS       (R8), X7, X7
	VBROADCASTSS X7, Y9
	VCVTDQ2PS    Y10, Y10
	VMULPS       Y9, Y10, Y10
	VADDPS       Y10, Y11, Y11
	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $4, R8
	DECQ CX
	JNZ  z6kloop
z6kdone:
	MOVQ    out+40(FP), R10
	VMOVUPS Y11, (R10)
	MOVL    $0, 32(R10)
	VZEROUPPER
	RET

// One Q4_K weight row against four activation rows (GEMM): the levels,
// scales and mins are unpacked once per block. Activation row a's kp
// quants are at DI, DX, R14, R15, its scales at R8 + a·R10 (R10 = 4·nb)
// and its 32-sums at R9 + a·R13 (R13 = 32·nb). Lane sums: Y25..Y28; sumf:
// X29, X30, X31, X15.

// KA(yp, acc): acc = Σ over the block's eight sub-blocks of scale × the
// class sums against the activation quants at yp (Z0, Z1, Z20, Z21 the
// levels; Z3, Z22, Z23, Z24 the scale multipliers), folded to 8 lanes.
#define KA(yp, acc, yacc) \
	VPXORD Z2, Z2, Z2; \
	VPXORD acc, acc, acc; \
	VPDPBUSD (yp), Z0, Z2; \
	VPDPWSSD Z3, Z2, acc; \
	VPXORD Z2, Z2, Z2; \
	VPDPBUSD 64(yp), Z1, Z2; \
	VPDPWSSD Z22, Z2, acc; \
	VPXORD Z2, Z2, Z2; \
	VPDPBUSD 128(yp), Z20, Z2; \
	VPDPWSSD Z23, Z2, acc; \
	VPXORD Z2, Z2, Z2; \
	VPDPBUSD 192(yp), Z21, Z2; \
	VPDPWSSD Z24, Z2, acc; \
	VEXTRACTI64X4 $1, acc, Y2; \
	VPADDD Y2, yacc, yacc

// KF(dmem, msum, yacc, sums, sumf): the float steps of one activation row:
// sums += (dx·dy)·aux, sumf -= (dmx·dy)·Σ mins·msum.
#define KF(dmem, msum, yacc, sums, sumf) \
	VPMULLD msum, Y6, Y7; \
	VEXTRACTI128 $1, Y7, X8; \
	VPADDD X8, X7, X7; \
	VPSHUFD $0x4e, X7, X8; \
	VPADDD X8, X7, X7; \
	VPSHUFD $0xb1, X7, X8; \
	VPADDD X8, X7, X7; \
	VCVTDQ2PS X7, X7; \
	VBROADCASTSS dmem, X8; \
	VMULPS X9, X8, X8; \
	VBROADCASTSS X8, Y10; \
	VCVTDQ2PS yacc, yacc; \
	VMULPS Y10, yacc, yacc; \
	VADDPS yacc, sums, sums; \
	VMOVSHDUP X8, X8; \
	VMULSS X7, X8, X8; \
	VSUBSS X8, sumf, sumf

// func gemm1x4Q4KVNNI(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32)
// out: four times (eight lane sums, sumf), one per activation row.
TEXT ·gemm1x4Q4KVNNI(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ qa+16(FP), DI
	MOVQ lda+24(FP), AX
	LEAQ (DI)(AX*1), DX
	LEAQ (DX)(AX*1), R14
	LEAQ (R14)(AX*1), R15
	MOVQ da+32(FP), R8
	MOVQ aux+40(FP), R9
	MOVQ CX, R10
	SHLQ $2, R10
	MOVQ CX, R13
	SHLQ $5, R13
	VXORPS Y25, Y25, Y25
	VXORPS Y26, Y26, Y26
	VXORPS Y27, Y27, Y27
	VXORPS Y28, Y28, Y28
	VXORPS X29, X29, X29
	VXORPS X30, X30, X30
	VXORPS X31, X31, X31
	VXORPS X15, X15, X15
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z14
	VMOVDQU64 kPermB<>(SB), Z12
	VMOVDQU64 sc02<>(SB), Z16
	VMOVDQU64 sc13<>(SB), Z17
	VMOVDQU64 sc46<>(SB), Z18
	VMOVDQU64 sc57<>(SB), Z19
	TESTQ CX, CX
	JZ    g4kdone
g4kloop:
	MOVL 12(SI), R12
	ANDL $0x0f0f0f0f, R12
	MOVL 4(SI), AX
	SHRL $6, AX
	ANDL $0x03030303, AX
	SHLL $4, AX
	ORL  AX, R12
	SHLQ $32, R12
	MOVL 4(SI), AX
	ANDL $0x3f3f3f3f, AX
	ORQ  AX, R12
	VMOVQ R12, X5
	MOVL 12(SI), R12
	SHRL $4, R12
	ANDL $0x0f0f0f0f, R12
	MOVL 8(SI), AX
	SHRL $6, AX
	ANDL $0x03030303, AX
	SHLL $4, AX
	ORL  AX, R12
	SHLQ $32, R12
	MOVL 8(SI), AX
	ANDL $0x3f3f3f3f, AX
	ORQ  AX, R12
	VMOVQ R12, X6
	VPMOVZXBD X5, Y5
	VPMOVZXBD X6, Y6
	VPERMD Z5, Z16, Z3
	VPERMD Z5, Z17, Z22
	VPERMD Z5, Z18, Z23
	VPERMD Z5, Z19, Z24
	VMOVDQU64 16(SI), Z0
	VPERMB Z0, Z12, Z0
	VPSRLW $4, Z0, Z1
	VPANDD Z14, Z0, Z0
	VPANDD Z14, Z1, Z1
	VMOVDQU64 80(SI), Z20
	VPERMB Z20, Z12, Z20
	VPSRLW $4, Z20, Z21
	VPANDD Z14, Z20, Z20
	VPANDD Z14, Z21, Z21
	VMOVD     (SI), X9
	VCVTPH2PS X9, X9
	KA(DI, Z4, Y4)
	KF((R8), (R9), Y4, Y25, X29)
	KA(DX, Z4, Y4)
	KF((R8)(R10*1), (R9)(R13*1), Y4, Y26, X30)
	LEAQ (R8)(R10*2), AX
	LEAQ (R9)(R13*2), R12
	KA(R14, Z4, Y4)
	KF((AX), (R12), Y4, Y27, X31)
	KA(R15, Z4, Y4)
	KF((AX)(R10*1), (R12)(R13*1), Y4, Y28, X15)
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $256, DX
	ADDQ $256, R14
	ADDQ $256, R15
	ADDQ $4, R8
	ADDQ $32, R9
	DECQ CX
	JNZ  g4kloop
g4kdone:
	MOVQ    out+48(FP), AX
	VMOVUPS Y25, (AX)
	VMOVSS  X29, 32(AX)
	VMOVUPS Y26, 36(AX)
	VMOVSS  X30, 68(AX)
	VMOVUPS Y27, 72(AX)
	VMOVSS  X31, 104(AX)
	VMOVUPS Y28, 108(AX)
	VMOVSS  X15, 140(AX)
	VZEROUPPER
	RET

// Bit masks of the Q5_K sub-blocks in the two halves of a levels ZMM:
// (0, 2), (1, 3), (4, 6), (5, 7).
#define QBITS(name, a, b) \
	DATA name+0(SB)/8, $a; \
	DATA name+8(SB)/8, $a; \
	DATA name+16(SB)/8, $a; \
	DATA name+24(SB)/8, $a; \
	DATA name+32(SB)/8, $b; \
	DATA name+40(SB)/8, $b; \
	DATA name+48(SB)/8, $b; \
	DATA name+56(SB)/8, $b; \
	GLOBL name(SB), RODATA|NOPTR, $64

QBITS(qb02<>, 0x0101010101010101, 0x0404040404040404)
QBITS(qb13<>, 0x0202020202020202, 0x0808080808080808)
QBITS(qb46<>, 0x1010101010101010, 0x4040404040404040)
QBITS(qb57<>, 0x2020202020202020, 0x8080808080808080)

// KPAIR5: KPAIR with the fifth bits of Z20 (qh in the levels' order) under
// the bit masks blo and bhi.
#define KPAIR5(woff, yoff, ilo, ihi, blo, bhi) \
	VPERMB woff(SI), Z12, Z0; \
	VPSRLW $4, Z0, Z1; \
	VPANDD Z14, Z0, Z0; \
	VPANDD Z14, Z1, Z1; \
	VPTESTMB blo, Z20, K1; \
	VPADDB Z25, Z0, K1, Z0; \
	VPTESTMB bhi, Z20, K2; \
	VPADDB Z25, Z1, K2, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPDPBUSD yoff(DI), Z0, Z2; \
	VPERMD Z5, ilo, Z3; \
	VPDPWSSD Z3, Z2, Z10; \
	VPXORD Z2, Z2, Z2; \
	VPDPBUSD yoff+64(DI), Z1, Z2; \
	VPERMD Z5, ihi, Z3; \
	VPDPWSSD Z3, Z2, Z10

// func dotQ5KVNNI(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
// Q4_K's kernel with the fifth bits: qh, duplicated in both halves of a
// ZMM, gets the levels' permutation, and VPTESTMB against each half's
// sub-block bit masks where VPADDB adds 16.
// qa: the activation row in acts.kp's layout; aux: per block eight int16
// sums of 32 activation quants (acts.m16).
TEXT ·dotQ5KVNNI(SB), NOSPLIT, $64-48
	MOVQ w+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ qa+16(FP), DI
	MOVQ da+24(FP), R8
	MOVQ aux+32(FP), R9
	VXORPS Y13, Y13, Y13
	VXORPS X15, X15, X15
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z14
	VMOVDQU64 kPermB<>(SB), Z12
	VMOVDQU64 sc02<>(SB), Z16
	VMOVDQU64 sc13<>(SB), Z17
	VMOVDQU64 sc46<>(SB), Z18
	VMOVDQU64 sc57<>(SB), Z19
	VMOVDQU64 qb02<>(SB), Z21
	VMOVDQU64 qb13<>(SB), Z22
	VMOVDQU64 qb46<>(SB), Z23
	VMOVDQU64 qb57<>(SB), Z24
	MOVL $0x10101010, AX
	VPBROADCASTD AX, Z25
	TESTQ CX, CX
	JZ    v5kdone
v5kloop:
	PREFETCHT0 512(SI)
	PREFETCHT0 576(SI)
	PREFETCHT0 640(SI)
	MOVL 4(SI), AX
	MOVL 8(SI), DX
	MOVL 12(SI), R10
	// (in registers: a load spanning two small stores would stall)
	MOVL R10, R12
	ANDL $0x0f0f0f0f, R12
	MOVL AX, R13
	SHRL $6, R13
	ANDL $0x03030303, R13
	SHLL $4, R13
	ORL  R13, R12
	SHLQ $32, R12
	MOVL AX, R13
	ANDL $0x3f3f3f3f, R13
	ORQ  R13, R12
	VMOVQ R12, X5
	MOVL R10, R12
	SHRL $4, R12
	ANDL $0x0f0f0f0f, R12
	MOVL DX, R13
	SHRL $6, R13
	ANDL $0x03030303, R13
	SHLL $4, R13
	ORL  R13, R12
	SHLQ $32, R12
	MOVL DX, R13
	ANDL $0x3f3f3f3f, R13
	ORQ  R13, R12
	VMOVQ R12, X6
	VPMOVZXBD X5, Y5
	VPMOVZXBW X6, X6
	VPMADDWD     (R9), X6, X6
	VPSHUFD      $0x4e, X6, X7
	VPADDD       X7, X6, X6
	VPSHUFD      $0xb1, X6, X7
	VPADDD       X7, X6, X6
	VCVTDQ2PS    X6, X6
	VPXORD Z10, Z10, Z10
	VBROADCASTI64X4 16(SI), Z20
	VPERMB Z20, Z12, Z20
	KPAIR5(48, 0, Z16, Z17, Z21, Z22)
	KPAIR5(112, 128, Z18, Z19, Z23, Z24)
	VEXTRACTI64X4 $1, Z10, Y2
	VPADDD        Y2, Y10, Y10
	VMOVD        (SI), X7
	VCVTPH2PS    X7, X7
	VBROADCASTSS (R8), X8
	VMULPS       X8, X7, X7
	VBROADCASTSS X7, Y9
	VCVTDQ2PS    Y10, Y10
	VMULPS       Y9, Y10, Y10
	VADDPS       Y10, Y13, Y13
	VMOVSHDUP    X7, X8
	VMULSS       X6, X8, X8
	VSUBSS       X8, X15, X15
	ADDQ $176, SI
	ADDQ $256, DI
	ADDQ $4, R8
	ADDQ $16, R9
	DECQ CX
	JNZ  v5kloop
v5kdone:
	MOVQ    out+40(FP), R10
	VMOVUPS Y13, (R10)
	VMOVSS  X15, 32(R10)
	VZEROUPPER
	RET

// func gemm1x4Q5KVNNI(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32)
// gemm1x4Q4KVNNI with Q5_K's fifth bits (as dotQ5KVNNI).
// out: four times (eight lane sums, sumf), one per activation row.
TEXT ·gemm1x4Q5KVNNI(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ qa+16(FP), DI
	MOVQ lda+24(FP), AX
	LEAQ (DI)(AX*1), DX
	LEAQ (DX)(AX*1), R14
	LEAQ (R14)(AX*1), R15
	MOVQ da+32(FP), R8
	MOVQ aux+40(FP), R9
	MOVQ CX, R10
	SHLQ $2, R10
	MOVQ CX, R13
	SHLQ $5, R13
	VXORPS Y25, Y25, Y25
	VXORPS Y26, Y26, Y26
	VXORPS Y27, Y27, Y27
	VXORPS Y28, Y28, Y28
	VXORPS X29, X29, X29
	VXORPS X30, X30, X30
	VXORPS X31, X31, X31
	VXORPS X15, X15, X15
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z14
	VMOVDQU64 kPermB<>(SB), Z12
	VMOVDQU64 sc02<>(SB), Z16
	VMOVDQU64 sc13<>(SB), Z17
	VMOVDQU64 sc46<>(SB), Z18
	VMOVDQU64 sc57<>(SB), Z19
	MOVL $0x10101010, AX
	VPBROADCASTD AX, Z13
	TESTQ CX, CX
	JZ    g5kdone
g5kloop:
	MOVL 12(SI), R12
	ANDL $0x0f0f0f0f, R12
	MOVL 4(SI), AX
	SHRL $6, AX
	ANDL $0x03030303, AX
	SHLL $4, AX
	ORL  AX, R12
	SHLQ $32, R12
	MOVL 4(SI), AX
	ANDL $0x3f3f3f3f, AX
	ORQ  AX, R12
	VMOVQ R12, X5
	MOVL 12(SI), R12
	SHRL $4, R12
	ANDL $0x0f0f0f0f, R12
	MOVL 8(SI), AX
	SHRL $6, AX
	ANDL $0x03030303, AX
	SHLL $4, AX
	ORL  AX, R12
	SHLQ $32, R12
	MOVL 8(SI), AX
	ANDL $0x3f3f3f3f, AX
	ORQ  AX, R12
	VMOVQ R12, X6
	VPMOVZXBD X5, Y5
	VPMOVZXBD X6, Y6
	VPERMD Z5, Z16, Z3
	VPERMD Z5, Z17, Z22
	VPERMD Z5, Z18, Z23
	VPERMD Z5, Z19, Z24
	VBROADCASTI64X4 16(SI), Z5
	VPERMB Z5, Z12, Z5
	VMOVDQU64 48(SI), Z0
	VPERMB Z0, Z12, Z0
	VPSRLW $4, Z0, Z1
	VPANDD Z14, Z0, Z0
	VPANDD Z14, Z1, Z1
	VPTESTMB qb02<>(SB), Z5, K1
	VPADDB Z13, Z0, K1, Z0
	VPTESTMB qb13<>(SB), Z5, K2
	VPADDB Z13, Z1, K2, Z1
	VMOVDQU64 112(SI), Z20
	VPERMB Z20, Z12, Z20
	VPSRLW $4, Z20, Z21
	VPANDD Z14, Z20, Z20
	VPANDD Z14, Z21, Z21
	VPTESTMB qb46<>(SB), Z5, K1
	VPADDB Z13, Z20, K1, Z20
	VPTESTMB qb57<>(SB), Z5, K2
	VPADDB Z13, Z21, K2, Z21
	VMOVD     (SI), X9
	VCVTPH2PS X9, X9
	KA(DI, Z4, Y4)
	KF((R8), (R9), Y4, Y25, X29)
	KA(DX, Z4, Y4)
	KF((R8)(R10*1), (R9)(R13*1), Y4, Y26, X30)
	LEAQ (R8)(R10*2), AX
	LEAQ (R9)(R13*2), R12
	KA(R14, Z4, Y4)
	KF((AX), (R12), Y4, Y27, X31)
	KA(R15, Z4, Y4)
	KF((AX)(R10*1), (R12)(R13*1), Y4, Y28, X15)
	ADDQ $176, SI
	ADDQ $256, DI
	ADDQ $256, DX
	ADDQ $256, R14
	ADDQ $256, R15
	ADDQ $4, R8
	ADDQ $32, R9
	DECQ CX
	JNZ  g5kloop
g5kdone:
	MOVQ    out+48(FP), AX
	VMOVUPS Y25, (AX)
	VMOVSS  X29, 32(AX)
	VMOVUPS Y26, 36(AX)
	VMOVSS  X30, 68(AX)
	VMOVUPS Y27, 72(AX)
	VMOVSS  X31, 104(AX)
	VMOVUPS Y28, 108(AX)
	VMOVSS  X15, 140(AX)
	VZEROUPPER
	RET

// One Q6_K weight row against four activation rows (GEMM) on the row
// kernel's ZMM form: the block's four level vectors (two sub-blocks of 32
// each, acts.k6's order) and scale pairs are made once, and each
// activation row (acts.k6 at DI, DX, R14, R15; acts.k6c at R9, R11, R12,
// R13; scales at R8 + a·R10) takes four VPMADDUBSW, VPSUBW and VPDPWSSD.
// Lane sums: Y8..Y11.

// Z6ROW(yp, cp, dmem, acc, yacc, sum): one activation row's block.
#define Z6ROW(yp, cp, dmem, acc, yacc, sum) \
	VPXORD     acc, acc, acc; \
	VPMADDUBSW 0(yp), Z24, Z0; \
	VPSUBW     0(cp), Z0, Z0; \
	VPDPWSSD   Z20, Z0, acc; \
	VPMADDUBSW 64(yp), Z25, Z0; \
	VPSUBW     64(cp), Z0, Z0; \
	VPDPWSSD   Z21, Z0, acc; \
	VPMADDUBSW 128(yp), Z26, Z0; \
	VPSUBW     128(cp), Z0, Z0; \
	VPDPWSSD   Z22, Z0, acc; \
	VPMADDUBSW 192(yp), Z27, Z0; \
	VPSUBW     192(cp), Z0, Z0; \
	VPDPWSSD   Z23, Z0, acc; \
	VEXTRACTI64X4 $1, acc, Y2; \
	VPADDD     Y2, yacc, yacc; \
	VMULSS     dmem, X1, X2; \
	VBROADCASTSS X2, Y2; \
	VCVTDQ2PS  yacc, yacc; \
	VMULPS     Y2, yacc, yacc; \
	VADDPS     yacc, sum, sum

// Z6LV(qloff, qhidx, lo, hi): the levels of one half of the block (ql at
// qloff(SI), qh in Z12) into lo (its first 64) and hi.
#define Z6LV(qloff, qhidx, lo, hi) \
	VPERMB  qloff(SI), Z13, Z0; \
	VPERMB  Z12, qhidx, Z2; \
	VPSLLVQ Z16, Z2, lo; \
	VPANDD  Z14, lo, lo; \
	VPTERNLOGD $0xf8, Z15, Z0, lo; \
	VPSRLW  $4, Z0, Z0; \
	VPSRLVQ Z17, Z2, hi; \
	VPANDD  Z14, hi, hi; \
	VPTERNLOGD $0xf8, Z15, Z0, hi

// func gemm1x4Q6KZ(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, out *float32)
// qa: acts.k6 of the first activation row; aux: its acts.k6c.
TEXT ·gemm1x4Q6KZ(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ qa+16(FP), DI
	MOVQ lda+24(FP), AX
	LEAQ (DI)(AX*1), DX
	LEAQ (DX)(AX*1), R14
	LEAQ (R14)(AX*1), R15
	MOVQ da+32(FP), R8
	MOVQ aux+40(FP), R9
	LEAQ (R9)(AX*1), R11
	LEAQ (R11)(AX*1), R12
	LEAQ (R12)(AX*1), R13
	MOVQ CX, R10
	SHLQ $2, R10
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	Z6CONST(Z28, Z29, Z30, Z31)
	TESTQ CX, CX
	JZ    g6zdone
g6zloop:
	VPMOVSXBW 192(SI), Y12
	VPERMD    Z12, Z28, Z20
	VPERMD    Z12, Z29, Z21
	VPERMD    Z12, Z30, Z22
	VPERMD    Z12, Z31, Z23
	VMOVDQU64 128(SI), Z12
	Z6LV(0, Z18, Z24, Z25)
	Z6LV(64, Z19, Z26, Z27)
	MOVWLZX   208(SI), AX
	VMOVD     AX, X1
	VCVTPH2PS X1, X1
	LEAQ (R8)(R10*2), AX
	Z6ROW(DI, R9, (R8), Z4, Y4, Y8)
	Z6ROW(DX, R11, (R8)(R10*1), Z5, Y5, Y9)
	Z6ROW(R14, R12, (AX), Z6, Y6, Y10)
	Z6ROW(R15, R13, (AX)(R10*1), Z7, Y7, Y11)
	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $256, DX
	ADDQ $256, R14
	ADDQ $256, R15
	ADDQ $256, R9
	ADDQ $256, R11
	ADDQ $256, R12
	ADDQ $256, R13
	ADDQ $4, R8
	DECQ CX
	JNZ  g6zloop
g6zdone:
	MOVQ    out+48(FP), AX
	VMOVUPS Y8, (AX)
	MOVL    $0, 32(AX)
	VMOVUPS Y9, 36(AX)
	MOVL    $0, 68(AX)
	VMOVUPS Y10, 72(AX)
	MOVL    $0, 104(AX)
	VMOVUPS Y11, 108(AX)
	MOVL    $0, 140(AX)
	VZEROUPPER
	RET
