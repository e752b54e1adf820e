package kernels

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"

	_ "github.com/gotpu/gotpu/backend/cpu" // registers the cpu device
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// The benchmark dtypes: "f32" is f32 tensors at precision highest, "medium"
// is f32 tensors at precision medium (one bf16 pass, f32 sums), "bf16" is
// bf16 tensors.
const (
	F32    = "f32"
	BF16   = "bf16"
	Medium = "medium"
)

// tensorType maps a benchmark dtype to the tensor element type and the
// matmul precision attribute ("" leaves the process default).
func tensorType(dt string) (dtype.DType, string, error) {
	switch dt {
	case F32:
		return dtype.F32, "highest", nil
	case Medium:
		return dtype.F32, "medium", nil
	case BF16:
		return dtype.BF16, "", nil
	}
	return 0, "", fmt.Errorf("kernels: unknown dtype %q (want f32, bf16 or medium)", dt)
}

func elemSize(dt string) float64 {
	if dt == BF16 {
		return 2
	}
	return 4
}

var cpu = tensor.MustDevice("cpu")

// catch runs f, turning a tensor panic (unsupported op or dtype, shape
// error) into an error.
func catch(f func()) error { return tensor.Catch(f) }

// sync waits for the cpu device (a no-op for the synchronous cpu backend,
// kept so that the timing stays right if the kernels become asynchronous).
func syncCPU() error { return tensor.Sync(cpu) }

// randn returns a [shape] tensor of standard normal values in dt, drawn
// on the host with a fixed seed (gotpu's Philox generator is exact but slow
// for the 64M values of the big cases, and setup is not what is measured).
func randn(dt dtype.DType, shape ...int) (t *tensor.Tensor, err error) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	data := make([]float32, n)
	r := rand.New(rand.NewPCG(uint64(n), 0x9e3779b97f4a7c15))
	for i := range data {
		data[i] = float32(r.NormFloat64())
	}
	err = catch(func() {
		t = tensor.FromSlice(cpu, data, shape...)
		if dt != dtype.F32 {
			f := t
			t = tensor.Apply1("convert", []*tensor.Tensor{f}, op.Attrs{"dtype": dt})
			f.Free()
		}
	})
	if err != nil {
		return nil, fmt.Errorf("randn %v %v: %w", dt, shape, err)
	}
	return t, nil
}

func randns(dt dtype.DType, shapes ...[]int) ([]*tensor.Tensor, error) {
	out := make([]*tensor.Tensor, 0, len(shapes))
	for _, s := range shapes {
		t, err := randn(dt, s...)
		if err != nil {
			freeAll(out...)
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func freeAll(ts ...*tensor.Tensor) {
	for _, t := range ts {
		if t != nil {
			t.Free()
		}
	}
}

// runOp times one tensor computation: f builds its result (and may list
// intermediates to free); every tensor it returns is freed after the sync,
// as a reference-counted runtime would release them.
func runOp(name string, f func() []*tensor.Tensor) func() error {
	return func() error {
		var out []*tensor.Tensor
		if err := catch(func() { out = f() }); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		err := syncCPU()
		freeAll(out...)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}
}

// GEMMWork is the work of an n×n by n×n product: 2n³ flops (bytes are not
// reported: a GEMM is compute-bound).
func GEMMWork(n int) Work { return GEMMShapeWork(n, n, n) }

// GEMMShapeWork is the work of an [m,k] by [k,n] product: 2mkn flops.
func GEMMShapeWork(m, k, n int) Work {
	return Work{Flops: 2 * float64(m) * float64(k) * float64(n)}
}

// measureOne runs a single stepper (Interleave of one) and frees its inputs.
func measureOne(ctx context.Context, t Timing, s *Stepper, done func(), err error) (Result, error) {
	if err != nil {
		return Result{}, err
	}
	defer done()
	res, _, err := Interleave(ctx, t, []*Stepper{s})
	if err != nil {
		return Result{}, err
	}
	return res[0], nil
}

// GEMMStepper prepares gotpu's MatmulPrec of two n×n matrices in dt; done
// frees the inputs.
func GEMMStepper(dt string, n int) (s *Stepper, done func(), err error) {
	return GEMMShapeStepper(dt, n, n, n, false)
}

// GEMMShapeStepper prepares gotpu's MatmulPrec of an [m,k] matrix by a
// [k,n] one in dt; with wt the second operand is stored as W [n,k] and
// used transposed (x·Wᵀ, a linear layer: the LLM prefill products).
func GEMMShapeStepper(dt string, m, k, n int, wt bool) (s *Stepper, done func(), err error) {
	tt, prec, err := tensorType(dt)
	if err != nil {
		return nil, nil, err
	}
	ws := []int{k, n}
	if wt {
		ws = []int{n, k}
	}
	in, err := randns(tt, []int{m, k}, ws)
	if err != nil {
		return nil, nil, fmt.Errorf("gemm: %w", err)
	}
	w := in[1]
	if wt {
		w = w.T()
	}
	return &Stepper{Impl: "gotpu", DType: dt, Work: GEMMShapeWork(m, k, n), Run: runOp("matmul", func() []*tensor.Tensor {
		return []*tensor.Tensor{tensor.MatmulPrec(in[0], w, prec)}
	})}, func() { freeAll(in...) }, nil
}

// GEMM times gotpu's MatmulPrec of two n×n matrices in dt.
func GEMM(ctx context.Context, t Timing, dt string, n int) (Result, error) {
	s, done, err := GEMMStepper(dt, n)
	return measureOne(ctx, t, s, done, err)
}

// GonumStepper prepares gonum's pure-Go Sgemm (f32) of two n×n matrices, as
// a reference.
func GonumStepper(n int) *Stepper { return GonumShapeStepper(n, n, n) }

// GonumShapeStepper is GonumStepper for an [m,k] by [k,n] product.
func GonumShapeStepper(m, k, n int) *Stepper {
	a, b, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
	for i := range a {
		a[i] = float32(i%17) * 0.1
	}
	for i := range b {
		b[i] = float32(i%13) * 0.1
	}
	impl := gonum.Implementation{}
	return &Stepper{Impl: "gonum", DType: F32, Work: GEMMShapeWork(m, k, n), Ref: true, Run: func() error {
		impl.Sgemm(blas.NoTrans, blas.NoTrans, m, n, k, 1, a, k, b, n, 0, c, n)
		return nil
	}}
}

// GonumGEMM times gonum's pure-Go Sgemm (f32) of two n×n matrices.
func GonumGEMM(ctx context.Context, t Timing, n int) (Result, error) {
	return measureOne(ctx, t, GonumStepper(n), func() {}, nil)
}

// GEMVWork is the work of an [m,k] matrix times a [k] vector in dt.
func GEMVWork(m, k int, dt string) Work {
	fm, fk := float64(m), float64(k)
	return Work{Flops: 2 * fm * fk, Bytes: (fm*fk + fk + fm) * elemSize(dt)}
}

// GEMVStepper prepares gotpu's MatmulPrec of an [m,k] matrix and a [k]
// vector.
func GEMVStepper(dt string, m, k int) (s *Stepper, done func(), err error) {
	tt, prec, err := tensorType(dt)
	if err != nil {
		return nil, nil, err
	}
	in, err := randns(tt, []int{m, k}, []int{k})
	if err != nil {
		return nil, nil, fmt.Errorf("gemv: %w", err)
	}
	return &Stepper{Impl: "gotpu", DType: dt, Work: GEMVWork(m, k, dt), Run: runOp("matmul", func() []*tensor.Tensor {
		return []*tensor.Tensor{tensor.MatmulPrec(in[0], in[1], prec)}
	})}, func() { freeAll(in...) }, nil
}

// GEMV times gotpu's MatmulPrec of an [m,k] matrix and a [k] vector.
func GEMV(ctx context.Context, t Timing, dt string, m, k int) (Result, error) {
	s, done, err := GEMVStepper(dt, m, k)
	return measureOne(ctx, t, s, done, err)
}

// MemmoveStepper prepares Go's copy of nbytes between two buffers, split
// over GOMAXPROCS goroutines (one plain memmove with one thread), as a
// ceiling for memory-bound kernels; the result is named impl
// ("go-memmove"). Its GB/s count the bytes read plus those written.
func MemmoveStepper(impl string, nbytes int) (*Stepper, error) {
	if nbytes <= 0 {
		return nil, fmt.Errorf("kernels: memmove size must be positive, got %d", nbytes)
	}
	src, dst := make([]byte, nbytes), make([]byte, nbytes)
	for i := 0; i < nbytes; i += 4096 {
		src[i] = byte(i >> 12) // touch every page
		dst[i] = 1
	}
	workers := max(1, min(runtime.GOMAXPROCS(0), nbytes/4096))
	chunk := (nbytes + workers - 1) / workers
	return &Stepper{Impl: impl, DType: "bytes", Work: Work{Bytes: 2 * float64(nbytes)}, Ref: true, Run: func() error {
		if workers == 1 {
			copy(dst, src)
			return nil
		}
		var wg sync.WaitGroup
		for lo := 0; lo < nbytes; lo += chunk {
			hi := min(lo+chunk, nbytes)
			wg.Go(func() { copy(dst[lo:hi], src[lo:hi]) })
		}
		wg.Wait()
		return nil
	}}, nil
}

// Memmove times MemmoveStepper's copy.
func Memmove(ctx context.Context, t Timing, nbytes int) (Result, error) {
	s, err := MemmoveStepper("go-memmove", nbytes)
	return measureOne(ctx, t, s, func() {}, err)
}

// EltwiseWork is the work of gelu(x·a+b)·c over n elements in dt: four
// inputs read and one output written; flops are not reported.
func EltwiseWork(n int, dt string) Work {
	return Work{Bytes: 5 * float64(n) * elemSize(dt)}
}

func noMedium(name, dt string) error {
	if dt == Medium {
		return fmt.Errorf("kernels: %s has no medium precision (use f32 or bf16): %w", name, ErrUnavailable)
	}
	return nil
}

// EltwiseStepper prepares the op-by-op chain gelu(x·a+b)·c (exact,
// erf-based gelu) over four n-element tensors, in the current eager mode
// (Strict by default); the three intermediates are freed as soon as the
// chain ends.
func EltwiseStepper(dt string, n int) (s *Stepper, done func(), err error) {
	tt, _, err := tensorType(dt)
	if err != nil {
		return nil, nil, err
	}
	if err := noMedium("eltwise", dt); err != nil {
		return nil, nil, err
	}
	in, err := randns(tt, []int{n}, []int{n}, []int{n}, []int{n})
	if err != nil {
		return nil, nil, fmt.Errorf("eltwise: %w", err)
	}
	x, a, b, c := in[0], in[1], in[2], in[3]
	return &Stepper{Impl: "gotpu", DType: dt, Work: EltwiseWork(n, dt), Run: runOp("gelu chain", func() []*tensor.Tensor {
		t1 := x.Mul(a)
		t2 := t1.Add(b)
		t1.Free()
		t3 := t2.Gelu()
		t2.Free()
		y := t3.Mul(c)
		t3.Free()
		return []*tensor.Tensor{y}
	})}, func() { freeAll(in...) }, nil
}

// Eltwise times EltwiseStepper's chain.
func Eltwise(ctx context.Context, t Timing, dt string, n int) (Result, error) {
	s, done, err := EltwiseStepper(dt, n)
	return measureOne(ctx, t, s, done, err)
}

// RowWork is the work of a row-wise op (softmax, layer_norm) over a
// [rows, cols] tensor: the input read and the output written once, plus
// extra parameter elements read.
func RowWork(rows, cols, extra int, dt string) Work {
	return Work{Bytes: (2*float64(rows)*float64(cols) + float64(extra)) * elemSize(dt)}
}

// SoftmaxStepper prepares gotpu's softmax over the last dim of a
// [rows, cols] tensor.
func SoftmaxStepper(dt string, rows, cols int) (s *Stepper, done func(), err error) {
	tt, _, err := tensorType(dt)
	if err != nil {
		return nil, nil, err
	}
	if err := noMedium("softmax", dt); err != nil {
		return nil, nil, err
	}
	x, err := randn(tt, rows, cols)
	if err != nil {
		return nil, nil, fmt.Errorf("softmax: %w", err)
	}
	return &Stepper{Impl: "gotpu", DType: dt, Work: RowWork(rows, cols, 0, dt), Run: runOp("softmax", func() []*tensor.Tensor {
		return []*tensor.Tensor{x.Softmax(-1)}
	})}, x.Free, nil
}

// Softmax times SoftmaxStepper's softmax.
func Softmax(ctx context.Context, t Timing, dt string, rows, cols int) (Result, error) {
	s, done, err := SoftmaxStepper(dt, rows, cols)
	return measureOne(ctx, t, s, done, err)
}

// LayerNormStepper prepares gotpu's layer_norm over the last dim of a
// [rows, cols] tensor with a weight and a bias, eps 1e-5.
func LayerNormStepper(dt string, rows, cols int) (s *Stepper, done func(), err error) {
	tt, _, err := tensorType(dt)
	if err != nil {
		return nil, nil, err
	}
	if err := noMedium("layernorm", dt); err != nil {
		return nil, nil, err
	}
	in, err := randns(tt, []int{rows, cols}, []int{cols}, []int{cols})
	if err != nil {
		return nil, nil, fmt.Errorf("layernorm: %w", err)
	}
	return &Stepper{Impl: "gotpu", DType: dt, Work: RowWork(rows, cols, 2*cols, dt), Run: runOp("layer_norm", func() []*tensor.Tensor {
		return []*tensor.Tensor{tensor.LayerNorm(in[0], []int{cols}, in[1], in[2], 1e-5)}
	})}, func() { freeAll(in...) }, nil
}

// LayerNorm times LayerNormStepper's layer_norm.
func LayerNorm(ctx context.Context, t Timing, dt string, rows, cols int) (Result, error) {
	s, done, err := LayerNormStepper(dt, rows, cols)
	return measureOne(ctx, t, s, done, err)
}

// ConvShape is a square 2-d convolution: x [N, C, H, H], w [Cout, C, K, K],
// stride 1, padding Pad, no bias.
type ConvShape struct {
	N, C, Cout, H, K, Pad int
}

// OutH is the output height (and width).
func (s ConvShape) OutH() int { return s.H + 2*s.Pad - s.K + 1 }

func (s ConvShape) check() error {
	if s.N < 1 || s.C < 1 || s.Cout < 1 || s.H < 1 || s.K < 1 || s.Pad < 0 || s.OutH() < 1 {
		return fmt.Errorf("kernels: bad conv shape %+v", s)
	}
	return nil
}

// String is the shape as "x NxCxHxH, w CoutxCxKxK, pad P".
func (s ConvShape) String() string {
	return fmt.Sprintf("x %dx%dx%dx%d, w %dx%dx%dx%d, pad %d", s.N, s.C, s.H, s.H, s.Cout, s.C, s.K, s.K, s.Pad)
}

// ConvWork is the work of the forward convolution; backward (input and
// weight gradients) is twice that.
func ConvWork(s ConvShape, dt string) Work {
	oh := float64(s.OutH())
	flops := 2 * float64(s.N) * float64(s.Cout) * oh * oh * float64(s.C) * float64(s.K*s.K)
	bytes := (float64(s.N*s.C*s.H*s.H) + float64(s.Cout*s.C*s.K*s.K) + float64(s.N*s.Cout)*oh*oh) * elemSize(dt)
	return Work{Flops: flops, Bytes: bytes}
}

// ConvSteppers prepares gotpu's conv2d forward ("gotpu") and, if backward,
// the backward pass computing the input and weight gradients from a given
// output gradient ("gotpu.backward"; each run's forward is its untimed
// setup).
func ConvSteppers(dt string, s ConvShape, backward bool) (steps []*Stepper, done func(), err error) {
	if err := s.check(); err != nil {
		return nil, nil, err
	}
	tt, prec, err := tensorType(dt)
	if err != nil {
		return nil, nil, err
	}
	oh := s.OutH()
	in, err := randns(tt, []int{s.N, s.C, s.H, s.H}, []int{s.Cout, s.C, s.K, s.K}, []int{s.N, s.Cout, oh, oh})
	if err != nil {
		return nil, nil, fmt.Errorf("conv: %w", err)
	}
	x, w, g := in[0], in[1], in[2]
	opts := tensor.Conv2dOpts{Padding: []int{s.Pad}, Precision: prec}
	work := ConvWork(s, dt)
	steps = append(steps, &Stepper{Impl: "gotpu", DType: dt, Work: work, Run: runOp("conv2d", func() []*tensor.Tensor {
		return []*tensor.Tensor{tensor.Conv2d(x, w, nil, opts)}
	})})
	if !backward {
		return steps, func() { freeAll(in...) }, nil
	}
	xg, wg := x.Detach().SetRequiresGrad(true), w.Detach().SetRequiresGrad(true)
	var y *tensor.Tensor
	clear := func() {
		for _, p := range []*tensor.Tensor{xg, wg} {
			if gr := p.Grad(); gr != nil {
				gr.Free()
			}
			p.SetGrad(nil)
		}
		if y != nil {
			y.Free()
			y = nil
		}
	}
	steps = append(steps, &Stepper{Impl: "gotpu.backward", DType: dt, Work: Work{Flops: 2 * work.Flops, Bytes: 2 * work.Bytes},
		Setup: func() error {
			clear()
			return catch(func() { y = tensor.Conv2d(xg, wg, nil, opts) })
		},
		Run: func() error {
			if err := catch(func() { y.BackwardWith(tensor.BackwardOpts{Gradient: g}) }); err != nil {
				return fmt.Errorf("conv2d backward: %w", err)
			}
			return syncCPU()
		}})
	return steps, func() { clear(); freeAll(in...) }, nil
}

// Conv times ConvSteppers' forward and backward, interleaved.
func Conv(ctx context.Context, t Timing, dt string, s ConvShape, backward bool) ([]Result, error) {
	steps, done, err := ConvSteppers(dt, s, backward)
	if err != nil {
		return nil, err
	}
	defer done()
	res, _, err := Interleave(ctx, t, steps)
	return res, err
}
