//go:build pjrt

package serve

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gotpu/gotpu/backend/pjrt"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/models"
)

// TestEngineXLA serves a tiny Llama on XLA's CPU plugin through PJRT
// (tools/pjrt/ci.sh): continuous batching over the paged KV cache with
// compiled steps gives the tokens the cpu engine gives, and after the
// first steps of each shape bucket the steps are replayed programs, not
// traced again.
func TestEngineXLA(t *testing.T) {
	if err := pjrt.Open("xla"); err != nil {
		if os.Getenv("GOTPU_PJRT_REQUIRE") == "1" {
			t.Fatalf("xla plugin required: %v", err)
		}
		t.Skipf("xla plugin not available (run tools/pjrt/fetch.sh): %v", err)
	}
	load := func(dev device.Device) *models.CausalLM {
		m, err := models.Load(filepath.Join("../testdata/models", "llama"), models.Options{Device: dev, DType: dtype.F32})
		if err != nil {
			t.Fatal(err)
		}
		m.LM.Compiled = true
		return m.LM
	}
	cpu, xla := load(device.Device{}), load(device.Device{Type: "xla"})
	reqs := randomRequests(3, 6, 20, cpu.Config.VocabSize)
	opts := EngineOptions{BlockSize: 4, PrefillChunk: 16}
	want := runAll(t, newEngine(t, cpu, opts), reqs)
	got := runAll(t, newEngine(t, xla, opts), reqs)
	for i := range reqs {
		if !slices.Equal(got[i].tokens, want[i].tokens) {
			t.Errorf("request %d: xla %v, cpu %v", i, got[i].tokens, want[i].tokens)
		}
	}
	// The same requests make the same step shapes: xla traces and replays
	// exactly as often as cpu does (each shape traced once, then replayed).
	xs, cs := xla.CompileStats(), cpu.CompileStats()
	t.Logf("xla compile stats %+v; cpu %+v", xs, cs)
	if xs.Replays == 0 || xs.Traces != cs.Traces || xs.Replays != cs.Replays {
		t.Errorf("xla steps: %d traced, %d replayed; cpu %d traced, %d replayed", xs.Traces, xs.Replays, cs.Traces, cs.Replays)
	}
}
