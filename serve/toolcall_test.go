package serve

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/hf/chat"
	"github.com/gotpu/gotpu/hf/tokenizer"
)

func TestParseToolCalls(t *testing.T) {
	known := map[string]bool{"f": true, "g": true}
	tests := []struct {
		name, text, content string
		calls               []toolCall
	}{
		{"hermes", "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1, \"b\": [1, 2]}}\n</tool_call>", "",
			[]toolCall{{"f", `{"a":1,"b":[1,2]}`}}},
		{"hermes two", "<tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call><tool_call>{\"name\":\"g\",\"arguments\":{\"x\":\"y\"}}</tool_call>", "",
			[]toolCall{{"f", `{}`}, {"g", `{"x":"y"}`}}},
		{"text before", "Sure. <tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call>", "Sure.", []toolCall{{"f", `{}`}}},
		{"unclosed", "<tool_call>{\"name\":\"f\",\"arguments\":{\"q\":\"z\"}}", "", []toolCall{{"f", `{"q":"z"}`}}},
		{"string arguments", "<tool_call>{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}</tool_call>", "", []toolCall{{"f", `{"a":1}`}}},
		{"no arguments", "<tool_call>{\"name\":\"f\"}</tool_call>", "", []toolCall{{"f", `{}`}}},
		{"bad json", "<tool_call>{\"name\":\"f\",</tool_call>", "<tool_call>{\"name\":\"f\",</tool_call>", nil},
		{"unknown tool", "<tool_call>{\"name\":\"h\",\"arguments\":{}}</tool_call>", "<tool_call>{\"name\":\"h\",\"arguments\":{}}</tool_call>", nil},
		{"plain json", " {\"name\": \"g\", \"parameters\": {\"x\": 2}} ", "", []toolCall{{"g", `{"x":2}`}}},
		{"plain list", `[{"name":"f","arguments":{}},{"name":"g","arguments":{}}]`, "", []toolCall{{"f", `{}`}, {"g", `{}`}}},
		{"fenced", "```json\n{\"name\":\"f\",\"arguments\":{}}\n```", "", []toolCall{{"f", `{}`}}},
		{"json answer", `{"answer": 42}`, `{"answer": 42}`, nil},
		{"text", "  just text ", "just text", nil},
	}
	for _, tc := range tests {
		content, calls := parseToolCalls(tc.text, known)
		if content != tc.content || len(calls) != len(tc.calls) {
			t.Errorf("%s: got %q %v, want %q %v", tc.name, content, calls, tc.content, tc.calls)
			continue
		}
		for i := range calls {
			if calls[i] != tc.calls[i] {
				t.Errorf("%s: call %d = %+v, want %+v", tc.name, i, calls[i], tc.calls[i])
			}
		}
	}
}

// TestToolStream feeds answers in small pieces and checks that content
// streams up to a tool call and the rest is decided at the end.
func TestToolStream(t *testing.T) {
	known := map[string]bool{"f": true}
	tests := []struct{ text, streamed, rest string }{
		{"Hello <tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call>", "Hello ", ""},
		{"  {\"name\":\"f\",\"arguments\":{}}", "", ""},
		{"Just an answer with <tool and more", "Just an answer with <tool and more", ""},
		{"{\"not\": \"a call\"}", "", "{\"not\": \"a call\"}"},
		{"``` code ```", "", "``` code ```"},
	}
	for _, tc := range tests {
		for _, size := range []int{1, 2, 5, 100} {
			ts := newToolStream()
			var streamed string
			for i := 0; i < len(tc.text); i += size {
				streamed += ts.push(tc.text[i:min(i+size, len(tc.text))])
			}
			rest, calls := ts.finish(known)
			wantCalls := strings.Contains(tc.text, `"name":"f"`)
			if streamed != tc.streamed || rest != tc.rest || (len(calls) > 0) != wantCalls {
				t.Errorf("%q by %d: streamed %q rest %q calls %v", tc.text, size, streamed, rest, calls)
			}
		}
	}
}

// TestDetokWindow checks that the windowed incremental detokenizer gives
// exactly the full decode, piece by piece, on real tokenizers (byte-level
// BPE and SentencePiece-style with its leading-space rule).
func TestDetokWindow(t *testing.T) {
	root := filepath.Join("..", "testdata", "tokenizers")
	f, err := os.Open(filepath.Join(root, "corpus.jsonl"))
	if err != nil {
		t.Fatalf("the committed corpus: %v", err)
	}
	defer f.Close()
	var texts []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		var rec struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) == nil {
			texts = append(texts, rec.Text)
		}
	}
	for _, name := range []string{"gpt2", "llama2", "bert"} {
		tk, err := tokenizer.FromFile(filepath.Join(root, name, "tokenizer.json"))
		if err != nil {
			t.Logf("%s: %v (skipped)", name, err)
			continue
		}
		tok := HFTokenizer(tk)
		for _, text := range texts {
			ids, err := tok.Encode(text, false)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := tok.Decode(ids, true)
			d := &detok{tok: tok}
			var got strings.Builder
			for _, id := range ids {
				p, err := d.add(id)
				if err != nil {
					t.Fatal(err)
				}
				got.WriteString(p)
			}
			r, _ := d.rest()
			got.WriteString(r)
			if got.String() != want {
				t.Errorf("%s: %q: incremental %q, full %q", name, text, got.String(), want)
			}
		}
	}
}

// TestToolsQwenTemplate renders a tool conversation with the real
// Qwen2.5-Instruct template: the tools reach it as OpenAI sends them (key
// order kept) and an assistant's tool call (arguments sent as a JSON
// string) comes back in the <tool_call> form the parser reads.
func TestToolsQwenTemplate(t *testing.T) {
	tmpl, err := chat.LoadDir(filepath.Join("..", "hf", "chat", "testdata", "models", "qwen2_5_instruct"))
	if err != nil {
		t.Fatal(err)
	}
	gen := newFakeGen("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>")
	s := newTestServer(t, gen, func(o *ServerOptions) { o.Chat = tmpl })
	w := do(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Weather in Paris?"},
		{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"sunny"},
		{"role":"user","content":"And Rome?"}],
		"tools":[{"type":"function","function":{"name":"get_weather","description":"Get the weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]}`)
	if w.Code != 200 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	prompt, _ := fakeTokenizer{}.Decode(gen.requests()[0].Prompt, false)
	for _, want := range []string{
		"<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Get the weather\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}\n</tools>",
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
		"<tool_response>\nsunny\n</tool_response>",
		"<|im_start|>assistant\n",
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q:\n%s", want, prompt)
		}
	}
	c := decode[chatCompletion](t, w).Choices[0]
	if len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].Function.Arguments != `{"city":"Rome"}` || c.FinishReason != "tool_calls" || c.Message.Content != nil {
		t.Errorf("answer %+v", c)
	}
}
