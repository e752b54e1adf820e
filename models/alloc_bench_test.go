package models

import (
	"context"
	"runtime"
	"testing"
)

// BenchmarkDecodeAllocs reports what one compiled decode step of
// SmolLM2-135M Q4_1 (weights kept quantized) allocates, on GOMAXPROCS
// threads: each iteration is a 65-token generation after a 128-token
// prompt, less a 1-token one (the prompt's prefill), divided by its 64
// decode steps (runtime.MemStats: objects and bytes). Run it with
//
//	go test -run XXX -bench DecodeAllocs -benchtime 3x ./models
//
// (tools/gguf/fetch.sh fetches the file). Garbage per step is time the
// collector takes from a step that is otherwise memory-bound.
func BenchmarkDecodeAllocs(b *testing.B) {
	m, err := LoadGGUF(ggufFile(b, "SmolLM2-135M-Instruct.Q4_1.gguf"), Options{KeepQuantized: true})
	if err != nil {
		b.Fatal(err)
	}
	lm := m.LM
	lm.Compiled = true
	prompt := make([]int, 128)
	for i := range prompt {
		prompt[i] = (17 + 7919*i) % lm.Config.VocabSize
	}
	gen := func(n int) (objects, bytes uint64) {
		var a, z runtime.MemStats
		runtime.ReadMemStats(&a)
		if _, err := lm.Generate(context.Background(), [][]int{prompt}, GenerateOptions{MaxNewTokens: n}); err != nil {
			b.Fatal(err)
		}
		runtime.ReadMemStats(&z)
		return z.Mallocs - a.Mallocs, z.TotalAlloc - a.TotalAlloc
	}
	gen(1) // trace and compile the programs of both cache sizes
	gen(65)
	var objs, bytes float64
	for b.Loop() {
		o1, b1 := gen(1)
		o, by := gen(65)
		objs += float64(o) - float64(o1)
		bytes += float64(by) - float64(b1)
	}
	b.ReportMetric(objs/float64(b.N)/64, "allocs/step")
	b.ReportMetric(bytes/float64(b.N)/64, "B/step")
}
