package quant

import (
	"encoding/binary"
	"math"
	"sync"
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
	m16  []int16   // Q8_K: msum as int16 (|sum| <= 32*128), for VPMADDWD
	// kp (Q8_K) is qs rearranged for the VPDPBUSD K kernels: each half of
	// a block holds its sub-blocks of 32 in the order 0, 2, 1, 3, each with
	// byte 4c+i = quant c+8i, so that a dword holds one p%8 class.
	kp []int8
	// k6 (Q8_K) is qs in the AVX2 Q6_K kernel's order: in each sub-block
	// of 32 (groups A, B of 16), class c's quants c, c+8 of A and c, c+8 of
	// B, classes 0..3 in the first 16 bytes and 4..7 in the second; k6c
	// holds 32 times the sums of those pairs (m*k/2 words) for the GEMM
	// kernel (the row kernels make them: k6c would double a row's bytes).
	k6  []int8
	k6c []int16
	// asm: the rows are quantized with the assembly forms of the
	// quantizers and layouts (the kernels' level has them).
	asm bool

	bufs actBufs
}

// quantizeActs quantizes rows [i0, i1) of x (rows of a.k) into a.
func (a *acts) quantizeRows(x []float32, i0, i1 int, raw []byte) {
	t, k, nb := a.t, a.k, a.nb
	ts := t.TypeSize()
	for i := i0; i < i1; i++ {
		if t == Q8_0 || t == Q8_1 {
			a.quantizeQ8Row(x[i*k:(i+1)*k], i)
			continue
		}
		if t == Q8_K && a.asm && quantQ8KRow != nil && nb > 0 {
			a.quantizeQ8KRow(x[i*k:(i+1)*k], i)
			continue
		}
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
				a.fillQ8KBlock(i, b)
			}
		}
	}
}

// fillQ8KBlock derives, from block b of row i's quants and bsums, the
// 32-sums (msum, m16) and the extra layouts a holds.
func (a *acts) fillQ8KBlock(i, b int) {
	k, nb := a.k, a.nb
	bs := a.bsum[(i*nb+b)*16:][:16]
	ms := a.msum[(i*nb+b)*8:][:8]
	m16 := a.m16[(i*nb+b)*8:][:8]
	for j := range 8 {
		ms[j] = int32(bs[2*j]) + int32(bs[2*j+1])
		m16[j] = int16(ms[j])
	}
	src := a.qs[i*k+b*qkK:][:qkK]
	if a.kp != nil {
		fillKP(src, a.kp[i*k+b*qkK:][:qkK])
	}
	if a.k6 != nil {
		var corr []int16
		if a.k6c != nil {
			corr = a.k6c[(i*k+b*qkK)/2:][:qkK/2]
		}
		dst := a.k6[i*k+b*qkK:][:qkK]
		if a.asm && fillK6Asm != nil {
			var c *int16
			if corr != nil {
				c = &corr[0]
			}
			fillK6Asm(&src[0], &dst[0], c, qkK/32)
			return
		}
		fillK6(src, dst, corr)
	}
}

// fillK6Asm is fillK6 in assembly where the CPU runs it (act_amd64.go):
// n sub-blocks of 32 quants, corr nil for no pair sums.
var fillK6Asm func(src, dst *int8, corr *int16, n int)

// quantizeQ8KRow quantizes row i (x) to Q8_K straight into a's arrays with
// quantQ8KRow (the bits of quantQ8K and the decoding above).
func (a *acts) quantizeQ8KRow(x []float32, i int) {
	nb := a.nb
	quantQ8KRow(&x[0], nb, &a.qs[i*a.k], &a.d[i*nb], &a.bsum[i*nb*16])
	for b := range nb {
		a.fillQ8KBlock(i, b)
	}
}

// quantQ8KRow is the AVX2 form of the Q8_K reference quantizer where the
// CPU runs it (act_amd64.go): nb blocks of x into quants, d and bsums.
var quantQ8KRow func(x *float32, nb int, qs *int8, d *float32, bsum *int16)

// quantizeQ8Row quantizes row i (x) to Q8_0 or Q8_1 straight into a's
// arrays: the values quantQ8_0 / quantQ8_1 encode and the Q8_0/Q8_1 case
// above decodes (d and s through half precision), without the bytes.
func (a *acts) quantizeQ8Row(x []float32, i int) {
	nb := a.nb
	if a.asm && quantQ8Row != nil && nb > 0 {
		var s *float32
		if a.t == Q8_1 {
			s = &a.s[i*nb]
		}
		quantQ8Row(&x[0], nb, &a.qs[i*a.k], &a.d[i*nb], s, &a.isum[i*nb])
		return
	}
	for b := range nb {
		xb := x[b*32 : (b+1)*32]
		qs := a.qs[i*a.k+b*32:][:32]
		d := amaxOf(xb) / 127
		id := inv(d)
		sum := 0
		for j, v := range xb {
			q := roundQ8(v * id)
			qs[j] = q
			sum += int(q)
		}
		a.d[i*nb+b] = f16to32(f32to16(d))
		if a.t == Q8_1 {
			a.s[i*nb+b] = f16to32(f32to16(float32(sum) * d))
		}
		a.isum[i*nb+b] = int32(sum)
	}
}

// quantQ8Row is the AVX2 form of quantizeQ8Row's loop where the CPU
// runs it (act_amd64.go), with the same bits; nil elsewhere.
var quantQ8Row func(x *float32, nb int, qs *int8, d *float32, s *float32, isum *int32)

// finiteAsm is Finite's AVX2 form where the CPU runs it; nil elsewhere.
var finiteAsm func(x *float32, n int) bool

// Finite reports whether x holds no Inf or NaN (MatMul's activations
// must not).
func Finite(x []float32) bool { return finite(x, true) }

// finite is Finite with its assembly form (where the CPU has it) or, asm
// false, its Go loop.
func finite(x []float32, asm bool) bool {
	if asm && finiteAsm != nil && len(x) > 0 {
		return finiteAsm(&x[0], len(x))
	}
	for _, v := range x {
		if v-v != 0 {
			return false
		}
	}
	return true
}

// The extra activation layouts a kernel may read (Q8_K only).
const (
	needKP = 1 << iota // acts.kp
	needK6             // acts.k6, acts.k6c
	// needK6S is acts.k6 alone, for the AVX2 Q4_K and Q5_K kernels, which
	// take the quants in k6's order with acts.m16, not k6c.
	needK6S
)

// actsPool keeps activation buffers between MatMul calls (a decoding
// model makes hundreds per token).
var actsPool sync.Pool

// actBufs are an acts' backing arrays, kept for reuse.
type actBufs struct {
	qs, kp []int8
	k6     []int8
	k6c    []int16
	d, s   []float32
	isum   []int32
	msum   []int32
	m16    []int16
	bsum   []int16
	raw    []byte
}

func grow[T any](s *[]T, n int) []T {
	if cap(*s) < n {
		*s = make([]T, n)
	}
	return (*s)[:n]
}

// newActs quantizes the m rows of x (k elements each) to type t, with the
// extra layouts in need, with the assembly quantizers where asm is set and
// the CPU has them (the Go loops otherwise: the same bits). release
// returns it to the pool.
func newActs(t Type, x []float32, m, k int, par func(int, func(int, int)), need int, asm bool) *acts {
	bs := t.BlockSize()
	nb := k / bs
	a, _ := actsPool.Get().(*acts)
	if a == nil {
		a = new(acts)
	}
	b := &a.bufs
	*a = acts{t: t, k: k, m: m, nb: nb, asm: asm, bufs: a.bufs}
	a.qs, a.d = grow(&b.qs, m*k), grow(&b.d, m*nb)
	switch t {
	case Q8_1:
		a.s = grow(&b.s, m*nb)
		fallthrough
	case Q8_0:
		a.isum = grow(&b.isum, m*nb)
	case Q8_K:
		a.bsum = grow(&b.bsum, m*nb*16)
		a.msum = grow(&b.msum, m*nb*8)
		a.m16 = grow(&b.m16, m*nb*8)
		if need&needKP != 0 {
			a.kp = grow(&b.kp, m*k)
		}
		switch {
		case need&needK6 != 0:
			a.k6, a.k6c = grow(&b.k6, m*k), grow(&b.k6c, m*k/2)
		case need&needK6S != 0:
			a.k6 = grow(&b.k6, m*k)
		}
	}
	rb := nb * t.TypeSize()
	if par == nil || m < 4 {
		a.quantizeRows(x, 0, m, grow(&b.raw, rb))
		return a
	}
	par(m, func(lo, hi int) { a.quantizeRows(x, lo, hi, make([]byte, rb)) })
	return a
}

// release returns a to the pool; it must not be used afterwards.
func (a *acts) release() { actsPool.Put(a) }

// fillKP writes one Q8_K block's quants in acts.kp's order: per half, the
// sub-blocks 0, 2, 1, 3, each with byte 4c+i = quant c+8i.
func fillKP(src, dst []int8) {
	for h := range 2 {
		for o, sb := range [4]int{0, 2, 1, 3} {
			in := src[h*128+sb*32:][:32]
			out := dst[h*128+o*32:][:32]
			for c := range 8 {
				out[4*c], out[4*c+1], out[4*c+2], out[4*c+3] = in[c], in[c+8], in[c+16], in[c+24]
			}
		}
	}
}

// fillK6 writes one Q8_K block's quants in acts.k6's order into dst and
// the 32-fold pair sums into corr (acts.k6c; nil: not made).
func fillK6(src, dst []int8, corr []int16) {
	for sb := range 8 {
		in, out := src[32*sb:][:32], dst[32*sb:][:32]
		var co []int16
		if corr != nil {
			co = corr[16*sb:][:16]
		}
		for c := range 8 {
			o := 16*(c/4) + 4*(c%4)
			out[o], out[o+1], out[o+2], out[o+3] = in[c], in[c+8], in[c+16], in[c+24]
			if co == nil {
				continue
			}
			co[o/2] = 32 * (int16(in[c]) + int16(in[c+8]))
			co[o/2+1] = 32 * (int16(in[c+16]) + int16(in[c+24]))
		}
	}
}
