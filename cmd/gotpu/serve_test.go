package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

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

func TestServeFlagErrors(t *testing.T) {
	if _, err := runCmd(t, "serve"); err == nil || !strings.Contains(err.Error(), "--model") {
		t.Fatalf("err = %v without a model", err)
	}
	if _, err := runCmd(t, "serve", "--embed-model", "x", "--buckets", "1,a"); err == nil || !strings.Contains(err.Error(), "--buckets") {
		t.Fatalf("err = %v for bad buckets", err)
	}
	if _, err := runCmd(t, "serve", "--embed-model", "x", "--prefill-chunk", "-1"); err == nil || !strings.Contains(err.Error(), "--prefill-chunk") {
		t.Fatalf("err = %v for a negative prefill chunk", err)
	}
}

var serveStartKeys = []string{"address", "api_key", "block_size", "buckets", "context_length", "device", "dtype", "embed_model",
	"embed_model_name", "event", "kv_blocks", "max_batch", "max_queue", "mode", "model", "pid", "prefill_chunk", "served_model_name", "url"}

func postJSON(t *testing.T, url, body string, v any) int {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Logf("POST %s: %d %s", url, resp.StatusCode, data)
	}
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
	}
	return resp.StatusCode
}

// TestServeEndToEnd serves the tiny Llama (through the batching engine)
// and a tiny embedding model, and checks that a greedy chat answer is what
// gotpu generate --chat produces.
func TestServeEndToEnd(t *testing.T) {
	dir := chatModelDir(t)
	// The chat template makes a 153-token prompt; the tiny checkpoint says
	// 64 positions, which the engine enforces (plain RoPE does not depend
	// on it, so gotpu generate gives the same tokens either way).
	widenPositions(t, dir, 256)
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
	// A prefill chunk of 16 prefills the 153-token prompt over ten steps:
	// the answer must not change.
	start, stop := startServe(t, "--model", dir, "--embed-model", embed, "--served-model-name", "tiny", "--max-batch", "4", "--buckets", "1,2,4",
		"--prefill-chunk", "16")
	keys := make([]string, 0, len(start))
	for k := range start {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if !reflect.DeepEqual(keys, serveStartKeys) {
		t.Errorf("startup keys %v, want %v", keys, serveStartKeys)
	}
	if start["served_model_name"] != "tiny" || start["max_batch"] != 4.0 || start["prefill_chunk"] != 16.0 || start["event"] != "listening" || !reflect.DeepEqual(start["buckets"], []any{1.0, 2.0, 4.0}) {
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
		t.Fatalf("status %d: %+v", code, out)
	}
	if len(out.Choices) != 1 || out.Choices[0].Message.Content != gen.Text || out.Usage.PromptTokens != len(gen.PromptIDs) || out.Usage.CompletionTokens != len(gen.IDs) {
		t.Errorf("served %+v, generate gave %q (%d prompt, %d new tokens)", out, gen.Text, len(gen.PromptIDs), len(gen.IDs))
	}
	// Constrained decoding through the engine: the answer is the schema's
	// (a bounded object, so the model must end it within max_tokens).
	out.Choices = nil
	schema := `{"type":"object","properties":{"color":{"enum":["red","green"]}},"required":["color"]}`
	if code := postJSON(t, url+"/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hello"}],"max_tokens":40,"temperature":0,
		"response_format":{"type":"json_schema","json_schema":{"name":"c","schema":`+schema+`}}}`, &out); code != 200 || len(out.Choices) != 1 {
		t.Fatalf("json_schema: status %d: %+v", code, out)
	}
	t.Logf("json_schema answer: %q (finish %s)", out.Choices[0].Message.Content, out.Choices[0].FinishReason)
	var obj struct {
		Color string `json:"color"`
	}
	if c := out.Choices[0]; c.FinishReason != "stop" || json.Unmarshal([]byte(c.Message.Content), &obj) != nil || (obj.Color != "red" && obj.Color != "green") {
		t.Errorf("json_schema answer %q (finish %s) does not follow the schema", c.Message.Content, c.FinishReason)
	}
	var emb struct {
		Data []struct {
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if code := postJSON(t, url+"/v1/embeddings", `{"input":["w5 w6 w7","w9"]}`, &emb); code != 200 || len(emb.Data) != 2 || len(emb.Data[0].Embedding) != 32 {
		t.Errorf("embeddings: %d %+v", code, emb)
	}
	// The server embeds both inputs as one padded batch (10 token rows),
	// gotpu embed the first alone (5 rows): x·Wᵀ of up to 8 rows runs the
	// dot-form kernels, more rows the GEMM's in-order chains
	// (backend/cpu/gemm_gemv.go), so the two agree to float rounding, not
	// bit for bit.
	if rep := parseEmbedJSON(t, embedOut); len(rep.Embeddings) != 1 || len(rep.Embeddings[0]) != len(emb.Data[0].Embedding) {
		t.Errorf("gotpu embed gave %d embeddings", len(rep.Embeddings))
	} else {
		for i, want := range rep.Embeddings[0] {
			if got := emb.Data[0].Embedding[i]; math.Abs(float64(got-want)) > 1e-6+1e-5*math.Abs(float64(want)) {
				t.Errorf("served embedding element %d = %v, gotpu embed's %v", i, got, want)
				break
			}
		}
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

// widenPositions rewrites max_position_embeddings in dir's config.json.
func widenPositions(t *testing.T, dir string, n int) {
	t.Helper()
	p := filepath.Join(dir, "config.json")
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["max_position_embeddings"] = n
	if raw, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}
