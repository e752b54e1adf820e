//go:build amd64 && !purego

#include "textflag.h"

// AVX2 kernels for the K types, one weight row against one activation
// row (and one against four: the GEMM kernels at the end). ggml's generic
// code keeps eight int32 lanes per super-block, lane l summing the
// elements p with p%8 == l (times their sub-block's scale), and eight
// float32 sums, sums[l] += d*aux[l]; so these kernels keep the classes
// apart too, by moving the levels into acts.k6's order (below).
// The eight float32 sums and the scalar -dmin·Σmins·bsums chain are
// ggml's; out[0:8] gets sums, out[8] sumf, and Go adds them in ggml's order.

// G4KSETUP: the pointers and zeroed sums of the K GEMM kernels (defined
// before the first TEXT, for vet's frame check; the kernels: at the end).
#define G4KSETUP \
	MOVQ w+0(FP), SI; \
	MOVQ nb+8(FP), CX; \
	MOVQ qa+16(FP), DI; \
	MOVQ lda+24(FP), AX; \
	LEAQ (DI)(AX*1), DX; \
	LEAQ (DX)(AX*1), R14; \
	LEAQ (R14)(AX*1), R15; \
	MOVQ da+32(FP), R8; \
	MOVQ aux+40(FP), R9; \
	MOVQ CX, R10; \
	SHLQ $2, R10; \
	MOVQ CX, R13; \
	SHLQ $4, R13; \
	VXORPS Y10, Y10, Y10; \
	VXORPS Y11, Y11, Y11; \
	VXORPS Y13, Y13, Y13; \
	VXORPS Y14, Y14, Y14; \
	VXORPS X15, X15, X15

// KSUMY(A, B, C, D, S): ggml's final sum of four activation rows, whose
// eight lane sums are in A..D and whose sumf chains are S's lanes: the
// lanes transposed so that lane r of column l is row r's sums[l], then S
// += column 0, 1, ..., 7 (the generic code's sumf += sums[l], in order,
// for the four rows at once); lane r of S goes to y + r·ldy. Clobbers
// Y0..Y7 and AX, BX.
#define KSUMY(A, B, C, D, S) \
	VUNPCKLPS B, A, Y0; \
	VUNPCKHPS B, A, Y1; \
	VUNPCKLPS D, C, Y2; \
	VUNPCKHPS D, C, Y3; \
	VUNPCKLPD Y2, Y0, Y4; \
	VUNPCKHPD Y2, Y0, Y5; \
	VUNPCKLPD Y3, Y1, Y6; \
	VUNPCKHPD Y3, Y1, Y7; \
	VADDPS    X4, S, S; \
	VADDPS    X5, S, S; \
	VADDPS    X6, S, S; \
	VADDPS    X7, S, S; \
	VEXTRACTF128 $1, Y4, X4; \
	VEXTRACTF128 $1, Y5, X5; \
	VEXTRACTF128 $1, Y6, X6; \
	VEXTRACTF128 $1, Y7, X7; \
	VADDPS    X4, S, S; \
	VADDPS    X5, S, S; \
	VADDPS    X6, S, S; \
	VADDPS    X7, S, S; \
	MOVQ      y+48(FP), AX; \
	MOVQ      ldy+56(FP), BX; \
	VMOVSS    S, (AX); \
	VEXTRACTPS $1, S, (AX)(BX*4); \
	LEAQ      (AX)(BX*8), AX; \
	VEXTRACTPS $2, S, (AX); \
	VEXTRACTPS $3, S, (AX)(BX*4)

// The Q4_K and Q5_K kernels read the activation quants in acts.k6's order (in
// each 32: class c's quants c, c+8, c+16, c+24 at bytes 16*(c/4)+4*(c%4),
// as the Q6_K kernel does) and moves the weight levels there too: VPERMD
// (dwords 0, 2, 4, 6 | 1, 3, 5, 7) then VPSHUFB (a 4x4 byte transpose per
// lane) on each 32 packed bytes, before they split into their low and
// high nibbles (two sub-blocks of 32 in the same order). VPMADDUBSW's
// words are then [pair c, c+8; pair c+16, c+24] of class c, side by side,
// and one VPMADDWD against the scale in both words of a dword gives the
// scaled class sum of the 32 in dword c: no fold, no widening. The sums
// are integers, the same as the fold's: the same bits.
// The weight moves use k6Perm and k6Shuf (defined with the Q6_K kernel,
// which reads acts.k6 too).

// K4UNPACK: a Q4_K/Q5_K block's scales and mins (get_scale_min_k4)
// unpacked in XMM, the mins as words in X1: one VPSHUFB gathers [s0..s3, s8..s11, s4..s7,
// s8..s11] (the last four shifted down a nibble by a word shift and a
// blend), a mask keeps each code's low bits, and a second VPSHUFB brings
// the top two bits of s0..s3 (scales 4..7) and s4..s7 (mins 4..7) to bits
// 4 and 5: X1 = [scales 0..7, mins 0..7]. The scales go to 16(SP) as
// dwords with the scale in both words. Clobbers X0, X3, Y5, Y7 (not Y2:
// it holds the Q5_K row kernel's k6Perm).
#define K4UNPACK \
	VMOVDQU   (SI), X0; \
	VPSHUFB   kScA<>(SB), X0, X1; \
	VPSRLW    $4, X1, X3; \
	VPBLENDD  $8, X3, X1, X1; \
	VPAND     kScLo<>(SB), X1, X1; \
	VPSHUFB   kScB<>(SB), X0, X3; \
	VPSRLW    $2, X3, X3; \
	VPAND     kSc30<>(SB), X3, X3; \
	VPOR      X3, X1, X1; \
	VPMOVZXBD X1, Y5; \
	VPSLLD    $16, Y5, Y7; \
	VPOR      Y7, Y5, Y5; \
	VMOVDQU   Y5, 16(SP); \
	VPSRLDQ   $8, X1, X1; \
	VPMOVZXBW X1, X1

// K4SCALES(aux): K4UNPACK, then X6 = float32(Σ mins × the eight 32-quant
// sums at aux, int16: acts.m16), the exact integer of ggml's sumi.
#define K4SCALES(aux) \
	K4UNPACK; \
	VPMADDWD  aux, X1, X1; \
	VPSHUFD   $0x4e, X1, X3; \
	VPADDD    X3, X1, X1; \
	VPSHUFD   $0xb1, X1, X3; \
	VPADDD    X3, X1, X6; \
	VCVTDQ2PS X6, X6

// kScA gathers [s0..s3, s8..s11, s4..s7, s8..s11] from a block's first
// 16 bytes (d, dmin, s0..s11); kScB [0, s0..s3, 0, s4..s7] by dwords.
DATA kScA<>+0(SB)/8, $0x0f0e0d0c07060504
DATA kScA<>+8(SB)/8, $0x0f0e0d0c0b0a0908
GLOBL kScA<>(SB), RODATA|NOPTR, $16
DATA kScB<>+0(SB)/8, $0x0706050480808080
DATA kScB<>+8(SB)/8, $0x0b0a090880808080
GLOBL kScB<>(SB), RODATA|NOPTR, $16
DATA kScLo<>+0(SB)/8, $0x0f0f0f0f3f3f3f3f
DATA kScLo<>+8(SB)/8, $0x0f0f0f0f3f3f3f3f
GLOBL kScLo<>(SB), RODATA|NOPTR, $16
DATA kSc30<>+0(SB)/8, $0x3030303030303030
DATA kSc30<>+8(SB)/8, $0x3030303030303030
GLOBL kSc30<>(SB), RODATA|NOPTR, $16

// K4SUB(Yq, ymem, scoff): aux (Y10) += the [scale, scale] words at
// scoff(SP) times the level pairs of Yq against the 32 quants at ymem.
#define K4SUB(Yq, ymem, scoff) \
	VPMADDUBSW   ymem, Yq, Yq; \
	VPBROADCASTD scoff(SP), Y3; \
	VPMADDWD     Y3, Yq, Yq; \
	VPADDD       Yq, Y10, Y10

// K4CHUNK(woff, aoffA, aoffB, scA, scB): the 64 levels packed at woff(SI)
// (low nibbles: sub-block A, high: B) in acts.k6's order, then K4SUB for
// each.
#define K4CHUNK(woff, aoffA, aoffB, scA, scB) \
	VPERMD  woff(SI), Y15, Y0; \
	VPSHUFB Y11, Y0, Y0; \
	VPSRLW  $4, Y0, Y1; \
	VPAND   Y14, Y0, Y0; \
	VPAND   Y14, Y1, Y1; \
	K4SUB(Y0, aoffA(DI), scA); \
	K4SUB(Y1, aoffB(DI), scB)

// func dotQ4KAVX2(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
// qa: acts.k6; aux: per block eight int16 sums of 32 activation quants (acts.m16).
TEXT ·dotQ4KAVX2(SB), NOSPLIT, $64-48
	MOVQ w+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ qa+16(FP), DI
	MOVQ da+24(FP), R8
	MOVQ aux+32(FP), R9
	VXORPS Y13, Y13, Y13
	VXORPS X12, X12, X12
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	VMOVDQU k6Shuf<>(SB), Y11
	VMOVDQU k6Perm<>(SB), Y15
	TESTQ CX, CX
	JZ    q4kdone
q4kloop:
	// 2 KiB (14 blocks) ahead, as the Q6_K kernel: on a streamed 4096x14336
	// weight 1.02-1.11x faster (median ~1.04) than two and a half blocks
	// ahead; less than Q6_K gained, as this kernel streams at nearly its
	// in-cache speed already
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2176(SI)
	K4SCALES((R9))
	VPXOR Y10, Y10, Y10
	K4CHUNK(16, 0, 32, 16, 20)
	K4CHUNK(48, 64, 96, 24, 28)
	K4CHUNK(80, 128, 160, 32, 36)
	K4CHUNK(112, 192, 224, 40, 44)
	// d = dx*dy, dmin = dmx*dy (lanes 0 and 1 of X7)
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
	VSUBSS       X8, X12, X12
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $4, R8
	ADDQ $16, R9
	DECQ CX
	JNZ  q4kloop
q4kdone:
	MOVQ    out+40(FP), R10
	VMOVUPS Y13, (R10)
	VMOVSS  X12, 32(R10)
	VZEROUPPER
	RET

// func dotQ5KAVX2(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
// qa: acts.k6; aux: per block eight int16 sums of 32 activation quants (acts.m16).
// Q4_K with a fifth bit per level from qh, moved to bit 4 by a shift and
// a mask; qh's 32 bytes take the same VPERMD and VPSHUFB as each 32 of
// qs, so that their bytes stay side by side.
TEXT ·dotQ5KAVX2(SB), NOSPLIT, $64-48
	MOVQ w+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ qa+16(FP), DI
	MOVQ da+24(FP), R8
	MOVQ aux+32(FP), R9
	VXORPS Y13, Y13, Y13
	VXORPS X12, X12, X12
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	VMOVDQU k6Shuf<>(SB), Y11
	VMOVDQU k6Perm<>(SB), Y2
	MOVL $0x10101010, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	TESTQ CX, CX
	JZ    q5kdone
q5kloop:
	// 2 KiB (11-12 blocks) ahead, as the Q6_K kernel: on a streamed
	// 4096x14336 weight 1.03-1.09x faster (median ~1.04) than two and a
	// half blocks ahead
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2176(SI)
	K4SCALES((R9))
	VPXOR Y10, Y10, Y10
	VPERMD  16(SI), Y2, Y9
	VPSHUFB Y11, Y9, Y9
	VPERMD  48(SI), Y2, Y0
	VPSHUFB Y11, Y0, Y0
	VPSRLW  $4, Y0, Y1
	VPAND   Y14, Y0, Y0
	VPAND   Y14, Y1, Y1
	VPSLLW $4, Y9, Y4
	VPAND   Y15, Y4, Y4
	VPOR    Y4, Y0, Y0
	VPSLLW $3, Y9, Y5
	VPAND   Y15, Y5, Y5
	VPOR    Y5, Y1, Y1
	K4SUB(Y0, 0(DI), 16)
	K4SUB(Y1, 32(DI), 20)
	VPERMD  80(SI), Y2, Y0
	VPSHUFB Y11, Y0, Y0
	VPSRLW  $4, Y0, Y1
	VPAND   Y14, Y0, Y0
	VPAND   Y14, Y1, Y1
	VPSLLW $2, Y9, Y4
	VPAND   Y15, Y4, Y4
	VPOR    Y4, Y0, Y0
	VPSLLW $1, Y9, Y5
	VPAND   Y15, Y5, Y5
	VPOR    Y5, Y1, Y1
	K4SUB(Y0, 64(DI), 24)
	K4SUB(Y1, 96(DI), 28)
	VPERMD  112(SI), Y2, Y0
	VPSHUFB Y11, Y0, Y0
	VPSRLW  $4, Y0, Y1
	VPAND   Y14, Y0, Y0
	VPAND   Y14, Y1, Y1
	VMOVDQU Y9, Y4
	VPAND   Y15, Y4, Y4
	VPOR    Y4, Y0, Y0
	VPSRLW $1, Y9, Y5
	VPAND   Y15, Y5, Y5
	VPOR    Y5, Y1, Y1
	K4SUB(Y0, 128(DI), 32)
	K4SUB(Y1, 160(DI), 36)
	VPERMD  144(SI), Y2, Y0
	VPSHUFB Y11, Y0, Y0
	VPSRLW  $4, Y0, Y1
	VPAND   Y14, Y0, Y0
	VPAND   Y14, Y1, Y1
	VPSRLW $2, Y9, Y4
	VPAND   Y15, Y4, Y4
	VPOR    Y4, Y0, Y0
	VPSRLW $3, Y9, Y5
	VPAND   Y15, Y5, Y5
	VPOR    Y5, Y1, Y1
	K4SUB(Y0, 192(DI), 40)
	K4SUB(Y1, 224(DI), 44)
	// d = dx*dy, dmin = dmx*dy (lanes 0 and 1 of X7)
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
	VSUBSS       X8, X12, X12
	ADDQ $176, SI
	ADDQ $256, DI
	ADDQ $4, R8
	ADDQ $16, R9
	DECQ CX
	JNZ  q5kloop
q5kdone:
	MOVQ    out+40(FP), R10
	VMOVUPS Y13, (R10)
	VMOVSS  X12, 32(R10)
	VZEROUPPER
	RET

// The Q6_K kernel reads the activation quants in acts.k6's order. VPERMD and VPSHUFB put, in
// each 32-level vector (one sub-block of 32, groups A and B of 16 with their
// own scales), the bytes of levels c, c+8 of A and c, c+8 of B next to each
// other, class c = 0..3 in the low lane and 4..7 in the high one. So
// VPMADDUBSW gives words [A's class-c pair, B's class-c pair], VPSUBW takes
// off 32·(the activation pairs, a second VPMADDUBSW), and one VPMADDWD against the dword
// [scale A, scale B] gives the scaled class-c sums of both groups: the
// eight lanes of ggml's aux32 (in the lane order of ggml's generic code).

DATA k6Perm<>+0(SB)/4, $0
DATA k6Perm<>+4(SB)/4, $2
DATA k6Perm<>+8(SB)/4, $4
DATA k6Perm<>+12(SB)/4, $6
DATA k6Perm<>+16(SB)/4, $1
DATA k6Perm<>+20(SB)/4, $3
DATA k6Perm<>+24(SB)/4, $5
DATA k6Perm<>+28(SB)/4, $7
GLOBL k6Perm<>(SB), RODATA|NOPTR, $32

DATA k6Shuf<>+0(SB)/8, $0x0d0905010c080400
DATA k6Shuf<>+8(SB)/8, $0x0f0b07030e0a0602
DATA k6Shuf<>+16(SB)/8, $0x0d0905010c080400
DATA k6Shuf<>+24(SB)/8, $0x0f0b07030e0a0602
GLOBL k6Shuf<>(SB), RODATA|NOPTR, $32

// Q6SUB(Yq, Yt, aoff, soff): Y10 += the scaled class sums of the 32
// levels in Yq (one sub-block of 32) against acts.k6 at aoff(DI), with the
// scales' dword at soff(SP); Yt is scratch. The 32-fold activation pair
// sums come from a VPMADDUBSW against Y0's bytes of 32, not from
// acts.k6c, so that a long row's activation stays in L1 (the VNNI
// kernel's Z6SUB says why).
#define Q6SUB(Yq, Yt, aoff, soff) \
	VMOVDQU      aoff(DI), Yt; \
	VPMADDUBSW   Yt, Yq, Yq; \
	VPMADDUBSW   Yt, Y0, Yt; \
	VPSUBW       Yt, Yq, Yq; \
	VPBROADCASTD soff(SP), Yt; \
	VPMADDWD     Yt, Yq, Yq; \
	VPADDD       Yq, Y10, Y10

DATA q6c32<>+0(SB)/4, $0x20202020
GLOBL q6c32<>(SB), RODATA|NOPTR, $4

// Q6HALF(qloff, qhoff, aoff, soff): the 128 levels of one half of the
// block: ql at qloff(SI), qh at qhoff(SI); its four sub-blocks'
// activations from aoff(DI) and scale dwords from soff(SP) on.
#define Q6HALF(qloff, qhoff, aoff, soff) \
	VPERMD  qloff(SI), Y13, Y0; \
	VPERMD  qloff+32(SI), Y13, Y1; \
	VPERMD  qhoff(SI), Y13, Y2; \
	VPSHUFB Y12, Y0, Y0; \
	VPSHUFB Y12, Y1, Y1; \
	VPSHUFB Y12, Y2, Y2; \
	VPAND   Y15, Y0, Y3; \
	VPSLLW  $4, Y2, Y4; \
	VPAND   Y14, Y4, Y4; \
	VPOR    Y4, Y3, Y3; \
	VPAND   Y15, Y1, Y5; \
	VPSLLW  $2, Y2, Y6; \
	VPAND   Y14, Y6, Y6; \
	VPOR    Y6, Y5, Y5; \
	VPSRLW  $4, Y0, Y7; \
	VPAND   Y15, Y7, Y7; \
	VPAND   Y14, Y2, Y8; \
	VPOR    Y8, Y7, Y7; \
	VPSRLW  $4, Y1, Y9; \
	VPAND   Y15, Y9, Y9; \
	VPSRLW  $2, Y2, Y2; \
	VPAND   Y14, Y2, Y2; \
	VPOR    Y2, Y9, Y9; \
	VPBROADCASTD q6c32<>(SB), Y0; \
	Q6SUB(Y3, Y4, aoff, soff); \
	Q6SUB(Y5, Y6, aoff+32, soff+4); \
	Q6SUB(Y7, Y8, aoff+64, soff+8); \
	Q6SUB(Y9, Y2, aoff+96, soff+12)

// func dotQ6KAVX2(w *byte, nb int, qa *int8, da *float32, aux unsafe.Pointer, out *float32)
// qa: acts.k6; aux is not read.
TEXT ·dotQ6KAVX2(SB), NOSPLIT, $64-48
	MOVQ w+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ qa+16(FP), DI
	MOVQ da+24(FP), R8
	VXORPS Y11, Y11, Y11
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x30303030, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	VMOVDQU k6Perm<>(SB), Y13
	VMOVDQU k6Shuf<>(SB), Y12
	TESTQ CX, CX
	JZ    q6kdone
q6kloop:
	// about ten blocks ahead: a decode product streams the weight from
	// memory, and two or three blocks ahead (the other K kernels')
	// measured 1.35-1.45x slower on a 48 MB weight
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2176(SI)
	PREFETCHT0 2240(SI)
	// the 16 int8 scales as words at 0(SP)..30(SP): dword s is the
	// [scale A, scale B] pair of sub-block s
	VPMOVSXBW 192(SI), Y0
	VMOVDQU   Y0, 0(SP)
	VPXOR     Y10, Y10, Y10
	Q6HALF(0, 128, 0, 0)
	Q6HALF(64, 160, 128, 16)
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
	JNZ  q6kloop
q6kdone:
	MOVQ    out+40(FP), R10
	VMOVUPS Y11, (R10)
	MOVL    $0, 32(R10)
	VZEROUPPER
	RET

// One Q4_K weight row against four activation rows (AVX2 GEMM), in the
// row kernel's layout: each 32 packed bytes are moved into acts.k6's order
// once (VPERMD, VPSHUFB) and split into two sub-blocks' levels, and each
// activation row (acts.k6 at DI, DX, R14, R15) takes one VPMADDUBSW,
// VPMADDWD (against the [scale, scale] dword) and VPADDD per sub-block.
// Integer lanes in Y6..Y9, float sums in Y10, Y11, Y13, Y14; the four
// rows' sumf chains in the lanes of X15 (lane a: activation row a), with
// their Σ mins × 32-sums reduced together (the 32-sums, int16, at R9 +
// a·R13, R13 = 16·nb; scales at R8 + a·R10, R10 = 4·nb). Scale dwords at
// 16(SP)..47(SP), mins at 48(SP)..79(SP).

// G4KROW(Yq, yp, off, acc): acc += the scale dword in Y3 times the class
// sums of levels Yq against the quants at off(yp).
#define G4KROW(Yq, yp, off, acc) \
	VPMADDUBSW off(yp), Yq, Y2; \
	VPMADDWD   Y3, Y2, Y2; \
	VPADDD     Y2, acc, acc

// G4KSUB(Yq, off, sc): one sub-block of 32 levels for the four rows.
#define G4KSUB(Yq, off, sc) \
	VPBROADCASTD sc(SP), Y3; \
	G4KROW(Yq, DI, off, Y6); \
	G4KROW(Yq, DX, off, Y7); \
	G4KROW(Yq, R14, off, Y8); \
	G4KROW(Yq, R15, off, Y9)

// G4KCHUNK(woff, aoffA, aoffB, scA, scB): K4CHUNK's levels, then G4KSUB
// for each of its two sub-blocks.
#define G4KCHUNK(woff, aoffA, aoffB, scA, scB) \
	VMOVDQU k6Perm<>(SB), Y3; \
	VPERMD  woff(SI), Y3, Y0; \
	VPSHUFB k6Shuf<>(SB), Y0, Y0; \
	VPSRLW  $4, Y0, Y1; \
	VPAND   ·bytes0f(SB), Y0, Y0; \
	VPAND   ·bytes0f(SB), Y1, Y1; \
	G4KSUB(Y0, aoffA, scA); \
	G4KSUB(Y1, aoffB, scB)

// G4KFIN(dmem, lane, acc, sum): with X4 = [dx, dmx], sum += (dx·dy) ×
// float(acc) and dmx·dy into lane of X0.
#define G4KFIN(dmem, lane, acc, sum) \
	VBROADCASTSS dmem, X5; \
	VMULPS       X4, X5, X5; \
	VBROADCASTSS X5, Y12; \
	VCVTDQ2PS    acc, acc; \
	VMULPS       Y12, acc, acc; \
	VADDPS       acc, sum, sum; \
	VINSERTPS    $(0x40|(lane<<4)), X5, X0, X0

// G4KSCALES: a K block's scale dwords to 16(SP) and its mins as words to
// 48(SP) (K4UNPACK); zeroes Y6..Y9.
#define G4KSCALES \
	K4UNPACK; \
	VMOVDQU X1, 48(SP); \
	VPXOR   Y6, Y6, Y6; \
	VPXOR   Y7, Y7, Y7; \
	VPXOR   Y8, Y8, Y8; \
	VPXOR   Y9, Y9, Y9

// G4KEND: the float steps of a K block for the four rows: d = dx·dy and
// dmin = dmx·dy per row, sums += d·float(lanes), and the four rows' sumi
// (Σ mins × 32-sums) reduced together, sumf -= dmin·sumi in X15's lanes.
#define G4KEND \
	VMOVD     (SI), X4; \
	VCVTPH2PS X4, X4; \
	LEAQ (R8)(R10*2), AX; \
	G4KFIN((R8), 0, Y6, Y10); \
	G4KFIN((R8)(R10*1), 1, Y7, Y11); \
	G4KFIN((AX), 2, Y8, Y13); \
	G4KFIN((AX)(R10*1), 3, Y9, Y14); \
	VMOVDQU  48(SP), X3; \
	LEAQ     (R9)(R13*2), AX; \
	VPMADDWD (R9), X3, X6; \
	VPMADDWD (R9)(R13*1), X3, X7; \
	VPMADDWD (AX), X3, X8; \
	VPMADDWD (AX)(R13*1), X3, X9; \
	VPHADDD  X7, X6, X6; \
	VPHADDD  X9, X8, X8; \
	VPHADDD  X8, X6, X6; \
	VCVTDQ2PS X6, X6; \
	VMULPS  X6, X0, X0; \
	VSUBPS  X0, X15, X15

// G4KNEXT(size): the next block of the weight row and the four
// activation rows (acts.k6, scales, int16 32-sums).
#define G4KNEXT(size) \
	ADDQ $size, SI; \
	ADDQ $256, DI; \
	ADDQ $256, DX; \
	ADDQ $256, R14; \
	ADDQ $256, R15; \
	ADDQ $4, R8; \
	ADDQ $16, R9

// func gemm1x4Q4KAVX2(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, y *float32, ldy int)
// qa: acts.k6 of the first activation row; aux: its 32-quant sums (acts.m16).
TEXT ·gemm1x4Q4KAVX2(SB), NOSPLIT, $80-64
	G4KSETUP
	TESTQ CX, CX
	JZ    h4kdone
h4kloop:
	G4KSCALES
	G4KCHUNK(16, 0, 32, 16, 20)
	G4KCHUNK(48, 64, 96, 24, 28)
	G4KCHUNK(80, 128, 160, 32, 36)
	G4KCHUNK(112, 192, 224, 40, 44)
	G4KEND
	G4KNEXT(144)
	DECQ CX
	JNZ  h4kloop
h4kdone:
	KSUMY(Y10, Y11, Y13, Y14, X15)
	VZEROUPPER
	RET

// One Q6_K weight row against four activation rows (AVX2 GEMM): each half
// block's four level vectors are made once (as Q6HALF, with the masks
// from memory) and run against the four activation rows (acts.k6 at DI,
// DX, R14, R15; acts.k6c at R9, R11, R12, R13, so that the 32-fold pair
// sums are read, not made, once per row; scales at R8 + a·R10, R10 = 4·nb).
// Integer lanes in Y4..Y7, float sums in Y8..Y11.

DATA k6Hi<>+0(SB)/8, $0x3030303030303030
DATA k6Hi<>+8(SB)/8, $0x3030303030303030
DATA k6Hi<>+16(SB)/8, $0x3030303030303030
DATA k6Hi<>+24(SB)/8, $0x3030303030303030
GLOBL k6Hi<>(SB), RODATA|NOPTR, $32

// G6ROW(Yq, yp, cp, off, acc): acc += the scale dword in Y14 times the
// class sums of levels Yq against the quants at off(yp), less the 32-fold
// pair sums at off(cp).
#define G6ROW(Yq, yp, cp, off, acc) \
	VPMADDUBSW off(yp), Yq, Y2; \
	VPSUBW     off(cp), Y2, Y2; \
	VPMADDWD   Y14, Y2, Y2; \
	VPADDD     Y2, acc, acc

// G6SUB(Yq, off, soff): one sub-block of 32 levels for the four rows.
#define G6SUB(Yq, off, soff) \
	VPBROADCASTD soff(SP), Y14; \
	G6ROW(Yq, DI, R9, off, Y4); \
	G6ROW(Yq, DX, R11, off, Y5); \
	G6ROW(Yq, R14, R12, off, Y6); \
	G6ROW(Yq, R15, R13, off, Y7)

// G6HALF(qloff, qhoff, aoff, soff): the 128 levels of one half block (ql
// at qloff(SI), qh at qhoff(SI)) into Y3, Y12, Y0, Y1 (sub-blocks
// 0..3 of the half, as Q6HALF's Y3, Y5, Y7, Y9), then G6SUB for each.
#define G6HALF(qloff, qhoff, aoff, soff) \
	VPERMD  qloff(SI), Y15, Y0; \
	VPERMD  qloff+32(SI), Y15, Y1; \
	VPERMD  qhoff(SI), Y15, Y2; \
	VPSHUFB k6Shuf<>(SB), Y0, Y0; \
	VPSHUFB k6Shuf<>(SB), Y1, Y1; \
	VPSHUFB k6Shuf<>(SB), Y2, Y2; \
	VPAND   ·bytes0f(SB), Y0, Y3; \
	VPSLLW  $4, Y2, Y12; \
	VPAND   k6Hi<>(SB), Y12, Y12; \
	VPOR    Y12, Y3, Y3; \
	VPAND   ·bytes0f(SB), Y1, Y12; \
	VPSLLW  $2, Y2, Y13; \
	VPAND   k6Hi<>(SB), Y13, Y13; \
	VPOR    Y13, Y12, Y12; \
	VPSRLW  $4, Y0, Y0; \
	VPAND   ·bytes0f(SB), Y0, Y0; \
	VPAND   k6Hi<>(SB), Y2, Y13; \
	VPOR    Y13, Y0, Y0; \
	VPSRLW  $4, Y1, Y1; \
	VPAND   ·bytes0f(SB), Y1, Y1; \
	VPSRLW  $2, Y2, Y2; \
	VPAND   k6Hi<>(SB), Y2, Y2; \
	VPOR    Y2, Y1, Y1; \
	G6SUB(Y3, aoff, soff); \
	G6SUB(Y12, aoff+32, soff+4); \
	G6SUB(Y0, aoff+64, soff+8); \
	G6SUB(Y1, aoff+96, soff+12)

// G6FIN(dmem, acc, sum): sum += (dx·dy) × float(acc), dx in X14.
#define G6FIN(dmem, acc, sum) \
	VMULSS       dmem, X14, X2; \
	VBROADCASTSS X2, Y2; \
	VCVTDQ2PS    acc, acc; \
	VMULPS       Y2, acc, acc; \
	VADDPS       acc, sum, sum

// func gemm1x4Q6KAVX2(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, y *float32, ldy int)
// qa: acts.k6 of the first activation row; aux: its acts.k6c.
TEXT ·gemm1x4Q6KAVX2(SB), NOSPLIT, $64-64
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
	VMOVDQU k6Perm<>(SB), Y15
	TESTQ CX, CX
	JZ    g6ydone
g6yloop:
	// the 16 int8 scales as words at 0(SP)..30(SP), as the row kernel
	VPMOVSXBW 192(SI), Y0
	VMOVDQU   Y0, 0(SP)
	VPXOR     Y4, Y4, Y4
	VPXOR     Y5, Y5, Y5
	VPXOR     Y6, Y6, Y6
	VPXOR     Y7, Y7, Y7
	G6HALF(0, 128, 0, 0)
	G6HALF(64, 160, 128, 16)
	MOVWLZX   208(SI), AX
	VMOVD     AX, X14
	VCVTPH2PS X14, X14
	LEAQ (R8)(R10*2), AX
	G6FIN((R8), Y4, Y8)
	G6FIN((R8)(R10*1), Y5, Y9)
	G6FIN((AX), Y6, Y10)
	G6FIN((AX)(R10*1), Y7, Y11)
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
	JNZ  g6yloop
g6ydone:
	VXORPS X12, X12, X12 // Q6_K's sumf before the lane sums: 0
	KSUMY(Y8, Y9, Y10, Y11, X12)
	VZEROUPPER
	RET

// G5KCHUNK(woff, aoffA, aoffB, scA, scB, SHA, nA, SHB, nB): G4KCHUNK with
// the fifth bits: the qh bytes in Y12 (in acts.k6's order, as the row
// kernel's Y9) shifted by SHA nA (SHB nB) to bit 4 for sub-block A (B).
#define G5KCHUNK(woff, aoffA, aoffB, scA, scB, SHA, nA, SHB, nB) \
	VMOVDQU k6Perm<>(SB), Y3; \
	VPERMD  woff(SI), Y3, Y0; \
	VPSHUFB k6Shuf<>(SB), Y0, Y0; \
	VPSRLW  $4, Y0, Y1; \
	VPAND   ·bytes0f(SB), Y0, Y0; \
	VPAND   ·bytes0f(SB), Y1, Y1; \
	SHA     $nA, Y12, Y4; \
	VPAND   ·bytes10(SB), Y4, Y4; \
	VPOR    Y4, Y0, Y0; \
	SHB     $nB, Y12, Y5; \
	VPAND   ·bytes10(SB), Y5, Y5; \
	VPOR    Y5, Y1, Y1; \
	G4KSUB(Y0, aoffA, scA); \
	G4KSUB(Y1, aoffB, scB)

// func gemm1x4Q5KAVX2(w *byte, nb int, qa *int8, lda int, da *float32, aux unsafe.Pointer, y *float32, ldy int)
// One Q5_K weight row against four activation rows: gemm1x4Q4KAVX2 with
// the row kernel's fifth bits. qa: acts.k6 of the first activation row;
// aux: its 32-quant sums.
TEXT ·gemm1x4Q5KAVX2(SB), NOSPLIT, $80-64
	G4KSETUP
	TESTQ CX, CX
	JZ    h5kdone
h5kloop:
	G4KSCALES
	VMOVDQU k6Perm<>(SB), Y3
	VPERMD  16(SI), Y3, Y12
	VPSHUFB k6Shuf<>(SB), Y12, Y12
	G5KCHUNK(48, 0, 32, 16, 20, VPSLLW, 4, VPSLLW, 3)
	G5KCHUNK(80, 64, 96, 24, 28, VPSLLW, 2, VPSLLW, 1)
	G5KCHUNK(112, 128, 160, 32, 36, VPSLLW, 0, VPSRLW, 1)
	G5KCHUNK(144, 192, 224, 40, 44, VPSRLW, 2, VPSRLW, 3)
	G4KEND
	G4KNEXT(176)
	DECQ CX
	JNZ  h5kloop
h5kdone:
	KSUMY(Y10, Y11, Y13, Y14, X15)
	VZEROUPPER
	RET

// func fillK6AVX2(src, dst *int8, corr *int16, n int)
// fillK6 for n sub-blocks of 32 quants: the k6Perm/k6Shuf move that the
// K kernels apply to the weight levels puts the quants in acts.k6's order,
// and, unless corr is nil, VPMADDUBSW against 32s gives acts.k6c's
// 32-fold pair sums.
TEXT ·fillK6AVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ corr+16(FP), DX
	MOVQ n+24(FP), CX
	VMOVDQU k6Perm<>(SB), Y15
	VMOVDQU k6Shuf<>(SB), Y14
	MOVL $0x20202020, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	TESTQ CX, CX
	JZ    fk6done
	TESTQ DX, DX
	JZ    fk6only
fk6loop:
	VPERMD     (SI), Y15, Y0
	VPSHUFB    Y14, Y0, Y0
	VMOVDQU    Y0, (DI)
	VPMADDUBSW Y0, Y13, Y1
	VMOVDQU    Y1, (DX)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, DX
	DECQ CX
	JNZ  fk6loop
	JMP  fk6done
fk6only:
	VPERMD  (SI), Y15, Y0
	VPSHUFB Y14, Y0, Y0
	VMOVDQU Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  fk6only
fk6done:
	VZEROUPPER
	RET
