//go:build !amd64 || purego

package cpu

import "unsafe"

// convCopy16 is conv_amd64.s's packing copy in Go (the fast convolution
// path needs the assembly GEMM kernels, so it does not run here; this keeps
// the package building).
func convCopy16(dst, src *float32, koff *int, n int) {
	d := unsafe.Slice(dst, 16*n)
	ko := unsafe.Slice(koff, n)
	for i, o := range ko {
		copy(d[16*i:16*i+16], unsafe.Slice((*float32)(unsafe.Add(unsafe.Pointer(src), 4*o)), 16))
	}
}

// convTrans16 is conv_amd64.s's packing transpose in Go (see convCopy16).
func convTrans16(dst, src *float32, cols *[16]int, n int) {
	d := unsafe.Slice(dst, 16*n)
	for q, c := range cols {
		s := unsafe.Slice((*float32)(unsafe.Add(unsafe.Pointer(src), 4*c)), n)
		for k, v := range s {
			d[16*k+q] = v
		}
	}
}

// convTrans16S2 is conv_amd64.s's step-2 packing transpose in Go (see
// convCopy16).
func convTrans16S2(dst, src *float32, cols *[16]int, n int) {
	d := unsafe.Slice(dst, 16*n)
	for q, c := range cols {
		s := unsafe.Slice((*float32)(unsafe.Add(unsafe.Pointer(src), 4*c)), 2*n)
		for k := 0; k < n; k++ {
			d[16*k+q] = s[2*k]
		}
	}
}
