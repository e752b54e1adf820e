//go:build amd64 && !purego

#include "textflag.h"
#include "transpose8_amd64.h"

// func transposeStrip32AVX2(a *uint32, lda int, b *uint32, ldb int, nblk int, ngrp int)
// For k < nblk and g < ngrp, transposes the 8x8 block of A at rows
// 8g..8g+7, columns 8k..8k+7 into B's rows 8k..8k+7, columns 8g..8g+7:
// B[8k+j][8g+i] = A[8g+i][8k+j]. lda and ldb are row strides in elements.
// The groups of one block column are done together, so that each B row
// gets 32*ngrp consecutive bytes at once (whole cache lines for ngrp 2).
TEXT ·transposeStrip32AVX2(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), R8
	MOVQ b+16(FP), DI
	MOVQ ldb+24(FP), R11
	MOVQ nblk+32(FP), CX
	SHLQ $2, R8              // lda in bytes
	SHLQ $2, R11             // ldb in bytes
	LEAQ (R8)(R8*2), R9      // 3*lda
	LEAQ (R11)(R11*2), R12   // 3*ldb
	MOVQ R11, DX
	SHLQ $3, DX              // 8*ldb: B's next block of rows

loop32:
	TESTQ CX, CX
	JEQ   done32
	MOVQ  SI, AX             // A: rows 8g.., columns 8k..
	MOVQ  ngrp+40(FP), BX    // DI walks B's columns 8g.. (restored below)

grp32:
	LEAQ  (AX)(R8*4), R10    // row 4 of A
	LEAQ  (DI)(R11*4), R13   // row 4 of B
	VMOVUPS (AX), Y0
	VMOVUPS (AX)(R8*1), Y1
	VMOVUPS (AX)(R8*2), Y2
	VMOVUPS (AX)(R9*1), Y3
	VMOVUPS (R10), Y4
	VMOVUPS (R10)(R8*1), Y5
	VMOVUPS (R10)(R8*2), Y6
	VMOVUPS (R10)(R9*1), Y7

	TRANSPOSE8 // out j (Y8+j) = column j of the block

	VMOVUPS Y8, (DI)
	VMOVUPS Y9, (DI)(R11*1)
	VMOVUPS Y10, (DI)(R11*2)
	VMOVUPS Y11, (DI)(R12*1)
	VMOVUPS Y12, (R13)
	VMOVUPS Y13, (R13)(R11*1)
	VMOVUPS Y14, (R13)(R11*2)
	VMOVUPS Y15, (R13)(R12*1)

	LEAQ (AX)(R8*8), AX      // next 8 A rows
	ADDQ $32, DI             // next 8 B columns
	DECQ BX
	JNZ  grp32

	MOVQ ngrp+40(FP), BX
	SHLQ $5, BX
	SUBQ BX, DI              // back to B's column 0
	ADDQ $32, SI
	ADDQ DX, DI
	DECQ CX
	JMP  loop32

done32:
	VZEROUPPER
	RET

// func transposeStrip16AVX(a *uint16, lda int, b *uint16, ldb int, nblk int, ngrp int)
// transposeStrip32AVX2 for 2-byte elements (8x8 blocks of 16-byte rows;
// whole cache lines of B for ngrp 4).
TEXT ·transposeStrip16AVX(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), R8
	MOVQ b+16(FP), DI
	MOVQ ldb+24(FP), R11
	MOVQ nblk+32(FP), CX
	SHLQ $1, R8
	SHLQ $1, R11
	LEAQ (R8)(R8*2), R9
	LEAQ (R11)(R11*2), R12
	MOVQ R11, DX
	SHLQ $3, DX

loop16:
	TESTQ CX, CX
	JEQ   done16
	MOVQ  SI, AX
	MOVQ  ngrp+40(FP), BX

grp16:
	LEAQ  (AX)(R8*4), R10
	LEAQ  (DI)(R11*4), R13
	VMOVDQU (AX), X0
	VMOVDQU (AX)(R8*1), X1
	VMOVDQU (AX)(R8*2), X2
	VMOVDQU (AX)(R9*1), X3
	VMOVDQU (R10), X4
	VMOVDQU (R10)(R8*1), X5
	VMOVDQU (R10)(R8*2), X6
	VMOVDQU (R10)(R9*1), X7

	// Words: t0 = a0 b0 a1 b1 a2 b2 a3 b3, t1 = a4 b4 .. a7 b7, ...
	VPUNPCKLWD X1, X0, X8
	VPUNPCKHWD X1, X0, X9
	VPUNPCKLWD X3, X2, X10
	VPUNPCKHWD X3, X2, X11
	VPUNPCKLWD X5, X4, X12
	VPUNPCKHWD X5, X4, X13
	VPUNPCKLWD X7, X6, X14
	VPUNPCKHWD X7, X6, X15

	// Double words: u0 = a0 b0 c0 d0 a1 b1 c1 d1, ...
	VPUNPCKLDQ X10, X8, X0
	VPUNPCKHDQ X10, X8, X1
	VPUNPCKLDQ X11, X9, X2
	VPUNPCKHDQ X11, X9, X3
	VPUNPCKLDQ X14, X12, X4
	VPUNPCKHDQ X14, X12, X5
	VPUNPCKLDQ X15, X13, X6
	VPUNPCKHDQ X15, X13, X7

	// Quad words: out j = column j of the block.
	VPUNPCKLQDQ X4, X0, X8
	VPUNPCKHQDQ X4, X0, X9
	VPUNPCKLQDQ X5, X1, X10
	VPUNPCKHQDQ X5, X1, X11
	VPUNPCKLQDQ X6, X2, X12
	VPUNPCKHQDQ X6, X2, X13
	VPUNPCKLQDQ X7, X3, X14
	VPUNPCKHQDQ X7, X3, X15

	VMOVDQU X8, (DI)
	VMOVDQU X9, (DI)(R11*1)
	VMOVDQU X10, (DI)(R11*2)
	VMOVDQU X11, (DI)(R12*1)
	VMOVDQU X12, (R13)
	VMOVDQU X13, (R13)(R11*1)
	VMOVDQU X14, (R13)(R11*2)
	VMOVDQU X15, (R13)(R12*1)

	LEAQ (AX)(R8*8), AX
	ADDQ $16, DI
	DECQ BX
	JNZ  grp16

	MOVQ ngrp+40(FP), BX
	SHLQ $4, BX
	SUBQ BX, DI
	ADDQ $16, SI
	ADDQ DX, DI
	DECQ CX
	JMP  loop16

done16:
	RET
