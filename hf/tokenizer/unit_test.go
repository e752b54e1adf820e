package tokenizer

import (
	"encoding/json"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestHandPatterns compares the hand-coded regex matchers with the pieces the
// HF library (Oniguruma) returns for the same patterns (expected values were
// produced with tokenizers 0.23.3's Split/ByteLevel pre-tokenizers).
func TestHandPatterns(t *testing.T) {
	tests := []struct {
		kind handKind
		text string
		want []string
	}{
		{handGPT2, "Hello world's   end\n\n  x", []string{"Hello", " world", "'s", "  ", " end", "\n\n ", " x"}},
		{handGPT2, "I'LL don'T 12345 ab1c x'ſx", []string{"I", "'", "LL", " don", "'", "T", " 12345", " ab", "1", "c", " x", "'", "ſx"}},
		{handGPT2, "HTTPServer parseJSON naïvé ß", []string{"HTTPServer", " parseJSON", " naïve", "́", " ß"}},
		{handGPT2, "  \t\r\n\r\nfoo//bar\n", []string{"  \t\r\n\r", "\n", "foo", "//", "bar", "\n"}},
		{handGPT2, "中文 テスト 😀!!?", []string{"中文", " テスト", " 😀!!?"}},
		{handGPT2, "x́A e'S", []string{"x", "́", "A", " e", "'", "S"}},
		{handGPT2, "", []string{}},
		{handGPT2, " ", []string{" "}},
		{handGPT2, "a  ", []string{"a", "  "}},
		{handGPT2, " 　x", []string{" ", "　", "x"}},
		{handCL100k, "Hello world's   end\n\n  x", []string{"Hello", " world", "'s", "  ", " end", "\n\n", " ", " x"}},
		{handCL100k, "I'LL don'T 12345 ab1c x'ſx", []string{"I", "'LL", " don", "'T", " ", "123", "45", " ab", "1", "c", " x", "'ſ", "x"}},
		{handCL100k, "HTTPServer parseJSON naïvé ß", []string{"HTTPServer", " parseJSON", " naïve", "́", " ß"}},
		{handCL100k, "  \t\r\n\r\nfoo//bar\n", []string{"  \t\r\n\r\n", "foo", "//", "bar", "\n"}},
		{handCL100k, "中文 テスト 😀!!?", []string{"中文", " テスト", " 😀!!?"}},
		{handCL100k, "x́A e'S", []string{"x", "́A", " e", "'S"}},
		{handCL100k, "", []string{}},
		{handCL100k, " ", []string{" "}},
		{handCL100k, "a  ", []string{"a", "  "}},
		{handCL100k, " 　x", []string{" ", "　x"}},
		{handQwen, "Hello world's   end\n\n  x", []string{"Hello", " world", "'s", "  ", " end", "\n\n", " ", " x"}},
		{handQwen, "I'LL don'T 12345 ab1c x'ſx", []string{"I", "'LL", " don", "'T", " ", "1", "2", "3", "4", "5", " ab", "1", "c", " x", "'ſ", "x"}},
		{handQwen, "HTTPServer parseJSON naïvé ß", []string{"HTTPServer", " parseJSON", " naïve", "́", " ß"}},
		{handQwen, "  \t\r\n\r\nfoo//bar\n", []string{"  \t\r\n\r\n", "foo", "//", "bar", "\n"}},
		{handQwen, "中文 テスト 😀!!?", []string{"中文", " テスト", " 😀!!?"}},
		{handQwen, "x́A e'S", []string{"x", "́A", " e", "'S"}},
		{handQwen, "", []string{}},
		{handQwen, " ", []string{" "}},
		{handQwen, "a  ", []string{"a", "  "}},
		{handQwen, " 　x", []string{" ", "　x"}},
		{handO200k, "Hello world's   end\n\n  x", []string{"Hello", " world's", "  ", " end", "\n\n", " ", " x"}},
		{handO200k, "I'LL don'T 12345 ab1c x'ſx", []string{"I'LL", " don'T", " ", "123", "45", " ab", "1", "c", " x'ſ", "x"}},
		{handO200k, "HTTPServer parseJSON naïvé ß", []string{"HTTPServer", " parse", "JSON", " naïvé", " ß"}},
		{handO200k, "  \t\r\n\r\nfoo//bar\n", []string{"  \t\r\n\r\n", "foo", "//", "bar", "\n"}},
		{handO200k, "中文 テスト 😀!!?", []string{"中文", " テスト", " 😀!!?"}},
		{handO200k, "x́A e'S", []string{"x́", "A", " e'S"}},
		{handO200k, "", []string{}},
		{handO200k, " ", []string{" "}},
		{handO200k, "a  ", []string{"a", "  "}},
		{handO200k, " 　x", []string{" ", "　x"}},
	}
	for _, tc := range tests {
		p := &handPattern{tc.kind}
		var got []string
		for _, m := range p.findAll(tc.text, nil) {
			got = append(got, tc.text[m.start:m.end])
		}
		if len(got) == 0 && len(tc.want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("kind %d %q:\n got %q\nwant %q", tc.kind, tc.text, got, tc.want)
		}
	}
}

// TestCompilePatternRecognizes checks that the known regexes get the hand
// matchers and that others fall back to Go's regexp with Unicode classes.
func TestCompilePatternRecognizes(t *testing.T) {
	for src, want := range map[string]handKind{gpt2Pattern: handGPT2, cl100kPattern: handCL100k, qwenPattern: handQwen, o200kPattern: handO200k} {
		p, err := compilePattern(src)
		if err != nil {
			t.Fatal(err)
		}
		if h, ok := p.(*handPattern); !ok || h.kind != want {
			t.Errorf("%q: got %T", src, p)
		}
	}
	tests := []struct {
		src, text string
		want      []string
	}{
		{`\s+`, "a\u3000b\u00a0c", []string{"\u3000", "\u00a0"}},
		{`\d+`, "x١٢3y", []string{"١٢3"}},
		{`\w+`, "é_ü x", []string{"é_ü", "x"}},
		{`[^\s]+`, "ab  cd", []string{"ab", "cd"}},
		{`\p{N}{1,3}|[a-z]+|\s+(?!\S)|\s+`, "abc   1234 ", []string{"abc", "  ", " ", "123", "4", " "}},
	}
	for _, tc := range tests {
		p, err := compilePattern(tc.src)
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		var got []string
		for _, m := range p.findAll(tc.text, nil) {
			got = append(got, tc.text[m.start:m.end])
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q on %q: got %q, want %q", tc.src, tc.text, got, tc.want)
		}
	}
	if _, err := compilePattern(`(?<=a)b`); !errors.Is(err, ErrUnsupported) {
		t.Errorf("lookbehind: want ErrUnsupported, got %v", err)
	}
}

// TestLossyUTF8 checks Rust's String::from_utf8_lossy replacement rule
// (expected values from the HF ByteLevel decoder).
func TestLossyUTF8(t *testing.T) {
	tests := []struct{ in, want string }{
		{"\x61\x62\x63", "abc"},
		{"\xe2\x82", "\ufffd"},
		{"\xe2\x82\x78", "\ufffdx"},
		{"\xf0\x9f\x98", "\ufffd"},
		{"\xff\xfe", "\ufffd\ufffd"},
		{"\xed\xa0\x80", "\ufffd\ufffd\ufffd"},
		{"\xc3\xa9\xc3", "\u00e9\ufffd"},
		{"\xf4\x90\x80\x80", "\ufffd\ufffd\ufffd\ufffd"},
		{"\xe0\x80\x80", "\ufffd\ufffd\ufffd"},
	}
	for _, tc := range tests {
		if got := lossyUTF8([]byte(tc.in)); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRuneOffsets converts byte offsets to code point offsets.
func TestRuneOffsets(t *testing.T) {
	text := "aé😀b"
	tests := []struct{ in, want [2]int }{
		{[2]int{0, 1}, [2]int{0, 1}},
		{[2]int{1, 3}, [2]int{1, 2}},
		{[2]int{3, 7}, [2]int{2, 3}},
		{[2]int{7, 8}, [2]int{3, 4}},
		{[2]int{0, 0}, [2]int{0, 0}},
		{[2]int{8, 8}, [2]int{8, 8}}, // start at the end: unchanged, as in HF
	}
	for _, tc := range tests {
		got := RuneOffsets(text, [][2]int{tc.in})[0]
		if got != tc.want {
			t.Errorf("%v: got %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestMergeHeapMatchesScan checks that the priority-queue merge used for long
// words gives the same result as the scan used for short ones.
func TestMergeHeapMatchesScan(t *testing.T) {
	vocab := map[string]uint32{}
	letters := "abcde"
	for i := range letters {
		vocab[letters[i:i+1]] = uint32(len(vocab))
	}
	var merges [][2]string
	rng := rand.New(rand.NewSource(1))
	toks := []string{"a", "b", "c", "d", "e"}
	for len(merges) < 60 {
		a, b := toks[rng.Intn(len(toks))], toks[rng.Intn(len(toks))]
		if _, ok := vocab[a+b]; ok || len(a+b) > 6 {
			continue
		}
		vocab[a+b] = uint32(len(vocab))
		toks = append(toks, a+b)
		merges = append(merges, [2]string{a, b})
	}
	m, err := newBPE(vocab, merges, nil, "", "", false, false, false)
	if err != nil {
		t.Fatal(err)
	}
	for trial := 0; trial < 300; trial++ {
		n := 2 + rng.Intn(80)
		var sb strings.Builder
		for i := 0; i < n; i++ {
			sb.WriteByte(letters[rng.Intn(len(letters))])
		}
		mk := func() []symbol {
			var s []symbol
			for i := 0; i < n; i++ {
				s = append(s, symbol{vocab[sb.String()[i:i+1]], 1})
			}
			return s
		}
		scan := m.mergeSymbols(mk())
		hp := m.mergeHeap(mk())
		if !reflect.DeepEqual(scan, hp) {
			t.Fatalf("%q: scan %v, heap %v", sb.String(), scan, hp)
		}
	}
}

// TestLoadErrors checks that malformed or unsupported components fail with a
// sentinel error naming the component.
func TestLoadErrors(t *testing.T) {
	wl := `"model": {"type": "WordLevel", "vocab": {"<unk>": 0}, "unk_token": "<unk>"}`
	tests := []struct {
		name, json string
		sentinel   error
		mention    string
	}{
		{"not json", `{"model": `, ErrMalformed, ""},
		{"no model", `{}`, ErrMalformed, "missing model"},
		{"model type", `{"model": {"type": "Mystery"}}`, ErrUnsupported, "Mystery"},
		{"normalizer type", `{"normalizer": {"type": "Shout"}, ` + wl + `}`, ErrUnsupported, "Shout"},
		{"pre_tokenizer type", `{"pre_tokenizer": {"type": "UnicodeScripts"}, ` + wl + `}`, ErrUnsupported, "UnicodeScripts"},
		{"decoder type", `{"decoder": {"type": "Nope"}, ` + wl + `}`, ErrUnsupported, "Nope"},
		{"post_processor type", `{"post_processor": {"type": "Nope"}, ` + wl + `}`, ErrUnsupported, "Nope"},
		{"bad merge", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}}`, ErrMalformed, "merge"},
		{"merge shape", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b c"]}}`, ErrMalformed, "merges[0]"},
		{"vocab id", `{"model": {"type": "BPE", "vocab": {"a": -1}, "merges": []}}`, ErrMalformed, "vocab"},
		{"wordpiece unk", `{"model": {"type": "WordPiece", "vocab": {"a": 0}, "unk_token": "[UNK]"}}`, ErrMalformed, "[UNK]"},
		{"unigram unk_id", `{"model": {"type": "Unigram", "vocab": [["a", -1]], "unk_id": 5}}`, ErrMalformed, "unk_id"},
		{"template undefined", `{"post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}], "pair": [], "special_tokens": {}}, ` + wl + `}`, ErrMalformed, "<s>"},
		{"lookbehind", `{"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(?<=a)"}, "behavior": "Isolated", "invert": false}, ` + wl + `}`, ErrUnsupported, "regex"},
		{"charsmap", `{"normalizer": {"type": "Precompiled", "precompiled_charsmap": "AQ=="}, ` + wl + `}`, ErrMalformed, "precompiled_charsmap"},
		{"version", `{"version": "9.9", ` + wl + `}`, ErrUnsupported, "9.9"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromBytes([]byte(tc.json))
			if !errors.Is(err, tc.sentinel) {
				t.Fatalf("want %v, got %v", tc.sentinel, err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
		})
	}
}

// TestEncodeBatchTruncationPadding checks EncodeBatch with truncation and
// padding set through the API against HF's encode_batch
// (testdata/batch_ref.json, written by gen_fixtures.py).
func TestEncodeBatchTruncationPadding(t *testing.T) {
	var ref struct {
		Texts []string `json:"texts"`
		Cases []struct {
			Truncation *int `json:"truncation"`
			Padding    *struct {
				Direction string `json:"direction"`
				Length    int    `json:"length"`
			} `json:"padding"`
			IDs           [][]int   `json:"ids"`
			AttentionMask [][]int   `json:"attention_mask"`
			Overflowing   [][][]int `json:"overflowing"`
		} `json:"cases"`
	}
	data, err := os.ReadFile(filepath.Join("testdata", "batch_ref.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	tk, err := FromFile(filepath.Join("testdata", "fixtures", "wordpiece_template", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	for ci, c := range ref.Cases {
		for _, threads := range []int{1, 3} {
			tk.SetParallelism(threads)
			var tr *Truncation
			if c.Truncation != nil {
				tr = &Truncation{MaxLength: *c.Truncation, Stride: 1}
			}
			if err := tk.SetTruncation(tr); err != nil {
				t.Fatal(err)
			}
			tk.SetPadding(nil)
			if c.Padding != nil {
				tk.SetPadding(&Padding{Fixed: c.Padding.Length, Left: c.Padding.Direction == "left", PadToken: "[PAD]"})
			}
			encs, err := tk.EncodeBatch(ref.Texts, true)
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range encs {
				if !reflect.DeepEqual(nz(e.IDs), nz(c.IDs[i])) {
					t.Errorf("case %d threads %d text %d ids: got %v, want %v", ci, threads, i, e.IDs, c.IDs[i])
				}
				if !reflect.DeepEqual(nz(e.AttentionMask), nz(c.AttentionMask[i])) {
					t.Errorf("case %d text %d attention: got %v, want %v", ci, i, e.AttentionMask, c.AttentionMask[i])
				}
				var ov [][]int
				for _, o := range e.Overflowing {
					ov = append(ov, o.IDs)
				}
				if len(ov) != len(c.Overflowing[i]) || (len(ov) > 0 && !reflect.DeepEqual(ov, c.Overflowing[i])) {
					t.Errorf("case %d text %d overflowing: got %v, want %v", ci, i, ov, c.Overflowing[i])
				}
			}
		}
	}
	if err := tk.SetTruncation(&Truncation{MaxLength: 4, Stride: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := tk.EncodeBatch([]string{"a b c d e f g"}, false); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("stride >= max length: want ErrInvalidConfig, got %v", err)
	}
}
