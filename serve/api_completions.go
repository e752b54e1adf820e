package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// prompts reads "prompt": a string, a list of strings, a list of token ids
// or a list of lists of token ids. Each becomes token ids (text with the
// tokenizer's special tokens, as transformers' tokenizer(text) adds them)
// and its text (for echo).
func (s *Server) prompts(raw json.RawMessage) (ids [][]int, texts []string, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, badRequest("prompt", "prompt is required")
	}
	vocab := s.o.Generator.VocabSize()
	addText := func(t string) error {
		e, err := s.o.Tokenizer.Encode(t, true)
		if err != nil {
			return badRequest("prompt", "tokenizing the prompt: %v", err)
		}
		ids, texts = append(ids, e), append(texts, t)
		return nil
	}
	addIDs := func(p []int) error {
		for _, id := range p {
			if id < 0 || id >= vocab {
				return badRequest("prompt", "token id %d is outside the vocabulary [0, %d)", id, vocab)
			}
		}
		t, err := s.o.Tokenizer.Decode(p, false)
		if err != nil {
			return badRequest("prompt", "decoding the prompt's token ids: %v", err)
		}
		ids, texts = append(ids, p), append(texts, t)
		return nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		err = addText(one)
	} else if var1 := []int(nil); json.Unmarshal(raw, &var1) == nil {
		err = addIDs(var1)
	} else if var2 := []string(nil); json.Unmarshal(raw, &var2) == nil {
		for _, t := range var2 {
			if err = addText(t); err != nil {
				break
			}
		}
	} else if var3 := [][]int(nil); json.Unmarshal(raw, &var3) == nil {
		for _, p := range var3 {
			if err = addIDs(p); err != nil {
				break
			}
		}
	} else {
		return nil, nil, badRequest("prompt", "prompt must be a string, a list of strings, a list of token ids or a list of lists of token ids")
	}
	if err != nil {
		return nil, nil, err
	}
	if len(ids) == 0 {
		return nil, nil, badRequest("prompt", "prompt is empty")
	}
	for i, p := range ids {
		if len(p) == 0 {
			return nil, nil, badRequest("prompt", "prompt %d has no tokens", i)
		}
	}
	return ids, texts, nil
}

// completionLogprobsOf builds the legacy logprobs of tokens whose text
// starts at offset.
func (s *Server) completionLogprobsOf(toks []tokenOut, top, offset int) *completionLogprobs {
	lp := &completionLogprobs{Tokens: []string{}, TokenLogprobs: []float32{}, TopLogprobs: []map[string]float32{}, TextOffset: []int{}}
	for _, t := range toks {
		lp.Tokens = append(lp.Tokens, t.text)
		lp.TokenLogprobs = append(lp.TokenLogprobs, t.logprob)
		m := map[string]float32{}
		for _, a := range s.topText(t.top, top) {
			if _, ok := m[a.text]; !ok {
				m[a.text] = a.logprob
			}
		}
		lp.TopLogprobs = append(lp.TopLogprobs, m)
		lp.TextOffset = append(lp.TextOffset, offset)
		offset += len(t.text)
	}
	return lp
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	defer func() { s.metrics.duration.With("/v1/completions").Observe(time.Since(start).Seconds()) }()
	var req completionRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	if err := s.checkModel(req.Model); err != nil {
		return err
	}
	g, err := s.parseSampling(&req.samplingFields, s.o.Generator.VocabSize())
	if err != nil {
		return err
	}
	if req.Suffix != nil && *req.Suffix != "" {
		return badRequest("suffix", "suffix is not supported")
	}
	if req.BestOf != nil && *req.BestOf != g.n && *req.BestOf != 1 {
		return badRequest("best_of", "best_of other than n is not supported")
	}
	top := 0
	if req.Logprobs != nil {
		if *req.Logprobs < 0 || *req.Logprobs > maxTopLogprobs {
			return badRequest("logprobs", "logprobs must be in [0, %d], got %d", maxTopLogprobs, *req.Logprobs)
		}
		if req.Echo {
			return badRequest("logprobs", "logprobs with echo (prompt log-probabilities) is not supported")
		}
		top = *req.Logprobs
	}
	ids, texts, err := s.prompts(req.Prompt)
	if err != nil {
		return err
	}
	id := newID("cmpl-")
	var specs []choiceSpec
	promptOf := map[int]int{} // choice index -> prompt index
	for i, p := range ids {
		maxTokens, err := s.maxNew(g, len(p), "prompt")
		if err != nil {
			return err
		}
		sp, err := s.requests(id, p, g, maxTokens, i*g.n, req.Logprobs != nil, top)
		if err != nil {
			return err
		}
		for _, c := range sp {
			promptOf[c.index] = i
		}
		specs = append(specs, sp...)
	}
	echo := func(choice int) string {
		if req.Echo {
			return texts[promptOf[choice]]
		}
		return ""
	}
	if req.Stream {
		return s.streamCompletion(w, r.Context(), &req, id, specs, ids, top, echo)
	}
	res, err := s.collect(r.Context(), specs, 0)
	if err != nil {
		return err
	}
	out := completion{ID: id, Object: "text_completion", Created: s.o.Now().Unix(), Model: s.o.ModelName}
	u := usage{PromptTokensDetails: &promptTokenDetails{}}
	for pi := range ids {
		pu := usageOf(res[pi*g.n:(pi+1)*g.n], len(ids[pi]))
		u.PromptTokens += pu.PromptTokens
		u.CompletionTokens += pu.CompletionTokens
		u.PromptTokensDetails.CachedTokens += pu.PromptTokensDetails.CachedTokens
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	for i, rs := range res {
		pre := echo(i)
		finish := rs.finish
		c := completionChoice{Index: i, Text: pre + rs.text.String(), FinishReason: &finish}
		if req.Logprobs != nil {
			c.Logprobs = s.completionLogprobsOf(rs.tokens, top, len(pre))
		}
		out.Choices = append(out.Choices, c)
	}
	out.Usage = &u
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) streamCompletion(w http.ResponseWriter, ctx context.Context, req *completionRequest, id string,
	specs []choiceSpec, ids [][]int, top int, echo func(int) string) error {
	rn, err := s.submit(ctx, specs)
	if err != nil {
		return err
	}
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	created := s.o.Now().Unix()
	out := startSSE(w)
	chunk := func(choices ...completionChoice) completion {
		return completion{ID: id, Object: "text_completion", Created: created, Model: s.o.ModelName, Choices: choices, withUsage: includeUsage}
	}
	var mu sync.Mutex
	offsets := make([]int, len(specs))
	results := make([]*result, len(specs))
	for i := range specs {
		results[i] = &result{}
		if pre := echo(i); pre != "" {
			out.send(chunk(completionChoice{Index: i, Text: pre}))
			offsets[i] = len(pre)
		}
	}
	var failed error
	s.wait(rn, func(st step) {
		mu.Lock()
		defer mu.Unlock()
		c := completionChoice{Index: st.choice, Text: st.text}
		if req.Logprobs != nil && len(st.tokens) > 0 {
			c.Logprobs = s.completionLogprobsOf(st.tokens, top, offsets[st.choice])
			for _, t := range st.tokens {
				offsets[st.choice] += len(t.text)
			}
		}
		if st.done {
			rs := results[st.choice]
			rs.prompt, rs.completion, rs.cached, rs.finish = st.prompt, st.completion, st.cached, st.finish
			if st.err != nil {
				if !errors.Is(st.err, context.Canceled) && failed == nil {
					failed = st.err
				}
				return
			}
			finish := st.finish
			c.FinishReason = &finish
		}
		if c.Text != "" || c.Logprobs != nil || c.FinishReason != nil {
			out.send(chunk(c))
		}
	})
	if failed != nil {
		out.fail(internalError(fmt.Errorf("generation failed: %w", failed)))
	} else if includeUsage && ctx.Err() == nil {
		n := len(specs) / len(ids)
		u := usage{PromptTokensDetails: &promptTokenDetails{}}
		for pi := range ids {
			pu := usageOf(results[pi*n:(pi+1)*n], len(ids[pi]))
			u.PromptTokens += pu.PromptTokens
			u.CompletionTokens += pu.CompletionTokens
			u.PromptTokensDetails.CachedTokens += pu.PromptTokensDetails.CachedTokens
		}
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
		c := chunk()
		c.Choices = []completionChoice{}
		c.Usage = &u
		out.send(c)
	}
	out.done()
	return nil
}
