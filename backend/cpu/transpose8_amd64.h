// Shared AVX2 macros of the amd64 kernels (included by the .s files that
// use them).

// TRANSPOSE8 transposes the 8x8 f32 block in Y0-Y7 (row r in Yr) into
// Y8-Y15 (column c in Y(8+c)); Y0-Y7 are clobbered.
#define TRANSPOSE8 \
	VUNPCKLPS Y1, Y0, Y8 \
	VUNPCKHPS Y1, Y0, Y9 \
	VUNPCKLPS Y3, Y2, Y10 \
	VUNPCKHPS Y3, Y2, Y11 \
	VUNPCKLPS Y5, Y4, Y12 \
	VUNPCKHPS Y5, Y4, Y13 \
	VUNPCKLPS Y7, Y6, Y14 \
	VUNPCKHPS Y7, Y6, Y15 \
	VSHUFPS $0x44, Y10, Y8, Y0 \
	VSHUFPS $0xEE, Y10, Y8, Y1 \
	VSHUFPS $0x44, Y11, Y9, Y2 \
	VSHUFPS $0xEE, Y11, Y9, Y3 \
	VSHUFPS $0x44, Y14, Y12, Y4 \
	VSHUFPS $0xEE, Y14, Y12, Y5 \
	VSHUFPS $0x44, Y15, Y13, Y6 \
	VSHUFPS $0xEE, Y15, Y13, Y7 \
	VPERM2F128 $0x20, Y4, Y0, Y8 \
	VPERM2F128 $0x20, Y5, Y1, Y9 \
	VPERM2F128 $0x20, Y6, Y2, Y10 \
	VPERM2F128 $0x20, Y7, Y3, Y11 \
	VPERM2F128 $0x31, Y4, Y0, Y12 \
	VPERM2F128 $0x31, Y5, Y1, Y13 \
	VPERM2F128 $0x31, Y6, Y2, Y14 \
	VPERM2F128 $0x31, Y7, Y3, Y15

// TRANSPOSE6ROWS is the first two stages of TRANSPOSE8 for six rows (Y0-Y5,
// with Y15 zero standing in for rows 6 and 7): Yc for c < 4 then holds
// rows 0-3 of column c in its low lane and of column c+4 in its high lane,
// Y(c+4) rows 4, 5 and two zeros likewise. Y8-Y11 are clobbered.
#define TRANSPOSE6ROWS \
	VUNPCKLPS Y1, Y0, Y6 \
	VUNPCKHPS Y1, Y0, Y7 \
	VUNPCKLPS Y3, Y2, Y8 \
	VUNPCKHPS Y3, Y2, Y9 \
	VUNPCKLPS Y5, Y4, Y10 \
	VUNPCKHPS Y5, Y4, Y11 \
	VSHUFPS $0x44, Y8, Y6, Y0 \
	VSHUFPS $0xEE, Y8, Y6, Y1 \
	VSHUFPS $0x44, Y9, Y7, Y2 \
	VSHUFPS $0xEE, Y9, Y7, Y3 \
	VSHUFPS $0x44, Y15, Y10, Y4 \
	VSHUFPS $0xEE, Y15, Y10, Y5 \
	VSHUFPS $0x44, Y15, Y11, Y6 \
	VSHUFPS $0xEE, Y15, Y11, Y7

// STORET8W stores the columns of a TRANSPOSE8 (Y8-Y15) as eight panel
// steps w floats apart: DI the first, R10 = 4*w bytes, R12 = 3*R10; AX is
// clobbered.
#define STORET8W \
	MOVQ DI, AX \
	VMOVUPS Y8, (AX) \
	VMOVUPS Y9, (AX)(R10*1) \
	VMOVUPS Y10, (AX)(R10*2) \
	VMOVUPS Y11, (AX)(R12*1) \
	LEAQ (AX)(R10*4), AX \
	VMOVUPS Y12, (AX) \
	VMOVUPS Y13, (AX)(R10*1) \
	VMOVUPS Y14, (AX)(R10*2) \
	VMOVUPS Y15, (AX)(R12*1)

// STOREA6 finishes a TRANSPOSE6ROWS: each of the eight columns (six
// values and two zeros) stored with a 32-byte store at DI + 24*c bytes, so
// every store writes two floats past its column, which the next one
// overwrites (the last writes the two after the block). Y8 is clobbered.
#define STOREA6 \
	VPERM2F128 $0x20, Y4, Y0, Y8 \
	VMOVUPS    Y8, (DI) \
	VPERM2F128 $0x20, Y5, Y1, Y8 \
	VMOVUPS    Y8, 24(DI) \
	VPERM2F128 $0x20, Y6, Y2, Y8 \
	VMOVUPS    Y8, 48(DI) \
	VPERM2F128 $0x20, Y7, Y3, Y8 \
	VMOVUPS    Y8, 72(DI) \
	VPERM2F128 $0x31, Y4, Y0, Y8 \
	VMOVUPS    Y8, 96(DI) \
	VPERM2F128 $0x31, Y5, Y1, Y8 \
	VMOVUPS    Y8, 120(DI) \
	VPERM2F128 $0x31, Y6, Y2, Y8 \
	VMOVUPS    Y8, 144(DI) \
	VPERM2F128 $0x31, Y7, Y3, Y8 \
	VMOVUPS    Y8, 168(DI)
