package quant

import (
	"encoding/binary"
	"math"
)

// acts holds m activation rows of k elements quantized to Q8_0, Q8_1 or
// Q8_K with the reference quantizer, unpacked into arrays that the kernels
// read contiguously. The values are those of ggml's blocks: d (and Q8_1's
// s) decoded from their half-precision encoding, Q8_K's d a float32.
type acts struct {
	t    Type
	k, m int
	nb   int       // blocks per row
	qs   []int8    // m*k quants
	d    []float32 // m*nb scales
	s    []float32 // Q8_1: m*nb values of s (d*sum(q) in half precision)
	isum []int32   // Q8_0, Q8_1: m*nb sums of each block's quants
	bsum []int16   // Q8_K: m*nb*16 sums of 16 quants (ggml's bsums)
	msum []int32   // Q8_K: m*nb*8 sums of 32 quants (bsums pairwise)
}

// quantizeActs quantizes rows [i0, i1) of x (rows of a.k) into a.
func (a *acts) quantizeRows(x []float32, i0, i1 int, raw []byte) {
	t, k, nb := a.t, a.k, a.nb
	ts := t.TypeSize()
	for i := i0; i < i1; i++ {
		quantizeRow(t, x[i*k:(i+1)*k], raw)
		qs := a.qs[i*k : (i+1)*k]
		switch t {
		case Q8_0, Q8_1:
			off := 2
			if t == Q8_1 {
				off = 4
			}
			for b := range nb {
				blk := raw[b*ts : (b+1)*ts]
				a.d[i*nb+b] = f16to32(le16(blk))
				if t == Q8_1 {
					a.s[i*nb+b] = f16to32(le16(blk[2:]))
				}
				var sum int32
				for j, q := range blk[off : off+32] {
					qs[b*32+j] = int8(q)
					sum += int32(int8(q))
				}
				a.isum[i*nb+b] = sum
			}
		case Q8_K:
			for b := range nb {
				blk := raw[b*ts : (b+1)*ts]
				a.d[i*nb+b] = math.Float32frombits(binary.LittleEndian.Uint32(blk))
				for j, q := range blk[4 : 4+qkK] {
					qs[b*qkK+j] = int8(q)
				}
				bs := a.bsum[(i*nb+b)*16:][:16]
				for j := range 16 {
					bs[j] = int16(binary.LittleEndian.Uint16(blk[4+qkK+2*j:]))
				}
				ms := a.msum[(i*nb+b)*8:][:8]
				for j := range 8 {
					ms[j] = int32(bs[2*j]) + int32(bs[2*j+1])
				}
			}
		}
	}
}

// newActs quantizes the m rows of x (k elements each) to type t.
func newActs(t Type, x []float32, m, k int, par func(int, func(int, int))) *acts {
	bs := t.BlockSize()
	nb := k / bs
	a := &acts{t: t, k: k, m: m, nb: nb, qs: make([]int8, m*k), d: make([]float32, m*nb)}
	switch t {
	case Q8_1:
		a.s = make([]float32, m*nb)
		fallthrough
	case Q8_0:
		a.isum = make([]int32, m*nb)
	case Q8_K:
		a.bsum = make([]int16, m*nb*16)
		a.msum = make([]int32, m*nb*8)
	}
	rb := nb * t.TypeSize()
	if par == nil || m < 4 {
		a.quantizeRows(x, 0, m, make([]byte, rb))
		return a
	}
	par(m, func(lo, hi int) { a.quantizeRows(x, lo, hi, make([]byte, rb)) })
	return a
}
