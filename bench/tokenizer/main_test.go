package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIDsDigestMatchesPython(t *testing.T) {
	// hashlib.sha256 over ",".join(ids) + "\n" per document, as bench_ref.py
	// computes it, for [[1,2,3],[],[42],[50256,0]].
	const want = "a7cbd63bd39993c4e1a4c7997e70c4d2f107e73f8090bdc34c92d9bc4b85ad48"
	got := idsDigest([][]int{{1, 2, 3}, {}, {42}, {50256, 0}})
	if got != want {
		t.Fatalf("idsDigest = %s, want %s", got, want)
	}
	if idsDigest([][]int{{1, 2}, {3}}) == idsDigest([][]int{{1}, {2, 3}}) {
		t.Fatal("digest ignores document boundaries")
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{9, 1, 1, 1, 9}, 1},
	}
	for _, tc := range tests {
		in := append([]float64(nil), tc.in...)
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.in[i] {
				t.Errorf("median reordered its input %v", tc.in)
			}
		}
	}
}

func TestReadCorpus(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr bool
	}{
		{"two docs", "\"a b\"\n\"\\u00e9\\n\\t\"\n", []string{"a b", "é\n\t"}, false},
		{"no final newline", "\"x\"", []string{"x"}, false},
		{"blank lines skipped", "\n\"x\"\n\n", []string{"x"}, false},
		{"empty string doc", "\"\"\n", []string{""}, false},
		{"not a string", "{\"text\": 1}\n", nil, true},
		{"truncated", "\"abc\n", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readCorpus(strings.NewReader(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %q, want %q", got, tc.want)
				}
			}
		})
	}
}

// fakeEncoder splits on spaces and numbers the words by length.
type fakeEncoder struct {
	calls int
	fail  bool
}

func (f *fakeEncoder) encodeBatch(texts []string) ([][]int, error) {
	f.calls++
	if f.fail {
		return nil, errors.New("boom")
	}
	out := make([][]int, len(texts))
	for i, s := range texts {
		for _, w := range strings.Fields(s) {
			out[i] = append(out[i], len(w))
		}
	}
	return out, nil
}

func TestMeasure(t *testing.T) {
	f := &fakeEncoder{}
	docs := []string{"ab c", "", "def"}
	r, err := measure(f, docs, 1_000_000, 3)
	if err != nil {
		t.Fatal(err)
	}
	if f.calls != 4 {
		t.Errorf("encodeBatch called %d times, want 1 warm-up + 3", f.calls)
	}
	if len(r.CPURunsS) != 3 || r.CPUMedianS < 0 {
		t.Errorf("cpu runs %v", r.CPURunsS)
	}
	if len(r.RunsS) != 3 || r.Tokens != 3 {
		t.Errorf("runs %v tokens %d, want 3 runs and 3 tokens", r.RunsS, r.Tokens)
	}
	if r.IDsSHA256 != idsDigest([][]int{{2, 1}, nil, {3}}) {
		t.Errorf("digest %s does not cover the ids", r.IDsSHA256)
	}
	if _, err := measure(&fakeEncoder{fail: true}, docs, 1, 1); err == nil {
		t.Error("measure hid an encoder error")
	}
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "c.jsonl")
	if err := os.WriteFile(good, []byte("\"hello\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		usage bool
	}{
		{"no args", nil, true},
		{"bad tok flag", []string{"-corpus", good, "-tok", "gpt2"}, true},
		{"zero reps", []string{"-corpus", good, "-tok", "a=b", "-reps", "0"}, true},
		{"missing corpus", []string{"-corpus", filepath.Join(dir, "nope"), "-tok", "a=b"}, false},
		{"malformed corpus", []string{"-corpus", bad, "-tok", "a=b"}, false},
		{"missing tokenizer", []string{"-corpus", good, "-tok", "a=" + filepath.Join(dir, "nope.json")}, false},
		{"malformed tokenizer", []string{"-corpus", good, "-tok", "a=" + bad}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := run(tc.args, &out, &errb)
			if err == nil {
				t.Fatal("want an error")
			}
			if errors.Is(err, errUsage) != tc.usage {
				t.Fatalf("err %v: usage=%v, want %v", err, errors.Is(err, errUsage), tc.usage)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
		})
	}
}

// TestRunGPT2MatchesReference runs the whole program on the committed gpt2
// tokenizer and checks that the ids digest equals the one of HF's ids in
// testdata/tokenizers/gpt2/ref.jsonl (add_special_tokens=false lines).
func TestRunGPT2MatchesReference(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "tokenizers", "gpt2")
	ref, err := os.ReadFile(filepath.Join(root, "ref.jsonl"))
	if err != nil {
		t.Skipf("no gpt2 reference: %v", err)
	}
	var corpus bytes.Buffer
	var want [][]int
	for _, line := range bytes.Split(ref, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var rec struct {
			Text       string `json:"text"`
			AddSpecial bool   `json:"add_special_tokens"`
			IDs        []int  `json:"ids"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		if rec.AddSpecial || len(want) == 40 {
			continue
		}
		b, _ := json.Marshal(rec.Text)
		corpus.Write(append(b, '\n'))
		want = append(want, rec.IDs)
	}
	cpath := filepath.Join(t.TempDir(), "c.jsonl")
	if err := os.WriteFile(cpath, corpus.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	args := []string{"-corpus", cpath, "-tok", "gpt2=" + filepath.Join(root, "tokenizer.json"), "-reps", "1", "-json"}
	if err := run(args, &out, &errb); err != nil {
		t.Fatalf("run: %v (%s)", err, errb.String())
	}
	var rep report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("bad -json output: %v\n%s", err, out.String())
	}
	got := rep.Gotpu["gpt2"]
	if got.IDsSHA256 != idsDigest(want) {
		t.Errorf("gotpu ids digest %s, HF reference %s", got.IDsSHA256, idsDigest(want))
	}
	if rep.Corpus.Documents != len(want) || len(got.RunsS) != 1 || got.MBPerS <= 0 {
		t.Errorf("report %+v", rep)
	}
}
