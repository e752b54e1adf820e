package chat

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzRender feeds arbitrary template text and message content through New
// and Render: whatever the input, they return a result or an error and
// never panic (the engine's panics are recovered at the package boundary).
//
// Seeds: testdata/fuzz/FuzzRender plus the real templates under
// testdata/models. Run longer with
//
//	go test -run '^$' -fuzz FuzzRender -fuzztime 2m ./hf/chat
func FuzzRender(f *testing.F) {
	sources, _ := filepath.Glob(filepath.Join("testdata", "models", "*", "*.jinja"))
	for _, p := range sources {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b), "Hello {{ x }} ünï")
		}
	}
	f.Add("{{ messages[0]['content'] | tojson(indent=2) }}", "{\"a\": 1}")
	f.Add("{% for m in messages %}{{ raise_exception(m.content) }}{% endfor %}", "boom")
	f.Add("{{ strftime_now('%d %b %Y %-d %Q') }}", "")

	now := time.Date(2025, 3, 9, 8, 7, 6, 0, time.UTC)
	tokens := map[string]string{"bos_token": "<s>", "eos_token": "</s>"}
	f.Fuzz(func(t *testing.T, src, content string) {
		tmpl, err := New(src, tokens)
		if err != nil {
			return
		}
		msgs := []Message{
			{Role: "system", Content: content},
			{Role: "user", Content: content, Extra: map[string]any{"name": content}},
			{Role: "assistant", Content: content, ToolCalls: []ToolCall{{ID: "call12345", Type: "function",
				Function: FunctionCall{Name: content, Arguments: map[string]any{"q": content, "n": 1.5}}}}},
		}
		for _, agp := range []bool{false, true} {
			_, _ = tmpl.Render(msgs, RenderOptions{
				AddGenerationPrompt: agp,
				Tools:               []any{map[string]any{"type": "function", "function": map[string]any{"name": content}}},
				Extra:               map[string]any{"enable_thinking": agp},
				Now:                 func() time.Time { return now },
			})
		}
	})
}
