package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gotpu/gotpu"
	"github.com/gotpu/gotpu/models"
	"github.com/gotpu/gotpu/models/sample"
	"github.com/gotpu/gotpu/serve"
	"github.com/gotpu/gotpu/serve/constrain"
)

// engineConfig are the continuous-batching engine's settings, from the
// flags of gotpu serve (0 or nil: the engine's default).
type engineConfig struct {
	MaxBatch  int   // sequences decoded together
	KVBlocks  int   // paged KV cache blocks
	BlockSize int   // tokens per KV block
	Buckets   []int // padded batch/sequence sizes that get compiled programs
	MaxQueue  int   // waiting requests before Submit answers ErrQueueFull
	// PrefillChunk is the most prompt tokens one step prefills beside the
	// running decodes.
	PrefillChunk int
}

// newEngine builds the continuous-batching engine (serve.Engine) that runs
// m's causal LM; tests swap it.
var newEngine = func(m *models.Model, c engineConfig) (serve.Generator, error) {
	if m.LM == nil {
		return nil, errors.New("--model is not a causal language model (serve embeddings with --embed-model)")
	}
	return serve.NewEngine(m.LM, serve.EngineOptions{
		MaxBatch:     c.MaxBatch,
		NumBlocks:    c.KVBlocks,
		BlockSize:    c.BlockSize,
		MaxQueue:     c.MaxQueue,
		BatchBuckets: c.Buckets,
		PrefillChunk: c.PrefillChunk,
	})
}

// serveStartup is the line gotpu serve --json prints once it listens.
type serveStartup struct {
	Event           string `json:"event"`
	Address         string `json:"address"`
	URL             string `json:"url"`
	Model           string `json:"model"`
	ServedModelName string `json:"served_model_name"`
	EmbedModel      string `json:"embed_model"`
	EmbedModelName  string `json:"embed_model_name"`
	Device          string `json:"device"`
	DType           string `json:"dtype"`
	Mode            string `json:"mode"`
	ContextLength   int    `json:"context_length"`
	MaxBatch        int    `json:"max_batch"`
	KVBlocks        int    `json:"kv_blocks"`
	BlockSize       int    `json:"block_size"`
	Buckets         []int  `json:"buckets"`
	MaxQueue        int    `json:"max_queue"`
	PrefillChunk    int    `json:"prefill_chunk"`
	APIKey          bool   `json:"api_key"`
	PID             int    `json:"pid"`
}

const serveLong = `Serve a causal language model (--model) and/or a sentence-embedding model
(--embed-model) over an OpenAI-compatible HTTP API, with continuous batching
over a paged KV cache:

  GET  /v1/models             the served models
  POST /v1/completions        text completions (prompt: text, texts or token ids)
  POST /v1/chat/completions   chat, rendered with the model's chat template;
                              stream, n, stop, logprobs, tools, response_format
  POST /v1/embeddings         sentence embeddings (float or base64)
  POST /tokenize, /detokenize vLLM / llama-server shapes
  GET  /health                200 {"status":"ok"}, 503 while shutting down
  GET  /metrics               Prometheus metrics (gotpu_*)

Errors are OpenAI error objects ({"error": {"message", "type", "param",
"code"}}). With --api-key (repeatable; GOTPU_API_KEY also counts) every
endpoint but /health and /metrics needs "Authorization: Bearer KEY".

Requests leave out sampling fields to get OpenAI's defaults (temperature 1,
top_p 1), or the model's generation_config.json when it sets do_sample.
"ignore_eos": true (vLLM's and llama-server's extension) generates up to
max_tokens past end-of-sequence tokens (benchmarks: gotpu bench serve).

SIGINT or SIGTERM shuts down gracefully: new requests get 503, the listener
closes, running requests finish within --drain-timeout (then they are
cancelled), and the process exits 0.

With --json one line is printed once the server listens, with these stable
keys: event ("listening"), address (host:port actually bound; --port 0 picks
a free port), url, model, served_model_name, embed_model, embed_model_name,
device, dtype, mode, context_length, max_batch, kv_blocks, block_size,
buckets, max_queue, prefill_chunk, api_key (whether keys are required),
pid.`

func newServeCmd() *cobra.Command {
	var (
		mf                    modelFlags
		host                  string
		port                  int
		ec                    engineConfig
		buckets               string
		apiKeys               []string
		embedPath, servedName string
		maxTokens             int
		maxBody               int64
		drainTimeout          time.Duration
		asJSON                bool
		embedBatch            int
	)
	cmd := &cobra.Command{
		Use:   "serve --model PATH [--embed-model PATH] [--host H] [--port P] [flags]",
		Short: "Serve models over an OpenAI-compatible HTTP API",
		Long:  serveLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if mf.path == "" && embedPath == "" {
				return errors.New("serve: give --model PATH, --embed-model PATH or both")
			}
			var err error
			if ec.Buckets, err = parseBuckets(buckets); err != nil {
				return fmt.Errorf("serve: %w", err)
			}
			for _, v := range []struct {
				name string
				n    int
			}{{"--max-batch", ec.MaxBatch}, {"--kv-blocks", ec.KVBlocks}, {"--block-size", ec.BlockSize}, {"--max-queue", ec.MaxQueue}, {"--max-tokens", maxTokens}, {"--prefill-chunk", ec.PrefillChunk}} {
				if v.n < 0 {
					return fmt.Errorf("serve: %s must be ≥ 0, got %d", v.name, v.n)
				}
			}
			if k := os.Getenv("GOTPU_API_KEY"); k != "" {
				apiKeys = append(apiKeys, k)
			}
			o := serve.ServerOptions{APIKeys: apiKeys, MaxTokens: maxTokens, MaxBodyBytes: maxBody,
				Logger: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))}
			start := serveStartup{Event: "listening", Model: mf.path, Device: mf.device, Mode: mf.mode,
				MaxBatch: ec.MaxBatch, KVBlocks: ec.KVBlocks, BlockSize: ec.BlockSize, Buckets: ec.Buckets,
				MaxQueue: ec.MaxQueue, PrefillChunk: ec.PrefillChunk, APIKey: len(apiKeys) > 0, PID: os.Getpid(), EmbedModel: embedPath}
			if start.Buckets == nil {
				start.Buckets = []int{}
			}
			var gen serve.Generator
			if mf.path != "" {
				m, restore, err := mf.load()
				if err != nil {
					return fmt.Errorf("serve: %w", err)
				}
				defer restore()
				if m.LM == nil {
					return fmt.Errorf("serve: %s is not a causal language model", mf.path)
				}
				if gen, err = newEngine(m, ec); err != nil {
					return fmt.Errorf("serve: %w", err)
				}
				defer gen.Close()
				if m.Tokenizer == nil {
					return fmt.Errorf("serve: %s has no tokenizer.json", mf.path)
				}
				o.Generator, o.Tokenizer, o.EOS = gen, serve.HFTokenizer(m.Tokenizer), eosIDs(m)
				if o.NewConstraint, err = constraintBuilder(m); err != nil {
					return fmt.Errorf("serve: %w", err)
				}
				if m.Chat != nil {
					o.Chat = m.Chat
				}
				o.ModelName = servedName
				if o.ModelName == "" {
					o.ModelName = modelName(mf.path)
				}
				if o.ModelName != mf.path {
					o.Aliases = []string{mf.path}
				}
				o.DefaultSampling = defaultSampling(m)
				start.ServedModelName, start.DType, start.ContextLength = o.ModelName, m.LM.DType.String(), gen.ContextLength()
			}
			if embedPath != "" {
				dev, err := gotpu.Device(mf.device)
				if err != nil {
					return fmt.Errorf("serve: --device: %w", err)
				}
				em, err := models.LoadPath(embedPath, models.Options{Device: dev})
				if err != nil {
					return fmt.Errorf("serve: --embed-model: %w", err)
				}
				e, err := serve.NewModelEmbedder(em)
				if err != nil {
					return fmt.Errorf("serve: --embed-model %s: %w", embedPath, err)
				}
				e.BatchSize = embedBatch
				o.Embedder, o.EmbedModelName = e, modelName(embedPath)
				start.EmbedModelName = o.EmbedModelName
			}
			srv, err := serve.NewServer(o)
			if err != nil {
				return fmt.Errorf("serve: %w", err)
			}
			ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
			if err != nil {
				return fmt.Errorf("serve: %w", err)
			}
			start.Address = ln.Addr().String()
			start.URL = "http://" + start.Address
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetEscapeHTML(false)
				if err := enc.Encode(start); err != nil {
					ln.Close()
					return err
				}
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "gotpu serve: listening on %s (model %q, embeddings %q)\n", start.URL, start.ServedModelName, start.EmbedModelName)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 30 * time.Second}
			errc := make(chan error, 1)
			go func() { errc <- hs.Serve(ln) }()
			select {
			case err := <-errc:
				return fmt.Errorf("serve: %w", err)
			case <-ctx.Done():
			}
			return shutdown(cmd, srv, hs, gen, drainTimeout)
		},
	}
	mf.register(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&host, "host", "127.0.0.1", "address to listen on (0.0.0.0: every interface)")
	f.IntVar(&port, "port", 8000, "port to listen on (0: a free one, printed at startup)")
	f.IntVar(&ec.MaxBatch, "max-batch", 0, "most sequences decoded together (0: the engine's default)")
	f.IntVar(&ec.KVBlocks, "kv-blocks", 0, "paged KV cache blocks (0: the engine's default)")
	f.IntVar(&ec.BlockSize, "block-size", 0, "tokens per KV cache block (0: the engine's default)")
	f.StringVar(&buckets, "buckets", "", "comma-separated batch sizes a step is padded to, each compiled once (default: powers of two)")
	f.IntVar(&ec.MaxQueue, "max-queue", 0, "most waiting requests before answering 429 (0: the engine's default)")
	f.IntVar(&ec.PrefillChunk, "prefill-chunk", 0, "most prompt tokens one step prefills beside the running decodes: smaller keeps inter-token latency down while prompts arrive, larger gets first tokens sooner (0: the engine's default, 256)")
	f.StringArrayVar(&apiKeys, "api-key", nil, "require Authorization: Bearer KEY (repeatable)")
	f.StringVar(&embedPath, "embed-model", "", "sentence-embedding model directory for /v1/embeddings (bert, roberta)")
	f.IntVar(&embedBatch, "embed-batch-size", 32, "texts per embedding forward pass")
	f.StringVar(&servedName, "served-model-name", "", "model name clients use (default: the --model directory's name)")
	f.IntVar(&maxTokens, "max-tokens", 0, "default max_tokens of requests that set none (0: the rest of the context)")
	f.Int64Var(&maxBody, "max-body-bytes", 8<<20, "largest request body (larger ones get 413)")
	f.DurationVar(&drainTimeout, "drain-timeout", 30*time.Second, "on SIGINT/SIGTERM, how long running requests may take to finish")
	f.BoolVar(&asJSON, "json", false, "print one JSON line once listening (keys documented above)")
	return cmd
}

// shutdown drains: new requests get 503, the listener closes, running
// requests finish (or are cancelled at the deadline), then the engine is
// drained.
func shutdown(cmd *cobra.Command, srv *serve.Server, hs *http.Server, gen serve.Generator, timeout time.Duration) error {
	srv.BeginDrain()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var errs []error
	if err := hs.Shutdown(ctx); err != nil {
		// The deadline passed: cut the remaining connections, which
		// cancels their requests.
		_ = hs.Close()
		errs = append(errs, fmt.Errorf("requests still running after %v were cancelled", timeout))
	}
	if gen != nil {
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer dcancel()
		if err := gen.Drain(dctx); err != nil {
			errs = append(errs, fmt.Errorf("draining the engine: %w", err))
		}
	}
	if len(errs) > 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), "gotpu serve: shut down:", errors.Join(errs...))
	}
	return nil
}

// modelName is the default served name of a model path: its directory or
// file name.
func modelName(path string) string {
	return filepath.Base(filepath.Clean(path))
}

// parseBuckets reads --buckets.
func parseBuckets(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--buckets: %q is not a positive size", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// defaultSampling is what requests get for the fields they leave out:
// OpenAI's defaults, or the model's generation_config.json when it samples
// (as vLLM does).
func defaultSampling(m *models.Model) *sample.Params {
	p := sample.DefaultParams()
	if g := m.Generation; g != nil && g.DoSample {
		p.Temperature, p.TopK, p.TopP, p.RepetitionPenalty = g.Temperature, g.TopK, g.TopP, g.RepetitionPenalty
		if g.MinP != nil {
			p.MinP = *g.MinP
		}
	}
	if p.Validate() != nil {
		p = sample.DefaultParams()
	}
	return &p
}

func init() {
	rootCmd.AddCommand(newServeCmd())
}

// maxGrammars bounds the compiled response formats gotpu serve keeps (each
// holds its masks memoized by automaton state).
const maxGrammars = 64

// constraintBuilder returns the server's constrained-decoding hook over m's
// vocabulary: a schema is compiled once (serve/constrain) and every
// sequence that asks for it gets its own Constraint.
func constraintBuilder(m *models.Model) (func([]byte) (serve.Constraint, error), error) {
	vocab, err := constrain.NewVocab(constrain.TokenBytes(m.Tokenizer), eosIDs(m))
	if err != nil {
		return nil, fmt.Errorf("constrained decoding: %w", err)
	}
	var mu sync.Mutex
	grammars := map[string]*constrain.Grammar{}
	return func(schema []byte) (serve.Constraint, error) {
		mu.Lock()
		defer mu.Unlock()
		g, ok := grammars[string(schema)]
		if !ok {
			var err error
			if g, err = vocab.Schema(schema); err != nil {
				return nil, err
			}
			if len(grammars) >= maxGrammars {
				clear(grammars)
			}
			grammars[string(schema)] = g
		}
		return g.New(), nil
	}, nil
}
