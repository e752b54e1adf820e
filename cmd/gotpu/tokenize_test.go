package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const tokenizeFixture = "../../hf/tokenizer/testdata/fixtures/bytelevel_roberta/tokenizer.json"

func runTokenize(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := newTokenizeCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetArgs(args)
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	err := cmd.Execute()
	return out.String(), err
}

func TestTokenizeJSON(t *testing.T) {
	out, err := runTokenize(t, "hello world\n\nsecond line\n", "--tokenizer", tokenizeFixture, "--json", "-")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 JSON lines (one per input line), got %d: %q", len(lines), out)
	}
	inputs := []string{"hello world", "", "second line"}
	for i, l := range lines {
		var o struct {
			IDs     []int    `json:"ids"`
			Tokens  []string `json:"tokens"`
			Offsets [][2]int `json:"offsets"`
		}
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatalf("line %d %q: %v", i, l, err)
		}
		if len(o.IDs) != len(o.Tokens) || len(o.IDs) != len(o.Offsets) {
			t.Fatalf("line %d: lengths differ: %+v", i, o)
		}
		// RobertaProcessing adds <s> ... </s> around every line.
		if len(o.Tokens) < 2 || o.Tokens[0] != "<s>" || o.Tokens[len(o.Tokens)-1] != "</s>" {
			t.Errorf("line %d: special tokens missing: %q", i, o.Tokens)
		}
		for _, off := range o.Offsets {
			if off[0] < 0 || off[1] > len(inputs[i]) || off[0] > off[1] {
				t.Errorf("line %d: offset %v outside %q", i, off, inputs[i])
			}
		}
	}
}

func TestTokenizeText(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    []string
		wantErr string
	}{
		{"plain", []string{"--tokenizer", tokenizeFixture, "hello"}, []string{"ids: [", "tokens: [\"<s>\""}, ""},
		{"no special", []string{"--tokenizer", tokenizeFixture, "--no-special", "the"}, []string{"ids: [", "tokens: [\"Ġthe\"]"}, ""},
		{"missing flag", []string{"hello"}, nil, "--tokenizer PATH is required"},
		{"no argument", []string{"--tokenizer", tokenizeFixture}, nil, "expected one argument"},
		{"missing file", []string{"--tokenizer", "does-not-exist.json", "x"}, nil, "read tokenizer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runTokenize(t, "", tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want error containing %q, got %v", tc.wantErr, err)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error is not one line: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output %q lacks %q", out, w)
				}
			}
		})
	}
}

func TestTokenizeMalformed(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"bad.json":         `{"model": `,
		"unsupported.json": `{"model": {"type": "Mystery", "vocab": {}}}`,
		"badnorm.json":     `{"normalizer": {"type": "Shout"}, "model": {"type": "WordLevel", "vocab": {"<unk>": 0}, "unk_token": "<unk>"}}`,
	}
	for name, body := range cases {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := runTokenize(t, "", "--tokenizer", p, "x")
		if err == nil {
			t.Errorf("%s: want an error", name)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error is not one line: %q", name, err)
		}
	}
}
