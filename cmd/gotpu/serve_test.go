package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/gotpu/gotpu/models"
	"github.com/gotpu/gotpu/serve"
)

// refEngine is a stand-in for the batching engine in tests: it runs one
// request at a time with CausalLM.Generate, the reference path.
type refEngine struct {
	m        *models.Model
	mu       sync.Mutex // one Generate at a time
	draining bool
	stats    serve.Stats
	smu      sync.Mutex
}

func (e *refEngine) Submit(ctx context.Context, r serve.Request) (<-chan serve.Event, error) {
	e.smu.Lock()
	draining := e.draining
	e.smu.Unlock()
	if draining {
		return nil, serve.ErrDraining
	}
	choose, err := models.Sampling(r.Sampling, 1)
	if err != nil {
		return nil, err
	}
	if r.Sampling.IsGreedy() {
		choose = models.Greedy
	}
	// Log-probabilities of the raw logits (the reference engine's, for
	// the API's logprobs plumbing).
	var lp float32
	var top []serve.TokenLogprob
	inner := choose
	choose = func(seq int, logits []float32, prompt, generated []int) (int, error) {
		tok, err := inner(seq, logits, prompt, generated)
		if err != nil || !r.Logprobs {
			return tok, err
		}
		mx := slices.Max(logits)
		var sum float64
		for _, l := range logits {
			sum += math.Exp(float64(l - mx))
		}
		logZ := float64(mx) + math.Log(sum)
		lp = float32(float64(logits[tok]) - logZ)
		idx := make([]int, len(logits))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
		top = top[:0]
		for _, i := range idx[:min(r.TopLogprobs, len(idx))] {
			top = append(top, serve.TokenLogprob{ID: i, Logprob: float32(float64(logits[i]) - logZ)})
		}
		return tok, nil
	}
	ch := make(chan serve.Event, 1)
	go func() {
		defer close(ch)
		e.mu.Lock()
		defer e.mu.Unlock()
		n := 0
		base := serve.Event{PromptTokens: len(r.Prompt)}
		_, err := e.m.LM.Generate(ctx, [][]int{r.Prompt}, models.GenerateOptions{MaxNewTokens: r.MaxTokens, Choose: choose, EOS: r.EOS,
			OnToken: func(_, tok int) error {
				n++
				ev := base
				ev.Token, ev.CompletionTokens = tok, n
				if r.Logprobs {
					ev.Logprob, ev.Top = lp, slices.Clone(top)
				}
				select {
				case ch <- ev:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}})
		end := base
		end.Token, end.Done, end.CompletionTokens = -1, true, n
		switch {
		case ctx.Err() != nil:
			end.FinishReason = "cancelled"
		case err != nil:
			end.FinishReason, end.Err = "error", err
		case n < r.MaxTokens:
			end.FinishReason = "stop"
		default:
			end.FinishReason = "length"
		}
		e.smu.Lock()
		e.stats.GeneratedTokens += int64(n)
		e.stats.PromptTokens += int64(len(r.Prompt))
		e.smu.Unlock()
		ch <- end
	}()
	return ch, nil
}

func (e *refEngine) Stats() serve.Stats {
	e.smu.Lock()
	defer e.smu.Unlock()
	return e.stats
}
func (e *refEngine) VocabSize() int     { return e.m.Config.VocabSize }
func (e *refEngine) ContextLength() int { return 256 }
func (e *refEngine) Drain(ctx context.Context) error {
	e.smu.Lock()
	e.draining = true
	e.smu.Unlock()
	e.mu.Lock()
	e.mu.Unlock() //nolint:staticcheck // waits for the running request
	return nil
}
func (e *refEngine) Close() error { return nil }

// useRefEngine makes gotpu serve build refEngines for the test's duration.
func useRefEngine(t *testing.T) {
	t.Helper()
	old := newEngine
	newEngine = func(m *models.Model, _ engineConfig) (serve.Generator, error) { return &refEngine{m: m}, nil }
	t.Cleanup(func() { newEngine = old })
}

// startServe runs gotpu serve ARGS --port 0 --json in the background and
// returns its startup line; stop shuts it down (as SIGTERM does) and
// returns the command's error.
func startServe(t *testing.T, args ...string) (start map[string]any, stop func() error) {
	t.Helper()
	args = append([]string{"serve", "--port", "0", "--json"}, args...)
	if cmd, _, err := rootCmd.Find(args); err == nil {
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if sv, ok := f.Value.(pflag.SliceValue); ok {
				sv.Replace(nil)
			} else {
				f.Value.Set(f.DefValue)
			}
			f.Changed = false
		})
	}
	pr, pw := io.Pipe()
	rootCmd.SetOut(pw)
	rootCmd.SetErr(testLogWriter{t})
	rootCmd.SetArgs(args)
	ctx, cancel := context.WithCancel(context.Background())
	if cmd, _, err := rootCmd.Find(args); err == nil {
		// cobra keeps a subcommand's context from an earlier Execute.
		cmd.SetContext(ctx)
	}
	errc := make(chan error, 1)
	go func() {
		err := rootCmd.ExecuteContext(ctx)
		pw.CloseWithError(errors.New("gotpu serve ended"))
		errc <- err
	}()
	cleanup := func() {
		rootCmd.SetOut(nil)
		rootCmd.SetErr(nil)
		// ExecuteContext left the (cancelled) context on the root command,
		// where later commands would inherit it.
		rootCmd.SetContext(context.Background())
	}
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		err := <-errc
		cleanup()
		t.Fatalf("gotpu serve did not start: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if err := json.Unmarshal([]byte(line), &start); err != nil {
		t.Fatalf("startup line %q: %v", line, err)
	}
	var once sync.Once
	var serr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case serr = <-errc:
			case <-time.After(30 * time.Second):
				serr = errors.New("gotpu serve did not shut down")
			}
			cleanup()
		})
		return serr
	}
	t.Cleanup(func() { _ = stop() })
	return start, stop
}

func TestServeWithoutEngine(t *testing.T) {
	_, err := runCmd(t, "serve", "--model", chatModelDir(t), "--port", "0")
	if err == nil || !strings.Contains(err.Error(), "engine is not built") {
		t.Fatalf("err = %v, want the engine-not-built error", err)
	}
	if _, err := runCmd(t, "serve"); err == nil || !strings.Contains(err.Error(), "--model") {
		t.Fatalf("err = %v without a model", err)
	}
	if _, err := runCmd(t, "serve", "--embed-model", "x", "--buckets", "1,a"); err == nil || !strings.Contains(err.Error(), "--buckets") {
		t.Fatalf("err = %v for bad buckets", err)
	}
}

var serveStartKeys = []string{"address", "api_key", "block_size", "buckets", "context_length", "device", "dtype", "embed_model",
	"embed_model_name", "event", "kv_blocks", "max_batch", "max_queue", "mode", "model", "pid", "served_model_name", "url"}

func postJSON(t *testing.T, url, body string, v any) int {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
	}
	return resp.StatusCode
}

// TestServeEndToEnd serves the tiny Llama (through the reference engine)
// and a tiny embedding model, and checks that a greedy chat answer is what
// gotpu generate --chat produces.
func TestServeEndToEnd(t *testing.T) {
	useRefEngine(t)
	dir := chatModelDir(t)
	embed := tinyEmbedModel(t)
	want, err := runCmd(t, "generate", "--model", dir, "--chat", "--prompt", "hello", "--max-new-tokens", "6", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var gen generateOutput
	if err := json.Unmarshal([]byte(want), &gen); err != nil {
		t.Fatal(err)
	}
	embedOut, err := runWithInput(t, "w5 w6 w7\n", "embed", "--model", embed, "--json")
	if err != nil {
		t.Fatal(err)
	}
	start, stop := startServe(t, "--model", dir, "--embed-model", embed, "--served-model-name", "tiny", "--max-batch", "4", "--buckets", "1,2,4")
	keys := make([]string, 0, len(start))
	for k := range start {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if !reflect.DeepEqual(keys, serveStartKeys) {
		t.Errorf("startup keys %v, want %v", keys, serveStartKeys)
	}
	if start["served_model_name"] != "tiny" || start["max_batch"] != 4.0 || start["event"] != "listening" || !reflect.DeepEqual(start["buckets"], []any{1.0, 2.0, 4.0}) {
		t.Errorf("startup %v", start)
	}
	url := start["url"].(string)
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if code := postJSON(t, url+"/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hello"}],"max_tokens":6,"temperature":0}`, &out); code != 200 {
		t.Fatalf("status %d", code)
	}
	if len(out.Choices) != 1 || out.Choices[0].Message.Content != gen.Text || out.Usage.PromptTokens != len(gen.PromptIDs) || out.Usage.CompletionTokens != len(gen.IDs) {
		t.Errorf("served %+v, generate gave %q (%d prompt, %d new tokens)", out, gen.Text, len(gen.PromptIDs), len(gen.IDs))
	}
	var emb struct {
		Data []struct {
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if code := postJSON(t, url+"/v1/embeddings", `{"input":["w5 w6 w7","w9"]}`, &emb); code != 200 || len(emb.Data) != 2 || len(emb.Data[0].Embedding) != 32 {
		t.Errorf("embeddings: %d %+v", code, emb)
	}
	if rep := parseEmbedJSON(t, embedOut); !slices.Equal(rep.Embeddings[0], emb.Data[0].Embedding) {
		t.Errorf("served embedding differs from gotpu embed's")
	}
	if err := stop(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if _, err := http.Get(url + "/health"); err == nil {
		t.Error("the server still answers after shutdown")
	}
}

// testLogWriter sends gotpu serve's standard error to the test log.
type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
