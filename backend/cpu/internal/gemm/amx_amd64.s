//go:build amd64 && !purego

#include "textflag.h"

// AMX tile instructions, which Go's assembler does not know, as bytes
// (VEX.128 map 0F38, W0; register numbers AX=0 CX=1 DX=2 BX=3 SI=6 DI=7,
// tmm0-tmm7). Memory operands are [base + index*1 (+ disp)], the index
// holding the row stride.
#define LDTILECFG_AX BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0x00
#define TILERELEASE BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0xC0
#define TILEZERO(t) BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $(0xC0|((t)<<3))
#define TILELOADD(t, base, idx) BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $(((t)<<3)|4); BYTE $(((idx)<<3)|(base))
#define TILELOADD_D8(t, base, idx, d) BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $(0x40|((t)<<3)|4); BYTE $(((idx)<<3)|(base)); BYTE $(d)
#define TILELOADD_D32(t, base, idx, d) BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $(0x80|((t)<<3)|4); BYTE $(((idx)<<3)|(base)); BYTE $((d)&0xFF); BYTE $(((d)>>8)&0xFF); BYTE $(((d)>>16)&0xFF); BYTE $(((d)>>24)&0xFF)
#define TILESTORED(t, base, idx) BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $(((t)<<3)|4); BYTE $(((idx)<<3)|(base))
#define TILESTORED_D8(t, base, idx, d) BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $(0x40|((t)<<3)|4); BYTE $(((idx)<<3)|(base)); BYTE $(d)
#define TDPBF16PS(d, a, b) BYTE $0xC4; BYTE $0xE2; BYTE $(((15-(b))<<3)|2); BYTE $0x5C; BYTE $(0xC0|((d)<<3)|(a))

// The tile configuration: palette 1, tiles 0-7 of 16 rows x 64 bytes.
DATA amxCfg<>+0(SB)/8, $1
DATA amxCfg<>+8(SB)/8, $0
DATA amxCfg<>+16(SB)/8, $0x0040004000400040
DATA amxCfg<>+24(SB)/8, $0x0040004000400040
DATA amxCfg<>+32(SB)/8, $0
DATA amxCfg<>+40(SB)/8, $0
DATA amxCfg<>+48(SB)/8, $0x1010101010101010
DATA amxCfg<>+56(SB)/8, $0
GLOBL amxCfg<>(SB), RODATA|NOPTR, $64

// func AMX32x32(kc int, a, b, c *float32, ldc int, pf *float32, load int)
//
// C tiles tmm0 (rows 0-15, columns 0-15), tmm1 (rows 0-15, columns
// 16-31), tmm2, tmm3 (rows 16-31); A tiles tmm4 (rows 0-15), tmm5 (rows
// 16-31); B tiles tmm6 (columns 0-15), tmm7 (columns 16-31). Each chunk
// of 16 pairs is 2048 bytes of A (32 rows of 64 bytes) and 2048 of B (16
// pair rows of 128 bytes).
TEXT ·AMX32x32(SB), NOSPLIT, $0-56
	LEAQ amxCfg<>(SB), AX
	LDTILECFG_AX
	MOVQ c+24(FP), SI
	MOVQ ldc+32(FP), DX
	SHLQ $2, DX
	MOVQ DX, DI
	SHLQ $4, DI
	ADDQ SI, DI
	MOVQ load+48(FP), AX
	TESTQ AX, AX
	JZ zero
	TILELOADD(0, 6, 2)
	TILELOADD_D8(1, 6, 2, 64)
	TILELOADD(2, 7, 2)
	TILELOADD_D8(3, 7, 2, 64)
	JMP body

zero:
	TILEZERO(0)
	TILEZERO(1)
	TILEZERO(2)
	TILEZERO(3)

body:
	MOVQ kc+0(FP), R9
	ADDQ $31, R9
	SHRQ $5, R9
	JZ store
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ $64, CX
	MOVQ $128, DX

loop:
	TILELOADD(4, 0, 1)
	TILELOADD(6, 3, 2)
	TDPBF16PS(0, 4, 6)
	TILELOADD_D8(7, 3, 2, 64)
	TDPBF16PS(1, 4, 7)
	TILELOADD_D32(5, 0, 1, 1024)
	TDPBF16PS(2, 5, 6)
	TDPBF16PS(3, 5, 7)
	ADDQ $2048, AX
	ADDQ $2048, BX
	DECQ R9
	JNZ loop

store:
	MOVQ ldc+32(FP), DX
	SHLQ $2, DX
	TILESTORED(0, 6, 2)
	TILESTORED_D8(1, 6, 2, 64)
	TILESTORED(2, 7, 2)
	TILESTORED_D8(3, 7, 2, 64)
	TILERELEASE
	RET

// func PairRowsAMX(dst *uint32, dstStride int, src *uint16, chunks int)
//
// For i < chunks: the 16 dwords at dst + i*dstStride (in dwords) get the
// 32 bf16 values at src + 32*i as pairs, the first of each pair in the
// high half: each source dword rotated by 16 bits.
TEXT ·PairRowsAMX(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ dstStride+8(FP), DX
	SHLQ $2, DX
	MOVQ src+16(FP), SI
	MOVQ chunks+24(FP), CX
	TESTQ CX, CX
	JZ done

rot:
	VMOVDQU32 (SI), Z0
	VPRORD $16, Z0, Z0
	VMOVDQU32 Z0, (DI)
	ADDQ $64, SI
	ADDQ DX, DI
	DECQ CX
	JNZ rot
	VZEROUPPER

done:
	RET
