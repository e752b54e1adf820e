//go:build !amd64 || purego

package cpu

import (
	"math"
	"unsafe"
)

// convCopy16 is conv_amd64.s's packing copy in Go (the fast convolution
// path needs the assembly GEMM kernels, so it does not run here; this keeps
// the package building).
func convCopy16(dst, src *float32, koff *int, n, ldd int) {
	if n <= 0 {
		return
	}
	d := unsafe.Slice(dst, ldd*(n-1)+16)
	ko := unsafe.Slice(koff, n)
	for i, o := range ko {
		copy(d[ldd*i:ldd*i+16], unsafe.Slice((*float32)(unsafe.Add(unsafe.Pointer(src), 4*o)), 16))
	}
}

// convTrans16 is conv_amd64.s's packing transpose in Go (see convCopy16).
func convTrans16(dst, src *float32, cols *[16]int, n, ldd int) {
	if n <= 0 {
		return
	}
	d := unsafe.Slice(dst, ldd*(n-1)+16)
	for q, c := range cols {
		s := unsafe.Slice((*float32)(unsafe.Add(unsafe.Pointer(src), 4*c)), n)
		for k, v := range s {
			d[ldd*k+q] = v
		}
	}
}

// convTrans16S2 is conv_amd64.s's step-2 packing transpose in Go (see
// convCopy16).
func convTrans16S2(dst, src *float32, cols *[16]int, n, ldd int) {
	if n <= 0 {
		return
	}
	d := unsafe.Slice(dst, ldd*(n-1)+16)
	for q, c := range cols {
		s := unsafe.Slice((*float32)(unsafe.Add(unsafe.Pointer(src), 4*c)), 2*n)
		for k := 0; k < n; k++ {
			d[ldd*k+q] = s[2*k]
		}
	}
}

// convPair32 is conv_bf16_amd64.s's contiguous pair packing in Go (the
// VDPBF16PS convolution does not run here; this keeps the package
// building and gives the tests a reference).
func convPair32(dst *uint32, src *uint16, koff *int, n int) {
	d := unsafe.Slice(dst, 32*n)
	ko := unsafe.Slice(koff, 2*n)
	for j := 0; j < n; j++ {
		a := unsafe.Slice((*uint16)(unsafe.Add(unsafe.Pointer(src), 2*ko[2*j])), 32)
		b := unsafe.Slice((*uint16)(unsafe.Add(unsafe.Pointer(src), 2*ko[2*j+1])), 32)
		for c := range 32 {
			d[32*j+c] = uint32(a[c])<<16 | uint32(b[c])
		}
	}
}

// convPairT16 is conv_bf16_amd64.s's transposing pair packing in Go (see
// convPair32).
func convPairT16(dst *uint32, ldd int, src *uint16, offs *[16]int, n int) {
	if n <= 0 {
		return
	}
	d := unsafe.Slice(dst, (n-1)*ldd+16)
	for r, o := range offs {
		s := unsafe.Slice((*uint16)(unsafe.Add(unsafe.Pointer(src), 2*o)), 2*n)
		for j := 0; j < n; j++ {
			d[j*ldd+r] = uint32(s[2*j])<<16 | uint32(s[2*j+1])
		}
	}
}

// convRuns16 is conv_amd64.s's run copy in Go (see convCopy16).
func convRuns16(dst, src *float32, koff *int, n int, runs *[4][2]int, nruns, ldd int) {
	if n <= 0 {
		return
	}
	d := unsafe.Slice(dst, ldd*(n-1)+16)
	ko := unsafe.Slice(koff, n)
	for k, o := range ko {
		for _, r := range runs[:nruns] {
			for i := 0; i < 16; i++ {
				if r[1]>>i&1 != 0 {
					d[ldd*k+i] = *(*float32)(unsafe.Add(unsafe.Pointer(src), 4*(o+r[0]+i)))
				}
			}
		}
	}
}

// hasConvRuns16 reports false: there is no assembly here.
func hasConvRuns16(*kset) bool { return false }

// convDirect6x64 is conv_direct_amd64.s's kernel in Go (FMA chains in k
// order; the direct path does not run here).
func convDirect6x64(kc int, a, src *float32, koff *int, c *float32, ldc int, load int) {
	convDirectGo(64, kc, a, src, koff, c, ldc, load)
}

// convDirect6x16 is conv_direct_amd64.s's 6x16 kernel in Go (see
// convDirect6x64).
func convDirect6x16(kc int, a, src *float32, koff *int, c *float32, ldc int, load int) {
	convDirectGo(16, kc, a, src, koff, c, ldc, load)
}

func convDirectGo(nr, kc int, a, src *float32, koff *int, c *float32, ldc int, load int) {
	av := unsafe.Slice(a, 6*kc)
	ko := unsafe.Slice(koff, kc)
	cv := unsafe.Slice(c, 5*ldc+nr)
	for r := 0; r < 6; r++ {
		for j := 0; j < nr; j++ {
			var acc float32
			if load != 0 {
				acc = cv[r*ldc+j]
			}
			for k, o := range ko {
				b := *(*float32)(unsafe.Add(unsafe.Pointer(src), 4*(o+j)))
				acc = float32(math.FMA(float64(av[6*k+r]), float64(b), float64(acc)))
			}
			cv[r*ldc+j] = acc
		}
	}
}
