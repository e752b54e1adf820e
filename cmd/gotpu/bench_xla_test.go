//go:build pjrt

package main

import (
	"encoding/json"
	"testing"

	"github.com/gotpu/gotpu/backend/pjrt"
)

// TestXLABench runs `gotpu bench xla` at tiny sizes and checks its JSON.
func TestXLABench(t *testing.T) {
	if err := pjrt.Open("xla"); err != nil {
		t.Skipf("no XLA CPU plugin: %v", err)
	}
	out, err := runBench(t, "xla", "--gemm-size", "32", "--chain-size", "1000", "--reps", "1", "--warmup", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep xlaReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if len(rep.Results) != 6 {
		t.Fatalf("%d results, want 3 parts x 2 devices: %s", len(rep.Results), out)
	}
	for _, k := range []string{"cpu_over_xla_gemm", "cpu_over_xla_chain", "cpu_over_xla_mnist_step"} {
		if rep.Ratios[k] <= 0 {
			t.Errorf("ratio %s missing: %s", k, out)
		}
	}
}
