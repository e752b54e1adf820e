package models

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dist"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/gguf"
	"github.com/gotpu/gotpu/internal/quant"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// keptQuantized counts a model's linear layers whose weight is kept
// quantized, and returns their encodings.
func keptQuantized(lm *CausalLM) map[string]int {
	out := map[string]int{}
	add := func(l *Linear) {
		if l == nil {
			return
		}
		if q, ok := l.W.(Quantized); ok {
			out[q.Block.Name]++
		}
	}
	for _, b := range lm.layers {
		for _, l := range []*Linear{b.q, b.k, b.v, b.o, b.qkv, b.gate, b.up, b.down, b.fc} {
			add(l)
		}
	}
	add(lm.head)
	return out
}

// keepStats compares the last-position logits of a kept-quantized model
// with the dequantized f32 model's: the largest difference, that over the
// spread (max - min) of the f32 logits, and whether the argmax agrees.
func keepStats(a, b []float32) (worst, rel float64, sameTop bool) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range a {
		worst = math.Max(worst, math.Abs(float64(a[i]-b[i])))
		lo, hi = math.Min(lo, float64(b[i])), math.Max(hi, float64(b[i]))
	}
	argmax := func(v []float32) int {
		best := 0
		for i, x := range v {
			if x > v[best] {
				best = i
			}
		}
		return best
	}
	return worst, worst / (hi - lo), argmax(a) == argmax(b)
}

// TestGGUFKeepQuantized runs the real SmolLM2 (Q4_1, tied Q8_0 head) and
// Gemma-3 (Q4_K/Q5_0/Q6_K/Q8_0) files with their linear weights kept in
// blocks against the same files dequantized to f32, in Strict and compiled
// modes. Every kept weight dequantizes to the f32 model's matrix bit for
// bit (checkKeptWeights: the loading, the llama row permutation and the
// tied head are exact), so the logits differ only by the products: the
// kept model multiplies as llama.cpp's CPU backend does (activations
// quantized to 8 bits per block, ggml's vec_dot arithmetic), which puts
// its last-position logits 0.6–1.3 (1.4–2.5% of the logits' spread) from
// the f32 model's on these prompts (bound: 5%, same argmax); the first 4
// greedy tokens agree (later ones part at near-ties, after 5–7 steps on
// these prompts).
func TestGGUFKeepQuantized(t *testing.T) {
	for _, tc := range []struct {
		name   string
		greedy int // greedy steps that must agree
	}{{"smollm2", 4}, {"gemma3", 4}} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.name != "smollm2" {
				t.Skip("-short: SmolLM2 only")
			}
			ref := readGGUFRef(t, tc.name)
			path := ggufFile(t, ref.File)
			cases := ref.Cases[:2]
			if testing.Short() {
				cases = cases[:1]
			}
			dev := device.Device{Type: "cpu"}
			f32, err := LoadGGUF(path, Options{Device: dev, DType: dtype.F32})
			if err != nil {
				t.Fatal(err)
			}
			keep, err := LoadGGUF(path, Options{Device: dev, DType: dtype.F32, KeepQuantized: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(keep.Unused) > 0 {
				t.Errorf("unused tensors: %v", keep.Unused)
			}
			kinds := keptQuantized(keep.LM)
			t.Logf("kept quantized: %v", kinds)
			if _, ok := keep.LM.head.W.(Quantized); !ok {
				t.Errorf("the tied head is %T, want the embedding's blocks (Quantized)", keep.LM.head.W)
			}
			checkKeptWeights(t, keep.LM, f32.LM)
			ms := []runMode{modes[0], modes[2]}
			if testing.Short() {
				ms = ms[:1]
			}
			for _, md := range ms {
				t.Run(md.name, func(t *testing.T) {
					old := tensor.SetMode(md.mode)
					defer tensor.SetMode(old)
					f32.LM.Compiled, keep.LM.Compiled = md.compiled, md.compiled
					for ci, c := range cases {
						want, tl, err := f32.LM.ForwardLogits([][]int{c.IDs}, 0)
						if err != nil {
							t.Fatal(err)
						}
						got, _, err := keep.LM.ForwardLogits([][]int{c.IDs}, 0)
						if err != nil {
							t.Fatal(err)
						}
						v := ref.VocabSize
						worst, rel, same := keepStats(got[(tl-1)*v:][:v], want[(tl-1)*v:][:v])
						t.Logf("case %d: last-position logits differ by at most %.3g (%.2f%% of the f32 spread), same argmax %v", ci, worst, 100*rel, same)
						if rel > 0.05 || !same {
							t.Errorf("case %d: kept-quantized logits differ by %.3g (%.2f%% of the spread), same argmax %v", ci, worst, 100*rel, same)
						}
						opts := GenerateOptions{MaxNewTokens: tc.greedy}
						rw, err := f32.LM.Generate(context.Background(), [][]int{c.IDs}, opts)
						if err != nil {
							t.Fatal(err)
						}
						rg, err := keep.LM.Generate(context.Background(), [][]int{c.IDs}, opts)
						if err != nil {
							t.Fatal(err)
						}
						if !slices.Equal(rg.Tokens[0], rw.Tokens[0]) {
							t.Errorf("case %d: greedy %v, f32 model %v", ci, rg.Tokens[0], rw.Tokens[0])
						}
					}
				})
			}
		})
	}
}

// checkKeptWeights checks that every weight the kept model holds in blocks
// dequantizes (Quantized.Dense, ggml's reference) to the f32 model's
// matrix bit for bit.
func checkKeptWeights(t *testing.T, keep, f32 *CausalLM) {
	t.Helper()
	pairs := [][2]*Linear{{keep.head, f32.head}}
	for i, b := range keep.layers {
		fb := f32.layers[i]
		pairs = append(pairs, [2]*Linear{b.q, fb.q}, [2]*Linear{b.k, fb.k}, [2]*Linear{b.v, fb.v}, [2]*Linear{b.o, fb.o},
			[2]*Linear{b.gate, fb.gate}, [2]*Linear{b.up, fb.up}, [2]*Linear{b.down, fb.down})
	}
	n := 0
	for _, p := range pairs {
		if p[0] == nil {
			continue
		}
		q, ok := p[0].W.(Quantized)
		if !ok {
			continue
		}
		n++
		got, want := q.Dense().Float32s(), p[1].W.Dense().Float32s()
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s weight %d: element %d is %g kept, %g in the f32 model", q.Block.Name, n, i, got[i], want[i])
			}
		}
	}
	if n == 0 {
		t.Fatal("no weight was kept quantized")
	}
	checkKeptEmbedding(t, keep, f32)
}

// checkKeptEmbedding checks that the kept model holds its token embedding
// in blocks (not as a dense table) and that looking ids up in it
// (dequantize_gguf on the gathered rows) gives the f32 model's rows bit
// for bit, the first and last ids included.
func checkKeptEmbedding(t *testing.T, keep, f32 *CausalLM) {
	t.Helper()
	if keep.embedQ == nil || keep.embed != nil {
		t.Fatalf("kept model's embedding: blocks %v, dense table %v; want the blocks only", keep.embedQ != nil, keep.embed != nil)
	}
	vocab := f32.embed.Size(0)
	ids := []int64{0, 1, 2, int64(vocab / 3), int64(vocab - 2), int64(vocab - 1), 1}
	idt := tensor.FromSlice(f32.dev, ids, 1, len(ids))
	got, want := keep.embedTokens(idt).Float32s(), f32.embedTokens(idt).Float32s()
	if len(got) != len(want) {
		t.Fatalf("embedding lookup: %d values kept, %d in the f32 model", len(got), len(want))
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("embedding lookup: element %d is %g kept, %g in the f32 model", i, got[i], want[i])
		}
	}
}

// quantizeTinyGGUF writes src's matrices (2-d *.weight tensors) in
// encoding t to a new file in dir, with ggml's reference quantizer, as
// gotpu quantize does.
func quantizeTinyGGUF(t *testing.T, src, dir string, typ gguf.Type) string {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ts []gguf.WriteTensor
	for _, ti := range f.Tensors() {
		ti := ti
		dst := gguf.F32
		if len(ti.Dims) == 2 && strings.HasSuffix(ti.Name, ".weight") {
			dst = typ
		}
		ts = append(ts, gguf.WriteTensor{Name: ti.Name, Type: dst, Dims: ti.Dims, Data: func() ([]byte, error) {
			vals, _, err := f.Float32(ti.Name)
			if err != nil || dst == gguf.F32 {
				b := make([]byte, 4*len(vals))
				for i, v := range vals {
					binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
				}
				return b, err
			}
			k := int(ti.Dims[0])
			rb, err := quant.RowBytes(quant.Type(dst), k)
			if err != nil {
				return nil, err
			}
			out := make([]byte, len(vals)/k*rb)
			for r := 0; r < len(vals)/k; r++ {
				if err := quant.QuantizeRow(quant.Type(dst), vals[r*k:][:k], out[r*rb:][:rb]); err != nil {
					return nil, err
				}
			}
			return out, nil
		}})
	}
	p := filepath.Join(dir, strings.TrimSuffix(filepath.Base(src), ".gguf")+"."+strings.ToLower(typ.String())+".gguf")
	w, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := gguf.Write(w, f.Metadata().All(), ts); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGGUFKeepTiny quantizes the tiny GGUF models of every architecture to
// the block types their 32-wide rows allow and checks the kept-quantized
// model against the same file dequantized to f32: every kept weight
// dequantizes to the f32 model's bits, all-position logits within 5% of
// their spread and the same greedy tokens (Strict; compiled too without
// -short).
func TestGGUFKeepTiny(t *testing.T) {
	types := []gguf.Type{gguf.Q8_0, gguf.Q4_0, gguf.Q4_1, gguf.Q5_0, gguf.Q5_1}
	dir := t.TempDir()
	for i, v := range []string{"llama", "qwen2", "mistral", "gemma2", "gemma3", "qwen3"} {
		typ := types[i%len(types)]
		t.Run(v+"/"+strings.ToLower(typ.String()), func(t *testing.T) {
			p := quantizeTinyGGUF(t, filepath.Join("..", "testdata", "gguf", "tiny", v+".gguf"), dir, typ)
			f32, err := LoadGGUF(p, Options{DType: dtype.F32})
			if err != nil {
				t.Fatal(err)
			}
			keep, err := LoadGGUF(p, Options{DType: dtype.F32, KeepQuantized: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(keep.Unused) > 0 {
				t.Errorf("unused tensors: %v", keep.Unused)
			}
			checkKeptWeights(t, keep.LM, f32.LM)
			// Where the CPU kernels run the r16 layout natively the loader
			// stores the packable weights so; the products keep their bits.
			t.Setenv("GOTPU_GGUF_LAYOUT", "rows")
			rowMajor, err := LoadGGUF(p, Options{DType: dtype.F32, KeepQuantized: true})
			t.Setenv("GOTPU_GGUF_LAYOUT", "")
			if err != nil {
				t.Fatal(err)
			}
			hq, _ := keep.LM.head.W.(Quantized)
			wantR16 := nativeLayout(device.Device{Type: "cpu"}, op.LayoutR16, hq.Block) && hq.Blocks != nil && hq.Blocks.Size(0) >= 16
			if (hq.Layout == op.LayoutR16) != wantR16 {
				t.Errorf("head layout %q (%s), want r16 %v", hq.Layout, hq.Block.Name, wantR16)
			}
			if rq, _ := rowMajor.LM.head.W.(Quantized); rq.Layout != "" {
				t.Errorf("GOTPU_GGUF_LAYOUT=rows: head layout %q", rq.Layout)
			}
			ids := []int{1, 5, 9, 17, 33, 2, 64, 100}
			if wantR16 {
				a, _, err := keep.LM.ForwardLogits([][]int{ids}, 0)
				if err != nil {
					t.Fatal(err)
				}
				b, _, err := rowMajor.LM.ForwardLogits([][]int{ids}, 0)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(a, b) {
					t.Errorf("r16 weights: logits differ from the row-major weights'")
				}
			}
			ms := []runMode{modes[0], modes[2]}
			if testing.Short() {
				ms = ms[:1]
			}
			for _, md := range ms {
				old := tensor.SetMode(md.mode)
				f32.LM.Compiled, keep.LM.Compiled = md.compiled, md.compiled
				want, _, err := f32.LM.ForwardLogits([][]int{ids}, 0)
				if err != nil {
					t.Fatal(err)
				}
				got, _, err := keep.LM.ForwardLogits([][]int{ids}, 0)
				if err != nil {
					t.Fatal(err)
				}
				worst, rel, _ := keepStats(got, want)
				t.Logf("%s: logits differ by at most %.3g (%.2f%% of the spread)", md.name, worst, 100*rel)
				if rel > 0.05 {
					t.Errorf("%s: kept-quantized logits differ by %.3g (%.2f%% of the spread)", md.name, worst, 100*rel)
				}
				opts := GenerateOptions{MaxNewTokens: 4}
				rw, err := f32.LM.Generate(context.Background(), [][]int{ids}, opts)
				if err != nil {
					t.Fatal(err)
				}
				rg, err := keep.LM.Generate(context.Background(), [][]int{ids}, opts)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(rg.Tokens[0], rw.Tokens[0]) {
					t.Errorf("%s: greedy %v, f32 model %v", md.name, rg.Tokens[0], rw.Tokens[0])
				}
				tensor.SetMode(old)
			}
		})
	}
}

// TestKeepQuantizedNeedsGGUF checks that a model directory with
// KeepQuantized is refused.
func TestKeepQuantizedNeedsGGUF(t *testing.T) {
	_, err := Load(filepath.Join(refDir, "llama"), Options{KeepQuantized: true})
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Load with KeepQuantized: %v, want ErrUnsupported", err)
	}
}

// TestKeptEmbeddingTensorParallel shards a kept model (SmolLM2 Q4_1, its
// tied embedding in Q8_0 blocks) over a one-rank group: the shard decodes
// its share of the blocks into the dense table the vocab-parallel lookup
// takes, and the logits stay the unsharded kept model's.
func TestKeptEmbeddingTensorParallel(t *testing.T) {
	path := ggufFile(t, "SmolLM2-135M-Instruct.Q4_1.gguf")
	ref, err := LoadGGUF(path, Options{KeepQuantized: true})
	if err != nil {
		t.Fatal(err)
	}
	sh, err := LoadGGUF(path, Options{KeepQuantized: true})
	if err != nil {
		t.Fatal(err)
	}
	g, err := dist.Init(context.Background(), dist.Options{Timeout: 30 * time.Second,
		Env: &dist.Env{WorldSize: 1, LocalWorldSize: 1, MasterAddr: "127.0.0.1", Launcher: "single"}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := sh.LM.ShardTensorParallel(g); err != nil {
		t.Fatal(err)
	}
	if sh.LM.embedQ != nil || sh.LM.embed == nil {
		t.Fatalf("sharded embedding: blocks %v, dense %v; want the dense share", sh.LM.embedQ != nil, sh.LM.embed != nil)
	}
	ids := [][]int{{1, 9690, 28, 253, 1135, 17, 2}}
	want, _, err := ref.LM.ForwardLogits(ids, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := sh.LM.ForwardLogits(ids, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-4*(1+math.Abs(float64(want[i]))) {
			t.Fatalf("logit %d: %g sharded, %g unsharded", i, got[i], want[i])
		}
	}
}
