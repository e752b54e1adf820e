// Package serve is gotpu's OpenAI-compatible inference server: an HTTP API
// (api*.go) in front of a continuous-batching engine (engine*.go) that runs
// a models.CausalLM over a paged KV cache.
//
// The two halves meet only in the types of this file: the API turns an HTTP
// request into one or more Requests (n > 1 submits n of them; identical
// prompts share their KV blocks through the prefix cache), submits them to a
// Generator and turns the Events back into OpenAI responses.
package serve

import (
	"context"
	"errors"

	"github.com/gotpu/gotpu/models/sample"
)

// Request is one sequence to generate, as the engine sees it: token ids in,
// token ids out. Text concerns (chat templates, stop strings, detokenizing)
// stay in the API layer.
type Request struct {
	// ID names the request in logs and metrics.
	ID string
	// Prompt is the prompt's token ids (non-empty).
	Prompt []int
	// MaxTokens bounds the new tokens (> 0); the engine also stops at its
	// context length (finish reason "length").
	MaxTokens int
	// Sampling are the sampling parameters (temperature 0 is greedy; Seed
	// makes a sampled request reproducible regardless of batching).
	Sampling sample.Params
	// LogitBias is added to the logits of the named token ids before
	// sampling (OpenAI's logit_bias, already converted to ids).
	LogitBias map[int]float32
	// EOS are the ids that end the sequence (finish reason "stop"; the EOS
	// token is reported in its Event but is not text).
	EOS []int
	// TopLogprobs, when > 0, asks for that many most likely alternatives
	// with each token; Logprobs asks for the chosen token's log-probability.
	Logprobs    bool
	TopLogprobs int
	// Constraint, when set, restricts every next token (constrained
	// decoding: json_object / json_schema, tool calls).
	Constraint Constraint
}

// Constraint restricts the tokens a sequence may generate next. The engine
// calls Allowed before sampling each token and Accept after choosing it; a
// Constraint belongs to one sequence and is never shared between goroutines.
type Constraint interface {
	// Allowed sets allow[id] for each token id that may come next (allow
	// has the vocabulary's length and arrives all false). Returning false
	// means the constraint is satisfied and only an EOS may follow.
	Allowed(allow []bool) bool
	// Accept advances the constraint past token id; an error means id was
	// not allowed.
	Accept(id int) error
}

// TokenLogprob is a token with its log-probability.
type TokenLogprob struct {
	ID      int
	Logprob float32
}

// Event is one step of a request's output stream: a new token, or the end.
// The channel a Generator returns is closed after the event with Done set.
type Event struct {
	// Token is the new token (valid when !Done or when Done with Token >= 0).
	Token int
	// Logprob and Top are set when the request asked for log-probabilities.
	Logprob float32
	Top     []TokenLogprob
	// Done marks the last event; FinishReason is then "stop", "length",
	// "cancelled" or "error" (with Err set).
	Done         bool
	FinishReason string
	Err          error
	// PromptTokens and CompletionTokens count the request's tokens so far
	// (usage); CachedTokens counts prompt tokens served from the prefix cache.
	PromptTokens, CompletionTokens, CachedTokens int
}

// Stats is a snapshot of a Generator's state for /metrics and /health.
type Stats struct {
	Queued, Running             int
	KVBlocksUsed, KVBlocksTotal int
	PrefixHits, PrefixLookups   int64
	Preemptions                 int64
	GeneratedTokens             int64
	PromptTokens                int64
}

// Generator runs Requests; Engine is the real one.
type Generator interface {
	// Submit queues r and returns its event stream. Cancelling ctx (the
	// client went away) stops the request and frees its KV blocks at once;
	// the stream then ends with FinishReason "cancelled". Submit fails with
	// ErrQueueFull when the queue is full and ErrDraining after Drain began.
	Submit(ctx context.Context, r Request) (<-chan Event, error)
	// Stats returns the current counters.
	Stats() Stats
	// VocabSize is the model's vocabulary size; ContextLength its longest sequence.
	VocabSize() int
	ContextLength() int
	// Drain stops accepting requests and waits until the running ones end
	// or ctx is done; Close then releases everything.
	Drain(ctx context.Context) error
	Close() error
}

// Errors a Generator returns from Submit.
var (
	ErrQueueFull = errors.New("serve: request queue is full")
	ErrDraining  = errors.New("serve: server is shutting down")
)
