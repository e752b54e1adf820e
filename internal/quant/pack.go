package quant

import (
	"encoding/binary"
	"fmt"
)

// The interleaved weight layout ("r16"). A row-major block matrix makes a
// SIMD kernel gather each row's block scales and sum each row's products
// across vector lanes. In the r16 layout every full group of 16 rows
// (PackRows) is stored block column by block column so that one vector
// lane holds one row: for block column b, the group's bytes at
// b·16·TypeSize are
//
//	Q4_0  d[16] (f16, 32 bytes), then qs as 4 chunks c of 16 rows × 4 bytes
//	Q4_1  d[16], m[16] (f16, 64 bytes), then qs as Q4_0's
//	Q5_0  d[16], then qh as one chunk of 16 rows × 4 bytes, then qs as Q4_0's
//	Q5_1  d[16], m[16], then qh and qs as Q5_0's
//	Q8_0  d[16], then qs as 8 chunks c of 16 rows × 4 bytes
//	Q4_K  d[16], dmin[16], the 12 scale bytes as 3 chunks, then qs as 32
//	      chunks 8p+l (p < 4, l < 8) of 16 rows × bytes 32p+l+8i (i < 4)
//
// where chunk c, lane r holds row r's qs[4c:4c+4] (for the 4-bit types, the
// low nibbles are elements 4c..4c+3 and the high nibbles 16+4c..16+4c+3).
// A Q4_K qs chunk 8p+l holds the levels of class l (elements l+8i) of
// sub-block 2p in its low nibbles and of sub-block 2p+1 in its high ones.
// A group takes the bytes its 16 rows take in the row-major layout, in the
// same place, so the layout is a permutation inside each group: row ranges
// that start and end on a group boundary slice the same way in both. Rows
// past the last full group stay row-major. The bytes are only moved, so
// Unpack gives back the original exactly; Q5_0's and Q5_1's qh also has its
// bits moved: the fifth bit of element 4c+i (ggml's qh bit 4c+i, c < 8,
// i < 4) is bit 8i+c of the stored little-endian word, so that byte i, bit
// c flags the element that byte i of quant chunk c meets (low nibbles for
// c < 4, high nibbles of chunk c-4 for c >= 4).

// PackRows is the number of weight rows one interleaved group holds.
const PackRows = 16

// CanPack reports whether weight type t has the r16 layout.
func CanPack(t Type) bool {
	switch t {
	case Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K:
		return true
	}
	return false
}

// packHead returns the bytes of a block's scales (d, and Q4_1's m) and the
// chunks of quant bytes after them.
func packHead(t Type) (head, chunks int) {
	switch t {
	case Q4_1:
		return 4, 4
	case Q5_0:
		return 2, 5
	case Q5_1:
		return 4, 5
	case Q8_0:
		return 2, 8
	case Q4_K:
		return 4, 35
	}
	return 2, 4
}

// chunkByte returns the offset in a block of type t of byte i of its r16
// chunk c.
func chunkByte(t Type, head, c, i int) int {
	if t == Q4_K && c >= 3 {
		q := c - 3
		return 16 + 32*(q/8) + q%8 + 8*i
	}
	return head + 4*c + i
}

// packQH moves the bits of a Q5 block's qh to the r16 order: bit 4c+i to
// bit 8i+c. unpackQH is its inverse.
func packQH(v uint32) uint32 {
	var o uint32
	for e := range 32 {
		o |= (v >> e & 1) << (8*(e%4) + e/4)
	}
	return o
}

func unpackQH(v uint32) uint32 {
	var o uint32
	for e := range 32 {
		o |= (v >> (8*(e%4) + e/4) & 1) << e
	}
	return o
}

// Pack writes the r16 layout of the n rows of type t (rb bytes each) in src
// to dst (len(src) bytes; dst and src must not overlap).
func Pack(t Type, dst, src []byte, n, rb int) error {
	return permute(t, dst, src, n, rb, true)
}

// Unpack is Pack's inverse: it writes the row-major layout of the r16 rows
// in src to dst.
func Unpack(t Type, dst, src []byte, n, rb int) error {
	return permute(t, dst, src, n, rb, false)
}

func permute(t Type, dst, src []byte, n, rb int, pack bool) error {
	if !CanPack(t) {
		return fmt.Errorf("quant: %v has no interleaved layout", t)
	}
	ts := t.TypeSize()
	if n < 0 || rb < 0 || rb%ts != 0 {
		return fmt.Errorf("quant: pack: bad shape n=%d rowBytes=%d for %v", n, rb, t)
	}
	if len(src) < n*rb || len(dst) < n*rb {
		return fmt.Errorf("quant: pack: %d rows of %d bytes need %d bytes (src %d, dst %d)", n, rb, n*rb, len(src), len(dst))
	}
	full := n / PackRows * PackRows
	for g := 0; g < full; g += PackRows {
		base := g * rb
		permuteGroup(t, dst[base:base+PackRows*rb], src[base:base+PackRows*rb], rb, pack)
	}
	copy(dst[full*rb:n*rb], src[full*rb:n*rb])
	return nil
}

// permuteGroup moves one group's bytes between the row-major layout (rows
// of rb bytes) and the r16 layout.
func permuteGroup(t Type, dst, src []byte, rb int, pack bool) {
	ts := t.TypeSize()
	head, chunks := packHead(t)
	nb := rb / ts
	for b := range nb {
		pb := b * PackRows * ts // the block column in the r16 layout
		for r := range PackRows {
			rm := r*rb + b*ts // the block in the row-major layout
			// Scales: each 2-byte field f of row r goes to f·32 + 2r.
			for f := 0; f < head; f += 2 {
				p := pb + f*PackRows + 2*r
				if pack {
					dst[p], dst[p+1] = src[rm+f], src[rm+f+1]
				} else {
					dst[rm+f], dst[rm+f+1] = src[p], src[p+1]
				}
			}
			for c := range chunks {
				p := pb + head*PackRows + c*4*PackRows + 4*r
				q := rm + head + 4*c
				switch {
				case c == 0 && chunks == 5 && pack: // Q5 qh
					binary.LittleEndian.PutUint32(dst[p:], packQH(binary.LittleEndian.Uint32(src[q:])))
				case c == 0 && chunks == 5:
					binary.LittleEndian.PutUint32(dst[q:], unpackQH(binary.LittleEndian.Uint32(src[p:])))
				case t == Q4_K:
					for i := range 4 {
						o := rm + chunkByte(t, head, c, i)
						if pack {
							dst[p+i] = src[o]
						} else {
							dst[o] = src[p+i]
						}
					}
				case pack:
					copy(dst[p:p+4], src[q:q+4])
				default:
					copy(dst[q:q+4], src[p:p+4])
				}
			}
		}
	}
}

// runPacked computes the outputs of the full r16 groups of rows [j0, j1)
// of w (j0 a multiple of PackRows) for activation rows 0..m-1 of a, into y
// (m rows of n), and returns the first row it left: the start of a
// row-major tail. f and g are the level's r16 kernels for t (pack and
// packGemm); without f each group is unpacked and the row-major kernels
// rows and gemm run (the same bits). A function of the kernels, not a
// method of Kernels: MatMulMulti's worker closure calls it, and capturing
// the Kernels value there moved all of it to the heap on every product.
func runPacked(t Type, f rowsFn, g gemmFn, rows rowsFn, gemm gemmFn, w []byte, rb, j0, j1 int, a *acts, m int, y []float32, n int) int {
	end := j0 + (j1-j0)/PackRows*PackRows
	if end == j0 {
		return j0
	}
	if f != nil {
		if m == 1 {
			f(w, rb, j0, end, a, 0, y[:n])
			return end
		}
		if g != nil {
			for g0 := j0; g0 < end; g0 += PackRows {
				g(w, rb, g0, g0+PackRows, a, 0, m, y, n)
			}
			return end
		}
		for g0 := j0; g0 < end; g0 += PackRows {
			for i := range m {
				f(w, rb, g0, g0+PackRows, a, i, y[i*n:(i+1)*n])
			}
		}
		return end
	}
	buf := make([]byte, PackRows*rb)
	ty := make([]float32, m*PackRows)
	for g0 := j0; g0 < end; g0 += PackRows {
		permuteGroup(t, buf, w[g0*rb:(g0+PackRows)*rb], rb, false)
		if gemm != nil && m > 1 {
			gemm(buf, rb, 0, PackRows, a, 0, m, ty, PackRows)
		} else {
			for i := range m {
				rows(buf, rb, 0, PackRows, a, i, ty[i*PackRows:(i+1)*PackRows])
			}
		}
		for i := range m {
			copy(y[i*n+g0:][:PackRows], ty[i*PackRows:])
		}
	}
	return end
}

// Packs reports whether k's level has a kernel of its own for r16 weights
// of type t (elsewhere they run, with the same bits, by unpacking each
// group on every product, which is slower than the row-major layout).
func (k Kernels) Packs(t Type) bool { return t <= Q8_K && k.pack[t] != nil }
