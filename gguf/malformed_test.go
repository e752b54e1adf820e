package gguf

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// rawFile builds a file from hand-written parts: the header with the given
// counts, then whatever body writes (metadata pairs, tensor infos, data).
func rawFile(version uint32, nTensors, nKV uint64, body func(e *enc)) []byte {
	var e enc
	e.WriteString(Magic)
	e.u32(version)
	e.u64(nTensors)
	e.u64(nKV)
	if body != nil {
		body(&e)
	}
	return e.Bytes()
}

// rawInfo is a tensor info written verbatim.
type rawInfo struct {
	name string
	dims []uint64
	typ  uint32
	off  uint64
}

// tensorFile writes kvs, then infos, pads to align, then dataLen zero bytes.
func tensorFile(kvs []KV, infos []rawInfo, align int, dataLen int) []byte {
	return rawFile(3, uint64(len(infos)), uint64(len(kvs)), func(e *enc) {
		for _, kv := range kvs {
			e.str(kv.Key)
			e.value(kv.Value)
		}
		for _, ti := range infos {
			e.str(ti.name)
			e.u32(uint32(len(ti.dims)))
			for _, d := range ti.dims {
				e.u64(d)
			}
			e.u32(ti.typ)
			e.u64(ti.off)
		}
		for e.Len()%align != 0 {
			e.WriteByte(0)
		}
		e.Write(make([]byte, dataLen))
	})
}

func kv1(key string, v Value) func(e *enc) {
	return func(e *enc) { e.str(key); e.value(v); e.Write(make([]byte, 64)) }
}

func TestMalformed(t *testing.T) {
	huge := uint64(1) << 60
	nest := func(depth int) func(e *enc) {
		return func(e *enc) {
			e.str("deep")
			e.u32(uint32(TypeArray))
			for range depth - 1 {
				e.u32(uint32(TypeArray))
				e.u64(1)
			}
			e.u32(uint32(TypeUint8))
			e.u64(0)
		}
	}
	f32 := uint32(F32)
	tests := []struct {
		name    string
		data    []byte
		is      error
		mention string
	}{
		{"empty", nil, ErrHeader, "too short"},
		{"bad magic", append([]byte("GGML"), make([]byte, 20)...), ErrHeader, `magic is "GGML"`},
		{"short header", []byte("GGUF\x03\x00\x00\x00\x00"), ErrHeader, "24-byte header"},
		{"version 1", rawFile(1, 0, 0, nil), ErrVersion, "version 1"},
		{"big-endian", rawFile(3<<24, 0, 0, nil), ErrVersion, "big-endian"},
		{"version 4", rawFile(4, 0, 0, nil), ErrVersion, "version 4"},
		{"huge kv count", rawFile(3, 0, huge, nil), ErrHeader, "1152921504606846976 metadata pairs"},
		{"huge tensor count", rawFile(3, huge, 0, nil), ErrHeader, "1152921504606846976 tensor infos"},
		{"huge key length", rawFile(3, 0, 1, func(e *enc) { e.u64(huge); e.Write(make([]byte, 20)) }), ErrMetadata, "string length 1152921504606846976"},
		{"huge string value", rawFile(3, 0, 1, func(e *enc) { e.str("k"); e.u32(uint32(TypeString)); e.u64(1 << 62); e.Write(make([]byte, 8)) }), ErrMetadata, `"k"`},
		{"huge u8 array", rawFile(3, 0, 1, func(e *enc) { e.str("k"); e.u32(9); e.u32(0); e.u64(huge); e.Write(make([]byte, 8)) }), ErrMetadata, "1152921504606846976 elements"},
		{"huge string array", rawFile(3, 0, 1, func(e *enc) { e.str("k"); e.u32(9); e.u32(8); e.u64(huge); e.Write(make([]byte, 8)) }), ErrMetadata, "array[string]"},
		{"huge nested array", rawFile(3, 0, 1, func(e *enc) { e.str("k"); e.u32(9); e.u32(9); e.u64(huge); e.Write(make([]byte, 12)) }), ErrMetadata, "array[array]"},
		{"huge inner array", rawFile(3, 0, 1, func(e *enc) {
			e.str("k")
			e.u32(9)
			e.u32(9)
			e.u64(1)
			e.u32(uint32(TypeFloat64))
			e.u64(huge)
			e.Write(make([]byte, 16))
		}), ErrMetadata, "array[float64]"},
		{"unknown value type", rawFile(3, 0, 1, kv1("k", Value{typ: 13})), ErrMetadata, "unknown value type 13"},
		{"unknown array type", rawFile(3, 0, 1, func(e *enc) { e.str("k"); e.u32(9); e.u32(77); e.u64(0); e.Write(make([]byte, 8)) }), ErrMetadata, "element type 77"},
		{"too deep", rawFile(3, 0, 1, nest(MaxArrayDepth+1)), ErrMetadata, "nested more than"},
		{"bool 2", rawFile(3, 0, 1, kv1("k", Value{typ: TypeBool, bits: 2})), ErrMetadata, "bool byte is 2"},
		{"bool array 3", rawFile(3, 0, 1, kv1("k", vArr([]uint8{0, 3}))), nil, ""}, // a uint8 array: fine
		{"empty key", rawFile(3, 0, 1, kv1("", vU8(1))), ErrMetadata, "empty key"},
		{"non-UTF-8 key", rawFile(3, 0, 1, kv1("k\xff", vU8(1))), ErrMetadata, "not UTF-8"},
		{"duplicate key", rawFile(3, 0, 2, func(e *enc) { e.str("k"); e.value(vU8(1)); e.str("k"); e.value(vU8(2)) }), ErrDuplicate, `"k" appears twice`},
		{"truncated value", rawFile(3, 0, 1, func(e *enc) { e.str("k"); e.u32(uint32(TypeUint64)); e.Write([]byte{1, 2}) }), ErrHeader, "truncated"},
		{"alignment u64", tensorFile([]KV{{"general.alignment", vU64(32)}}, nil, 1, 0), ErrMetadata, "general.alignment is uint64"},
		{"alignment 0", tensorFile([]KV{{"general.alignment", vU32(0)}}, nil, 1, 0), ErrMetadata, "alignment 0"},
		{"alignment 48", tensorFile([]KV{{"general.alignment", vU32(48)}}, nil, 1, 0), ErrMetadata, "alignment 48 is not a power of two"},
		{"empty tensor name", tensorFile(nil, []rawInfo{{"", []uint64{1}, f32, 0}}, 32, 32), ErrTensorInfo, "empty name"},
		{"duplicate tensor", tensorFile(nil, []rawInfo{{"a", []uint64{1}, f32, 0}, {"a", []uint64{1}, f32, 32}}, 32, 64), ErrDuplicate, `tensor "a" appears twice`},
		{"five dims", tensorFile(nil, []rawInfo{{"a", []uint64{1, 1, 1, 1, 1}, f32, 0}}, 32, 32), ErrTensorInfo, "5 dimensions"},
		{"negative dim", tensorFile(nil, []rawInfo{{"a", []uint64{1 << 63}, f32, 0}}, 32, 32), ErrTensorInfo, "beyond int64"},
		{"dims overflow", tensorFile(nil, []rawInfo{{"a", []uint64{1 << 32, 1 << 32}, f32, 0}}, 32, 32), ErrTensorInfo, "overflows"},
		{"bytes overflow", tensorFile(nil, []rawInfo{{"a", []uint64{1 << 31, 1 << 31}, f32, 0}}, 32, 32), ErrTensorInfo, "overflow"},
		{"retired type", tensorFile(nil, []rawInfo{{"a", []uint64{32}, 4, 0}}, 32, 32), ErrTensorInfo, "retired ggml type 4"},
		{"unknown type", tensorFile(nil, []rawInfo{{"a", []uint64{32}, 1000, 0}}, 32, 32), ErrTensorInfo, "type 1000"},
		{"partial block", tensorFile(nil, []rawInfo{{"a", []uint64{33, 2}, uint32(Q4_0), 0}}, 32, 64), ErrTensorInfo, "not a multiple of the Q4_0 block size 32"},
		{"unaligned offset", tensorFile(nil, []rawInfo{{"a", []uint64{1}, f32, 16}}, 32, 64), ErrOffsets, "not a multiple of the alignment 32"},
		{"past the end", tensorFile(nil, []rawInfo{{"a", []uint64{16}, f32, 0}}, 32, 60), ErrOffsets, "run past the end"},
		{"offset past the end", tensorFile(nil, []rawInfo{{"a", []uint64{1}, f32, 1 << 40}}, 32, 64), ErrOffsets, "run past the end"},
		{"huge offset", tensorFile(nil, []rawInfo{{"a", []uint64{1}, f32, 1 << 63}}, 32, 64), ErrOffsets, "beyond int64"},
		{"overlap", tensorFile(nil, []rawInfo{{"a", []uint64{16}, f32, 0}, {"b", []uint64{8}, f32, 32}}, 32, 128), ErrOffsets, `"a" [`},
		{"no data section", tensorFile(nil, []rawInfo{{"a", []uint64{1}, f32, 0}}, 1, 0), ErrOffsets, ""},
		{"non-UTF-8 tensor", tensorFile(nil, []rawInfo{{"\xc3", []uint64{1}, f32, 0}}, 32, 32), ErrTensorInfo, "not UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := Parse(tc.data)
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
				t.Errorf("parsing allocated %d bytes", grew)
			}
			if tc.is == nil {
				if err != nil {
					t.Fatalf("rejected a valid file: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, tc.is) || !errors.Is(err, ErrFormat) {
				t.Errorf("%v does not wrap %v and ErrFormat", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.mention) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q: want one line mentioning %q", err, tc.mention)
			}
			// The same verdict through ReadAt, without the file in memory.
			_, err2 := OpenReaderAt(bytes.NewReader(tc.data), int64(len(tc.data)), "x")
			if !errors.Is(err2, tc.is) {
				t.Errorf("OpenReaderAt: %v", err2)
			}
		})
	}
}

// TestTruncations cuts a valid file at every length: each prefix is
// rejected with a format error (or, cut exactly after the header of a file
// without tensors, accepted), never a panic.
func TestTruncations(t *testing.T) {
	spec := sampleFile()
	data := spec.encode()
	for n := range len(data) {
		_, err := Parse(data[:n])
		if err == nil {
			t.Fatalf("prefix of %d bytes (of %d) accepted", n, len(data))
		}
		if !errors.Is(err, ErrFormat) {
			t.Fatalf("prefix of %d bytes: %v is not a format error", n, err)
		}
	}
	if _, err := Parse(data); err != nil {
		t.Fatal(err)
	}
}
