//go:build amd64 && !purego

package cpu

// convCopy16 sets dst[ldd*i : ldd*i+16] = src[koff[i] : koff[i]+16] for i
// < n (conv_amd64.s). The caller checks the bounds.
//
//go:noescape
func convCopy16(dst, src *float32, koff *int, n, ldd int)

// convTrans16 sets dst[ldd*k+q] = src[cols[q]+k] for k < n, a multiple of
// 8, and q < 16 (conv_amd64.s). The caller checks the bounds.
//
//go:noescape
func convTrans16(dst, src *float32, cols *[16]int, n, ldd int)

// convTrans16S2 sets dst[ldd*k+q] = src[cols[q]+2k] for k < n, a multiple
// of 8, and q < 16, reading src up to cols[q]+2n-1 (conv_amd64.s). The
// caller checks the bounds.
//
//go:noescape
func convTrans16S2(dst, src *float32, cols *[16]int, n, ldd int)

// convRuns16 fills, for each of n k steps, 16 columns of a panel (dst[ldd*k
// : ldd*k+16]) from nruns (1 to 4) contiguous runs of the input: lane i of
// run r (set in mask runs[r][1]) is src[koff[k]+runs[r][0]+i]
// (conv_amd64.s, AVX-512). The runs' masks cover the 16 lanes. The caller
// checks the bounds.
//
//go:noescape
func convRuns16(dst, src *float32, koff *int, n int, runs *[4][2]int, nruns, ldd int)

// convAVX512 caches haveAVX512 for the packing loops.
var convAVX512 = haveAVX512()

// hasConvRuns16 reports whether convRuns16 can run (level avx512).
func hasConvRuns16(ks *kset) bool { return convAVX512 && ks.atLeast(LevelAVX512) }

//go:generate sh -c "python3 ../../tools/convasm/gen_direct.py > conv_direct_amd64.s"

// convDirect6x64 accumulates a packed 6-row A panel times B read straight
// from the padded input (k step k: the 64 values at src+koff[k]) into the
// 6x64 tile at c (conv_direct_amd64.s, AVX-512; the 6x64 GEMM kernel's
// arithmetic). The caller checks the bounds.
//
//go:noescape
func convDirect6x64(kc int, a, src *float32, koff *int, c *float32, ldc int, load int)

// convDirect6x16 is convDirect6x64 for the 6x16 tile on YMM registers
// (conv_direct_amd64.s, AVX2 and FMA; the 6x16 GEMM kernel's arithmetic):
// k step k's B is the 16 values at src+koff[k]. The caller checks the
// bounds.
//
//go:noescape
func convDirect6x16(kc int, a, src *float32, koff *int, c *float32, ldc int, load int)
