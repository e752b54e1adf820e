package gguf

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gotpu/gotpu/dtype"
)

// The dequantizers below reproduce ggml's reference dequantize_row_* (C,
// ggml-quants.c), as mirrored by the gguf Python package's numpy code, bit
// for bit. Every float32 operation is a single IEEE multiply or add in the
// reference's order. Go may fuse a multiply and an add, even across
// statements, into one fused multiply-add (it does on arm64, ppc64le,
// s390x and riscv64), which skips the product's rounding; so every product
// that feeds an addition or subtraction, directly or through a variable, is
// wrapped in an explicit float32 conversion, which the specification
// defines to round and so forbids the fusion. TestNoFusedMultiplyAdd checks
// the compiled code of those architectures.

// CanDequantize reports whether Dequantize supports the type: F32, F16,
// BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and Q8_K.
func (t Type) CanDequantize() bool {
	return int(t) < len(dequantizers) && dequantizers[t] != nil
}

// dequantizers[t] converts whole blocks: raw holds nb blocks, dst nb*BlockSize values.
var dequantizers = [...]func(raw []byte, dst []float32){
	F32:  deqF32,
	F16:  deqF16,
	BF16: deqBF16,
	Q4_0: deqQ4_0,
	Q4_1: deqQ4_1,
	Q5_0: deqQ5_0,
	Q5_1: deqQ5_1,
	Q8_0: deqQ8_0,
	Q2_K: deqQ2K,
	Q3_K: deqQ3K,
	Q4_K: deqQ4K,
	Q5_K: deqQ5K,
	Q6_K: deqQ6K,
	Q8_K: deqQ8K,
}

// Dequantize converts n elements of type typ, encoded in raw, to float32 in
// dst[:n]. n must be a multiple of typ.BlockSize(), raw must be exactly the
// n elements' encoding (typ.ByteSize(n) bytes) and dst at least n long. The
// results equal ggml's reference dequantizers bit for bit (NaN payloads of
// F16 and BF16 inputs included). The element order is the storage order:
// for a tensor, row-major with GGUF's Dims[0] fastest.
func Dequantize(typ Type, raw []byte, n int, dst []float32) error {
	if !typ.CanDequantize() {
		return fmt.Errorf("%w: cannot dequantize %v", ErrUnsupported, typ)
	}
	size, err := typ.ByteSize(int64(n))
	if err != nil {
		return err
	}
	if int64(len(raw)) != size {
		return fmt.Errorf("gguf: %d %v elements take %d bytes, got %d", n, typ, size, len(raw))
	}
	if len(dst) < n {
		return fmt.Errorf("gguf: destination holds %d values, need %d", len(dst), n)
	}
	dequantizers[typ](raw, dst[:n])
	return nil
}

// f16 converts IEEE half-precision bits to float32 exactly (the dtype
// package's codec).
func f16(h uint16) float32 { return dtype.Float16(h).F32() }

func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }

func deqF32(raw []byte, dst []float32) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
}

func deqF16(raw []byte, dst []float32) {
	raw = raw[:2*len(dst)]
	for i := range dst {
		dst[i] = f16(le16(raw[2*i:]))
	}
}

func deqBF16(raw []byte, dst []float32) {
	raw = raw[:2*len(dst)]
	for i := range dst {
		dst[i] = dtype.BFloat16(le16(raw[2*i:])).F32()
	}
}

// Q4_0: {f16 d; u8 qs[16]}; y[j] = (lo(qs[j])-8)*d, y[j+16] = (hi(qs[j])-8)*d.
func deqQ4_0(raw []byte, dst []float32) {
	const bs, ts = 32, 18
	for i := 0; i < len(dst)/bs; i++ {
		b := raw[i*ts:][:ts]
		y := dst[i*bs:][:bs]
		d := f16(le16(b))
		qs := b[2:][:16]
		for j, q := range qs {
			y[j] = float32(int32(q&0xf)-8) * d
			y[j+16] = float32(int32(q>>4)-8) * d
		}
	}
}

// Q4_1: {f16 d, m; u8 qs[16]}; y = q*d + m.
func deqQ4_1(raw []byte, dst []float32) {
	const bs, ts = 32, 20
	for i := 0; i < len(dst)/bs; i++ {
		b := raw[i*ts:][:ts]
		y := dst[i*bs:][:bs]
		d, m := f16(le16(b)), f16(le16(b[2:]))
		qs := b[4:][:16]
		for j, q := range qs {
			y[j] = float32(float32(q&0xf)*d) + m
			y[j+16] = float32(float32(q>>4)*d) + m
		}
	}
}

// Q5_0: {f16 d; u32 qh; u8 qs[16]}; the fifth bit of element j is bit j of qh.
func deqQ5_0(raw []byte, dst []float32) {
	const bs, ts = 32, 22
	for i := 0; i < len(dst)/bs; i++ {
		b := raw[i*ts:][:ts]
		y := dst[i*bs:][:bs]
		d := f16(le16(b))
		qh := binary.LittleEndian.Uint32(b[2:])
		qs := b[6:][:16]
		for j, q := range qs {
			h0 := (qh >> uint(j) << 4) & 0x10
			h1 := (qh >> uint(j+12)) & 0x10
			y[j] = float32(int32(uint32(q&0xf)|h0)-16) * d
			y[j+16] = float32(int32(uint32(q>>4)|h1)-16) * d
		}
	}
}

// Q5_1: {f16 d, m; u32 qh; u8 qs[16]}; y = q*d + m.
func deqQ5_1(raw []byte, dst []float32) {
	const bs, ts = 32, 24
	for i := 0; i < len(dst)/bs; i++ {
		b := raw[i*ts:][:ts]
		y := dst[i*bs:][:bs]
		d, m := f16(le16(b)), f16(le16(b[2:]))
		qh := binary.LittleEndian.Uint32(b[4:])
		qs := b[8:][:16]
		for j, q := range qs {
			h0 := (qh >> uint(j) << 4) & 0x10
			h1 := (qh >> uint(j+12)) & 0x10
			y[j] = float32(float32(uint32(q&0xf)|h0)*d) + m
			y[j+16] = float32(float32(uint32(q>>4)|h1)*d) + m
		}
	}
}

// Q8_0: {f16 d; i8 qs[32]}; y = q*d.
func deqQ8_0(raw []byte, dst []float32) {
	const bs, ts = 32, 34
	for i := 0; i < len(dst)/bs; i++ {
		b := raw[i*ts:][:ts]
		y := dst[i*bs:][:bs]
		d := f16(le16(b))
		qs := b[2:][:bs]
		for j, q := range qs {
			y[j] = float32(int8(q)) * d
		}
	}
}

// Q2_K: {u8 scales[16]; u8 qs[64]; f16 d, dmin}. Each 16-element group g has
// a 4-bit scale and a 4-bit min in scales[g]; y = d*sc*q - dmin*m with 2-bit q.
func deqQ2K(raw []byte, dst []float32) {
	const ts = 84
	for i := 0; i < len(dst)/qk; i++ {
		b := raw[i*ts:][:ts]
		y := dst[i*qk:][:qk]
		sc := b[:16]
		d, dmin := f16(le16(b[80:])), f16(le16(b[82:]))
		for h := range 2 {
			q := b[16+h*32:][:32]
			for j := range 4 {
				shift := uint(2 * j)
				for k := range 2 {
					s := sc[h*8+j*2+k]
					dl := d * float32(s&0xf)
					ml := float32(dmin * float32(s>>4))
					qq := q[k*16:][:16]
					yy := y[h*128+j*32+k*16:][:16]
					for l, x := range qq {
						yy[l] = float32(dl*float32((x>>shift)&3)) - ml
					}
				}
			}
		}
	}
}

// Q3_K: {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d}. Sixteen 6-bit
// signed scales (offset 32); 2-bit q from qs and a third bit from hmask that,
// when clear, subtracts 4.
func deqQ3K(raw []byte, dst []float32) {
	const ts = 110
	var scales [16]float32
	for i := 0; i < len(dst)/qk; i++ {
		b := raw[i*ts:][:ts]
		y := dst[i*qk:][:qk]
		hm := b[:32]
		s := b[96:][:12]
		d := f16(le16(b[108:]))
		for g := range 16 {
			lo := s[g%8] >> (4 * uint(g/8)) & 0xf
			hi := s[8+g%4] >> (2 * uint(g/4)) & 3
			scales[g] = float32(int32(lo|hi<<4) - 32)
		}
		for h := range 2 {
			q := b[32+h*32:][:32]
			for j := range 4 {
				shift := uint(2 * j)
				bit := uint8(1) << uint(h*4+j)
				for k := range 2 {
					dl := d * scales[h*8+j*2+k]
					qq := q[k*16:][:16]
					mm := hm[k*16:][:16]
					yy := y[h*128+j*32+k*16:][:16]
					for l, x := range qq {
						v := int32((x >> shift) & 3)
						if mm[l]&bit == 0 {
							v -= 4
						}
						yy[l] = dl * float32(v)
					}
				}
			}
		}
	}
}

// scaleMinK4 unpacks the j-th 6-bit scale and min of a Q4_K/Q5_K block.
func scaleMinK4(j int, s []byte) (sc, m uint8) {
	s = s[:12]
	if j < 4 {
		return s[j] & 63, s[j+4] & 63
	}
	return s[j+4]&0xf | (s[j-4]>>6)<<4, s[j+4]>>4 | (s[j]>>6)<<4
}

// Q4_K: {f16 d, dmin; u8 scales[12]; u8 qs[128]}. Eight 32-element groups,
// each with a 6-bit scale and min; y = d*sc*q - dmin*m with 4-bit q.
func deqQ4K(raw []byte, dst []float32) {
	const ts = 144
	for i := 0; i < len(dst)/qk; i++ {
		b := raw[i*ts:][:ts]
		y := dst[i*qk:][:qk]
		d, dmin := f16(le16(b)), f16(le16(b[2:]))
		s := b[4:16]
		for j := range 4 {
			sc0, m0 := scaleMinK4(2*j, s)
			sc1, m1 := scaleMinK4(2*j+1, s)
			d0, n0 := d*float32(sc0), float32(dmin*float32(m0))
			d1, n1 := d*float32(sc1), float32(dmin*float32(m1))
			q := b[16+j*32:][:32]
			lo := y[j*64:][:32]
			hi := y[j*64+32:][:32]
			for l, x := range q {
				lo[l] = float32(d0*float32(x&0xf)) - n0
				hi[l] = float32(d1*float32(x>>4)) - n1
			}
		}
	}
}

// Q5_K: {f16 d, dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}: Q4_K with a
// fifth bit per element from qh.
func deqQ5K(raw []byte, dst []float32) {
	const ts = 176
	for i := 0; i < len(dst)/qk; i++ {
		b := raw[i*ts:][:ts]
		y := dst[i*qk:][:qk]
		d, dmin := f16(le16(b)), f16(le16(b[2:]))
		s := b[4:16]
		qh := b[16:48]
		for j := range 4 {
			sc0, m0 := scaleMinK4(2*j, s)
			sc1, m1 := scaleMinK4(2*j+1, s)
			d0, n0 := d*float32(sc0), float32(dmin*float32(m0))
			d1, n1 := d*float32(sc1), float32(dmin*float32(m1))
			u0, u1 := uint8(1)<<uint(2*j), uint8(2)<<uint(2*j)
			q := b[48+j*32:][:32]
			h := qh[:32]
			lo := y[j*64:][:32]
			hi := y[j*64+32:][:32]
			for l, x := range q {
				v0, v1 := x&0xf, x>>4
				if h[l]&u0 != 0 {
					v0 += 16
				}
				if h[l]&u1 != 0 {
					v1 += 16
				}
				lo[l] = float32(d0*float32(v0)) - n0
				hi[l] = float32(d1*float32(v1)) - n1
			}
		}
	}
}

// Q6_K: {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}: 6-bit q (offset 32)
// from 4 low bits in ql and 2 high bits in qh; y = (d*sc)*q.
func deqQ6K(raw []byte, dst []float32) {
	const ts = 210
	var ds [16]float32
	for i := 0; i < len(dst)/qk; i++ {
		b := raw[i*ts:][:ts]
		y := dst[i*qk:][:qk]
		d := f16(le16(b[208:]))
		for g, s := range b[192:208] {
			ds[g] = d * float32(int8(s))
		}
		for h := range 2 {
			ql := b[h*64:][:64]
			qh := b[128+h*32:][:32]
			yy := y[h*128:][:128]
			dd := ds[h*8:][:8]
			for l := range 32 {
				is := l / 16
				a, c, x := ql[l], ql[l+32], qh[l]
				q1 := int32(a&0xf|(x&3)<<4) - 32
				q2 := int32(c&0xf|(x>>2&3)<<4) - 32
				q3 := int32(a>>4|(x>>4&3)<<4) - 32
				q4 := int32(c>>4|(x>>6)<<4) - 32
				yy[l] = dd[is] * float32(q1)
				yy[l+32] = dd[is+2] * float32(q2)
				yy[l+64] = dd[is+4] * float32(q3)
				yy[l+96] = dd[is+6] * float32(q4)
			}
		}
	}
}

// Q8_K: {f32 d; i8 qs[256]; i16 bsums[16]}; y = d*q (bsums are only for dot products).
func deqQ8K(raw []byte, dst []float32) {
	const ts = 292
	for i := 0; i < len(dst)/qk; i++ {
		b := raw[i*ts:][:ts]
		y := dst[i*qk:][:qk]
		d := math.Float32frombits(binary.LittleEndian.Uint32(b))
		for j, q := range b[4:][:qk] {
			y[j] = d * float32(int8(q))
		}
	}
}
