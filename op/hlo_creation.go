package op

import "github.com/gotpu/gotpu/dtype"

// StableHLO emitters of the creation primitives. random_bits emits gotpu's
// own Philox4x32-10 as integer arithmetic (the seed and offset are
// attributes, so the round keys are constants), so an exported program draws
// exactly the numbers every gotpu backend draws; XLA's rng_bit_generator
// would use a different stream.

// Philox4x32-10 constants (Salmon et al., SC 2011), as backend/cpu.
const (
	hloPhiloxM0 = 0xD2511F53
	hloPhiloxM1 = 0xCD9E8D57
	hloPhiloxW0 = 0x9E3779B9
	hloPhiloxW1 = 0xBB67AE85
)

func attrUint64(v any) uint64 {
	switch x := v.(type) {
	case int:
		return uint64(x)
	case int64:
		return uint64(x)
	case float64:
		return uint64(int64(x))
	}
	return 0
}

func init() {
	DefStableHLO(Full, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		return b.konst(HLOTypeOf(out), a["value"]), nil
	}))
	DefStableHLO(Iota, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		dim := 0
		if len(out.Shape) > 0 {
			var err error
			if dim, err = NormAxis("iota", a.Int("dim"), len(out.Shape)); err != nil {
				return HLOValue{}, err
			}
		}
		if out.DType == dtype.Bool {
			return b.convert(b.iota(out.Shape, dim, "i64"), "i1"), nil
		}
		return b.iota(out.Shape, dim, HLOElem(out.DType)), nil
	}))
	DefStableHLO(RandomBits, emit1(func(b hb, in []HLOValue, out Meta, a Attrs) (HLOValue, error) {
		return emitPhilox(b, out, a), nil
	}))
}

// emitPhilox emits random_bits: the Philox4x32-10 block of each element's
// counter (lo, hi) under key seed, lane `lane`.
func emitPhilox(b hb, out Meta, a Attrs) HLOValue {
	n := out.Numel()
	flat := []int{n}
	seed, offset := attrUint64(a["seed"]), attrUint64(a["offset"])
	stream, period := uint64(a.Int("stream")), a.Int("period")
	last := 1
	if len(out.Shape) > 0 {
		last = out.Shape[len(out.Shape)-1]
	}
	u64 := HLOType{Shape: flat, Elem: "ui64"}
	c64 := func(v uint64) HLOValue { return b.konst(u64, v) }
	i := b.iota(flat, 0, "ui64")
	var lo, hi HLOValue
	if period <= 0 || last == 0 {
		lo = b.bin("add", i, c64(offset))
		hi = c64(stream)
	} else {
		row := b.bin("divide", i, c64(uint64(last)))
		k := b.bin("remainder", i, c64(uint64(last)))
		lo = b.bin("add", c64(offset), b.bin("add", b.bin("multiply", row, c64(uint64(period))), b.bin("remainder", k, c64(uint64(period)))))
		hi = b.bin("add", c64(stream), b.bin("divide", k, c64(uint64(period))))
	}
	mask := c64(0xFFFFFFFF)
	low32 := func(x HLOValue) HLOValue { return b.convert(b.bin("and", x, mask), "ui32") }
	high32 := func(x HLOValue) HLOValue { return b.convert(b.bin("shift_right_logical", x, c64(32)), "ui32") }
	c := [4]HLOValue{low32(lo), high32(lo), low32(hi), high32(hi)}
	u32 := HLOType{Shape: flat, Elem: "ui32"}
	k0, k1 := uint32(seed), uint32(seed>>32)
	mulhilo := func(m uint64, x HLOValue) (h, l HLOValue) {
		p := b.bin("multiply", b.convert(x, "ui64"), c64(m))
		return high32(p), low32(p)
	}
	for r := 0; r < 10; r++ {
		if r > 0 {
			k0 += hloPhiloxW0
			k1 += hloPhiloxW1
		}
		hi0, lo0 := mulhilo(hloPhiloxM0, c[0])
		hi1, lo1 := mulhilo(hloPhiloxM1, c[2])
		c = [4]HLOValue{
			b.bin("xor", b.bin("xor", hi1, c[1]), b.konst(u32, uint64(k0))),
			lo1,
			b.bin("xor", b.bin("xor", hi0, c[3]), b.konst(u32, uint64(k1))),
			lo0,
		}
	}
	lane := a.Int("lane")
	var res HLOValue
	if out.DType == dtype.I32 {
		res = b.op1("stablehlo.bitcast_convert", HLOType{Shape: flat, Elem: "i32"}, nil, c[lane])
	} else {
		w := b.bin("or", b.convert(c[2*lane], "ui64"), b.bin("shift_left", b.convert(c[2*lane+1], "ui64"), c64(32)))
		res = b.op1("stablehlo.bitcast_convert", HLOType{Shape: flat, Elem: "i64"}, nil, w)
	}
	return b.reshape(res, out.Shape)
}
