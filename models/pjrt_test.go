//go:build pjrt

package models

import (
	"os"
	"testing"

	"github.com/gotpu/gotpu/backend/pjrt"
	"github.com/gotpu/gotpu/device"
)

// TestDecoderParityXLA runs every decoder variant on XLA's CPU plugin
// through PJRT (tools/pjrt/ci.sh), in Strict and compiled form, against
// the same transformers references as cpu.
func TestDecoderParityXLA(t *testing.T) {
	if err := pjrt.Open("xla"); err != nil {
		if os.Getenv("GOTPU_PJRT_REQUIRE") == "1" {
			t.Fatalf("xla plugin required: %v", err)
		}
		t.Skipf("xla plugin not available (run tools/pjrt/fetch.sh): %v", err)
	}
	// Each distinct op launch or step compiles an XLA executable: -short
	// (CI) runs the compiled steps of one variant per distinct code path;
	// the full run (GOTPU_PJRT_FULL=1 tools/pjrt/ci.sh) every variant in
	// Strict and compiled form (about 8 minutes on 2 cores).
	if testing.Short() {
		decoderParity(t, device.Device{Type: "xla"}, []runMode{modes[2]}, "gpt2", "llama_rope_yarn", "gemma2", "gemma3", "qwen3")
		return
	}
	decoderParity(t, device.Device{Type: "xla"}, []runMode{modes[0], modes[2]})
}

// TestGGUFParityXLA runs the real SmolLM2-135M GGUF on xla in compiled
// form against transformers (the first two prompts under -short).
func TestGGUFParityXLA(t *testing.T) {
	if err := pjrt.Open("xla"); err != nil {
		if os.Getenv("GOTPU_PJRT_REQUIRE") == "1" {
			t.Fatalf("xla plugin required: %v", err)
		}
		t.Skipf("xla plugin not available (run tools/pjrt/fetch.sh): %v", err)
	}
	cases := 0
	if testing.Short() {
		cases = 2
	}
	ggufParityOn(t, "smollm2", device.Device{Type: "xla"}, []runMode{modes[2]}, cases)
}

// TestEncoderParityXLA runs the tiny BERT and RoBERTa checkpoints on xla
// against transformers, as on cpu.
func TestEncoderParityXLA(t *testing.T) {
	if err := pjrt.Open("xla"); err != nil {
		if os.Getenv("GOTPU_PJRT_REQUIRE") == "1" {
			t.Fatalf("xla plugin required: %v", err)
		}
		t.Skipf("xla plugin not available (run tools/pjrt/fetch.sh): %v", err)
	}
	encoderParity(t, device.Device{Type: "xla"})
}
