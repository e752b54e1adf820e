package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// LoadOptions configure RunLoad: a bounded load of streaming
// /v1/completions requests against an OpenAI-compatible server (gotpu
// serve, llama-server, vLLM).
type LoadOptions struct {
	// URL is the server's base URL (http://host:port).
	URL string
	// Model is the "model" field of the requests ("" leaves it out).
	Model string
	// APIKey, when set, is sent as "Authorization: Bearer APIKey".
	APIKey string
	// Requests is the number of requests (> 0); Concurrency how many are
	// in flight at once (> 0).
	Requests, Concurrency int
	// PromptTokens is the prompt length in token ids; the prompts are
	// pseudo-random ids in [TokenLo, TokenHi) drawn from Seed and the
	// request's index, so every request has its own prompt (no prefix
	// cache hits) and a run is reproducible.
	PromptTokens     int
	TokenLo, TokenHi int
	Seed             uint64
	// MaxTokens is each request's max_tokens (> 0). With IgnoreEOS the
	// server is asked (ignore_eos) to generate exactly MaxTokens.
	MaxTokens int
	IgnoreEOS bool
	// RequireUsage makes a response without a usage object (asked with
	// stream_options.include_usage) incomplete.
	RequireUsage bool
	// Timeout bounds the whole run (0: no bound beyond ctx); requests
	// still running then fail.
	Timeout time.Duration
	// Client sends the requests (nil: a client of its own whose idle
	// connections are closed at the end).
	Client *http.Client
}

// Percentiles summarize a latency distribution in seconds.
type Percentiles struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean_s"`
	P50  float64 `json:"p50_s"`
	P90  float64 `json:"p90_s"`
	P99  float64 `json:"p99_s"`
	Max  float64 `json:"max_s"`
}

// LoadReport is what RunLoad measured. The JSON keys are stable (gotpu
// bench serve --load --json prints them).
type LoadReport struct {
	Requests    int `json:"requests"`
	Concurrency int `json:"concurrency"`
	// Completed requests streamed to the end and passed every check;
	// Failed did not (Errors has the first few reasons).
	Completed int      `json:"completed"`
	Failed    int      `json:"failed"`
	Errors    []string `json:"errors"`
	// WallS is the run's duration; RequestsPerS and TokensPerS
	// (completion tokens, all requests together) are over it.
	WallS            float64 `json:"wall_s"`
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	RequestsPerS     float64 `json:"requests_per_s"`
	TokensPerS       float64 `json:"tokens_per_s"`
	// TTFT is the time from sending a request to its first text chunk,
	// ITL the time between consecutive text chunks of a request, Latency
	// a request's whole duration.
	TTFT    Percentiles `json:"ttft"`
	ITL     Percentiles `json:"itl"`
	Latency Percentiles `json:"latency"`
	// DecodeTokensPerS is the median over requests of one stream's decode
	// speed: (completion tokens - 1) / (last chunk - first chunk).
	DecodeTokensPerS float64 `json:"decode_tokens_per_s"`
}

// loadResult is one request's measurement.
type loadResult struct {
	err              error
	ttft, total      float64
	itl              []float64
	first, last      time.Time
	prompt, complete int
}

// maxLoadErrors bounds LoadReport.Errors.
const maxLoadErrors = 8

// RunLoad sends o.Requests streaming completions, o.Concurrency at a
// time, and checks that every response is complete: it ends with
// "data: [DONE]", exactly one chunk carries a finish_reason, the usage
// (when sent) counts the prompt's tokens and no fewer completion tokens
// than text chunks arrived, and with IgnoreEOS every request generated
// MaxTokens tokens (finish_reason "length"). It fails only when the
// options are invalid or ctx ends; failed requests are counted in the
// report.
func RunLoad(ctx context.Context, o LoadOptions) (*LoadReport, error) {
	if o.URL == "" || o.Requests <= 0 || o.Concurrency <= 0 || o.PromptTokens <= 0 || o.MaxTokens <= 0 || o.TokenHi <= o.TokenLo || o.TokenLo < 0 {
		return nil, fmt.Errorf("serve: RunLoad: invalid options (url %q, %d requests, concurrency %d, %d prompt tokens in [%d,%d), max_tokens %d)",
			o.URL, o.Requests, o.Concurrency, o.PromptTokens, o.TokenLo, o.TokenHi, o.MaxTokens)
	}
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	client := o.Client
	if client == nil {
		tr := &http.Transport{MaxIdleConnsPerHost: o.Concurrency, MaxConnsPerHost: 0}
		defer tr.CloseIdleConnections()
		client = &http.Client{Transport: tr}
	}
	results := make([]loadResult, o.Requests)
	next := make(chan int)
	var wg sync.WaitGroup
	t0 := time.Now()
	for range min(o.Concurrency, o.Requests) {
		wg.Go(func() {
			for i := range next {
				results[i] = loadOne(ctx, client, o, i)
			}
		})
	}
feed:
	for i := range o.Requests {
		select {
		case next <- i:
		case <-ctx.Done():
			for j := i; j < o.Requests; j++ {
				results[j].err = fmt.Errorf("not sent: %w", ctx.Err())
			}
			break feed
		}
	}
	close(next)
	wg.Wait()
	wall := time.Since(t0).Seconds()
	rep := &LoadReport{Requests: o.Requests, Concurrency: o.Concurrency, WallS: wall, Errors: []string{}}
	var ttft, itl, lat, dec []float64
	for i, r := range results {
		if r.err != nil {
			rep.Failed++
			if len(rep.Errors) < maxLoadErrors {
				rep.Errors = append(rep.Errors, fmt.Sprintf("request %d: %v", i, r.err))
			}
			continue
		}
		rep.Completed++
		rep.PromptTokens += r.prompt
		rep.CompletionTokens += r.complete
		ttft, lat = append(ttft, r.ttft), append(lat, r.total)
		itl = append(itl, r.itl...)
		if d := r.last.Sub(r.first).Seconds(); r.complete > 1 && d > 0 {
			dec = append(dec, float64(r.complete-1)/d)
		}
	}
	if wall > 0 {
		rep.RequestsPerS = float64(rep.Completed) / wall
		rep.TokensPerS = float64(rep.CompletionTokens) / wall
	}
	rep.TTFT, rep.ITL, rep.Latency = Summarize(ttft), Summarize(itl), Summarize(lat)
	rep.DecodeTokensPerS = Summarize(dec).P50
	if err := ctx.Err(); err != nil && rep.Completed == 0 {
		return rep, fmt.Errorf("serve: load run: %w", err)
	}
	return rep, nil
}

// LoadPrompt is request i's prompt under o (see LoadOptions.PromptTokens).
func LoadPrompt(o LoadOptions, i int) []int {
	rng := rand.New(rand.NewPCG(o.Seed, uint64(i)+1))
	p := make([]int, o.PromptTokens)
	for j := range p {
		p[j] = o.TokenLo + rng.IntN(o.TokenHi-o.TokenLo)
	}
	return p
}

// loadChunk is the part of a streamed completion chunk RunLoad reads.
type loadChunk struct {
	Choices []struct {
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// loadOne sends request i and checks its stream.
func loadOne(ctx context.Context, client *http.Client, o LoadOptions, i int) (res loadResult) {
	body := map[string]any{"prompt": LoadPrompt(o, i), "max_tokens": o.MaxTokens, "temperature": 0,
		"stream": true, "stream_options": map[string]any{"include_usage": true}}
	if o.Model != "" {
		body["model"] = o.Model
	}
	if o.IgnoreEOS {
		body["ignore_eos"] = true
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return loadResult{err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(o.URL, "/")+"/v1/completions", bytes.NewReader(raw))
	if err != nil {
		return loadResult{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	if o.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.APIKey)
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return loadResult{err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return loadResult{err: fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(msg))}
	}
	var (
		chunks, finishes int
		finish           string
		done             bool
		usage            *struct{ prompt, completion int }
	)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			done = true
			break
		}
		var c loadChunk
		if err := json.Unmarshal(data, &c); err != nil {
			return loadResult{err: fmt.Errorf("chunk %q: %w", data, err)}
		}
		if c.Error != nil {
			return loadResult{err: fmt.Errorf("error event: %s", c.Error.Message)}
		}
		now := time.Now()
		for _, ch := range c.Choices {
			if ch.Text != "" {
				if chunks == 0 {
					res.first = now
					res.ttft = now.Sub(start).Seconds()
				} else {
					res.itl = append(res.itl, now.Sub(res.last).Seconds())
				}
				res.last = now
				chunks++
			}
			if ch.FinishReason != nil && *ch.FinishReason != "" {
				finishes++
				finish = *ch.FinishReason
			}
		}
		if c.Usage != nil {
			usage = &struct{ prompt, completion int }{c.Usage.PromptTokens, c.Usage.CompletionTokens}
		}
	}
	res.total = time.Since(start).Seconds()
	if err := sc.Err(); err != nil {
		return loadResult{err: fmt.Errorf("reading the stream: %w", err)}
	}
	switch {
	case !done:
		return loadResult{err: errors.New("the stream ended without data: [DONE]")}
	case finishes != 1:
		return loadResult{err: fmt.Errorf("%d chunks with a finish_reason, want 1", finishes)}
	case usage == nil && o.RequireUsage:
		return loadResult{err: errors.New("no usage chunk (stream_options.include_usage)")}
	}
	res.prompt, res.complete = o.PromptTokens, chunks
	if usage != nil {
		if usage.prompt != o.PromptTokens {
			return loadResult{err: fmt.Errorf("usage.prompt_tokens %d, sent %d", usage.prompt, o.PromptTokens)}
		}
		if usage.completion < chunks || usage.completion > o.MaxTokens {
			return loadResult{err: fmt.Errorf("usage.completion_tokens %d for %d text chunks and max_tokens %d", usage.completion, chunks, o.MaxTokens)}
		}
		res.complete = usage.completion
	}
	if o.IgnoreEOS && (finish != "length" || res.complete != o.MaxTokens) {
		return loadResult{err: fmt.Errorf("finish_reason %q after %d tokens, want length after %d (ignore_eos)", finish, res.complete, o.MaxTokens)}
	}
	if chunks == 0 {
		return loadResult{err: fmt.Errorf("no text chunk (finish_reason %q)", finish)}
	}
	return res
}

// Summarize summarizes latencies v in seconds (nearest-rank percentiles),
// as LoadReport's ttft, itl and latency are.
func Summarize(v []float64) Percentiles {
	if len(v) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	at := func(q float64) float64 {
		k := int(q*float64(len(s))+0.999999) - 1
		return s[min(max(k, 0), len(s)-1)]
	}
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return Percentiles{N: len(s), Mean: sum / float64(len(s)), P50: at(0.5), P90: at(0.9), P99: at(0.99), Max: s[len(s)-1]}
}
