//go:build amd64 && !purego

package cpu

// gemmPackN16F32 copies np 16-column panels: dst[q*dps + p*16 + j] =
// src[p*lds + q*16 + j] for p < kc, q < np, j < 16.
//
//go:noescape
func gemmPackN16F32(dst, src *float32, lds, kc, np, dps int)

// gemmPackN6F32 is gemmPackN16F32 for 6-column panels.
//
//go:noescape
func gemmPackN6F32(dst, src *float32, lds, kc, np, dps int)

// gemmPackT8F32 transposes eight rows into lanes 0..7 of a 16-wide
// panel: dst[p*16+r] = src[r*lds+p] for r < 8, p < n (n a multiple of 8).
//
//go:noescape
func gemmPackT8F32(dst, src *float32, lds, n int)

// gemmStoreT6F32 writes a six-row tile transposed: out[i*ldo+r] =
// t[r*ldt+i] for r < 6, i < n (n a multiple of 8).
//
//go:noescape
func gemmStoreT6F32(out *float32, ldo int, t *float32, ldt, n int)

// gemmT8x8F32 transposes one 8x8 block: dst[c*ldd+r] = src[r*lds+c] for
// r, c < 8.
//
//go:noescape
func gemmT8x8F32(dst *float32, ldd int, src *float32, lds int)

// gemmPackT8WF32 is gemmPackT8F32 into a w-wide panel: dst[p*w+r] =
// src[r*lds+p] for r < 8, p < n (n a multiple of 8).
//
//go:noescape
func gemmPackT8WF32(dst, src *float32, lds, n, w int)

func init() {
	if haveAVX2() {
		packN16Asm, packN6Asm = gemmPackN16F32, gemmPackN6F32
		packT8Asm = gemmPackT8F32
		packT8WAsm = gemmPackT8WF32
		storeT6Asm = gemmStoreT6F32
		t8x8Asm = gemmT8x8F32
	}
}
