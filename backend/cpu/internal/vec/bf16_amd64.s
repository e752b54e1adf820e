//go:build amd64 && !purego

#include "textflag.h"

// AVX2 bfloat16 block conversions (bf16.go): widening to float32 (exact:
// a bf16 is the top half of an f32) and packing rounded f32 values back
// to bf16.

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
