//go:build amd64 && !purego

#include "textflag.h"
#include "transpose8_amd64.h"

// Packing kernels of the fast convolution (conv_f32.go): they fill the
// 16-column B panels of the 6x16 GEMM micro-kernel from the (padded) input.

// func convCopy16(dst, src *float32, koff *int, n, ldd int)
// dst[ldd*i : ldd*i+16] = src[koff[i] : koff[i]+16] for i < n: a panel (or
// a 16-column part of a wider one, rows ldd apart) whose 16 columns are
// one contiguous run of the input, one k step per 64-byte copy.
TEXT ·convCopy16(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ koff+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ ldd+32(FP), R8
	SHLQ $2, R8
	TESTQ CX, CX
	JLE  copydone

copyloop:
	MOVQ    (DX), AX
	VMOVUPS (SI)(AX*4), Y0
	VMOVUPS 32(SI)(AX*4), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ    $8, DX
	ADDQ    R8, DI
	DECQ    CX
	JNZ     copyloop
	VZEROUPPER

copydone:
	RET

// LOADROWS loads 8 floats of each of 8 columns: column r starts at element
// cols[off/8 + r] of src (SI already advanced to the current k step).
#define LOADROWS(off) \
	MOVQ off+0(R9), AX; VMOVUPS (SI)(AX*4), Y0 \
	MOVQ off+8(R9), AX; VMOVUPS (SI)(AX*4), Y1 \
	MOVQ off+16(R9), AX; VMOVUPS (SI)(AX*4), Y2 \
	MOVQ off+24(R9), AX; VMOVUPS (SI)(AX*4), Y3 \
	MOVQ off+32(R9), AX; VMOVUPS (SI)(AX*4), Y4 \
	MOVQ off+40(R9), AX; VMOVUPS (SI)(AX*4), Y5 \
	MOVQ off+48(R9), AX; VMOVUPS (SI)(AX*4), Y6 \
	MOVQ off+56(R9), AX; VMOVUPS (SI)(AX*4), Y7

// STORE8 stores k steps 0-7 (Y8-Y15) at column offset off bytes of their
// panel rows, R8 bytes apart (R10 = 3*R8).
#define STORE8(off) \
	MOVQ DI, R11 \
	VMOVUPS Y8, off+0(R11) \
	VMOVUPS Y9, off(R11)(R8*1) \
	VMOVUPS Y10, off(R11)(R8*2) \
	VMOVUPS Y11, off(R11)(R10*1) \
	LEAQ (R11)(R8*4), R11 \
	VMOVUPS Y12, off+0(R11) \
	VMOVUPS Y13, off(R11)(R8*1) \
	VMOVUPS Y14, off(R11)(R8*2) \
	VMOVUPS Y15, off(R11)(R10*1)

// func convTrans16(dst, src *float32, cols *[16]int, n, ldd int)
// dst[ldd*k + q] = src[cols[q] + k] for k < n (a multiple of 8), q < 16:
// 16 columns of a panel (rows ldd apart: 16, a whole 6x16 panel; 64, a
// quarter of a 6x64 one) whose k steps are contiguous in the input for
// every column (the weight gradient's convolution), as 8x8 transposes.
TEXT ·convTrans16(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ cols+16(FP), R9
	MOVQ n+24(FP), CX
	MOVQ ldd+32(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R10
	MOVQ R8, R12
	SHLQ $3, R12
	SHRQ $3, CX
	JZ   transdone

transloop:
	LOADROWS(0)
	TRANSPOSE8
	STORE8(0)
	LOADROWS(64)
	TRANSPOSE8
	STORE8(32)
	ADDQ $32, SI
	ADDQ R12, DI
	DECQ CX
	JNZ  transloop
	VZEROUPPER

transdone:
	RET

// LOADROWS2 is LOADROWS for runs with element step 2: each column's 8
// values are the even elements of 16 consecutive ones (two loads, a
// shuffle of the even lanes and a lane reorder).
#define LOADROW2(off, R) \
	MOVQ off(R9), AX \
	VMOVUPS (SI)(AX*4), Y8 \
	VMOVUPS 32(SI)(AX*4), Y9 \
	VSHUFPS $0x88, Y9, Y8, R \
	VPERMPD $0xD8, R, R

#define LOADROWS2(off) \
	LOADROW2(off+0, Y0) \
	LOADROW2(off+8, Y1) \
	LOADROW2(off+16, Y2) \
	LOADROW2(off+24, Y3) \
	LOADROW2(off+32, Y4) \
	LOADROW2(off+40, Y5) \
	LOADROW2(off+48, Y6) \
	LOADROW2(off+56, Y7)

// func convTrans16S2(dst, src *float32, cols *[16]int, n, ldd int)
// dst[ldd*k + q] = src[cols[q] + 2k] for k < n (a multiple of 8), q < 16:
// convTrans16 for k runs with element step 2 (the weight gradient of a
// stride-2 convolution). It reads src[cols[q] + 2n - 1] too.
TEXT ·convTrans16S2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ cols+16(FP), R9
	MOVQ n+24(FP), CX
	MOVQ ldd+32(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R10
	MOVQ R8, R12
	SHLQ $3, R12
	SHRQ $3, CX
	JZ   trans2done

trans2loop:
	LOADROWS2(0)
	TRANSPOSE8
	STORE8(0)
	LOADROWS2(64)
	TRANSPOSE8
	STORE8(32)
	ADDQ $64, SI
	ADDQ R12, DI
	DECQ CX
	JNZ  trans2loop
	VZEROUPPER

trans2done:
	RET

// func convRuns16(dst, src *float32, koff *int, n int, runs *[4][2]int, nruns, ldd int)
// For k < n: dst[ldd*k : ldd*k+16] = the lanes i of runs r < nruns (1 to 4),
// each lane i set in mask runs[r][1] taking src[koff[k] + runs[r][0] + i]
// (AVX-512): a 16-column panel made of a few contiguous runs of the input
// (output rows shorter than a panel). runs[r][0] is the run's source
// offset less its first lane, so that one merge-masked load per run puts
// it in place; masked-off lanes are not read.
TEXT ·convRuns16(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ koff+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ runs+32(FP), R8
	MOVQ nruns+40(FP), R9
	MOVQ ldd+48(FP), R13
	SHLQ $2, R13
	TESTQ CX, CX
	JLE  runsdone
	MOVQ  0(R8), BX
	KMOVW 8(R8), K1
	MOVQ  16(R8), R11
	KMOVW 24(R8), K2
	MOVQ  32(R8), R12
	KMOVW 40(R8), K3
	KMOVW 56(R8), K4

runsk:
	MOVQ    (DX), AX
	LEAQ    (SI)(AX*4), R10
	VMOVUPS.Z (R10)(BX*4), K1, Z0
	CMPQ    R9, $2
	JLT     runsstore
	VMOVUPS (R10)(R11*4), K2, Z0
	CMPQ    R9, $3
	JLT     runsstore
	VMOVUPS (R10)(R12*4), K3, Z0
	CMPQ    R9, $4
	JLT     runsstore
	MOVQ    48(R8), AX
	VMOVUPS (R10)(AX*4), K4, Z0

runsstore:
	VMOVUPS Z0, (DI)
	ADDQ    $8, DX
	ADDQ    R13, DI
	DECQ    CX
	JNZ     runsk
	VZEROUPPER

runsdone:
	RET
