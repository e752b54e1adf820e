// Package gguf reads GGUF files, llama.cpp's model format, and dequantizes
// their tensors to float32 bit for bit as ggml's reference code does.
//
// # Format
//
// A GGUF file (versions 2 and 3; little-endian) is:
//
//	"GGUF" magic, uint32 version, uint64 tensor count, uint64 metadata count
//	metadata: key (uint64 length + UTF-8 bytes), uint32 value type, value
//	tensor infos: name, uint32 n_dims, n_dims × uint64 dims, uint32 ggml
//	    type, uint64 offset (relative to the data section)
//	padding to general.alignment (default 32), then the data section
//
// Metadata values are the eight integer types, float32, float64, bool,
// strings (uint64 length + bytes) and arrays (uint32 element type, uint64
// count, elements; arrays may nest). Version 1 (32-bit counts) and
// big-endian files are recognised and refused with ErrVersion.
//
// # Dimension order
//
// GGUF lists a tensor's dimensions fastest-varying first, as ggml's ne[]:
// Dims[0] is the innermost, contiguous dimension. Row-major frameworks
// (PyTorch, NumPy) list them outermost first, so TensorInfo.Shape and
// File.Float32 return Dims reversed, and the data needs no transposition: a
// weight with Dims [4096, 11008] is a PyTorch [11008, 4096] matrix (11008
// rows of 4096 contiguous values, nn.Linear(4096, 11008).weight), and
// element [i, j] of the result of Float32 is data[i*4096+j]. Block
// quantization runs along Dims[0], which is therefore a multiple of the
// type's block size.
//
// # Reading
//
// Open reads and validates the whole header and memory-maps the file
// (Linux; elsewhere tensors are read with ReadAt), so opening a large model
// costs little memory; Bytes returns a zero-copy view of a tensor's encoded
// data, Float32 dequantizes it. OpenReaderAt and Parse read from an
// io.ReaderAt or a byte slice. Metadata gives typed access by key (String,
// Uint, Int, Float, Bool, Strings, Ints, Floats, Array) whose errors name
// the key and the value's actual type.
//
// Open checks everything before it is used: every count, string length,
// array length, dimension and size is bounded by the bytes left in the file
// before it drives an allocation (a 2^60-element array costs nothing);
// value types and ggml types must be known; bools are 0 or 1; arrays nest
// at most MaxArrayDepth deep; tensors have at most MaxDims dimensions,
// whose product and byte size must not overflow, with Dims[0] a multiple of
// the block size; keys and tensor names are non-empty, UTF-8 and unique;
// general.alignment, when present, is a power-of-two uint32; every tensor's
// data is aligned, lies within the file, and overlaps no other. Each
// violation is one error naming the file and the key or tensor, wrapping
// one of ErrHeader, ErrVersion, ErrMetadata, ErrTensorInfo, ErrOffsets or
// ErrDuplicate, all of which wrap ErrFormat.
//
// # Dequantization
//
// Dequantize converts F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K,
// Q3_K, Q4_K, Q5_K, Q6_K and Q8_K to float32 with results identical, bit for
// bit, to ggml's dequantize_row_* functions as mirrored by the gguf Python
// package: checked against fixtures from tools/gguf/gen_quants.py (for
// Q8_K, which that package does not dequantize, against ggml's formula
// written out in numpy) and against gguf-py on every tensor of two real
// models. Other types (the IQ and TQ families, MXFP4, ...) can be opened
// and read as bytes; Dequantize reports ErrUnsupported for them. Type gives
// every type's block size and bytes per block.
package gguf
