package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gotpu/gotpu"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/models"
)

// verifyOutput is `gotpu verify --json`.
type verifyOutput struct {
	Model     string                `json:"model"`
	PromptIDs []int                 `json:"prompt_ids"`
	Reference string                `json:"reference"`
	Results   []models.VerifyResult `json:"results"`
	AllWithin bool                  `json:"all_within_tolerance"`
}

// defaultVerifyText is the prompt verify tokenizes when none is given.
const defaultVerifyText = "The quick brown fox jumps over the lazy dog. In 1905, Einstein wrote"

func newVerifyCmd() *cobra.Command {
	var (
		path, prompt, ids, devs string
		asJSON                  bool
	)
	cmd := &cobra.Command{
		Use:   "verify --model PATH [--devices cpu,xla] [--prompt TEXT | --ids 1,2,3] [--json]",
		Short: "Check a model in every mode and precision against an f64 run",
		Long: `Run the model's logits over a prompt in every mode (strict, fused, compiled)
and precision (f32 with matmul precision highest, high and medium; bf16) on
every available device (or --devices), and compare each with the same model
run in f64 on cpu. For each configuration it reports the largest absolute and
relative differences and whether they are within torch.testing's default
tolerances for the configuration's precision (bf16 and medium: rtol 1.6e-2;
f16 and high: 1e-3; f32: 1.3e-6; atol 1e-5), with the relative term taken
over |ref| + max|ref| since logits carry error relative to their scale.

The prompt is --ids, or --prompt tokenized with the model's tokenizer (a
fixed English sentence by default; token ids 1..16 without a tokenizer).

With --json one object is printed, with these stable keys: model,
prompt_ids, reference ("cpu f64 strict"), all_within_tolerance, and results:
one object per configuration with device, mode, dtype, precision,
max_abs_diff, max_rel_diff, atol, rtol, within_tolerance, seconds and, when
the configuration failed to run, error. The command exits non-zero when a
configuration fails to run; being outside tolerance is reported, not an
error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if path == "" {
				return errors.New("verify: --model PATH is required")
			}
			load := func(d device.Device, dt dtype.DType) (*models.Model, error) {
				return models.LoadPath(path, models.Options{Device: d, DType: dt})
			}
			m, err := load(device.Device{Type: "cpu"}, dtype.F32)
			if err != nil {
				return fmt.Errorf("verify: %w", err)
			}
			if m.LM == nil {
				return fmt.Errorf("verify: %s is not a causal language model", path)
			}
			var in []int
			switch {
			case ids != "":
				if in, err = parseIDs(ids); err != nil {
					return fmt.Errorf("verify: %w", err)
				}
			case m.Tokenizer != nil:
				text := prompt
				if text == "" {
					text = defaultVerifyText
				}
				e, err := m.Tokenizer.TryEncode(text, true)
				if err != nil {
					return fmt.Errorf("verify: %w", err)
				}
				in = e.IDs
			default:
				for i := 1; i <= 16; i++ {
					in = append(in, i%m.Config.VocabSize)
				}
			}
			var dl []device.Device
			if devs == "" {
				dl = availableDevices()
			} else {
				for _, n := range strings.Split(devs, ",") {
					d, err := gotpu.Device(strings.TrimSpace(n))
					if err != nil {
						return fmt.Errorf("verify: %w", err)
					}
					dl = append(dl, d)
				}
			}
			res, err := models.Verify(cmd.Context(), load, in, models.VerifyConfigs(dl))
			if err != nil {
				return fmt.Errorf("verify: %w", err)
			}
			out := verifyOutput{Model: path, PromptIDs: in, Reference: "cpu f64 strict", Results: res, AllWithin: true}
			failed := 0
			for _, r := range res {
				out.AllWithin = out.AllWithin && r.Within
				if r.Error != "" {
					failed++
				}
			}
			w := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				if err := enc.Encode(out); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(w, "%s: %d prompt tokens, against cpu f64 strict\n", path, len(in))
				fmt.Fprintf(w, "%-8s %-9s %-5s %-8s %12s %12s %s\n", "device", "mode", "dtype", "matmul", "max abs", "max rel", "within")
				for _, r := range res {
					status := fmt.Sprint(r.Within)
					if r.Error != "" {
						status = "error: " + r.Error
					}
					fmt.Fprintf(w, "%-8s %-9s %-5s %-8s %12.3g %12.3g %s\n", r.Device, r.Mode, r.DType, r.Precision, r.MaxAbs, r.MaxRel, status)
				}
			}
			if failed > 0 {
				return fmt.Errorf("verify: %d configurations failed to run", failed)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "model", "", "model directory")
	cmd.Flags().StringVar(&prompt, "prompt", "", "prompt text (default: a fixed sentence)")
	cmd.Flags().StringVar(&ids, "ids", "", "comma-separated prompt token ids")
	cmd.Flags().StringVar(&devs, "devices", "", "comma-separated devices (default: every available device but meta)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

// availableDevices lists device 0 of every registered backend that holds
// data (meta does not).
func availableDevices() []device.Device {
	var out []device.Device
	types := device.Types()
	slices.Sort(types)
	for _, t := range types {
		if t == "meta" {
			continue
		}
		if d, err := gotpu.Device(t); err == nil {
			out = append(out, d)
		}
	}
	return out
}

func init() {
	rootCmd.AddCommand(newVerifyCmd())
}
