package quant

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// randBlocks returns n rows of k random-byte weights of type typ with
// finite random half-precision scales (any quant byte, Q8_0's -128).
func randBlocks(r *rand.Rand, typ Type, n, k int) []byte {
	rb, _ := RowBytes(typ, k)
	w := make([]byte, n*rb)
	for i := range w {
		w[i] = byte(r.Uint32())
	}
	ts := typ.TypeSize()
	for b := 0; b < len(w)/ts; b++ {
		for _, off := range halfOffsets[typ] {
			put16(w[b*ts+off:], f32to16(float32(r.NormFloat64()*0.01)))
		}
	}
	return w
}

func TestPackLayout(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, typ := range []Type{Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K} {
		for _, n := range []int{0, 5, 16, 37, 64} {
			k := 96
			if typ.BlockSize() == qkK {
				k = 2 * qkK
			}
			rb, _ := RowBytes(typ, k)
			w := randBlocks(r, typ, n, k)
			p := make([]byte, len(w))
			if err := Pack(typ, p, w, n, rb); err != nil {
				t.Fatal(err)
			}
			back := make([]byte, len(w))
			if err := Unpack(typ, back, p, n, rb); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back, w) {
				t.Fatalf("%v n=%d: Unpack(Pack(w)) != w", typ, n)
			}
			full := n / PackRows * PackRows
			if !bytes.Equal(p[full*rb:], w[full*rb:]) {
				t.Fatalf("%v n=%d: the row-major tail moved", typ, n)
			}
			if full == 0 {
				continue
			}
			// The documented places: block column 1 of group 0, row 5.
			ts := typ.TypeSize()
			head, chunks := packHead(typ)
			col := p[PackRows*ts:]
			blk := w[5*rb+ts:]
			if col[10] != blk[0] || col[11] != blk[1] {
				t.Fatalf("%v: d of row 5 not at 2·5", typ)
			}
			if (typ == Q4_1 || typ == Q5_1) && (col[32+10] != blk[2] || col[32+11] != blk[3]) {
				t.Fatalf("%v: m of row 5 not at 32+2·5", typ)
			}
			if typ == Q5_0 || typ == Q5_1 {
				// qh: the fifth bit of element e = 4c+i at byte i, bit c.
				qh, st := blk[head:][:4], col[head*PackRows+20:][:4]
				for e := range 32 {
					c, i := e/4, e%4
					if qh[e/8]>>(e%8)&1 != st[i]>>c&1 {
						t.Fatalf("%v: qh bit %d of row 5 not at byte %d, bit %d", typ, e, i, c)
					}
				}
			}
			c := chunks - 1
			if typ == Q4_K {
				// qs chunk 8p+l (chunk 3+8p+l) holds bytes 16+32p+l+8i.
				p, l := 3, 7
				for i := range 4 {
					if col[head*PackRows+c*64+20+i] != blk[16+32*p+l+8*i] {
						t.Fatalf("Q4_K: qs byte %d of chunk %d of row 5 misplaced", i, c)
					}
				}
				if !bytes.Equal(col[head*PackRows+2*64+20:][:4], blk[12:16]) {
					t.Fatalf("Q4_K: the last scale chunk of row 5 misplaced")
				}
			} else if !bytes.Equal(col[head*PackRows+c*64+20:][:4], blk[head+4*c:][:4]) {
				t.Fatalf("%v: chunk %d of row 5 misplaced", typ, c)
			}
		}
	}
	for _, tc := range []struct {
		name     string
		typ      Type
		n, rb    int
		dst, src int
	}{
		{"no layout", Q6_K, 16, 210, 3360, 3360},
		{"short src", Q4_0, 16, 18, 288, 287},
		{"short dst", Q4_0, 16, 18, 10, 288},
		{"partial block", Q8_0, 16, 35, 560, 560},
		{"negative", Q4_1, -1, 20, 0, 0},
	} {
		err := Pack(tc.typ, make([]byte, tc.dst), make([]byte, tc.src), tc.n, tc.rb)
		if err == nil {
			t.Errorf("%s: Pack accepted it", tc.name)
		}
	}
}

// TestMatMulPacked runs r16 weights at every level (packed kernels where
// the level has them, unpacking elsewhere), serially and shared out, and
// wants the generic row-major bits.
func TestMatMulPacked(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, typ := range []Type{Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K} {
		shapes := []shape{{1, 16, 32}, {1, 37, 576}, {1, 64, 96}, {1, 5, 64}, {5, 48, 160}, {3, 21, 32}, {2, 160, 576}}
		if typ == Q4_K {
			shapes = []shape{{1, 16, 256}, {1, 37, 768}, {1, 64, 512}, {1, 5, 256}, {5, 48, 1280}, {3, 21, 256}, {2, 160, 1536}}
		}
		for _, sh := range shapes {
			rb, _ := RowBytes(typ, sh.k)
			w := randBlocks(r, typ, sh.n, sh.k)
			p := make([]byte, len(w))
			if err := Pack(typ, p, w, sh.n, rb); err != nil {
				t.Fatal(err)
			}
			x := randActs(r, sh.m, sh.k)
			want := make([]float32, sh.m*sh.n)
			if err := For(LevelGeneric).MatMul(typ, w, sh.n, sh.k, x, sh.m, want, nil); err != nil {
				t.Fatal(err)
			}
			for _, kern := range levels(t) {
				for pi, par := range []func(int, func(int, int)){nil, goPar} {
					name := fmt.Sprintf("%v/%dx%dx%d/%s/par=%d", typ, sh.m, sh.n, sh.k, kern.Level(), pi)
					got := make([]float32, sh.m*sh.n)
					if err := kern.MatMulMulti(typ, []Weight{{W: p, N: sh.n, Y: got, Packed: true}}, sh.k, x, sh.m, par); err != nil {
						t.Fatal(err)
					}
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s: y[%d] = %g, row-major generic %g", name, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}
