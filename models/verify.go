package models

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

// VerifyConfig is one way of running a model that Verify checks.
type VerifyConfig struct {
	// Device runs the model.
	Device device.Device `json:"-"`
	// Mode is "strict", "fused" or "compiled".
	Mode string `json:"mode"`
	// DType is the compute dtype ("f32", "bf16", "f16").
	DType dtype.DType `json:"-"`
	// Precision is the f32 matmul precision ("highest", "high", "medium").
	Precision string `json:"precision"`
}

// VerifyResult is the comparison of one configuration with the f64
// reference.
type VerifyResult struct {
	Device    string  `json:"device"`
	Mode      string  `json:"mode"`
	DType     string  `json:"dtype"`
	Precision string  `json:"precision"`
	MaxAbs    float64 `json:"max_abs_diff"`
	// MaxRel is the largest |got - ref| / |ref| over entries with |ref|
	// above 1e-3 of the largest |ref| (smaller ones say nothing relative).
	MaxRel float64 `json:"max_rel_diff"`
	// ATol and RTol are torch.testing.assert_close's defaults for the
	// configuration's effective precision. Within reports whether every
	// entry satisfies |got - ref| <= ATol + RTol·(|ref| + max|ref|): logits
	// at the end of a network carry rounding error relative to their
	// scale, not to each entry (a logit near 0 is as uncertain as its
	// neighbours), so the relative term also counts the largest |ref|.
	ATol    float64 `json:"atol"`
	RTol    float64 `json:"rtol"`
	Within  bool    `json:"within_tolerance"`
	Seconds float64 `json:"seconds"`
	// Error is set when the configuration failed to run.
	Error string `json:"error,omitempty"`
}

// Tolerance returns torch.testing.assert_close's default (atol, rtol) for
// a dtype, with f32 at a reduced matmul precision judged by the precision
// it really has: "medium" (one bf16 pass) as bf16, "high" (three passes,
// about 16 mantissa bits) as f16.
func Tolerance(dt dtype.DType, precision string) (atol, rtol float64) {
	switch {
	case dt == dtype.BF16 || dt == dtype.F32 && precision == "medium":
		return 1e-5, 1.6e-2
	case dt == dtype.F16 || dt == dtype.F32 && precision == "high":
		return 1e-5, 1e-3
	case dt == dtype.F64:
		return 1e-7, 1e-7
	}
	return 1e-5, 1.3e-6
}

// VerifyConfigs lists every mode and precision on each device: f32 at the
// three matmul precisions and bf16, each in Strict, Fused and compiled form.
func VerifyConfigs(devs []device.Device) []VerifyConfig {
	var out []VerifyConfig
	for _, d := range devs {
		for _, mode := range []string{"strict", "fused", "compiled"} {
			for _, p := range []string{"highest", "high", "medium"} {
				out = append(out, VerifyConfig{Device: d, Mode: mode, DType: dtype.F32, Precision: p})
			}
			out = append(out, VerifyConfig{Device: d, Mode: mode, DType: dtype.BF16, Precision: "highest"})
		}
	}
	return out
}

// Verify runs a causal LM's logits on prompt ids in every configuration
// and compares each with the model run in f64 on cpu in Strict mode, as
// TorchTPU's model check does. load builds the model for a device and
// dtype (Load with options, typically). The process's tensor mode and
// matmul precision are restored before it returns.
func Verify(ctx context.Context, load func(device.Device, dtype.DType) (*Model, error), ids []int, cfgs []VerifyConfig) ([]VerifyResult, error) {
	ref, err := verifyRun(load, VerifyConfig{Device: device.Device{Type: "cpu"}, Mode: "strict", DType: dtype.F64, Precision: "highest"}, ids)
	if err != nil {
		return nil, fmt.Errorf("f64 reference: %w", err)
	}
	var out []VerifyResult
	for _, c := range cfgs {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		r := VerifyResult{Device: c.Device.String(), Mode: c.Mode, DType: c.DType.String(), Precision: c.Precision}
		r.ATol, r.RTol = Tolerance(c.DType, c.Precision)
		start := time.Now()
		got, err := verifyRun(load, c, ids)
		r.Seconds = time.Since(start).Seconds()
		if err != nil {
			r.Error = err.Error()
			out = append(out, r)
			continue
		}
		r.MaxAbs, r.MaxRel, r.Within = compareLogits(got, ref, r.ATol, r.RTol)
		out = append(out, r)
	}
	return out, nil
}

// compareLogits returns the largest absolute and relative differences and
// whether all entries are within atol + rtol·|ref|.
func compareLogits(got, ref []float32, atol, rtol float64) (maxAbs, maxRel float64, within bool) {
	big := 0.0
	for _, v := range ref {
		big = math.Max(big, math.Abs(float64(v)))
	}
	within = len(got) == len(ref)
	if !within {
		return math.Inf(1), math.Inf(1), false
	}
	for i := range ref {
		r := float64(ref[i])
		d := math.Abs(float64(got[i]) - r)
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		maxAbs = math.Max(maxAbs, d)
		if math.Abs(r) > 1e-3*big {
			maxRel = math.Max(maxRel, d/math.Abs(r))
		}
		if !(d <= atol+rtol*(math.Abs(r)+big)) {
			within = false
		}
	}
	return maxAbs, maxRel, within
}

// verifyRun loads the model for one configuration and returns its logits
// for ids (all positions, as f32 on the host).
func verifyRun(load func(device.Device, dtype.DType) (*Model, error), c VerifyConfig, ids []int) (logits []float32, err error) {
	mode, compiled, err := ParseMode(c.Mode)
	if err != nil {
		return nil, err
	}
	oldMode := tensor.SetMode(mode)
	defer tensor.SetMode(oldMode)
	var oldPrec string
	if err := tensor.Catch(func() { oldPrec = tensor.SetMatmulPrecision(c.Precision) }); err != nil {
		return nil, err
	}
	defer tensor.SetMatmulPrecision(oldPrec)
	m, err := load(c.Device, c.DType)
	if err != nil {
		return nil, err
	}
	if m.LM == nil {
		return nil, fmt.Errorf("%w: verify needs a causal language model", ErrUnsupported)
	}
	m.LM.Compiled = compiled
	logits, _, err = m.LM.ForwardLogits([][]int{ids}, 0)
	return logits, err
}

// ParseMode reads an execution mode name — "strict" (or ""), "debug",
// "fused" or "compiled" — as the tensor mode to run in and whether the
// model's steps run as compiled programs (which run in Strict).
func ParseMode(s string) (mode tensor.Mode, compiled bool, err error) {
	switch s {
	case "strict", "":
		return tensor.Strict, false, nil
	case "debug":
		return tensor.Debug, false, nil
	case "fused":
		return tensor.Fused, false, nil
	case "compiled":
		return tensor.Strict, true, nil
	}
	return tensor.Strict, false, fmt.Errorf("%w: mode %q (want strict, debug, fused or compiled)", ErrUnsupported, s)
}
