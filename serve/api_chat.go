package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gotpu/gotpu/hf/chat"
)

// maxTopLogprobs bounds top_logprobs (OpenAI allows 20).
const maxTopLogprobs = 20

// chatPlan is a parsed chat request, ready to submit.
type chatPlan struct {
	req    chatRequest
	g      genParams
	prompt []int
	tools  map[string]bool // tools whose calls are parsed (nil: none)
	top    int
}

// messageContent reads a message's content: a string, null, or a list of
// text parts (joined with newlines).
func messageContent(raw json.RawMessage, i int) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest(fmt.Sprintf("messages[%d].content", i), "messages[%d].content must be a string or a list of content parts", i)
	}
	texts := make([]string, 0, len(parts))
	for j, p := range parts {
		if p.Type != "text" {
			return "", badRequest(fmt.Sprintf("messages[%d].content[%d].type", i, j), "content part type %q is not supported (only text)", p.Type)
		}
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// chatMessages converts the request's messages for the chat template.
func chatMessages(in []chatMessageIn) ([]chat.Message, error) {
	if len(in) == 0 {
		return nil, badRequest("messages", "messages must hold at least one message")
	}
	out := make([]chat.Message, len(in))
	for i, m := range in {
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		case "":
			return nil, badRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d] has no role", i)
		default:
			return nil, badRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d].role %q is not system, developer, user, assistant or tool", i, m.Role)
		}
		content, err := messageContent(m.Content, i)
		if err != nil {
			return nil, err
		}
		cm := chat.Message{Role: m.Role, Content: content}
		if m.Role == "developer" {
			cm.Role = "system"
		}
		if m.Name != "" || m.ToolCallID != "" {
			cm.Extra = map[string]any{}
			if m.Name != "" {
				cm.Extra["name"] = m.Name
			}
			if m.ToolCallID != "" {
				cm.Extra["tool_call_id"] = m.ToolCallID
			}
		}
		for j, tc := range m.ToolCalls {
			if tc.Function.Name == "" {
				return nil, badRequest(fmt.Sprintf("messages[%d].tool_calls[%d].function.name", i, j), "a tool call needs a function name")
			}
			var args any = tc.Function.Arguments
			if json.Valid([]byte(tc.Function.Arguments)) {
				// Templates expect the arguments as an object, as
				// transformers' chat examples pass them.
				args = json.RawMessage(tc.Function.Arguments)
			}
			typ := tc.Type
			if typ == "" {
				typ = "function"
			}
			cm.ToolCalls = append(cm.ToolCalls, chat.ToolCall{ID: tc.ID, Type: typ,
				Function: chat.FunctionCall{Name: tc.Function.Name, Arguments: args}})
		}
		out[i] = cm
	}
	return out, nil
}

// toolSchema is the JSON schema of a call to fn, {"name", "arguments"}.
func toolSchema(fn toolFunction) map[string]any {
	params := any(map[string]any{"type": "object"})
	if len(fn.Parameters) > 0 && string(fn.Parameters) != "null" {
		params = fn.Parameters
	}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name":      map[string]any{"const": fn.Name},
			"arguments": params,
		},
		"required":             []string{"name", "arguments"},
		"additionalProperties": false,
	}
}

// planChat checks a chat request and renders its prompt.
func (s *Server) planChat(r *http.Request) (*chatPlan, error) {
	p := &chatPlan{}
	if err := decodeBody(r, &p.req); err != nil {
		return nil, err
	}
	req := &p.req
	if err := s.checkModel(req.Model); err != nil {
		return nil, err
	}
	if s.o.Chat == nil {
		return nil, badRequest("messages", "the model %q has no chat template; use /v1/completions", s.o.ModelName)
	}
	g, err := s.parseSampling(&req.samplingFields, s.o.Generator.VocabSize())
	if err != nil {
		return nil, err
	}
	if req.TopLogprobs != nil {
		if *req.TopLogprobs < 0 || *req.TopLogprobs > maxTopLogprobs {
			return nil, badRequest("top_logprobs", "top_logprobs must be in [0, %d], got %d", maxTopLogprobs, *req.TopLogprobs)
		}
		if !req.Logprobs && *req.TopLogprobs > 0 {
			return nil, badRequest("top_logprobs", "top_logprobs needs logprobs: true")
		}
		p.top = *req.TopLogprobs
	}
	msgs, err := chatMessages(req.Messages)
	if err != nil {
		return nil, err
	}
	opts := chat.RenderOptions{AddGenerationPrompt: req.AddGenerationPrompt == nil || *req.AddGenerationPrompt, Extra: req.ChatTemplateKwargs}
	if req.ContinueFinalMessage {
		if opts.AddGenerationPrompt && req.AddGenerationPrompt != nil {
			return nil, badRequest("continue_final_message", "continue_final_message and add_generation_prompt cannot both be true")
		}
		opts.AddGenerationPrompt = false
	}
	choice, err := s.toolChoice(req, &g)
	if err != nil {
		return nil, err
	}
	if len(req.Tools) > 0 && choice != "none" {
		p.tools = map[string]bool{}
		for _, t := range req.Tools {
			opts.Tools = append(opts.Tools, t.Raw)
			p.tools[t.Function.Name] = true
		}
	}
	text, err := s.o.Chat.Render(msgs, opts)
	if err != nil {
		var te *chat.TemplateError
		if errors.As(err, &te) {
			return nil, badRequest("messages", "the chat template refused the conversation: %s", te.Message)
		}
		return nil, badRequest("messages", "rendering the chat template: %v", err)
	}
	if req.ContinueFinalMessage {
		// As transformers' continue_final_message: cut the rendered text
		// right after the final message's content, dropping the template's
		// end-of-turn.
		last := msgs[len(msgs)-1].Content
		i := strings.LastIndex(text, last)
		if last == "" || i < 0 {
			return nil, badRequest("continue_final_message", "the final message's content is empty or does not appear in the rendered prompt")
		}
		text = text[:i+len(last)]
	}
	if p.prompt, err = s.o.Tokenizer.Encode(text, false); err != nil {
		return nil, badRequest("messages", "tokenizing the prompt: %v", err)
	}
	if len(p.prompt) == 0 {
		return nil, badRequest("messages", "the rendered prompt is empty")
	}
	p.g = g
	return p, nil
}

// toolChoice checks tools and tool_choice; "required" and a named function
// become a schema constraint. It returns "none", "auto" or "forced".
func (s *Server) toolChoice(req *chatRequest, g *genParams) (string, error) {
	for i, t := range req.Tools {
		if t.Type != "function" {
			return "", badRequest(fmt.Sprintf("tools[%d].type", i), "tools[%d].type must be \"function\", got %q", i, t.Type)
		}
		if t.Function.Name == "" {
			return "", badRequest(fmt.Sprintf("tools[%d].function.name", i), "tools[%d] has no function name", i)
		}
	}
	raw := req.ToolChoice
	if len(raw) == 0 || string(raw) == "null" {
		return "auto", nil
	}
	var mode string
	var forced []toolFunction
	if err := json.Unmarshal(raw, &mode); err == nil {
		switch mode {
		case "none", "auto":
			return mode, nil
		case "required":
			if len(req.Tools) == 0 {
				return "", badRequest("tool_choice", "tool_choice \"required\" needs tools")
			}
			for _, t := range req.Tools {
				forced = append(forced, t.Function)
			}
		default:
			return "", badRequest("tool_choice", "tool_choice %q is not none, auto or required", mode)
		}
	} else {
		var named struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &named); err != nil || named.Type != "function" || named.Function.Name == "" {
			return "", badRequest("tool_choice", "tool_choice must be none, auto, required or {\"type\": \"function\", \"function\": {\"name\": ...}}")
		}
		for _, t := range req.Tools {
			if t.Function.Name == named.Function.Name {
				forced = append(forced, t.Function)
			}
		}
		if len(forced) == 0 {
			return "", badRequest("tool_choice", "tool_choice names %q, which is not in tools", named.Function.Name)
		}
	}
	if s.o.NewConstraint == nil {
		return "", badRequest("tool_choice", "forcing a tool call needs constrained decoding, which this server does not have; use tool_choice \"auto\"")
	}
	if g.schema != nil {
		return "", badRequest("tool_choice", "a forced tool call cannot be combined with response_format")
	}
	var schema any
	if len(forced) == 1 {
		schema = toolSchema(forced[0])
	} else {
		alts := make([]any, len(forced))
		for i, f := range forced {
			alts[i] = toolSchema(f)
		}
		schema = map[string]any{"anyOf": alts}
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return "", badRequest("tools", "a tool's parameters are not a JSON schema: %v", err)
	}
	g.schema = b
	return "forced", nil
}

// chatLogprobsOf turns tokens into chat-format logprobs.
func (s *Server) chatLogprobsOf(toks []tokenOut, top int) *chatLogprobs {
	lp := &chatLogprobs{Content: make([]chatTokenLogprob, 0, len(toks))}
	for _, t := range toks {
		e := chatTokenLogprob{Token: t.text, Logprob: t.logprob, Bytes: tokenBytes(t.text), TopLogprobs: []chatTopLogprob{}}
		for _, a := range s.topText(t.top, top) {
			e.TopLogprobs = append(e.TopLogprobs, chatTopLogprob{Token: a.text, Logprob: a.logprob, Bytes: tokenBytes(a.text)})
		}
		lp.Content = append(lp.Content, e)
	}
	return lp
}

// callsOut gives parsed calls their ids, in OpenAI's shape.
func callsOut(calls []toolCall, withIndex bool) []toolCallOut {
	out := make([]toolCallOut, len(calls))
	for i, c := range calls {
		out[i] = toolCallOut{ID: newID("call_"), Type: "function", Function: toolCallFuncOut{Name: c.Name, Arguments: c.Arguments}}
		if withIndex {
			idx := i
			out[i].Index = &idx
		}
	}
	return out
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	defer func() {
		s.metrics.duration.With("/v1/chat/completions").Observe(time.Since(start).Seconds())
	}()
	p, err := s.planChat(r)
	if err != nil {
		return err
	}
	maxTokens, err := s.maxNew(p.g, len(p.prompt), "messages")
	if err != nil {
		return err
	}
	id := newID("chatcmpl-")
	specs, err := s.requests(id, p.prompt, p.g, maxTokens, 0, p.req.Logprobs, p.top)
	if err != nil {
		return err
	}
	if p.req.Stream {
		return s.streamChat(w, r.Context(), p, id, specs)
	}
	res, err := s.collect(r.Context(), specs, 0)
	if err != nil {
		return err
	}
	out := chatCompletion{ID: id, Object: "chat.completion", Created: s.o.Now().Unix(), Model: s.o.ModelName}
	for i, rs := range res {
		text := rs.text.String()
		c := chatChoice{Index: i, Message: chatMessageOut{Role: "assistant"}, FinishReason: rs.finish}
		if p.tools != nil {
			content, calls := parseToolCalls(text, p.tools)
			if len(calls) > 0 {
				c.Message.ToolCalls = callsOut(calls, false)
				c.FinishReason = "tool_calls"
				text = content
			}
		}
		if text != "" || len(c.Message.ToolCalls) == 0 {
			c.Message.Content = &text
		}
		if p.req.Logprobs {
			c.Logprobs = s.chatLogprobsOf(rs.tokens, p.top)
		}
		out.Choices = append(out.Choices, c)
	}
	u := usageOf(res, len(p.prompt))
	out.Usage = &u
	writeJSON(w, http.StatusOK, out)
	return nil
}

// streamChat submits the choices and streams chat.completion.chunk events.
func (s *Server) streamChat(w http.ResponseWriter, ctx context.Context, p *chatPlan, id string, specs []choiceSpec) error {
	rn, err := s.submit(ctx, specs)
	if err != nil {
		return err
	}
	includeUsage := p.req.StreamOptions != nil && p.req.StreamOptions.IncludeUsage
	created := s.o.Now().Unix()
	out := startSSE(w)
	chunk := func(choices ...chatChunkChoice) chatChunk {
		return chatChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: s.o.ModelName,
			Choices: choices, withUsage: includeUsage}
	}
	empty := ""
	for _, sp := range specs {
		out.send(chunk(chatChunkChoice{Index: sp.index, Delta: chatDelta{Role: "assistant", Content: &empty}}))
	}
	var mu sync.Mutex
	tools := make([]*toolStream, len(specs))
	results := make([]*result, len(specs))
	for i := range specs {
		results[i] = &result{}
		if p.tools != nil {
			tools[i] = newToolStream()
		}
	}
	var failed error
	s.wait(rn, func(st step) {
		mu.Lock()
		defer mu.Unlock()
		text := st.text
		ts := tools[st.choice]
		if ts != nil {
			text = ts.push(text)
		}
		c := chatChunkChoice{Index: st.choice}
		if text != "" {
			c.Delta.Content = &text
		}
		if p.req.Logprobs && len(st.tokens) > 0 {
			c.Logprobs = s.chatLogprobsOf(st.tokens, p.top)
		}
		if c.Delta.Content != nil || c.Logprobs != nil {
			out.send(chunk(c))
		}
		if !st.done {
			return
		}
		rs := results[st.choice]
		rs.prompt, rs.completion, rs.cached, rs.finish = st.prompt, st.completion, st.cached, st.finish
		if st.err != nil {
			if !errors.Is(st.err, context.Canceled) && failed == nil {
				failed = st.err
			}
			return
		}
		finish := st.finish
		if ts != nil {
			rest, calls := ts.finish(p.tools)
			if rest != "" {
				out.send(chunk(chatChunkChoice{Index: st.choice, Delta: chatDelta{Content: &rest}}))
			}
			if len(calls) > 0 {
				out.send(chunk(chatChunkChoice{Index: st.choice, Delta: chatDelta{ToolCalls: callsOut(calls, true)}}))
				finish = "tool_calls"
			}
		}
		out.send(chunk(chatChunkChoice{Index: st.choice, Delta: chatDelta{}, FinishReason: &finish}))
	})
	if failed != nil {
		out.fail(internalError(fmt.Errorf("generation failed: %w", failed)))
	} else if includeUsage && ctx.Err() == nil {
		u := usageOf(results, len(p.prompt))
		c := chunk()
		c.Choices = []chatChunkChoice{}
		c.Usage = &u
		out.send(c)
	}
	out.done()
	return nil
}
