package tokenizer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"github.com/gotpu/gotpu/internal/testreq"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
)

// refLine is one line of testdata/tokenizers/<name>/ref.jsonl, produced by
// tools/tokref with the Python tokenizers library.
type refLine struct {
	ID                string   `json:"id"`
	Text              string   `json:"text"`
	AddSpecial        bool     `json:"add_special_tokens"`
	IDs               []int    `json:"ids"`
	Tokens            []string `json:"tokens"`
	Offsets           [][2]int `json:"offsets"`
	Decoded           string   `json:"decoded"`
	DecodedKeep       string   `json:"decoded_keep"`
	AttentionMask     []int    `json:"attention_mask"`
	TypeIDs           []int    `json:"type_ids"`
	SpecialTokensMask []int    `json:"special_tokens_mask"`
	Pair              *string  `json:"pair"`
	Overflowing       [][]int  `json:"overflowing"`
}

const refRoot = "../../testdata/tokenizers"

// tokenizerPath finds a reference vocabulary's tokenizer.json: committed next
// to ref.jsonl, or fetched into $GOTPU_TOKENIZERS_DIR (default
// ~/.cache/gotpu-testdata/tokenizers) by tools/tokref/fetch.sh.
func tokenizerPath(name string) (string, bool) {
	p := filepath.Join(refRoot, name, "tokenizer.json")
	if _, err := os.Stat(p); err == nil {
		return p, true
	}
	dir := os.Getenv("GOTPU_TOKENIZERS_DIR")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", false
		}
		dir = filepath.Join(home, ".cache", "gotpu-testdata", "tokenizers")
	}
	p = filepath.Join(dir, name, "tokenizer.json")
	if _, err := os.Stat(p); err == nil {
		return p, true
	}
	return "", false
}

func readRef(t *testing.T, path string) []refLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	var out []refLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var l refLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

func refNames(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(refRoot)
	if err != nil {
		t.Skipf("no reference data at %s: %v", refRoot, err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(refRoot, e.Name(), "ref.jsonl")); err == nil {
				names = append(names, e.Name())
			}
		}
	}
	sort.Strings(names)
	return names
}

// loaded caches tokenizers across tests (they are large to parse).
var loaded = map[string]*Tokenizer{}

func loadRef(t *testing.T, name string) *Tokenizer {
	t.Helper()
	if tk, ok := loaded[name]; ok {
		return tk
	}
	p, ok := tokenizerPath(name)
	if !ok {
		testreq.Missing(t, "%s: tokenizer.json absent; run tools/tokref/fetch.sh to fetch it", name)
	}
	tk, err := FromFile(p)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	loaded[name] = tk
	return tk
}

// compareLine returns a description of the first difference, or "".
func compareLine(tk *Tokenizer, l *refLine) string {
	var e Encoding
	var err error
	if l.Pair != nil {
		e, err = tk.EncodePair(l.Text, *l.Pair, l.AddSpecial)
	} else {
		e, err = tk.TryEncode(l.Text, l.AddSpecial)
	}
	if err != nil {
		return fmt.Sprintf("encode error: %v", err)
	}
	if !reflect.DeepEqual(nz(e.IDs), nz(l.IDs)) {
		return fmt.Sprintf("ids\n got %v\nwant %v\n got tokens %q\nwant tokens %q", e.IDs, l.IDs, e.Tokens, l.Tokens)
	}
	if l.Tokens != nil && !reflect.DeepEqual(nzs(e.Tokens), nzs(l.Tokens)) { // absent in ids-only refs
		return fmt.Sprintf("tokens\n got %q\nwant %q", e.Tokens, l.Tokens)
	}
	if l.Offsets != nil {
		ro := RuneOffsets(l.Text, e.Offsets)
		if !reflect.DeepEqual(nzo(ro), nzo(l.Offsets)) {
			return fmt.Sprintf("offsets\n got %v\nwant %v\ntokens %q", ro, l.Offsets, l.Tokens)
		}
	}
	if l.AttentionMask != nil && !reflect.DeepEqual(nz(e.AttentionMask), nz(l.AttentionMask)) {
		return fmt.Sprintf("attention_mask\n got %v\nwant %v", e.AttentionMask, l.AttentionMask)
	}
	if l.TypeIDs != nil && !reflect.DeepEqual(nz(e.TypeIDs), nz(l.TypeIDs)) {
		return fmt.Sprintf("type_ids\n got %v\nwant %v", e.TypeIDs, l.TypeIDs)
	}
	if l.SpecialTokensMask != nil && !reflect.DeepEqual(nz(e.SpecialTokensMask), nz(l.SpecialTokensMask)) {
		return fmt.Sprintf("special_tokens_mask\n got %v\nwant %v", e.SpecialTokensMask, l.SpecialTokensMask)
	}
	if l.Overflowing != nil {
		var got [][]int
		for _, o := range e.Overflowing {
			got = append(got, o.IDs)
		}
		if len(got) != len(l.Overflowing) || (len(got) > 0 && !reflect.DeepEqual(got, l.Overflowing)) {
			return fmt.Sprintf("overflowing\n got %v\nwant %v", got, l.Overflowing)
		}
	}
	d, err := tk.Decode(l.IDs, true)
	if err != nil || d != l.Decoded {
		return fmt.Sprintf("decoded (skip special)\n got %q (%v)\nwant %q", d, err, l.Decoded)
	}
	d, err = tk.Decode(l.IDs, false)
	if err != nil || d != l.DecodedKeep {
		return fmt.Sprintf("decoded (keep special)\n got %q (%v)\nwant %q", d, err, l.DecodedKeep)
	}
	return ""
}

func nz(x []int) []int {
	if x == nil {
		return []int{}
	}
	return x
}

func nzs(x []string) []string {
	if x == nil {
		return []string{}
	}
	return x
}

func nzo(x [][2]int) [][2]int {
	if x == nil {
		return [][2]int{}
	}
	return x
}

// TestParity checks every reference line id-exact, with tokens, offsets and
// both decodings.
func TestParity(t *testing.T) {
	for _, name := range refNames(t) {
		t.Run(name, func(t *testing.T) {
			tk := loadRef(t, name)
			// ref.jsonl is produced with truncation and padding disabled.
			saveT, saveP := tk.truncation, tk.padding
			tk.truncation, tk.padding = nil, nil
			defer func() { tk.truncation, tk.padding = saveT, saveP }()
			lines := readRef(t, filepath.Join(refRoot, name, "ref.jsonl"))
			bad := 0
			for i := range lines {
				if msg := compareLine(tk, &lines[i]); msg != "" {
					bad++
					if bad <= 5 {
						t.Errorf("%s %s add_special=%v text=%q: %s", name, lines[i].ID, lines[i].AddSpecial, trunc(lines[i].Text), msg)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%s: %d of %d lines differ", name, bad, len(lines))
			} else {
				t.Logf("%s: %d lines id-exact (ids, tokens, offsets, decode)", name, len(lines))
			}
		})
	}
}

// TestParityAsLoaded checks the files' own truncation and padding settings
// (bert's tokenizer.json pads and truncates to 128).
func TestParityAsLoaded(t *testing.T) {
	for _, name := range refNames(t) {
		path := filepath.Join(refRoot, name, "ref_as_loaded.jsonl")
		if _, err := os.Stat(path); err != nil {
			continue
		}
		t.Run(name, func(t *testing.T) {
			tk := loadRef(t, name)
			lines := readRef(t, path)
			bad := 0
			for i := range lines {
				if msg := compareLine(tk, &lines[i]); msg != "" {
					bad++
					if bad <= 5 {
						t.Errorf("%s %s: %s", name, lines[i].ID, msg)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%s: %d of %d lines differ", name, bad, len(lines))
			}
		})
	}
}

func trunc(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}

// TestFixtures checks the small tokenizers of testdata/fixtures (built by
// testdata/gen_fixtures.py with the HF library) against their ref.jsonl,
// with their own truncation and padding.
func TestFixtures(t *testing.T) {
	root := filepath.Join("testdata", "fixtures")
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatalf("fixtures: %v", err)
	}
	for _, ent := range ents {
		name := ent.Name()
		t.Run(name, func(t *testing.T) {
			tk, err := FromFile(filepath.Join(root, name, "tokenizer.json"))
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			lines := readRef(t, filepath.Join(root, name, "ref.jsonl"))
			bad := 0
			for i := range lines {
				if msg := compareLine(tk, &lines[i]); msg != "" {
					bad++
					if bad <= 5 {
						t.Errorf("%s %s add_special=%v text=%q: %s", name, lines[i].ID, lines[i].AddSpecial, trunc(lines[i].Text), msg)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%s: %d of %d lines differ", name, bad, len(lines))
			}
		})
	}
}
