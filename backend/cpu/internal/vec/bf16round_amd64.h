// Shared AVX2 macros of the amd64 kernels that round float32 lanes to
// bfloat16 as dtype.BF16FromF32 does (ties to even; a NaN keeps its sign
// and top payload bits and gets its quiet bit set), the result kept as
// float32 lanes whose low 16 bits are zero.

// BF16ROUNDCONST loads the constants into Y8-Y13 (AX clobbered): Y8 the
// magnitude mask, Y9 +Inf, Y10 1, Y11 the rounding bias 0x7fff, Y12 the
// bfloat16 mask 0xffff0000, Y13 the quiet bit.
#define BF16ROUNDCONST \
	MOVL $0x7fffffff, AX; \
	VMOVD AX, X8; \
	VPBROADCASTD X8, Y8; \
	MOVL $0x7f800000, AX; \
	VMOVD AX, X9; \
	VPBROADCASTD X9, Y9; \
	MOVL $1, AX; \
	VMOVD AX, X10; \
	VPBROADCASTD X10, Y10; \
	MOVL $0x7fff, AX; \
	VMOVD AX, X11; \
	VPBROADCASTD X11, Y11; \
	MOVL $0xffff0000, AX; \
	VMOVD AX, X12; \
	VPBROADCASTD X12, Y12; \
	MOVL $0x00400000, AX; \
	VMOVD AX, X13; \
	VPBROADCASTD X13, Y13

// BF16ROUND sets R to X rounded to bfloat16 (R may be X; T2-T4 scratch;
// BF16ROUNDCONST's Y8-Y13).
#define BF16ROUND(X, R, T2, T3, T4) \
	VPAND Y8, X, T2; \
	VPCMPGTD Y9, T2, T2; \
	VPSRLD $16, X, T3; \
	VPAND Y10, T3, T3; \
	VPOR Y13, X, T4; \
	VPAND Y12, T4, T4; \
	VPADDD Y11, X, R; \
	VPADDD T3, R, R; \
	VPAND Y12, R, R; \
	VBLENDVPS T2, T4, R, R
