//go:build amd64 && !purego

#include "textflag.h"
#include "transpose8_amd64.h"

// func PackA6F32AVX2(dst, src *float32, lda, n int)
// Interleaves six rows of src (lda elements apart) into dst, six values
// per k step: dst[p*6+r] = src[r*lda+p] for p < n, n a multiple of 8.
// Eight k steps at a time: six rows of eight are loaded, transposed as an
// 8x8 block whose last two rows are zero, and each column (six values and
// two zeros) is stored with a 32-byte store at its place. Every store
// writes two floats past its column, which the next store overwrites; the
// last one writes dst[n*6], dst[n*6+1], which the caller must own and
// overwrite afterwards.
TEXT ·PackA6F32AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lda+16(FP), R8
	MOVQ n+24(FP), CX
	SHLQ $2, R8
	LEAQ (SI)(R8*1), R9
	LEAQ (R9)(R8*1), R10
	LEAQ (R10)(R8*1), R11
	LEAQ (R11)(R8*1), R12
	LEAQ (R12)(R8*1), R13
	VXORPS Y15, Y15, Y15
	XORQ AX, AX

loop:
	CMPQ CX, $8
	JLT  done
	VMOVUPS    (SI)(AX*1), Y0
	VMOVUPS    (R9)(AX*1), Y1
	VMOVUPS    (R10)(AX*1), Y2
	VMOVUPS    (R11)(AX*1), Y3
	VMOVUPS    (R12)(AX*1), Y4
	VMOVUPS    (R13)(AX*1), Y5
	TRANSPOSE6ROWS
	STOREA6
	ADDQ       $32, AX
	ADDQ       $192, DI
	SUBQ       $8, CX
	JMP        loop

done:
	VZEROUPPER
	RET
