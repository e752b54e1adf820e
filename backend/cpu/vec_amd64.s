//go:build amd64 && !purego

#include "textflag.h"

// AVX2+FMA loops of the slice-level f32 kernels (vec.go). Every function
// takes n, a multiple of 8 (0 allowed), and works 8 lanes at a time (the
// simple ones 32 at a time while at least 32 remain). Go's operand order is
// Intel's reversed: VFMADD213PS m, b, a is a = b*a + m; VBLENDVPS mask, x, y,
// d is d = mask ? x : y; VMINPS/VMAXPS x, c, d return x when either is NaN.

// VCONST defines a 32-byte constant: the 32-bit value v in all 8 lanes.
#define VCONST(name, v) DATA name<>+0(SB)/4, v; DATA name<>+4(SB)/4, v; DATA name<>+8(SB)/4, v; DATA name<>+12(SB)/4, v; DATA name<>+16(SB)/4, v; DATA name<>+20(SB)/4, v; DATA name<>+24(SB)/4, v; DATA name<>+28(SB)/4, v; GLOBL name<>(SB), RODATA|NOPTR, $32

// vabs: 0x7fffffff (abs mask)
VCONST(vabs, $0x7fffffff)
// vsign: 0x80000000 (sign bit)
VCONST(vsign, $0x80000000)
// vone: 1.0
VCONST(vone, $0x3f800000)
// vhalf: 0.5
VCONST(vhalf, $0x3f000000)
// vtwo: 2.0
VCONST(vtwo, $0x40000000)
// vexphi: 88.80000305175781 (exp clamp: overflows to +Inf)
VCONST(vexphi, $0x42b1999a)
// vexplo: -104.0 (exp clamp: underflows to 0)
VCONST(vexplo, $0xc2d00000)
// vlog2e: 1.4426950216293335
VCONST(vlog2e, $0x3fb8aa3b)
// vln2hi: 0.6931471824645996 (ln2 rounded to float32)
VCONST(vln2hi, $0x3f317218)
// vln2lo: -1.9046542121259336e-09 (ln2 - ln2hi)
VCONST(vln2lo, $0xb102e308)
// vexpP0: 0.00019875691214110702 (Cephes expf)
VCONST(vexpP0, $0x39506967)
// vexpP1: 0.001398199936375022
VCONST(vexpP1, $0x3ab743ce)
// vexpP2: 0.008333452045917511
VCONST(vexpP2, $0x3c088908)
// vexpP3: 0.04166579619050026
VCONST(vexpP3, $0x3d2aa9c1)
// vexpP4: 0.1666666567325592
VCONST(vexpP4, $0x3e2aaaaa)
// vexpP5: 0.5
VCONST(vexpP5, $0x3f000000)
// v127: 127 (exponent bias (int32))
VCONST(v127, $0x0000007f)
// vmant: 0x007fffff (mantissa mask)
VCONST(vmant, $0x007fffff)
// vhalfbits: 0x3f000000 (0.5's exponent)
VCONST(vhalfbits, $0x3f000000)
// v126: 126 (frexp bias (int32))
VCONST(v126, $0x0000007e)
// v23: 23 (subnormal exponent shift (int32))
VCONST(v23, $0x00000017)
// vtwo23: 8388608.0 (2^23)
VCONST(vtwo23, $0x4b000000)
// vminnorm: 0x00800000 (smallest normal float32)
VCONST(vminnorm, $0x00800000)
// vsqrthf: 0.7071067690849304 (sqrt(1/2))
VCONST(vsqrthf, $0x3f3504f3)
// vinf: 0x7f800000 (+Inf)
VCONST(vinf, $0x7f800000)
// vninf: 0xff800000 (-Inf)
VCONST(vninf, $0xff800000)
// vnan: 0x7fc00000 (NaN)
VCONST(vnan, $0x7fc00000)
// vlogC1: 0.693359375 (Cephes logf)
VCONST(vlogC1, $0x3f318000)
// vlogC2: -0.00021219444170128554
VCONST(vlogC2, $0xb95e8083)
// vlogP0: 0.07037683576345444
VCONST(vlogP0, $0x3d9021bb)
// vlogP1: -0.11514610052108765
VCONST(vlogP1, $0xbdebd1b8)
// vlogP2: 0.11676998436450958
VCONST(vlogP2, $0x3def251a)
// vlogP3: -0.12420140951871872
VCONST(vlogP3, $0xbdfe5d4f)
// vlogP4: 0.14249323308467865
VCONST(vlogP4, $0x3e11e9bf)
// vlogP5: -0.16668057441711426
VCONST(vlogP5, $0xbe2aae50)
// vlogP6: 0.2000071406364441
VCONST(vlogP6, $0x3e4cceac)
// vlogP7: -0.24999994039535522
VCONST(vlogP7, $0xbe7ffffc)
// vlogP8: 0.3333333134651184
VCONST(vlogP8, $0x3eaaaaaa)
// vtanhT: 0.625 (tanh: polynomial below)
VCONST(vtanhT, $0x3f200000)
// vtanhP0: -0.0057049887254834175 (Cephes tanhf)
VCONST(vtanhP0, $0xbbbaf0ea)
// vtanhP1: 0.0206390880048275
VCONST(vtanhP1, $0x3ca9134e)
// vtanhP2: -0.05373971536755562
VCONST(vtanhP2, $0xbd5c1e2d)
// vtanhP3: 0.13331441581249237
VCONST(vtanhP3, $0x3e088393)
// vtanhP4: -0.3333328068256378
VCONST(vtanhP4, $0xbeaaaa99)
// verfT: 0.875 (erf: x*P(x^2) below)
VCONST(verfT, $0x3f600000)
// verfHi: 10.5 (erfc(x) = 0 in float32 beyond)
VCONST(verfHi, $0x41280000)
// vrsqrt2: 0.7071067690849304 (1/sqrt(2))
VCONST(vrsqrt2, $0x3f3504f3)
// vgeluXHi: 15.0
VCONST(vgeluXHi, $0x41700000)
// vgeluK2: 1.5957691669464111 (2*sqrt(2/pi))
VCONST(vgeluK2, $0x3fcc422a)
// vgeluC: 0.044714998453855515
VCONST(vgeluC, $0x3d372713)
// verfP0: 0xba229b8f (erf small, fitted (tools/vecfit))
VCONST(verfP0, $0xba229b8f)
// verfP1: 0x3ba4e486
VCONST(verfP1, $0x3ba4e486)
// verfP2: 0xbcdb79ae
VCONST(verfP2, $0xbcdb79ae)
// verfP3: 0x3de7108d
VCONST(verfP3, $0x3de7108d)
// verfP4: 0xbec09386
VCONST(verfP4, $0xbec09386)
// verfP5: 0x3f906eba
VCONST(verfP5, $0x3f906eba)
// verfA: 0x3ff45d17 (w = A/x + B maps x in [0.875, 10.5] to [-1, 1])
VCONST(verfA, $0x3ff45d17)
// verfB: 0xbf9745d1
VCONST(verfB, $0xbf9745d1)
// verfR0: 0xb805060b (erfc(x) = exp(-x^2) R(w)/x, fitted)
VCONST(verfR0, $0xb805060b)
// verfR1: 0x3826f870
VCONST(verfR1, $0x3826f870)
// verfR2: 0x38b218bc
VCONST(verfR2, $0x38b218bc)
// verfR3: 0xb95ed432
VCONST(verfR3, $0xb95ed432)
// verfR4: 0x39834671
VCONST(verfR4, $0x39834671)
// verfR5: 0xb9826f70
VCONST(verfR5, $0xb9826f70)
// verfR6: 0xb93d5125
VCONST(verfR6, $0xb93d5125)
// verfR7: 0x3b004f2c
VCONST(verfR7, $0x3b004f2c)
// verfR8: 0xbbc43169
VCONST(verfR8, $0xbbc43169)
// verfR9: 0x3c2e3896
VCONST(verfR9, $0x3c2e3896)
// verfR10: 0xba3ae812
VCONST(verfR10, $0xba3ae812)
// verfR11: 0xbdb80bbc
VCONST(verfR11, $0xbdb80bbc)
// verfR12: 0x3efb28db
VCONST(verfR12, $0x3efb28db)
// vgeluR0: 0xb7bc1fb0 (R(w)/sqrt2 (gelu's x/2 erfc(x/sqrt2)))
VCONST(vgeluR0, $0xb7bc1fb0)
// vgeluR1: 0x37ec21c4
VCONST(vgeluR1, $0x37ec21c4)
// vgeluR2: 0x387bdddd
VCONST(vgeluR2, $0x387bdddd)
// vgeluR3: 0xb91d9056
VCONST(vgeluR3, $0xb91d9056)
// vgeluR4: 0x3939a6b0
VCONST(vgeluR4, $0x3939a6b0)
// vgeluR5: 0xb938769f
VCONST(vgeluR5, $0xb938769f)
// vgeluR6: 0xb905de08
VCONST(vgeluR6, $0xb905de08)
// vgeluR7: 0x3ab574eb
VCONST(vgeluR7, $0x3ab574eb)
// vgeluR8: 0xbb8ababb
VCONST(vgeluR8, $0xbb8ababb)
// vgeluR9: 0x3bf662c1
VCONST(vgeluR9, $0x3bf662c1)
// vgeluR10: 0xba0429b2
VCONST(vgeluR10, $0xba0429b2)
// vgeluR11: 0xbd8223db
VCONST(vgeluR11, $0xbd8223db)
// vgeluR12: 0x3eb198be
VCONST(vgeluR12, $0x3eb198be)
// vgeluLo: 0x3f9e6455 (0.875*sqrt2)
VCONST(vgeluLo, $0x3f9e6455)
// vgeluHi: 0x416d967f (10.5*sqrt2)
VCONST(vgeluHi, $0x416d967f)
// vsqrt2: 0x3fb504f3 (sqrt2)
VCONST(vsqrt2, $0x3fb504f3)
// vgeluMLo: 0x3f3504f3 (gelu: x G(|x|) for -1.2374 < x <= -0.7071)
VCONST(vgeluMLo, $0x3f3504f3)
// vgeluMA: 0x40715bee (w = A|x| + B in [-1, 1] there)
VCONST(vgeluMA, $0x40715bee)
// vgeluMB: 0xc06aaaaa
VCONST(vgeluMB, $0xc06aaaaa)
// vgeluM0: 0xb390bffe (G(w) = erfc(|x|/sqrt2)/2, fitted)
VCONST(vgeluM0, $0xb390bffe)
// vgeluM1: 0x3547f73c
VCONST(vgeluM1, $0x3547f73c)
// vgeluM2: 0x36a21999
VCONST(vgeluM2, $0x36a21999)
// vgeluM3: 0xb8d69a8e
VCONST(vgeluM3, $0xb8d69a8e)
// vgeluM4: 0x38313f7c
VCONST(vgeluM4, $0x38313f7c)
// vgeluM5: 0x3c0b445b
VCONST(vgeluM5, $0x3c0b445b)
// vgeluM6: 0xbd870bfb
VCONST(vgeluM6, $0xbd870bfb)
// vgeluM7: 0x3e296dbc
VCONST(vgeluM7, $0x3e296dbc)

// func vecAddF32AVX2(dst, a, b *float32, n int)
// dst = a add b, lane by lane (VADDPS).
TEXT ·vecAddF32AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	XORQ AX, AX
	SHLQ $2, CX // bytes

loop32:
	LEAQ 128(AX), R8
	CMPQ R8, CX
	JA   loop8
	VMOVUPS 0(SI)(AX*1), Y0
	VMOVUPS 32(SI)(AX*1), Y1
	VMOVUPS 64(SI)(AX*1), Y2
	VMOVUPS 96(SI)(AX*1), Y3
	VADDPS 0(DX)(AX*1), Y0, Y0
	VADDPS 32(DX)(AX*1), Y1, Y1
	VADDPS 64(DX)(AX*1), Y2, Y2
	VADDPS 96(DX)(AX*1), Y3, Y3
	VMOVUPS Y0, 0(DI)(AX*1)
	VMOVUPS Y1, 32(DI)(AX*1)
	VMOVUPS Y2, 64(DI)(AX*1)
	VMOVUPS Y3, 96(DI)(AX*1)
	MOVQ R8, AX
	JMP  loop32

loop8:
	CMPQ AX, CX
	JAE  done
	VMOVUPS (SI)(AX*1), Y0
	VADDPS (DX)(AX*1), Y0, Y0
	VMOVUPS Y0, (DI)(AX*1)
	ADDQ $32, AX
	JMP  loop8

done:
	VZEROUPPER
	RET

// func vecSubF32AVX2(dst, a, b *float32, n int)
// dst = a sub b, lane by lane (VSUBPS).
TEXT ·vecSubF32AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	XORQ AX, AX
	SHLQ $2, CX // bytes

loop32:
	LEAQ 128(AX), R8
	CMPQ R8, CX
	JA   loop8
	VMOVUPS 0(SI)(AX*1), Y0
	VMOVUPS 32(SI)(AX*1), Y1
	VMOVUPS 64(SI)(AX*1), Y2
	VMOVUPS 96(SI)(AX*1), Y3
	VSUBPS 0(DX)(AX*1), Y0, Y0
	VSUBPS 32(DX)(AX*1), Y1, Y1
	VSUBPS 64(DX)(AX*1), Y2, Y2
	VSUBPS 96(DX)(AX*1), Y3, Y3
	VMOVUPS Y0, 0(DI)(AX*1)
	VMOVUPS Y1, 32(DI)(AX*1)
	VMOVUPS Y2, 64(DI)(AX*1)
	VMOVUPS Y3, 96(DI)(AX*1)
	MOVQ R8, AX
	JMP  loop32

loop8:
	CMPQ AX, CX
	JAE  done
	VMOVUPS (SI)(AX*1), Y0
	VSUBPS (DX)(AX*1), Y0, Y0
	VMOVUPS Y0, (DI)(AX*1)
	ADDQ $32, AX
	JMP  loop8

done:
	VZEROUPPER
	RET

// func vecMulF32AVX2(dst, a, b *float32, n int)
// dst = a mul b, lane by lane (VMULPS).
TEXT ·vecMulF32AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	XORQ AX, AX
	SHLQ $2, CX // bytes

loop32:
	LEAQ 128(AX), R8
	CMPQ R8, CX
	JA   loop8
	VMOVUPS 0(SI)(AX*1), Y0
	VMOVUPS 32(SI)(AX*1), Y1
	VMOVUPS 64(SI)(AX*1), Y2
	VMOVUPS 96(SI)(AX*1), Y3
	VMULPS 0(DX)(AX*1), Y0, Y0
	VMULPS 32(DX)(AX*1), Y1, Y1
	VMULPS 64(DX)(AX*1), Y2, Y2
	VMULPS 96(DX)(AX*1), Y3, Y3
	VMOVUPS Y0, 0(DI)(AX*1)
	VMOVUPS Y1, 32(DI)(AX*1)
	VMOVUPS Y2, 64(DI)(AX*1)
	VMOVUPS Y3, 96(DI)(AX*1)
	MOVQ R8, AX
	JMP  loop32

loop8:
	CMPQ AX, CX
	JAE  done
	VMOVUPS (SI)(AX*1), Y0
	VMULPS (DX)(AX*1), Y0, Y0
	VMOVUPS Y0, (DI)(AX*1)
	ADDQ $32, AX
	JMP  loop8

done:
	VZEROUPPER
	RET

// func vecDivF32AVX2(dst, a, b *float32, n int)
// dst = a div b, lane by lane (VDIVPS).
TEXT ·vecDivF32AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	XORQ AX, AX
	SHLQ $2, CX // bytes

loop32:
	LEAQ 128(AX), R8
	CMPQ R8, CX
	JA   loop8
	VMOVUPS 0(SI)(AX*1), Y0
	VMOVUPS 32(SI)(AX*1), Y1
	VMOVUPS 64(SI)(AX*1), Y2
	VMOVUPS 96(SI)(AX*1), Y3
	VDIVPS 0(DX)(AX*1), Y0, Y0
	VDIVPS 32(DX)(AX*1), Y1, Y1
	VDIVPS 64(DX)(AX*1), Y2, Y2
	VDIVPS 96(DX)(AX*1), Y3, Y3
	VMOVUPS Y0, 0(DI)(AX*1)
	VMOVUPS Y1, 32(DI)(AX*1)
	VMOVUPS Y2, 64(DI)(AX*1)
	VMOVUPS Y3, 96(DI)(AX*1)
	MOVQ R8, AX
	JMP  loop32

loop8:
	CMPQ AX, CX
	JAE  done
	VMOVUPS (SI)(AX*1), Y0
	VDIVPS (DX)(AX*1), Y0, Y0
	VMOVUPS Y0, (DI)(AX*1)
	ADDQ $32, AX
	JMP  loop8

done:
	VZEROUPPER
	RET

// func vecMaximumF32AVX2(dst, a, b *float32, n int)
// torch.maximum: b > a ? b : a (a when a is NaN), then all-ones NaN where b is NaN.
TEXT ·vecMaximumF32AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	XORQ AX, AX
	SHLQ $2, CX // bytes

loop32:
	LEAQ 128(AX), R8
	CMPQ R8, CX
	JA   loop8
	VMOVUPS 0(SI)(AX*1), Y0
	VMOVUPS 0(DX)(AX*1), Y4
	VMAXPS Y0, Y4, Y8
	VCMPPS $3, Y4, Y4, Y4
	VORPS Y4, Y8, Y0
	VMOVUPS Y0, 0(DI)(AX*1)
	VMOVUPS 32(SI)(AX*1), Y1
	VMOVUPS 32(DX)(AX*1), Y5
	VMAXPS Y1, Y5, Y9
	VCMPPS $3, Y5, Y5, Y5
	VORPS Y5, Y9, Y1
	VMOVUPS Y1, 32(DI)(AX*1)
	VMOVUPS 64(SI)(AX*1), Y2
	VMOVUPS 64(DX)(AX*1), Y6
	VMAXPS Y2, Y6, Y10
	VCMPPS $3, Y6, Y6, Y6
	VORPS Y6, Y10, Y2
	VMOVUPS Y2, 64(DI)(AX*1)
	VMOVUPS 96(SI)(AX*1), Y3
	VMOVUPS 96(DX)(AX*1), Y7
	VMAXPS Y3, Y7, Y11
	VCMPPS $3, Y7, Y7, Y7
	VORPS Y7, Y11, Y3
	VMOVUPS Y3, 96(DI)(AX*1)
	MOVQ R8, AX
	JMP  loop32

loop8:
	CMPQ AX, CX
	JAE  done
	VMOVUPS (SI)(AX*1), Y0
	VMOVUPS (DX)(AX*1), Y4
	VMAXPS Y0, Y4, Y8
	VCMPPS $3, Y4, Y4, Y4
	VORPS Y4, Y8, Y0
	VMOVUPS Y0, (DI)(AX*1)
	ADDQ $32, AX
	JMP  loop8

done:
	VZEROUPPER
	RET

// func vecFmaF32AVX2(dst, a, b, c *float32, n int)
// dst = a*b + c rounded once (VFMADD213PS).
TEXT ·vecFmaF32AVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ c+24(FP), BX
	MOVQ n+32(FP), CX
	XORQ AX, AX
	SHLQ $2, CX // bytes

loop32:
	LEAQ 128(AX), R8
	CMPQ R8, CX
	JA   loop8
	VMOVUPS 0(SI)(AX*1), Y0
	VMOVUPS 0(DX)(AX*1), Y4
	VFMADD213PS 0(BX)(AX*1), Y4, Y0
	VMOVUPS Y0, 0(DI)(AX*1)
	VMOVUPS 32(SI)(AX*1), Y1
	VMOVUPS 32(DX)(AX*1), Y5
	VFMADD213PS 32(BX)(AX*1), Y5, Y1
	VMOVUPS Y1, 32(DI)(AX*1)
	VMOVUPS 64(SI)(AX*1), Y2
	VMOVUPS 64(DX)(AX*1), Y6
	VFMADD213PS 64(BX)(AX*1), Y6, Y2
	VMOVUPS Y2, 64(DI)(AX*1)
	VMOVUPS 96(SI)(AX*1), Y3
	VMOVUPS 96(DX)(AX*1), Y7
	VFMADD213PS 96(BX)(AX*1), Y7, Y3
	VMOVUPS Y3, 96(DI)(AX*1)
	MOVQ R8, AX
	JMP  loop32

loop8:
	CMPQ AX, CX
	JAE  done
	VMOVUPS (SI)(AX*1), Y0
	VMOVUPS (DX)(AX*1), Y4
	VFMADD213PS (BX)(AX*1), Y4, Y0
	VMOVUPS Y0, (DI)(AX*1)
	ADDQ $32, AX
	JMP  loop8

done:
	VZEROUPPER
	RET

// func vecAddScalarF32AVX2(dst, a *float32, n int, s float32)
// dst = a + s.
TEXT ·vecAddScalarF32AVX2(SB), NOSPLIT, $0-28
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS s+24(FP), Y8
	XORQ AX, AX
	SHLQ $2, CX // bytes

loop32:
	LEAQ 128(AX), R8
	CMPQ R8, CX
	JA   loop8
	VADDPS 0(SI)(AX*1), Y8, Y0
	VADDPS 32(SI)(AX*1), Y8, Y1
	VADDPS 64(SI)(AX*1), Y8, Y2
	VADDPS 96(SI)(AX*1), Y8, Y3
	VMOVUPS Y0, 0(DI)(AX*1)
	VMOVUPS Y1, 32(DI)(AX*1)
	VMOVUPS Y2, 64(DI)(AX*1)
	VMOVUPS Y3, 96(DI)(AX*1)
	MOVQ R8, AX
	JMP  loop32

loop8:
	CMPQ AX, CX
	JAE  done
	VADDPS (SI)(AX*1), Y8, Y0
	VMOVUPS Y0, (DI)(AX*1)
	ADDQ $32, AX
	JMP  loop8

done:
	VZEROUPPER
	RET

// func vecMulScalarF32AVX2(dst, a *float32, n int, s float32)
// dst = a * s.
TEXT ·vecMulScalarF32AVX2(SB), NOSPLIT, $0-28
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS s+24(FP), Y8
	XORQ AX, AX
	SHLQ $2, CX // bytes

loop32:
	LEAQ 128(AX), R8
	CMPQ R8, CX
	JA   loop8
	VMULPS 0(SI)(AX*1), Y8, Y0
	VMULPS 32(SI)(AX*1), Y8, Y1
	VMULPS 64(SI)(AX*1), Y8, Y2
	VMULPS 96(SI)(AX*1), Y8, Y3
	VMOVUPS Y0, 0(DI)(AX*1)
	VMOVUPS Y1, 32(DI)(AX*1)
	VMOVUPS Y2, 64(DI)(AX*1)
	VMOVUPS Y3, 96(DI)(AX*1)
	MOVQ R8, AX
	JMP  loop32

loop8:
	CMPQ AX, CX
	JAE  done
	VMULPS (SI)(AX*1), Y8, Y0
	VMOVUPS Y0, (DI)(AX*1)
	ADDQ $32, AX
	JMP  loop8

done:
	VZEROUPPER
	RET

// func vecReluF32AVX2(dst, a *float32, n int)
// torch.relu: 0 > x ? 0 : x (NaN and -0 pass through).
TEXT ·vecReluF32AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ n+16(FP), CX
	VXORPS Y8, Y8, Y8
	XORQ AX, AX
	SHLQ $2, CX // bytes

loop32:
	LEAQ 128(AX), R8
	CMPQ R8, CX
	JA   loop8
	VMAXPS 0(SI)(AX*1), Y8, Y0
	VMAXPS 32(SI)(AX*1), Y8, Y1
	VMAXPS 64(SI)(AX*1), Y8, Y2
	VMAXPS 96(SI)(AX*1), Y8, Y3
	VMOVUPS Y0, 0(DI)(AX*1)
	VMOVUPS Y1, 32(DI)(AX*1)
	VMOVUPS Y2, 64(DI)(AX*1)
	VMOVUPS Y3, 96(DI)(AX*1)
	MOVQ R8, AX
	JMP  loop32

loop8:
	CMPQ AX, CX
	JAE  done
	VMAXPS (SI)(AX*1), Y8, Y0
	VMOVUPS Y0, (DI)(AX*1)
	ADDQ $32, AX
	JMP  loop8

done:
	VZEROUPPER
	RET

// EXPSPLIT computes exp(Y0) as Y2*Y1 (Cephes expf's polynomial, p*2^n with
// Y2 = p*2^n1 and Y1 = 2^n2, n1 = n>>1, so that the product, or x*Y2*Y1,
// rounds once even when subnormal). Needs Y14 = -104 and Y15 = 88.8 (the
// clamp; NaN passes through); clobbers Y0 and Y3.
#define EXPSPLIT \
	VMINPS       Y0, Y15, Y0; \
	VMAXPS       Y0, Y14, Y0; \
	VMULPS       vlog2e<>(SB), Y0, Y1; \
	VROUNDPS     $0, Y1, Y1; \
	VFNMADD231PS vln2hi<>(SB), Y1, Y0; \
	VFNMADD231PS vln2lo<>(SB), Y1, Y0; \
	VMOVUPS      vexpP0<>(SB), Y2; \
	VFMADD213PS  vexpP1<>(SB), Y0, Y2; \
	VFMADD213PS  vexpP2<>(SB), Y0, Y2; \
	VFMADD213PS  vexpP3<>(SB), Y0, Y2; \
	VFMADD213PS  vexpP4<>(SB), Y0, Y2; \
	VFMADD213PS  vexpP5<>(SB), Y0, Y2; \
	VMULPS       Y0, Y0, Y3; \
	VFMADD213PS  Y0, Y3, Y2; \
	VADDPS       vone<>(SB), Y2, Y2; \
	VCVTPS2DQ    Y1, Y1; \
	VPSRAD       $1, Y1, Y3; \
	VPSUBD       Y3, Y1, Y1; \
	VPADDD       v127<>(SB), Y3, Y3; \
	VPSLLD       $23, Y3, Y3; \
	VPADDD       v127<>(SB), Y1, Y1; \
	VPSLLD       $23, Y1, Y1; \
	VMULPS       Y3, Y2, Y2

// EXP sets Y0 = exp(Y0); clobbers Y1-Y3.
#define EXP \
	EXPSPLIT; \
	VMULPS Y1, Y2, Y0

// EXPCONSTS loads EXP's clamp registers.
#define EXPCONSTS \
	VMOVUPS vexplo<>(SB), Y14; \
	VMOVUPS vexphi<>(SB), Y15

// UNARYLOOP opens the loop of a unary kernel: DI = dst, SI = a, CX = n/8;
// the body reads (SI) and writes (DI), then UNARYNEXT closes it.
#define UNARYHEAD \
	MOVQ dst+0(FP), DI; \
	MOVQ a+8(FP), SI; \
	MOVQ n+16(FP), CX; \
	SHRQ $3, CX; \
	JZ   done

#define UNARYNEXT \
	ADDQ $32, SI; \
	ADDQ $32, DI; \
	DECQ CX; \
	JNZ  loop

// func vecExpF32AVX2(dst, a *float32, n int)
TEXT ·vecExpF32AVX2(SB), NOSPLIT, $0-24
	UNARYHEAD
	EXPCONSTS

loop:
	VMOVUPS (SI), Y0
	EXP
	VMOVUPS Y0, (DI)
	UNARYNEXT

done:
	VZEROUPPER
	RET

// func vecLogF32AVX2(dst, a *float32, n int)
// Cephes logf: x = m*2^e with m in [sqrt(1/2), sqrt(2)) (subnormals scaled
// by 2^23 first), log = f - f^2/2 + f^3 P(f) + e*ln2 with f = m - 1 and
// ln2 split in two; +Inf, ±0, negatives and NaN are patched at the end.
TEXT ·vecLogF32AVX2(SB), NOSPLIT, $0-24
	UNARYHEAD

loop:
	VMOVUPS     (SI), Y0
	VCMPPS      $1, vminnorm<>(SB), Y0, Y5 // x < 2^-126
	VMULPS      vtwo23<>(SB), Y0, Y1
	VBLENDVPS   Y5, Y1, Y0, Y1
	VPSRLD      $23, Y1, Y2
	VPSUBD      v126<>(SB), Y2, Y2
	VPAND       v23<>(SB), Y5, Y3
	VPSUBD      Y3, Y2, Y2                 // e
	VANDPS      vmant<>(SB), Y1, Y1
	VORPS       vhalfbits<>(SB), Y1, Y1    // m in [0.5, 1)
	VCMPPS      $1, vsqrthf<>(SB), Y1, Y3  // m < sqrt(1/2)
	VPADDD      Y3, Y2, Y2                 // e -= 1 there
	VCVTDQ2PS   Y2, Y2
	VANDPS      Y1, Y3, Y3
	VSUBPS      vone<>(SB), Y1, Y1
	VADDPS      Y3, Y1, Y1                 // f = m-1 or 2m-1 (exact)
	VMULPS      Y1, Y1, Y3                 // z = f^2
	VMOVUPS     vlogP0<>(SB), Y4
	VFMADD213PS vlogP1<>(SB), Y1, Y4
	VFMADD213PS vlogP2<>(SB), Y1, Y4
	VFMADD213PS vlogP3<>(SB), Y1, Y4
	VFMADD213PS vlogP4<>(SB), Y1, Y4
	VFMADD213PS vlogP5<>(SB), Y1, Y4
	VFMADD213PS vlogP6<>(SB), Y1, Y4
	VFMADD213PS vlogP7<>(SB), Y1, Y4
	VFMADD213PS vlogP8<>(SB), Y1, Y4
	VMULPS      Y1, Y4, Y4
	VMULPS      Y3, Y4, Y4
	VFMADD231PS vlogC2<>(SB), Y2, Y4
	VFNMADD231PS vhalf<>(SB), Y3, Y4
	VADDPS      Y4, Y1, Y1
	VFMADD231PS vlogC1<>(SB), Y2, Y1
	VCMPPS      $0, vinf<>(SB), Y0, Y3     // x == +Inf
	VBLENDVPS   Y3, vinf<>(SB), Y1, Y1
	VXORPS      Y3, Y3, Y3
	VCMPPS      $0, Y3, Y0, Y4             // x == ±0
	VBLENDVPS   Y4, vninf<>(SB), Y1, Y1
	VCMPPS      $9, Y3, Y0, Y4             // !(x >= 0): negative or NaN
	VBLENDVPS   Y4, vnan<>(SB), Y1, Y0
	VMOVUPS     Y0, (DI)
	UNARYNEXT

done:
	VZEROUPPER
	RET

// func vecTanhF32AVX2(dst, a *float32, n int)
// |x| < 0.625: x + x^3 P(x^2) (Cephes tanhf); above: 1 - 2/(exp(2|x|)+1)
// with x's sign (exp overflowing to +Inf gives ±1).
TEXT ·vecTanhF32AVX2(SB), NOSPLIT, $0-24
	UNARYHEAD
	EXPCONSTS

loop:
	VMOVUPS     (SI), Y6
	VANDPS      vabs<>(SB), Y6, Y7
	VMULPS      Y6, Y6, Y1
	VMOVUPS     vtanhP0<>(SB), Y5
	VFMADD213PS vtanhP1<>(SB), Y1, Y5
	VFMADD213PS vtanhP2<>(SB), Y1, Y5
	VFMADD213PS vtanhP3<>(SB), Y1, Y5
	VFMADD213PS vtanhP4<>(SB), Y1, Y5
	VMULPS      Y1, Y5, Y5
	VFMADD213PS Y6, Y6, Y5                 // small = x*q + x
	VADDPS      Y7, Y7, Y0
	EXP
	VADDPS      vone<>(SB), Y0, Y0
	VMOVUPS     vtwo<>(SB), Y1
	VDIVPS      Y0, Y1, Y1
	VMOVUPS     vone<>(SB), Y0
	VSUBPS      Y1, Y0, Y0
	VANDPS      vsign<>(SB), Y6, Y1
	VORPS       Y1, Y0, Y0
	VCMPPS      $1, vtanhT<>(SB), Y7, Y1
	VBLENDVPS   Y1, Y5, Y0, Y0
	VMOVUPS     Y0, (DI)
	UNARYNEXT

done:
	VZEROUPPER
	RET

// ERFSMALL sets Y5 = x*P(x^2) for x in Y6 (erf below 0.875); clobbers Y1.
#define ERFSMALL \
	VMULPS      Y6, Y6, Y1; \
	VMOVUPS     verfP0<>(SB), Y5; \
	VFMADD213PS verfP1<>(SB), Y1, Y5; \
	VFMADD213PS verfP2<>(SB), Y1, Y5; \
	VFMADD213PS verfP3<>(SB), Y1, Y5; \
	VFMADD213PS verfP4<>(SB), Y1, Y5; \
	VFMADD213PS verfP5<>(SB), Y1, Y5; \
	VMULPS      Y6, Y5, Y5

// ERFCR sets Y10 = R(w), w = A*u + B, for u = Y9 = 1/a (a in [0.875, 10.5]),
// so that erfc(a) = exp(-a^2) R(w) u; the R(w)/sqrt2 variant is ERFCRG.
// Clobbers Y9.
#define ERFCR \
	VMOVUPS      verfB<>(SB), Y10; \
	VFMADD132PS  verfA<>(SB), Y10, Y9; \
	VMOVUPS      verfR0<>(SB), Y10; \
	VFMADD213PS  verfR1<>(SB), Y9, Y10; \
	VFMADD213PS  verfR2<>(SB), Y9, Y10; \
	VFMADD213PS  verfR3<>(SB), Y9, Y10; \
	VFMADD213PS  verfR4<>(SB), Y9, Y10; \
	VFMADD213PS  verfR5<>(SB), Y9, Y10; \
	VFMADD213PS  verfR6<>(SB), Y9, Y10; \
	VFMADD213PS  verfR7<>(SB), Y9, Y10; \
	VFMADD213PS  verfR8<>(SB), Y9, Y10; \
	VFMADD213PS  verfR9<>(SB), Y9, Y10; \
	VFMADD213PS  verfR10<>(SB), Y9, Y10; \
	VFMADD213PS  verfR11<>(SB), Y9, Y10; \
	VFMADD213PS  verfR12<>(SB), Y9, Y10

#define ERFCRG \
	VMOVUPS      verfB<>(SB), Y10; \
	VFMADD132PS  verfA<>(SB), Y10, Y9; \
	VMOVUPS      vgeluR0<>(SB), Y10; \
	VFMADD213PS  vgeluR1<>(SB), Y9, Y10; \
	VFMADD213PS  vgeluR2<>(SB), Y9, Y10; \
	VFMADD213PS  vgeluR3<>(SB), Y9, Y10; \
	VFMADD213PS  vgeluR4<>(SB), Y9, Y10; \
	VFMADD213PS  vgeluR5<>(SB), Y9, Y10; \
	VFMADD213PS  vgeluR6<>(SB), Y9, Y10; \
	VFMADD213PS  vgeluR7<>(SB), Y9, Y10; \
	VFMADD213PS  vgeluR8<>(SB), Y9, Y10; \
	VFMADD213PS  vgeluR9<>(SB), Y9, Y10; \
	VFMADD213PS  vgeluR10<>(SB), Y9, Y10; \
	VFMADD213PS  vgeluR11<>(SB), Y9, Y10; \
	VFMADD213PS  vgeluR12<>(SB), Y9, Y10

// EXPNEGSQ sets Y0 = exp(-(s+t)) for s = Y11 (a float32 square) and its
// rounding error t = Y4, to first order: exp(-s) - exp(-s)*t.
#define EXPNEGSQ \
	VXORPS       vsign<>(SB), Y11, Y0; \
	EXP; \
	VFNMADD231PS Y4, Y0, Y0

// func vecErfF32AVX2(dst, a *float32, n int)
// |x| < 0.875: x*P(x^2); above: 1 - exp(-x^2) R(w)/|x| with x's sign, x^2
// carried as a float32 pair (FMA) so exp sees it exactly, |x| clamped to
// [0.875, 10.5] (Y12, Y13; erfc is 0 in float32 beyond).
TEXT ·vecErfF32AVX2(SB), NOSPLIT, $0-24
	UNARYHEAD
	EXPCONSTS
	VMOVUPS verfT<>(SB), Y12
	VMOVUPS verfHi<>(SB), Y13

loop:
	VMOVUPS      (SI), Y6
	VANDPS       vabs<>(SB), Y6, Y7
	ERFSMALL
	VMAXPS       Y7, Y12, Y8                // clamp, NaN kept
	VMINPS       Y8, Y13, Y8
	VMOVUPS      vone<>(SB), Y9
	VDIVPS       Y8, Y9, Y9                 // u = 1/a
	VMOVUPS      Y9, Y2
	ERFCR
	VMOVUPS      Y2, Y9
	VMULPS       Y8, Y8, Y11
	VMOVUPS      Y11, Y4
	VFMSUB231PS  Y8, Y8, Y4                 // t = a*a - s exactly
	EXPNEGSQ
	VMULPS       Y10, Y0, Y0
	VMULPS       Y9, Y0, Y0                 // erfc(a)
	VMOVUPS      vone<>(SB), Y1
	VSUBPS       Y0, Y1, Y0
	VANDPS       vsign<>(SB), Y6, Y1
	VORPS        Y1, Y0, Y0
	VCMPPS       $1, Y12, Y7, Y1
	VBLENDVPS    Y1, Y5, Y0, Y0
	VMOVUPS      Y0, (DI)
	UNARYNEXT

done:
	VZEROUPPER
	RET

// func vecGeluF32AVX2(dst, a *float32, n int)
// gelu(x) = x/2 (1 + erf(z)), z = x/sqrt2: |z| < 0.875 as erf's small
// branch, except x G(|x|) for -0.875 < z <= -0.5 where 1 + erf cancels
// (G = erfc(|x|/sqrt2)/2 fitted there); above, from x/2 erfc(|z|) = exp(-x^2/2) R(w)/sqrt2 (u = sqrt2/|x|)
// without cancellation: x - that for x > 0, minus it for x < 0; x^2 is a
// float32 pair and |x| is clamped to [0.875, 10.5]*sqrt2 (Y12, Y13); -Inf
// gives NaN as PyTorch's -Inf*0.
TEXT ·vecGeluF32AVX2(SB), NOSPLIT, $0-24
	UNARYHEAD
	EXPCONSTS
	VMOVUPS vgeluLo<>(SB), Y12
	VMOVUPS vgeluHi<>(SB), Y13

loop:
	VMOVUPS      (SI), Y6
	VMULPS       vrsqrt2<>(SB), Y6, Y6      // z
	ERFSMALL                                // Y5 = erf(z), small branch
	VMOVUPS      (SI), Y6                   // x
	VANDPS       vabs<>(SB), Y6, Y7         // |x|
	VMULPS       vhalf<>(SB), Y6, Y1        // x/2
	VFMADD213PS  Y1, Y1, Y5                 // small = x/2 erf + x/2
	VMAXPS       Y7, Y12, Y8
	VMINPS       Y8, Y13, Y8
	VMOVUPS      vsqrt2<>(SB), Y9
	VDIVPS       Y8, Y9, Y9                 // u = sqrt2/|x|
	ERFCRG
	VMULPS       Y8, Y8, Y11
	VMOVUPS      Y11, Y4
	VFMSUB231PS  Y8, Y8, Y4
	VMULPS       vhalf<>(SB), Y11, Y11      // z^2 = (s + t)/2
	VMULPS       vhalf<>(SB), Y4, Y4
	EXPNEGSQ
	VMULPS       Y10, Y0, Y0                // x/2 erfc(|z|) for x < 0, minus
	VSUBPS       Y0, Y6, Y2                 // x > 0: x - |x|/2 erfc(z)
	VXORPS       vsign<>(SB), Y0, Y0
	VBLENDVPS    Y6, Y0, Y2, Y0             // by x's sign
	VCMPPS       $0, vninf<>(SB), Y6, Y1
	VBLENDVPS    Y1, vnan<>(SB), Y0, Y0
	VMOVUPS      vgeluMB<>(SB), Y1          // mid: x G(|x|), -1.2374 < x <= -0.7071
	VMOVUPS      Y7, Y2
	VFMADD132PS  vgeluMA<>(SB), Y1, Y2
	VMOVUPS      vgeluM0<>(SB), Y3
	VFMADD213PS  vgeluM1<>(SB), Y2, Y3
	VFMADD213PS  vgeluM2<>(SB), Y2, Y3
	VFMADD213PS  vgeluM3<>(SB), Y2, Y3
	VFMADD213PS  vgeluM4<>(SB), Y2, Y3
	VFMADD213PS  vgeluM5<>(SB), Y2, Y3
	VFMADD213PS  vgeluM6<>(SB), Y2, Y3
	VFMADD213PS  vgeluM7<>(SB), Y2, Y3
	VMULPS       Y6, Y3, Y3
	VCMPPS       $13, vgeluMLo<>(SB), Y7, Y8 // |x| >= 0.7071 ...
	VANDPS       Y6, Y8, Y8                 // ... and x < 0
	VBLENDVPS    Y8, Y3, Y5, Y5
	VCMPPS       $1, Y12, Y7, Y1
	VBLENDVPS    Y1, Y5, Y0, Y0
	VMOVUPS      Y0, (DI)
	UNARYNEXT

done:
	VZEROUPPER
	RET

// SIGMOIDEXP sets Y0 = e = exp(-|v|) for v in Y4, with EXPSPLIT's factors
// left in Y2 and Y1, and Y11 = (|v| > 104), where they were clamped.
#define SIGMOIDEXP \
	VANDPS  vabs<>(SB), Y4, Y0; \
	VXORPS  vsign<>(SB), Y0, Y0; \
	VCMPPS  $1, Y14, Y0, Y11; \
	EXPSPLIT; \
	VMULPS  Y1, Y2, Y0

// XTIMESE sets Y7 + Y12 = x*e (x in Y6) as an unevaluated float32 pair,
// rounded once even where e is subnormal (from EXPSPLIT's Y2*Y1); where
// Y11 is set (e underflowed) it is x*e = x*0, so -Inf gives NaN as in
// PyTorch. Clobbers Y3.
#define XTIMESE \
	VMULPS      Y6, Y2, Y7; \
	VMOVUPS     Y7, Y12; \
	VFMSUB231PS Y6, Y2, Y12; \
	VMULPS      Y1, Y7, Y7; \
	VMULPS      Y1, Y12, Y12; \
	VMULPS      Y6, Y0, Y3; \
	VBLENDVPS   Y11, Y3, Y7, Y7; \
	VXORPS      Y3, Y3, Y3; \
	VBLENDVPS   Y11, Y3, Y12, Y12

// DIVONEPLUSE sets Y8 = (Y7 + Y12)/(1 + e), e = Y0 in [0, 1], to about
// half an ulp: 1+e as a pair (Fast2Sum), the quotient corrected by its
// exact remainder (FMA) times an approximate reciprocal (no correction
// where that is NaN: an infinite quotient). Clobbers Y3, Y5, Y9, Y10.
#define DIVONEPLUSE \
	VADDPS       vone<>(SB), Y0, Y3; \
	VMOVUPS      vone<>(SB), Y5; \
	VSUBPS       Y3, Y5, Y5; \
	VADDPS       Y0, Y5, Y5; \
	VDIVPS       Y3, Y7, Y8; \
	VMOVUPS      Y7, Y9; \
	VFNMADD231PS Y3, Y8, Y9; \
	VADDPS       Y12, Y9, Y9; \
	VFNMADD231PS Y5, Y8, Y9; \
	VRCPPS       Y3, Y10; \
	VMULPS       Y10, Y9, Y9; \
	VCMPPS       $3, Y9, Y9, Y10; \
	VANDNPS      Y9, Y10, Y9; \
	VADDPS       Y9, Y8, Y8

// func vecSigmoidF32AVX2(dst, a *float32, n int)
// e = exp(-|x|): 1/(1+e) for x >= 0, e/(1+e) for x < 0 (no cancellation,
// subnormal results kept), the division corrected to about half an ulp.
TEXT ·vecSigmoidF32AVX2(SB), NOSPLIT, $0-24
	UNARYHEAD
	EXPCONSTS

loop:
	VMOVUPS   (SI), Y6
	VMOVUPS   Y6, Y4
	SIGMOIDEXP
	VMOVUPS   vone<>(SB), Y7
	VBLENDVPS Y6, Y0, Y7, Y7
	VXORPS    Y12, Y12, Y12
	DIVONEPLUSE
	VMOVUPS   Y8, (DI)
	UNARYNEXT

done:
	VZEROUPPER
	RET

// func vecSiluF32AVX2(dst, a *float32, n int)
// x/(1+e) for x >= 0, x*e/(1+e) for x < 0, e = exp(-|x|).
TEXT ·vecSiluF32AVX2(SB), NOSPLIT, $0-24
	UNARYHEAD
	EXPCONSTS

loop:
	VMOVUPS   (SI), Y6
	VMOVUPS   Y6, Y4
	SIGMOIDEXP
	XTIMESE
	VBLENDVPS Y6, Y7, Y6, Y7
	VXORPS    Y3, Y3, Y3
	VBLENDVPS Y6, Y12, Y3, Y12
	DIVONEPLUSE
	VMOVUPS   Y8, (DI)
	UNARYNEXT

done:
	VZEROUPPER
	RET

// func vecGeluTanhF32AVX2(dst, a *float32, n int)
// 0.5x(1+tanh(u)) = x*sigmoid(2u), 2u = 2 sqrt(2/pi) x (1 + 0.044715 x^2),
// computed as silu's x*sigmoid without cancellation for x < 0.
TEXT ·vecGeluTanhF32AVX2(SB), NOSPLIT, $0-24
	UNARYHEAD
	EXPCONSTS

loop:
	VMOVUPS     (SI), Y6
	VMULPS      Y6, Y6, Y4
	VMOVUPS     vone<>(SB), Y5
	VFMADD231PS vgeluC<>(SB), Y4, Y5        // 1 + c x^2
	VMULPS      vgeluK2<>(SB), Y6, Y4
	VMULPS      Y5, Y4, Y4                  // v = 2u (x's sign)
	SIGMOIDEXP
	XTIMESE
	VBLENDVPS   Y6, Y7, Y6, Y7
	VXORPS      Y3, Y3, Y3
	VBLENDVPS   Y6, Y12, Y3, Y12
	DIVONEPLUSE
	VMOVUPS     Y8, (DI)
	UNARYNEXT

done:
	VZEROUPPER
	RET

// func vecSumLanesF32AVX2(a *float32, n int, acc *[32]float32)
// Adds a[32k+j] to acc[j] in order of k, for n a multiple of 32.
TEXT ·vecSumLanesF32AVX2(SB), NOSPLIT, $0-24
	MOVQ    a+0(FP), SI
	MOVQ    n+8(FP), CX
	MOVQ    acc+16(FP), DI
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	SHRQ    $5, CX
	JZ      sumdone

sumloop:
	VADDPS 0(SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	VADDPS 64(SI), Y2, Y2
	VADDPS 96(SI), Y3, Y3
	ADDQ   $128, SI
	DECQ   CX
	JNZ    sumloop

sumdone:
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VZEROUPPER
	RET

// func vecMaxF32AVX2(a *float32, n int) float32
// The largest of a[:n] for n a positive multiple of 8, NaN if any is NaN
// (an unordered mask is ORed up beside the maxima).
TEXT ·vecMaxF32AVX2(SB), NOSPLIT, $0-20
	MOVQ    a+0(FP), SI
	MOVQ    n+8(FP), CX
	VMOVUPS (SI), Y0
	VMOVUPS Y0, Y1
	VXORPS  Y2, Y2, Y2
	VXORPS  Y3, Y3, Y3
	XORQ    AX, AX
	SHLQ    $2, CX

max16:
	LEAQ    64(AX), R8
	CMPQ    R8, CX
	JA      max8
	VMOVUPS (SI)(AX*1), Y4
	VMOVUPS 32(SI)(AX*1), Y5
	VMAXPS  Y4, Y0, Y0
	VMAXPS  Y5, Y1, Y1
	VCMPPS  $3, Y4, Y4, Y4
	VCMPPS  $3, Y5, Y5, Y5
	VORPS   Y4, Y2, Y2
	VORPS   Y5, Y3, Y3
	MOVQ    R8, AX
	JMP     max16

max8:
	CMPQ    AX, CX
	JAE     maxfold
	VMOVUPS (SI)(AX*1), Y4
	VMAXPS  Y4, Y0, Y0
	VCMPPS  $3, Y4, Y4, Y4
	VORPS   Y4, Y2, Y2
	ADDQ    $32, AX
	JMP     max8

maxfold:
	VORPS        Y3, Y2, Y2
	VMOVMSKPS    Y2, AX
	TESTQ        AX, AX
	JNZ          maxnan
	VMAXPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VMOVHLPS     X0, X0, X1
	VMAXPS       X1, X0, X0
	VPSHUFD      $1, X0, X1
	VMAXPS       X1, X0, X0
	VMOVSS       X0, ret+16(FP)
	VZEROUPPER
	RET

maxnan:
	MOVL $0x7fc00000, ret+16(FP)
	VZEROUPPER
	RET
