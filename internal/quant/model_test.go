package quant

import (
	"encoding/binary"
	"math"
	"math/big"
)

// An exact model of ggml's generic vec_dot (ggml-cpu/quants.c), written
// against the raw ggml blocks of both operands (the activation row quantized
// with QuantizeRow to the partner type), independently of the package's
// unpacked activations and its kernels. It keeps the C code's structure:
// int accumulators, the K types' int8 aux, int16 products, eight int32
// lanes and the utmp/kmask scale unpacking.

func mf16(b []byte) float32 { return f16to32(binary.LittleEndian.Uint16(b)) }

// fma32 is a float32 fused multiply-add, a*b+c rounded once (exactly:
// the float64 product of two float32 is exact and big.Float adds without
// rounding).
func fma32(a, b, c float32) float32 {
	p := new(big.Float).SetPrec(256).SetFloat64(float64(a) * float64(b))
	p.Add(p, new(big.Float).SetFloat64(float64(c)))
	f, _ := p.SetPrec(24).Float32()
	return f
}

// modelDot is ggml's generic vec_dot of weight row w with the activation
// blocks y. With fused, the float32 steps that the libggml-cpu build of the
// golden data contracts into fused multiply-adds (Q4_1 and Q5_1's
// "d*sumi + m*s", the K types' "sums[l] += d*aux32[l]" and "sumf -=
// dmin*sumi") are fused as there; without, every operation rounds (the C
// source's semantics, and this package's).
func modelDot(t Type, w, y []byte, k int, fused bool) float32 {
	var sumf float32
	switch t {
	case Q4_0, Q4_1, Q5_0, Q5_1, Q8_0:
		nb := k / 32
		wts, yts := t.TypeSize(), 34
		if t == Q4_1 || t == Q5_1 {
			yts = 36
		}
		for ib := range nb {
			x := w[ib*wts:][:wts]
			yb := y[ib*yts:][:yts]
			yq := func(j int) int { return int(int8(yb[yts-32+j])) }
			dx, dy := mf16(x), mf16(yb)
			switch t {
			case Q4_0:
				s0, s1 := 0, 0
				for j := range 16 {
					s0 += (int(x[2+j]&0x0F) - 8) * yq(j)
					s1 += (int(x[2+j]>>4) - 8) * yq(j+16)
				}
				sumf += float32(float32(float32(s0+s1)*dx) * dy)
			case Q4_1:
				s0, s1 := 0, 0
				for j := range 16 {
					s0 += int(x[4+j]&0x0F) * yq(j)
					s1 += int(x[4+j]>>4) * yq(j+16)
				}
				if fused {
					sumf += fma32(dx*dy, float32(s0+s1), mf16(x[2:])*mf16(yb[2:]))
				} else {
					sumf += float32(float32(dx*dy)*float32(s0+s1)) + float32(mf16(x[2:])*mf16(yb[2:]))
				}
			case Q5_0:
				qh := binary.LittleEndian.Uint32(x[2:])
				s0, s1 := 0, 0
				for j := range 16 {
					xh0 := uint8(((qh & (1 << (j + 0))) >> (j + 0)) << 4)
					xh1 := uint8((qh & (1 << (j + 16))) >> (j + 12))
					x0 := int(int8((x[6+j]&0x0F | xh0) - 16))
					x1 := int(int8((x[6+j]>>4 | xh1) - 16))
					s0 += x0 * yq(j)
					s1 += x1 * yq(j+16)
				}
				sumf += float32(float32(dx*dy) * float32(s0+s1))
			case Q5_1:
				qh := binary.LittleEndian.Uint32(x[4:])
				s0, s1 := 0, 0
				for j := range 16 {
					xh0 := uint8((qh>>(j+0))<<4) & 0x10
					xh1 := uint8(qh>>(j+12)) & 0x10
					s0 += int(x[8+j]&0xF|xh0) * yq(j)
					s1 += int(x[8+j]>>4|xh1) * yq(j+16)
				}
				if fused {
					sumf += fma32(dx*dy, float32(s0+s1), mf16(x[2:])*mf16(yb[2:]))
				} else {
					sumf += float32(float32(dx*dy)*float32(s0+s1)) + float32(mf16(x[2:])*mf16(yb[2:]))
				}
			case Q8_0:
				s := 0
				for j := range 32 {
					s += int(int8(x[2+j])) * yq(j)
				}
				sumf += float32(float32(s) * float32(dx*dy))
			}
		}
		return sumf
	}
	// K types against Q8_K blocks {f32 d; i8 qs[256]; i16 bsums[16]}.
	nb := k / 256
	wts := t.TypeSize()
	var sums [8]float32
	for i := range nb {
		x := w[i*wts:][:wts]
		yb := y[i*292:][:292]
		yd := math.Float32frombits(binary.LittleEndian.Uint32(yb))
		q8 := func(p int) int8 { return int8(yb[4+p]) }
		bsum := func(j int) int { return int(int16(binary.LittleEndian.Uint16(yb[260+2*j:]))) }
		var aux8 [256]int8
		var scales [16]int // per 16 (Q6_K) or per 32 (Q4_K, Q5_K) sub-block
		var mins [8]int
		switch t {
		case Q4_K, Q5_K:
			q4 := x[16:]
			if t == Q5_K {
				q4 = x[48:]
			}
			hm := x[16:48]
			a := 0
			m := uint8(1)
			for j := 0; j < 4; j++ {
				for l := range 32 {
					aux8[a+l] = int8(q4[l] & 0xF)
					if t == Q5_K && hm[l]&m != 0 {
						aux8[a+l] += 16
					}
				}
				a += 32
				m <<= 1
				for l := range 32 {
					aux8[a+l] = int8(q4[l] >> 4)
					if t == Q5_K && hm[l]&m != 0 {
						aux8[a+l] += 16
					}
				}
				a += 32
				m <<= 1
				q4 = q4[32:]
			}
			var utmp [4]uint32
			for j := range 3 {
				utmp[j] = binary.LittleEndian.Uint32(x[4+4*j:])
			}
			const kmask1, kmask2, kmask3 = 0x3f3f3f3f, 0x0f0f0f0f, 0x03030303
			utmp[3] = ((utmp[2] >> 4) & kmask2) | (((utmp[1] >> 6) & kmask3) << 4)
			uaux := utmp[1] & kmask1
			utmp[1] = (utmp[2] & kmask2) | (((utmp[0] >> 6) & kmask3) << 4)
			utmp[2] = uaux
			utmp[0] &= kmask1
			var ub [16]byte
			for j := range 4 {
				binary.LittleEndian.PutUint32(ub[4*j:], utmp[j])
			}
			for j := range 8 {
				scales[j] = int(ub[j])
				mins[j] = int(ub[8+j])
			}
		case Q6_K:
			q4 := x[0:128]
			qh := x[128:192]
			a := 0
			for j := 0; j < 256; j += 128 {
				for l := range 32 {
					aux8[a+l+0] = int8(q4[l+0]&0xF|((qh[l]>>0)&3)<<4) - 32
					aux8[a+l+32] = int8(q4[l+32]&0xF|((qh[l]>>2)&3)<<4) - 32
					aux8[a+l+64] = int8(q4[l+0]>>4|((qh[l]>>4)&3)<<4) - 32
					aux8[a+l+96] = int8(q4[l+32]>>4|((qh[l]>>6)&3)<<4) - 32
				}
				a += 128
				q4 = q4[64:]
				qh = qh[32:]
			}
			for j := range 16 {
				scales[j] = int(int8(x[192+j]))
			}
		}
		var aux32 [8]int32
		var aux16 [8]int16
		p := 0
		step := func(scale int) {
			for l := range 8 {
				aux16[l] = int16(q8(p+l)) * int16(aux8[p+l])
			}
			for l := range 8 {
				aux32[l] += int32(scale) * int32(aux16[l])
			}
			p += 8
		}
		if t == Q6_K {
			for j := range 16 {
				step(scales[j])
				step(scales[j])
			}
		} else {
			sumi := 0
			for j := range 16 {
				sumi += bsum(j) * mins[j/2]
			}
			for j := range 8 {
				for range 4 {
					step(scales[j])
				}
			}
			d := mf16(x) * yd
			dmin := mf16(x[2:]) * yd
			for l := range 8 {
				if fused {
					sums[l] = fma32(d, float32(aux32[l]), sums[l])
				} else {
					sums[l] += float32(d * float32(aux32[l]))
				}
			}
			if fused {
				sumf = fma32(-dmin, float32(sumi), sumf)
			} else {
				sumf -= float32(dmin * float32(sumi))
			}
			continue
		}
		d := mf16(x[208:]) * yd
		for l := range 8 {
			sums[l] += float32(d * float32(aux32[l]))
		}
	}
	for l := range 8 {
		sumf += sums[l]
	}
	return sumf
}
