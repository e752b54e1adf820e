package serve

import (
	"fmt"
	"io"
	"net/http"

	"github.com/gotpu/gotpu/internal/promtext"
)

// Metric names the server exports on /metrics (all prefixed gotpu_):
//
//	http_requests_total{endpoint,status}   counter, one per finished HTTP request
//	queue_depth                            gauge, requests waiting for the engine
//	running_requests                       gauge, sequences in the running batch
//	kv_blocks_used, kv_blocks_total        gauges, paged KV cache blocks
//	prefix_cache_hits_total                counter, prefix-cache lookups that hit
//	prefix_cache_lookups_total             counter, prefix-cache lookups
//	preemptions_total                      counter, sequences preempted
//	generation_tokens_total                counter, tokens generated (rate() = tokens/s)
//	prompt_tokens_total                    counter, prompt tokens processed
//	time_to_first_token_seconds            histogram, Submit to first token
//	inter_token_latency_seconds            histogram, between consecutive tokens
//	request_duration_seconds{endpoint}     histogram, whole completion requests
type metrics struct {
	reg      *promtext.Registry
	requests *promtext.CounterVec
	ttft     *promtext.Histogram
	itl      *promtext.Histogram
	duration *promtext.HistogramVec
}

func newMetrics(g Generator) (*metrics, error) {
	reg := promtext.NewRegistry()
	m := &metrics{reg: reg}
	var err error
	if m.requests, err = reg.NewCounterVec("gotpu_http_requests_total",
		"HTTP requests by endpoint and status code.", "endpoint", "status"); err != nil {
		return nil, fmt.Errorf("serve: registering metrics: %w", err)
	}
	if m.ttft, err = reg.NewHistogram("gotpu_time_to_first_token_seconds",
		"Time from submitting a sequence to its first token.",
		[]float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}); err != nil {
		return nil, fmt.Errorf("serve: registering metrics: %w", err)
	}
	if m.itl, err = reg.NewHistogram("gotpu_inter_token_latency_seconds",
		"Time between consecutive tokens of a sequence.",
		[]float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}); err != nil {
		return nil, fmt.Errorf("serve: registering metrics: %w", err)
	}
	if m.duration, err = reg.NewHistogramVec("gotpu_request_duration_seconds",
		"Duration of completion and embedding requests.",
		[]float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}, "endpoint"); err != nil {
		return nil, fmt.Errorf("serve: registering metrics: %w", err)
	}
	if g == nil {
		return m, nil
	}
	// The engine's Stats, read once per scrape.
	read := func() []float64 {
		st := g.Stats()
		return []float64{float64(st.Queued), float64(st.Running), float64(st.KVBlocksUsed), float64(st.KVBlocksTotal),
			float64(st.PrefixHits), float64(st.PrefixLookups), float64(st.Preemptions),
			float64(st.GeneratedTokens), float64(st.PromptTokens)}
	}
	gauge := func(name, help string) promtext.FuncDesc {
		return promtext.FuncDesc{Name: "gotpu_" + name, Help: help, Kind: promtext.Gauge}
	}
	counter := func(name, help string) promtext.FuncDesc {
		return promtext.FuncDesc{Name: "gotpu_" + name, Help: help, Kind: promtext.CounterKind}
	}
	if err := reg.NewFuncs(read,
		gauge("queue_depth", "Requests waiting in the engine's queue."),
		gauge("running_requests", "Sequences in the engine's running batch."),
		gauge("kv_blocks_used", "Paged KV cache blocks in use."),
		gauge("kv_blocks_total", "Paged KV cache blocks in all."),
		counter("prefix_cache_hits_total", "Prefix-cache lookups that found cached blocks."),
		counter("prefix_cache_lookups_total", "Prefix-cache lookups."),
		counter("preemptions_total", "Sequences preempted to free KV blocks."),
		counter("generation_tokens_total", "Tokens generated (rate() gives tokens per second)."),
		counter("prompt_tokens_total", "Prompt tokens processed."),
	); err != nil {
		return nil, fmt.Errorf("serve: registering metrics: %w", err)
	}
	return m, nil
}

// WriteMetrics writes the server's metrics (those /metrics serves) in the
// Prometheus text exposition format, for a program that embeds the
// server and serves its own /metrics.
func (s *Server) WriteMetrics(w io.Writer) error {
	_, err := s.metrics.reg.WriteTo(w)
	return err
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", promtext.ContentType)
	if err := s.WriteMetrics(w); err != nil {
		s.log.Debug("serve: writing /metrics", "err", err)
	}
	return nil
}
