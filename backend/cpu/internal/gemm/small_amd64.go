//go:build amd64 && !purego

package gemm

// F32x6x16s is the 6x16 f32 micro-kernel on unpacked operands: A
// element (r, p) at a[r*rsa+p*csa], B element (p, j) at b[p*rsb+j] (16
// contiguous columns), the tile at c with row stride ldc. It computes
// what F32x6x16 does on packed panels: one FMA chain per element over
// p < kc in order, from the tile (load 1) or from zero (load 0).
//
//go:noescape
func F32x6x16s(kc int, a *float32, rsa, csa int, b *float32, rsb int, c *float32, ldc int, load int)
