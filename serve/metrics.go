package serve

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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
	gatherer prometheus.Gatherer
	requests *prometheus.CounterVec
	ttft     prometheus.Histogram
	itl      prometheus.Histogram
	duration *prometheus.HistogramVec
}

// statsCollector exports a Generator's Stats, read once per scrape.
type statsCollector struct {
	gen                                       Generator
	queued, running, kvUsed, kvTotal          *prometheus.Desc
	hits, lookups, preempt, genToks, promptTk *prometheus.Desc
}

func newStatsCollector(g Generator) *statsCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc("gotpu_"+name, help, nil, nil) }
	return &statsCollector{gen: g,
		queued:   d("queue_depth", "Requests waiting in the engine's queue."),
		running:  d("running_requests", "Sequences in the engine's running batch."),
		kvUsed:   d("kv_blocks_used", "Paged KV cache blocks in use."),
		kvTotal:  d("kv_blocks_total", "Paged KV cache blocks in all."),
		hits:     d("prefix_cache_hits_total", "Prefix-cache lookups that found cached blocks."),
		lookups:  d("prefix_cache_lookups_total", "Prefix-cache lookups."),
		preempt:  d("preemptions_total", "Sequences preempted to free KV blocks."),
		genToks:  d("generation_tokens_total", "Tokens generated (rate() gives tokens per second)."),
		promptTk: d("prompt_tokens_total", "Prompt tokens processed."),
	}
}

func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.queued, c.running, c.kvUsed, c.kvTotal, c.hits, c.lookups, c.preempt, c.genToks, c.promptTk} {
		ch <- d
	}
}

func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.gen.Stats()
	g := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	n := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	g(c.queued, float64(st.Queued))
	g(c.running, float64(st.Running))
	g(c.kvUsed, float64(st.KVBlocksUsed))
	g(c.kvTotal, float64(st.KVBlocksTotal))
	n(c.hits, float64(st.PrefixHits))
	n(c.lookups, float64(st.PrefixLookups))
	n(c.preempt, float64(st.Preemptions))
	n(c.genToks, float64(st.GeneratedTokens))
	n(c.promptTk, float64(st.PromptTokens))
}

func newMetrics(reg prometheus.Registerer, gat prometheus.Gatherer, g Generator) (*metrics, error) {
	m := &metrics{
		gatherer: gat,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gotpu_http_requests_total",
			Help: "HTTP requests by endpoint and status code."}, []string{"endpoint", "status"}),
		ttft: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gotpu_time_to_first_token_seconds",
			Help:    "Time from submitting a sequence to its first token.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}}),
		itl: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gotpu_inter_token_latency_seconds",
			Help:    "Time between consecutive tokens of a sequence.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gotpu_request_duration_seconds",
			Help:    "Duration of completion and embedding requests.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}}, []string{"endpoint"}),
	}
	cs := []prometheus.Collector{m.requests, m.ttft, m.itl, m.duration}
	if g != nil {
		cs = append(cs, newStatsCollector(g))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("serve: registering metrics: %w", err)
		}
	}
	return m, nil
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) error {
	promhttp.HandlerFor(s.metrics.gatherer, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	return nil
}
