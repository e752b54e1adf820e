package serve

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gotpu/gotpu/hf/chat"
)

// testTemplate is a minimal chat template that shows the tools it gets.
const testTemplate = `{% for m in messages %}<|{{ m.role }}|>{{ m.content }}
{% endfor %}{% if tools %}<tools>{% for t in tools %}{{ t | tojson }}{% endfor %}</tools>{% endif %}{% if add_generation_prompt %}<|assistant|>{% endif %}`

func newTestServer(t *testing.T, gen *fakeGen, edit func(*ServerOptions)) *Server {
	t.Helper()
	tmpl, err := chat.New(testTemplate, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := ServerOptions{ModelName: "test-model", Generator: gen, Tokenizer: fakeTokenizer{}, Chat: tmpl,
		EOS: []int{fakeEOS}, EmbedModelName: "test-embed", Embedder: fakeEmbedder{}}
	if edit != nil {
		edit(&o)
	}
	s, err := NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func do(t *testing.T, s *Server, method, path, body string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, req)
	return w
}

func decode[T any](t *testing.T, w *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatalf("response %q: %v", w.Body.String(), err)
	}
	return v
}

// sseData checks the framing of an SSE body ("data: X\n\n" events ending
// with [DONE]) and returns the JSON payloads before [DONE].
func sseData(t *testing.T, body string) []string {
	t.Helper()
	if !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Fatalf("stream does not end with data: [DONE]: %q", body)
	}
	var out []string
	for _, ev := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		d, ok := strings.CutPrefix(ev, "data: ")
		if !ok || strings.Contains(d, "\n") {
			t.Fatalf("malformed event %q", ev)
		}
		if d == "[DONE]" {
			break
		}
		if !json.Valid([]byte(d)) {
			t.Fatalf("event is not JSON: %q", d)
		}
		out = append(out, d)
	}
	return out
}

func TestChatCompletion(t *testing.T) {
	gen := newFakeGen("Hello world!")
	s := newTestServer(t, gen, nil)
	w := do(t, s, "POST", "/v1/chat/completions", `{"model":"test-model","messages":[{"role":"user","content":"Hi"}],"seed":7,"temperature":0.5,"top_k":4,"min_p":0.1,"presence_penalty":0.5,"frequency_penalty":-0.5,"repetition_penalty":1.1,"logit_bias":{"65":-100}}`)
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	out := decode[chatCompletion](t, w)
	if len(out.Choices) != 1 || *out.Choices[0].Message.Content != "Hello world!" || out.Choices[0].FinishReason != "stop" {
		t.Fatalf("bad response %s", w.Body)
	}
	if !strings.HasPrefix(out.ID, "chatcmpl-") || out.Object != "chat.completion" || out.Model != "test-model" {
		t.Errorf("bad header fields %s", w.Body)
	}
	prompt := "<|user|>Hi\n<|assistant|>"
	u := out.Usage
	if u.PromptTokens != len(prompt) || u.CompletionTokens != len("Hello world!")+1 || u.TotalTokens != u.PromptTokens+u.CompletionTokens || u.PromptTokensDetails == nil {
		t.Errorf("usage %+v", u)
	}
	r := gen.requests()[0]
	if got, _ := (fakeTokenizer{}).Decode(r.Prompt, false); got != prompt {
		t.Errorf("prompt %q, want %q", got, prompt)
	}
	p := r.Sampling
	if p.Seed != 7 || p.Temperature != 0.5 || p.TopK != 4 || p.MinP != 0.1 || p.PresencePenalty != 0.5 || p.FrequencyPenalty != -0.5 || p.RepetitionPenalty != 1.1 || p.TopP != 1 {
		t.Errorf("sampling %+v", p)
	}
	if r.LogitBias[65] != -100 || len(r.EOS) != 1 || r.MaxTokens != 4096-len(prompt) {
		t.Errorf("request %+v", r)
	}
}

func TestChatMaxTokensAndLastTokenOnEnd(t *testing.T) {
	for _, lastOnEnd := range []bool{false, true} {
		gen := newFakeGen("Hello world!")
		gen.lastOnEnd = lastOnEnd
		s := newTestServer(t, gen, nil)
		for _, field := range []string{"max_tokens", "max_completion_tokens"} {
			w := do(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"`+field+`":5}`)
			out := decode[chatCompletion](t, w)
			if c := out.Choices[0]; *c.Message.Content != "Hello" || c.FinishReason != "length" || out.Usage.CompletionTokens != 5 {
				t.Errorf("lastOnEnd=%v %s: %s", lastOnEnd, field, w.Body)
			}
		}
		w := do(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}]}`)
		if out := decode[chatCompletion](t, w); *out.Choices[0].Message.Content != "Hello world!" || out.Choices[0].FinishReason != "stop" {
			t.Errorf("lastOnEnd=%v: %s", lastOnEnd, w.Body)
		}
	}
}

func TestStopStrings(t *testing.T) {
	tests := []struct {
		reply, stop, want, finish string
	}{
		{"Hello world. Bye", `"o w"`, "Hell", "stop"}, // spans three tokens
		{"Hello world. Bye", `["xyz", ". B"]`, "Hello world", "stop"},
		{"Hello world. Bye", `["Bye"]`, "Hello world. ", "stop"}, // at the very end
		{"Hello world. Bye", `["Byz"]`, "Hello world. Bye", "stop"},
		{"héllo 世界!", `"界"`, "héllo 世", "stop"}, // multi-byte, split over tokens
		{"Hello", `null`, "Hello", "stop"},
	}
	for _, tc := range tests {
		for _, stream := range []bool{false, true} {
			gen := newFakeGen(tc.reply)
			s := newTestServer(t, gen, nil)
			body := `{"messages":[{"role":"user","content":"Hi"}],"stop":` + tc.stop + `,"stream":` + map[bool]string{false: "false", true: "true"}[stream] + `}`
			w := do(t, s, "POST", "/v1/chat/completions", body)
			if w.Code != 200 {
				t.Fatalf("%s: status %d %s", body, w.Code, w.Body)
			}
			var text, finish string
			if stream {
				for _, d := range sseData(t, w.Body.String()) {
					var c chatChunk
					if err := json.Unmarshal([]byte(d), &c); err != nil {
						t.Fatal(err)
					}
					for _, ch := range c.Choices {
						if ch.Delta.Content != nil {
							text += *ch.Delta.Content
							if strings.Contains(*ch.Delta.Content, "\uFFFD") {
								t.Errorf("%s: piece %q holds a broken character", body, *ch.Delta.Content)
							}
						}
						if ch.FinishReason != nil {
							finish = *ch.FinishReason
						}
					}
				}
			} else {
				out := decode[chatCompletion](t, w)
				text, finish = *out.Choices[0].Message.Content, out.Choices[0].FinishReason
			}
			if text != tc.want || finish != tc.finish {
				t.Errorf("%s: got %q (%s), want %q (%s)", body, text, finish, tc.want, tc.finish)
			}
			if tc.want != tc.reply && !strings.HasPrefix(tc.stop, `["Byz`) {
				// The request was cancelled once the stop string matched.
				deadline := time.Now().Add(2 * time.Second)
				for gen.cancels() == 0 && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				if gen.cancels() == 0 && len(tc.want) < len(tc.reply)-3 {
					t.Errorf("%s: the request was not cancelled at the stop string", body)
				}
			}
		}
	}
}

// TestChatStream checks the SSE framing, the chunks and include_usage.
func TestChatStream(t *testing.T) {
	for _, includeUsage := range []bool{false, true} {
		gen := newFakeGen("Hi there")
		s := newTestServer(t, gen, nil)
		body := `{"messages":[{"role":"user","content":"Hi"}],"stream":true`
		if includeUsage {
			body += `,"stream_options":{"include_usage":true}`
		}
		w := do(t, s, "POST", "/v1/chat/completions", body+`}`)
		if w.Code != 200 || w.Header().Get("Content-Type") != "text/event-stream" {
			t.Fatalf("status %d %q: %s", w.Code, w.Header().Get("Content-Type"), w.Body)
		}
		events := sseData(t, w.Body.String())
		var text string
		var finishes int
		for i, d := range events {
			var raw map[string]json.RawMessage
			_ = json.Unmarshal([]byte(d), &raw)
			u, hasUsage := raw["usage"]
			if includeUsage != hasUsage {
				t.Errorf("event %d %s: usage key present=%v, want %v", i, d, hasUsage, includeUsage)
			}
			var c chatChunk
			_ = json.Unmarshal([]byte(d), &c)
			if c.Object != "chat.completion.chunk" || !strings.HasPrefix(c.ID, "chatcmpl-") {
				t.Errorf("event %d: %s", i, d)
			}
			if i == 0 && (len(c.Choices) != 1 || c.Choices[0].Delta.Role != "assistant") {
				t.Errorf("first event %s does not open the assistant turn", d)
			}
			last := i == len(events)-1
			if includeUsage && last {
				if len(c.Choices) != 0 || c.Usage == nil || c.Usage.CompletionTokens != len("Hi there")+1 {
					t.Errorf("usage event %s", d)
				}
				continue
			}
			if includeUsage && string(u) != "null" {
				t.Errorf("event %d has usage %s before the end", i, u)
			}
			for _, ch := range c.Choices {
				if ch.Delta.Content != nil {
					text += *ch.Delta.Content
				}
				if ch.FinishReason != nil {
					finishes++
					if *ch.FinishReason != "stop" {
						t.Errorf("finish %s", *ch.FinishReason)
					}
				}
			}
		}
		if text != "Hi there" || finishes != 1 {
			t.Errorf("include_usage=%v: text %q, %d finishes", includeUsage, text, finishes)
		}
	}
}

func TestChoicesN(t *testing.T) {
	gen := newFakeGen("abc")
	s := newTestServer(t, gen, nil)
	w := do(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"n":3,"seed":10}`)
	out := decode[chatCompletion](t, w)
	if len(out.Choices) != 3 {
		t.Fatalf("%s", w.Body)
	}
	for i, c := range out.Choices {
		if c.Index != i || *c.Message.Content != "abc" {
			t.Errorf("choice %d: %+v", i, c)
		}
	}
	if out.Usage.CompletionTokens != 12 || out.Usage.PromptTokens != len("<|user|>Hi\n<|assistant|>") {
		t.Errorf("usage %+v", out.Usage)
	}
	seeds := map[uint64]bool{}
	for _, r := range gen.requests() {
		seeds[r.Sampling.Seed] = true
	}
	if !seeds[10] || !seeds[11] || !seeds[12] {
		t.Errorf("seeds %v, want 10, 11, 12", seeds)
	}
	// Streaming: every choice streams its own text and finish.
	w = do(t, s, "POST", "/v1/completions", `{"prompt":"x","n":2,"stream":true,"stream_options":{"include_usage":true}}`)
	texts := map[int]string{}
	finishes := map[int]int{}
	for _, d := range sseData(t, w.Body.String()) {
		var c completion
		_ = json.Unmarshal([]byte(d), &c)
		for _, ch := range c.Choices {
			texts[ch.Index] += ch.Text
			if ch.FinishReason != nil {
				finishes[ch.Index]++
			}
		}
	}
	if texts[0] != "abc" || texts[1] != "abc" || finishes[0] != 1 || finishes[1] != 1 {
		t.Errorf("streamed %v %v", texts, finishes)
	}
}

func TestCompletions(t *testing.T) {
	gen := newFakeGen("xyz")
	gen.cached = 2
	s := newTestServer(t, gen, nil)
	tests := []struct {
		body    string
		texts   []string
		prompts int
	}{
		{`{"model":"test-model","prompt":"ab"}`, []string{"xyz"}, 3},
		{`{"prompt":["ab","c"],"n":2}`, []string{"xyz", "xyz", "xyz", "xyz"}, 5},
		{`{"prompt":[97,98]}`, []string{"xyz"}, 2},
		{`{"prompt":[[97],[98,99]]}`, []string{"xyz", "xyz"}, 3},
		{`{"prompt":"ab","echo":true}`, []string{"abxyz"}, 3},
		{`{"prompt":"ab","max_tokens":2}`, []string{"xy"}, 3},
	}
	for _, tc := range tests {
		w := do(t, s, "POST", "/v1/completions", tc.body)
		if w.Code != 200 {
			t.Fatalf("%s: %d %s", tc.body, w.Code, w.Body)
		}
		out := decode[completion](t, w)
		if out.Object != "text_completion" || !strings.HasPrefix(out.ID, "cmpl-") || len(out.Choices) != len(tc.texts) {
			t.Fatalf("%s: %s", tc.body, w.Body)
		}
		for i, c := range out.Choices {
			if c.Index != i || c.Text != tc.texts[i] {
				t.Errorf("%s: choice %d = %+v", tc.body, i, c)
			}
		}
		if out.Usage.PromptTokens != tc.prompts {
			t.Errorf("%s: prompt tokens %d, want %d", tc.body, out.Usage.PromptTokens, tc.prompts)
		}
	}
	w := do(t, s, "POST", "/v1/completions", `{"prompt":"ab"}`)
	if out := decode[completion](t, w); out.Usage.PromptTokensDetails.CachedTokens != 2 {
		t.Errorf("cached tokens: %s", w.Body)
	}
}

func TestLogprobs(t *testing.T) {
	gen := newFakeGen("ab")
	s := newTestServer(t, gen, nil)
	// Chat format.
	w := do(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"logprobs":true,"top_logprobs":2}`)
	out := decode[chatCompletion](t, w)
	lp := out.Choices[0].Logprobs
	if lp == nil || len(lp.Content) != 2 {
		t.Fatalf("logprobs %s", w.Body)
	}
	for i, e := range lp.Content {
		want := string("ab"[i])
		if e.Token != want || e.Logprob != -float32(i+1)/8 || len(e.Bytes) != 1 || e.Bytes[0] != int(want[0]) || len(e.TopLogprobs) != 2 {
			t.Errorf("entry %d: %+v", i, e)
		}
		if e.TopLogprobs[0].Token != want || e.TopLogprobs[1].Logprob != e.Logprob-1 {
			t.Errorf("top %d: %+v", i, e.TopLogprobs)
		}
	}
	if r := gen.requests()[0]; !r.Logprobs || r.TopLogprobs != 2 {
		t.Errorf("request %+v", r)
	}
	// logprobs without top_logprobs: the entries carry empty lists.
	w = do(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"logprobs":true}`)
	if !strings.Contains(w.Body.String(), `"top_logprobs":[]`) {
		t.Errorf("no empty top_logprobs: %s", w.Body)
	}
	// No logprobs: "logprobs": null.
	w = do(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}]}`)
	if !strings.Contains(w.Body.String(), `"logprobs":null`) {
		t.Errorf("logprobs not null: %s", w.Body)
	}
	// Legacy completions format.
	w = do(t, s, "POST", "/v1/completions", `{"prompt":"Q","logprobs":3}`)
	c := decode[completion](t, w).Choices[0]
	l := c.Logprobs
	if l == nil || strings.Join(l.Tokens, "") != "ab" || len(l.TokenLogprobs) != 2 || l.TokenLogprobs[1] != -0.25 ||
		len(l.TopLogprobs) != 2 || len(l.TopLogprobs[0]) != 3 || l.TextOffset[0] != 0 || l.TextOffset[1] != 1 {
		t.Errorf("legacy logprobs %s", w.Body)
	}
	// Streaming chat logprobs arrive with their tokens.
	w = do(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"logprobs":true,"top_logprobs":1,"stream":true}`)
	n := 0
	for _, d := range sseData(t, w.Body.String()) {
		var ch chatChunk
		_ = json.Unmarshal([]byte(d), &ch)
		for _, c := range ch.Choices {
			if c.Logprobs != nil {
				n += len(c.Logprobs.Content)
			}
		}
	}
	if n != 2 {
		t.Errorf("streamed %d logprob entries, want 2", n)
	}
}

func TestToolCalls(t *testing.T) {
	tools := `"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	tests := []struct {
		reply, content string
		calls          int
	}{
		{"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", "", 1},
		{"Let me check.<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}</tool_call>", "Let me check.", 1},
		{"<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}</tool_call>\n<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Rome\"}}</tool_call>", "", 2},
		{"{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", "", 1},
		{"It is sunny.", "It is sunny.", 0},
		{"{\"name\": \"other\", \"arguments\": {}}", "{\"name\": \"other\", \"arguments\": {}}", 0},
	}
	for _, tc := range tests {
		for _, stream := range []bool{false, true} {
			gen := newFakeGen(tc.reply)
			s := newTestServer(t, gen, nil)
			body := `{"messages":[{"role":"user","content":"Weather?"}],` + tools
			if stream {
				body += `,"stream":true`
			}
			w := do(t, s, "POST", "/v1/chat/completions", body+`}`)
			if w.Code != 200 {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
			var content, finish string
			var calls []toolCallOut
			if stream {
				for _, d := range sseData(t, w.Body.String()) {
					var c chatChunk
					_ = json.Unmarshal([]byte(d), &c)
					for _, ch := range c.Choices {
						if ch.Delta.Content != nil {
							content += *ch.Delta.Content
						}
						calls = append(calls, ch.Delta.ToolCalls...)
						if ch.FinishReason != nil {
							finish = *ch.FinishReason
						}
					}
				}
			} else {
				c := decode[chatCompletion](t, w).Choices[0]
				if c.Message.Content != nil {
					content = *c.Message.Content
				}
				calls, finish = c.Message.ToolCalls, c.FinishReason
			}
			if strings.TrimSpace(content) != tc.content || len(calls) != tc.calls {
				t.Errorf("stream=%v %q: content %q, %d calls: %s", stream, tc.reply, content, len(calls), w.Body)
				continue
			}
			wantFinish := "stop"
			if tc.calls > 0 {
				wantFinish = "tool_calls"
			}
			if finish != wantFinish {
				t.Errorf("stream=%v %q: finish %q", stream, tc.reply, finish)
			}
			for i, c := range calls {
				if !strings.HasPrefix(c.ID, "call_") || c.Type != "function" || c.Function.Name != "get_weather" || !strings.HasPrefix(c.Function.Arguments, `{"city":"`) {
					t.Errorf("call %d: %+v", i, c)
				}
				if stream && (c.Index == nil || *c.Index != i) {
					t.Errorf("streamed call %d has index %v", i, c.Index)
				}
			}
			prompt, _ := fakeTokenizer{}.Decode(gen.requests()[0].Prompt, false)
			if !strings.Contains(prompt, `<tools>{"type": "function", "function": {"name": "get_weather"`) {
				t.Errorf("tools not rendered in order: %q", prompt)
			}
		}
	}
	// tool_choice none: tools are neither rendered nor parsed.
	gen := newFakeGen(tests[0].reply)
	s := newTestServer(t, gen, nil)
	w := do(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Weather?"}],`+tools+`,"tool_choice":"none"}`)
	if c := decode[chatCompletion](t, w).Choices[0]; len(c.Message.ToolCalls) != 0 || c.FinishReason != "stop" {
		t.Errorf("tool_choice none: %s", w.Body)
	}
	// Assistant tool calls and tool results go back through the template.
	w = do(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Weather?"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"sunny"}],`+tools+`}`)
	if w.Code != 200 {
		t.Errorf("tool history: %d %s", w.Code, w.Body)
	}
	// Forced calls need constrained decoding.
	for _, choice := range []string{`"required"`, `{"type":"function","function":{"name":"get_weather"}}`} {
		w = do(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Weather?"}],`+tools+`,"tool_choice":`+choice+`}`)
		if w.Code != 400 || !strings.Contains(w.Body.String(), `"param":"tool_choice"`) {
			t.Errorf("tool_choice %s without constraints: %d %s", choice, w.Code, w.Body)
		}
	}
	var schemas []string
	s = newTestServer(t, gen, func(o *ServerOptions) {
		o.NewConstraint = func(schema []byte) (Constraint, error) {
			schemas = append(schemas, string(schema))
			return &fakeConstraint{schema: string(schema)}, nil
		}
	})
	w = do(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Weather?"}],`+tools+`,"tool_choice":{"type":"function","function":{"name":"get_weather"}}}`)
	if w.Code != 200 || len(schemas) != 1 || !strings.Contains(schemas[0], `"const":"get_weather"`) {
		t.Errorf("named tool_choice: %d %s %v", w.Code, w.Body, schemas)
	}
}

func TestResponseFormat(t *testing.T) {
	gen := newFakeGen(`{"a":1}`)
	s := newTestServer(t, gen, nil)
	w := do(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"response_format":{"type":"json_object"}}`)
	if w.Code != 400 || !strings.Contains(w.Body.String(), `"param":"response_format"`) {
		t.Errorf("json_object without constraints: %d %s", w.Code, w.Body)
	}
	w = do(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"response_format":{"type":"text"}}`)
	if w.Code != 200 {
		t.Errorf("text format: %d %s", w.Code, w.Body)
	}
	var made []*fakeConstraint
	s = newTestServer(t, gen, func(o *ServerOptions) {
		o.NewConstraint = func(schema []byte) (Constraint, error) {
			c := &fakeConstraint{schema: string(schema)}
			made = append(made, c)
			return c, nil
		}
	})
	w = do(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"n":2,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","properties":{"a":{"type":"integer"}}}}}}`)
	if w.Code != 200 || len(made) != 2 || made[0] == made[1] || !strings.Contains(made[0].schema, `"integer"`) || made[0].n == 0 {
		t.Errorf("json_schema: %d %s (%d constraints)", w.Code, w.Body, len(made))
	}
	w = do(t, s, "POST", "/v1/completions", `{"prompt":"x","response_format":{"type":"json_object"}}`)
	if w.Code != 200 || made[len(made)-1].schema != `{"type":"object"}` {
		t.Errorf("json_object: %d %s", w.Code, w.Body)
	}
}

// TestErrors checks every error status and the error object.
func TestErrors(t *testing.T) {
	chatBody := `{"messages":[{"role":"user","content":"Hi"}]}`
	tests := []struct {
		name, method, path, body string
		hdr                      []string
		edit                     func(*ServerOptions, *fakeGen)
		drain                    bool
		status                   int
		param, code              string
	}{
		{name: "bad json", method: "POST", path: "/v1/chat/completions", body: `{"messages":`, status: 400},
		{name: "empty body", method: "POST", path: "/v1/chat/completions", body: ``, status: 400},
		{name: "wrong type", method: "POST", path: "/v1/chat/completions", body: `{"messages":[],"temperature":"hot"}`, status: 400, param: "temperature"},
		{name: "no messages", method: "POST", path: "/v1/chat/completions", body: `{"messages":[]}`, status: 400, param: "messages"},
		{name: "bad role", method: "POST", path: "/v1/chat/completions", body: `{"messages":[{"role":"robot","content":"x"}]}`, status: 400, param: "messages[0].role"},
		{name: "temperature", method: "POST", path: "/v1/chat/completions", body: `{"messages":[{"role":"user","content":"x"}],"temperature":-1}`, status: 400, param: "temperature"},
		{name: "top_p", method: "POST", path: "/v1/chat/completions", body: `{"messages":[{"role":"user","content":"x"}],"top_p":0}`, status: 400, param: "top_p"},
		{name: "top_k", method: "POST", path: "/v1/completions", body: `{"prompt":"x","top_k":-2}`, status: 400, param: "top_k"},
		{name: "min_p", method: "POST", path: "/v1/completions", body: `{"prompt":"x","min_p":2}`, status: 400, param: "min_p"},
		{name: "presence", method: "POST", path: "/v1/completions", body: `{"prompt":"x","presence_penalty":3}`, status: 400, param: "presence_penalty"},
		{name: "frequency", method: "POST", path: "/v1/completions", body: `{"prompt":"x","frequency_penalty":-3}`, status: 400, param: "frequency_penalty"},
		{name: "repetition", method: "POST", path: "/v1/completions", body: `{"prompt":"x","repetition_penalty":0}`, status: 400, param: "repetition_penalty"},
		{name: "max_tokens", method: "POST", path: "/v1/completions", body: `{"prompt":"x","max_tokens":0}`, status: 400, param: "max_tokens"},
		{name: "max_tokens over context", method: "POST", path: "/v1/completions", body: `{"prompt":"x","max_tokens":5000}`, status: 400, param: "max_tokens"},
		{name: "n", method: "POST", path: "/v1/completions", body: `{"prompt":"x","n":0}`, status: 400, param: "n"},
		{name: "logit_bias id", method: "POST", path: "/v1/completions", body: `{"prompt":"x","logit_bias":{"9999":1}}`, status: 400, param: "logit_bias"},
		{name: "logit_bias value", method: "POST", path: "/v1/completions", body: `{"prompt":"x","logit_bias":{"1":101}}`, status: 400, param: "logit_bias"},
		{name: "stop type", method: "POST", path: "/v1/completions", body: `{"prompt":"x","stop":5}`, status: 400, param: "stop"},
		{name: "top_logprobs", method: "POST", path: "/v1/chat/completions", body: `{"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":21}`, status: 400, param: "top_logprobs"},
		{name: "legacy logprobs", method: "POST", path: "/v1/completions", body: `{"prompt":"x","logprobs":30}`, status: 400, param: "logprobs"},
		{name: "prompt type", method: "POST", path: "/v1/completions", body: `{"prompt":{"a":1}}`, status: 400, param: "prompt"},
		{name: "prompt id", method: "POST", path: "/v1/completions", body: `{"prompt":[1,999]}`, status: 400, param: "prompt"},
		{name: "no prompt", method: "POST", path: "/v1/completions", body: `{}`, status: 400, param: "prompt"},
		{name: "suffix", method: "POST", path: "/v1/completions", body: `{"prompt":"x","suffix":"y"}`, status: 400, param: "suffix"},
		{name: "stream_options", method: "POST", path: "/v1/completions", body: `{"prompt":"x","stream_options":{"include_usage":true}}`, status: 400, param: "stream_options"},
		{name: "response_format type", method: "POST", path: "/v1/completions", body: `{"prompt":"x","response_format":{"type":"yaml"}}`, status: 400, param: "response_format.type"},
		{name: "tool type", method: "POST", path: "/v1/chat/completions", body: `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"code"}]}`, status: 400, param: "tools[0].type"},
		{name: "image part", method: "POST", path: "/v1/chat/completions", body: `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, status: 400, param: "messages[0].content[0].type"},
		{name: "prompt too long", method: "POST", path: "/v1/completions", body: `{"prompt":"` + strings.Repeat("a", 5000) + `"}`, status: 400, param: "prompt"},
		{name: "embedding input", method: "POST", path: "/v1/embeddings", body: `{"input":[[1,2]]}`, status: 400, param: "input"},
		{name: "embedding format", method: "POST", path: "/v1/embeddings", body: `{"input":"x","encoding_format":"hex"}`, status: 400, param: "encoding_format"},
		{name: "unknown model", method: "POST", path: "/v1/chat/completions", body: `{"model":"gpt-9","messages":[{"role":"user","content":"x"}]}`, status: 404, code: "model_not_found"},
		{name: "unknown embed model", method: "POST", path: "/v1/embeddings", body: `{"model":"gpt-9","input":"x"}`, status: 404, code: "model_not_found"},
		{name: "no embedder", method: "POST", path: "/v1/embeddings", body: `{"input":"x"}`, status: 404, code: "model_not_found",
			edit: func(o *ServerOptions, _ *fakeGen) { o.Embedder = nil }},
		{name: "unknown path", method: "GET", path: "/v2/things", status: 404, code: "not_found"},
		{name: "method", method: "GET", path: "/v1/chat/completions", status: 405, code: "method_not_allowed"},
		{name: "method models", method: "DELETE", path: "/v1/models", status: 405, code: "method_not_allowed"},
		{name: "too large", method: "POST", path: "/v1/chat/completions", body: `{"messages":[{"role":"user","content":"` + strings.Repeat("a", 2000) + `"}]}`,
			edit: func(o *ServerOptions, _ *fakeGen) { o.MaxBodyBytes = 1000 }, status: 413, code: "request_too_large"},
		{name: "queue full", method: "POST", path: "/v1/chat/completions", body: chatBody,
			edit: func(_ *ServerOptions, g *fakeGen) { g.queueFull = true }, status: 429, code: "queue_full"},
		{name: "queue full stream", method: "POST", path: "/v1/chat/completions", body: `{"messages":[{"role":"user","content":"Hi"}],"stream":true}`,
			edit: func(_ *ServerOptions, g *fakeGen) { g.queueFull = true }, status: 429, code: "queue_full"},
		{name: "engine draining", method: "POST", path: "/v1/completions", body: `{"prompt":"x"}`,
			edit: func(_ *ServerOptions, g *fakeGen) { g.draining = true }, status: 503, code: "shutting_down"},
		{name: "server draining", method: "POST", path: "/v1/completions", body: `{"prompt":"x"}`, drain: true, status: 503, code: "shutting_down"},
		{name: "no key", method: "POST", path: "/v1/chat/completions", body: chatBody,
			edit: func(o *ServerOptions, _ *fakeGen) { o.APIKeys = []string{"sk-1"} }, status: 401, code: "invalid_api_key"},
		{name: "wrong key", method: "GET", path: "/v1/models", hdr: []string{"Authorization", "Bearer sk-2"},
			edit: func(o *ServerOptions, _ *fakeGen) { o.APIKeys = []string{"sk-1"} }, status: 401, code: "invalid_api_key"},
		{name: "right key", method: "POST", path: "/v1/chat/completions", body: chatBody, hdr: []string{"Authorization", "Bearer sk-1"},
			edit: func(o *ServerOptions, _ *fakeGen) { o.APIKeys = []string{"sk-1"} }, status: 200},
		{name: "health needs no key", method: "GET", path: "/health",
			edit: func(o *ServerOptions, _ *fakeGen) { o.APIKeys = []string{"sk-1"} }, status: 200},
		{name: "health draining", method: "GET", path: "/health", drain: true, status: 503},
		{name: "no chat template", method: "POST", path: "/v1/chat/completions", body: chatBody,
			edit: func(o *ServerOptions, _ *fakeGen) { o.Chat = nil }, status: 400, param: "messages"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gen := newFakeGen("ok")
			s := newTestServer(t, gen, func(o *ServerOptions) {
				if tc.edit != nil {
					tc.edit(o, gen)
				}
			})
			if tc.drain {
				s.BeginDrain()
			}
			w := do(t, s, tc.method, tc.path, tc.body, tc.hdr...)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			if tc.status < 400 || tc.path == "/health" {
				return
			}
			var e struct {
				Error map[string]any `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error == nil {
				t.Fatalf("not an error object: %s", w.Body)
			}
			for _, k := range []string{"message", "type", "param", "code"} {
				if _, ok := e.Error[k]; !ok {
					t.Errorf("error object lacks %q: %s", k, w.Body)
				}
			}
			if msg, _ := e.Error["message"].(string); msg == "" {
				t.Errorf("empty message: %s", w.Body)
			}
			if tc.param != "" && e.Error["param"] != tc.param {
				t.Errorf("param %v, want %q: %s", e.Error["param"], tc.param, w.Body)
			}
			if tc.code != "" && e.Error["code"] != tc.code {
				t.Errorf("code %v, want %q: %s", e.Error["code"], tc.code, w.Body)
			}
		})
	}
}

// TestClientDisconnect checks that a client going away cancels its
// request in the generator.
func TestClientDisconnect(t *testing.T) {
	gen := newFakeGen(strings.Repeat("x", 1000))
	gen.delay = 2 * time.Millisecond
	s := newTestServer(t, gen, nil)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	for _, stream := range []string{"true", "false"} {
		before := gen.cancels()
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/chat/completions",
			strings.NewReader(`{"messages":[{"role":"user","content":"Hi"}],"stream":`+stream+`}`))
		go func() { time.Sleep(30 * time.Millisecond); cancel() }()
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		deadline := time.Now().Add(5 * time.Second)
		for gen.cancels() == before && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if gen.cancels() == before {
			t.Errorf("stream=%s: the disconnect did not cancel the request", stream)
		}
	}
}

// TestLoopback runs a streaming and a plain request over real TCP.
func TestLoopback(t *testing.T) {
	gen := newFakeGen("Loop back ✓")
	s := newTestServer(t, gen, nil)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":"Hi"}],"stream":true,"stream_options":{"include_usage":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var text string
	for _, d := range sseData(t, string(body)) {
		var c chatChunk
		_ = json.Unmarshal([]byte(d), &c)
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				text += *ch.Delta.Content
			}
		}
	}
	if text != "Loop back ✓" {
		t.Errorf("streamed %q", text)
	}
	resp, err = http.Get(srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var ml modelList
	_ = json.NewDecoder(resp.Body).Decode(&ml)
	resp.Body.Close()
	if len(ml.Data) != 2 || ml.Data[0].ID != "test-model" || ml.Data[0].MaxModelLen != 4096 || ml.Data[1].ID != "test-embed" {
		t.Errorf("models %+v", ml)
	}
}

func TestEmbeddings(t *testing.T) {
	s := newTestServer(t, newFakeGen(""), nil)
	w := do(t, s, "POST", "/v1/embeddings", `{"model":"test-embed","input":["a","bcd"]}`)
	out := decode[embeddingResponse](t, w)
	if out.Object != "list" || len(out.Data) != 2 || out.Usage.PromptTokens != 3+5 || out.Model != "test-embed" {
		t.Fatalf("%s", w.Body)
	}
	if e := out.Data[1].Embedding.([]any); e[0].(float64) != 3 || out.Data[1].Index != 1 || out.Data[1].Object != "embedding" {
		t.Errorf("%s", w.Body)
	}
	w = do(t, s, "POST", "/v1/embeddings", `{"input":"bcd","encoding_format":"base64"}`)
	out = decode[embeddingResponse](t, w)
	b, err := base64.StdEncoding.DecodeString(out.Data[0].Embedding.(string))
	if err != nil || len(b) != 12 {
		t.Fatalf("base64 %s: %v", w.Body, err)
	}
	if v := math.Float32frombits(binary.LittleEndian.Uint32(b[8:])); v != 0.5 {
		t.Errorf("third value %v", v)
	}
}

func TestTokenize(t *testing.T) {
	s := newTestServer(t, newFakeGen(""), nil)
	tests := []struct{ body, want string }{
		{`{"prompt":"ab"}`, `{"count":3,"max_model_len":4096,"tokens":[257,97,98]}`},
		{`{"prompt":"ab","add_special_tokens":false}`, `{"count":2,"max_model_len":4096,"tokens":[97,98]}`},
		{`{"content":"ab"}`, `{"count":2,"max_model_len":4096,"tokens":[97,98]}`},
		{`{"content":"a","with_pieces":true}`, `{"count":1,"max_model_len":4096,"tokens":[{"id":97,"piece":"a"}]}`},
		{`{"messages":[{"role":"user","content":"x"}],"add_generation_prompt":false}`, `{"count":10,"max_model_len":4096,"tokens":[60,124,117,115,101,114,124,62,120,10]}`},
	}
	for _, tc := range tests {
		w := do(t, s, "POST", "/tokenize", tc.body)
		if got := strings.TrimSpace(w.Body.String()); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.body, got, tc.want)
		}
	}
	w := do(t, s, "POST", "/detokenize", `{"tokens":[257,104,105]}`)
	if got := strings.TrimSpace(w.Body.String()); got != `{"content":"<bos>hi","prompt":"<bos>hi"}` {
		t.Errorf("detokenize: %s", got)
	}
}

func TestMetrics(t *testing.T) {
	gen := newFakeGen("abc")
	s := newTestServer(t, gen, nil)
	do(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}]}`)
	do(t, s, "POST", "/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"Hi"}]}`)
	w := do(t, s, "GET", "/metrics", "")
	body := w.Body.String()
	if ct := w.Header().Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("/metrics Content-Type %q", ct)
	}
	// WriteMetrics writes the same registry, which has now counted the
	// /metrics request too.
	var direct strings.Builder
	if err := s.WriteMetrics(&direct); err != nil || !strings.Contains(direct.String(),
		`gotpu_http_requests_total{endpoint="/metrics",status="200"} 1`+"\n") {
		t.Errorf("WriteMetrics (err %v) lacks the /metrics request:\n%s", err, direct.String())
	}
	for _, want := range []string{
		`gotpu_http_requests_total{endpoint="/v1/chat/completions",status="200"} 1`,
		`gotpu_http_requests_total{endpoint="/v1/chat/completions",status="404"} 1`,
		`gotpu_time_to_first_token_seconds_count 1`,
		`gotpu_inter_token_latency_seconds_count 3`,
		`gotpu_queue_depth 0`,
		`gotpu_running_requests`,
		`gotpu_kv_blocks_used 3`,
		`gotpu_kv_blocks_total 64`,
		`gotpu_prefix_cache_hits_total 2`,
		`gotpu_prefix_cache_lookups_total 5`,
		`gotpu_generation_tokens_total 4`,
		`gotpu_prompt_tokens_total 7`,
		`gotpu_request_duration_seconds_count{endpoint="/v1/chat/completions"} 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(body)
	}
}

// TestDrainWaits checks that Wait returns once the running requests end.
func TestDrainWaits(t *testing.T) {
	gen := newFakeGen(strings.Repeat("y", 20))
	gen.delay = 5 * time.Millisecond
	s := newTestServer(t, gen, nil)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	done := make(chan string)
	go func() {
		resp, err := http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"x"}`))
		if err != nil {
			done <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- string(b)
	}()
	for len(gen.requests()) == 0 {
		time.Sleep(time.Millisecond)
	}
	s.BeginDrain()
	if w := do(t, s, "POST", "/v1/completions", `{"prompt":"x"}`); w.Code != 503 {
		t.Errorf("new request while draining: %d", w.Code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if got := <-done; !strings.Contains(got, strings.Repeat("y", 20)) {
		t.Errorf("in-flight request did not finish: %s", got)
	}
}

// failConstraint rejects every token, so the generator ends the sequence
// with an error.
type failConstraint struct{ fakeConstraint }

func (failConstraint) Accept(int) error { return errors.New("token not allowed") }

// TestGenerationError checks how an engine error reaches the client: a 500
// error object, or inside a stream that has begun an error event before
// [DONE].
func TestGenerationError(t *testing.T) {
	s := newTestServer(t, newFakeGen("abc"), func(o *ServerOptions) {
		o.NewConstraint = func([]byte) (Constraint, error) { return &failConstraint{}, nil }
	})
	body := `{"messages":[{"role":"user","content":"Hi"}],"response_format":{"type":"json_object"}`
	w := do(t, s, "POST", "/v1/chat/completions", body+`}`)
	if w.Code != 500 || !strings.Contains(w.Body.String(), "token not allowed") || !strings.Contains(w.Body.String(), `"type":"server_error"`) {
		t.Errorf("%d %s", w.Code, w.Body)
	}
	w = do(t, s, "POST", "/v1/chat/completions", body+`,"stream":true}`)
	events := sseData(t, w.Body.String())
	if w.Code != 200 || len(events) == 0 || !strings.Contains(events[len(events)-1], `"error":{`) {
		t.Errorf("stream: %d %s", w.Code, w.Body)
	}
}

func TestContinueFinalMessage(t *testing.T) {
	gen := newFakeGen("x")
	s := newTestServer(t, gen, nil)
	tests := []struct{ extra, prompt string }{
		{``, "<|user|>Hi\n<|assistant|>Hel\n<|assistant|>"},
		{`,"add_generation_prompt":false`, "<|user|>Hi\n<|assistant|>Hel\n"},
		{`,"continue_final_message":true`, "<|user|>Hi\n<|assistant|>Hel"},
	}
	for i, tc := range tests {
		w := do(t, s, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hel"}]`+tc.extra+`}`)
		if w.Code != 200 {
			t.Fatalf("%s: %d %s", tc.extra, w.Code, w.Body)
		}
		if got, _ := (fakeTokenizer{}).Decode(gen.requests()[i].Prompt, false); got != tc.prompt {
			t.Errorf("%s: prompt %q, want %q", tc.extra, got, tc.prompt)
		}
	}
}
