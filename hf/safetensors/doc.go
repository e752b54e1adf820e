// Package safetensors reads and writes Hugging Face safetensors files and
// sharded checkpoints, exposing raw tensor bytes with their dtype and shape.
//
// # Format
//
// A file is an 8-byte little-endian header length N, N bytes of UTF-8 JSON,
// then the data section. The JSON object maps each tensor name to
// {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]} (offsets
// relative to the data section) and may hold a "__metadata__" object of
// strings. Data is little-endian and row-major.
//
// # Reading
//
// Open reads and validates only the header and memory-maps the file (Linux;
// elsewhere tensors are read with ReadAt), so opening a multi-gigabyte
// checkpoint costs almost no memory; Bytes returns a zero-copy view. Open
// enforces everything the reference implementation enforces, and more:
//
//   - the header is at most MaxHeaderSize bytes, lies within the file, is
//     UTF-8 and exactly one JSON object (trailing spaces allowed);
//   - every tensor has dtype, shape and data_offsets; the dtype is known;
//     dimensions are non-negative integers whose product (times the element
//     bits) does not overflow and matches end-begin;
//   - sorted by offset, tensors tile the data section exactly: no gap, no
//     overlap, nothing after the last tensor;
//   - no tensor name (and no metadata key) appears twice.
//
// Each violation is an error naming the tensor and wrapping one of
// ErrInvalidHeader, ErrHeaderTooLarge, ErrDType, ErrShape, ErrOffsets or
// ErrDuplicate, all of which wrap ErrFormat.
//
// OpenIndex and OpenDir present the shards of a model.safetensors.index.json
// checkpoint as one name→tensor view (Sharded); shards are opened on first
// use. OpenPath picks Open, OpenIndex or OpenDir from what a path is. *File
// and *Sharded both implement Reader.
//
// # Writing
//
// Write writes a file atomically (temporary file in the same directory,
// fsync, rename, directory fsync) with the reference implementation's exact
// layout: tensors sorted by descending dtype alignment then name, compact
// JSON with __metadata__ first, header padded with spaces to a multiple of 8.
// Files written by the Python safetensors library are reproduced byte for
// byte (see tools/stref/gen.py).
//
// # DTypes
//
// All of the reference's dtypes are supported, including the packed
// sub-byte F4 / F6 types (Bits reports their size). F16, BF16 and the F8
// variants convert to float32 exactly (F16ToFloat32, F8E4M3ToFloat32, ...,
// DecodeFloat32); Float32ToF16 and Float32ToBF16 round to nearest even.
package safetensors
