package gguf

import (
	"fmt"
	"math"
)

// Type is a ggml tensor type (enum ggml_type), the element encoding of a
// tensor's data. Block-quantized types store BlockSize elements in TypeSize
// bytes; plain types have a block size of 1.
type Type uint32

// The ggml tensor types. The numbers are part of the file format; 4, 5,
// 31–33 and 36–38 belonged to types that ggml has since removed and are
// rejected by Open.
const (
	F32     Type = 0
	F16     Type = 1
	Q4_0    Type = 2
	Q4_1    Type = 3
	Q5_0    Type = 6
	Q5_1    Type = 7
	Q8_0    Type = 8
	Q8_1    Type = 9
	Q2_K    Type = 10
	Q3_K    Type = 11
	Q4_K    Type = 12
	Q5_K    Type = 13
	Q6_K    Type = 14
	Q8_K    Type = 15
	IQ2_XXS Type = 16
	IQ2_XS  Type = 17
	IQ3_XXS Type = 18
	IQ1_S   Type = 19
	IQ4_NL  Type = 20
	IQ3_S   Type = 21
	IQ2_S   Type = 22
	IQ4_XS  Type = 23
	I8      Type = 24
	I16     Type = 25
	I32     Type = 26
	I64     Type = 27
	F64     Type = 28
	IQ1_M   Type = 29
	BF16    Type = 30
	TQ1_0   Type = 34
	TQ2_0   Type = 35
	MXFP4   Type = 39
	NVFP4   Type = 40
	Q1_0    Type = 41
)

// qk is QK_K, the super-block size of the K-quant and most IQ types.
const qk = 256

type typeTraits struct {
	name      string
	blockSize int // elements per block
	typeSize  int // bytes per block
}

// typeTable holds every type a GGUF file may use, with ggml's block layout
// (ggml_type_traits / GGML_QUANT_SIZES). A zero entry is an unknown or
// retired type.
var typeTable = [...]typeTraits{
	F32:     {"F32", 1, 4},
	F16:     {"F16", 1, 2},
	Q4_0:    {"Q4_0", 32, 2 + 16},
	Q4_1:    {"Q4_1", 32, 2 + 2 + 16},
	Q5_0:    {"Q5_0", 32, 2 + 4 + 16},
	Q5_1:    {"Q5_1", 32, 2 + 2 + 4 + 16},
	Q8_0:    {"Q8_0", 32, 2 + 32},
	Q8_1:    {"Q8_1", 32, 4 + 4 + 32},
	Q2_K:    {"Q2_K", qk, 2 + 2 + qk/16 + qk/4},
	Q3_K:    {"Q3_K", qk, 2 + qk/4 + qk/8 + 12},
	Q4_K:    {"Q4_K", qk, 2 + 2 + qk/2 + 12},
	Q5_K:    {"Q5_K", qk, 2 + 2 + qk/2 + qk/8 + 12},
	Q6_K:    {"Q6_K", qk, 2 + qk/2 + qk/4 + qk/16},
	Q8_K:    {"Q8_K", qk, 4 + qk + qk/8},
	IQ2_XXS: {"IQ2_XXS", qk, 2 + qk/4},
	IQ2_XS:  {"IQ2_XS", qk, 2 + qk/4 + qk/32},
	IQ3_XXS: {"IQ3_XXS", qk, 2 + qk/4 + qk/8},
	IQ1_S:   {"IQ1_S", qk, 2 + qk/8 + qk/16},
	IQ4_NL:  {"IQ4_NL", 32, 2 + 16},
	IQ3_S:   {"IQ3_S", qk, 2 + qk/4 + qk/8 + qk/32 + 4},
	IQ2_S:   {"IQ2_S", qk, 2 + qk/4 + qk/16},
	IQ4_XS:  {"IQ4_XS", qk, 2 + 2 + qk/2 + qk/64},
	I8:      {"I8", 1, 1},
	I16:     {"I16", 1, 2},
	I32:     {"I32", 1, 4},
	I64:     {"I64", 1, 8},
	F64:     {"F64", 1, 8},
	IQ1_M:   {"IQ1_M", qk, qk/8 + qk/16 + qk/32},
	BF16:    {"BF16", 1, 2},
	TQ1_0:   {"TQ1_0", qk, 2 + 4*13},
	TQ2_0:   {"TQ2_0", qk, 2 + 64},
	MXFP4:   {"MXFP4", 32, 1 + 16},
	NVFP4:   {"NVFP4", 64, 4 + 32},
	Q1_0:    {"Q1_0", 128, 2 + 16},
}

func (t Type) traits() typeTraits {
	if int(t) < len(typeTable) {
		return typeTable[t]
	}
	return typeTraits{}
}

// Valid reports whether t is a type GGUF files may hold (known to this
// package and not retired).
func (t Type) Valid() bool { return t.traits().blockSize != 0 }

// String returns ggml's name for the type ("Q4_K"), or "type(N)" for an
// unknown number.
func (t Type) String() string {
	if tr := t.traits(); tr.name != "" {
		return tr.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockSize returns the number of elements in one block (1 for the plain
// types F32, F16, BF16, I8..I64, F64), or 0 for an invalid type.
func (t Type) BlockSize() int { return t.traits().blockSize }

// TypeSize returns the number of bytes of one block, or 0 for an invalid type.
func (t Type) TypeSize() int { return t.traits().typeSize }

// ByteSize returns the number of bytes that n elements of type t occupy. It
// fails when t is invalid, n is negative or not a multiple of the block
// size, or the size overflows int64.
func (t Type) ByteSize(n int64) (int64, error) {
	tr := t.traits()
	if tr.blockSize == 0 {
		return 0, fmt.Errorf("gguf: invalid tensor type %v", t)
	}
	if n < 0 || n%int64(tr.blockSize) != 0 {
		return 0, fmt.Errorf("gguf: %d elements is not a whole number of %v blocks of %d", n, t, tr.blockSize)
	}
	blocks := n / int64(tr.blockSize)
	if blocks > math.MaxInt64/int64(tr.typeSize) {
		return 0, fmt.Errorf("gguf: %d elements of %v overflow int64 bytes", n, t)
	}
	return blocks * int64(tr.typeSize), nil
}

// Types returns every valid type, in numeric order.
func Types() []Type {
	var out []Type
	for i := range typeTable {
		if t := Type(i); t.Valid() {
			out = append(out, t)
		}
	}
	return out
}

// ParseType returns the type of the given ggml name ("Q4_K", "BF16").
func ParseType(name string) (Type, error) {
	for i, tr := range typeTable {
		if tr.name == name && tr.name != "" {
			return Type(i), nil
		}
	}
	return 0, fmt.Errorf("gguf: unknown tensor type %q", name)
}
