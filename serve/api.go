package serve

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gotpu/gotpu/hf/chat"
	"github.com/gotpu/gotpu/models/sample"
)

// Tokenizer turns text into token ids and back, for the API layer. Adapt a
// hf/tokenizer.Tokenizer with HFTokenizer.
type Tokenizer interface {
	// Encode tokenizes text; addSpecial adds the tokenizer's special tokens
	// (BOS, ...), as transformers' tokenizer(text) does.
	Encode(text string, addSpecial bool) ([]int, error)
	// Decode turns ids into text; skipSpecial leaves special tokens out.
	Decode(ids []int, skipSpecial bool) (string, error)
}

// ChatTemplate renders a conversation into a prompt; *chat.Template is one.
type ChatTemplate interface {
	Render(messages []chat.Message, opts chat.RenderOptions) (string, error)
}

// Embedder computes sentence embeddings for /v1/embeddings. It must be safe
// for concurrent use (ModelEmbedder serializes its calls).
type Embedder interface {
	// Embed returns one embedding per text.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// CountTokens is the number of tokens text is embedded from (usage).
	CountTokens(text string) (int, error)
}

// ServerOptions configure a Server. Generator (with Tokenizer) serves the
// completion endpoints; Embedder serves /v1/embeddings; either may be nil,
// not both.
type ServerOptions struct {
	// ModelName is the name clients put in "model" (also listed by
	// /v1/models); Aliases are further names accepted for it.
	ModelName string
	Aliases   []string
	// Generator runs the requests; Tokenizer encodes prompts and decodes
	// outputs; Chat renders /v1/chat/completions messages (nil: that
	// endpoint answers 400).
	Generator Generator
	Tokenizer Tokenizer
	Chat      ChatTemplate
	// EOS are the ids that end a sequence.
	EOS []int
	// DefaultSampling is used for the fields a request leaves out
	// (temperature, top_p, top_k, min_p, repetition_penalty); zero value:
	// sample.DefaultParams(), OpenAI's defaults.
	DefaultSampling *sample.Params
	// MaxTokens caps the default max_tokens of a request that sets none
	// (0: up to the context length).
	MaxTokens int
	// NewConstraint builds a constrained-decoding Constraint from a JSON
	// schema (response_format json_object / json_schema, tool_choice
	// "required" or a named function). nil: those requests answer 400.
	NewConstraint func(schema []byte) (Constraint, error)

	// EmbedModelName names the embedding model; Embedder computes them.
	EmbedModelName string
	Embedder       Embedder

	// APIKeys, when not empty, are the accepted bearer tokens of every
	// endpoint but /health and /metrics.
	APIKeys []string
	// MaxBodyBytes bounds a request body (0: 8 MiB); larger ones get 413.
	MaxBodyBytes int64
	// Logger logs request failures (nil: slog.Default()).
	Logger *slog.Logger
	// Now is the clock for "created" (nil: time.Now).
	Now func() time.Time
}

// Server is the OpenAI-compatible HTTP API. Its Handler is safe for
// concurrent use.
type Server struct {
	o        ServerOptions
	names    map[string]bool
	mux      *http.ServeMux
	metrics  *metrics
	draining atomic.Bool
	// inflight counts the completion and embedding requests running;
	// idle is closed (and replaced) whenever it drops to zero.
	mu       sync.Mutex
	inflight int
	idle     chan struct{}
	defaults sample.Params
	log      *slog.Logger
}

// NewServer checks o and builds the server.
func NewServer(o ServerOptions) (*Server, error) {
	if o.Generator == nil && o.Embedder == nil {
		return nil, errors.New("serve: NewServer needs a Generator or an Embedder")
	}
	if o.Generator != nil {
		if o.Tokenizer == nil {
			return nil, errors.New("serve: NewServer: a Generator needs a Tokenizer")
		}
		if o.ModelName == "" {
			return nil, errors.New("serve: NewServer: ModelName is empty")
		}
	}
	if o.Embedder != nil && o.EmbedModelName == "" {
		return nil, errors.New("serve: NewServer: EmbedModelName is empty")
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 8 << 20
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Server{o: o, names: map[string]bool{}, log: o.Logger}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.defaults = sample.DefaultParams()
	if o.DefaultSampling != nil {
		s.defaults = *o.DefaultSampling
	}
	if err := s.defaults.Validate(); err != nil {
		return nil, fmt.Errorf("serve: DefaultSampling: %w", err)
	}
	if o.Generator != nil {
		s.names[o.ModelName] = true
		for _, a := range o.Aliases {
			s.names[a] = true
		}
	}
	m, err := newMetrics(o.Generator)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	s.routes()
	return s, nil
}

// route is one endpoint: its method, whether it needs the API key, and
// its handler, which returns an error to send as an OpenAI error object.
type route struct {
	path, method string
	open         bool // no API key needed
	work         bool // counts as in-flight work (drained on shutdown)
	h            func(w http.ResponseWriter, r *http.Request) error
}

func (s *Server) routes() {
	s.mux = http.NewServeMux()
	rs := []route{
		{path: "/health", method: http.MethodGet, open: true, h: s.handleHealth},
		{path: "/metrics", method: http.MethodGet, open: true, h: s.handleMetrics},
		{path: "/v1/models", method: http.MethodGet, h: s.handleModels},
		{path: "/v1/completions", method: http.MethodPost, work: true, h: s.handleCompletions},
		{path: "/v1/chat/completions", method: http.MethodPost, work: true, h: s.handleChat},
		{path: "/v1/embeddings", method: http.MethodPost, work: true, h: s.handleEmbeddings},
		{path: "/tokenize", method: http.MethodPost, h: s.handleTokenize},
		{path: "/detokenize", method: http.MethodPost, h: s.handleDetokenize},
	}
	for _, rt := range rs {
		s.mux.Handle(rt.path, s.wrap(rt))
	}
	s.mux.Handle("/", s.wrap(route{path: "other", open: true, h: func(w http.ResponseWriter, r *http.Request) error {
		return notFound("not_found", "no endpoint %s %s", r.Method, r.URL.Path)
	}}))
}

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.mux }

// BeginDrain makes the server refuse new work with 503 (and /health report
// "draining") while the requests already running finish.
func (s *Server) BeginDrain() {
	s.mu.Lock()
	s.draining.Store(true)
	s.mu.Unlock()
}

// Wait blocks until the completion and embedding requests in flight have
// ended, or ctx is done.
func (s *Server) Wait(ctx context.Context) error {
	for {
		s.mu.Lock()
		n, idle := s.inflight, s.idle
		s.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// begin counts a request in; it reports false when the server is draining.
func (s *Server) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining.Load() {
		return false
	}
	if s.inflight == 0 {
		s.idle = make(chan struct{})
	}
	s.inflight++
	return true
}

func (s *Server) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight--
	if s.inflight == 0 {
		close(s.idle)
	}
}

// statusWriter records the status code a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// wrap adds what every endpoint shares: method check, API key, draining,
// body limit, metrics and error rendering.
func (s *Server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("serve: handler panicked", "path", r.URL.Path, "panic", p)
				if sw.status == 0 {
					writeError(sw, internalError(fmt.Errorf("internal error: %v", p)))
				}
			}
			st := sw.status
			if st == 0 {
				st = http.StatusOK
			}
			s.metrics.requests.With(rt.path, fmt.Sprint(st)).Inc()
		}()
		err := func() error {
			if rt.method != "" && r.Method != rt.method {
				if rt.method == http.MethodGet && r.Method == http.MethodHead {
					return nil
				}
				sw.Header().Set("Allow", rt.method)
				return methodNotAllowed(r.Method, r.URL.Path)
			}
			if !rt.open && !s.authorized(r) {
				return unauthorized()
			}
			if rt.work {
				if !s.begin() {
					return draining()
				}
				defer s.end()
			}
			r.Body = http.MaxBytesReader(sw, r.Body, s.o.MaxBodyBytes)
			return rt.h(sw, r)
		}()
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.Status == http.StatusInternalServerError {
				s.log.Warn("serve: request failed", "path", r.URL.Path, "err", err)
			}
			if sw.status == 0 {
				writeError(sw, err)
			}
		}
	})
}

func (s *Server) authorized(r *http.Request) bool {
	if len(s.o.APIKeys) == 0 {
		return true
	}
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return false
	}
	tok = strings.TrimSpace(tok)
	for _, k := range s.o.APIKeys {
		if subtle.ConstantTimeCompare([]byte(tok), []byte(k)) == 1 {
			return true
		}
	}
	return false
}

// decodeBody reads the JSON body into v: 413 when it is too large, 400
// naming the field when it does not parse.
func decodeBody(r *http.Request, v any) error {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return tooLarge(mbe.Limit)
		}
		return badRequest("", "reading the request body: %v", err)
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return badRequest("", "the request body is empty; send a JSON object")
	}
	if err := json.Unmarshal(data, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := strings.TrimPrefix(te.Field, "samplingFields.")
			return badRequest(field, "field %q: JSON %s cannot be a %s", field, te.Value, te.Type)
		}
		return badRequest("", "the request body is not valid JSON: %v", err)
	}
	return nil
}

// checkModel answers 404 unless name is a served language model ("" picks it).
func (s *Server) checkModel(name string) error {
	if s.o.Generator == nil {
		return notFound("model_not_found", "the model %q does not exist: this server runs no language model", name)
	}
	if name == "" || s.names[name] {
		return nil
	}
	return notFound("model_not_found", "the model %q does not exist (this server runs %q)", name, s.o.ModelName)
}

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) error {
	if s.draining.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "draining"})
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) error {
	list := modelList{Object: "list", Data: []modelCard{}}
	created := s.o.Now().Unix()
	if s.o.Generator != nil {
		list.Data = append(list.Data, modelCard{ID: s.o.ModelName, Object: "model", Created: created,
			OwnedBy: "gotpu", MaxModelLen: s.o.Generator.ContextLength()})
	}
	if s.o.Embedder != nil {
		list.Data = append(list.Data, modelCard{ID: s.o.EmbedModelName, Object: "model", Created: created, OwnedBy: "gotpu"})
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}
