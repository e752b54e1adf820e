package quant

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/gguf"
)

// Type is a ggml block type; its values equal gguf.Type's.
type Type uint32

// The block types this package handles.
const (
	Q4_0 = Type(gguf.Q4_0)
	Q4_1 = Type(gguf.Q4_1)
	Q5_0 = Type(gguf.Q5_0)
	Q5_1 = Type(gguf.Q5_1)
	Q8_0 = Type(gguf.Q8_0)
	Q8_1 = Type(gguf.Q8_1)
	Q4_K = Type(gguf.Q4_K)
	Q5_K = Type(gguf.Q5_K)
	Q6_K = Type(gguf.Q6_K)
	Q8_K = Type(gguf.Q8_K)
)

// qkK is QK_K, the super-block size of the K types.
const qkK = 256

// String returns ggml's name of the type.
func (t Type) String() string { return gguf.Type(t).String() }

// BlockSize returns the number of elements of one block, or 0 for a type
// this package does not support.
func (t Type) BlockSize() int {
	if !Supported(t) {
		return 0
	}
	return gguf.Type(t).BlockSize()
}

// TypeSize returns the number of bytes of one block, or 0 for a type this
// package does not support. Q8_1 is ggml's block_q8_1 {f16 d, s; i8
// qs[32]} of 36 bytes (gguf.Type(Q8_1).TypeSize() reports the 40 bytes of
// its old float32 layout, which GGUF files do not use).
func (t Type) TypeSize() int {
	if !Supported(t) {
		return 0
	}
	if t == Q8_1 {
		return 36
	}
	return gguf.Type(t).TypeSize()
}

// Supported reports whether the package can quantize and dequantize rows of
// type t: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K (weights) and
// Q8_1, Q8_K (activations; Q8_0 is both).
func Supported(t Type) bool {
	switch t {
	case Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q4_K, Q5_K, Q6_K, Q8_K:
		return true
	}
	return false
}

// IsWeight reports whether MatMul accepts t as a weight type (every
// supported type but the activation-only Q8_1 and Q8_K).
func IsWeight(t Type) bool { return Supported(t) && t != Q8_1 && t != Q8_K }

// ActType returns the activation type that ggml pairs with weight type t in
// vec_dot (Q8_0, Q8_1 or Q8_K), and false for a type that is no weight type.
func ActType(t Type) (Type, bool) {
	switch t {
	case Q4_0, Q5_0, Q8_0:
		return Q8_0, true
	case Q4_1, Q5_1:
		return Q8_1, true
	case Q4_K, Q5_K, Q6_K:
		return Q8_K, true
	}
	return 0, false
}

// RowBytes returns the number of bytes of a row of k elements of type t. k
// must be a non-negative multiple of t's block size.
func RowBytes(t Type, k int) (int, error) {
	if !Supported(t) {
		return 0, fmt.Errorf("quant: unsupported type %v", t)
	}
	bs := t.BlockSize()
	if k < 0 || k%bs != 0 {
		return 0, fmt.Errorf("quant: row of %d elements is not a whole number of %v blocks of %d", k, t, bs)
	}
	nb := k / bs
	if nb > math.MaxInt/t.TypeSize() {
		return 0, fmt.Errorf("quant: row of %d %v elements overflows int", k, t)
	}
	return nb * t.TypeSize(), nil
}

// QuantizeRow quantizes src (a whole number of blocks) to type t into dst,
// which must hold exactly RowBytes(t, len(src)) bytes, with the semantics of
// ggml's quantize_row_*_ref, bit for bit. Non-finite inputs are an error
// (ggml's result for them is undefined).
func QuantizeRow(t Type, src []float32, dst []byte) error {
	rb, err := RowBytes(t, len(src))
	if err != nil {
		return err
	}
	if len(dst) != rb {
		return fmt.Errorf("quant: %d %v elements take %d bytes, destination has %d", len(src), t, rb, len(dst))
	}
	for i, v := range src {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("quant: cannot quantize non-finite value %v at index %d", v, i)
		}
	}
	quantizeRow(t, src, dst)
	return nil
}

// quantizeRow is QuantizeRow without the checks.
func quantizeRow(t Type, src []float32, dst []byte) {
	bs, ts := t.BlockSize(), t.TypeSize()
	var q func(x []float32, b []byte)
	switch t {
	case Q4_0:
		q = quantQ4_0
	case Q4_1:
		q = quantQ4_1
	case Q5_0:
		q = quantQ5_0
	case Q5_1:
		q = quantQ5_1
	case Q8_0:
		q = quantQ8_0
	case Q8_1:
		q = quantQ8_1
	case Q4_K:
		q = quantQ4K
	case Q5_K:
		q = quantQ5K
	case Q6_K:
		q = quantQ6K
	case Q8_K:
		q = quantQ8K
	}
	for i := 0; i < len(src)/bs; i++ {
		q(src[i*bs:][:bs], dst[i*ts:][:ts])
	}
}

// DequantizeRow converts src, a whole number of blocks of type t, into
// dst, which must hold exactly the row's element count, with gguf's
// bit-exact dequantizers (ggml's dequantize_row_*). Q8_1 (which gguf does
// not dequantize) is y = d*q, as in ggml.
func DequantizeRow(t Type, src []byte, dst []float32) error {
	rb, err := RowBytes(t, len(dst))
	if err != nil {
		return err
	}
	if len(src) != rb {
		return fmt.Errorf("quant: %d %v elements take %d bytes, source has %d", len(dst), t, rb, len(src))
	}
	if t == Q8_1 {
		for i := 0; i < len(dst)/32; i++ {
			b := src[i*36:][:36]
			d := f16to32(le16(b))
			for j, q := range b[4:36] {
				dst[i*32+j] = float32(int8(q)) * d
			}
		}
		return nil
	}
	if err := gguf.Dequantize(gguf.Type(t), src, len(dst), dst); err != nil {
		return fmt.Errorf("quant: %w", err)
	}
	return nil
}

func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }

func put16(b []byte, v uint16) { binary.LittleEndian.PutUint16(b, v) }

// f16to32 converts IEEE half bits to float32 exactly (dtype's codec).
func f16to32(h uint16) float32 { return dtype.Float16(h).F32() }

// f32to16 converts f to IEEE half bits with round-to-nearest-even, as
// GGML_FP32_TO_FP16 (F16C's VCVTPS2PH and ggml's scalar code) does:
// overflow gives ±Inf, NaN stays a quiet NaN (dtype's codec).
func f32to16(f float32) uint16 { return uint16(dtype.F16FromF32(f)) }
