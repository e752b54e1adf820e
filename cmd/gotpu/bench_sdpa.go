package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"

	"github.com/spf13/pflag"

	"github.com/gotpu/gotpu/backend/cpu"
	"github.com/gotpu/gotpu/bench/kernels"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/tensor"
)

// `gotpu bench sdpa`: the cpu backend's flash-style
// scaled_dot_product_attention kernel against PyTorch (2.x's fused
// F.scaled_dot_product_attention; on 1.13, which has none, the explicit
// softmax(q·kᵀ·scale)·v) and against gotpu's own decomposition, with peak
// memory.

// sdpaBenchOpts are the case's own flags.
type sdpaBenchOpts struct {
	heads, dim, batch int
	causal, decomp    bool
}

func init() {
	var o sdpaBenchOpts
	registerBenchCase(benchCase{
		Name: "sdpa",
		Description: "scaled_dot_product_attention [batch, heads, L, dim] (L = S = --size), flash kernel; " +
			"torch: F.scaled_dot_product_attention (2.x; explicit softmax(q@kᵀ*scale)@v on 1.13, which has none)",
		DTypes:      []string{kernels.F32},
		DefaultSize: 2048,
		SizeHelp:    "L = S, the query and key sequence length",
		Refs:        []string{"torch"},
		Flags: func(fs *pflag.FlagSet) {
			fs.IntVar(&o.heads, "heads", 8, "attention heads")
			fs.IntVar(&o.dim, "dim", 64, "head dimension E (of queries, keys and values)")
			fs.IntVar(&o.batch, "batch", 1, "batch size")
			fs.BoolVar(&o.causal, "causal", false, "is_causal (torch: masked_fill of the upper triangle with -inf)")
			fs.BoolVar(&o.decomp, "decomposed", true, "also time gotpu's op-by-op decomposition (impl gotpu-decomposed, what runs when gradients are needed)")
		},
		Run: func(ctx context.Context, cfg *benchConfig, run *benchRun) error {
			return runSDPABench(ctx, cfg, run, o)
		},
	})
}

// sdpaBenchWork is the work of one call: 2·L·S·E flops for q·kᵀ and as
// many for the weights times v (about half of each under is_causal), and
// the bytes of q, k, v and the output.
func sdpaBenchWork(o sdpaBenchOpts, n int) kernels.Work {
	bh, l, e := float64(o.batch*o.heads), float64(n), float64(o.dim)
	pairs := l * l
	if o.causal {
		pairs = l * (l + 1) / 2
	}
	return kernels.Work{Flops: bh * 4 * pairs * e, Bytes: bh * 4 * l * e * 4}
}

func runSDPABench(ctx context.Context, cfg *benchConfig, run *benchRun, o sdpaBenchOpts) error {
	n := cfg.Size
	if o.heads < 1 || o.dim < 1 || o.batch < 1 {
		return fmt.Errorf("--heads, --dim and --batch must be positive")
	}
	run.Shape = fmt.Sprintf("q,k,v [%d,%d,%d,%d] causal=%v", o.batch, o.heads, n, o.dim, o.causal)
	dev := tensor.MustDevice("cpu")
	var q, k, v *tensor.Tensor
	if err := tensor.Catch(func() {
		r := rand.New(rand.NewPCG(uint64(n), 7))
		mk := func() *tensor.Tensor {
			d := make([]float32, o.batch*o.heads*n*o.dim)
			for i := range d {
				d[i] = float32(r.NormFloat64())
			}
			return tensor.FromSlice(dev, d, o.batch, o.heads, n, o.dim)
		}
		q, k, v = mk(), mk(), mk()
	}); err != nil {
		return fmt.Errorf("sdpa inputs: %w", err)
	}
	defer func() { q.Free(); k.Free(); v.Free() }()
	opts := tensor.SDPAOpts{IsCausal: o.causal}
	kernel := func() (*tensor.Tensor, error) {
		var out *tensor.Tensor
		err := tensor.Catch(func() { out = tensor.ScaledDotProductAttention(q, k, v, opts) })
		return out, err
	}
	// The decomposition is what dispatch runs when q requires grad (the op
	// has no VJP of its own); the recorded graph is dropped with the output.
	qg := q.Detach().SetRequiresGrad(true)
	decomposed := func() (*tensor.Tensor, error) {
		var out *tensor.Tensor
		err := tensor.Catch(func() { out = tensor.ScaledDotProductAttention(qg, k, v, opts) })
		return out, err
	}
	stepper := func(impl string, f func() (*tensor.Tensor, error), ref bool) *kernels.Stepper {
		return &kernels.Stepper{Impl: impl, DType: kernels.F32, Ref: ref, Work: sdpaBenchWork(o, n), Run: func() error {
			out, err := f()
			if err != nil {
				return fmt.Errorf("%s: %w", impl, err)
			}
			err = tensor.Sync(dev)
			out.Free()
			return err
		}}
	}
	steps := []*kernels.Stepper{stepper("gotpu", kernel, false)}
	if err := sdpaPeakNote(run, "gotpu", kernel); err != nil {
		return err
	}
	if o.decomp {
		steps = append(steps, stepper("gotpu-decomposed", decomposed, true))
		if err := sdpaPeakNote(run, "gotpu-decomposed", decomposed); err != nil {
			return err
		}
	}
	run.Note("torch runs F.scaled_dot_product_attention(q, k, v, is_causal=--causal) on PyTorch 2.x (its fused CPU kernel); " +
		"PyTorch 1.13 has none and runs the explicit softmax(q @ k.transpose(-2,-1) * scale) @ v (masked_fill -inf above the diagonal)")
	args := []string{"--heads", fmt.Sprint(o.heads), "--dim", fmt.Sprint(o.dim), "--batch", fmt.Sprint(o.batch)}
	if o.causal {
		args = append(args, "--causal")
	}
	return cfg.Measure(ctx, run, steps, []string{"torch"}, args, func(string) kernels.Work { return sdpaBenchWork(o, n) })
}

// sdpaPeakNote runs f once and notes the cpu device's peak memory above
// what was allocated before (the output included) and the Go heap it
// allocated (the kernel's packed K, V and blocks live there).
func sdpaPeakNote(run *benchRun, impl string, f func() (*tensor.Tensor, error)) error {
	be, err := device.Lookup("cpu")
	if err != nil {
		return err
	}
	cb, ok := be.(*cpu.Backend)
	if !ok {
		return fmt.Errorf("cpu backend is %T", be)
	}
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cb.ResetPeakMemory(0)
	base := cb.MemStats(0).Allocated
	out, err := f()
	if err != nil {
		return fmt.Errorf("%s: %w", impl, err)
	}
	peak := cb.MemStats(0).PeakAllocated - base
	runtime.ReadMemStats(&m1)
	outBytes := out.Numel() * 4
	out.Free()
	run.Note("%s peak memory: device %.1f MiB (output %.1f MiB), Go heap allocated %.1f MiB", impl,
		float64(peak)/(1<<20), float64(outBytes)/(1<<20), float64(m1.TotalAlloc-m0.TotalAlloc)/(1<<20))
	return nil
}
