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
// vexplo88: -88.0 (ExpSubSum's clamp: rounds to n = -127, a zero scale)
VCONST(vexplo88, $0xc2b00000)
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

// vmagic: 12582912.0 (1.5*2^23: adding it rounds to an integer held in the low mantissa bits)
VCONST(vmagic, $0x4b400000)
// vmagic191: 12583103.0 (1.5*2^23 + 191: the same, the integer biased by 64+127, an exponent field)
VCONST(vmagic191, $0x4b4000bf)
// vhlog2e: 0.7213475108146667 (log2(e)/2)
VCONST(vhlog2e, $0x3f38aa3b)
// vexpE6: 0.0013813161058351398 (exp(r) = 1 + r + r^2 E(r), |r| <= ln2/2, fitted (tools/vecfit))
VCONST(vexpE6, $0x3ab50d47)
// vexpE5: 0.008369410410523415
VCONST(vexpE5, $0x3c091fda)
// vexpE4: 0.04166845604777336
VCONST(vexpE4, $0x3d2aac8b)
// vexpE3: 0.16666515171527863
VCONST(vexpE3, $0x3e2aaa45)
// vexpE2: 0.4999999403953552
VCONST(vexpE2, $0x3efffffe)
// vgeluT: 0.7071067690849304 (gelu: x/2 + s G(s) below |x| = 1/sqrt2)
VCONST(vgeluT, $0x3f3504f3)
// vgeluHi: 14.5 (gelu: |x| clamped to it; gelu is -0 beyond -14.5, x beyond 14.5)
VCONST(vgeluHi, $0x41680000)
// vgeluK: 1.5 (K)
VCONST(vgeluK, $0x3fc00000)
// vgeluS4: 0.00333612272515893 (G(s) = erf(sqrt(s))/sqrt(2s), s = x^2/2, fitted)
VCONST(vgeluS4, $0x3b5aa2da)
// vgeluS3: -0.018920186907052994
VCONST(vgeluS3, $0xbc9afe82)
// vgeluS2: 0.07978160679340363
VCONST(vgeluS2, $0x3da3648a)
// vgeluS1: -0.26596131920814514
VCONST(vgeluS1, $0xbe882c15)
// vgeluS0: 0.7978845834732056
VCONST(vgeluS0, $0x3f4c422a)
// vgeluN10: 6.859557671833585e-23 (N(|x|) = |x| exp(x^2/2) erfc(|x|/sqrt2)/2 as a polynomial in t = (|x|-K)/(|x|+K), times 2^-64, fitted (tools/vecfit))
VCONST(vgeluN10, $0x1aa5da9b)
// vgeluN9: -5.0190514632774243e-23
VCONST(vgeluN9, $0x9a72b4d9)
// vgeluN8: -1.117155531457195e-22
VCONST(vgeluN8, $0x9b070e4a)
// vgeluN7: -1.2833338143074326e-22
VCONST(vgeluN7, $0x9b1b2542)
// vgeluN6: 4.240713962532061e-23
VCONST(vgeluN6, $0x1a4d117f)
// vgeluN5: 5.847561085574696e-22
VCONST(vgeluN5, $0x1c30bb50)
// vgeluN4: 9.632649499634636e-22
VCONST(vgeluN4, $0x1c919082)
// vgeluN3: -1.0732458421548128e-21
VCONST(vgeluN3, $0x9ca22f30)
// vgeluN2: -6.846602202876253e-21
VCONST(vgeluN2, $0x9e015423)
// vgeluN1: 1.1444904882613503e-20
VCONST(vgeluN1, $0x1e58302a)
// vgeluN0: 1.673308831012348e-20
VCONST(vgeluN0, $0x1e9e0a20)
// verfHi2: 3.95 (erf: 1 in float32 beyond)
VCONST(verfHi2, $0x407ccccd)
// verfL6: 0.00028839687001891434 (erf = 1 - 2^L(|x|) above 0.875, L ~ log2 erfc, fitted (tools/vecfit))
VCONST(verfL6, $0x399733f9)
// verfL5: -0.004446381703019142
VCONST(verfL5, $0xbb91b2f4)
// verfL4: 0.03228900581598282
VCONST(verfL4, $0x3d04417a)
// verfL3: -0.1504012495279312
VCONST(verfL3, $0xbe1a02c9)
// verfL2: -0.9187380075454712
VCONST(verfL2, $0xbf6b326a)
// verfL1: -1.6272004842758179
VCONST(verfL1, $0xbfd0481b)
// verfL0: -0.00020805174426641315
VCONST(verfL0, $0xb95a2877)
// vexp2P5: 0.00015353361959569156 (2^f = 1 + f P(f), |f| <= 1/2, fitted)
VCONST(vexp2P5, $0x3920fdde)
// vexp2P4: 0.0013398875016719103
VCONST(vexp2P4, $0x3aaf9f2a)
// vexp2P3: 0.00961843691766262
VCONST(vexp2P3, $0x3c1d96a6)
// vexp2P2: 0.055503323674201965
VCONST(vexp2P2, $0x3d635774)
// vexp2P1: 0.24022647738456726
VCONST(vexp2P1, $0x3e75fdee)
// vexp2P0: 0.6931471824645996
VCONST(vexp2P0, $0x3f317218)

// VECBINARY(OP) is the body of a lane-by-lane binary kernel
// func(dst, a, b *float32, n int): dst = a OP b, 32 lanes a step while 32
// remain, then 8 (n is a multiple of 8).
#define VECBINARY(OP) \
	MOVQ dst+0(FP), DI; \
	MOVQ a+8(FP), SI; \
	MOVQ b+16(FP), DX; \
	MOVQ n+24(FP), CX; \
	XORQ AX, AX; \
	SHLQ $2, CX; \
loop32: \
	LEAQ 128(AX), R8; \
	CMPQ R8, CX; \
	JA   loop8; \
	VMOVUPS 0(SI)(AX*1), Y0; \
	VMOVUPS 32(SI)(AX*1), Y1; \
	VMOVUPS 64(SI)(AX*1), Y2; \
	VMOVUPS 96(SI)(AX*1), Y3; \
	OP 0(DX)(AX*1), Y0, Y0; \
	OP 32(DX)(AX*1), Y1, Y1; \
	OP 64(DX)(AX*1), Y2, Y2; \
	OP 96(DX)(AX*1), Y3, Y3; \
	VMOVUPS Y0, 0(DI)(AX*1); \
	VMOVUPS Y1, 32(DI)(AX*1); \
	VMOVUPS Y2, 64(DI)(AX*1); \
	VMOVUPS Y3, 96(DI)(AX*1); \
	MOVQ R8, AX; \
	JMP  loop32; \
loop8: \
	CMPQ AX, CX; \
	JAE  done; \
	VMOVUPS (SI)(AX*1), Y0; \
	OP (DX)(AX*1), Y0, Y0; \
	VMOVUPS Y0, (DI)(AX*1); \
	ADDQ $32, AX; \
	JMP  loop8; \
done: \
	VZEROUPPER; \
	RET

// VECSCALAR(OP) is the body of func(dst, a *float32, n int, s float32):
// dst = a OP s, as VECBINARY.
#define VECSCALAR(OP) \
	MOVQ dst+0(FP), DI; \
	MOVQ a+8(FP), SI; \
	MOVQ n+16(FP), CX; \
	VBROADCASTSS s+24(FP), Y8; \
	XORQ AX, AX; \
	SHLQ $2, CX; \
loop32: \
	LEAQ 128(AX), R8; \
	CMPQ R8, CX; \
	JA   loop8; \
	OP 0(SI)(AX*1), Y8, Y0; \
	OP 32(SI)(AX*1), Y8, Y1; \
	OP 64(SI)(AX*1), Y8, Y2; \
	OP 96(SI)(AX*1), Y8, Y3; \
	VMOVUPS Y0, 0(DI)(AX*1); \
	VMOVUPS Y1, 32(DI)(AX*1); \
	VMOVUPS Y2, 64(DI)(AX*1); \
	VMOVUPS Y3, 96(DI)(AX*1); \
	MOVQ R8, AX; \
	JMP  loop32; \
loop8: \
	CMPQ AX, CX; \
	JAE  done; \
	OP (SI)(AX*1), Y8, Y0; \
	VMOVUPS Y0, (DI)(AX*1); \
	ADDQ $32, AX; \
	JMP  loop8; \
done: \
	VZEROUPPER; \
	RET

// func vecAddF32AVX2(dst, a, b *float32, n int)
// dst = a add b, lane by lane (VADDPS).
TEXT ·vecAddF32AVX2(SB), NOSPLIT, $0-32
	VECBINARY(VADDPS)

// func vecSubF32AVX2(dst, a, b *float32, n int)
// dst = a sub b, lane by lane (VSUBPS).
TEXT ·vecSubF32AVX2(SB), NOSPLIT, $0-32
	VECBINARY(VSUBPS)

// func vecMulF32AVX2(dst, a, b *float32, n int)
// dst = a mul b, lane by lane (VMULPS).
TEXT ·vecMulF32AVX2(SB), NOSPLIT, $0-32
	VECBINARY(VMULPS)

// func vecDivF32AVX2(dst, a, b *float32, n int)
// dst = a div b, lane by lane (VDIVPS).
TEXT ·vecDivF32AVX2(SB), NOSPLIT, $0-32
	VECBINARY(VDIVPS)

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
	VECSCALAR(VADDPS)

// func vecMulScalarF32AVX2(dst, a *float32, n int, s float32)
// dst = a * s.
TEXT ·vecMulScalarF32AVX2(SB), NOSPLIT, $0-28
	VECSCALAR(VMULPS)

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

// EXPSPLIT2(XA, NA, PA, TA, XB, NB, PB, TB) is EXPSPLIT on two vectors at
// once, the instructions of the two interleaved (the same operations and
// operand orders on each, so the same bits): exp(XA) = PA*NA and exp(XB)
// = PB*NB; TA and TB are clobbered. One vector's chain of 25 dependent
// steps left the core waiting on latency (15 cycles a vector on Zen 3);
// two in flight hide it.
#define EXPSPLIT2(XA, NA, PA, TA, XB, NB, PB, TB) \
	VMINPS       XA, Y15, XA; \
	VMINPS       XB, Y15, XB; \
	VMAXPS       XA, Y14, XA; \
	VMAXPS       XB, Y14, XB; \
	VMULPS       vlog2e<>(SB), XA, NA; \
	VMULPS       vlog2e<>(SB), XB, NB; \
	VROUNDPS     $0, NA, NA; \
	VROUNDPS     $0, NB, NB; \
	VFNMADD231PS vln2hi<>(SB), NA, XA; \
	VFNMADD231PS vln2hi<>(SB), NB, XB; \
	VFNMADD231PS vln2lo<>(SB), NA, XA; \
	VFNMADD231PS vln2lo<>(SB), NB, XB; \
	VMOVUPS      vexpP0<>(SB), PA; \
	VMOVUPS      vexpP0<>(SB), PB; \
	VFMADD213PS  vexpP1<>(SB), XA, PA; \
	VFMADD213PS  vexpP1<>(SB), XB, PB; \
	VFMADD213PS  vexpP2<>(SB), XA, PA; \
	VFMADD213PS  vexpP2<>(SB), XB, PB; \
	VFMADD213PS  vexpP3<>(SB), XA, PA; \
	VFMADD213PS  vexpP3<>(SB), XB, PB; \
	VFMADD213PS  vexpP4<>(SB), XA, PA; \
	VFMADD213PS  vexpP4<>(SB), XB, PB; \
	VFMADD213PS  vexpP5<>(SB), XA, PA; \
	VFMADD213PS  vexpP5<>(SB), XB, PB; \
	VMULPS       XA, XA, TA; \
	VMULPS       XB, XB, TB; \
	VFMADD213PS  XA, TA, PA; \
	VFMADD213PS  XB, TB, PB; \
	VADDPS       vone<>(SB), PA, PA; \
	VADDPS       vone<>(SB), PB, PB; \
	VCVTPS2DQ    NA, NA; \
	VCVTPS2DQ    NB, NB; \
	VPSRAD       $1, NA, TA; \
	VPSRAD       $1, NB, TB; \
	VPSUBD       TA, NA, NA; \
	VPSUBD       TB, NB, NB; \
	VPADDD       v127<>(SB), TA, TA; \
	VPADDD       v127<>(SB), TB, TB; \
	VPSLLD       $23, TA, TA; \
	VPSLLD       $23, TB, TB; \
	VPADDD       v127<>(SB), NA, NA; \
	VPADDD       v127<>(SB), NB, NB; \
	VPSLLD       $23, NA, NA; \
	VPSLLD       $23, NB, NB; \
	VMULPS       TA, PA, PA; \
	VMULPS       TB, PB, PB

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

	// Two vectors at a time (EXPSPLIT2), then the last one alone.
loop2:
	CMPQ    CX, $2
	JLT     loop
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y5
	VCMPPS  $1, Y14, Y0, Y4
	VCMPPS  $1, Y14, Y5, Y9
	VANDNPS Y0, Y4, Y0
	VANDNPS Y5, Y9, Y5
	EXPSPLIT2(Y0, Y1, Y2, Y3, Y5, Y6, Y7, Y8)
	VMULPS  Y1, Y2, Y0
	VMULPS  Y6, Y7, Y5
	VANDNPS Y0, Y4, Y0
	VANDNPS Y5, Y9, Y5
	VMOVUPS Y0, (DI)
	VMOVUPS Y5, 32(DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $2, CX
	JNZ     loop2
	JMP     done

loop:
	VMOVUPS (SI), Y0
	VCMPPS  $1, Y14, Y0, Y4 // x < -104: exp is +0 (as EXP gives at -104)
	VANDNPS Y0, Y4, Y0      // computed from 0 instead, whose arithmetic
	EXP                     // has no subnormal steps (microcode assists
	VANDNPS Y0, Y4, Y0      // on Intel: 15-20x slower), then zeroed
	VMOVUPS Y0, (DI)
	UNARYNEXT

done:
	VZEROUPPER
	RET

// ESF2(OA, OB, ACCA, ACCB): ExpSubSum's step on the sixteen values at
// OA(DI) and OB(DI), two vectors interleaved (one's chain alone waits on
// latency): x - m (AddScalar's operation and operand order, Y15 = -m),
// then EXPSPLIT's steps with two changes that leave a normal result's
// bits as they are and make the rest cheaper: the clamp is [-88, 88.8]
// (Y14, Y13), and 2^n is built in one piece from n + 1.5·2^23 (vmagic:
// the same round to nearest even as VROUNDPS for |n| < 2^22), so p·2^n
// rounds once as EXPSPLIT's p·2^n1·2^n2 does when 2^n is normal. For n =
// -127 (x below about -87.68) the scale's bits are 0 and so is the result
// (EXPSPLIT: a subnormal); n = 128 gives +Inf. The result is stored back
// and added into ACC as vecSumLanesF32AVX2 adds. NaNs take the path
// EXPSPLIT's take through the same operand slots, so their bits are the
// same too. Clobbers Y0-Y7.
#define ESF2(OA, OB, ACCA, ACCB) \
	VADDPS       OA(DI), Y15, Y0; \
	VADDPS       OB(DI), Y15, Y4; \
	VMINPS       Y0, Y13, Y0; \
	VMINPS       Y4, Y13, Y4; \
	VMAXPS       Y0, Y14, Y0; \
	VMAXPS       Y4, Y14, Y4; \
	VMULPS       vlog2e<>(SB), Y0, Y1; \
	VMULPS       vlog2e<>(SB), Y4, Y5; \
	VADDPS       vmagic<>(SB), Y1, Y1; \
	VADDPS       vmagic<>(SB), Y5, Y5; \
	VSUBPS       vmagic<>(SB), Y1, Y2; \
	VSUBPS       vmagic<>(SB), Y5, Y6; \
	VFNMADD231PS vln2hi<>(SB), Y2, Y0; \
	VFNMADD231PS vln2hi<>(SB), Y6, Y4; \
	VFNMADD231PS vln2lo<>(SB), Y2, Y0; \
	VFNMADD231PS vln2lo<>(SB), Y6, Y4; \
	VMOVUPS      vexpP0<>(SB), Y3; \
	VMOVUPS      vexpP0<>(SB), Y7; \
	VFMADD213PS  vexpP1<>(SB), Y0, Y3; \
	VFMADD213PS  vexpP1<>(SB), Y4, Y7; \
	VFMADD213PS  vexpP2<>(SB), Y0, Y3; \
	VFMADD213PS  vexpP2<>(SB), Y4, Y7; \
	VFMADD213PS  vexpP3<>(SB), Y0, Y3; \
	VFMADD213PS  vexpP3<>(SB), Y4, Y7; \
	VFMADD213PS  vexpP4<>(SB), Y0, Y3; \
	VFMADD213PS  vexpP4<>(SB), Y4, Y7; \
	VFMADD213PS  vexpP5<>(SB), Y0, Y3; \
	VFMADD213PS  vexpP5<>(SB), Y4, Y7; \
	VMULPS       Y0, Y0, Y2; \
	VMULPS       Y4, Y4, Y6; \
	VFMADD213PS  Y0, Y2, Y3; \
	VFMADD213PS  Y4, Y6, Y7; \
	VADDPS       vone<>(SB), Y3, Y3; \
	VADDPS       vone<>(SB), Y7, Y7; \
	VPADDD       v127<>(SB), Y1, Y1; \
	VPADDD       v127<>(SB), Y5, Y5; \
	VPSLLD       $23, Y1, Y1; \
	VPSLLD       $23, Y5, Y5; \
	VMULPS       Y1, Y3, Y3; \
	VMULPS       Y5, Y7, Y7; \
	VMOVUPS      Y3, OA(DI); \
	VMOVUPS      Y7, OB(DI); \
	VADDPS       Y3, ACCA, ACCA; \
	VADDPS       Y7, ACCB, ACCB

// func expSubSumF32Y(x *float32, n int, negm float32, acc *[SumLanes]float32) float32
// ExpSubSum at level avx2 in one pass: for n a multiple of 32, x[i] =
// exp(x[i] + negm) and acc[i%32] += x[i] in order (ESF2: Exp's bits but
// +0 where Exp's scale would be 2^-127 or less), and
// returns acc folded pairwise as FoldLanes folds it (the same additions,
// the same operand slots).
TEXT ·expSubSumF32Y(SB), NOSPLIT, $0-36
	MOVQ         x+0(FP), DI
	MOVQ         n+8(FP), CX
	VBROADCASTSS negm+16(FP), Y15
	MOVQ         acc+24(FP), SI
	VMOVUPS      vexplo88<>(SB), Y14
	VMOVUPS      vexphi<>(SB), Y13
	VMOVUPS      0(SI), Y8
	VMOVUPS      32(SI), Y9
	VMOVUPS      64(SI), Y10
	VMOVUPS      96(SI), Y11
	SHRQ         $5, CX
	JZ           esfdone

esfloop:
	ESF2(0, 32, Y8, Y9)
	ESF2(64, 96, Y10, Y11)
	ADDQ $128, DI
	DECQ CX
	JNZ  esfloop

esfdone:
	VMOVUPS      Y8, 0(SI)
	VMOVUPS      Y9, 32(SI)
	VMOVUPS      Y10, 64(SI)
	VMOVUPS      Y11, 96(SI)
	VADDPS       Y10, Y8, Y8 // lanes j < 16 += j + 16
	VADDPS       Y11, Y9, Y9
	VADDPS       Y9, Y8, Y8  // j < 8 += j + 8
	VEXTRACTF128 $1, Y8, X0
	VADDPS       X0, X8, X8  // j < 4 += j + 4
	VMOVHLPS     X8, X8, X0
	VADDPS       X0, X8, X8  // j < 2 += j + 2
	VMOVSHDUP    X8, X0
	VADDSS       X0, X8, X8  // 0 += 1
	VMOVSS       X8, ret+32(FP)
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

// The erf and gelu kernels work on two vectors per iteration, A in Y0-Y7
// and B in Y8-Y15, their steps interleaved so that the out-of-order core
// has two independent dependency chains at hand; constants are memory
// operands. PAIRHEAD and PAIRNEXT run the loop over n/8 vectors: B is the
// vector after A, or, for an odd last vector, A's own lanes again (BX = 0;
// both load before either stores, so dst may alias a).
#define PAIRHEAD \
	MOVQ dst+0(FP), DI; \
	MOVQ a+8(FP), SI; \
	MOVQ n+16(FP), CX; \
	SHRQ $3, CX; \
	JZ   done; \
	MOVQ $32, BX

// PAIRNEXT advances past the pair (or the last vector) and loops.
#define PAIRNEXT \
	LEAQ 32(SI)(BX*1), SI; \
	LEAQ 32(DI)(BX*1), DI; \
	SUBQ $2, CX; \
	JG   loop

// ERF1 (x in X): P = x*P(x^2) (erf's small branch), S = |x| clamped to
// 3.95 (an integer min of the bits: NaN gives 3.95; erf patches NaN at the
// end), A = the small-branch mask |x| < 0.875.
#define ERF1(X, A, S, P) \
	VANDPS      vabs<>(SB), X, A; \
	VMULPS      X, X, S; \
	VMOVUPS     verfP0<>(SB), P; \
	VFMADD213PS verfP1<>(SB), S, P; \
	VFMADD213PS verfP2<>(SB), S, P; \
	VFMADD213PS verfP3<>(SB), S, P; \
	VFMADD213PS verfP4<>(SB), S, P; \
	VFMADD213PS verfP5<>(SB), S, P; \
	VMULPS      X, P, P; \
	VPMINUD     verfHi2<>(SB), A, S; \
	VCMPPS      $1, verfT<>(SB), A, A

// ERF2: L = L(a) ~ log2(erfc(a)) for a = S, in Estrin's form (c0 + c1 a) +
// a^2 ((c2 + c3 a) + a^2 (c4 + c5 a + c6 a^2)) for a shorter dependency
// chain (its rounding costs erf only erfc(a) times as much). Clobbers H, T.
#define ERF2(S, L, H, T) \
	VMULPS      S, S, T; \
	VMOVUPS     verfL5<>(SB), H; \
	VFMADD213PS verfL4<>(SB), S, H; \
	VFMADD231PS verfL6<>(SB), T, H; \
	VMOVUPS     verfL3<>(SB), L; \
	VFMADD213PS verfL2<>(SB), S, L; \
	VFMADD231PS H, T, L; \
	VMOVUPS     verfL1<>(SB), H; \
	VFMADD213PS verfL0<>(SB), S, H; \
	VFMADD213PS H, T, L

// ERF3: L = f, H = k in the exponent field, for 2^L = 2^f 2^k, k = L
// rounded to an integer, f = L - k exactly. Clobbers U.
#define ERF3(L, H, U) \
	VADDPS vmagic<>(SB), L, H; \
	VSUBPS vmagic<>(SB), H, U; \
	VPSLLD $23, H, H; \
	VSUBPS U, L, L

// EXP2POLY sets P = 2^f*2^k for f in F: 1 + f P(f), P in Estrin's form
// (p0 + p1 f) + f^2 ((p2 + p3 f) + f^2 (p4 + p5 f)), and k (H, from ERF3)
// added to the exponent. Clobbers T, U.
#define EXP2POLY(F, T, H, U, P) \
	VMULPS      F, F, T; \
	VMOVUPS     vexp2P5<>(SB), U; \
	VFMADD213PS vexp2P4<>(SB), F, U; \
	VMOVUPS     vexp2P3<>(SB), P; \
	VFMADD213PS vexp2P2<>(SB), F, P; \
	VFMADD231PS U, T, P; \
	VMOVUPS     vexp2P1<>(SB), U; \
	VFMADD213PS vexp2P0<>(SB), F, U; \
	VFMADD231PS P, T, U; \
	VFMADD213PS vone<>(SB), F, U; \
	VPADDD      H, U, P

// ERF4: T = erf(x): 1 - 2^L with x's sign, or the small branch P where A
// is set; NaN where x is NaN.
#define ERF4(X, A, P, U, T) \
	VMOVUPS   vone<>(SB), T; \
	VSUBPS    U, T, T; \
	VANDPS    vsign<>(SB), X, U; \
	VORPS     U, T, T; \
	VBLENDVPS A, P, T, T; \
	VCMPPS    $3, X, X, U; \
	VORPS     U, T, T

#define ERFBODY \
	ERF1(Y0, Y1, Y2, Y3); \
	ERF1(Y8, Y9, Y10, Y11); \
	ERF2(Y2, Y4, Y5, Y7); \
	ERF2(Y10, Y12, Y13, Y15); \
	ERF3(Y4, Y5, Y6); \
	ERF3(Y12, Y13, Y14); \
	EXP2POLY(Y4, Y2, Y5, Y7, Y6); \
	EXP2POLY(Y12, Y10, Y13, Y15, Y14); \
	ERF4(Y0, Y1, Y3, Y6, Y7); \
	ERF4(Y8, Y9, Y11, Y14, Y15); \
	VMOVUPS Y7, (DI); \
	VMOVUPS Y15, (DI)(BX*1)

// func vecErfF32AVX2(dst, a *float32, n int)
// |x| < 0.875: x*P(x^2); above: 1 - 2^L(|x|) with x's sign, L a fitted
// polynomial approximating log2(erfc(|x|)) on [0.875, 3.95] (|x| clamped
// there; erf is 1 in float32 beyond), whose absolute error costs erf at
// most erfc(|x|) ln2 times as much: 2^L needs no extra precision.
TEXT ·vecErfF32AVX2(SB), NOSPLIT, $0-24
	PAIRHEAD

loop:
	CMPQ CX, $2
	JAE  body
	XORQ BX, BX

body:
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(BX*1), Y8
	ERFBODY
	PAIRNEXT

done:
	VZEROUPPER
	RET

// GELU1 (x in X): A = min(|x|, 14.5) (an integer min of the bits: NaN
// gives 14.5; gelu patches NaN at the end), H = A/2, S + T = A*A/2 exactly
// (S rounded, T its error).
#define GELU1(X, A, H, S, T) \
	VANDPS      vabs<>(SB), X, A; \
	VPMINUD     vgeluHi<>(SB), A, A; \
	VMULPS      vhalf<>(SB), A, H; \
	VMULPS      H, A, S; \
	VMOVUPS     S, T; \
	VFMSUB231PS H, A, T

// GELU2: U = t = (A-K)/(A+K) (the division starts early) and P = kf =
// 1.5*2^23 + 191 + k, k = round(-A*A/2*log2e), from A directly (a k off by
// one from S's leaves exp's reduced argument within its fitted range).
#define GELU2(A, U, Q, P) \
	VSUBPS       vgeluK<>(SB), A, U; \
	VADDPS       vgeluK<>(SB), A, Q; \
	VDIVPS       Q, U, U; \
	VMULPS       vhlog2e<>(SB), A, Q; \
	VMOVUPS      vmagic191<>(SB), P; \
	VFNMADD231PS Q, A, P

// GELU3: A = x/2 + S G(S), the small branch (x/2 = H with x's sign).
#define GELU3(X, H, S, A, Q) \
	VANDPS      vsign<>(SB), X, Q; \
	VORPS       H, Q, Q; \
	VMOVUPS     vgeluS4<>(SB), A; \
	VFMADD213PS vgeluS3<>(SB), S, A; \
	VFMADD213PS vgeluS2<>(SB), S, A; \
	VFMADD213PS vgeluS1<>(SB), S, A; \
	VFMADD213PS vgeluS0<>(SB), S, A; \
	VFMADD213PS Q, S, A

// GELU4 reduces exp(-(S+T)) = exp(r) 2^k: H = k, P = 2^(k+64) (kf's low
// bits shifted into the exponent field), S = r = -S - k ln2hi - (T + k
// ln2lo). Clobbers T.
#define GELU4(P, H, S, T) \
	VSUBPS       vmagic191<>(SB), P, H; \
	VPSLLD       $23, P, P; \
	VFNMSUB231PS vln2hi<>(SB), H, S; \
	VFMADD231PS  vln2lo<>(SB), H, T; \
	VSUBPS       T, S, S

// GELU5 sets Q = q = r + r^2 E(r) for r in S (exp(r) = 1 + q), as r + r^2
// (e2 + e3 r) + r^4 (e4 + e5 r + e6 r^2) for a short dependency chain.
// Clobbers T, H, A.
#define GELU5(S, T, H, A, Q) \
	VMULPS      S, S, T; \
	VMOVUPS     vexpE3<>(SB), Q; \
	VFMADD213PS vexpE2<>(SB), S, Q; \
	VMOVUPS     vexpE5<>(SB), H; \
	VFMADD213PS vexpE4<>(SB), S, H; \
	VFMADD231PS vexpE6<>(SB), T, H; \
	VFMADD213PS S, T, Q; \
	VMULPS      T, T, A; \
	VFMADD231PS H, A, Q

// GELU6: T = N(|x|)*2^-64 from U = t: c0 + t (c1 + t (c2 + t R)), R =
// c3 + ... + c10 t^7 in Estrin's form for a shorter dependency chain (its
// rounding damped by t^3). Clobbers S, H, A.
#define GELU6(U, S, T, H, A) \
	VMULPS      U, U, S; \
	VMOVUPS     vgeluN10<>(SB), H; \
	VFMADD213PS vgeluN9<>(SB), U, H; \
	VMOVUPS     vgeluN8<>(SB), T; \
	VFMADD213PS vgeluN7<>(SB), U, T; \
	VFMADD213PS T, S, H; \
	VMOVUPS     vgeluN6<>(SB), T; \
	VFMADD213PS vgeluN5<>(SB), U, T; \
	VMOVUPS     vgeluN4<>(SB), A; \
	VFMADD213PS vgeluN3<>(SB), U, A; \
	VFMADD213PS A, S, T; \
	VMULPS      S, S, A; \
	VFMADD231PS H, A, T; \
	VFMADD213PS vgeluN2<>(SB), U, T; \
	VFMADD213PS vgeluN1<>(SB), U, T; \
	VFMADD213PS vgeluN0<>(SB), U, T

// GELU7: A = the large branch: y = exp(-x^2/2) N(|x|) = M + M q (M = T P:
// N 2^-64 2^(k+64), rounded once even when subnormal; exp's 1 + q rounds
// only inside the FMA) as max(x, -0) - y, NaN where x is NaN or -Inf; Q =
// the small-branch mask |x| < 1/sqrt2.
#define GELU7(X, P, T, Q, A) \
	VMULPS      P, T, T; \
	VFMADD213PS T, T, Q; \
	VMAXPS      vsign<>(SB), X, A; \
	VSUBPS      Q, A, A; \
	VCMPPS      $10, vninf<>(SB), X, Q; \
	VORPS       Q, A, A; \
	VANDPS      vabs<>(SB), X, Q; \
	VCMPPS      $1, vgeluT<>(SB), Q, Q

// GELUBODY keeps each vector's small branch in dst until the blend, for
// registers.
#define GELUBODY \
	GELU1(Y0, Y1, Y2, Y3, Y4); \
	GELU1(Y8, Y9, Y10, Y11, Y12); \
	GELU2(Y1, Y5, Y7, Y6); \
	GELU2(Y9, Y13, Y15, Y14); \
	GELU3(Y0, Y2, Y3, Y1, Y7); \
	GELU3(Y8, Y10, Y11, Y9, Y15); \
	VMOVUPS Y1, (DI); \
	VMOVUPS Y9, (DI)(BX*1); \
	GELU4(Y6, Y2, Y3, Y4); \
	GELU4(Y14, Y10, Y11, Y12); \
	GELU5(Y3, Y4, Y2, Y1, Y7); \
	GELU5(Y11, Y12, Y10, Y9, Y15); \
	GELU6(Y5, Y3, Y4, Y2, Y1); \
	GELU6(Y13, Y11, Y12, Y10, Y9); \
	GELU7(Y0, Y6, Y4, Y7, Y1); \
	GELU7(Y8, Y14, Y12, Y15, Y9); \
	VBLENDVPS Y7, (DI), Y1, Y1; \
	VMOVUPS Y1, (DI); \
	VBLENDVPS Y15, (DI)(BX*1), Y9, Y9; \
	VMOVUPS Y9, (DI)(BX*1)

// func vecGeluF32AVX2(dst, a *float32, n int)
// gelu(x) = x/2 (1 + erf(x/sqrt2)): below |x| = 1/sqrt2 as x/2 + s G(s),
// s = x^2/2 (G fitted); above, from x Q(|x|) = -sign(x) exp(-x^2/2) N(|x|),
// Q(a) = erfc(a/sqrt2)/2 and N fitted as a polynomial in t = (|x|-3)/(|x|+3):
// x - y for x > 0, -y for x < 0 (y = exp(-x^2/2) N), so the negative tail
// keeps its relative accuracy where PyTorch's 1+erf loses it entirely. x^2/2
// is a float32 pair (FMA) folded into exp's reduced argument; |x| is clamped
// to 14.5; -Inf gives NaN as PyTorch's -Inf*0.
TEXT ·vecGeluF32AVX2(SB), NOSPLIT, $0-24
	PAIRHEAD

loop:
	CMPQ CX, $2
	JAE  body
	XORQ BX, BX

body:
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(BX*1), Y8
	GELUBODY
	PAIRNEXT

done:
	VZEROUPPER
	RET

// The sigmoid family (sigmoid, silu, gelu-tanh) also works on two vectors
// per iteration (PAIRHEAD/PAIRNEXT), each in eight registers, with the same
// arithmetic, operation for operation, as one vector at a time: the
// results are the same bits.

// EXPSPLITR sets P*K = exp(V) for V <= 0 (Cephes expf's polynomial, p*2^n
// with P = p*2^n1 and K = 2^n2, n1 = n>>1, so that the product, or x*P*K,
// rounds once even when subnormal); V is clamped below at -104 (NaN passes
// through). Clobbers V and T.
#define EXPSPLITR(V, K, P, T) \
	VMOVUPS      vexplo<>(SB), T; \
	VMAXPS       V, T, V; \
	VMULPS       vlog2e<>(SB), V, K; \
	VROUNDPS     $0, K, K; \
	VFNMADD231PS vln2hi<>(SB), K, V; \
	VFNMADD231PS vln2lo<>(SB), K, V; \
	VMOVUPS      vexpP0<>(SB), P; \
	VFMADD213PS  vexpP1<>(SB), V, P; \
	VFMADD213PS  vexpP2<>(SB), V, P; \
	VFMADD213PS  vexpP3<>(SB), V, P; \
	VFMADD213PS  vexpP4<>(SB), V, P; \
	VFMADD213PS  vexpP5<>(SB), V, P; \
	VMULPS       V, V, T; \
	VFMADD213PS  V, T, P; \
	VADDPS       vone<>(SB), P, P; \
	VCVTPS2DQ    K, K; \
	VPSRAD       $1, K, T; \
	VPSUBD       T, K, K; \
	VPADDD       v127<>(SB), T, T; \
	VPSLLD       $23, T, T; \
	VPADDD       v127<>(SB), K, K; \
	VPSLLD       $23, K, K; \
	VMULPS       T, P, P

// SIGMOIDEXP sets E = e = exp(-|v|) for v in V, with EXPSPLITR's factors
// left in P and K, and M = (|v| > 104), where they were clamped. Clobbers
// V (M may be V) and T.
#define SIGMOIDEXP(V, E, K, P, T, M) \
	VANDPS  vabs<>(SB), V, E; \
	VXORPS  vsign<>(SB), E, E; \
	VCMPPS  $1, vexplo<>(SB), E, M; \
	EXPSPLITR(E, K, P, T); \
	VMULPS  K, P, E

// XTIMESE sets HI + LO = x*e (x in X) as an unevaluated float32 pair,
// rounded once even where e is subnormal (from EXPSPLITR's P*K); where M is
// set (e underflowed) it is x*e = x*0, so -Inf gives NaN as in PyTorch.
// Clobbers T.
#define XTIMESE(X, E, K, P, M, HI, LO, T) \
	VMULPS      X, P, HI; \
	VMOVUPS     HI, LO; \
	VFMSUB231PS X, P, LO; \
	VMULPS      K, HI, HI; \
	VMULPS      K, LO, LO; \
	VMULPS      X, E, T; \
	VBLENDVPS   M, T, HI, HI; \
	VXORPS      T, T, T; \
	VBLENDVPS   M, T, LO, LO

// DIVONEPLUSE sets A = (HI + LO)/(1 + e), e = E in [0, 1], to about half an
// ulp: 1+e as a pair (Fast2Sum), the quotient corrected by its exact
// remainder (FMA) times an approximate reciprocal (no correction where that
// is NaN: an infinite quotient). Clobbers B, C, D, F.
#define DIVONEPLUSE(E, HI, LO, A, B, C, D, F) \
	VADDPS       vone<>(SB), E, B; \
	VMOVUPS      vone<>(SB), C; \
	VSUBPS       B, C, C; \
	VADDPS       E, C, C; \
	VDIVPS       B, HI, A; \
	VMOVUPS      HI, D; \
	VFNMADD231PS B, A, D; \
	VADDPS       LO, D, D; \
	VFNMADD231PS C, A, D; \
	VRCPPS       B, F; \
	VMULPS       F, D, D; \
	VCMPPS       $3, D, D, F; \
	VANDNPS      D, F, D; \
	VADDPS       D, A, A

// SIGMOID1: e = exp(-|x|) in E, HI = e for x < 0 and 1 otherwise, LO = 0.
#define SIGMOID1(X, E, K, P, T, M, HI, LO) \
	VMOVUPS   X, M; \
	SIGMOIDEXP(M, E, K, P, T, M); \
	VMOVUPS   vone<>(SB), HI; \
	VBLENDVPS X, E, HI, HI; \
	VXORPS    LO, LO, LO

// SILU2: HI + LO = x*e for x < 0 (XTIMESE), x otherwise.
#define SILU2(X, E, K, P, T, M, HI, LO) \
	XTIMESE(X, E, K, P, M, HI, LO, T); \
	VBLENDVPS X, HI, X, HI; \
	VXORPS    T, T, T; \
	VBLENDVPS X, LO, T, LO

#define SIGMOIDBODY \
	SIGMOID1(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7); \
	SIGMOID1(Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15); \
	DIVONEPLUSE(Y1, Y6, Y7, Y2, Y3, Y4, Y5, Y0); \
	DIVONEPLUSE(Y9, Y14, Y15, Y10, Y11, Y12, Y13, Y8); \
	VMOVUPS Y2, (DI); \
	VMOVUPS Y10, (DI)(BX*1)

// func vecSigmoidF32AVX2(dst, a *float32, n int)
// e = exp(-|x|): 1/(1+e) for x >= 0, e/(1+e) for x < 0 (no cancellation,
// subnormal results kept), the division corrected to about half an ulp.
TEXT ·vecSigmoidF32AVX2(SB), NOSPLIT, $0-24
	PAIRHEAD

loop:
	CMPQ CX, $2
	JAE  body
	XORQ BX, BX

body:
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(BX*1), Y8
	SIGMOIDBODY
	PAIRNEXT

done:
	VZEROUPPER
	RET

#define SILUBODY \
	VMOVUPS Y0, Y5; \
	VMOVUPS Y8, Y13; \
	SIGMOIDEXP(Y5, Y1, Y2, Y3, Y4, Y5); \
	SIGMOIDEXP(Y13, Y9, Y10, Y11, Y12, Y13); \
	SILU2(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7); \
	SILU2(Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15); \
	DIVONEPLUSE(Y1, Y6, Y7, Y2, Y3, Y4, Y5, Y0); \
	DIVONEPLUSE(Y9, Y14, Y15, Y10, Y11, Y12, Y13, Y8); \
	VMOVUPS Y2, (DI); \
	VMOVUPS Y10, (DI)(BX*1)

// func vecSiluF32AVX2(dst, a *float32, n int)
// x/(1+e) for x >= 0, x*e/(1+e) for x < 0, e = exp(-|x|).
TEXT ·vecSiluF32AVX2(SB), NOSPLIT, $0-24
	PAIRHEAD

loop:
	CMPQ CX, $2
	JAE  body
	XORQ BX, BX

body:
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(BX*1), Y8
	SILUBODY
	PAIRNEXT

done:
	VZEROUPPER
	RET

// GELUTANH1: M = v = 2u = 2 sqrt(2/pi) x (1 + 0.044715 x^2) (x's sign).
#define GELUTANH1(X, M, LO) \
	VMULPS      X, X, M; \
	VMOVUPS     vone<>(SB), LO; \
	VFMADD231PS vgeluC<>(SB), M, LO; \
	VMULPS      vgeluK2<>(SB), X, M; \
	VMULPS      LO, M, M

#define GELUTANHBODY \
	GELUTANH1(Y0, Y5, Y7); \
	GELUTANH1(Y8, Y13, Y15); \
	SIGMOIDEXP(Y5, Y1, Y2, Y3, Y4, Y5); \
	SIGMOIDEXP(Y13, Y9, Y10, Y11, Y12, Y13); \
	SILU2(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7); \
	SILU2(Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15); \
	DIVONEPLUSE(Y1, Y6, Y7, Y2, Y3, Y4, Y5, Y0); \
	DIVONEPLUSE(Y9, Y14, Y15, Y10, Y11, Y12, Y13, Y8); \
	VMOVUPS Y2, (DI); \
	VMOVUPS Y10, (DI)(BX*1)

// func vecGeluTanhF32AVX2(dst, a *float32, n int)
// 0.5x(1+tanh(u)) = x*sigmoid(2u), 2u = 2 sqrt(2/pi) x (1 + 0.044715 x^2),
// computed as silu's x*sigmoid without cancellation for x < 0.
TEXT ·vecGeluTanhF32AVX2(SB), NOSPLIT, $0-24
	PAIRHEAD

loop:
	CMPQ CX, $2
	JAE  body
	XORQ BX, BX

body:
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(BX*1), Y8
	GELUTANHBODY
	PAIRNEXT

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


// EXPZ is EXP on ZMM registers: Z0 = exp(Z0), clobbering Z1-Z3. Needs the
// constants in Z14-Z26 that expSubSumF32Z loads.
#define EXPZ \
	VMINPS       Z0, Z15, Z0; \
	VMAXPS       Z0, Z14, Z0; \
	VMULPS       Z16, Z0, Z1; \
	VRNDSCALEPS  $0, Z1, Z1; \
	VFNMADD231PS Z17, Z1, Z0; \
	VFNMADD231PS Z18, Z1, Z0; \
	VMOVAPS      Z19, Z2; \
	VFMADD213PS  Z20, Z0, Z2; \
	VFMADD213PS  Z21, Z0, Z2; \
	VFMADD213PS  Z22, Z0, Z2; \
	VFMADD213PS  Z23, Z0, Z2; \
	VFMADD213PS  Z24, Z0, Z2; \
	VMULPS       Z0, Z0, Z3; \
	VFMADD213PS  Z0, Z3, Z2; \
	VADDPS       Z25, Z2, Z2; \
	VCVTPS2DQ    Z1, Z1; \
	VPSRAD       $1, Z1, Z3; \
	VPSUBD       Z3, Z1, Z1; \
	VPADDD       Z26, Z3, Z3; \
	VPSLLD       $23, Z3, Z3; \
	VPADDD       Z26, Z1, Z1; \
	VPSLLD       $23, Z1, Z1; \
	VMULPS       Z3, Z2, Z2; \
	VMULPS       Z1, Z2, Z0

// func expSubSumF32Z(x *float32, n int, m float32) float32
// Level avx512: x[i] = exp(x[i] - m) for i < n (EXP's Cephes expf on ZMM
// registers: the same operations, so the same bits as vecExpF32AVX2 on
// x[i] - m), and returns their sum, accumulated in 16 lanes (element i in
// lane i mod 16, the tail under a mask) and folded pairwise at the end.
TEXT ·expSubSumF32Z(SB), NOSPLIT, $0-28
	MOVQ         x+0(FP), DI
	MOVQ         n+8(FP), CX
	VBROADCASTSS m+16(FP), Z9
	VBROADCASTSS vexplo<>(SB), Z14
	VBROADCASTSS vexphi<>(SB), Z15
	VBROADCASTSS vlog2e<>(SB), Z16
	VBROADCASTSS vln2hi<>(SB), Z17
	VBROADCASTSS vln2lo<>(SB), Z18
	VBROADCASTSS vexpP0<>(SB), Z19
	VBROADCASTSS vexpP1<>(SB), Z20
	VBROADCASTSS vexpP2<>(SB), Z21
	VBROADCASTSS vexpP3<>(SB), Z22
	VBROADCASTSS vexpP4<>(SB), Z23
	VBROADCASTSS vexpP5<>(SB), Z24
	VBROADCASTSS vone<>(SB), Z25
	VPBROADCASTD v127<>(SB), Z26
	VPXORD       Z8, Z8, Z8

eszloop:
	CMPQ CX, $16
	JLT  esztail
	VMOVUPS (DI), Z0
	VSUBPS  Z9, Z0, Z0
	VCMPPS  $1, Z14, Z0, K2 // x < -104: +0 (see vecExpF32AVX2)
	VPXORD  Z0, Z0, K2, Z0
	EXPZ
	VPXORD  Z0, Z0, K2, Z0
	VMOVUPS Z0, (DI)
	VADDPS  Z0, Z8, Z8
	ADDQ    $64, DI
	SUBQ    $16, CX
	JMP     eszloop

esztail:
	TESTQ CX, CX
	JEQ   eszfold
	MOVL  $1, AX
	SHLL  CX, AX
	DECL  AX
	KMOVW AX, K1
	VMOVUPS.Z (DI), K1, Z0
	VSUBPS  Z9, Z0, Z0
	VCMPPS  $1, Z14, Z0, K2
	VPXORD  Z0, Z0, K2, Z0
	EXPZ
	VPXORD  Z0, Z0, K2, Z0
	VMOVUPS Z0, K1, (DI)
	VADDPS  Z0, Z8, K1, Z8

eszfold:
	VEXTRACTF32X8 $1, Z8, Y1
	VADDPS        Y1, Y8, Y8
	VEXTRACTF128  $1, Y8, X1
	VADDPS        X1, X8, X8
	VMOVHLPS      X8, X8, X1
	VADDPS        X1, X8, X8
	VMOVSHDUP     X8, X1
	VADDSS        X1, X8, X8
	MOVSS         X8, ret+24(FP)
	VZEROUPPER
	RET

// func vecRopeF32AVX2(dst, x, c, s *float32, h, n int)
// For j < n (a multiple of 8, at most h): dst[j] = x[j]·c[j] - x[j+h]·s[j]
// and dst[j+h] = x[j+h]·c[j+h] + x[j]·s[j+h], each product rounded (no FMA).
TEXT ·vecRopeF32AVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ c+16(FP), R8
	MOVQ s+24(FP), R9
	MOVQ h+32(FP), BX
	MOVQ n+40(FP), CX
	SHLQ $2, BX
	SHRQ $3, CX
	JZ   ropedone

ropeloop:
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(BX*1), Y1
	VMULPS  (R8), Y0, Y2
	VMULPS  (R9), Y1, Y3
	VSUBPS  Y3, Y2, Y2
	VMULPS  (R8)(BX*1), Y1, Y4
	VMULPS  (R9)(BX*1), Y0, Y5
	VADDPS  Y5, Y4, Y4
	VMOVUPS Y2, (DI)
	VMOVUPS Y4, (DI)(BX*1)
	ADDQ    $32, SI
	ADDQ    $32, DI
	ADDQ    $32, R8
	ADDQ    $32, R9
	DECQ    CX
	JNZ     ropeloop

ropedone:
	VZEROUPPER
	RET
