package quant

import "encoding/binary"

// The generic dot products: ggml's ggml_vec_dot_*_generic (quants.c) of one
// weight row with activation row i of a, with its integer sums and its
// float32 operations in its order (products that feed a sum wrapped in
// float32 conversions so that no compiler fuses them).

// dotFn computes the dot product of the weight row w with activation row i.
type dotFn func(w []byte, a *acts, i int) float32

func dotGeneric(t Type) dotFn {
	switch t {
	case Q4_0:
		return dotQ4_0
	case Q4_1:
		return dotQ4_1
	case Q5_0:
		return dotQ5_0
	case Q5_1:
		return dotQ5_1
	case Q8_0:
		return dotQ8_0
	case Q4_K:
		return dotQ4K
	case Q5_K:
		return dotQ5K
	case Q6_K:
		return dotQ6K
	}
	return nil
}

func dotQ4_0(w []byte, a *acts, i int) float32 {
	nb := a.nb
	qa := a.qs[i*a.k:][:a.k]
	da := a.d[i*nb:][:nb]
	var sumf float32
	for b := range nb {
		blk := w[b*18:][:18]
		y := qa[b*32:][:32]
		var s0, s1 int32
		for j, q := range blk[2:18] {
			s0 += (int32(q&0xf) - 8) * int32(y[j])
			s1 += (int32(q>>4) - 8) * int32(y[j+16])
		}
		sumf += float32(float32(float32(s0+s1)*f16to32(le16(blk))) * da[b])
	}
	return sumf
}

func dotQ4_1(w []byte, a *acts, i int) float32 {
	nb := a.nb
	qa := a.qs[i*a.k:][:a.k]
	da := a.d[i*nb:][:nb]
	sa := a.s[i*nb:][:nb]
	var sumf float32
	for b := range nb {
		blk := w[b*20:][:20]
		y := qa[b*32:][:32]
		var s0, s1 int32
		for j, q := range blk[4:20] {
			s0 += int32(q&0xf) * int32(y[j])
			s1 += int32(q>>4) * int32(y[j+16])
		}
		dd := f16to32(le16(blk)) * da[b]
		sumf += float32(dd*float32(s0+s1)) + float32(f16to32(le16(blk[2:]))*sa[b])
	}
	return sumf
}

func dotQ5_0(w []byte, a *acts, i int) float32 {
	nb := a.nb
	qa := a.qs[i*a.k:][:a.k]
	da := a.d[i*nb:][:nb]
	var sumf float32
	for b := range nb {
		blk := w[b*22:][:22]
		y := qa[b*32:][:32]
		qh := binary.LittleEndian.Uint32(blk[2:])
		var s0, s1 int32
		for j, q := range blk[6:22] {
			h0 := (qh >> uint(j) << 4) & 0x10
			h1 := (qh >> uint(j+12)) & 0x10
			s0 += (int32(uint32(q&0xf)|h0) - 16) * int32(y[j])
			s1 += (int32(uint32(q>>4)|h1) - 16) * int32(y[j+16])
		}
		sumf += float32(float32(f16to32(le16(blk))*da[b]) * float32(s0+s1))
	}
	return sumf
}

func dotQ5_1(w []byte, a *acts, i int) float32 {
	nb := a.nb
	qa := a.qs[i*a.k:][:a.k]
	da := a.d[i*nb:][:nb]
	sa := a.s[i*nb:][:nb]
	var sumf float32
	for b := range nb {
		blk := w[b*24:][:24]
		y := qa[b*32:][:32]
		qh := binary.LittleEndian.Uint32(blk[4:])
		var s0, s1 int32
		for j, q := range blk[8:24] {
			h0 := (qh >> uint(j) << 4) & 0x10
			h1 := (qh >> uint(j+12)) & 0x10
			s0 += int32(uint32(q&0xf)|h0) * int32(y[j])
			s1 += int32(uint32(q>>4)|h1) * int32(y[j+16])
		}
		dd := f16to32(le16(blk)) * da[b]
		sumf += float32(dd*float32(s0+s1)) + float32(f16to32(le16(blk[2:]))*sa[b])
	}
	return sumf
}

func dotQ8_0(w []byte, a *acts, i int) float32 {
	nb := a.nb
	qa := a.qs[i*a.k:][:a.k]
	da := a.d[i*nb:][:nb]
	var sumf float32
	for b := range nb {
		blk := w[b*34:][:34]
		y := qa[b*32:][:32]
		var s int32
		for j, q := range blk[2:34] {
			s += int32(int8(q)) * int32(y[j])
		}
		sumf += float32(float32(s) * float32(f16to32(le16(blk))*da[b]))
	}
	return sumf
}

// kScales unpacks the eight 6-bit scales and mins of a Q4_K/Q5_K block.
func kScales(s []byte) (sc, mn [8]uint8) {
	for j := range 8 {
		sc[j], mn[j] = scaleMinK4(j, s)
	}
	return
}

// dotK finishes a K-type block the generic way: lane l of aux holds the
// integer sum over the block's elements p with p%8 == l (scale applied);
// sums[l] += d*aux[l] and sumf -= dmin*Σ bsums·mins.
func dotQ4K(w []byte, a *acts, i int) float32 {
	nb := a.nb
	qa := a.qs[i*a.k:][:a.k]
	da := a.d[i*nb:][:nb]
	var sums [8]float32
	var sumf float32
	var vals [qkK]int8
	for b := range nb {
		blk := w[b*144:][:144]
		y := qa[b*qkK:][:qkK]
		q := blk[16:144]
		for j := range 4 {
			for l := range 32 {
				vals[64*j+l] = int8(q[32*j+l] & 0xf)
				vals[64*j+32+l] = int8(q[32*j+l] >> 4)
			}
		}
		sc, mn := kScales(blk[4:16])
		var aux [8]int32
		for p := range qkK {
			aux[p%8] += int32(sc[p/32]) * (int32(vals[p]) * int32(y[p]))
		}
		bs := a.bsum[(i*nb+b)*16:][:16]
		var sumi int32
		for j := range 16 {
			sumi += int32(bs[j]) * int32(mn[j/2])
		}
		d := f16to32(le16(blk)) * da[b]
		for l := range 8 {
			sums[l] += float32(d * float32(aux[l]))
		}
		dmin := f16to32(le16(blk[2:])) * da[b]
		sumf -= float32(dmin * float32(sumi))
	}
	for l := range 8 {
		sumf += sums[l]
	}
	return sumf
}

func dotQ5K(w []byte, a *acts, i int) float32 {
	nb := a.nb
	qa := a.qs[i*a.k:][:a.k]
	da := a.d[i*nb:][:nb]
	var sums [8]float32
	var sumf float32
	var vals [qkK]int8
	for b := range nb {
		blk := w[b*176:][:176]
		y := qa[b*qkK:][:qkK]
		qh := blk[16:48]
		q := blk[48:176]
		for j := range 4 {
			u0, u1 := uint8(1)<<uint(2*j), uint8(2)<<uint(2*j)
			for l := range 32 {
				v0, v1 := q[32*j+l]&0xf, q[32*j+l]>>4
				if qh[l]&u0 != 0 {
					v0 += 16
				}
				if qh[l]&u1 != 0 {
					v1 += 16
				}
				vals[64*j+l] = int8(v0)
				vals[64*j+32+l] = int8(v1)
			}
		}
		sc, mn := kScales(blk[4:16])
		var aux [8]int32
		for p := range qkK {
			aux[p%8] += int32(sc[p/32]) * (int32(vals[p]) * int32(y[p]))
		}
		bs := a.bsum[(i*nb+b)*16:][:16]
		var sumi int32
		for j := range 16 {
			sumi += int32(bs[j]) * int32(mn[j/2])
		}
		d := f16to32(le16(blk)) * da[b]
		for l := range 8 {
			sums[l] += float32(d * float32(aux[l]))
		}
		dmin := f16to32(le16(blk[2:])) * da[b]
		sumf -= float32(dmin * float32(sumi))
	}
	for l := range 8 {
		sumf += sums[l]
	}
	return sumf
}

func dotQ6K(w []byte, a *acts, i int) float32 {
	nb := a.nb
	qa := a.qs[i*a.k:][:a.k]
	da := a.d[i*nb:][:nb]
	var sums [8]float32
	var vals [qkK]int8
	for b := range nb {
		blk := w[b*210:][:210]
		y := qa[b*qkK:][:qkK]
		for h := range 2 {
			ql := blk[h*64:][:64]
			qh := blk[128+h*32:][:32]
			v := vals[h*128:][:128]
			for l := range 32 {
				v[l] = int8(ql[l]&0xf|(qh[l]&3)<<4) - 32
				v[l+32] = int8(ql[l+32]&0xf|(qh[l]>>2&3)<<4) - 32
				v[l+64] = int8(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
				v[l+96] = int8(ql[l+32]>>4|(qh[l]>>6)<<4) - 32
			}
		}
		sc := blk[192:208]
		var aux [8]int32
		for p := range qkK {
			aux[p%8] += int32(int8(sc[p/16])) * (int32(vals[p]) * int32(y[p]))
		}
		d := f16to32(le16(blk[208:])) * da[b]
		for l := range 8 {
			sums[l] += float32(d * float32(aux[l]))
		}
	}
	var sumf float32
	for l := range 8 {
		sumf += sums[l]
	}
	return sumf
}
