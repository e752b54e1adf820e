package cpu

import (
	"math"
	"unsafe"

	"github.com/gotpu/gotpu/backend/cpu/internal/vec"
	"github.com/gotpu/gotpu/dtype"
)

// The AVX512_BF16 GEMM (level avx512bf16): bf16 x bf16 products and f32
// products at precision medium and high with m > 1 and n > 1 run the
// VDPBF16PS micro-kernel (internal/gemm/bf16_amd64.s) inside the blocked driver
// (gemm_blis.go), on panels packed as bf16 pairs along k (packPairs).
//
// The instruction's arithmetic, established on this project's CPU (AMD
// EPYC, Zen 4) by TestDPBF16Contract against candidate models: for each
// f32 lane, with a pair (x0, x1) of one operand and (y0, y1) of the other,
//
//	acc = FTZ(RN(DAZ(acc) + DAZ(x1)*DAZ(y1)))
//	acc = FTZ(RN(acc + DAZ(x0)*DAZ(y0)))
//
// two fused multiply-adds (each product exact, one rounding to nearest
// even per add), the odd element first; DAZ reads a denormal input (bf16
// or the f32 accumulator) as zero of its sign, FTZ replaces a result whose
// magnitude, rounded to 24 bits with an unbounded exponent, is below
// 2^-126 by zero of its sign (tininess after rounding). MXCSR is not
// consulted. NaN results are quiet NaNs (an input NaN's payload,
// quieted, or the default NaN for inf-inf and 0*inf).
//
// The packing puts step 2j of a pair in the odd (high) half and step
// 2j+1 in the even half, so the instruction adds the products in k order:
// every element of C is the f32 FMA chain over k in order from zero, as
// at level avx2, except that denormal inputs count as zero and denormal
// partial sums are flushed to zero (fmaDAZ is the exact model). An odd k
// is padded with -0 in A and +0 in B: a -0 product added last leaves
// every sum, +0 and -0 included, unchanged. Results therefore do not
// depend on the blocking, the edge tiles or the number of threads.

// tileBF16 returns the VDPBF16PS micro-kernel when ks's level has
// it, else nil.
func tileBF16(ks *kset) *gemmTile[float32] {
	if ks.atLeast(LevelAVX512BF16) {
		return asmTileBF16
	}
	return nil
}

// deepBF16K is the reduction length from which pairTile blocks k deeper
// (asmTileBF16Deep).
const deepBF16K = 1024

// pairTile returns the AMX kernel (amx.go) at level amx, else the
// VDPBF16PS kernel for an m x n product over k when the level has it and the product is not a matrix-vector one (m == 1 or
// n == 1 keep their gemv kernels), else nil. Every blocking gives the
// same bits (see above).
func pairTile(ks *kset, m, n, k int) *gemmTile[float32] {
	if m <= 1 || n <= 1 {
		return nil
	}
	if asmTileAMX != nil && ks.atLeast(LevelAMX) {
		return asmTileAMX
	}
	t := tileBF16(ks)
	if t != nil && k >= deepBF16K && asmTileBF16Deep != nil {
		return asmTileBF16Deep
	}
	return t
}

// Pads of an odd k in the pair layout: A's -0 times B's +0 is a -0
// product, which leaves every sum unchanged.
const (
	pairPadA uint32 = 0x8000
	pairPadB uint32 = 0
)

// fmaDAZ is one step of the VDPBF16PS contract on f32 values (the tests'
// exact reference): FTZ(RN(DAZ(acc) + DAZ(x)*DAZ(y))), as described above.
func fmaDAZ(acc, x, y float32) float32 {
	acc, x, y = daz32(acc), daz32(x), daz32(y)
	p := float64(x) * float64(y) // exact: two f32 significands fit 53 bits
	c := float64(acc)
	s := p + c
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return float32(s)
	}
	if s == 0 {
		// An exact zero: p + c in f64 has the sign IEEE gives it.
		return float32(s)
	}
	// Round to odd at 53 bits (TwoSum gives the exact error), so that the
	// rounding to 24 bits below is the single rounding of the exact sum.
	bb := s - p
	e := (p - (s - bb)) + (c - bb)
	if e != 0 {
		if bits := math.Float64bits(s); bits&1 == 0 {
			if (e > 0) == (s > 0) {
				bits++
			} else {
				bits--
			}
			s = math.Float64frombits(bits)
		}
	}
	if math.Abs(s) < 0x1p-125 {
		// Round to 24 bits with an unbounded exponent (scaled into the
		// normal range, exactly), then flush a result below 2^-126.
		r := float64(float32(s*0x1p100)) * 0x1p-100
		if math.Abs(r) < 0x1p-126 {
			return float32(math.Copysign(0, s))
		}
		return float32(r)
	}
	return float32(s)
}

// daz32 reads a denormal as zero of its sign.
func daz32(x float32) float32 {
	if b := math.Float32bits(x); b&0x7f800000 == 0 {
		return math.Float32frombits(b & 0x80000000)
	}
	return x
}

// bf16Of returns the bfloat16 bits of f32 value v at precision pass part
// (roundHi or roundLo of the bf16 split, or 0 for a value already bf16,
// whose top half is taken).
func bf16Of(v float32, part int8) uint32 {
	b := math.Float32bits(v)
	switch part {
	case roundHi:
		b = vec.BF16Bits(b)
	case roundLo:
		b = vec.BF16Bits(math.Float32bits(v - math.Float32frombits(vec.BF16Bits(b))))
	}
	return b >> 16
}

// packPairs packs rows [r0, r0+rows) x steps [p0, p0+kc) of side s into
// dst in the pair layout of the VDPBF16PS kernel: panels of w rows, each
// ceil(kc/2) pair steps of w dwords; dword (j, r) holds step p0+2j in its
// high half and step p0+2j+1 (pad when past kc) in its low half, as bf16
// bits. Rows past the side's end are zero. T must be float32 (the packed
// words are stored in its bits).
func packPairs[S any, T gemmNum](lv *kset, dst []T, s *gemmSide[S, T], b, r0, rows, p0, kc, w int, pad uint32) {
	if kc <= 0 || rows <= 0 {
		return
	}
	f, ok := any(dst).([]float32)
	if !ok {
		panic("cpu: packPairs needs f32 panels")
	}
	d := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(f))), len(f))
	kp := (kc + 1) / 2
	np := ceilDiv(rows, w)
	if rem := rows % w; rem != 0 {
		// Zero the missing rows of the last panel.
		panel := d[(np-1)*w*kp : np*w*kp]
		for j := 0; j < kp; j++ {
			clear(panel[j*w+rem : j*w+w])
		}
	}
	base := s.batchOff(b)
	row := s.row[r0 : r0+rows]
	nk := len(s.k)
	pass := p0 / nk
	onePass := (p0+kc-1)/nk == pass
	var part int8
	if s.round != nil {
		part = s.round[pass]
	}
	if onePass && (s.plain || s.round != nil) {
		ks := s.k[p0%nk : p0%nk+kc]
		switch src := any(s.src).(type) {
		case []dtype.BFloat16:
			if s.plain && packPairsFast(lv, d, as16(src), base, row, ks, kp, w, pad) {
				return
			}
		case []float32:
			if s.round != nil && packPairsF32(lv, d, src, base, row, ks, kp, w, pad, part) {
				return
			}
		}
	}
	// The general case: one element at a time through the converters.
	get := func(ro, gp int) uint32 {
		v := s.conv[gp/nk](s.src[base+ro+s.k[gp%nk]])
		return bf16Of(float32(v), roundHi)
	}
	if bs, ok := any(s.src).([]dtype.BFloat16); ok && s.plain {
		get = func(ro, gp int) uint32 { return uint32(bs[base+ro+s.k[gp%nk]]) }
	} else if fs, ok := any(s.src).([]float32); ok && s.round != nil {
		get = func(ro, gp int) uint32 { return bf16Of(fs[base+ro+s.k[gp%nk]], s.round[gp/nk]) }
	}
	for r, ro := range row {
		panel := d[(r/w)*w*kp:]
		rr := r % w
		for j := 0; j < kp; j++ {
			hi := get(ro, p0+2*j)
			lo := pad
			if 2*j+1 < kc {
				lo = get(ro, p0+2*j+1)
			}
			panel[j*w+rr] = hi<<16 | lo
		}
	}
}

// pairT16Asm is the vector transpose of up to 16 rows into the pair
// layout (internal/gemm/bf16_amd64.s), nil where there is none: dst[j*ldd + r] =
// src[r*lds+2j]<<16 | src[r*lds+2j+1] for r < rows (1 to 16), j < n (a
// multiple of 16); other lanes of dst are untouched.
var pairT16Asm func(dst *uint32, ldd int, src *uint16, lds int, n int, rows int)

// pairInterleaveAsm interleaves two k steps of a row-major bf16 B into the
// pair layout (bf16_narrow_amd64.s), nil where there is none: for panels
// of w columns (a multiple of 16), dst[p*stride+c] = a[p*w+c]<<16 |
// b[p*w+c] for p < panels, c < w. One call covers a k-pair step of every
// whole panel (the per-call cost dominated one call per panel).
var pairInterleaveAsm func(dst *uint32, a, b *uint16, w, panels, stride int)

// as16 views bfloat16 values as their bits.
func as16(s []dtype.BFloat16) []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}

// packPairsFast is packPairs for bf16 values (bits in src) in the two
// common layouts: rows contiguous along k (a row-major A, or the W of
// x·Wᵀ as B) and rows adjacent with a uniform stride between k steps (a
// row-major B). It reports whether it handled the layout.
func packPairsFast(lv *kset, d []uint32, src []uint16, base int, row, ks []int, kp, w int, pad uint32) bool {
	kc := len(ks)
	full := kc / 2
	if adjacent(ks) || kc == 1 {
		// Groups of up to 16 rows of one panel, evenly spaced, go to the
		// vector transpose by blocks of 16 pair steps; the rest (the last
		// steps, uneven rows) to the loop, sixteen pair steps (a cache
		// line of each row) at a time so that the panel's lines written
		// stay in L1.
		vn := 0
		if pairT16Asm != nil && lv.atLeast(LevelAVX512) && full >= 16 {
			vn = full &^ 15
		}
		for g0 := 0; g0 < len(row); {
			g1 := min(g0+16, (g0/w+1)*w, len(row))
			lo := 0
			if vn > 0 {
				if lr, ok := uniformStride(row[g0:g1]); ok && (lr > 0 || g1-g0 == 1) {
					pairT16Asm(&d[(g0/w)*w*kp+g0%w], w, &src[base+row[g0]+ks[0]], lr, vn, g1-g0)
					lo = vn
				}
			}
			for s0 := lo; s0 < full; s0 += 16 {
				s1 := min(s0+16, full)
				for r := g0; r < g1; r++ {
					in := src[base+row[r]+ks[0]+2*s0 : base+row[r]+ks[0]+2*s1]
					out := d[(r/w)*w*kp+s0*w+r%w:]
					for j := 0; j < s1-s0; j++ {
						out[j*w] = uint32(in[2*j])<<16 | uint32(in[2*j+1])
					}
				}
			}
			g0 = g1
		}
		if kc&1 != 0 {
			for r, ro := range row {
				d[(r/w)*w*kp+full*w+r%w] = uint32(src[base+ro+ks[0]+kc-1])<<16 | pad
			}
		}
		return true
	}
	lds, ok := uniformStride(ks)
	if !ok || !adjacent(row) {
		return false
	}
	nr := len(row)
	o := base + row[0] + ks[0]
	// Whole panels of a k-pair step go to the vector interleave in one
	// call; the partial last panel and odd last step to the loop.
	vq := 0
	if pairInterleaveAsm != nil && lv.atLeast(LevelAVX512) && w%16 == 0 {
		vq = nr / w
	}
	for j := 0; j < kp; j++ {
		in0 := src[o+2*j*lds : o+2*j*lds+nr]
		q0 := 0
		if vq > 0 && 2*j+1 < kc {
			in1 := src[o+(2*j+1)*lds : o+(2*j+1)*lds+nr]
			_ = d[(vq-1)*w*kp+j*w+w-1]
			pairInterleaveAsm(&d[j*w], &in0[0], &in1[0], w, vq, w*kp)
			q0 = vq
		}
		for q := q0; q*w < nr; q++ {
			out := d[q*w*kp+j*w : q*w*kp+j*w+min(w, nr-q*w)]
			a := in0[q*w : q*w+len(out)]
			if 2*j+1 < kc {
				bb := src[o+(2*j+1)*lds+q*w : o+(2*j+1)*lds+q*w+len(out)]
				c0 := 0
				if v := len(out) &^ 15; v > 0 && pairInterleaveAsm != nil && lv.atLeast(LevelAVX512) {
					pairInterleaveAsm(&out[0], &a[0], &bb[0], v, 1, 0)
					c0 = v
				}
				for c := c0; c < len(out); c++ {
					out[c] = uint32(a[c])<<16 | uint32(bb[c])
				}
			} else {
				for c := range out {
					out[c] = uint32(a[c])<<16 | pad
				}
			}
		}
	}
	return true
}

// packPairsF32 is packPairsFast for f32 values rounded to bf16 (part
// roundHi or roundLo of the split) while packing: the block is converted
// to a bf16 matrix in scratch with the vector rounding
// (vec.Kernels.RoundHi/Lo and PackRounded), laid out as the source (rows
// contiguous along k, or k steps contiguous across rows), and packed from
// there by packPairsFast. It reports whether it handled the layout.
func packPairsF32(lv *kset, d []uint32, src []float32, base int, row, ks []int, kp, w int, pad uint32, part int8) bool {
	kc, nr := len(ks), len(row)
	kAdj := adjacent(ks) || kc == 1
	lds, uni := uniformStride(ks)
	if !kAdj && (!uni || !adjacent(row)) {
		return false
	}
	run := max(nr, kc)
	buf := getScratch(run*4 + nr*kc*2)
	defer putScratch(buf)
	tmp := as[float32]((*buf)[: run*4 : run*4])
	b16 := as[uint16]((*buf)[run*4 : run*4+nr*kc*2])
	if kAdj {
		for r, ro := range row {
			f32ToBF16Part(lv, b16[r*kc:(r+1)*kc], src[base+ro+ks[0]:base+ro+ks[0]+kc], tmp[:kc], part)
		}
		return packPairsFast(lv, d, b16, 0, seqShared(nr, kc), seqShared(kc, 1), kp, w, pad)
	}
	o := base + row[0] + ks[0]
	for p := 0; p < kc; p++ {
		f32ToBF16Part(lv, b16[p*nr:(p+1)*nr], src[o+p*lds:o+p*lds+nr], tmp[:nr], part)
	}
	return packPairsFast(lv, d, b16, 0, seqShared(nr, 1), seqShared(kc, nr), kp, w, pad)
}

// f32ToBF16Part sets dst[i] to the bf16 bits of part (roundHi or roundLo)
// of the bf16 split of src[i], as bf16Of, using tmp (as long as src) as
// scratch.
func f32ToBF16Part(ks *kset, dst []uint16, src, tmp []float32, part int8) {
	copy(tmp, src)
	if part == roundLo {
		ks.vec.RoundLo(tmp)
	} else {
		ks.vec.RoundHi(tmp)
	}
	ks.vec.PackRounded(dst, tmp)
}
