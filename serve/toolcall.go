package serve

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/gotpu/gotpu/models/sample"
)

// Tool calls in model output.
//
// Two forms are recognised, those the common open chat templates teach:
//
//   - Hermes / Qwen2.5 / Qwen3 / SmolLM2: one or more
//     <tool_call>{"name": ..., "arguments": {...}}</tool_call> blocks,
//     possibly after some text (a missing closing tag at the end of the
//     output is tolerated);
//   - plain JSON (Llama 3.x, Mistral-style): the whole output is an object
//     {"name": ..., "arguments"|"parameters": {...}} or a list of them,
//     optionally in a ```json fence.
//
// A call is only recognised when its name is one of the request's tools,
// so an answer that merely looks like JSON stays text.

const (
	toolCallOpen  = "<tool_call>"
	toolCallClose = "</tool_call>"
)

// toolCall is one parsed call: the function name and its arguments as
// JSON text.
type toolCall struct {
	Name      string
	Arguments string
}

// parseToolCalls finds the tool calls in text. It returns the text outside
// the calls (trimmed) and the calls; no calls means text is plain content.
func parseToolCalls(text string, known map[string]bool) (content string, calls []toolCall) {
	if i := strings.Index(text, toolCallOpen); i >= 0 {
		var outside strings.Builder
		outside.WriteString(text[:i])
		rest := text[i:]
		for {
			j := strings.Index(rest, toolCallOpen)
			if j < 0 {
				outside.WriteString(rest)
				break
			}
			outside.WriteString(rest[:j])
			body := rest[j+len(toolCallOpen):]
			k := strings.Index(body, toolCallClose)
			end := len(body)
			next := ""
			if k >= 0 {
				end = k
				next = body[k+len(toolCallClose):]
			}
			c, ok := parseCallObjects(body[:end], known)
			if !ok {
				return strings.TrimSpace(text), nil
			}
			calls = append(calls, c...)
			if k < 0 {
				break
			}
			rest = next
		}
		return strings.TrimSpace(outside.String()), calls
	}
	t := strings.TrimSpace(text)
	if s, ok := strings.CutPrefix(t, "```json"); ok {
		if s, ok = strings.CutSuffix(s, "```"); ok {
			t = strings.TrimSpace(s)
		}
	}
	if c, ok := parseCallObjects(t, known); ok {
		return "", c
	}
	return strings.TrimSpace(text), nil
}

// parseCallObjects parses s as one call object or a list of them.
func parseCallObjects(s string, known map[string]bool) ([]toolCall, bool) {
	s = strings.TrimSpace(s)
	var raws []json.RawMessage
	switch {
	case strings.HasPrefix(s, "["):
		if err := json.Unmarshal([]byte(s), &raws); err != nil || len(raws) == 0 {
			return nil, false
		}
	case strings.HasPrefix(s, "{"):
		raws = []json.RawMessage{json.RawMessage(s)}
	default:
		return nil, false
	}
	calls := make([]toolCall, 0, len(raws))
	for _, raw := range raws {
		var obj struct {
			Name       string          `json:"name"`
			Arguments  json.RawMessage `json:"arguments"`
			Parameters json.RawMessage `json:"parameters"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil || obj.Name == "" || !known[obj.Name] {
			return nil, false
		}
		args := obj.Arguments
		if len(args) == 0 {
			args = obj.Parameters
		}
		calls = append(calls, toolCall{Name: obj.Name, Arguments: argumentsText(args)})
	}
	return calls, true
}

// argumentsText renders arguments as OpenAI sends them: a string holding
// JSON (compacted); a JSON string is unwrapped.
func argumentsText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return "{}"
	}
	var str string
	if err := json.Unmarshal(raw, &str); err == nil {
		return str
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// toolStream decides, while a chat answer streams, which text is content
// that can be sent at once: everything before a <tool_call> tag, or
// nothing when the answer starts like a JSON call. The rest is held until
// the end, when parseToolCalls decides.
type toolStream struct {
	tag     *sample.Stop // watches for <tool_call>
	head    strings.Builder
	mode    int // 0: undecided, 1: content, 2: holding
	sent    strings.Builder
	full    strings.Builder
	pending strings.Builder
}

func newToolStream() *toolStream {
	st, _ := sample.NewStop(nil, []string{toolCallOpen})
	return &toolStream{tag: st}
}

// push takes the next text piece and returns the content that is safe to
// send now.
func (t *toolStream) push(piece string) string {
	t.full.WriteString(piece)
	switch t.mode {
	case 2:
		return ""
	case 0:
		t.head.WriteString(piece)
		h := strings.TrimLeft(t.head.String(), " \t\r\n")
		switch {
		case h == "":
			return ""
		case strings.HasPrefix(h, "{") || strings.HasPrefix(h, "[") || strings.HasPrefix(h, "```"):
			t.mode = 2
			return ""
		case len(h) < len("```") && strings.HasPrefix("```", h):
			return ""
		}
		t.mode = 1
		piece = t.head.String()
	}
	out, stopped := t.tag.Push(piece)
	if stopped {
		t.mode = 2
	}
	t.sent.WriteString(out)
	return out
}

// finish parses the whole answer: it returns the content not yet sent and
// the calls.
func (t *toolStream) finish(known map[string]bool) (string, []toolCall) {
	full := t.full.String()
	content, calls := parseToolCalls(full, known)
	sent := t.sent.String()
	if len(calls) == 0 {
		return strings.TrimPrefix(full, sent), nil
	}
	if rest, ok := strings.CutPrefix(content, strings.TrimSpace(sent)); ok && strings.TrimSpace(sent) != "" {
		return rest, calls
	}
	if sent != "" {
		return "", calls
	}
	return content, calls
}
