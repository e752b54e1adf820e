package cpu

import (
	"sync/atomic"
	"unsafe"

	"github.com/gotpu/gotpu/backend/cpu/internal/pool"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// The fast bf16 and f16 convolutions. PyTorch computes a bf16 convolution
// with f32 products and sums and rounds each output to bf16 once; so do
// these paths:
//
//   - At level avx512bf16, a bf16 convolution (forward, or the stride-1
//     transposed form of an input gradient) runs convF32's implicit-im2col
//     GEMM with the VDPBF16PS micro-kernel (bf16_gemm.go): the input is
//     copied zero-padded as bf16, B panels of 32 columns are packed as
//     pairs of k steps straight from it (convPair32 for a contiguous run of
//     columns, convPairT16 for columns whose k steps run contiguously, as
//     in a weight gradient's convolution), the weights into 8-, 12- or
//     14-row A panels (whichever wastes fewest rows), and each block of C
//     is rounded to bf16 while it is scattered into the output, the bias
//     added first. Every output is the f32 FMA chain over k in (ci, kh, kw)
//     order, as on the f32 path, except for the instruction's DAZ/FTZ on
//     denormals, then the bias, then one rounding.
//   - Elsewhere (a lower level, f16, a strided transposed convolution) the
//     operands are widened to f32 (exact), the fast f32 path runs at
//     precision highest (the same FMA chains) and the output is rounded.
//
// Only 1-d and 2-d convolutions take these paths (convFastOK); 3-d ones
// keep the generic im2col path, which gives the same values.

// convPairKerns are the VDPBF16PS micro-kernels by tile height (8, 12 and
// 14 rows of 32 columns; conv_bf16_amd64.go), empty where there are none.
var convPairKerns = map[int]func(kc int, a, b, c *float32, ldc int, pf *float32, load int){}

// convDirectBF16Kerns are the same tiles reading B straight from the padded
// input (convBF16Pairs' direct B; conv_bf16_amd64.go), by tile height.
var convDirectBF16Kerns = map[int]func(kc int, a *float32, src *uint16, koff *int, c *float32, ldc int, load int){}

// convPairsOK reports whether the VDPBF16PS path takes p (bf16 operands is
// the caller's check).
func convPairsOK(ks *kset, p op.ConvParams) bool {
	return tileBF16(ks) != nil && len(convPairKerns) == 3 && len(p.In) >= 1 && len(p.In) <= 2 && !(p.Transposed && convStrided(p))
}

// conv16FastOK reports whether runConv16 takes p: the f32 fast path would,
// or (bf16) the VDPBF16PS path.
func conv16FastOK(ks *kset, dt dtype.DType, p op.ConvParams) bool {
	return convFastOK(ks, p) || dt == dtype.BF16 && convPairsOK(ks, p)
}

// runConv16 is the convolution kernel for bf16 and f16 operands
// (conv16FastOK).
func runConv16(c *Call, p op.ConvParams) {
	ks := c.kernels()
	dt := c.In[0].DType
	nx, nw, no := op.Numel(c.In[0].Shape), op.Numel(c.In[1].Shape), op.Numel(c.Out[0].Shape)
	var bias []float32
	if c.In[2].Buf != nil {
		bias = make([]float32, p.Cout)
		widen16(ks, dt, bias, c.InB[2][c.In[2].Offset*2:])
	}
	if dt == dtype.BF16 && convPairsOK(ks, p) {
		x := as[uint16](c.InB[0][c.In[0].Offset*2:])[:nx]
		w := as[uint16](c.InB[1][c.In[1].Offset*2:])[:nw]
		out := as[dtype.BFloat16](c.OutB[0][c.Out[0].Offset*2:])[:no]
		convBF16Pairs(ks, x, w, bias, out, geomOf(p), p.Transposed)
		return
	}
	buf := getScratch(4 * (nx + nw + no))
	defer putScratch(buf)
	all := as[float32](*buf)
	x32, w32, o32 := all[:nx:nx], all[nx:nx+nw:nx+nw], all[nx+nw:nx+nw+no:nx+nw+no]
	widen16(ks, dt, x32, c.InB[0][c.In[0].Offset*2:])
	widen16(ks, dt, w32, c.InB[1][c.In[1].Offset*2:])
	convFastF32(ks, x32, w32, bias, o32, p, op.PrecisionHighest)
	ob := c.OutB[0][c.Out[0].Offset*2:]
	if dt == dtype.BF16 {
		parallelFor(ceilDiv(no, bf16Block), no, func(lo, hi int) {
			out := as[dtype.BFloat16](ob)
			for b := lo; b < hi; b++ {
				i0, i1 := b*bf16Block, min(no, (b+1)*bf16Block)
				ks.vec.Narrow(out[i0:i1], o32[i0:i1])
			}
		})
		return
	}
	out := as[dtype.Float16](ob)[:no]
	parallelFor(no, no, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			out[i] = dtype.F16FromF32(o32[i])
		}
	})
}

// widen16 sets dst[i] to the f32 value of the i-th bf16 or f16 element of
// src (exact).
func widen16(ks *kset, dt dtype.DType, dst []float32, src []byte) {
	n := len(dst)
	if dt == dtype.BF16 {
		s := as[dtype.BFloat16](src)[:n]
		parallelFor(ceilDiv(n, bf16Block), n, func(lo, hi int) {
			for b := lo; b < hi; b++ {
				i0, i1 := b*bf16Block, min(n, (b+1)*bf16Block)
				ks.vec.Widen(dst[i0:i1], s[i0:i1])
			}
		})
		return
	}
	s := as[dtype.Float16](src)[:n]
	parallelFor(n, n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dst[i] = s[i].F32()
		}
	})
}

// convPairMR returns the tile height (8, 12 or 14) that pads rows rows
// least, 12 on a tie.
func convPairMR(rows int) int {
	mr := 12
	for _, m := range []int{8, 14} {
		if roundUp(rows, m) < roundUp(rows, mr) {
			mr = m
		}
	}
	return mr
}

// convBF16Pairs is convF32 (see there for the geometry, the wide grid, the
// stride phases and the work units) with bf16 operands on the VDPBF16PS
// kernel: out = bf16(conv(x, w) + bias) for the forward-form geometry g
// (bias may be nil; flip: w is a stride-1 transposed convolution's
// weight). x, w and out start at their first element.
func convBF16Pairs(ks *kset, x, w []uint16, bias []float32, out []dtype.BFloat16, g convGeom, flip bool) {
	L := g.oh * g.ow
	if g.n == 0 || g.cout == 0 || L == 0 {
		return
	}
	if g.kdim == 0 {
		for i := 0; i < g.n*g.cout; i++ {
			var b float32
			if bias != nil {
				b = bias[i%g.cout]
			}
			bv := dtype.BF16FromF32(b)
			o := out[i*L : (i+1)*L]
			for j := range o {
				o[j] = bv
			}
		}
		return
	}
	const nr = 32
	mr := convPairMR(g.coutG)
	kern := convPairKerns[mr]
	// At level amx the AMX kernel runs instead (amx.go): 32-row A panels
	// in tile rows, k blocks of whole 32-step chunks, every panel padded to
	// whole chunks of 16 pairs (chunk pairs below).
	amx := asmTileAMX != nil && ks.atLeast(LevelAMX)
	kcMax, kAlign := asmTileBF16.kc, 2
	if amx {
		mr, kern, kcMax, kAlign = asmTileAMX.mr, asmTileAMX.kern, asmTileAMX.kc, 2*amxChunk
	}
	// chunk rounds a panel's pair steps up as the kernel reads them.
	chunk := func(kpc int) int {
		if amx {
			return roundUp(kpc, amxChunk)
		}
		return kpc
	}
	effH, effW := g.dh*(g.kh-1)+1, g.dw*(g.kw-1)+1
	hp, wp := (g.oh-1)*g.sh+effH, (g.ow-1)*g.sw+effW
	src := x
	rs, ps := g.w, g.lin
	pad := g.padT != 0 || g.padL != 0 || hp > g.h || wp > g.w
	if pad {
		ps, rs = hp*wp, wp
	}
	csh, csw := g.sh, g.sw
	hph, wph := hp, wp
	phased := g.sh > 1 || g.sw > 1
	if phased {
		pad = true
		hph, wph = ceilDiv(hp, g.sh), ceilDiv(wp, g.sw)
		rs, ps = wph, g.sh*g.sw*hph*wph
		csh, csw = 1, 1
	}
	// Direct B, as convF32's: where the wide grid wastes little, the tile
	// reads each pair step's two input rows itself (convDirectBF16*) and
	// nothing is packed; each image's columns are rounded up to a whole
	// panel (the extra ones read past the image and are dropped; a
	// panel's worth of zeros follows the last), the input always copied.
	// Every k block must be whole pairs: an even k.
	dk := convDirectBF16Kerns[mr]
	direct := dk != nil && !amx && csh == 1 && csw == 1 && g.kdim%2 == 0
	if direct {
		rw := rs
		if !pad {
			rw = wp
		}
		direct = convDirectWasteOK(g, rw, nr)
	}
	if direct && !pad {
		pad = true
		ps, rs = hp*wp, wp
	}
	wide := csw == 1 && ((rs-g.ow)*8 <= rs || direct)
	lc := L
	if wide {
		lc = (g.oh-1)*rs + g.ow
	}
	slack := 0
	if direct {
		lc, slack = roundUp(lc, nr), nr
	}
	ncols := g.n * lc
	kp := g.kh * g.kw
	kall := g.kdim
	// K blocks: even lengths (whole pairs) but the last, balanced.
	nkb := ceilDiv(kall, kcMax)
	kcb := roundUp(ceilDiv(kall, nkb), kAlign)
	nkb = ceilDiv(kall, kcb)
	kpb := kcb / 2
	mpad := roundUp(g.coutG, mr)
	asz := g.groups * nkb * mpad * kpb // dwords
	cost := g.n * g.cout * L * g.kdim
	nw := pool.Workers(cost)
	npan := ceilDiv(ncols, nr)
	ppu := min(8, max(1, ceilDiv(npan*g.groups, 4*nw)))
	ncb := ppu * nr
	ldc := ncb + 16
	bsz, csz := kpb*ncb, mpad*ldc
	ublk := ceilDiv(ncols, ncb)
	units := g.groups * ublk
	nw = min(nw, units)
	nint := 2*ncols + g.kdim
	psz := 0
	if pad {
		psz = g.n * g.cin * ps
	}
	per := bsz + csz + 32
	total := 2*nint + ceilDiv(psz+slack, 2) + asz + 16 + nw*per + 64
	buf := getScratch(total * 4)
	defer putScratch(buf)
	all := as[float32](*buf)
	itab := as[int](unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(all))), nint*8))
	colOff := itab[:ncols:ncols]
	outIdx := itab[ncols : 2*ncols : 2*ncols]
	kOff := itab[2*ncols : nint : nint]
	off := 2 * nint
	if pad {
		src = as[uint16](unsafe.Slice((*byte)(unsafe.Pointer(&all[off])), 2*(psz+slack)))[: psz+slack : psz+slack]
		clear(src[psz:])
		off += ceilDiv(psz+slack, 2)
		if phased {
			padPhases(src, x, g, hph, wph)
		} else {
			padPlanes(src, x, g, hp, wp)
		}
	}
	apack := asU32(alignF32(all[off:], asz))
	off += asz + 16
	tall := all[off:]
	img := g.cin * ps
	convColumns(colOff, outIdx, g, lc, wide, rs, img, csh, csw)
	kmin, kmax := convKOffsets(kOff, g, kp, ps, rs, hph, wph)
	switch {
	case amx && !flip:
		packConvTileRowsA(ks, apack, w, g, nkb, kcb, mpad, mr)
	case amx:
		packConvPairsA(ks, apack, w, g, nkb, kcb, mpad, mr, flip)
		convTileRowsA(apack, g, nkb, kcb, mpad, mr)
	default:
		packConvPairsA(ks, apack, w, g, nkb, kcb, mpad, mr, flip)
	}
	var next atomic.Int64
	pool.RunShare(nw, func(tid, _ int) {
		off := tid * per
		bb := asU32(alignF32(tall[off:], bsz))
		cb := alignF32(tall[off+bsz+16:], csz)
		var segs [][3]int
		tmp := make([]dtype.BFloat16, ncb)
		for {
			u := int(next.Add(1) - 1)
			if u >= units {
				return
			}
			gi, j0 := u/ublk, (u%ublk)*ncb
			nc := min(ncb, ncols-j0)
			pn := ceilDiv(nc, nr)
			base := gi * g.cinG * ps
			for kb := 0; kb < nkb; kb++ {
				k0 := kb * kcb
				kc := min(kcb, kall-k0)
				kpc := (kc + 1) / 2
				kpp := chunk(kpc)
				for q := 0; q < pn && !direct; q++ {
					packConvPairsB(bb[q*nr*kpp:q*nr*kpp+nr*kpc], src, base, kOff[k0:k0+kc], colOff[j0+q*nr:j0+min(nc, q*nr+nr)], kmin, kmax)
					clear(bb[q*nr*kpp+nr*kpc : (q+1)*nr*kpp])
				}
				ab := apack[(gi*nkb+kb)*mpad*kpb:]
				load := 0
				if kb > 0 {
					load = 1
				}
				for q := 0; q < pn; q++ {
					if direct {
						o := base + colOff[j0+q*nr]
						_ = src[o+kmin : o+kmax+nr]
						for ir := 0; ir < mpad; ir += mr {
							dk(kc, (*float32)(unsafe.Pointer(&ab[ir*kpp])), &src[o], &kOff[k0], &cb[ir*ldc+q*nr], ldc, load)
						}
						continue
					}
					bp := (*float32)(unsafe.Pointer(&bb[q*nr*kpp]))
					for ir := 0; ir < mpad; ir += mr {
						c := &cb[ir*ldc+q*nr]
						pf := c
						if ir+mr < mpad {
							pf = &cb[(ir+mr)*ldc+q*nr]
						}
						kern(kc, (*float32)(unsafe.Pointer(&ab[ir*kpp])), bp, c, ldc, pf, load)
					}
				}
			}
			oidx := outIdx[j0 : j0+nc]
			segs = convOutRuns(segs[:0], oidx)
			// Round each row of the block at once (the vector narrowing
			// takes 16 at a time; output rows are often not a multiple),
			// then copy its runs.
			n16 := roundUp(nc, 16)
			for co := 0; co < g.coutG; co++ {
				oc := gi*g.coutG + co
				row := cb[co*ldc : co*ldc+n16]
				if bias != nil {
					bv := bias[oc]
					for i := range row {
						row[i] += bv
					}
				}
				ks.vec.Narrow(tmp[:n16], row)
				ch := oc * L
				for _, sg := range segs {
					copy(out[sg[2]+ch:sg[2]+ch+sg[1]], tmp[sg[0]:sg[0]+sg[1]])
				}
			}
		}
	})
}

// asU32 views f32 scratch as the dwords of packed bf16 pairs.
func asU32(s []float32) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}

// packConvPairsA packs the bf16 weights, per group and k block (kcb steps,
// the last block shorter), into mr-row panels in the pair layout (rows
// past coutG zero, an odd last step padded with pairPadA). flip reads a
// stride-1 transposed convolution's weight as its forward form (see
// packConvA).
func packConvPairsA(ks *kset, dst []uint32, w []uint16, g convGeom, nkb, kcb, mpad, mr int, flip bool) {
	kp := g.kh * g.kw
	parallelFor(g.groups*nkb, g.groups*mpad*g.kdim, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			gi, kb := b/nkb, b%nkb
			k0 := kb * kcb
			kc := min(kcb, g.kdim-k0)
			kpc := (kc + 1) / 2
			blk := dst[(gi*nkb+kb)*mpad*(kcb/2):][:mpad*kpc]
			if g.coutG%mr != 0 {
				clear(blk[(mpad-mr)*kpc:])
			}
			if !flip {
				packPairsFast(ks, blk, w, (gi*g.coutG)*g.kdim+k0, seqShared(g.coutG, g.kdim), seqShared(kc, 1), kpc, mr, pairPadA)
				continue
			}
			get := func(co, k int) uint32 {
				ci, t := k/kp, k%kp
				return uint32(w[((gi*g.cinG+ci)*g.coutG+co)*kp+kp-1-t])
			}
			for co := 0; co < g.coutG; co++ {
				panel := blk[(co/mr)*mr*kpc:]
				r := co % mr
				for j := 0; j < kpc; j++ {
					lo := pairPadA
					if 2*j+1 < kc {
						lo = get(co, k0+2*j+1)
					}
					panel[j*mr+r] = get(co, k0+2*j)<<16 | lo
				}
			}
		}
	})
}

// packConvTileRowsA packs the bf16 weights of a forward-form convolution
// (rows contiguous along k), per group and k block as packConvPairsA does,
// straight into the AMX kernel's tile rows (packPairRows: a rotating copy
// of each row).
func packConvTileRowsA(lv *kset, dst []uint32, w []uint16, g convGeom, nkb, kcb, mpad, mr int) {
	kpb := kcb / 2
	wb := unsafe.Slice((*dtype.BFloat16)(unsafe.Pointer(unsafe.SliceData(w))), len(w))
	toF := []func(dtype.BFloat16) float32{dtype.BFloat16.F32}
	rows, ks := seqShared(g.coutG, g.kdim), seqShared(g.kdim, 1)
	parallelFor(g.groups*nkb, g.groups*mpad*g.kdim, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			gi, kb := b/nkb, b%nkb
			k0 := kb * kcb
			kc := min(kcb, g.kdim-k0)
			kpp := roundUp((kc+1)/2, amxChunk)
			side := gemmSide[dtype.BFloat16, float32]{src: wb, base: gi * g.coutG * g.kdim, row: rows, k: ks, conv: toF, plain: true}
			blk := dst[b*mpad*kpb:][:mpad*kpp]
			packPairRows(lv, unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(blk))), len(blk)), &side, 0, 0, g.coutG, k0, kc, mr, kpp, pairPadA)
		}
	})
}

// convTileRowsA rearranges the weight panels packConvPairsA wrote (the
// pair layout, kpc pairs per panel) into the AMX kernel's tile rows, in
// place block by block: panel p's pair j of row r moves to p*mr*kpp +
// (j/16)*mr*16 + r*16 + j%16, with kpp = kpc rounded up to 16 and the
// pairs from kpc to kpp zero (packPairRows's layout).
func convTileRowsA(apack []uint32, g convGeom, nkb, kcb, mpad, mr int) {
	kpb := kcb / 2
	tmp := make([]uint32, mpad*kpb)
	for b := 0; b < g.groups*nkb; b++ {
		kc := min(kcb, g.kdim-(b%nkb)*kcb)
		kpc := (kc + 1) / 2
		kpp := roundUp(kpc, amxChunk)
		blk := apack[b*mpad*kpb:][:mpad*kpp]
		copy(tmp, blk[:mpad*kpc])
		clear(blk)
		for p := 0; p < mpad/mr; p++ {
			src := tmp[p*mr*kpc:]
			dst := blk[p*mr*kpp:]
			for j := 0; j < kpc; j++ {
				d := dst[(j/amxChunk)*mr*amxChunk+j%amxChunk:]
				for r := 0; r < mr; r++ {
					d[r*amxChunk] = src[j*mr+r]
				}
			}
		}
	}
}

// packConvPairsB packs one B panel of up to 32 columns in the pair layout:
// pair step j, column q holds src[base+cols[q]+kOff[2j]] in its high half
// and the element of step 2j+1 (pairPadB past an odd end) in its low half;
// columns past len(cols) hold copies of column 0 (their outputs are
// dropped). kmin and kmax bound kOff.
func packConvPairsB(dst []uint32, src []uint16, base int, kOff, cols []int, kmin, kmax int) {
	const nr = 32
	kc := len(kOff)
	full := kc / 2
	contig := len(cols) == nr
	for q := 1; q < len(cols) && contig; q++ {
		contig = cols[q] == cols[0]+q
	}
	if contig {
		o := base + cols[0]
		_ = src[o+kmin : o+kmax+nr]
		if full > 0 {
			_ = dst[:full*nr]
			convPair32(&dst[0], &src[o], &kOff[0], full)
		}
		if kc&1 != 0 {
			s := src[o+kOff[kc-1] : o+kOff[kc-1]+nr]
			d := dst[full*nr : full*nr+nr]
			for q := range d {
				d[q] = uint32(s[q])<<16 | pairPadB
			}
		}
		return
	}
	var c [nr]int
	for q := range c {
		c[q] = base + cols[0]
		if q < len(cols) {
			c[q] = base + cols[q]
		}
	}
	cmin, cmax := c[0], c[0]
	for _, v := range c {
		cmin, cmax = min(cmin, v), max(cmax, v)
	}
	for j0 := 0; j0 < full; {
		ko := kOff[2*j0]
		// A run of pairs whose steps are consecutive in the input: each
		// column reads it as consecutive dwords.
		j1 := j0
		for j1 < full && kOff[2*j1] == ko+2*(j1-j0) && kOff[2*j1+1] == ko+2*(j1-j0)+1 {
			j1++
		}
		if n := j1 - j0; n >= 2 {
			_ = src[cmin+ko : cmax+ko+2*n]
			var offs [16]int
			for h := 0; h < 2; h++ {
				for r := range offs {
					offs[r] = c[16*h+r] + ko
				}
				convPairT16(&dst[j0*nr+16*h], nr, &src[0], &offs, n)
			}
			j0 = j1
			continue
		}
		d := dst[j0*nr : j0*nr+nr]
		k0, k1 := kOff[2*j0], kOff[2*j0+1]
		for q, cq := range c {
			d[q] = uint32(src[cq+k0])<<16 | uint32(src[cq+k1])
		}
		j0++
	}
	if kc&1 != 0 {
		d := dst[full*nr : full*nr+nr]
		k0 := kOff[kc-1]
		for q, cq := range c {
			d[q] = uint32(src[cq+k0])<<16 | pairPadB
		}
	}
}
