package op

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gotpu/gotpu/dtype"
)

// Block-quantized linear layers: linear_gguf multiplies activations by a
// weight matrix kept in ggml's block encodings (as GGUF files store it). Its
// decomposition dequantizes the blocks with integer and float elementwise ops
// (every backend and mode runs it) and multiplies in float32; the CPU
// backend has a direct kernel that multiplies the blocks with integer dot
// products after quantizing the activations per block, as llama.cpp does.

// GGUFBlock describes one ggml block encoding that linear_gguf accepts.
type GGUFBlock struct {
	Name      string // lower-case ggml name: "q4_0"
	GGMLType  uint32 // the ggml_type number (gguf.Type)
	BlockSize int    // elements per block
	TypeSize  int    // bytes per block
}

// ggufBlocks lists the encodings linear_gguf decodes, with ggml's layouts.
var ggufBlocks = []GGUFBlock{
	{"q4_0", 2, 32, 18},
	{"q4_1", 3, 32, 20},
	{"q5_0", 6, 32, 22},
	{"q5_1", 7, 32, 24},
	{"q8_0", 8, 32, 34},
	{"q4_k", 12, 256, 144},
	{"q5_k", 13, 256, 176},
	{"q6_k", 14, 256, 210},
}

// GGUFBlocks returns the block encodings linear_gguf decodes.
func GGUFBlocks() []GGUFBlock { return slices.Clone(ggufBlocks) }

// GGUFBlockOf returns the block encoding named name (ggml's type name in any
// case, "Q4_K" or "q4_k") or with ggml type number name given as "#12".
func GGUFBlockOf(name string) (GGUFBlock, error) {
	if b, ok := ggufBlockNames()[strings.ToLower(name)]; ok {
		return b, nil
	}
	names := make([]string, len(ggufBlocks))
	for i, b := range ggufBlocks {
		names[i] = b.Name
	}
	return GGUFBlock{}, fmt.Errorf("linear_gguf: unsupported block type %q (want one of %s)", name, strings.Join(names, ", "))
}

// ggufBlockNames maps the lower-case names and "#N" type numbers of
// ggufBlocks to them (built once: linear_gguf looks its type up on every
// launch, and formatting "#N" per lookup was a decode step's garbage).
var ggufBlockNames = sync.OnceValue(func() map[string]GGUFBlock {
	m := make(map[string]GGUFBlock, 2*len(ggufBlocks))
	for _, b := range ggufBlocks {
		m[b.Name] = b
		m[fmt.Sprintf("#%d", b.GGMLType)] = b
	}
	return m
})

// GGUFBlockOfType returns the block encoding of ggml type number t.
func GGUFBlockOfType(t uint32) (GGUFBlock, bool) {
	for _, b := range ggufBlocks {
		if b.GGMLType == t {
			return b, true
		}
	}
	return GGUFBlock{}, false
}

// RowBytes returns the bytes one row of k elements takes, or an error when k
// is not a positive multiple of the block size.
func (g GGUFBlock) RowBytes(k int) (int, error) {
	if k <= 0 || k%g.BlockSize != 0 {
		return 0, fmt.Errorf("linear_gguf: k = %d is not a positive multiple of %s's block size %d", k, g.Name, g.BlockSize)
	}
	return k / g.BlockSize * g.TypeSize, nil
}

func init() {
	Register(&Def{
		Name: "linear_gguf", Kind: Composite, Group: "linalg",
		Doc: "input @ W.T where W [n, k] is held in a ggml block encoding (attribute type: q4_0, q4_1, q5_0, q5_1, q8_0, q4_k, q5_k, q6_k) " +
			"as u8 rows of k/block·blockBytes bytes; the output has input's float dtype. The decomposition dequantizes W to f32 exactly as ggml " +
			"and multiplies in f32 (f64 for f64 input); backend kernels may quantize the input per block as llama.cpp does. " +
			"Attribute layout \"r16\" (q4_0, q4_1, q5_0, q5_1, q8_0, q4_k) says each full group of 16 rows is stored interleaved, block column by block column " +
			"(the 16 rows' scales side by side, then chunks of 4 quant bytes of each row, q5's qh first with the fifth bit of element 4c+i " +
			"at bit 8i+c, q4_k's qs chunk 8p+l holding its bytes 32p+l+8i), the rows after the last full group row-major; the results are those of the row-major weight.",
		Inputs:          []string{"input", "weight"},
		NeedsContiguous: true,
		Attrs: []AttrSpec{{Name: "type", Type: AttrString}, {Name: "k", Type: AttrInt},
			laPrecisionAttr, {Name: "layout", Type: AttrString, Default: ""}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			blk, err := GGUFBlockOf(a.String("type"))
			if err != nil {
				return nil, err
			}
			k := a.Int("k")
			rb, err := blk.RowBytes(k)
			if err != nil {
				return nil, err
			}
			x, w := in[0], in[1]
			if !SetFloats.Has(x.DType) {
				return nil, fmt.Errorf("linear_gguf: input must be a float tensor, got %v", x.DType)
			}
			if err := checkGGUFRows("linear_gguf", w, blk, k, rb); err != nil {
				return nil, err
			}
			if l := a.String("layout"); l != "" {
				if l != LayoutR16 {
					return nil, fmt.Errorf("linear_gguf: unknown layout %q (want \"\" or %q)", l, LayoutR16)
				}
				if _, _, ok := r16Parts(blk); !ok {
					return nil, fmt.Errorf("linear_gguf: %s has no %s layout (q4_0, q4_1, q5_0, q5_1, q8_0 and q4_k do)", blk.Name, LayoutR16)
				}
			}
			if len(x.Shape) == 0 || x.Shape[len(x.Shape)-1] != k {
				return nil, fmt.Errorf("linear_gguf: input %v does not end in k = %d", x.Shape, k)
			}
			s := append(slices.Clone(x.Shape[:len(x.Shape)-1]), w.Shape[0])
			return []Meta{{Shape: s, DType: x.DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			blk, err := GGUFBlockOf(a.String("type"))
			if err != nil {
				panic(err) // Infer rejected it first
			}
			wb := in[1]
			if a.String("layout") == LayoutR16 {
				wb = UnpackR16(b, wb, blk, a.Int("k"))
			}
			w := DequantizeGGUF(b, wb, blk, a.Int("k"))
			x := in[0]
			// The product runs in f32 (f64 for f64 x: the dequantized
			// values are exact in both), rounded once to x's dtype.
			xd := b.Meta(x).DType
			ct := dtype.F32
			if xd == dtype.F64 {
				ct = dtype.F64
				w = Call1(b, "convert", Attrs{"dtype": ct}, w)
			}
			if xd != ct {
				x = Call1(b, "convert", Attrs{"dtype": ct}, x)
			}
			xs := b.Meta(x).Shape
			y := laDot(b, x, w, []int{}, []int{}, []int{len(xs) - 1}, []int{1}, a["precision"])
			if xd != ct {
				y = Call1(b, "convert", Attrs{"dtype": xd}, y)
			}
			return []Value{y}
		},
	})
}

func init() {
	Register(&Def{
		Name: "dequantize_gguf", Kind: Composite, Group: "linalg",
		Doc: "Decodes rows held in a ggml block encoding (attribute type: q4_0, q4_1, q5_0, q5_1, q8_0, q4_k, q5_k, q6_k; u8 [n, k/block·blockBytes]) " +
			"to f32 [n, k] with ggml's reference dequantizer (dequantize_row_*), the weight linear_gguf multiplies by. " +
			"A model that keeps its token embedding quantized gathers the rows of its ids (embedding on the u8 rows) and decodes only those.",
		Inputs:          []string{"weight"},
		NeedsContiguous: true,
		Attrs:           []AttrSpec{{Name: "type", Type: AttrString}, {Name: "k", Type: AttrInt}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			blk, err := GGUFBlockOf(a.String("type"))
			if err != nil {
				return nil, fmt.Errorf("dequantize_gguf: %w", err)
			}
			k := a.Int("k")
			rb, err := blk.RowBytes(k)
			if err != nil {
				return nil, fmt.Errorf("dequantize_gguf: %w", err)
			}
			w := in[0]
			if err := checkGGUFRows("dequantize_gguf", w, blk, k, rb); err != nil {
				return nil, err
			}
			return []Meta{{Shape: []int{w.Shape[0], k}, DType: dtype.F32}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			blk, err := GGUFBlockOf(a.String("type"))
			if err != nil {
				panic(err) // Infer rejected it first
			}
			return []Value{DequantizeGGUF(b, in[0], blk, a.Int("k"))}
		},
	})
}

// checkGGUFRows checks that w is u8 rows of rb bytes, k elements of blk
// each (linear_gguf's and dequantize_gguf's weight); name is the op's.
func checkGGUFRows(name string, w Meta, blk GGUFBlock, k, rb int) error {
	if w.DType != dtype.U8 {
		return fmt.Errorf("%s: weight must be u8 blocks, got %v", name, w.DType)
	}
	if len(w.Shape) != 2 || w.Shape[1] != rb {
		return fmt.Errorf("%s: weight must be [n, %d] (k = %d of %s), got %v", name, rb, k, blk.Name, w.Shape)
	}
	return nil
}

// LayoutR16 is linear_gguf's interleaved weight layout (attribute layout).
const LayoutR16 = "r16"

// LayoutFeature is the device feature (device.Properties.Features) by
// which a backend says its linear_gguf kernels run weights of block
// encoding block (q4_1) natively in layout (LayoutR16): a model loader may
// then store them so. Every backend gives the same results for either
// layout, but one its kernels lack costs an unpacking per product.
func LayoutFeature(layout, block string) string { return "linear_gguf:" + layout + ":" + block }

// r16Parts returns the bytes of a block's 2-byte scale fields (d, and
// q4_1's and q5_1's m) and the number of 4-byte chunks (q5's qh, then the
// quants) in the r16 layout of blk.
func r16Parts(blk GGUFBlock) (head, chunks int, ok bool) {
	switch blk.Name {
	case "q4_0":
		return 2, 4, true
	case "q4_1":
		return 4, 4, true
	case "q5_0":
		return 2, 5, true
	case "q5_1":
		return 4, 5, true
	case "q8_0":
		return 2, 8, true
	case "q4_k":
		return 4, 35, true
	}
	return 0, 0, false
}

// UnpackR16 expresses, through b, the row-major layout of w (u8 [n,
// rowBytes] in the r16 layout of encoding blk, rows of k elements): in each
// full group of 16 rows, block column c holds the 16 rows' scale fields
// (each field's 16 values side by side) and then chunks j of 16 rows × 4
// bytes, row r's quant bytes 4j..4j+3; the rows after the last full group
// are row-major already. Only bytes move, except in q5's qh chunk (chunk
// 0), whose stored bit 8i+c is the fifth bit of element 4c+i; q4_k's qs
// chunk 8p+l (after its 3 scale chunks) holds qs bytes 32p+l+8i.
func UnpackR16(b Builder, w Value, blk GGUFBlock, k int) Value {
	head, chunks, ok := r16Parts(blk)
	if !ok {
		panic(fmt.Sprintf("linear_gguf: %s has no r16 layout", blk.Name)) // Infer rejected it
	}
	n, rb := b.Meta(w).Shape[0], b.Meta(w).Shape[1]
	g, nb, ts := n/16, k/blk.BlockSize, blk.TypeSize
	if g == 0 {
		return w
	}
	q := &qdec{b: b}
	full := w
	if g*16 != n {
		full = Call1(b, "slice", Attrs{"dim": 0, "start": 0, "end": g * 16, "step": 1}, w)
	}
	wg := q.reshape(full, g, nb, 16*ts)
	var parts []Value
	for f := 0; f < head; f += 2 {
		v := q.reshape(q.sl(wg, f*16, f*16+32), g, nb, 16, 2)
		parts = append(parts, laPermute(b, v, []int{0, 2, 1, 3})) // [g, 16, nb, 2]
	}
	qs := q.reshape(q.sl(wg, head*16, 16*ts), g, nb, chunks, 16, 4)
	qs = laPermute(b, qs, []int{0, 3, 1, 2, 4}) // [g, 16, nb, chunks, 4]
	if chunks == 5 {
		// q5's qh: stored bit 8i+c back to bit 4c+i.
		all := q.reshape(qs, g, 16, nb, 4*chunks)
		qh := q.cvt(q.sl(all, 0, 4), dtype.I32)
		bits := q.reshape(q.bits(qh, 8, 1), g, 16, nb, 4, 8)                        // [.., i, c]
		bits = q.reshape(laPermute(b, bits, []int{0, 1, 2, 4, 3}), g, 16, nb, 4, 8) // [.., byte, bit]
		bits = Call1(b, "bitwise_left_shift", nil, bits, q.iota([]int{8}, 0))
		qh = q.cvt(Call1(b, "sum", Attrs{"dims": []int{-1}}, bits), dtype.U8) // [g, 16, nb, 4]
		parts = append(parts, qh, q.sl(all, 4, 4*chunks))
	} else if blk.Name == "q4_k" {
		// q4_k: 3 chunks of scale bytes, then qs chunk 8p+l holding bytes
		// 32p+l+8i (i < 4) of qs.
		all := q.reshape(qs, g, 16, nb, 4*chunks)
		lv := q.reshape(q.sl(all, 12, 4*chunks), g, 16, nb, 4, 8, 4)              // [.., p, l, i]
		lv = q.reshape(laPermute(b, lv, []int{0, 1, 2, 3, 5, 4}), g, 16, nb, 128) // [.., p, i, l]
		parts = append(parts, q.sl(all, 0, 12), lv)
	} else {
		parts = append(parts, q.reshape(qs, g, 16, nb, 4*chunks))
	}
	rows := q.reshape(q.cat(-1, parts...), g*16, rb)
	if g*16 == n {
		return rows
	}
	tail := Call1(b, "slice", Attrs{"dim": 0, "start": g * 16, "end": n, "step": 1}, w)
	return q.cat(0, rows, tail)
}

// DequantizeGGUF expresses the dequantization of w (u8 [n, rowBytes], rows of
// k elements in encoding blk) in elementwise ops through b and returns the
// f32 [n, k] matrix. Every float operation is ggml's reference dequantizer's
// (dequantize_row_*), in its order, so the values are equal bit for bit
// wherever the backend does not fuse a multiply and an add. f16 scales that
// are infinite or NaN (exponent 31) are not decoded as such: valid files have
// finite scales.
func DequantizeGGUF(b Builder, w Value, blk GGUFBlock, k int) Value {
	n := b.Meta(w).Shape[0]
	nb := k / blk.BlockSize
	q := &qdec{b: b}
	wi := q.cvt(Call1(b, "reshape", Attrs{"shape": []int{n, nb, blk.TypeSize}}, w), dtype.I32)
	var y Value
	switch blk.Name {
	case "q4_0", "q4_1", "q5_0", "q5_1":
		// {f16 d; [f16 m;] [u32 qh;] u8 qs[16]}: element j < 16 is the low
		// nibble of qs[j], element j+16 the high one.
		off := 2
		d := q.f16(wi, 0)
		var m Value
		if blk.Name == "q4_1" || blk.Name == "q5_1" {
			m = q.f16(wi, 2)
			off = 4
		}
		var qh Value
		if blk.Name == "q5_0" || blk.Name == "q5_1" {
			qh = q.bits(q.sl(wi, off, off+4), 8, 1) // [n, nb, 32]: bit j of qh
			off += 4
		}
		qs := q.sl(wi, off, off+16)
		v := q.cat(-1, q.and(qs, 15), q.shr(qs, 4)) // [n, nb, 32]
		if qh != nil {
			v = q.or(v, q.shl(qh, 4))
		}
		if m == nil {
			bias := int64(8)
			if qh != nil {
				bias = 16
			}
			y = q.mul(q.cvt(q.subS(v, bias), dtype.F32), d)
		} else {
			y = q.add(q.mul(q.cvt(v, dtype.F32), d), m)
		}
	case "q8_0":
		d := q.f16(wi, 0)
		y = q.mul(q.cvt(q.int8(q.sl(wi, 2, 34)), dtype.F32), d)
	case "q4_k", "q5_k":
		// {f16 d, dmin; u8 scales[12]; [u8 qh[32];] u8 qs[128]}: eight
		// groups of 32 with 6-bit scales and mins; chunk j of 32 bytes of
		// qs holds group 2j in its low nibbles and 2j+1 in its high ones.
		d, dmin := q.f16(wi, 0), q.f16(wi, 2)
		s03, s47, s811 := q.sl(wi, 4, 8), q.sl(wi, 8, 12), q.sl(wi, 12, 16)
		sc := q.cat(-1, q.and(s03, 63), q.or(q.and(s811, 15), q.shl(q.shr(s03, 6), 4)))
		mn := q.cat(-1, q.and(s47, 63), q.or(q.shr(s811, 4), q.shl(q.shr(s47, 6), 4)))
		dl := q.unsq(q.mul(d, q.cvt(sc, dtype.F32)))    // [n, nb, 8, 1]
		ml := q.unsq(q.mul(dmin, q.cvt(mn, dtype.F32))) // [n, nb, 8, 1]
		off := 16
		var qh Value
		if blk.Name == "q5_k" {
			// Bit g of qh[l] is the fifth bit of element l of group g.
			h := q.reshape(q.sl(wi, 16, 48), n, nb, 1, 32)
			qh = q.and(q.shrT(h, q.iota([]int{8, 1}, 0)), 1) // [n, nb, 8, 32]
			off = 48
		}
		qs := q.reshape(q.sl(wi, off, off+128), n, nb, 4, 1, 32)
		v := q.reshape(q.cat(3, q.and(qs, 15), q.shr(qs, 4)), n, nb, 8, 32)
		if qh != nil {
			v = q.or(v, q.shl(qh, 4))
		}
		y = q.sub(q.mul(dl, q.cvt(v, dtype.F32)), ml)
	case "q6_k":
		// {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}: two halves of 128
		// elements; in half h, with a = ql[64h+l], c = ql[64h+32+l] and
		// x = qh[32h+l], element 32g+l (g = 0..3) is a&15, c&15, a>>4, c>>4
		// with bits 2g and 2g+1 of x above them, minus 32; element e of the
		// block has scale e/16.
		d := q.f16(wi, 208)
		ql := q.reshape(q.sl(wi, 0, 128), n, nb, 2, 2, 32) // [half][a|c][l]
		lo := q.cat(3, q.and(ql, 15), q.shr(ql, 4))        // [n, nb, 2, 4, 32]: a&15, c&15, a>>4, c>>4
		qh := q.reshape(q.sl(wi, 128, 192), n, nb, 2, 1, 32)
		hi := q.and(q.shrT(qh, q.shl(q.iota([]int{4, 1}, 0), 1)), 3) // bits 2g, 2g+1
		v := q.subS(q.or(lo, q.shl(hi, 4)), 32)
		ds := q.unsq(q.mul(d, q.cvt(q.int8(q.sl(wi, 192, 208)), dtype.F32))) // [n, nb, 16, 1]
		y = q.mul(ds, q.cvt(q.reshape(v, n, nb, 16, 16), dtype.F32))
	default:
		panic(fmt.Sprintf("linear_gguf: no decoder for %s", blk.Name))
	}
	return q.reshape(y, n, k)
}

// qdec holds the small op helpers DequantizeGGUF is written with; all
// integer work is in i32.
type qdec struct{ b Builder }

func (q *qdec) s(v int64, like Value) Value { return q.b.Scalar(v, like) }
func (q *qdec) cvt(x Value, dt dtype.DType) Value {
	if q.b.Meta(x).DType == dt {
		return x
	}
	return Call1(q.b, "convert", Attrs{"dtype": dt}, x)
}
func (q *qdec) sl(x Value, lo, hi int) Value {
	return Call1(q.b, "slice", Attrs{"dim": -1, "start": lo, "end": hi, "step": 1}, x)
}
func (q *qdec) reshape(x Value, shape ...int) Value { return laReshape(q.b, x, shape) }
func (q *qdec) unsq(x Value) Value {
	return q.reshape(x, append(slices.Clone(q.b.Meta(x).Shape), 1)...)
}
func (q *qdec) cat(dim int, xs ...Value) Value { return q.b.Call("cat", xs, Attrs{"dim": dim})[0] }
func (q *qdec) and(x Value, m int64) Value     { return Call1(q.b, "bitwise_and", nil, x, q.s(m, x)) }
func (q *qdec) or(x, y Value) Value            { return Call1(q.b, "bitwise_or", nil, x, y) }
func (q *qdec) shr(x Value, n int64) Value {
	return Call1(q.b, "bitwise_right_shift", nil, x, q.s(n, x))
}
func (q *qdec) shrT(x, n Value) Value { return Call1(q.b, "bitwise_right_shift", nil, x, n) }
func (q *qdec) shl(x Value, n int64) Value {
	return Call1(q.b, "bitwise_left_shift", nil, x, q.s(n, x))
}
func (q *qdec) subS(x Value, v int64) Value { return Call1(q.b, "sub", nil, x, q.s(v, x)) }
func (q *qdec) add(x, y Value) Value        { return Call1(q.b, "add", nil, x, y) }
func (q *qdec) sub(x, y Value) Value        { return Call1(q.b, "sub", nil, x, y) }
func (q *qdec) mul(x, y Value) Value        { return Call1(q.b, "mul", nil, x, y) }

// iota returns an i32 tensor of shape counting along dim.
func (q *qdec) iota(shape []int, dim int) Value {
	return Call1(q.b, "iota", Attrs{"shape": shape, "dim": dim, "dtype": dtype.I32})
}

// int8 reads bytes 0..255 as two's-complement int8 values.
func (q *qdec) int8(x Value) Value { return q.sub(x, q.shl(q.shr(x, 7), 8)) }

// bits splits each byte of x [..., c] into its nbits low-first bits of
// width w: [..., c*8/w].
func (q *qdec) bits(x Value, nbits, w int) Value {
	s := q.b.Meta(x).Shape
	x1 := q.reshape(x, append(slices.Clone(s), 1)...)
	sh := q.iota([]int{nbits}, 0)
	if w != 1 {
		sh = Call1(q.b, "mul", nil, sh, q.s(int64(w), sh))
	}
	v := q.and(q.shrT(x1, sh), int64(1)<<w-1)
	out := slices.Clone(s)
	out[len(out)-1] *= nbits
	return q.reshape(v, out...)
}

// f16 decodes the little-endian IEEE half at byte offset off of each block
// of wi [n, nb, bytes] (as i32) to f32 [n, nb, 1], exactly, with integer
// ops and exact float products: |h| = mantissa · 2^(e-25) with the implicit
// bit for e > 0 and e = 1 for subnormals.
func (q *qdec) f16(wi Value, off int) Value {
	h := q.or(q.sl(wi, off, off+1), q.shl(q.sl(wi, off+1, off+2), 8))
	e := q.and(q.shr(h, 10), 31)
	mant := q.and(h, 1023)
	nz := Call1(q.b, "minimum", nil, e, q.s(1, e)) // 1 for normal numbers
	mant = q.or(mant, q.shl(nz, 10))
	e = Call1(q.b, "maximum", nil, e, q.s(1, e))
	v := q.cvt(mant, dtype.F32)
	// 2^e from e's five bits: each factor is 1 + bit·(2^(2^i) - 1), exact.
	for i := range 5 {
		bit := q.cvt(q.and(q.shr(e, int64(i)), 1), dtype.F32)
		f := Call1(q.b, "add", nil, Call1(q.b, "mul", nil, bit, q.b.Scalar(float64(int64(1)<<(1<<i)-1), bit)), q.b.Scalar(1.0, bit))
		v = q.mul(v, f)
	}
	v = Call1(q.b, "mul", nil, v, q.b.Scalar(0x1p-25, v))
	sign := q.cvt(q.shr(h, 15), dtype.F32) // 0 or 1
	return q.mul(v, Call1(q.b, "sub", nil, q.b.Scalar(1.0, sign), Call1(q.b, "mul", nil, sign, q.b.Scalar(2.0, sign))))
}
