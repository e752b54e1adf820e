package serve

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/hf/tokenizer"
)

// BenchmarkChatStream measures the API's own cost per streamed token
// (parsing, detokenizing, stop strings, SSE framing) with a generator that
// costs nothing: ns/op is per request of 512 tokens; tokens/s is reported.
func BenchmarkChatStream(b *testing.B) {
	for _, stop := range []string{"", `,"stop":["never appears","also not"]`} {
		b.Run(fmt.Sprintf("stops=%v", stop != ""), func(b *testing.B) {
			gen := newFakeGen(strings.Repeat("abcdefgh", 64))
			s := newTestServer(&testing.T{}, gen, nil)
			body := `{"messages":[{"role":"user","content":"Hi"}],"stream":true` + stop + `}`
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				w := do(&testing.T{}, s, "POST", "/v1/chat/completions", body)
				if w.Code != 200 {
					b.Fatal(w.Code)
				}
			}
			b.ReportMetric(float64(513*b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkDetok compares the windowed incremental detokenizer with
// decoding the whole output at every token (what gotpu generate's
// textStream does), on GPT-2's byte-level BPE for a 1024-token output.
func BenchmarkDetok(b *testing.B) {
	tk, err := tokenizer.FromFile(filepath.Join("..", "testdata", "tokenizers", "gpt2", "tokenizer.json"))
	if err != nil {
		b.Skip(err)
	}
	tok := HFTokenizer(tk)
	ids, _ := tok.Encode(strings.Repeat("The quick brown fox jumps over the lazy dog. ", 120), false)
	ids = ids[:1024]
	b.Run("window", func(b *testing.B) {
		for b.Loop() {
			d := &detok{tok: tok}
			for _, id := range ids {
				if _, err := d.add(id); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("full", func(b *testing.B) {
		for b.Loop() {
			for i := range ids {
				if _, err := tok.Decode(ids[:i+1], true); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
