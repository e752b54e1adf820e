package gguf

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// quantFixture is one file written by tools/gguf/gen_quants.py.
type quantFixture struct {
	typ  Type
	n    int
	raw  []byte
	want []uint32 // expected float32 bit patterns
}

func readQuantFixture(t *testing.T, path string) quantFixture {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 16 || string(b[:4]) != "GQF1" {
		t.Fatalf("%s: not a GQF1 fixture", path)
	}
	le := binary.LittleEndian
	fx := quantFixture{typ: Type(le.Uint32(b[4:])), n: int(le.Uint32(b[8:]))}
	r := int(le.Uint32(b[12:]))
	if len(b) != 16+r+4*fx.n {
		t.Fatalf("%s: %d bytes, header says %d", path, len(b), 16+r+4*fx.n)
	}
	fx.raw = b[16 : 16+r]
	for i := range fx.n {
		fx.want = append(fx.want, le.Uint32(b[16+r+4*i:]))
	}
	return fx
}

// TestDequantizeReference compares every fixture bit for bit with the
// reference values that the gguf Python package computed.
func TestDequantizeReference(t *testing.T) {
	var manifest struct {
		Files map[string]struct {
			Type     string `json:"type"`
			Elements int    `json:"elements"`
			SHA256   string `json:"sha256"`
		} `json:"files"`
		Exhaustive map[string]string `json:"exhaustive_sha256"`
	}
	mb, err := os.ReadFile("testdata/quants/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(mb, &manifest); err != nil {
		t.Fatal(err)
	}
	var covered []Type
	for name, info := range manifest.Files {
		t.Run(info.Type, func(t *testing.T) {
			path := filepath.Join("testdata", "quants", name)
			b, _ := os.ReadFile(path)
			if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != info.SHA256 {
				t.Fatalf("%s: sha256 differs from the manifest", name)
			}
			fx := readQuantFixture(t, path)
			if fx.typ.String() != info.Type || fx.n != info.Elements {
				t.Fatalf("fixture says %v × %d, manifest %s × %d", fx.typ, fx.n, info.Type, info.Elements)
			}
			covered = append(covered, fx.typ)
			got := make([]float32, fx.n+1)
			got[fx.n] = 42 // a sentinel: Dequantize writes only dst[:n]
			if err := Dequantize(fx.typ, fx.raw, fx.n, got); err != nil {
				t.Fatal(err)
			}
			if got[fx.n] != 42 {
				t.Error("Dequantize wrote past n")
			}
			bs := fx.typ.BlockSize()
			bad := 0
			for i, w := range fx.want {
				if g := math.Float32bits(got[i]); g != w {
					if bad < 5 {
						t.Errorf("element %d (block %d, index %d): got %#08x (%g), want %#08x (%g)",
							i, i/bs, i%bs, g, got[i], w, math.Float32frombits(w))
					}
					bad++
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d elements differ", bad, fx.n)
			}
		})
	}
	slices.Sort(covered)
	var want []Type
	for _, ty := range Types() {
		if ty.CanDequantize() {
			want = append(want, ty)
		}
	}
	if !slices.Equal(covered, want) {
		t.Errorf("fixtures cover %v, Dequantize supports %v", covered, want)
	}
	// F16 and BF16: all 65536 bit patterns against the reference digests.
	for _, ty := range []Type{F16, BF16} {
		raw := make([]byte, 2<<16)
		for i := range 1 << 16 {
			binary.LittleEndian.PutUint16(raw[2*i:], uint16(i))
		}
		out := make([]float32, 1<<16)
		if err := Dequantize(ty, raw, len(out), out); err != nil {
			t.Fatal(err)
		}
		bits := make([]byte, 4*len(out))
		for i, v := range out {
			binary.LittleEndian.PutUint32(bits[4*i:], math.Float32bits(v))
		}
		if sum := sha256.Sum256(bits); hex.EncodeToString(sum[:]) != manifest.Exhaustive[ty.String()] {
			t.Errorf("%v: all 65536 conversions hash to %x, reference %s", ty, sum, manifest.Exhaustive[ty.String()])
		}
	}
}

func TestDequantizeErrors(t *testing.T) {
	dst := make([]float32, 64)
	tests := []struct {
		name string
		typ  Type
		raw  []byte
		n    int
		dst  []float32
		is   error
	}{
		{"unsupported type", IQ2_XXS, make([]byte, 66), 256, make([]float32, 256), ErrUnsupported},
		{"retired type", Type(4), nil, 0, dst, ErrUnsupported},
		{"partial block", Q4_0, make([]byte, 18), 16, dst, nil},
		{"short raw", Q4_0, make([]byte, 17), 32, dst, nil},
		{"long raw", Q8_0, make([]byte, 35), 32, dst, nil},
		{"short dst", Q8_0, make([]byte, 68), 64, dst[:63], nil},
		{"negative n", F32, nil, -1, dst, nil},
	}
	for _, tc := range tests {
		err := Dequantize(tc.typ, tc.raw, tc.n, tc.dst)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: %v does not wrap %v", tc.name, err, tc.is)
		}
	}
	if err := Dequantize(Q6_K, nil, 0, nil); err != nil {
		t.Errorf("zero elements: %v", err)
	}
}

func TestTypeTable(t *testing.T) {
	for _, c := range []struct {
		typ    Type
		bs, ts int
	}{{F32, 1, 4}, {F16, 1, 2}, {BF16, 1, 2}, {Q4_0, 32, 18}, {Q4_1, 32, 20}, {Q5_0, 32, 22}, {Q5_1, 32, 24},
		{Q8_0, 32, 34}, {Q2_K, 256, 84}, {Q3_K, 256, 110}, {Q4_K, 256, 144}, {Q5_K, 256, 176}, {Q6_K, 256, 210},
		{Q8_K, 256, 292}, {IQ4_XS, 256, 136}, {MXFP4, 32, 17}} {
		if c.typ.BlockSize() != c.bs || c.typ.TypeSize() != c.ts {
			t.Errorf("%v: block %d × %d bytes, want %d × %d", c.typ, c.typ.BlockSize(), c.typ.TypeSize(), c.bs, c.ts)
		}
		if p, err := ParseType(c.typ.String()); err != nil || p != c.typ {
			t.Errorf("ParseType(%q) = %v, %v", c.typ.String(), p, err)
		}
	}
	for _, bad := range []Type{4, 5, 31, 32, 33, 36, 37, 38, 42, 1 << 31} {
		if bad.Valid() || bad.BlockSize() != 0 || bad.CanDequantize() {
			t.Errorf("type %d should be invalid", uint32(bad))
		}
	}
	if n, err := Q4_K.ByteSize(4096 * 11008); err != nil || n != 4096*11008/256*144 {
		t.Errorf("ByteSize = %d, %v", n, err)
	}
	if _, err := Q4_K.ByteSize(100); err == nil {
		t.Error("ByteSize of a partial block succeeded")
	}
	if _, err := Q8_K.ByteSize(math.MaxInt64 / 256 * 256); err == nil {
		t.Error("ByteSize overflow not detected")
	}
	if _, err := ParseType("Q9_K"); err == nil {
		t.Error("ParseType accepted an unknown name")
	}
}

// f16Slow is the textbook conversion, to check f16's rescaling trick.
func f16Slow(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch exp {
	case 0:
		v := float32(math.Ldexp(float64(mant), -24))
		return math.Float32frombits(math.Float32bits(v) | sign)
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

func TestF16AllPatterns(t *testing.T) {
	for i := range 1 << 16 {
		if g, w := math.Float32bits(f16(uint16(i))), math.Float32bits(f16Slow(uint16(i))); g != w {
			t.Fatalf("f16(%#04x) = %#08x, want %#08x", i, g, w)
		}
	}
}

func BenchmarkDequantize(b *testing.B) {
	const n = 1 << 20 // elements
	for _, typ := range []Type{F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K} {
		b.Run(typ.String(), func(b *testing.B) {
			size, _ := typ.ByteSize(n)
			raw := make([]byte, size)
			for i := range raw {
				raw[i] = byte(i*131 + i>>7)
			}
			// Keep every scale field a small finite f16 (0x2c00 = 1/16) so
			// the benchmark measures ordinary arithmetic.
			setScales(typ, raw)
			dst := make([]float32, n)
			b.SetBytes(4 * n) // output bytes
			b.ReportAllocs()
			for b.Loop() {
				if err := Dequantize(typ, raw, n, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func setScales(typ Type, raw []byte) {
	offs := map[Type][]int{Q4_0: {0}, Q4_1: {0, 2}, Q5_0: {0}, Q5_1: {0, 2}, Q8_0: {0}, Q2_K: {80, 82},
		Q3_K: {108}, Q4_K: {0, 2}, Q5_K: {0, 2}, Q6_K: {208}}[typ]
	ts := typ.TypeSize()
	for b := 0; b+ts <= len(raw) && len(offs) > 0; b += ts {
		for _, o := range offs {
			binary.LittleEndian.PutUint16(raw[b+o:], 0x2c00)
		}
	}
	if typ == Q8_K {
		for b := 0; b+ts <= len(raw); b += ts {
			binary.LittleEndian.PutUint32(raw[b:], math.Float32bits(0.01))
		}
	}
	if typ == F16 || typ == BF16 {
		for i := 0; i+1 < len(raw); i += 2 {
			raw[i+1] &= 0x3f // finite, not NaN
		}
	}
}
