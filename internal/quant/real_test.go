package quant

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gotpu/gotpu/gguf"
)

// TestMatMulRealGGUF multiplies with 2-D weights of the real GGUF files
// (tools/gguf/fetch.sh: SmolLM2-135M Q4_1, Gemma-3-270M Q4_K_M; skipped
// when absent): up to 48 rows of two tensors of each weight type, every
// level bit for bit against the generic code, and the generic result
// against the float64 product with the dequantized weight within the
// activation-quantization bound of TestMatMulVsF32.
func TestMatMulRealGGUF(t *testing.T) {
	cache := os.Getenv("GOTPU_TESTDATA_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "gotpu-testdata")
	}
	ks := levels(t)
	r := rand.New(rand.NewPCG(5, 6))
	ran := 0
	for _, file := range []string{"SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"} {
		path := filepath.Join(cache, "gguf", file)
		if _, err := os.Stat(path); err != nil {
			t.Logf("%s not found (tools/gguf/fetch.sh): skipped", path)
			continue
		}
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		seen := map[Type]int{}
		for _, ti := range f.Tensors() {
			typ := Type(ti.Type)
			if !IsWeight(typ) || len(ti.Dims) != 2 || seen[typ] >= 2 {
				continue
			}
			seen[typ]++
			k, n := int(ti.Dims[0]), min(int(ti.Dims[1]), 48)
			raw, err := f.Bytes(ti.Name)
			if err != nil {
				t.Fatal(err)
			}
			rb, err := RowBytes(typ, k)
			if err != nil {
				t.Fatalf("%s: %v", ti.Name, err)
			}
			w := raw[:n*rb]
			const m = 5
			x := randActs(r, m, k)
			want := make([]float32, m*n)
			if err := For(LevelGeneric).MatMul(typ, w, n, k, x, m, want, nil); err != nil {
				t.Fatal(err)
			}
			for _, kern := range ks {
				got := make([]float32, m*n)
				if err := kern.MatMul(typ, w, n, k, x, m, got, goPar); err != nil {
					t.Fatal(err)
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s %v %s: y[%d] = %g, generic %g", ti.Name, typ, kern.Level(), i, got[i], want[i])
					}
				}
			}
			at, _ := ActType(typ)
			a := newActs(at, x, m, k, nil, 0, true)
			wd := make([]float32, k)
			bs := at.BlockSize()
			for j := range n {
				if err := DequantizeRow(typ, w[j*rb:(j+1)*rb], wd); err != nil {
					t.Fatal(err)
				}
				for i := range m {
					var ref, bound, mag float64
					for p, wv := range wd {
						xv := float64(x[i*k+p])
						ref += float64(wv) * xv
						mag += math.Abs(float64(wv) * xv)
						bound += math.Abs(float64(wv)) * 0.57 * math.Abs(float64(a.d[i*a.nb+p/bs]))
					}
					if e := math.Abs(float64(want[i*n+j]) - ref); e > bound+1e-5*mag {
						t.Errorf("%s: y[%d,%d] = %g, f64 %g: error %g > %g", ti.Name, i, j, want[i*n+j], ref, e, bound+1e-5*mag)
					}
				}
			}
			ran++
			t.Logf("%s: %s %v [%d rows of %d]", file, ti.Name, typ, n, k)
		}
	}
	if ran == 0 {
		t.Skip("no real GGUF file")
	}
}
