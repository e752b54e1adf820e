package cpu

import (
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gotpu/gotpu/backend/cpu/internal/pool"
	"github.com/gotpu/gotpu/op"
)

// The fast f32 convolution (register-tiled level; precision highest, and
// medium/high by rounding the packed panels): an implicit im2col packed
// straight into the GEMM micro-kernel's B panels.
//
// A convolution of one group is the product
//
//	C[co, (n, o)] = sum over k = (ci, kh, kw) of W[co, k] * X[n, ci, o*s + kk*d - pad]
//
// with M = Cout/groups rows, K = Cin/groups*KH*KW, and columns (image,
// output position) over all images at once: a 56x56 image gives thousands
// of columns, and the weight gradient's convolution (see op's
// convWeightGrad: a 56x56 "kernel", 3x3 outputs, the batch as channels)
// still gets hundreds by batching its images. The input is first copied
// once into a zero-padded buffer (skipped when there is no padding), so a
// B element is src[kOff[k] + colOff[j]]: separable offsets, no per-element
// bounds logic. A strided convolution's input is copied split into its
// stride phases instead (padPhases), which makes it a stride-1 convolution
// over the phase planes. The columns then run over a "wide" grid — every
// padded column of an output row, the last few discarded — so the 16
// columns of a B panel are one contiguous run of the input and packing a k
// step is a 64-byte copy (convCopy16). Other panels (few columns per
// image, as in the weight gradient's convolution) are filled from runs of
// k steps contiguous in the input by 8x8 register transposes
// (convTrans16), or gathered.
//
// At level avx512 the 6x64 ZMM tile runs instead, its 64-column panels
// packed 16 columns at a time (rows 64 apart), unless the k steps run
// contiguously for 8 or more (a weight gradient's kernel rows), whose
// transposing packers are 16 wide. There, a panel made of up to four
// contiguous runs (output rows shorter than a panel, on the compact
// grid) packs by merge-masked loads (convRuns16); and with at most six
// output channels per group, where each packed B element would be used
// once, the kernel reads B straight from the padded input with no
// packing (convDirect6x64; see direct in convF32). At level avx2 the 6x16
// tile does the same with at most six output channels per group
// (convDirect6x16).
//
// The weights (A) are packed once per call into 6-row panels. Work units
// are (group, block of columns); each thread packs its unit's B block one
// k block at a time and runs the 6x16 assembly kernel into a private C
// block, the full M rows tall (padded rows and columns included, so there
// are no edge tiles), then scatters the valid columns into NCHW output
// adding the bias; without a bias, at level avx2, the tiles of whole
// 6-channel rows over 16 consecutive output positions are written straight
// into the output instead (convOutDirect). Each output element is one FMA chain over k in (ci, kh,
// kw) order (pass-major at the bf16 precisions) followed by the bias: bit
// for bit the generic im2col path (runConv), which tests rely on.
//
// A stride-1 transposed convolution (the input gradient of a stride-1
// convolution) is the forward convolution of its input with the flipped,
// in/out-swapped weight and padding effK-1-pad; a strided one is a GEMM
// over the input positions followed by a col2im scatter (convTransF32).
// Depthwise convolutions run on the matrix-vector kernel instead
// (convDepthwiseF32), and 1x1 stride-1 unpadded ones are plain GEMMs
// (conv1x1F32).

// convGeom is a 2-d convolution (1-d ones have H = KH = OH = 1) in the
// forward form the fast path computes: weights [Cout, Cin/groups, KH, KW].
type convGeom struct {
	n, cin, cout, groups   int
	h, w, kh, kw, oh, ow   int
	sh, sw, dh, dw         int
	padT, padL             int // rows/columns of zeros before the input (may be negative: cropped)
	cinG, coutG, kdim, lin int // lin = h*w
}

// convFastOK reports whether the fast path can take p (the dtype, f32, and
// the precision are the caller's checks): the assembly GEMM kernel is in
// use and the convolution is 1-d or 2-d (3-d ones keep the generic path).
func convFastOK(ks *kset, p op.ConvParams) bool {
	return asmTileF32 != nil && tileF32(ks) != nil && len(p.In) >= 1 && len(p.In) <= 2
}

// convStrided reports whether any stride of p is above 1.
func convStrided(p op.ConvParams) bool {
	for _, s := range p.Stride {
		if s != 1 {
			return true
		}
	}
	return false
}

// geomOf converts resolved parameters to the forward 2-d geometry.
func geomOf(p op.ConvParams) convGeom {
	two := func(v []int, i int) (int, int) {
		if len(v) == 1 {
			return i, v[0]
		}
		return v[0], v[1]
	}
	g := convGeom{n: p.N, cin: p.Cin, cout: p.Cout, groups: p.Groups}
	g.h, g.w = two(p.In, 1)
	g.kh, g.kw = two(p.Kernel, 1)
	g.oh, g.ow = two(p.Out, 1)
	g.sh, g.sw = two(p.Stride, 1)
	g.dh, g.dw = two(p.Dilation, 1)
	lo, lw := two(p.PadLo, 0)
	if p.Transposed {
		// Forward form of a stride-1 transposed convolution: low padding
		// effK-1-pad.
		lo = g.dh*(g.kh-1) - lo
		lw = g.dw*(g.kw-1) - lw
	}
	g.padT, g.padL = lo, lw
	g.cinG, g.coutG = g.cin/g.groups, g.cout/g.groups
	g.kdim = g.cinG * g.kh * g.kw
	g.lin = g.h * g.w
	return g
}

// convF32 runs the fast path: out = conv(x, w) + bias for the forward-form
// geometry g (bias may be nil). x, w and out start at their first element.
// flip says w is a stride-1 transposed convolution's weight, [Cin,
// Cout/groups, KH, KW], read as its forward form. rounds, when not nil, are
// the bf16 precision passes (bf16Rounds: medium one, high three) of the A
// and B sides: k runs over pass-major (pass, ci, kh, kw) and each packed
// panel is rounded in place, as the generic path's packing does.
func convF32(ks *kset, x, w, bias, out []float32, g convGeom, flip bool, rounds [2][]int8) {
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
			o := out[i*L : (i+1)*L]
			for j := range o {
				o[j] = b
			}
		}
		return
	}
	if rounds[0] == nil && !flip && g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.padT == 0 && g.padL == 0 && L == g.lin {
		conv1x1F32(ks, x, w, bias, out, g)
		return
	}
	const mr = 6
	effH, effW := g.dh*(g.kh-1)+1, g.dw*(g.kw-1)+1
	// Extent of the input the outputs read, in padded coordinates.
	hp, wp := (g.oh-1)*g.sh+effH, (g.ow-1)*g.sw+effW
	src := x
	rs, ps := g.w, g.lin // row and plane strides of src
	pad := g.padT != 0 || g.padL != 0 || hp > g.h || wp > g.w
	if pad {
		ps, rs = hp*wp, wp
	}
	if g.cinG == 1 && g.coutG < mr && g.sw == 1 && rounds[0] == nil && gemvAsmF32 != nil {
		convDepthwiseF32(x, w, bias, out, g, flip, pad, hp, rs, ps)
		return
	}
	// A strided convolution reads the input through its stride phases:
	// split into sh*sw phase planes (plane (ra, rb) holds padded rows ra,
	// ra+sh, ... and columns rb, rb+sw, ...), tap (a, b) reads phase plane
	// ((a*dh)%sh, (b*dw)%sw) shifted by ((a*dh)/sh, (b*dw)/sw) at stride 1,
	// so its columns run on a stride-1 (wide) grid too and pack by copies.
	csh, csw := g.sh, g.sw // output step in source rows and columns
	hph, wph := hp, wp     // phase plane size
	phased := g.sh > 1 || g.sw > 1
	if phased {
		pad = true
		hph, wph = ceilDiv(hp, g.sh), ceilDiv(wp, g.sw)
		rs, ps = wph, g.sh*g.sw*hph*wph
		csh, csw = 1, 1
	}
	// The tile: 6x64 ZMM at level avx512. Where the k steps run
	// contiguously in the input for 8 or more steps (kernel rows of a
	// weight gradient's convolution) its panels are packed by 16-column
	// transposes too, but only enough columns to fill most of its 64
	// lanes pay for them (a ResNet layer's weight gradient, 576 columns:
	// 65 -> 83 GFLOP/s a Zen 4 thread); fewer (LeNet's, 25 to 150
	// columns) keep the 6x16 tile.
	t, nr := asmTileF32, 16
	krun := 1
	if phased && g.dw == g.sw || !phased && g.dw == 1 {
		krun = g.kw
	}
	cols := g.n * L
	if asm512TileF32 != nil && ks.atLeast(LevelAVX512) && (krun < 8 || (roundUp(cols, 64)-cols)*8 <= cols) {
		t, nr = asm512TileF32, 64
	} else if zt := convTile16Z(); zt != nil && ks.atLeast(LevelAVX512) {
		t = zt // the same 6x16 tile on ZMM registers: six FMAs a k step, not twelve
	}
	// Direct B: with at most six output channels per group a packed B
	// element would be used once, so the ZMM tile reads B straight from
	// the padded input (convDirect6x64) when a tile's 64 columns are
	// contiguous there: on the wide grid at row step 1 (waste up to a
	// third: no packing to save), each image's columns rounded up to a
	// multiple of 64 (the extra ones read past the image and are dropped;
	// 64 zeros of slack follow the last), the input always copied.
	//
	// With more output channels a packed B element serves every 6-row
	// tile, but the direct tile still wins where the wide grid wastes
	// little (at most 1/16 of a row and of an image's columns): the taps
	// of a kernel row read overlapping windows of the same input rows, a
	// smaller working set than the packed panel, and the packing (8-10%
	// of a ResNet 3x3 layer on one Zen 4 thread) is gone: 87 -> 94
	// GFLOP/s a thread, forward and input gradient. On small images (LeNet's
	// 12x12, 8 outputs a row) the waste costs more than packing saves.
	//
	// At level avx2 (below avx512, whose tiles are ZMM ones) the 6x16 tile
	// reads B from the input the same way (convDirect6x16), but only with
	// at most six output channels per group: LeNet's input gradients (6->1
	// and 16->6 channels) and its first layer run 1.4-3x faster on a Zen 3
	// pair of threads, while with more channels, where every packed B
	// element serves several 6-row tiles, the packed panel in L1 beats
	// unaligned reads of the input (a ResNet 3x3 layer: 10% slower direct).
	direct16 := nr == 16 && convDirect16 && !ks.atLeast(LevelAVX512) && g.coutG <= mr
	// At precision medium (one bf16 pass on each side) every B value is a
	// copy of an input value (or a zero), so at level avx2 the padded copy
	// of the input is rounded once, instead of each packed panel — up to
	// kh*kw times per input value — and the direct tile can read it.
	preRounded := rounds[1] != nil && len(rounds[1]) == 1 && convRoundOnce && !ks.atLeast(LevelAVX512)
	if preRounded && !pad {
		pad = true
		ps, rs = hp*wp, wp
	}
	direct := (nr == 64 && rounds[0] == nil || direct16 && (rounds[0] == nil || preRounded)) && csh == 1 && csw == 1
	if direct {
		rw := rs
		if !pad {
			rw = wp
		}
		if g.coutG <= mr {
			direct = (rw-g.ow)*3 <= rw
		} else {
			direct = convDirectWasteOK(g, rw, nr)
		}
	}
	if direct && !pad {
		pad = true
		ps, rs = hp*wp, wp
	}
	// Columns: (image, position) on the wide grid (stride 1 along W, little
	// waste) or the compact one.
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
	// K blocks of at most the tile's kc, balanced.
	kall := g.kdim // k steps over all passes
	if rounds[0] != nil {
		kall *= len(rounds[0])
	}
	nkb := ceilDiv(kall, t.kc)
	kcb := ceilDiv(kall, nkb)
	mpad := roundUp(g.coutG, mr)
	// Packed A (all groups): block kb of group gi at (gi*nkb+kb)*mpad*kcb,
	// panel i at +i*mr*kc, element (k, r) at +k*mr+r.
	asz := g.groups * nkb * mpad * kcb
	cost := g.n * g.cout * L * g.kdim
	nw := pool.Workers(cost)
	npan := ceilDiv(ncols, nr)
	ppu := convPanelsPerUnit(npan, g.groups, nw, 256/nr)
	ncb := ppu * nr
	ldc := ncb + nr // not a power of two: the 6 rows of a tile spread over cache sets
	bsz, csz := kcb*ncb, mpad*ldc
	ublk := ceilDiv(ncols, ncb)
	units := g.groups * ublk
	nw = min(nw, units)
	// One scratch buffer per call (the pool keeps a few; several per call
	// would evict each other): the offset tables (ints), the padded input,
	// the packed A, and per thread a B block and a C block.
	nint := 2*ncols + g.kdim
	psz := 0
	if pad {
		psz = g.n * g.cin * ps
	}
	per := bsz + csz + 32
	total := 2*nint + psz + slack + asz + nw*per + 64
	buf := getScratch(total * 4)
	defer putScratch(buf)
	all := as[float32](*buf)
	itab := as[int](unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(all))), nint*8))
	colOff := itab[:ncols:ncols]
	outIdx := itab[ncols : 2*ncols : 2*ncols] // -1: a wide column past the row's end
	kOff := itab[2*ncols : nint : nint]
	off := 2 * nint
	if pad {
		src = all[off : off+psz+slack : off+psz+slack]
		clear(src[psz:])
		off += psz + slack
		if phased {
			padPhases(src, x, g, hph, wph)
		} else {
			padPlanes(src, x, g, hp, wp)
		}
		if preRounded {
			roundPass(ks, src[:psz], rounds[1][0])
		}
	}
	apack := alignF32(all[off:], asz)
	off += asz + 16
	tall := all[off:]
	img := g.cin * ps
	convColumns(colOff, outIdx, g, lc, wide, rs, img, csh, csw)
	kmin, kmax := convKOffsets(kOff, g, kp, ps, rs, hph, wph)
	packConvA(ks, apack, w, g, nkb, kcb, mpad, flip, rounds[0])
	directTile := convDirect6x64
	if nr == 16 {
		directTile = convDirect6x16
	}
	// Without a bias, the packed 6x16 tiles of a panel whose 16 columns
	// are 16 consecutive output positions (on the wide grid: not across a
	// row's end) write their channels straight into the output (rows L
	// apart) instead of the C block, which saves copying them out after:
	// the same FMA chains, the same bits. The last row tile, when the
	// channels do not fill it, still goes through the C block. At level
	// avx2 (the AVX-512 tiles keep the C block).
	outDirect := bias == nil && !direct && nr == 16 && convOutDirect && !ks.atLeast(LevelAVX512)
	fullRows := g.coutG / mr * mr // channels the whole 6-row tiles cover
	var next atomic.Int64
	pool.RunShare(nw, func(tid, _ int) {
		off := tid * per
		bb := alignF32(tall[off:], bsz)
		cb := alignF32(tall[off+bsz+16:], csz)
		var segs, dsegs, dbuf [][3]int // output runs of a block: column, length, output offset
		var clean []bool               // per panel: written to the output directly
		var dirty []int                // the block's output indices, -1 at clean panels' columns
		for {
			u := int(next.Add(1) - 1)
			if u >= units {
				return
			}
			gi, j0 := u/ublk, (u%ublk)*ncb
			nc := min(ncb, ncols-j0)
			pn := ceilDiv(nc, nr)
			base := gi * g.cinG * ps
			oidx := outIdx[j0 : j0+nc]
			nclean := 0
			if outDirect {
				clean = slices.Grow(clean[:0], pn)[:pn]
				clear(clean)
				for q := 0; q+1 <= pn && q*nr+nr <= nc; q++ {
					o := oidx[q*nr]
					ok := o >= 0
					for k := 1; k < nr && ok; k++ {
						ok = oidx[q*nr+k] == o+k
					}
					if ok && fullRows > 0 {
						clean[q] = true
						nclean++
					}
				}
			}
			for kb := 0; kb < nkb; kb++ {
				k0 := kb * kcb
				kc := min(kcb, kall-k0)
				for q := 0; q < pn && !direct; q++ {
					panel, cols := bb[q*nr*kc:(q+1)*nr*kc], colOff[j0+q*nr:j0+min(nc, q*nr+nr)]
					if rounds[1] == nil || preRounded {
						packConvPanel(ks, panel, src, base, kOff[k0:k0+kc], cols, kmin, kmax, nr)
						continue
					}
					forPassSegments(k0, kc, g.kdim, func(s, kk, n, pass int) {
						seg := panel[s*nr : (s+n)*nr]
						packConvPanel(ks, seg, src, base, kOff[kk:kk+n], cols, kmin, kmax, nr)
						roundPass(ks, seg, rounds[1][pass])
					})
				}
				ab := apack[(gi*nkb+kb)*mpad*kcb:]
				load := 0
				if kb > 0 {
					load = 1
				}
				for q := 0; q < pn; q++ {
					if direct {
						o := base + colOff[j0+q*nr]
						_ = src[o+kmin : o+kmax+nr]
						for ir := 0; ir < mpad; ir += mr {
							directTile(kc, &ab[ir*kc], &src[o], &kOff[k0], &cb[ir*ldc+q*nr], ldc, load)
						}
						continue
					}
					bp := &bb[q*nr*kc]
					if nclean > 0 && clean[q] {
						ob := oidx[q*nr] + gi*g.coutG*L
						for ir := 0; ir < mpad; ir += mr {
							if ir+mr > fullRows {
								c := &cb[ir*ldc+q*nr]
								t.kern(kc, &ab[ir*kc], bp, c, ldc, c, load)
								continue
							}
							c := &out[ob+ir*L]
							pf := c
							if ir+2*mr <= fullRows {
								pf = &out[ob+(ir+mr)*L]
							}
							t.kern(kc, &ab[ir*kc], bp, c, L, pf, load)
						}
						continue
					}
					for ir := 0; ir < mpad; ir += mr {
						c := &cb[ir*ldc+q*nr]
						pf := c
						if ir+mr < mpad {
							pf = &cb[(ir+mr)*ldc+q*nr]
						}
						t.kern(kc, &ab[ir*kc], bp, c, ldc, pf, load)
					}
				}
			}
			// Scatter the valid columns into the output, adding the bias:
			// runs of columns contiguous in the output (an output row's
			// part in the block) at a time; the channels of whole row
			// tiles skip the panels written directly.
			segs = convOutRuns(segs[:0], oidx)
			dsegs = segs
			if nclean > 0 {
				dirty = append(dirty[:0], oidx...)
				for q, c := range clean {
					if c {
						for k := q * nr; k < q*nr+nr; k++ {
							dirty[k] = -1
						}
					}
				}
				dbuf = convOutRuns(dbuf[:0], dirty)
				dsegs = dbuf
			}
			for co := 0; co < g.coutG; co++ {
				oc := gi*g.coutG + co
				var bv float32
				if bias != nil {
					bv = bias[oc]
				}
				row := cb[co*ldc : co*ldc+nc]
				ch := oc * L
				runs := segs
				if co < fullRows {
					runs = dsegs
				}
				for _, sg := range runs {
					src := row[sg[0] : sg[0]+sg[1]]
					dst := out[sg[2]+ch : sg[2]+ch+sg[1]]
					if bias == nil {
						copy(dst, src)
						continue
					}
					ks.vec.AddScalar(dst, src, bv)
				}
			}
		}
	})
}

// convDirect16 enables the 6x16 direct tile at level avx2, and
// convRoundOnce the rounding of the padded input at precision medium
// there (BenchmarkConvF32 under GOTPU_CONV_BENCH_PACKED=1 turns both off).
var convDirect16, convRoundOnce = true, true

// convOutDirect enables writing clean panels' tiles straight into the
// output (convF32, no bias, level avx2); BenchmarkConvF32 under
// GOTPU_CONV_BENCH_PACKED=1 turns it off with the others.
var convOutDirect = true

// convDirectWasteOK reports whether the direct tiles' wide grid (input
// rows rw apart, each image's columns rounded up to whole panels of nr)
// wastes at most 1/16 of a row and of an image's columns: where reading B
// from the input beats packed panels for any number of output channels
// (convF32 and convBF16Pairs).
func convDirectWasteOK(g convGeom, rw, nr int) bool {
	lcw := (g.oh-1)*rw + g.ow
	return (rw-g.ow)*16 <= rw && (roundUp(lcw, nr)-lcw)*16 <= lcw
}

// convPanelsPerUnit returns how many B panels of npan (in each of groups
// groups) one unit of convF32's work covers on nw threads: at most
// maxPanels (the B block's size), at most a quarter of a thread's share
// (so that a thread the OS runs late takes fewer units), and among
// those the count whose units end soonest when the threads take them in
// turn, the larger on a tie. 9 panels on 2 threads: 9 units of one panel
// (5 and 4 a thread) rather than 5 of two (3 and 2).
func convPanelsPerUnit(npan, groups, nw, maxPanels int) int {
	hi := min(maxPanels, max(1, ceilDiv(npan*groups, 4*nw)))
	best, bestSpan := hi, -1
	for ppu := hi; ppu >= 1; ppu-- {
		units := groups * ceilDiv(npan, ppu)
		if span := ceilDiv(units, nw) * ppu; bestSpan < 0 || span < bestSpan {
			best, bestSpan = ppu, span
		}
	}
	return best
}

// convColumns fills the column tables of convF32 and convBF16Pairs: for
// column o of image n (lc columns per image, on the wide grid of row
// stride rs or the compact one), colOff[n*lc+o] is its offset in the
// (padded) source, images img apart, output rows csh*rs and columns csw
// apart; outIdx[n*lc+o] is its output element in image-major NCHW order
// without the channel, or -1 for a wide column past its row's end (or
// past the last row: columns rounded up per image).
func convColumns(colOff, outIdx []int, g convGeom, lc int, wide bool, rs, img, csh, csw int) {
	L := g.oh * g.ow
	rw := g.ow
	if wide {
		rw = rs
	}
	if g.n == 0 {
		return
	}
	co0, oi0 := colOff[:lc], outIdx[:lc]
	r, c := 0, 0
	for o := range co0 {
		co0[o] = r*csh*rs + c*csw
		oi0[o] = -1
		if c < g.ow && r < g.oh {
			oi0[o] = r*g.ow + c
		}
		if c++; c == rw {
			c, r = 0, r+1
		}
	}
	// The other images: the same pattern, shifted (in parallel: a batch of
	// small images has tens of thousands of columns).
	parallelFor(g.n-1, (g.n-1)*lc*2, func(lo, hi int) {
		for n := lo + 1; n < hi+1; n++ {
			co, oi := colOff[n*lc:(n+1)*lc], outIdx[n*lc:(n+1)*lc]
			di, do := n*img, n*g.cout*L
			for o, v := range co0 {
				co[o] = v + di
			}
			for o, v := range oi0 {
				if v >= 0 {
					v += do
				}
				oi[o] = v
			}
		}
	})
}

// conv1x1F32 is a 1x1, stride-1, unpadded convolution: per image and
// group the plain GEMM out[co, :] = W[co, :] . X[:, :] (gemmF32, the
// BLIS-style driver writing the NCHW output directly; measured about 10%
// faster here than the packed-column path, whose output is scattered),
// the bias added by the epilogue while each tile is in cache. Same FMA
// chains, then the bias, as the other paths.
func conv1x1F32(ks *kset, x, w, bias, out []float32, g convGeom) {
	L := g.lin
	for n := 0; n < g.n; n++ {
		for gi := 0; gi < g.groups; gi++ {
			var epi func(i0, j0, mc, nc int, c []float32, ldc int)
			if bias != nil {
				bg := bias[gi*g.coutG : (gi+1)*g.coutG]
				epi = func(i0, _, mc, nc int, c []float32, ldc int) {
					for i := 0; i < mc; i++ {
						row, bv := c[i*ldc:i*ldc+nc], bg[i0+i]
						for j := range row {
							row[j] += bv
						}
					}
				}
			}
			gemmF32(ks, g.coutG, L, g.cinG, w[gi*g.coutG*g.cinG:], g.cinG, false,
				x[(n*g.cin+gi*g.cinG)*L:], L, false, out[(n*g.cout+gi*g.coutG)*L:], L, epi)
		}
	}
}

// alignF32 returns n elements of buf starting at the first 64-byte
// boundary (buf must have 15 elements of slack).
func alignF32(buf []float32, n int) []float32 {
	off := 0
	if r := uintptr(unsafe.Pointer(unsafe.SliceData(buf))) % gemmAlign; r != 0 {
		off = int(gemmAlign-r) / 4
	}
	return buf[off : off+n : off+n]
}

// padPlanes copies every (image, channel) plane of x into dst as an hp x
// wp plane with g.padT rows and g.padL columns of zeros before it (either
// negative: that many input rows or columns dropped) and zeros after.
func padPlanes[E float32 | uint16](dst, x []E, g convGeom, hp, wp int) {
	planes := g.n * g.cin
	parallelFor(planes, planes*hp*wp, func(lo, hi int) {
		// Destination columns [c0, c1) hold input columns [c0-padL, c1-padL).
		c0, c1 := max(0, g.padL), min(wp, g.w+g.padL)
		for pl := lo; pl < hi; pl++ {
			d := dst[pl*hp*wp : (pl+1)*hp*wp]
			s := x[pl*g.lin : (pl+1)*g.lin]
			for r := 0; r < hp; r++ {
				row := d[r*wp : (r+1)*wp]
				i := r - g.padT
				if i < 0 || i >= g.h || c0 >= c1 {
					clear(row)
					continue
				}
				// The pads are a few elements: stores, not runtime calls
				// (a 56-wide row was three calls).
				for j := range row[:c0] {
					row[j] = 0
				}
				copy(row[c0:c1], s[i*g.w+c0-g.padL:i*g.w+c1-g.padL])
				for j := range row[c1:] {
					row[c1+j] = 0
				}
			}
		}
	})
}

// padPhases is padPlanes for a strided convolution: each (image, channel)
// plane becomes sh*sw phase planes of hph x wph, phase (ra, rb) element
// (i, j) holding padded input (i*sh+ra, j*sw+rb), that is input
// (i*sh+ra-padT, j*sw+rb-padL), or zero outside the input.
func padPhases[E float32 | uint16](dst, x []E, g convGeom, hph, wph int) {
	planes := g.n * g.cin
	php := hph * wph
	ps := g.sh * g.sw * php
	parallelFor(planes, planes*ps, func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			s := x[pl*g.lin : (pl+1)*g.lin]
			for ra := 0; ra < g.sh; ra++ {
				for rb := 0; rb < g.sw; rb++ {
					d := dst[pl*ps+(ra*g.sw+rb)*php : pl*ps+(ra*g.sw+rb+1)*php]
					// Phase columns [j0, j1) map to input columns j*sw+rb-padL in [0, w).
					j0 := max(0, ceilDiv(g.padL-rb, g.sw))
					j1 := min(wph, max(j0, ceilDiv(g.w+g.padL-rb, g.sw)))
					for i := 0; i < hph; i++ {
						row := d[i*wph : (i+1)*wph]
						in := i*g.sh + ra - g.padT
						if in < 0 || in >= g.h || j0 >= j1 {
							clear(row)
							continue
						}
						clear(row[:j0])
						srow := s[in*g.w : (in+1)*g.w]
						c := j0*g.sw + rb - g.padL
						for j := j0; j < j1; j++ {
							row[j] = srow[c]
							c += g.sw
						}
						clear(row[j1:])
					}
				}
			}
		}
	})
}

// packConvA packs the weights, per group and k block, into 6-row panels
// (rows past coutG zero). flip reads a stride-1 transposed convolution's
// weight as its forward form: row co, k = (ci, t) is w[g*cinG+ci, co,
// KH*KW-1-t]. rounds, when not nil, are the precision passes (k then runs
// over (pass, ci, t) and each pass's steps are rounded).
func packConvA(ks *kset, dst, w []float32, g convGeom, nkb, kcb, mpad int, flip bool, rounds []int8) {
	const mr = 6
	kp := g.kh * g.kw
	kall := g.kdim * max(1, len(rounds))
	// Blocks (group, k block) in parallel: a weight gradient's "weights"
	// are the output gradient, as large as an activation.
	parallelFor(g.groups*nkb, g.groups*mpad*kall, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			gi, kb := b/nkb, b%nkb
			k0 := kb * kcb
			kc := min(kcb, kall-k0)
			blk := dst[(gi*nkb+kb)*mpad*kcb:]
			for ir := 0; ir < mpad; ir += mr {
				panel := blk[ir*kc : (ir+mr)*kc]
				if !flip && ir+mr <= g.coutG && k0+kc <= g.kdim {
					// Six whole rows, one pass segment: a 6-way interleave.
					base := (gi*g.coutG+ir)*g.kdim + k0
					r0 := w[base : base+kc]
					r1 := w[base+g.kdim : base+g.kdim+kc]
					r2 := w[base+2*g.kdim : base+2*g.kdim+kc]
					r3 := w[base+3*g.kdim : base+3*g.kdim+kc]
					r4 := w[base+4*g.kdim : base+4*g.kdim+kc]
					r5 := w[base+5*g.kdim : base+5*g.kdim+kc]
					for k := range r0 {
						o := panel[k*mr : k*mr+mr : k*mr+mr]
						o[0], o[1], o[2], o[3], o[4], o[5] = r0[k], r1[k], r2[k], r3[k], r4[k], r5[k]
					}
					if rounds != nil {
						roundPass(ks, panel, rounds[0])
					}
					continue
				}
				for r := 0; r < mr; r++ {
					co := ir + r
					switch {
					case co >= g.coutG:
						for k := 0; k < kc; k++ {
							panel[k*mr+r] = 0
						}
					case flip:
						for k := 0; k < kc; k++ {
							kk := (k0 + k) % g.kdim
							ci, t := kk/kp, kk%kp
							panel[k*mr+r] = w[((gi*g.cinG+ci)*g.coutG+co)*kp+kp-1-t]
						}
					default:
						row := w[(gi*g.coutG+co)*g.kdim:][:g.kdim]
						// Per pass segment (one segment without passes).
						for k := 0; k < kc; {
							kk := (k0 + k) % g.kdim
							seg := row[kk:min(g.kdim, kk+kc-k)]
							out := panel[k*mr+r:]
							for i, v := range seg {
								out[i*mr] = v
							}
							k += len(seg)
						}
					}
				}
				if rounds != nil {
					forPassSegments(k0, kc, g.kdim, func(s, _, n, pass int) {
						roundPass(ks, panel[s*mr:(s+n)*mr], rounds[pass])
					})
				}
			}
		}
	})
}

// forPassSegments splits the k steps [k0, k0+kc) of a pass-major k range
// (passes of kdim steps) into per-pass segments: fn(s, kk, n, pass) for
// block steps [s, s+n), which are steps [kk, kk+n) of pass pass.
func forPassSegments(k0, kc, kdim int, fn func(s, kk, n, pass int)) {
	for s := 0; s < kc; {
		gk := k0 + s
		pass, kk := gk/kdim, gk%kdim
		n := min(kc-s, kdim-kk)
		fn(s, kk, n, pass)
		s += n
	}
}

// roundPass rounds packed values in place to the bf16 part a pass takes.
func roundPass(ks *kset, x []float32, r int8) {
	if r == roundLo {
		ks.vec.RoundLo(x)
	} else {
		ks.vec.RoundHi(x)
	}
}

// packConvPanel packs an nr-column B panel (16 or 64), 16 columns at a
// time (packConvB).
func packConvPanel(ks *kset, dst, src []float32, base int, kOff, cols []int, kmin, kmax, nr int) {
	for sub := 0; sub < nr; sub += 16 {
		packConvB(ks, dst[sub:], src, base, kOff, cols[min(sub, len(cols)):min(sub+16, len(cols))], kmin, kmax, nr)
	}
}

// packConvB packs 16 columns of a B panel whose rows (k steps) are ldd
// apart (16: a whole 6x16 panel; 64: a quarter of a 6x64 one): step k
// holds src[base+kOff[k]+cols[q]] for the columns q, zero past len(cols).
// Columns that are one contiguous run are copied 64 bytes per step. kmin
// and kmax bound the values in kOff (the reads of the assembly copy are
// checked against them).
func packConvB(ks *kset, dst, src []float32, base int, kOff, cols []int, kmin, kmax, ldd int) {
	const nr = 16
	if len(kOff) == 0 {
		return
	}
	_ = dst[:(len(kOff)-1)*ldd+nr]
	contig := len(cols) == nr
	for q := 1; q < len(cols) && contig; q++ {
		contig = cols[q] == cols[0]+q
	}
	if contig && len(kOff) > 0 {
		o := base + cols[0]
		_ = src[o+kmin : o+kmax+nr]
		convCopy16(&dst[0], &src[o], &kOff[0], len(kOff), ldd)
		return
	}
	if len(cols) == nr && len(kOff) > 0 && !kRunsLong(kOff) && hasConvRuns16(ks) {
		// A few contiguous runs (output rows shorter than the panel, on
		// the compact grid): masked copies, run by run.
		var runs [4][2]int
		nrun := 0
		for q := 0; q < nr && nrun <= 4; {
			e := q + 1
			for e < nr && cols[e] == cols[q]+e-q {
				e++
			}
			o := base + cols[q]
			_ = src[o+kmin : o+kmax+e-q]
			if nrun < 4 {
				// Lane i of the run reads offset cols[q]-q+i from cols[0].
				runs[nrun] = [2]int{cols[q] - cols[0] - q, (1<<(e-q) - 1) << q}
			}
			nrun++
			q = e
		}
		if nrun <= 4 {
			o := base + cols[0]
			convRuns16(&dst[0], &src[o], &kOff[0], len(kOff), &runs, nrun, ldd)
			return
		}
	}
	var c [nr]int
	nc := copy(c[:], cols)
	for q := range nc {
		c[q] += base
	}
	if nc > 0 && nc < nr && kRunsLong(kOff) {
		// A short last panel of long k runs (a weight gradient's last
		// few output positions): its missing columns repeat the last one,
		// so that the transposing packers take it instead of the element
		// loop. Their products land in columns past the block's end,
		// which are never written out.
		for q := nc; q < nr; q++ {
			c[q] = c[nc-1]
		}
		nc = nr
	}
	if nc < nr {
		for k := range kOff {
			clear(dst[k*ldd+nc : k*ldd+nr])
		}
	}
	for k0 := 0; k0 < len(kOff); {
		// A run of k steps contiguous in the input (kw at dilation 1, or
		// the whole kernel row of a weight gradient's convolution) is a
		// small transpose: each column reads it sequentially.
		ko := kOff[k0]
		k1 := k0 + 1
		for k1 < len(kOff) && kOff[k1] == ko+k1-k0 {
			k1++
		}
		if n := (k1 - k0) &^ 7; n > 0 && nc == nr {
			var cc [nr]int
			for q := range cc {
				cc[q] = ko + c[q]
				_ = src[cc[q] : cc[q]+n]
			}
			convTrans16(&dst[k0*ldd], &src[0], &cc, n, ldd)
			if k1-k0 == n {
				k0 = k1
				continue
			}
			k0 += n
			ko = kOff[k0]
		}
		if r := k1 - k0; r >= 2 && k0+8 <= len(kOff) && nc == nr {
			// A short run (the rest of a kernel row whose length is not a
			// multiple of 8) with 8 steps of the panel left: transpose 8,
			// reading past the run in the input; the rows of the steps
			// after it are written again when those steps are packed.
			var cc [nr]int
			ok := true
			for q := range cc {
				cc[q] = ko + c[q]
				ok = ok && cc[q] >= 0 && cc[q]+8 <= len(src)
			}
			if ok {
				convTrans16(&dst[k0*ldd], &src[0], &cc, 8, ldd)
				k0 = k1
				continue
			}
		}
		if k1 == k0+1 && nc == nr {
			// A run with element step 2 (kw at dilation 2: the weight
			// gradient of a stride-2 convolution).
			k2 := k0 + 1
			for k2 < len(kOff) && kOff[k2] == ko+2*(k2-k0) {
				k2++
			}
			if n := (k2 - k0) &^ 7; n > 0 {
				var cc [nr]int
				ok := true
				for q := range cc {
					cc[q] = ko + c[q]
					ok = ok && cc[q] >= 0 && cc[q]+2*n <= len(src)
				}
				if ok {
					convTrans16S2(&dst[k0*ldd], &src[0], &cc, n, ldd)
					k0 += n
					continue
				}
			}
		}
		if k1-k0 >= 4 {
			n := k1 - k0
			for q := 0; q < nc; q++ {
				in := src[ko+c[q] : ko+c[q]+n]
				out := dst[k0*ldd+q : (k1-1)*ldd+q+1]
				for i, v := range in {
					out[i*ldd] = v
				}
			}
			k0 = k1
			continue
		}
		for k := k0; k < k1; k++ {
			d := (*[nr]float32)(dst[k*ldd : k*ldd+nr])
			ko := kOff[k]
			for q := 0; q < nc; q++ {
				d[q] = src[ko+c[q]]
			}
		}
		k0 = k1
	}
}

// runConvFast is the convolution kernel's fast f32 path (convFastOK(p);
// at precision medium or high, not for strided transposed convolutions).
func runConvFast(c *Call, p op.ConvParams) {
	x := as[float32](c.InB[0][c.In[0].Offset*4:])
	w := as[float32](c.InB[1][c.In[1].Offset*4:])
	out := as[float32](c.OutB[0][c.Out[0].Offset*4:])
	var bias []float32
	if c.In[2].Buf != nil {
		bias = as[float32](c.InB[2][c.In[2].Offset*4:])
	}
	convFastF32(c.kernels(), x, w, bias, out, p, c.Attrs.String("precision"))
}

// convFastF32 is runConvFast on slices: out = conv(x, w) + bias (bias may
// be nil) at precision prec, each slice starting at its first element.
func convFastF32(ks *kset, x, w, bias, out []float32, p op.ConvParams, prec string) {
	g := geomOf(p)
	if p.Transposed && convStrided(p) {
		// geomOf's forward-form padding is for stride 1: take the
		// transposed convolution's own.
		g.padT, g.padL = p.PadLo[0], p.PadLo[len(p.PadLo)-1]
		if len(p.PadLo) == 1 {
			g.padT = 0
		}
		convTransF32(ks, x, w, bias, out, g)
		return
	}
	var rounds [2][]int8
	if !isHighest(prec) {
		rounds = bf16Rounds(prec)
	}
	convF32(ks, x, w, bias, out, g, p.Transposed, rounds)
}

// convTransF32 is a strided transposed convolution (the input gradient of
// a strided convolution) in the GEMM + col2im form: for each image and
// group, C[(co, kh, kw), (i, j)] = sum over ci of W[ci, co, kh, kw] *
// X[ci, i, j] (M = Cout/groups*KH*KW, K = Cin/groups, the image's input
// positions as columns, packed by the same panel copies), each C block
// scatter-added into out[co, i*s-pad+kh*d, j*s-pad+kw*d] while in cache.
// Units are (image, group, block of output channels): a unit owns its
// output rows, so threads never add into the same element. g is the raw
// transposed geometry (weights [Cin, Cout/groups, KH, KW], padT/padL the
// transposed convolution's low padding).
func convTransF32(ks *kset, x, w, bias, out []float32, g convGeom) {
	L := g.oh * g.ow
	if g.n == 0 || g.cout == 0 || L == 0 {
		return
	}
	const mr, nr = 6, 16
	t := asmTileF32
	kp := g.kh * g.kw
	K := g.cinG
	nw := pool.Workers(g.n * g.cin * g.lin * g.coutG * kp)
	// Output-channel blocks per (image, group): enough units for the threads.
	nsplit := 1
	if ng := g.n * g.groups; ng < 2*nw {
		nsplit = min(g.coutG, ceilDiv(2*nw, ng))
	}
	cbk := ceilDiv(g.coutG, nsplit)
	nsplit = ceilDiv(g.coutG, cbk)
	units := g.n * g.groups * nsplit
	rows := cbk * kp
	rpad := roundUp(rows, mr)
	nkb := max(1, ceilDiv(K, t.kc))
	kcb := max(1, ceilDiv(K, nkb))
	ncb := min(256, roundUp(g.lin, nr))
	ldc := ncb + nr
	kOff := make([]int, K)
	for ci := range kOff {
		kOff[ci] = ci * g.lin
	}
	colOff := make([]int, g.lin)
	for j := range colOff {
		colOff[j] = j
	}
	asz, bsz, csz := rpad*max(K, 1), kcb*ncb, rpad*ldc
	per := asz + bsz + csz + 48
	tbuf := getScratch((min(nw, units)*per + 16) * 4)
	defer putScratch(tbuf)
	tall := as[float32](*tbuf)
	var next atomic.Int64
	pool.RunShare(min(nw, units), func(tid, _ int) {
		off := tid * per
		ap := alignF32(tall[off:], asz)
		bb := alignF32(tall[off+asz+16:], bsz)
		cb := alignF32(tall[off+asz+bsz+32:], csz)
		for {
			u := int(next.Add(1) - 1)
			if u >= units {
				return
			}
			n, gi, blk := u/(g.groups*nsplit), u/nsplit%g.groups, u%nsplit
			c0 := blk * cbk
			c1 := min(g.coutG, c0+cbk)
			nrow := (c1 - c0) * kp
			// This unit's output rows start at zero.
			orow := out[(n*g.cout+gi*g.coutG+c0)*L : (n*g.cout+gi*g.coutG+c1)*L]
			clear(orow)
			if K > 0 {
				// A: rows (co, kh, kw) of the unit, k = ci, in 6-row panels per k block.
				for kb := 0; kb < nkb; kb++ {
					k0 := kb * kcb
					kc := min(kcb, K-k0)
					blkA := ap[k0*rpad:]
					for ir := 0; ir < rpad; ir += mr {
						panel := blkA[ir*kc : (ir+mr)*kc]
						for r := 0; r < mr; r++ {
							if ir+r >= nrow {
								for k := 0; k < kc; k++ {
									panel[k*mr+r] = 0
								}
								continue
							}
							wo := (gi*g.cinG+k0)*g.coutG*kp + c0*kp + ir + r
							for k := 0; k < kc; k++ {
								panel[k*mr+r] = w[wo+k*g.coutG*kp]
							}
						}
					}
				}
				base := (n*g.cin + gi*g.cinG) * g.lin
				for j0 := 0; j0 < g.lin; j0 += ncb {
					nc := min(ncb, g.lin-j0)
					pn := ceilDiv(nc, nr)
					for kb := 0; kb < nkb; kb++ {
						k0 := kb * kcb
						kc := min(kcb, K-k0)
						for q := 0; q < pn; q++ {
							packConvB(ks, bb[q*nr*kc:(q+1)*nr*kc], x, base, kOff[k0:k0+kc], colOff[j0+q*nr:j0+min(nc, q*nr+nr)], 0, (K-1)*g.lin, nr)
						}
						ab := ap[k0*rpad:]
						load := 0
						if kb > 0 {
							load = 1
						}
						for q := 0; q < pn; q++ {
							bp := &bb[q*nr*kc]
							for ir := 0; ir < rpad; ir += mr {
								c := &cb[ir*ldc+q*nr]
								t.kern(kc, &ab[ir*kc], bp, c, ldc, c, load)
							}
						}
					}
					col2imBlock(orow, cb, ldc, nrow, j0, nc, g)
				}
			}
			for oc := gi*g.coutG + c0; oc < gi*g.coutG+c1; oc++ {
				if bias == nil {
					break
				}
				o := out[(n*g.cout+oc)*L : (n*g.cout+oc+1)*L]
				bv := bias[oc]
				for j := range o {
					o[j] += bv
				}
			}
		}
	})
}

// col2imBlock adds the C block (rows (co, kh, kw) from the unit's first
// channel, columns the input positions j0..j0+nc) into the unit's output
// rows: input (i, j) with tap (kh, kw) lands on (i*sh-padT+kh*dh,
// j*sw-padL+kw*dw) when that is inside the output.
func col2imBlock(orow, cb []float32, ldc, nrow, j0, nc int, g convGeom) {
	L := g.oh * g.ow
	kp := g.kh * g.kw
	for r := 0; r < nrow; r++ {
		co, tp := r/kp, r%kp
		a, b := tp/g.kw, tp%g.kw
		dst := orow[co*L : (co+1)*L]
		src := cb[r*ldc : r*ldc+nc]
		// Walk the columns row segment by row segment of the input.
		for q := 0; q < nc; {
			pos := j0 + q
			i, j := pos/g.w, pos%g.w
			seg := min(nc-q, g.w-j)
			oi := i*g.sh - g.padT + a*g.dh
			if oi >= 0 && oi < g.oh {
				drow := dst[oi*g.ow : (oi+1)*g.ow]
				oj := j*g.sw - g.padL + b*g.dw
				s := src[q : q+seg]
				// First in-range column of the segment and the count.
				first := 0
				if oj < 0 {
					first = ceilDiv(-oj, g.sw)
				}
				for e := first; e < seg; e++ {
					x := oj + e*g.sw
					if x >= g.ow {
						break
					}
					drow[x] += s[e]
				}
			}
			q += seg
		}
	}
}

// convDepthwiseF32 is the fast path's depthwise form (one input channel per
// group, fewer output channels per group than a GEMM panel has rows, unit
// stride along W): a GEMM would waste most of each 6-row tile on an M of 1,
// so each output plane is instead KH runs of the matrix-vector kernel
// (gemm.GemvAxpyF32): kernel row a adds sum over kw of w[a, kw] * the padded
// input shifted by (a*DH, kw*DW), over the whole plane on the wide grid
// when the H stride is 1 (one long run; the padded columns past each
// output row are dropped when copying out), else row by row. Each output
// element is the same FMA chain over (kh, kw) as the GEMM paths, then the
// bias. The input is padded as for convF32 (pad, hp, rs, ps: whether, the
// padded height, and the row and plane strides of the source).
func convDepthwiseF32(x, w, bias, out []float32, g convGeom, flip, pad bool, hp, rs, ps int) {
	L := g.oh * g.ow
	kp := g.kh * g.kw
	planes := g.n * g.cout
	nwide := (g.oh-1)*rs + g.ow
	nw := min(planes, pool.Workers(planes*L*kp))
	psz := 0
	if pad {
		psz = g.n * g.cin * ps
	}
	tsz := 0
	if g.sh == 1 {
		tsz = nwide + 16
	}
	wsz := 0
	if flip {
		wsz = g.cout * kp
	}
	buf := getScratch((psz + wsz + nw*tsz + 16) * 4)
	defer putScratch(buf)
	all := as[float32](*buf)
	src := x
	if pad {
		src = all[:psz:psz]
		padPlanes(src, x, g, hp, rs)
	}
	if flip {
		// The forward form of a transposed weight [Cin, Cout/groups, KH, KW]
		// with one input channel per group: taps reversed.
		wf := all[psz : psz+wsz : psz+wsz]
		for oc := 0; oc < g.cout; oc++ {
			for t := 0; t < kp; t++ {
				wf[oc*kp+t] = w[oc*kp+kp-1-t]
			}
		}
		w = wf
	}
	tall := all[psz+wsz:]
	kr := gemvAsmF32
	var next atomic.Int64
	pool.RunShare(nw, func(tid, _ int) {
		var tmp []float32
		if tsz > 0 {
			tmp = tall[tid*tsz : tid*tsz+nwide]
		}
		for {
			u := int(next.Add(1) - 1)
			if u >= planes {
				return
			}
			n, oc := u/g.cout, u%g.cout
			in := src[(n*g.cin+oc/g.coutG)*ps:][:ps]
			wo := w[oc*kp : (oc+1)*kp]
			dst := out[u*L : (u+1)*L]
			var bv float32
			if bias != nil {
				bv = bias[oc]
			}
			if g.sh == 1 {
				for a := 0; a < g.kh; a++ {
					b := in[a*g.dh*rs:]
					_ = b[(g.kw-1)*g.dw+nwide-1]
					kr.axpy(g.kw, &wo[a*g.kw], &b[0], g.dw, &tmp[0], nwide, &gemvMask[8-nwide%8], min(a, 1))
				}
				for r := 0; r < g.oh; r++ {
					d, t := dst[r*g.ow:(r+1)*g.ow], tmp[r*rs:r*rs+g.ow]
					for j, v := range t {
						d[j] = v + bv
					}
				}
				continue
			}
			for r := 0; r < g.oh; r++ {
				d := dst[r*g.ow : (r+1)*g.ow]
				for a := 0; a < g.kh; a++ {
					b := in[(r*g.sh+a*g.dh)*rs:]
					_ = b[(g.kw-1)*g.dw+g.ow-1]
					kr.axpy(g.kw, &wo[a*g.kw], &b[0], g.dw, &d[0], g.ow, &gemvMask[8-g.ow%8], min(a, 1))
				}
				for j := range d {
					d[j] += bv
				}
			}
		}
	})
}

// kRunsLong reports whether the k steps run contiguously in the input for
// 8 or more steps at a time (a weight gradient's kernel rows), which the
// transposing packers take.
func kRunsLong(kOff []int) bool {
	n := min(len(kOff), 8)
	for k := 1; k < n; k++ {
		if kOff[k] != kOff[0]+k {
			return false
		}
	}
	return n == 8
}

// convKOffsets fills kOff[ci*kp + a*kw + b] with the offset, in the padded
// (or phase-split) input of plane size ps and row stride rs, of kernel tap
// (ci, a, b) — phase plane and shift; plain padded input: plane 0, shift
// (a*dh, b*dw) — and returns the smallest and largest offset.
func convKOffsets(kOff []int, g convGeom, kp, ps, rs, hph, wph int) (kmin, kmax int) {
	// Offset of tap (ci, a, b): ci*ps + its row part + its column part
	// (phase plane and shift of each), the divisions done once per row
	// and column rather than per tap (a weight gradient's 28x28 "kernel"
	// over 64 channels has 50176 taps).
	colPart := make([]int, g.kw)
	for b := range colPart {
		rb := b * g.dw
		colPart[b] = rb%g.sw*hph*wph + rb/g.sw
	}
	for a := 0; a < g.kh; a++ {
		ra := a * g.dh
		rowPart := ra%g.sh*g.sw*hph*wph + ra/g.sh*rs
		for ci := 0; ci < g.cinG; ci++ {
			k := kOff[ci*kp+a*g.kw : ci*kp+(a+1)*g.kw]
			base := ci*ps + rowPart
			for b, c := range colPart {
				k[b] = base + c
			}
		}
	}
	kmin, kmax = kOff[0], kOff[0]
	for _, v := range kOff {
		kmin, kmax = min(kmin, v), max(kmax, v)
	}
	return kmin, kmax
}

// convOutRuns appends to segs the runs of a block's columns that are
// contiguous in the output: {first column, length, output offset} for
// each, skipping the columns whose offset is negative (padding).
func convOutRuns(segs [][3]int, oidx []int) [][3]int {
	for j := 0; j < len(oidx); {
		o := oidx[j]
		if o < 0 {
			j++
			continue
		}
		e := j + 1
		for e < len(oidx) && oidx[e] == o+e-j {
			e++
		}
		segs = append(segs, [3]int{j, e - j, o})
		j = e
	}
	return segs
}

// convTile16Z returns the 6x16 tile of convF32 run by the ZMM kernel
// (gemm.F32x6x16sz reading the packed panels: A (k, r) at k*6+r, B (k, c) at
// k*16+c), with asmTileF32's blocking, or nil without AVX-512. Each element
// is the same FMA chain, so the same bits as asmTileF32.
var convTile16Z = sync.OnceValue(func() *gemmTile[float32] {
	if smallKernF32Z == nil || asmTileF32 == nil {
		return nil
	}
	t := *asmTileF32
	k := smallKernF32Z
	t.kern = func(kc int, a, b, c *float32, ldc int, _ *float32, load int) {
		k(kc, a, 1, 6, b, 16, c, ldc, load)
	}
	return &t
})
