package cpu

// Data movement of the GEMM drivers in vector loops: the panel copies of
// the blocked driver's packing (gemm_blis.go) and the transposes of the
// streaming x·Wᵀ path (gemm_stream.go). The generic packing
// (packPlainAt) copies a 16-wide B panel step with one copy call and a
// 6-wide one with another: a call per 64 or 24 bytes, which made packing
// B a third of a 64x512x256 product. Each function here has a portable
// loop, and the amd64 build sets the assembly (internal/gemm/pack_amd64.s).

import "github.com/gotpu/gotpu/dtype"

var (
	// packN16Asm and packN6Asm copy np panels of w = 16 or 6 columns:
	// dst[q*dps + p*w + j] = src[p*lds + q*w + j] for p < kc, q < np, j < w.
	packN16Asm, packN6Asm func(dst, src *float32, lds, kc, np, dps int)
	// packNZAsm copies np panels of w = 16*nv columns with ZMM moves
	// (level avx512): dst[q*dps + p*w + j] = src[p*lds + q*w + j].
	packNZAsm func(dst, src *float32, lds, kc, np, dps, nv int)
	// packT8Asm transposes eight rows into lanes 0..7 of a 16-wide panel:
	// dst[p*16+r] = src[r*lds+p] for r < 8, p < n (n a multiple of 8).
	packT8Asm func(dst, src *float32, lds, n int)
	// packT8WAsm is packT8Asm into a w-wide panel: dst[p*w+r].
	packT8WAsm func(dst, src *float32, lds, n, w int)
	// storeT6Asm writes a six-row tile transposed:
	// out[i*ldo+r] = t[r*ldt+i] for r < 6, i < n (n a multiple of 8).
	storeT6Asm func(out *float32, ldo int, t *float32, ldt, n int)
	// t8x8Asm transposes one 8x8 block: dst[c*ldd+r] = src[r*lds+c].
	t8x8Asm func(dst *float32, ldd int, src *float32, lds int)
	// packT8WBF16Asm is packT8WAsm for bf16 rows, widened to f32.
	packT8WBF16Asm func(dst *float32, src *uint16, lds, n, w int)
	// packA6BF16Asm interleaves six bf16 rows lda apart, widened:
	// dst[p*6+r] = f32(src[r*lda+p]) for p < n (n a multiple of 8), and
	// writes dst[n*6] and dst[n*6+1] (the caller's, overwritten after).
	packA6BF16Asm func(dst *float32, src *uint16, lda, n int)
)

// packBF16Panel packs one panel of packBF16 with the vector widening
// transposes where they apply: rows (at most w) lds >= 1 elements apart,
// each contiguous along its kc k steps from src[r*lds]; dst is the w*kc
// panel. It reports false, having done nothing, where they do not (a
// panel under eight rows, other than a full six-row one; fewer than nine
// steps; no AVX2).
func packBF16Panel(ks *kset, dst []float32, src []dtype.BFloat16, lds, rows, kc, w int) bool {
	if !ks.atLeast(LevelAVX2) || packT8WBF16Asm == nil || kc < 9 || lds < 1 {
		return false
	}
	_ = dst[kc*w-1]
	_ = src[(rows-1)*lds+kc-1]
	s16 := as16(src)
	switch {
	case w == 6 && rows == 6:
		// The assembly writes two values past each block of eight steps:
		// keep the last step (at least) for the loop below.
		done := (kc - 1) / 8 * 8
		packA6BF16Asm(&dst[0], &s16[0], lds, done)
		for p := done; p < kc; p++ {
			out := dst[p*6 : p*6+6 : p*6+6]
			for r := range out {
				out[r] = src[r*lds+p].F32()
			}
		}
		return true
	case w >= 8 && rows >= 8:
		// Blocks of eight rows (the last overlapping the one before when
		// rows is not a multiple of eight) by eight steps; the last steps
		// and the missing rows by loops.
		vn := kc &^ 7
		for r := 0; r < rows; r += 8 {
			r = min(r, rows-8)
			packT8WBF16Asm(&dst[r], &s16[r*lds], lds, vn, w)
		}
		for p := 0; p < kc; p++ {
			clear(dst[p*w+rows : p*w+w])
		}
		for r := 0; r < rows; r++ {
			in := src[r*lds+vn : r*lds+kc]
			for q, v := range in {
				dst[(vn+q)*w+r] = v.F32()
			}
		}
		return true
	}
	return false
}

// gemmPackN copies np panels of w columns (w 6 or a multiple of 16) of a matrix whose
// rows are lds >= 0 elements apart into p-major panels dps elements apart:
// dst[q*dps + p*w + j] = src[p*lds + q*w + j] for p < kc, q < np, j < w.
func gemmPackN(ks *kset, dst, src []float32, lds, kc, np, w, dps int) {
	if kc <= 0 || np <= 0 {
		return
	}
	_ = dst[(np-1)*dps+kc*w-1]
	_ = src[(kc-1)*lds+np*w-1]
	if w%16 == 0 && w > 16 && packNZAsm != nil && ks.atLeast(LevelAVX512) {
		packNZAsm(&dst[0], &src[0], lds, kc, np, dps, w/16)
		return
	}
	if ks.atLeast(LevelAVX2) {
		switch {
		case w == 16 && packN16Asm != nil:
			packN16Asm(&dst[0], &src[0], lds, kc, np, dps)
			return
		case w == 6 && packN6Asm != nil:
			packN6Asm(&dst[0], &src[0], lds, kc, np, dps)
			return
		}
	}
	for p := 0; p < kc; p++ {
		row := src[p*lds : p*lds+np*w]
		for q := 0; q < np; q++ {
			copy(dst[q*dps+p*w:q*dps+p*w+w], row[q*w:q*w+w])
		}
	}
}

// packSideFast is packSide for the f32 layouts the vector copies cover,
// a plain single-pass f32 side: packed rows adjacent in memory (B's
// columns, or a transposed A's rows) with a uniform non-negative stride
// between k steps, in panels of 6, 8 or more; or, in panels of 8 or more
// (the ZMM tiles' 14-row A panels, or 16 and more columns of B), rows evenly
// spaced and each contiguous along k (the W of x·Wᵀ as B). It reports
// false, having done nothing, for any other side.
func packSideFast[S any, T gemmNum](lv *kset, dst []T, s *gemmSide[S, T], b, r0, rows, p0, kc, w int) bool {
	d, ok1 := any(dst).([]float32)
	src, ok2 := any(s.src).([]float32)
	if !ok1 || !ok2 || !s.plain || s.round != nil || len(s.conv) != 1 || (w%16 != 0 && w != 6 && w < 8) ||
		rows < 2 || kc < 1 || p0+kc > len(s.k) {
		return false
	}
	ks := s.k[p0 : p0+kc]
	if !adjacent(s.row[r0 : r0+rows]) {
		// Rows contiguous along k, evenly spaced (B = Wᵀ of x·Wᵀ): the
		// 16-row transpose, panel by panel.
		lr, ok := uniformStride(s.row[r0 : r0+rows])
		if w < 8 || !ok || lr <= 0 || kc > 1 && !adjacent(ks) {
			return false
		}
		o := s.batchOff(b) + s.row[r0] + ks[0]
		for q := 0; q*w < rows; q++ {
			gemmPackTW(lv, d[q*w*kc:(q+1)*w*kc], src[o+q*w*lr:], lr, min(w, rows-q*w), kc, w)
		}
		return true
	}
	lds, ok := uniformStride(ks)
	if !ok || lds < 0 {
		return false
	}
	o := s.batchOff(b) + s.row[r0] + ks[0]
	full := rows / w
	gemmPackN(lv, d, src[o:], lds, kc, full, w, w*kc)
	if rem := rows - full*w; rem > 0 {
		// The last partial panel, zero-padded.
		panel := d[full*w*kc : (full+1)*w*kc]
		in := src[o+full*w:]
		for p := 0; p < kc; p++ {
			out := panel[p*w : p*w+w]
			copy(out, in[p*lds:p*lds+rem])
			clear(out[rem:])
		}
	}
	return true
}

// gemmPackT16 transposes rows (at most 16) rows lds elements apart into a
// 16-wide panel, zero-padding the missing rows: dst[p*16+r] =
// src[r*lds+p] for r < rows and 0 for rows <= r < 16, p < n.
func gemmPackT16(ks *kset, dst, src []float32, lds, rows, n int) {
	gemmPackTW(ks, dst, src, lds, rows, n, 16)
}

// gemmPackTW is gemmPackT16 into a w-wide panel (w >= 8, rows at most
// w): dst[p*w+r] = src[r*lds+p] for r < rows, 0 for rows <= r < w.
func gemmPackTW(ks *kset, dst, src []float32, lds, rows, n, w int) {
	if n <= 0 {
		return
	}
	_ = dst[n*w-1]
	_ = src[(rows-1)*lds+n-1]
	// Blocks of eight rows by eight steps go to the vector transpose; the
	// rest (the rows of a panel under eight, the last steps) to the loop.
	// A row count that is not a multiple of eight ends with a block of the
	// last eight rows, overlapping the one before it (the same values are
	// written twice), so that no store reaches past row rows-1.
	vr, vn := 0, 0
	if ks.atLeast(LevelAVX2) && n >= 8 && rows >= 8 && (w == 16 && packT8Asm != nil || packT8WAsm != nil) {
		vr, vn = rows, n&^7
		for r := 0; r < rows; r += 8 {
			r = min(r, rows-8)
			if w == 16 && packT8Asm != nil {
				packT8Asm(&dst[r], &src[r*lds], lds, vn)
			} else {
				packT8WAsm(&dst[r], &src[r*lds], lds, vn, w)
			}
		}
	}
	for p := 0; p < n; p++ {
		clear(dst[p*w+rows : p*w+w])
	}
	// Sixteen steps (a cache line of each row) at a time: rows a power of
	// two apart share cache sets.
	packT16Loop(dst, src, lds, vr, rows, 0, n, w)
	packT16Loop(dst, src, lds, 0, vr, vn, n, w)
}

// packT16Loop is gemmPackTW's loop for rows r0..r1, steps s0..s1.
func packT16Loop(dst, src []float32, lds, r0, r1, s0, s1, w int) {
	for b := s0; b < s1; b += 16 {
		e := min(b+16, s1)
		for r := r0; r < r1; r++ {
			in := src[r*lds+b : r*lds+e]
			out := dst[b*w+r:]
			for q, v := range in {
				out[q*w] = v
			}
		}
	}
}

// gemmStoreT6 writes the first h (at most 6) rows of a tile transposed:
// out[i*ldo+r] = t[r*ldt+i] for r < h, i < n.
func gemmStoreT6(ks *kset, out []float32, ldo int, t []float32, ldt, h, n int) {
	if n <= 0 || h <= 0 {
		return
	}
	_ = out[(n-1)*ldo+h-1]
	_ = t[(h-1)*ldt+n-1]
	done := 0
	if h == 6 && storeT6Asm != nil && ks.atLeast(LevelAVX2) && n >= 8 {
		done = n &^ 7
		storeT6Asm(&out[0], ldo, &t[0], ldt, done)
	}
	for i := done; i < n; i++ {
		row := out[i*ldo : i*ldo+h]
		for r := range row {
			row[r] = t[r*ldt+i]
		}
	}
}

// gemmTranspose writes the rows x cols block at src (rows lds apart)
// transposed into dst (rows ldd apart): dst[c*ldd+r] = src[r*lds+c] for
// r < rows, c < cols. Eight by eight blocks go to the vector transpose,
// the edges to a loop.
func gemmTranspose(ks *kset, dst []float32, ldd int, src []float32, lds, rows, cols int) {
	if rows <= 0 || cols <= 0 {
		return
	}
	_ = dst[(cols-1)*ldd+rows-1]
	_ = src[(rows-1)*lds+cols-1]
	vr, vc := 0, 0
	if t8x8Asm != nil && ks.atLeast(LevelAVX2) {
		vr, vc = rows&^7, cols&^7
		for r := 0; r < vr; r += 8 {
			for c := 0; c < vc; c += 8 {
				t8x8Asm(&dst[c*ldd+r], ldd, &src[r*lds+c], lds)
			}
		}
	}
	// The right edge (columns vc.., all rows) and the bottom edge (rows
	// vr.., columns ..vc).
	for r := 0; r < rows; r++ {
		c0 := vc
		if r >= vr {
			c0 = 0
		}
		in := src[r*lds+c0 : r*lds+cols]
		for q, v := range in {
			dst[(c0+q)*ldd+r] = v
		}
	}
}
