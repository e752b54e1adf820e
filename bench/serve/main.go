// Command serve measures serve.Engine's aggregate decode throughput at
// several numbers of concurrent streams against models.Generate on the
// same prompts (one left-padded batch of the same size, the reference),
// interleaved rep by rep, and prints the medians and their ratios.
//
//	go run ./bench/serve -model ~/.cache/gotpu-testdata/gguf/SmolLM2-135M-Instruct.Q4_1.gguf \
//	    -streams 1,8,32 -prompt 32 -tokens 32 -reps 3
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gotpu/gotpu/backend/cpu"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/models"
	"github.com/gotpu/gotpu/models/sample"
	"github.com/gotpu/gotpu/serve"
)

func main() {
	home, _ := os.UserHomeDir()
	modelPath := flag.String("model", filepath.Join(home, ".cache/gotpu-testdata/gguf/SmolLM2-135M-Instruct.Q4_1.gguf"), "GGUF file or model directory")
	streams := flag.String("streams", "1,8,32", "concurrent streams to measure")
	promptLen := flag.Int("prompt", 32, "prompt tokens per stream")
	tokens := flag.Int("tokens", 32, "new tokens per stream")
	reps := flag.Int("reps", 3, "repetitions (medians are reported)")
	compiled := flag.Bool("compiled", false, "compiled steps (one program per step shape)")
	blocks := flag.Int("blocks", 0, "KV blocks of 16 tokens (0: the engine's default, 256 MiB)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile here")
	keep := flag.Bool("keep", false, "keep a GGUF file's quantized linear weights (gotpu --dtype keep) instead of f32")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench/serve:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(*modelPath, *streams, *promptLen, *tokens, *reps, *blocks, *compiled, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "bench/serve:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(path, streams string, promptLen, tokens, reps, blocks int, compiled, keep bool) error {
	m, err := models.LoadPath(path, models.Options{DType: dtype.F32, KeepQuantized: keep})
	if err != nil {
		return err
	}
	lm := m.LM
	lm.Compiled = compiled
	fmt.Printf("model %s (f32, keep quantized=%v, compiled=%v), cpu level %s, prompt %d, %d new tokens per stream, %d reps\n",
		filepath.Base(path), keep, compiled, cpu.CPULevel(), promptLen, tokens, reps)
	fmt.Println("| streams | engine gen tok/s | engine decode tok/s | Generate gen tok/s | engine/Generate |")
	fmt.Println("|---:|---:|---:|---:|---:|")
	for _, f := range strings.Split(streams, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return fmt.Errorf("bad -streams entry %q", f)
		}
		e, err := serve.NewEngine(lm, serve.EngineOptions{MaxBatch: n, NumBlocks: blocks, DisablePrefixCache: true})
		if err != nil {
			return err
		}
		var eng, dec, ref []float64
		for rep := 0; rep <= reps; rep++ { // rep 0 warms up (compiles)
			prompts := makePrompts(uint64(rep), n, promptLen, lm.Config.VocabSize)
			g, d, err := engineRun(e, prompts, tokens)
			if err != nil {
				return err
			}
			t0 := time.Now()
			res, err := lm.Generate(context.Background(), prompts, models.GenerateOptions{MaxNewTokens: tokens})
			if err != nil {
				return err
			}
			r := float64(n*len(res.Tokens[0])) / time.Since(t0).Seconds()
			if rep > 0 {
				eng, dec, ref = append(eng, g), append(dec, d), append(ref, r)
			}
		}
		if err := e.Close(); err != nil {
			return err
		}
		fmt.Printf("| %d | %.1f | %.1f | %.1f | %.2f |\n", n, median(eng), median(dec), median(ref), median(eng)/median(ref))
	}
	return nil
}

func makePrompts(seed uint64, n, l, vocab int) [][]int {
	rng := rand.New(rand.NewPCG(seed, 99))
	out := make([][]int, n)
	for i := range out {
		for range l {
			out[i] = append(out[i], rng.IntN(vocab))
		}
	}
	return out
}

// engineRun submits every prompt at once and returns the generated tokens
// per second end to end and after the last stream's first token (decode).
func engineRun(e *serve.Engine, prompts [][]int, tokens int) (gen, decode float64, err error) {
	t0 := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(prompts))
	stamps := make([][]time.Time, len(prompts))
	for i, p := range prompts {
		ch, err := e.Submit(context.Background(), serve.Request{ID: strconv.Itoa(i), Prompt: p, MaxTokens: tokens, Sampling: sample.Greedy()})
		if err != nil {
			return 0, 0, err
		}
		wg.Go(func() {
			for ev := range ch {
				if ev.Err != nil {
					errs[i] = ev.Err
				}
				if ev.Token >= 0 {
					stamps[i] = append(stamps[i], time.Now())
				}
			}
		})
	}
	wg.Wait()
	end := time.Now()
	var firstAll time.Time
	total := 0
	for i := range prompts {
		if errs[i] != nil {
			return 0, 0, errs[i]
		}
		total += len(stamps[i])
		if len(stamps[i]) > 0 && stamps[i][0].After(firstAll) {
			firstAll = stamps[i][0]
		}
	}
	// Tokens after the last stream's first token: every stream decodes.
	after := 0
	for i := range prompts {
		for _, t := range stamps[i] {
			if t.After(firstAll) {
				after++
			}
		}
	}
	return float64(total) / end.Sub(t0).Seconds(), float64(after) / end.Sub(firstAll).Seconds(), nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
