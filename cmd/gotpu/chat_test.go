package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/hf/chat"
	"github.com/gotpu/gotpu/models"
)

// asciiTokenizer is a byte-level BPE tokenizer.json without merges whose
// 128 ids are the bytes 0..127 (GPT-2's byte-to-unicode alphabet), so any
// ASCII text fits the tiny models' 128-token vocabulary.
func asciiTokenizer() []byte {
	vocab := map[string]int{}
	n := 0
	for b := 0; b < 128; b++ {
		r := rune(b)
		if b < 33 || b == 127 {
			r = rune(256 + n)
			n++
		}
		vocab[string(r)] = b
	}
	tok := map[string]any{
		"version":       "1.0",
		"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{}},
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"decoder":       map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"added_tokens":  []any{},
	}
	b, _ := json.Marshal(tok)
	return b
}

// chatModelDir is the tiny Llama with an ASCII tokenizer and SmolLM2's
// chat template.
func chatModelDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	copyModelFiles(t, tinyLlama, dir)
	tmpl, err := os.ReadFile("../../hf/chat/testdata/models/smollm2/chat_template.jinja")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "chat_template.jinja"), tmpl, 0o644)
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), asciiTokenizer(), 0o644)
	return dir
}

func runWithInput(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	rootCmd.SetIn(strings.NewReader(stdin))
	defer rootCmd.SetIn(nil)
	return runCmd(t, args...)
}

func TestChatTurns(t *testing.T) {
	dir := chatModelDir(t)
	out, err := runWithInput(t, "hello\n\nhow are you\n/reset\nhello\n", "chat", "--model", dir, "--max-new-tokens", "5", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var turns []chatTurn
	dec := json.NewDecoder(bytes.NewBufferString(out))
	for dec.More() {
		var tr chatTurn
		if err := dec.Decode(&tr); err != nil {
			t.Fatalf("%v in %q", err, out)
		}
		turns = append(turns, tr)
	}
	if len(turns) != 3 {
		t.Fatalf("%d turns, want 3: %s", len(turns), out)
	}
	// The second turn carries the first exchange; /reset drops it, so the
	// third turn is the first again.
	if turns[1].PromptTokens <= turns[0].PromptTokens {
		t.Errorf("second turn prompt %d tokens, first %d: history not kept", turns[1].PromptTokens, turns[0].PromptTokens)
	}
	if turns[2].PromptTokens != turns[0].PromptTokens || turns[2].Text != turns[0].Text {
		t.Errorf("after /reset: %+v, want the first turn %+v", turns[2], turns[0])
	}
	// generate --chat renders the same prompt.
	g, err := runCmd(t, "generate", "--model", dir, "--chat", "--prompt", "hello", "--max-new-tokens", "5", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var gen struct {
		PromptIDs []int `json:"prompt_ids"`
		Text      string
	}
	json.Unmarshal([]byte(g), &gen)
	if len(gen.PromptIDs) != turns[0].PromptTokens || gen.Text != turns[0].Text {
		t.Errorf("generate --chat: %d prompt tokens %q, chat: %d %q", len(gen.PromptIDs), gen.Text, turns[0].PromptTokens, turns[0].Text)
	}
	// The rendered prompt is SmolLM2's: <|im_start|>user\nhello<|im_end|>\n...
	want := "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n"
	var sb strings.Builder
	for _, id := range gen.PromptIDs {
		sb.WriteByte(byte(id))
	}
	if !strings.HasSuffix(sb.String(), want) {
		t.Errorf("prompt %q does not end with %q", sb.String(), want)
	}
	if _, err := runCmd(t, "chat", "--model", tinyLlama); err == nil || !strings.Contains(err.Error(), "chat template") {
		t.Errorf("chat without a template: %v", err)
	}
}

// TestChatIDsMissingParts checks that a model without a chat template or
// tokenizer gets an error naming where each would come from: the GGUF
// metadata keys for a .gguf file, the Hugging Face files for a directory.
func TestChatIDsMissingParts(t *testing.T) {
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/models/gemma.gguf", []string{"gemma.gguf has no chat template", "tokenizer.chat_template", "without --chat"}},
		{"/models/SMOL.GGUF", []string{"tokenizer.chat_template"}},
		{"/models/llama", []string{"llama has no chat template", "tokenizer_config.json", "chat_template.jinja"}},
	} {
		_, err := chatIDs(&models.Model{Path: tc.path}, []chat.Message{{Role: "user", Content: "hi"}})
		if err == nil {
			t.Fatalf("%s: no error", tc.path)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", tc.path, err, w)
			}
		}
	}
}
