package quant

import (
	"encoding/binary"
	"math"
)

// The quantizers below follow ggml's quantize_row_*_ref (ggml-quants.c)
// operation by operation in float32. A product that feeds an addition is
// wrapped in float32(...) so that no compiler fuses it into a multiply-add
// (see gguf/dequant.go); C's int-to-float conversions are explicit.

func absf(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

func sqrtf(v float32) float32 { return float32(math.Sqrt(float64(v))) }

// roundf is C's roundf: halves away from zero.
func roundf(v float32) float32 { return float32(math.Round(float64(v))) }

// nearestInt is ggml's nearest_int: round half to even through the float
// mantissa of v + 1.5*2^23 (valid for |v| <= 4194303).
func nearestInt(v float32) int {
	i := int32(math.Float32bits(float32(v) + 12582912))
	return int(i&0x007fffff) - 0x00400000
}

// absMax returns the element of largest magnitude (the first one on ties)
// and its magnitude, as ggml's "if (amax < fabsf(v))" loops do.
func absMax(x []float32) (max, amax float32) {
	for _, v := range x {
		if a := absf(v); amax < a {
			amax, max = a, v
		}
	}
	return max, amax
}

func inv(d float32) float32 {
	if d != 0 {
		return 1 / d
	}
	return 0
}

// Q4_0: d = max/-8, q = min(15, trunc(x/d + 8.5)).
func quantQ4_0(x []float32, b []byte) {
	max, _ := absMax(x)
	d := max / -8
	id := inv(d)
	put16(b, f32to16(d))
	qs := b[2:18]
	for j := range 16 {
		x0 := float32(x[j] * id)
		x1 := float32(x[16+j] * id)
		q0 := min(15, int8(x0+8.5))
		q1 := min(15, int8(x1+8.5))
		qs[j] = uint8(q0) | uint8(q1)<<4
	}
}

func minMax(x []float32) (mn, mx float32) {
	mn, mx = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		if v < mn {
			mn = v
		}
		if v > mx {
			mx = v
		}
	}
	return mn, mx
}

// Q4_1: d = (max-min)/15, m = min, q = min(15, trunc((x-min)/d + 0.5)).
func quantQ4_1(x []float32, b []byte) {
	mn, mx := minMax(x)
	d := (mx - mn) / 15
	id := inv(d)
	put16(b, f32to16(d))
	put16(b[2:], f32to16(mn))
	qs := b[4:20]
	for j := range 16 {
		x0 := float32((x[j] - mn) * id)
		x1 := float32((x[16+j] - mn) * id)
		q0 := min(15, int8(x0+0.5))
		q1 := min(15, int8(x1+0.5))
		qs[j] = uint8(q0) | uint8(q1)<<4
	}
}

// Q5_0: d = max/-16, q = min(31, trunc(x/d + 16.5)), fifth bits in qh.
func quantQ5_0(x []float32, b []byte) {
	max, _ := absMax(x)
	d := max / -16
	id := inv(d)
	put16(b, f32to16(d))
	var qh uint32
	qs := b[6:22]
	for j := range 16 {
		x0 := float32(x[j] * id)
		x1 := float32(x[16+j] * id)
		q0 := uint8(min(31, int8(x0+16.5)))
		q1 := uint8(min(31, int8(x1+16.5)))
		qs[j] = q0&0xf | (q1&0xf)<<4
		qh |= uint32(q0&0x10) >> 4 << j
		qh |= uint32(q1&0x10) >> 4 << (j + 16)
	}
	binary.LittleEndian.PutUint32(b[2:], qh)
}

// Q5_1: d = (max-min)/31, m = min, q = trunc((x-min)/d + 0.5).
func quantQ5_1(x []float32, b []byte) {
	mn, mx := minMax(x)
	d := (mx - mn) / 31
	id := inv(d)
	put16(b, f32to16(d))
	put16(b[2:], f32to16(mn))
	var qh uint32
	qs := b[8:24]
	for j := range 16 {
		x0 := float32((x[j] - mn) * id)
		x1 := float32((x[16+j] - mn) * id)
		q0 := uint8(x0 + 0.5)
		q1 := uint8(x1 + 0.5)
		qs[j] = q0&0xf | (q1&0xf)<<4
		qh |= uint32(q0&0x10) >> 4 << j
		qh |= uint32(q1&0x10) >> 4 << (j + 16)
	}
	binary.LittleEndian.PutUint32(b[4:], qh)
}

// amaxOf is the largest |x[i]| (NaN when one is NaN). It compares the
// magnitudes' bits as integers, which order like the floats (a NaN's bits
// above +Inf's), without float max's NaN branches: activation quantization
// runs it on every row of every quantized matmul.
func amaxOf(x []float32) float32 {
	var m uint32
	for _, v := range x {
		m = max(m, math.Float32bits(v)&^(1<<31))
	}
	return math.Float32frombits(m)
}

// roundQ8 is int8(roundf(v)) for |v| <= 127.5, as the Q8 quantizers use
// it: float64(v) ± 0.5 is exact for a float32 v, so truncating it rounds
// half away from zero as roundf does, without math.Round's bit work.
func roundQ8(v float32) int8 {
	f := float64(v)
	// Copysign rather than a branch: activations' signs are random, and a
	// mispredicted branch per value cost more than math.Round.
	return int8(int32(f + math.Copysign(0.5, f)))
}

// Q8_0: d = amax/127, q = roundf(x/d).
func quantQ8_0(x []float32, b []byte) {
	d := amaxOf(x) / 127
	id := inv(d)
	put16(b, f32to16(d))
	for j, v := range x {
		b[2+j] = uint8(roundQ8(v * id))
	}
}

// Q8_1: Q8_0 plus s = d*sum(q) (in half precision).
func quantQ8_1(x []float32, b []byte) {
	d := amaxOf(x) / 127
	id := inv(d)
	put16(b, f32to16(d))
	sum := 0
	for j, v := range x {
		q := roundQ8(v * id)
		b[4+j] = uint8(q)
		sum += int(q)
	}
	put16(b[2:], f32to16(float32(sum)*d))
}

// Q8_K: {f32 d; i8 qs[256]; i16 bsums[16]}, q = min(127, nearest(-127/max*x)).
func quantQ8K(x []float32, b []byte) {
	max, amax := absMax(x)
	if amax == 0 {
		clear(b)
		return
	}
	iscale := -127 / max
	qs := b[4 : 4+qkK]
	for j, v := range x {
		qs[j] = uint8(int8(min(127, nearestInt(iscale*v))))
	}
	for j := range 16 {
		sum := 0
		for _, q := range qs[16*j : 16*j+16] {
			sum += int(int8(q))
		}
		binary.LittleEndian.PutUint16(b[4+qkK+2*j:], uint16(int16(sum)))
	}
	binary.LittleEndian.PutUint32(b, math.Float32bits(1/iscale))
}

// makeQKX2 is ggml's make_qkx2_quants: a weighted least-squares fit of an
// affine scale and min for nmax+1 levels, searched over nstep+1 scales.
// It returns the scale and -min.
func makeQKX2(nmax int, x, weights []float32, L, laux []uint8, rmin, rdelta float32, nstep int) (scale, theMin float32) {
	n := len(x)
	mn, mx := x[0], x[0]
	sumW := weights[0]
	sumX := sumW * x[0]
	for i := 1; i < n; i++ {
		if x[i] < mn {
			mn = x[i]
		}
		if x[i] > mx {
			mx = x[i]
		}
		w := weights[i]
		sumW += w
		sumX += float32(w * x[i])
	}
	if mn > 0 {
		mn = 0
	}
	if mx == mn {
		for i := range n {
			L[i] = 0
		}
		return 0, -mn
	}
	fnmax := float32(nmax)
	iscale := fnmax / (mx - mn)
	scale = 1 / iscale
	var bestError float32
	for i := range n {
		l := nearestInt(iscale * (x[i] - mn))
		L[i] = uint8(max(0, min(nmax, l)))
		diff := float32(scale*float32(L[i])) + mn - x[i]
		diff = diff * diff
		bestError += float32(weights[i] * diff)
	}
	if nstep < 1 {
		return scale, -mn
	}
	for is := 0; is <= nstep; is++ {
		iscale = (rmin + float32(rdelta*float32(is)) + fnmax) / (mx - mn)
		var sumL, sumL2, sumXL float32
		for i := range n {
			l := nearestInt(iscale * (x[i] - mn))
			l = max(0, min(nmax, l))
			laux[i] = uint8(l)
			w := weights[i]
			fl := float32(l)
			sumL += float32(w * fl)
			sumL2 += float32(float32(w*fl) * fl)
			sumXL += float32(float32(w*fl) * x[i])
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D > 0 {
			thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
			thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
			if thisMin > 0 {
				thisMin = 0
				thisScale = sumXL / sumL2
			}
			var curError float32
			for i := range n {
				diff := float32(thisScale*float32(laux[i])) + thisMin - x[i]
				diff = diff * diff
				curError += float32(weights[i] * diff)
			}
			if curError < bestError {
				copy(L[:n], laux[:n])
				bestError = curError
				scale = thisScale
				mn = thisMin
			}
		}
	}
	return scale, -mn
}

// scaleMinK4 unpacks the j-th 6-bit scale and min of a Q4_K/Q5_K block.
func scaleMinK4(j int, s []byte) (sc, m uint8) {
	s = s[:12]
	if j < 4 {
		return s[j] & 63, s[j+4] & 63
	}
	return s[j+4]&0xf | (s[j-4]>>6)<<4, s[j+4]>>4 | (s[j]>>6)<<4
}

// quantK45 is the shared body of quantize_row_q4_K_ref (nmax 15) and
// quantize_row_q5_K_ref (nmax 31): it fills the block header (d, dmin,
// scales at b[0:16]) and returns the 256 levels in L.
func quantK45(x []float32, b []byte, nmax int, rmin float32, nstep int, L *[qkK]uint8) {
	var laux [32]uint8
	var weights [32]float32
	var mins, scales [8]float32
	var maxScale, maxMin float32
	for j := range 8 {
		xj := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xj {
			sumX2 += float32(v * v)
		}
		avX := sqrtf(sumX2 / 32)
		for l, v := range xj {
			weights[l] = avX + absf(v)
		}
		scales[j], mins[j] = makeQKX2(nmax, xj, weights[:], L[32*j:32*j+32], laux[:], rmin, 0.1, nstep)
		if scales[j] > maxScale {
			maxScale = scales[j]
		}
		if mins[j] > maxMin {
			maxMin = mins[j]
		}
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	sc := b[4:16]
	clear(sc)
	for j := range 8 {
		ls := min(63, uint8(nearestInt(invScale*scales[j])))
		lm := min(63, uint8(nearestInt(invMin*mins[j])))
		if j < 4 {
			sc[j] = ls
			sc[j+4] = lm
		} else {
			sc[j+4] = ls&0xf | (lm&0xf)<<4
			sc[j-4] |= (ls >> 4) << 6
			sc[j] |= (lm >> 4) << 6
		}
	}
	hd, hm := f32to16(maxScale/63), f32to16(maxMin/63)
	put16(b, hd)
	put16(b[2:], hm)
	d0, m0 := f16to32(hd), f16to32(hm)
	for j := range 8 {
		s, m := scaleMinK4(j, sc)
		d := d0 * float32(s)
		if d == 0 {
			continue
		}
		dm := float32(m0 * float32(m))
		for ii := range 32 {
			l := nearestInt((x[32*j+ii] + dm) / d)
			L[32*j+ii] = uint8(max(0, min(nmax, l)))
		}
	}
}

// Q4_K: {f16 d, dmin; u8 scales[12]; u8 qs[128]}.
func quantQ4K(x []float32, b []byte) {
	var L [qkK]uint8
	quantK45(x, b, 15, -1, 20, &L)
	q := b[16:144]
	for j := 0; j < qkK; j += 64 {
		for l := range 32 {
			q[l] = L[j+l] | L[j+l+32]<<4
		}
		q = q[32:]
	}
}

// Q5_K: {f16 d, dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}.
func quantQ5K(x []float32, b []byte) {
	var L [qkK]uint8
	quantK45(x, b, 31, -0.5, 15, &L)
	qh := b[16:48]
	ql := b[48:176]
	clear(qh)
	m1, m2 := uint8(1), uint8(2)
	for n := 0; n < qkK; n += 64 {
		for j := range 32 {
			l1, l2 := L[n+j], L[n+j+32]
			if l1 > 15 {
				l1 -= 16
				qh[j] |= m1
			}
			if l2 > 15 {
				l2 -= 16
				qh[j] |= m2
			}
			ql[j] = l1 | l2<<4
		}
		m1 <<= 2
		m2 <<= 2
		ql = ql[32:]
	}
}

// makeQX is ggml's make_qx_quants with rmse_type 1 and no quant weights
// (w = x²), the one Q6_K uses: levels in L as l+nmax, the scale returned.
func makeQX(nmax int, x []float32, L []int8) float32 {
	max, amax := absMax(x)
	if amax < 1e-15 {
		for i := range x {
			L[i] = 0
		}
		return 0
	}
	fnmax := float32(nmax)
	iscale := -fnmax / max
	var sumLX, sumL2 float32
	for i, v := range x {
		l := nearestInt(iscale * v)
		l = max2(-nmax, min(nmax-1, l))
		L[i] = int8(l + nmax)
		w := v * v
		fl := float32(l)
		sumLX += float32(float32(w*v) * fl)
		sumL2 += float32(float32(w*fl) * fl)
	}
	var scale float32
	if sumL2 != 0 {
		scale = sumLX / sumL2
	}
	best := scale * sumLX
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(fnmax + float32(0.1*float32(is))) / max
		sumLX, sumL2 = 0, 0
		for _, v := range x {
			l := nearestInt(iscale * v)
			l = max2(-nmax, min(nmax-1, l))
			w := v * v
			fl := float32(l)
			sumLX += float32(float32(w*v) * fl)
			sumL2 += float32(float32(w*fl) * fl)
		}
		if sumL2 > 0 && float32(sumLX*sumLX) > float32(best*sumL2) {
			for i, v := range x {
				l := nearestInt(iscale * v)
				L[i] = int8(nmax + max2(-nmax, min(nmax-1, l)))
			}
			scale = sumLX / sumL2
			best = scale * sumLX
		}
	}
	return scale
}

func max2(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// Q6_K: {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}.
func quantQ6K(x []float32, b []byte) {
	var L [qkK]int8
	var scales [16]float32
	var maxScale, maxAbsScale float32
	for ib := range 16 {
		s := makeQX(32, x[16*ib:16*ib+16], L[16*ib:16*ib+16])
		scales[ib] = s
		if a := absf(s); a > maxAbsScale {
			maxAbsScale, maxScale = a, s
		}
	}
	if maxAbsScale < 1e-15 {
		clear(b)
		return
	}
	iscale := -128 / maxScale
	hd := f32to16(1 / iscale)
	put16(b[208:], hd)
	sc := b[192:208]
	for ib := range 16 {
		sc[ib] = uint8(int8(min(127, nearestInt(iscale*scales[ib]))))
	}
	d0 := f16to32(hd)
	for j := range 16 {
		d := d0 * float32(int8(sc[j]))
		if d == 0 {
			continue
		}
		for ii := range 16 {
			l := nearestInt(x[16*j+ii] / d)
			L[16*j+ii] = int8(max2(-32, min(31, l)) + 32)
		}
	}
	ql := b[0:128]
	qh := b[128:192]
	for j := 0; j < qkK; j += 128 {
		for l := range 32 {
			a, c, e, f := uint8(L[j+l]), uint8(L[j+l+32]), uint8(L[j+l+64]), uint8(L[j+l+96])
			ql[l] = a&0xf | (e&0xf)<<4
			ql[l+32] = c&0xf | (f&0xf)<<4
			qh[l] = a>>4 | (c>>4)<<2 | (e>>4)<<4 | (f>>4)<<6
		}
		ql = ql[64:]
		qh = qh[32:]
	}
}
