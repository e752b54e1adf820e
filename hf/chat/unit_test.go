package chat

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// writeFiles creates a model directory from name → contents.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func mustRender(t *testing.T, tmpl *Template, msgs []Message, opts RenderOptions) string {
	t.Helper()
	out, err := tmpl.Render(msgs, opts)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return out
}

var hello = []Message{{Role: "user", Content: "hi"}}

func TestParseTokenizerConfig(t *testing.T) {
	b := func(v bool) *bool { return &v }
	for _, tc := range []struct {
		name           string
		file           string // under testdata/models, or inline JSON
		bos, eos, pad  string
		unk            string
		addBOS, addEOS *bool
		maxLen         int64
		class          string
		templates      []string
		tokens         map[string]string // a subset of SpecialTokens
	}{
		{name: "llama3 (int(1e30) max length)", file: "llama3/tokenizer_config.json",
			bos: "<|begin_of_text|>", eos: "<|end_of_text|>", maxLen: math.MaxInt64,
			class: "PreTrainedTokenizerFast", templates: []string{"default"}},
		{name: "gemma3 (model-specific tokens)", file: "gemma3/tokenizer_config.json",
			bos: "<bos>", eos: "<end_of_turn>", pad: "<pad>", unk: "<unk>", addBOS: b(true), addEOS: b(false),
			maxLen: 32768, class: "GemmaTokenizer", templates: []string{"default"},
			tokens: map[string]string{"boi_token": "<start_of_image>", "image_token": "<image_soft_token>"}},
		{name: "qwen3 (null bos)", file: "qwen3/tokenizer_config.json",
			eos: "<|im_end|>", pad: "<|endoftext|>", addBOS: b(false), maxLen: 131072,
			class: "Qwen2Tokenizer", templates: []string{"default"}},
		{name: "AddedToken objects, list of templates", file: `{
			"bos_token": {"__type": "AddedToken", "content": "<｜begin▁of▁sentence｜>", "lstrip": false},
			"eos_token": {"content": "</s>"},
			"pad_token": null,
			"add_bos_token": true,
			"model_max_length": 1e30,
			"extra_special_tokens": {"video_token": "<video>"},
			"additional_special_tokens": ["<a>", "<b>"],
			"chat_template": [{"name": "default", "template": "x"}, {"name": "rag", "template": "y"}]}`,
			bos: "<｜begin▁of▁sentence｜>", eos: "</s>", addBOS: b(true), maxLen: math.MaxInt64,
			templates: []string{"default", "rag"}, tokens: map[string]string{"video_token": "<video>"}},
		{name: "nothing", file: `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.file)
			if !strings.HasPrefix(tc.file, "{") {
				var err error
				if data, err = os.ReadFile(filepath.Join("testdata", "models", tc.file)); err != nil {
					t.Fatal(err)
				}
			}
			c, err := ParseTokenizerConfig(data)
			if err != nil {
				t.Fatal(err)
			}
			if c.BOSToken != tc.bos || c.EOSToken != tc.eos || c.PadToken != tc.pad || c.UnkToken != tc.unk {
				t.Errorf("tokens bos %q eos %q pad %q unk %q", c.BOSToken, c.EOSToken, c.PadToken, c.UnkToken)
			}
			if (c.AddBOSToken == nil) != (tc.addBOS == nil) || c.AddBOSToken != nil && *c.AddBOSToken != *tc.addBOS {
				t.Errorf("AddBOSToken %v, want %v", c.AddBOSToken, tc.addBOS)
			}
			if (c.AddEOSToken == nil) != (tc.addEOS == nil) || c.AddEOSToken != nil && *c.AddEOSToken != *tc.addEOS {
				t.Errorf("AddEOSToken %v, want %v", c.AddEOSToken, tc.addEOS)
			}
			if c.ModelMaxLength != tc.maxLen {
				t.Errorf("ModelMaxLength %d, want %d", c.ModelMaxLength, tc.maxLen)
			}
			if c.TokenizerClass != tc.class {
				t.Errorf("TokenizerClass %q, want %q", c.TokenizerClass, tc.class)
			}
			if got := strings.Join(sortedKeys(c.ChatTemplates), ","); got != strings.Join(tc.templates, ",") {
				t.Errorf("ChatTemplates %s, want %v", got, tc.templates)
			}
			for k, v := range tc.tokens {
				if c.SpecialTokens[k] != v {
					t.Errorf("SpecialTokens[%s] = %q, want %q", k, c.SpecialTokens[k], v)
				}
			}
			for _, k := range []string{"add_bos_token", "additional_special_tokens", "pad_token"} {
				if _, ok := c.SpecialTokens[k]; ok && (k != "pad_token" || tc.pad == "") {
					t.Errorf("SpecialTokens has %s", k)
				}
			}
			if c.Raw == nil {
				t.Error("Raw is nil")
			}
		})
	}
}

func TestParseTokenizerConfigErrors(t *testing.T) {
	for name, text := range map[string]string{
		"not JSON":                `{"bos_token": `,
		"not an object":           `[1, 2]`,
		"null":                    `null`,
		"bos_token a number":      `{"bos_token": 3}`,
		"chat_template a number":  `{"chat_template": 3}`,
		"list entry without name": `{"chat_template": [{"template": "x"}]}`,
		"add_bos_token a string":  `{"add_bos_token": "yes"}`,
		"model_max_length text":   `{"model_max_length": "long"}`,
	} {
		if _, err := ParseTokenizerConfig([]byte(text)); err == nil {
			t.Errorf("%s: no error", name)
		} else if !strings.Contains(err.Error(), "tokenizer_config.json") {
			t.Errorf("%s: error %q does not name the file", name, err)
		}
	}
}

func TestLoadDirPriority(t *testing.T) {
	cfg := `{"bos_token": "<s>", "chat_template": "config:{{ bos_token }}"}`
	for _, tc := range []struct {
		name  string
		files map[string]string
		opts  RenderOptions
		want  string
		names string
	}{
		{"tokenizer_config.json", map[string]string{"tokenizer_config.json": cfg}, RenderOptions{}, "config:<s>", "default"},
		{"chat_template.jinja wins", map[string]string{"tokenizer_config.json": cfg,
			"chat_template.jinja": "jinja:{{ bos_token }}"}, RenderOptions{}, "jinja:<s>", "default"},
		{"additional templates replace the config's", map[string]string{"tokenizer_config.json": cfg,
			"chat_template.jinja":                   "jinja",
			"additional_chat_templates/rag.jinja":   "rag:{{ documents[0] }}",
			"additional_chat_templates/notes.txt":   "ignored",
			"additional_chat_templates/sub/x.jinja": "ignored"},
			RenderOptions{Name: "rag", Documents: []any{"d"}}, "rag:d", "default,rag"},
		{"chat_template.json only when nothing else", map[string]string{"tokenizer_config.json": `{"bos_token": "<s>"}`,
			"chat_template.json": `{"chat_template": "legacy:{{ bos_token }}"}`}, RenderOptions{}, "legacy:<s>", "default"},
		{"chat_template.json loses to the config", map[string]string{"tokenizer_config.json": cfg,
			"chat_template.json": `{"chat_template": "legacy"}`}, RenderOptions{}, "config:<s>", "default"},
		{"no tokenizer_config.json", map[string]string{"chat_template.jinja": "[{{ bos_token is defined }}]"},
			RenderOptions{}, "[False]", "default"},
		{"special_tokens_map.json overrides (legacy layout)", map[string]string{
			"tokenizer_config.json":   `{"bos_token": "<s>", "eos_token": "</s>", "chat_template": "{{ bos_token }}|{{ eos_token }}|{{ pad_token }}"}`,
			"special_tokens_map.json": `{"bos_token": {"content": "<BOS>", "lstrip": false}, "pad_token": "<pad>", "additional_special_tokens": ["<x>"]}`},
			RenderOptions{}, "<BOS>|</s>|<pad>", "default"},
		{"special_tokens_map.json ignored with added_tokens_decoder", map[string]string{
			"tokenizer_config.json":   `{"bos_token": "<s>", "added_tokens_decoder": {}, "chat_template": "{{ bos_token }}"}`,
			"special_tokens_map.json": `{"bos_token": "<BOS>"}`},
			RenderOptions{}, "<s>", "default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := LoadDir(writeFiles(t, tc.files))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(tmpl.Names(), ","); got != tc.names {
				t.Errorf("Names() = %s, want %s", got, tc.names)
			}
			if got := mustRender(t, tmpl, hello, tc.opts); got != tc.want {
				t.Errorf("rendered %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLoadDirConfig(t *testing.T) {
	tmpl, err := LoadDir(filepath.Join("testdata", "models", "gemma3"))
	if err != nil {
		t.Fatal(err)
	}
	c := tmpl.Config()
	if c == nil || c.BOSToken != "<bos>" || c.ModelMaxLength != 32768 {
		t.Fatalf("Config() = %+v", c)
	}
	src, ok := tmpl.Source("default")
	if !ok || !strings.Contains(src, "Conversation roles must alternate") {
		t.Errorf("Source(default) = %q, %v", src, ok)
	}
	if _, ok := tmpl.Source("nope"); ok {
		t.Error("Source(nope) found")
	}
	tokens := tmpl.SpecialTokens()
	tokens["bos_token"] = "changed"
	if tmpl.SpecialTokens()["bos_token"] != "<bos>" {
		t.Error("SpecialTokens() returns the template's own map")
	}
	if n, _ := New("x", nil); n.Config() != nil {
		t.Error("New: Config() not nil")
	}
}

func TestFailurePaths(t *testing.T) {
	t.Run("no chat template", func(t *testing.T) {
		_, err := LoadDir(writeFiles(t, map[string]string{"tokenizer_config.json": `{"bos_token": "<s>"}`}))
		if !errors.Is(err, ErrNoChatTemplate) {
			t.Fatalf("err = %v, want ErrNoChatTemplate", err)
		}
		if _, err := LoadDir(t.TempDir()); !errors.Is(err, ErrNoChatTemplate) {
			t.Fatalf("empty dir: err = %v", err)
		}
		if _, err := NewSet(nil, nil); !errors.Is(err, ErrNoChatTemplate) {
			t.Fatalf("NewSet(nil): err = %v", err)
		}
	})
	t.Run("missing directory", func(t *testing.T) {
		if _, err := LoadDir(filepath.Join(t.TempDir(), "nope")); err == nil {
			t.Fatal("no error")
		}
	})
	for name, src := range map[string]string{
		"unclosed block":    "{% for m in messages %}{{ m.content }}",
		"unclosed variable": "{{ messages[0",
		"unknown statement": "{% frobnicate %}",
		"stray end":         "{% endif %}",
	} {
		t.Run("malformed template: "+name, func(t *testing.T) {
			if _, err := New(src, nil); err == nil || !strings.Contains(err.Error(), "compiling chat template") {
				t.Fatalf("New: err = %v", err)
			}
			_, err := LoadDir(writeFiles(t, map[string]string{"chat_template.jinja": src}))
			if err == nil || !strings.Contains(err.Error(), "compiling chat template \"default\"") {
				t.Fatalf("LoadDir: err = %v", err)
			}
		})
	}
	t.Run("malformed tokenizer_config.json", func(t *testing.T) {
		_, err := LoadDir(writeFiles(t, map[string]string{"tokenizer_config.json": `{"chat_template": `}))
		if err == nil || !strings.Contains(err.Error(), "tokenizer_config.json") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("malformed chat_template.json", func(t *testing.T) {
		_, err := LoadDir(writeFiles(t, map[string]string{"chat_template.json": `{"chat_template": 5}`}))
		if err == nil || !strings.Contains(err.Error(), "chat_template.json") {
			t.Fatalf("err = %v", err)
		}
	})

	set, err := NewSet(map[string]string{"default": "d", "tool_use": "t"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("unknown named template", func(t *testing.T) {
		_, err := set.Render(hello, RenderOptions{Name: "rag"})
		if err == nil || !strings.Contains(err.Error(), `no chat template named "rag" (have default, tool_use)`) {
			t.Fatalf("err = %v", err)
		}
		single, _ := New("x", nil)
		if _, err := single.Render(hello, RenderOptions{Name: "tool_use"}); err == nil {
			t.Fatal("single template: unknown name accepted")
		}
		if out, err := single.Render(hello, RenderOptions{Name: "default"}); err != nil || out != "x" {
			t.Fatalf("single template by name default: %q, %v", out, err)
		}
	})
	t.Run("several templates, no default", func(t *testing.T) {
		s, _ := NewSet(map[string]string{"a": "a", "b": "b"}, nil)
		if _, err := s.Render(hello, RenderOptions{}); err == nil || !strings.Contains(err.Error(), "none named \"default\"") {
			t.Fatalf("err = %v", err)
		}
		if out := mustRender(t, s, hello, RenderOptions{Name: "b"}); out != "b" {
			t.Fatalf("Name b: %q", out)
		}
	})
	t.Run("empty conversation", func(t *testing.T) {
		if _, err := set.Render(nil, RenderOptions{}); err == nil {
			t.Fatal("no error")
		}
	})
	t.Run("reserved Extra", func(t *testing.T) {
		for _, k := range reservedVars {
			if _, err := set.Render(hello, RenderOptions{Extra: map[string]any{k: 1}}); err == nil || !strings.Contains(err.Error(), k) {
				t.Errorf("Extra[%s]: err = %v", k, err)
			}
		}
	})
	t.Run("unconvertible value", func(t *testing.T) {
		_, err := set.Render(hello, RenderOptions{Extra: map[string]any{"f": func() {}}})
		if err == nil || !strings.Contains(err.Error(), `Extra["f"]`) {
			t.Fatalf("err = %v", err)
		}
		_, err = set.Render([]Message{{Role: "user", Extra: map[string]any{"c": make(chan int)}}}, RenderOptions{})
		if err == nil || !strings.Contains(err.Error(), "message 0") {
			t.Fatalf("err = %v", err)
		}
		_, err = set.Render(hello, RenderOptions{Tools: []any{json.RawMessage(`{"a": `)}})
		if err == nil || !strings.Contains(err.Error(), "Tools") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("runtime errors", func(t *testing.T) {
		for _, src := range []string{"{{ x | nosuchfilter }}", "{{ 1 is nosuchtest }}", "{{ raise_exception() }}"} {
			tm, err := New(src, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tm.Render(hello, RenderOptions{}); err == nil || !strings.Contains(err.Error(), `rendering chat template "default"`) {
				t.Errorf("%s: err = %v", src, err)
			}
		}
	})
}

func TestRaiseException(t *testing.T) {
	tm, err := New(`{% if messages | length > 1 %}{{ raise_exception("too many: " ~ messages | length) }}{% endif %}ok`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out := mustRender(t, tm, hello, RenderOptions{}); out != "ok" {
		t.Fatalf("got %q", out)
	}
	_, err = tm.Render(append(hello, hello...), RenderOptions{})
	var te *TemplateError
	if !errors.As(err, &te) || te.Message != "too many: 2" {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "too many: 2") {
		t.Fatalf("error text %q lacks the message", err)
	}
}

func TestStrftimeNow(t *testing.T) {
	tm, err := New(`{{ strftime_now("%d %b %Y") }}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := func() time.Time { return time.Date(2024, 12, 25, 23, 59, 0, 0, time.Local) }
	if out := mustRender(t, tm, hello, RenderOptions{Now: clock}); out != "25 Dec 2024" {
		t.Fatalf("fixed clock: %q", out)
	}
	out := mustRender(t, tm, hello, RenderOptions{})
	if _, err := time.Parse("02 Jan 2006", out); err != nil {
		t.Fatalf("wall clock: %q: %v", out, err)
	}
	if bad, _ := New(`{{ strftime_now() }}`, nil); bad != nil {
		if _, err := bad.Render(hello, RenderOptions{}); err == nil {
			t.Fatal("strftime_now() without a format: no error")
		}
	}
}

func TestVariables(t *testing.T) {
	tm, err := New(strings.Join([]string{
		"tools={{ tools is none }}/{{ tools | length if tools is not none else '-' }}",
		"docs={{ documents is none }}",
		"agp={{ add_generation_prompt }}",
		"bos={{ bos_token }}",
		"think={{ enable_thinking }}",
		"{% for m in messages %}[{{ m | tojson }}]{% endfor %}",
	}, "\n"), map[string]string{"bos_token": "<s>", "eos_token": "</s>"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		msgs []Message
		opts RenderOptions
		want string
	}{
		{"defaults", hello, RenderOptions{},
			"tools=True/-\ndocs=True\nagp=False\nbos=<s>\nthink=\n" + `[{"role": "user", "content": "hi"}]`},
		{"empty tools are not None", hello, RenderOptions{Tools: []any{}, Documents: []any{}, AddGenerationPrompt: true},
			"tools=False/0\ndocs=False\nagp=True\nbos=<s>\nthink=\n" + `[{"role": "user", "content": "hi"}]`},
		{"Extra overrides a special token", hello, RenderOptions{Extra: map[string]any{"bos_token": "<B>", "enable_thinking": false}},
			"tools=True/-\ndocs=True\nagp=False\nbos=<B>\nthink=False\n" + `[{"role": "user", "content": "hi"}]`},
		{"message fields, tool calls, nil dropped", []Message{{Role: "assistant", Content: "",
			ToolCalls: []ToolCall{{ID: "call12345", Type: "function", Function: FunctionCall{Name: "f",
				Arguments: json.RawMessage(`{"z": 1, "a": [true, null, "x"]}`)}},
				{Function: FunctionCall{Name: "g", Arguments: `{"raw": "string"}`}},
				{Function: FunctionCall{Name: "h"}}},
			Extra: map[string]any{"name": "bot", "gone": nil, "tool_call_id": "id1"}}}, RenderOptions{},
			"tools=True/-\ndocs=True\nagp=False\nbos=<s>\nthink=\n" +
				`[{"role": "assistant", "content": "", "tool_calls": [` +
				`{"id": "call12345", "type": "function", "function": {"name": "f", "arguments": {"z": 1, "a": [true, null, "x"]}}}, ` +
				`{"function": {"name": "g", "arguments": "{\"raw\": \"string\"}"}}, {"function": {"name": "h"}}], ` +
				`"name": "bot", "tool_call_id": "id1"}]`},
		{"Extra replaces fields in place", []Message{{Role: "user", Content: "ignored",
			Extra: map[string]any{"content": []any{map[string]any{"type": "text", "text": "part"}}, "role": "tool", "x": 1}}},
			RenderOptions{},
			"tools=True/-\ndocs=True\nagp=False\nbos=<s>\nthink=\n" +
				`[{"role": "tool", "content": [{"text": "part", "type": "text"}], "x": 1}]`},
		{"Extra content nil removes it", []Message{{Role: "assistant", Content: "ignored", Extra: map[string]any{"content": nil}}},
			RenderOptions{}, "tools=True/-\ndocs=True\nagp=False\nbos=<s>\nthink=\n" + `[{"role": "assistant"}]`},
		{"reasoning aliased", []Message{{Role: "assistant", Content: "4", Extra: map[string]any{"reasoning": "2+2"}}},
			RenderOptions{}, "tools=True/-\ndocs=True\nagp=False\nbos=<s>\nthink=\n" +
				`[{"thinking": "2+2", "role": "assistant", "content": "4", "reasoning": "2+2", "reasoning_content": "2+2"}]`},
		{"own thinking kept", []Message{{Role: "assistant", Content: "4",
			Extra: map[string]any{"reasoning_content": "r", "thinking": "t"}}},
			RenderOptions{}, "tools=True/-\ndocs=True\nagp=False\nbos=<s>\nthink=\n" +
				`[{"thinking": "t", "role": "assistant", "content": "4", "reasoning_content": "r"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustRender(t, tm, tc.msgs, tc.opts); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestValueConversion(t *testing.T) {
	type params struct {
		Zeta  string  `json:"zeta"`
		Alpha float64 `json:"alpha,omitempty"`
		Skip  string  `json:"-"`
	}
	type named map[string]int
	tm, err := New(`{{ v | tojson }}|{{ v is mapping }}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	big := uint64(math.MaxUint64)
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"struct keeps field order", params{Zeta: "z", Alpha: 0.5, Skip: "x"}, `{"zeta": "z", "alpha": 0.5}|True`},
		{"pointer to struct", &params{Zeta: "p"}, `{"zeta": "p"}|True`},
		{"nil pointer", (*params)(nil), `null|False`},
		{"map sorted", map[string]any{"b": 1, "a": "x", "c": []int{1, 2}}, `{"a": "x", "b": 1, "c": [1, 2]}|True`},
		{"named map type", named{"y": 2, "x": 1}, `{"x": 1, "y": 2}|True`},
		{"raw JSON keeps order", json.RawMessage(`{"z": 1, "a": {"y": 2.5, "b": [true]}}`), `{"z": 1, "a": {"y": 2.5, "b": [true]}}|True`},
		{"json.Number", json.Number("12"), `12|False`},
		{"uint64 max", big, `1.8446744073709552e+19|False`},
		{"array", [2]string{"a", "b"}, `["a", "b"]|False`},
		{"bytes as base64", []byte("hi"), `"aGk="|False`},
		{"int8", int8(-3), `-3|False`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mustRender(t, tm, hello, RenderOptions{Extra: map[string]any{"v": tc.v}})
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
	// Python keeps 2.0 and 1e3 floats and 1 an int; so does the conversion.
	kinds, err := New(`{{ v.f is float }} {{ v.e is float }} {{ v.i is integer }} {{ v.g is float }}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustRender(t, kinds, hello, RenderOptions{Extra: map[string]any{"v": map[string]any{
		"f": 2.0, "e": json.Number("1e3"), "i": json.Number("1"), "g": float32(0.5)}}}); got != "True True True True" {
		t.Errorf("number kinds: %s", got)
	}
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	if _, err := tm.Render(hello, RenderOptions{Extra: map[string]any{"v": cyclic}}); err == nil {
		t.Error("cyclic map: no error")
	}
}

func TestConcurrentRender(t *testing.T) {
	tm, err := LoadDir(filepath.Join("testdata", "models", "qwen3"))
	if err != nil {
		t.Fatal(err)
	}
	want := mustRender(t, tm, hello, RenderOptions{AddGenerationPrompt: true})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				msgs := []Message{{Role: "user", Content: "hi"}}
				if i%2 == 1 {
					msgs = append(msgs, Message{Role: "assistant", Content: "x"}, Message{Role: "user", Content: "hi"})
				}
				out, err := tm.Render(msgs, RenderOptions{AddGenerationPrompt: true})
				if err != nil {
					t.Error(err)
					return
				}
				if i%2 == 0 && out != want {
					t.Errorf("concurrent render differs: %q", out)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestRange checks the sandbox's range(): Python's values, and ranges past
// jinja2.sandbox.MAX_RANGE refused instead of built.
func TestRange(t *testing.T) {
	for src, want := range map[string]string{
		"{{ range(100000) | length }}":               "100000",
		"{{ range(5, 0, -2) | list }}":               "[5, 3, 1]",
		"{{ range(-3) | list }}":                     "[]",
		"{{ range(2, 5) | list }}":                   "[2, 3, 4]",
		"{{ range(true) | list }}":                   "[0]",
		"{% for i in range(3) %}{{ i }}{% endfor %}": "012",
	} {
		tm, err := New(src, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := mustRender(t, tm, hello, RenderOptions{}); got != want {
			t.Errorf("%s = %q, want %q", src, got, want)
		}
	}
	for src, want := range map[string]string{
		"{{ range(100001) | length }}":                                     "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).",
		"{% for i in range(9223372036854775807) %}{% break %}{% endfor %}": "Range too big",
		"{{ range(-9223372036854775807, 9223372036854775807, 3) }}":        "Range too big",
		"{{ range(1.5) }}":     "'float' object cannot be interpreted as an integer",
		"{{ range(1, 2, 0) }}": "must not be zero",
		"{{ range() }}":        "expected 1 to 3 arguments",
	} {
		tm, err := New(src, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tm.Render(hello, RenderOptions{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", src, err, want)
		}
	}
}

// TestEnginePanicRecovered checks the boundary: a panic inside the engine
// (here: rendering a nil template; v1.8.0 also panics on 'a' * -1) comes back
// as an error.
func TestEnginePanicRecovered(t *testing.T) {
	if _, err := execute(nil, nil); err == nil || !strings.Contains(err.Error(), "template engine panicked") {
		t.Fatalf("err = %v", err)
	}
	tm, err := New("{{ 'a' * -1 }}", nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tm.Render(hello, RenderOptions{}) // Jinja2 renders "", an engine may fail: neither panics
	if err == nil && out != "" {
		t.Fatalf("got %q", out)
	}
}
