package cpu

import (
	"unsafe"

	"github.com/gotpu/gotpu/dtype"
)

// The AMX GEMM (level amx): at that level, the products the VDPBF16PS
// GEMM runs (bf16 x bf16, and f32 at precision medium and high, with
// m > 1 and n > 1) run on the tile unit instead: TDPBF16PS multiplies a
// 16-row tile of A by a tile of B, 16 pair steps (32 k steps) deep, into a
// 16 x 16 f32 tile of C. The micro-kernel (gemm.AMX32x32, internal/gemm/amx_amd64.s)
// keeps a 32 x 32 block of C in four tiles.
//
// The instruction's arithmetic, established on this project's CPU (Intel
// Xeon, Sapphire Rapids class) by TestAMXContract: for each element of C,
// one instruction over 16 pairs (x0, x1) of A's row and (y0, y1) of B's
// column computes
//
//	e = fmaDAZ chain of x0*y0 over the 16 pairs in order, from +0
//	o = fmaDAZ chain of x1*y1 over the 16 pairs in order, from +0
//	acc = FTZ(RN(DAZ(acc) + FTZ(RN(e + o))))
//
// two independent f32 chains, one per half of the pairs, each product
// exact and each add rounded to nearest even, then their sum, rounded,
// added to the accumulator and rounded again (fmaDAZ's denormal rules
// throughout; the SDM's pseudocode has the same shape). It is neither the
// k-ordered chain of the lower levels nor a single rounding.
//
// So at level amx an element of a bf16 product is: k split into
// consecutive chunks of 32 steps from step 0 (the last chunk padded with
// zeros), and for each chunk in order, acc = acc + (e + o) as above, with
// e over the chunk's even steps and o over its odd steps (which half of
// a packed pair holds which does not matter: the sum is symmetric). The
// k blocks of the driver are multiples of 32 steps and C is f32 between
// them, so the result does not depend on the blocking, the edge tiles or
// the number of threads. amxRef (amx_test.go) is the exact model.
//
// A is packed in tile rows (packPairRows): the kernel loads 16 rows of
// 64 bytes, each row's 16 pairs contiguous. B keeps the pair layout of
// packPairs with 32-column panels, which is already a tile's layout (16
// pair rows of 16 columns, 128 bytes apart); both are padded to whole
// chunks of 16 pairs.

// asmTileAMX is the AMX kernel with its blocking, nil where level amx is
// not available (set by amx_amd64.go).
var asmTileAMX *gemmTile[float32]

// amxChunk is the number of pair steps one TDPBF16PS consumes.
const amxChunk = 16

// pairRowsAsm copies chunks of 32 bf16 values into the tile-row layout
// (internal/gemm/amx_amd64.s), nil where there is none: the 16 dwords at dst +
// i*dstStride get the pairs of src[32i:32i+32], first of each pair high.
var pairRowsAsm func(dst *uint32, dstStride int, src *uint16, chunks int)

// packPairRows packs rows [r0, r0+rows) x steps [p0, p0+kc) of side s
// into dst in the AMX tile-row layout: panels of w rows (a multiple of
// 16), each ps/16 chunks of 16 pair steps (ps >= ceil(kc/2), a multiple of
// 16); chunk c of a panel holds its w rows one after another, 16 dwords
// each, so pair j of panel row r is at c*w*16 + r*16 + j%16, c = j/16.
// A dword holds step p0+2j in its high half and step p0+2j+1 (pad when
// past kc) in its low half, as bf16 bits, as in packPairs. Pairs from
// ceil(kc/2) to ps and rows past the side's end are zero.
func packPairRows[S any, T gemmNum](lv *kset, dst []T, s *gemmSide[S, T], b, r0, rows, p0, kc, w, ps int, pad uint32) {
	if rows <= 0 {
		return
	}
	f, ok := any(dst).([]float32)
	if !ok {
		panic("cpu: packPairRows needs f32 panels")
	}
	d := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(f))), len(f))
	kp := (kc + 1) / 2
	np := ceilDiv(rows, w)
	// at returns the 16 dwords of chunk c of row r.
	at := func(r, c int) []uint32 {
		o := (r/w)*w*ps + c*w*amxChunk + (r%w)*amxChunk
		return d[o : o+amxChunk : o+amxChunk]
	}
	// Zero the missing rows of the last panel and the pad pairs.
	for r := rows; r < np*w; r++ {
		for c := 0; c < ps/amxChunk; c++ {
			clear(at(r, c))
		}
	}
	if kp < ps {
		for r := 0; r < rows; r++ {
			clear(at(r, kp/amxChunk)[kp%amxChunk:])
			for c := kp/amxChunk + 1; c < ps/amxChunk; c++ {
				clear(at(r, c))
			}
		}
	}
	if kc <= 0 {
		return
	}
	base := s.batchOff(b)
	row := s.row[r0 : r0+rows]
	nk := len(s.k)
	pass := p0 / nk
	onePass := (p0+kc-1)/nk == pass
	ks := s.k[p0%nk : p0%nk+min(kc, nk-p0%nk)]
	if onePass && (adjacent(ks) || kc == 1) {
		switch src := any(s.src).(type) {
		case []dtype.BFloat16:
			if s.plain {
				bs := as16(src)
				for r, ro := range row {
					pairRow(at, r, bs[base+ro+ks[0]:base+ro+ks[0]+kc], w, pad)
				}
				return
			}
		case []float32:
			if s.round != nil {
				buf := getScratch(kc * 6)
				defer putScratch(buf)
				tmp := as[float32]((*buf)[: kc*4 : kc*4])
				b16 := as[uint16]((*buf)[kc*4 : kc*6])
				for r, ro := range row {
					f32ToBF16Part(lv, b16, src[base+ro+ks[0]:base+ro+ks[0]+kc], tmp, s.round[pass])
					pairRow(at, r, b16, w, pad)
				}
				return
			}
		}
	}
	// Any other layout: the pair layout in 16-row panels (packPairs, with
	// its vector transposes), then each panel's pairs regrouped by row.
	buf := getScratch(roundUp(rows, amxChunk)*kp*4 + gemmAlign)
	defer putScratch(buf)
	tmp := as[float32](*buf)[: roundUp(rows, amxChunk)*kp : roundUp(rows, amxChunk)*kp]
	packPairs(lv, any(tmp).([]T), s, b, r0, rows, p0, kc, amxChunk, pad)
	t := as[uint32](bytesOfF32(tmp))
	for r := 0; r < rows; r++ {
		pn := t[(r/amxChunk)*amxChunk*kp:]
		rr := r % amxChunk
		for c := 0; c*amxChunk < kp; c++ {
			out := at(r, c)
			for j := c * amxChunk; j < min(kp, (c+1)*amxChunk); j++ {
				out[j%amxChunk] = pn[j*amxChunk+rr]
			}
		}
	}
}

// pairRow packs one row of bf16 values (kc of them, contiguous) into row
// r of the tile-row layout whose chunks at returns.
func pairRow(at func(r, c int) []uint32, r int, src []uint16, w int, pad uint32) {
	kc := len(src)
	full := kc / 2
	c0 := 0
	if pairRowsAsm != nil && full >= amxChunk {
		c0 = full / amxChunk
		pairRowsAsm(&at(r, 0)[0], w*amxChunk, &src[0], c0)
	}
	for j := c0 * amxChunk; j < full; j++ {
		at(r, j/amxChunk)[j%amxChunk] = uint32(src[2*j])<<16 | uint32(src[2*j+1])
	}
	if kc&1 != 0 {
		at(r, full/amxChunk)[full%amxChunk] = uint32(src[kc-1])<<16 | pad
	}
}

// bytesOfF32 views float32s as bytes.
func bytesOfF32(s []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*4)
}

// packPairsPadded is packPairs into panels of ps pair steps (ps >=
// ceil(kc/2), the pairs past ceil(kc/2) zero): the B side of the AMX
// kernel, whose k blocks must be whole chunks of 16 pairs.
func packPairsPadded[S any, T gemmNum](ks *kset, dst []T, s *gemmSide[S, T], b, r0, rows, p0, kc, w, ps int, pad uint32) {
	kp := (kc + 1) / 2
	if kp == ps || rows <= 0 {
		packPairs(ks, dst, s, b, r0, rows, p0, kc, w, pad)
		return
	}
	n := ceilDiv(rows, w)
	buf := getScratch(n*w*kp*4 + gemmAlign)
	defer putScratch(buf)
	tmp := as[float32](*buf)[: n*w*kp : n*w*kp]
	packPairs(ks, any(tmp).([]T), s, b, r0, rows, p0, kc, w, pad)
	padPairPanels(any(dst).([]float32), tmp, n, w, kp, ps)
}

// padPairPanels spreads n panels of w columns packed by packPairs with kp
// pair steps each (in src) to panels of ps pair steps in dst, zeroing the
// pairs from kp to ps: the B side of the AMX kernel for a k block that is
// not a whole number of chunks.
func padPairPanels(dst, src []float32, n, w, kp, ps int) {
	for p := n - 1; p >= 0; p-- {
		copy(dst[p*w*ps:p*w*ps+w*kp], src[p*w*kp:(p+1)*w*kp])
		clear(dst[p*w*ps+w*kp : (p+1)*w*ps])
	}
}
