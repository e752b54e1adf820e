// Command tokenizer times gotpu's pure-Go hf/tokenizer on the tokenizer
// benchmark corpus, for comparison with Hugging Face tokenizers and tiktoken
// (bench/tokenizer/run.sh runs all three and prints the ratios).
//
// Usage:
//
//	GOMAXPROCS=1 tokenizer -corpus corpus.jsonl -tok gpt2=path/tokenizer.json [-tok ...] [-reps 5] [-json]
//
// The corpus is one JSON string per line (a document), as written by
// make_corpus.py. Each tokenizer encodes the whole corpus with
// EncodeBatch(docs, addSpecial=false): one untimed warm-up, then -reps timed
// runs; the median is reported. MB/s is UTF-8 input bytes / 10^6 / median
// seconds. ids_sha256 is SHA-256 over every document's ids joined by "," with
// "\n" after each document, the same digest bench_ref.py computes for HF's
// ids, so equal digests mean identical token ids.
//
// The -json output is one object:
//
//	{"go": {"version", "gomaxprocs"}, "corpus": {"documents", "bytes"},
//	 "gotpu": {NAME: {"load_s", "runs_s", "median_s", "mb_per_s",
//	                  "cpu_runs_s", "cpu_median_s", "mb_per_cpu_s", "tokens", "ids_sha256"}}}
//
// The cpu_* values use the process's CPU time (getrusage) instead of wall
// time, which on a loaded machine is closer to what an idle one would show.
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// errUsage marks command-line mistakes.
var errUsage = errors.New("usage")

// encoder is the part of the tokenizer API the benchmark needs.
type encoder interface {
	// encodeBatch returns the ids of every text, without special tokens.
	encodeBatch(texts []string) ([][]int, error)
}

// tokFlag collects repeated -tok name=path flags in order.
type tokFlag struct{ names, paths []string }

func (t *tokFlag) String() string { return strings.Join(t.names, ",") }

func (t *tokFlag) Set(v string) error {
	name, path, ok := strings.Cut(v, "=")
	if !ok || name == "" || path == "" {
		return fmt.Errorf("%w: -tok wants name=path, got %q", errUsage, v)
	}
	t.names = append(t.names, name)
	t.paths = append(t.paths, path)
	return nil
}

// result is one tokenizer's measurement. The cpu_* fields use the process's
// CPU time instead of wall time: on a loaded shared machine they stay close
// to what an idle machine's wall clock would show.
type result struct {
	LoadS      float64   `json:"load_s"`
	RunsS      []float64 `json:"runs_s"`
	MedianS    float64   `json:"median_s"`
	MBPerS     float64   `json:"mb_per_s"`
	CPURunsS   []float64 `json:"cpu_runs_s"`
	CPUMedianS float64   `json:"cpu_median_s"`
	MBPerCPUS  float64   `json:"mb_per_cpu_s"`
	Tokens     int       `json:"tokens"`
	IDsSHA256  string    `json:"ids_sha256"`
}

// report is the -json output.
type report struct {
	Go struct {
		Version    string `json:"version"`
		GOMAXPROCS int    `json:"gomaxprocs"`
	} `json:"go"`
	Corpus struct {
		Documents int `json:"documents"`
		Bytes     int `json:"bytes"`
	} `json:"corpus"`
	Gotpu map[string]result `json:"gotpu"`
}

// readCorpus reads one JSON string per line; blank lines are skipped.
func readCorpus(r io.Reader) ([]string, error) {
	br := bufio.NewReader(r)
	var docs []string
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if len(strings.TrimSpace(string(b))) > 0 {
			var s string
			if jerr := json.Unmarshal(b, &s); jerr != nil {
				return nil, fmt.Errorf("corpus line %d: %w", line, jerr)
			}
			docs = append(docs, s)
		}
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("corpus line %d: %w", line, err)
		}
	}
}

// idsDigest is SHA-256 over each document's ids joined by "," plus "\n".
func idsDigest(batch [][]int) string {
	h := sha256.New()
	var buf []byte
	for _, ids := range batch {
		buf = buf[:0]
		for i, id := range ids {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendInt(buf, int64(id), 10)
		}
		buf = append(buf, '\n')
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// median of xs (mean of the middle two for even lengths); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// measure runs one warm-up and reps timed encodes of docs.
func measure(enc encoder, docs []string, nbytes, reps int) (result, error) {
	ids, err := enc.encodeBatch(docs) // warm-up, and the ids for the digest
	if err != nil {
		return result{}, err
	}
	r := result{IDsSHA256: idsDigest(ids)}
	for _, x := range ids {
		r.Tokens += len(x)
	}
	for i := 0; i < reps; i++ {
		c0, t0 := cpuSeconds(), time.Now()
		out, err := enc.encodeBatch(docs)
		r.RunsS = append(r.RunsS, time.Since(t0).Seconds())
		r.CPURunsS = append(r.CPURunsS, cpuSeconds()-c0)
		if err != nil {
			return result{}, err
		}
		runtime.KeepAlive(out)
	}
	r.MedianS = median(r.RunsS)
	if r.MedianS > 0 {
		r.MBPerS = float64(nbytes) / 1e6 / r.MedianS
	}
	r.CPUMedianS = median(r.CPURunsS)
	if r.CPUMedianS > 0 {
		r.MBPerCPUS = float64(nbytes) / 1e6 / r.CPUMedianS
	}
	return r, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tokenizer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	corpus := fs.String("corpus", "", "benchmark corpus: one JSON string per line")
	reps := fs.Int("reps", 5, "timed repetitions (median reported)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	var toks tokFlag
	fs.Var(&toks, "tok", "name=path/to/tokenizer.json (repeatable)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if *corpus == "" || len(toks.names) == 0 || *reps < 1 {
		return fmt.Errorf("%w: need -corpus, at least one -tok and -reps >= 1", errUsage)
	}
	f, err := os.Open(*corpus)
	if err != nil {
		return fmt.Errorf("open corpus: %w", err)
	}
	docs, err := readCorpus(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", *corpus, err)
	}
	var rep report
	rep.Go.Version = runtime.Version()
	rep.Go.GOMAXPROCS = runtime.GOMAXPROCS(0)
	rep.Corpus.Documents = len(docs)
	for _, d := range docs {
		rep.Corpus.Bytes += len(d)
	}
	rep.Gotpu = map[string]result{}
	for i, name := range toks.names {
		t0 := time.Now()
		enc, err := loadTokenizer(toks.paths[i])
		if err != nil {
			return fmt.Errorf("load %s: %w", name, err)
		}
		load := time.Since(t0).Seconds()
		r, err := measure(enc, docs, rep.Corpus.Bytes, *reps)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		r.LoadS = load
		rep.Gotpu[name] = r
		fmt.Fprintf(stderr, "gotpu %s: %.2f MB/s\n", name, r.MBPerS)
	}
	if *asJSON {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return fmt.Errorf("encode report: %w", err)
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	for _, name := range toks.names {
		r := rep.Gotpu[name]
		fmt.Fprintf(stdout, "%-10s %8.2f MB/s  median %.3fs  %d tokens  load %.3fs\n", name, r.MBPerS, r.MedianS, r.Tokens, r.LoadS)
	}
	return nil
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "tokenizer bench: %v\n", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
