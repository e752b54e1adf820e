package cpu

import "math"

// 2x2, stride-2 max pooling (every window inside the input), the pooling
// of a LeNet- or VGG-style CNN: the generic plane loops check bounds and
// walk the window per output; these read the two input rows of an output
// row directly. Same comparisons in the same window order (row-major: a
// larger value or a NaN replaces the running maximum), so the same bits.

// pool2x2 reports whether a window over planes of H x W with output OH x
// OW is a 2x2 stride-2 window, undilated, unpadded at the start, with every
// window inside the input.
func pool2x2(kh, kw, sh, sw, dh, dw, ph, pw, h, w, oh, ow int) bool {
	return kh == 2 && kw == 2 && sh == 2 && sw == 2 && dh == 1 && dw == 1 && ph == 0 && pw == 0 && 2*oh <= h && 2*ow <= w
}

// maxPool2x2 sets out (planes of oh x ow) to the 2x2 stride-2 maxima of
// src (planes of h x w); as reduceWindowPlanes, each result passes through
// float64 (which quiets a signaling NaN).
func maxPool2x2[T floatT](ks *kset, src, out []T, planes, h, w, oh, ow int) {
	if s, ok := any(src).([]float32); ok {
		maxPool2x2F32(ks, s, any(out).([]float32), planes, h, w, oh, ow)
		return
	}
	parallelFor(planes, planes*h*w, func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			in := src[pl*h*w : (pl+1)*h*w]
			o := out[pl*oh*ow : (pl+1)*oh*ow]
			for i := 0; i < oh; i++ {
				r0, r1 := in[2*i*w:2*i*w+2*ow], in[(2*i+1)*w:(2*i+1)*w+2*ow]
				orow := o[i*ow : (i+1)*ow]
				for j := range orow {
					best := r0[2*j]
					if v := r0[2*j+1]; v > best || v != v {
						best = v
					}
					if v := r1[2*j]; v > best || v != v {
						best = v
					}
					if v := r1[2*j+1]; v > best || v != v {
						best = v
					}
					orow[j] = T(float64(best))
				}
			}
		}
	})
}

// maxPool2x2Indices is maxPool2x2 for max_pool2d_with_indices: the maximum
// and its flat index h*W+w in the plane (the first maximum in window order;
// a NaN replaces it).
func maxPool2x2Indices[T floatT](ks *kset, src, vals []T, idxs []int64, planes, h, w, oh, ow int) {
	if s, ok := any(src).([]float32); ok && h*w <= math.MaxInt32 {
		maxPool2x2IndicesF32(ks, s, any(vals).([]float32), idxs, planes, h, w, oh, ow)
		return
	}
	parallelFor(planes, planes*h*w, func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			in := src[pl*h*w : (pl+1)*h*w]
			vo, io := vals[pl*oh*ow:(pl+1)*oh*ow], idxs[pl*oh*ow:(pl+1)*oh*ow]
			for i := 0; i < oh; i++ {
				b0, b1 := 2*i*w, (2*i+1)*w
				r0, r1 := in[b0:b0+2*ow], in[b1:b1+2*ow]
				vr, ir := vo[i*ow:(i+1)*ow], io[i*ow:(i+1)*ow]
				for j := range vr {
					best, bi := r0[2*j], b0+2*j
					if v := r0[2*j+1]; v > best || v != v {
						best, bi = v, b0+2*j+1
					}
					if v := r1[2*j]; v > best || v != v {
						best, bi = v, b1+2*j
					}
					if v := r1[2*j+1]; v > best || v != v {
						best, bi = v, b1+2*j+1
					}
					vr[j], ir[j] = best, int64(bi)
				}
			}
		}
	})
}

// The f32 loops select without branches: a max pool's comparisons on
// activations are as good as random, and their mispredictions cost several
// times the arithmetic. Each step is the scalar loop's test (v > best or v
// is NaN), turned into a mask that picks v's or best's bits (and index).

// bmask returns all ones when c holds, else zero (compiled without a
// branch).
func bmask(c bool) uint32 {
	var x uint32
	if c {
		x = 1
	}
	return -x
}

// pick32 returns a where m is all ones, b where it is zero.
func pick32(m, a, b uint32) uint32 { return b ^ ((a ^ b) & m) }

// pool2x2RowAsm and pool2x2IdxRowAsm pool up to 16 outputs of one row at
// level avx512 (pool2x2_amd64.s; nil elsewhere).
var (
	pool2x2RowAsm    func(r0, r1 *float32, vals *float32, idx *int64, n int)
	pool2x2IdxRowAsm func(r0, r1 *float32, vals *float32, idx *int64, n int, i0, i1 int)
)

// maxPool2x2F32 is maxPool2x2 on f32 without branches; a NaN result gets
// its quiet bit set, as maxPool2x2's round trip through float64 does.
func maxPool2x2F32(ks *kset, src, out []float32, planes, h, w, oh, ow int) {
	parallelFor(planes, planes*h*w, func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			in := src[pl*h*w : (pl+1)*h*w]
			o := out[pl*oh*ow : (pl+1)*oh*ow]
			for i := 0; i < oh; i++ {
				r0, r1 := in[2*i*w:2*i*w+2*ow], in[(2*i+1)*w:(2*i+1)*w+2*ow]
				orow := o[i*ow : (i+1)*ow]
				if pool2x2RowAsm != nil && ks.atLeast(LevelAVX512) && ow > 0 {
					for j := 0; j < ow; j += 16 {
						pool2x2RowAsm(&r0[2*j], &r1[2*j], &orow[j], nil, min(16, ow-j))
					}
					continue
				}
				if pool2x2RowAsm != nil && ks.atLeast(LevelAVX512) && ow > 0 {
					for j := 0; j < ow; j += 16 {
						pool2x2RowAsm(&r0[2*j], &r1[2*j], &orow[j], nil, min(16, ow-j))
					}
					continue
				}
				for j := range orow {
					a, b, c, d := r0[2*j], r0[2*j+1], r1[2*j], r1[2*j+1]
					best := a
					m := bmask(b > best) | bmask(b != b)
					best = math.Float32frombits(pick32(m, math.Float32bits(b), math.Float32bits(best)))
					m = bmask(c > best) | bmask(c != c)
					best = math.Float32frombits(pick32(m, math.Float32bits(c), math.Float32bits(best)))
					m = bmask(d > best) | bmask(d != d)
					bits := pick32(m, math.Float32bits(d), math.Float32bits(best))
					r := math.Float32frombits(bits)
					orow[j] = math.Float32frombits(bits | 0x00400000&bmask(r != r))
				}
			}
		}
	})
}

// maxPool2x2IndicesF32 is maxPool2x2Indices on f32 without branches.
func maxPool2x2IndicesF32(ks *kset, src, vals []float32, idxs []int64, planes, h, w, oh, ow int) {
	parallelFor(planes, planes*h*w, func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			in := src[pl*h*w : (pl+1)*h*w]
			vo, io := vals[pl*oh*ow:(pl+1)*oh*ow], idxs[pl*oh*ow:(pl+1)*oh*ow]
			for i := 0; i < oh; i++ {
				b0, b1 := 2*i*w, (2*i+1)*w
				r0, r1 := in[b0:b0+2*ow], in[b1:b1+2*ow]
				vr, ir := vo[i*ow:(i+1)*ow], io[i*ow:(i+1)*ow]
				if pool2x2IdxRowAsm != nil && ks.atLeast(LevelAVX512) && ow > 0 {
					for j := 0; j < ow; j += 16 {
						pool2x2IdxRowAsm(&r0[2*j], &r1[2*j], &vr[j], &ir[j], min(16, ow-j), b0+2*j, b1+2*j)
					}
					continue
				}
				for j := range vr {
					a, b, c, d := r0[2*j], r0[2*j+1], r1[2*j], r1[2*j+1]
					best, bi := a, uint32(b0+2*j)
					m := bmask(b > best) | bmask(b != b)
					best = math.Float32frombits(pick32(m, math.Float32bits(b), math.Float32bits(best)))
					bi = pick32(m, uint32(b0+2*j+1), bi)
					m = bmask(c > best) | bmask(c != c)
					best = math.Float32frombits(pick32(m, math.Float32bits(c), math.Float32bits(best)))
					bi = pick32(m, uint32(b1+2*j), bi)
					m = bmask(d > best) | bmask(d != d)
					best = math.Float32frombits(pick32(m, math.Float32bits(d), math.Float32bits(best)))
					bi = pick32(m, uint32(b1+2*j+1), bi)
					vr[j], ir[j] = best, int64(bi)
				}
			}
		}
	})
}
