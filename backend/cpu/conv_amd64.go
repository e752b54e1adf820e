//go:build amd64 && !purego

package cpu

// convCopy16 sets dst[16i : 16i+16] = src[koff[i] : koff[i]+16] for i < n
// (conv_amd64.s). The caller checks the bounds.
//
//go:noescape
func convCopy16(dst, src *float32, koff *int, n int)

// convTrans16 sets dst[16k+q] = src[cols[q]+k] for k < n, a multiple of 8,
// and q < 16 (conv_amd64.s). The caller checks the bounds.
//
//go:noescape
func convTrans16(dst, src *float32, cols *[16]int, n int)

// convTrans16S2 sets dst[16k+q] = src[cols[q]+2k] for k < n, a multiple of
// 8, and q < 16, reading src up to cols[q]+2n-1 (conv_amd64.s). The caller
// checks the bounds.
//
//go:noescape
func convTrans16S2(dst, src *float32, cols *[16]int, n int)

// convRuns16 copies, for each of n k steps, nruns contiguous runs of the
// input into a 16-column panel: dst[16k+runs[r][1]+i] = src[koff[k]+
// runs[r][0]+i] for the lanes i set in mask runs[r][2] (conv_amd64.s,
// AVX-512). The caller checks the bounds.
//
//go:noescape
func convRuns16(dst, src *float32, koff *int, n int, runs *[16][3]int, nruns int)

// hasConvRuns16 reports whether convRuns16 can run (level avx512).
func hasConvRuns16() bool { return haveAVX512() && atLeast(LevelAVX512) }
