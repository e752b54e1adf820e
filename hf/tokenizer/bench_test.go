package tokenizer

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// benchTexts returns the reference corpus (testdata/tokenizers/corpus.jsonl)
// repeated to about 1 MB, the workload of BenchmarkEncode* and of
// tools-side comparisons with HF tokenizers and tiktoken.
func benchTexts(b *testing.B) ([]string, int) {
	b.Helper()
	f, err := os.Open(filepath.Join(refRoot, "corpus.jsonl"))
	if err != nil {
		b.Skipf("no corpus: %v", err)
	}
	defer f.Close()
	var texts []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var o struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			b.Fatal(err)
		}
		texts = append(texts, o.Text)
	}
	var out []string
	n := 0
	for n < 1<<20 {
		for _, t := range texts {
			out = append(out, t)
			n += len(t)
		}
	}
	return out, n
}

func benchEncode(b *testing.B, name string, parallel bool) {
	p, ok := tokenizerPath(name)
	if !ok {
		b.Skipf("%s: tokenizer.json absent; run tools/tokref/fetch.sh", name)
	}
	tk, err := FromFile(p)
	if err != nil {
		b.Fatal(err)
	}
	tk.SetTruncation(nil)
	tk.SetPadding(nil)
	texts, n := benchTexts(b)
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if parallel {
			if _, err := tk.EncodeBatch(texts, true); err != nil {
				b.Fatal(err)
			}
			continue
		}
		for _, t := range texts {
			tk.Encode(t, true)
		}
	}
}

func BenchmarkEncodeGPT2(b *testing.B)   { benchEncode(b, "gpt2", false) }
func BenchmarkEncodeLlama3(b *testing.B) { benchEncode(b, "llama3", false) }
func BenchmarkEncodeQwen3(b *testing.B)  { benchEncode(b, "qwen3", false) }
func BenchmarkEncodeGPT4o(b *testing.B)  { benchEncode(b, "gpt4o", false) }
func BenchmarkEncodeLlama2(b *testing.B) { benchEncode(b, "llama2", false) }
func BenchmarkEncodeGemma3(b *testing.B) { benchEncode(b, "gemma3", false) }
func BenchmarkEncodeBert(b *testing.B)   { benchEncode(b, "bert", false) }

func BenchmarkEncodeBatchLlama3(b *testing.B) { benchEncode(b, "llama3", true) }
