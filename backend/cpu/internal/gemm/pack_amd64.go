//go:build amd64 && !purego

package gemm

// PackN16F32 copies np 16-column panels: dst[q*dps + p*16 + j] =
// src[p*lds + q*16 + j] for p < kc, q < np, j < 16.
//
//go:noescape
func PackN16F32(dst, src *float32, lds, kc, np, dps int)

// PackN6F32 is PackN16F32 for 6-column panels.
//
//go:noescape
func PackN6F32(dst, src *float32, lds, kc, np, dps int)

// PackT8F32 transposes eight rows into lanes 0..7 of a 16-wide
// panel: dst[p*16+r] = src[r*lds+p] for r < 8, p < n (n a multiple of 8).
//
//go:noescape
func PackT8F32(dst, src *float32, lds, n int)

// StoreT6F32 writes a six-row tile transposed: out[i*ldo+r] =
// t[r*ldt+i] for r < 6, i < n (n a multiple of 8).
//
//go:noescape
func StoreT6F32(out *float32, ldo int, t *float32, ldt, n int)

// T8x8F32 transposes one 8x8 block: dst[c*ldd+r] = src[r*lds+c] for
// r, c < 8.
//
//go:noescape
func T8x8F32(dst *float32, ldd int, src *float32, lds int)

// PackT8WF32 is PackT8F32 into a w-wide panel: dst[p*w+r] =
// src[r*lds+p] for r < 8, p < n (n a multiple of 8).
//
//go:noescape
func PackT8WF32(dst, src *float32, lds, n, w int)
