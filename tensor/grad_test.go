package tensor_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

func loadGradCases(t *testing.T) []*gradCaseRef {
	var out []*gradCaseRef
	for _, g := range loadGolden(t) {
		for i := range g.Cases {
			c := &g.Cases[i]
			if c.Grads == nil || !gradComparable(c) {
				continue
			}
			out = append(out, &gradCaseRef{c: c, group: g.Group})
		}
	}
	return out
}

// gradComparable reports whether a golden case's PyTorch gradients are a
// reference for ours. Not for random outputs (compare "shape": PyTorch drew
// another dropout mask, and finite differences would redraw it each call),
// nor for f32 products at reduced precision ("medium", "high"): PyTorch has
// none on CPU, and the generator emulates them with bf16 casts whose
// backward rounds the gradient itself to bf16, while reduced precision means
// the backward products run at that precision too (as PyTorch on GPUs and
// JAX do, and our VJPs); those gradients are checked in
// autograd_linalg_test.go and, in f64, by TestGradcheck.
func gradComparable(c *goldenCase) bool {
	if c.Compare == "shape" {
		return false
	}
	if p, _ := c.Attrs["precision"].(string); p == "medium" || p == "high" {
		for _, in := range c.Inputs {
			if in != nil && in.DType == "f32" {
				return false
			}
		}
	}
	return true
}

type gradCaseRef struct {
	c     *goldenCase
	group string
}

// inputsFor builds the case's inputs on cpu; float tensor inputs that have a
// PyTorch gradient slot require grad. asF64 converts f32 inputs to f64.
func inputsFor(c *goldenCase, asF64 bool) ([]*tensor.Tensor, []int, error) {
	cpu := tensor.MustDevice("cpu")
	ins := make([]*tensor.Tensor, len(c.Inputs))
	var wrt []int
	for i, in := range c.Inputs {
		x, err := buildInput(in, cpu)
		if err != nil {
			return nil, nil, err
		}
		if x != nil && i < len(c.Grads) && (x.DType() == dtype.F32 || x.DType() == dtype.F64) && in.DType != "" {
			if asF64 && x.DType() == dtype.F32 {
				x = tensor.Apply1("convert", []*tensor.Tensor{x}, op.Attrs{"dtype": dtype.F64})
			} else {
				x = x.Detach()
			}
			x.SetRequiresGrad(true)
			wrt = append(wrt, i)
		}
		ins[i] = x
	}
	return ins, wrt, nil
}

// gradOf computes the case's gradients; with compiled, the whole
// computation (op and Backward) is one traced program.
func gradOf(c *goldenCase, ins []*tensor.Tensor, wrt []int, cots []*tensor.Tensor, compiled ...bool) (grads []*tensor.Tensor, err error) {
	attrs, err := convertAttrs(op.MustLookup(c.Op), c.Attrs)
	if err != nil {
		return nil, err
	}
	if len(compiled) > 0 && compiled[0] {
		return gradTraced(c, ins, wrt, cots, attrs)
	}
	err = tensor.Catch(func() {
		// In-place ops write into a copy, as the golden functions clone
		// first (an in-place write into a leaf that requires grad is an
		// error, as in PyTorch).
		args := append([]*tensor.Tensor(nil), ins...)
		for _, i := range op.MustLookup(c.Op).Inplace {
			if args[i] != nil {
				args[i] = tensor.Apply1("copy", []*tensor.Tensor{args[i]}, nil)
			}
		}
		outs := tensor.Apply(c.Op, args, attrs)
		var roots, cs []*tensor.Tensor
		for k, o := range outs {
			if k < len(cots) && cots[k] != nil && o.RequiresGrad() {
				ct := cots[k]
				if ct.DType() != o.DType() {
					ct = tensor.Apply1("convert", []*tensor.Tensor{ct}, op.Attrs{"dtype": o.DType()})
				}
				roots = append(roots, o)
				cs = append(cs, ct)
			}
		}
		if len(roots) == 0 {
			// Not differentiable here (e.g. a norm with p=0 counts
			// non-zeros): every gradient is absent, which compareGrads
			// accepts only where PyTorch's is zero.
			grads = make([]*tensor.Tensor, len(wrt))
			return
		}
		w := make([]*tensor.Tensor, len(wrt))
		for i, j := range wrt {
			w[i] = ins[j]
		}
		grads = tensor.Grad(roots, cs, w, false)
	})
	return grads, err
}

// gradTraced runs gradOf's computation under a trace: the tensor inputs
// are the trace's inputs (leaves that require grad where the case says so),
// the gradients its outputs.
func gradTraced(c *goldenCase, ins []*tensor.Tensor, wrt []int, cots []*tensor.Tensor, attrs op.Attrs) (grads []*tensor.Tensor, err error) {
	cpu := tensor.MustDevice("cpu")
	var tin []*tensor.Tensor
	var pos []int
	for i, x := range ins {
		if x != nil && !x.IsWrappedScalar() {
			tin = append(tin, x)
			pos = append(pos, i)
		}
	}
	err = tensor.Catch(func() {
		tr, syms := tensor.BeginTrace(cpu, tin)
		var tg *tensor.TracedGraph
		var present []int
		func() {
			defer func() {
				if r := recover(); r != nil {
					tr.Abort()
					panic(r)
				}
			}()
			args := append([]*tensor.Tensor(nil), ins...)
			for k, i := range pos {
				args[i] = syms[k]
			}
			var gs []*tensor.Tensor
			gs, err = gradOf(c, args, wrt, cots)
			if err != nil {
				panic(err)
			}
			var outs []*tensor.Tensor
			for k, g := range gs {
				if g != nil {
					outs = append(outs, g)
					present = append(present, k)
				}
			}
			tg = tr.End(outs)
		}()
		prog, perr := tensor.CompileGraph(context.Background(), cpu, backendOfDev(cpu), tg.Graph, device.CompileOptions{})
		if perr != nil {
			panic(perr)
		}
		res := tg.Run(prog, tensor.ProgramInfo{})
		grads = make([]*tensor.Tensor, len(wrt))
		for k, i := range present {
			grads[i] = res[k]
		}
	})
	return grads, err
}

func backendOfDev(dev device.Device) device.Backend {
	be, err := device.Lookup(dev.Type)
	if err != nil {
		panic(err)
	}
	return be
}

func cotangentsOf(c *goldenCase) []*tensor.Tensor {
	cpu := tensor.MustDevice("cpu")
	cots := make([]*tensor.Tensor, len(c.Cotangents))
	for k, ct := range c.Cotangents {
		if ct == nil {
			continue
		}
		raw, dt, _ := decodeRaw(*ct)
		cots[k] = tensor.FromBytes(cpu, dt, ct.Shape, raw)
	}
	return cots
}

// TestGradMatchesPyTorch runs every golden case that has PyTorch gradients
// through Backward and compares the gradients.
func TestGradMatchesPyTorch(t *testing.T) {
	for _, m := range []struct {
		name     string
		mode     tensor.Mode
		compiled bool
	}{{"strict", tensor.Strict, false}, {"fused", tensor.Fused, false}, {"compiled", tensor.Strict, true}} {
		t.Run(m.name, func(t *testing.T) {
			prev := tensor.SetMode(m.mode)
			defer tensor.SetMode(prev)
			testGradMatchesPyTorch(t, m.name, m.compiled)
		})
	}
}

func testGradMatchesPyTorch(t *testing.T, name string, compiled bool) {
	cases := loadGradCases(t)
	stats := map[string][2]int{}
	fails := map[string]int{}
	for _, r := range cases {
		c := r.c
		ins, wrt, err := inputsFor(c, false)
		if err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		grads, err := gradOf(c, ins, wrt, cotangentsOf(c), compiled)
		s := stats[c.Op]
		if err == nil {
			err = compareGrads(c, wrt, grads)
		}
		if err != nil {
			s[1]++
			if fails[c.Op] < 2 {
				t.Errorf("%s: %v", c.ID, err)
			}
			fails[c.Op]++
		} else {
			s[0]++
		}
		stats[c.Op] = s
	}
	printGradTable("gradients vs PyTorch ("+name+")", stats)
}

func compareGrads(c *goldenCase, wrt []int, grads []*tensor.Tensor) error {
	for k, i := range wrt {
		want := c.Grads[i]
		got := grads[k]
		if want == nil {
			if got != nil && maxAbs(got.Float64s()) != 0 {
				return fmt.Errorf("input %d: PyTorch has no gradient, got %v", i, got)
			}
			continue
		}
		wraw, wdt, _ := decodeRaw(*want)
		n := op.Numel(want.Shape)
		wv := make([]float64, n)
		for j := range wv {
			wv[j] = dtype.Float64At(wdt, wraw, j)
		}
		if got == nil {
			if maxAbs(wv) == 0 {
				continue
			}
			return fmt.Errorf("input %d: no gradient, PyTorch has %v", i, trunc(wv))
		}
		if !equalShape(got.Shape(), want.Shape) {
			return fmt.Errorf("input %d: gradient shape %v, want %v", i, got.Shape(), want.Shape)
		}
		rtol, atol := 1e-4, 1e-5
		if wdt == dtype.F64 {
			rtol, atol = 1e-6, 1e-7
		}
		gv := got.Float64s()
		if j, ok := closeEnough(gv, wv, rtol, atol); !ok {
			return fmt.Errorf("input %d grad[%d]: got %v want %v\n  got  %v\n  want %v", i, j, gv[j], wv[j], trunc(gv), trunc(wv))
		}
	}
	return nil
}

func equalShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func maxAbs(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, math.Abs(x))
	}
	return m
}

// nonSmooth lists ops whose derivative is zero almost everywhere or that
// are evaluated at kinks by construction; finite differences are not a
// meaningful check for them (their gradients are still compared with PyTorch).
var nonSmooth = map[string]bool{
	"floor": true, "ceil": true, "round": true, "trunc": true, "sign": true, "frac": true,
	"remainder": true, "fmod": true, "floor_divide": true, "div": true,
	"sort": true, "argsort": true, "topk": true, "max_pool2d": true, "max_dim": true, "min_dim": true,
	"amax": true, "amin": true, "max": true, "min": true, "maximum": true, "minimum": true, "fmax": true, "fmin": true,
	"clamp": true, "clamp_tensor": true, "hardtanh": true, "relu6": true, "hardsigmoid": true, "hardswish": true,
	"relu": true, "leaky_relu": true, "abs": true, "median": true, "cummax": true, "cummin": true, "norm": true,
	"nan_to_num": true, "copysign": true, "convert": true,
	// Rows looked up at padding_idx get no gradient by definition
	// (F.embedding), although the forward reads them.
	"embedding": true,
	// A case sits at input 0 and 1, where PyTorch's gradients are ±Inf and
	// (x - t) / 1e-12 while the forward's logs are clamped at -100.
	"binary_cross_entropy": true,
	// Piecewise constant; its golden inputs sit on the .5 ties.
	"round_nearest_even": true,
}

// nonSmoothCases lists single golden cases of otherwise smooth ops that are
// evaluated at a kink: hypot/range has x = y = 1e-30, where the 1e-6 step
// crosses hypot's cone point at the origin.
var nonSmoothCases = map[string]bool{"hypot/range": true}

// TestGradcheck compares analytical gradients in f64 with central finite
// differences (torch.autograd.gradcheck's defaults: eps 1e-6, atol 1e-5,
// rtol 1e-3) for every golden case with gradients.
func TestGradcheck(t *testing.T) {
	cases := loadGradCases(t)
	stats := map[string][2]int{}
	fails := map[string]int{}
	for _, r := range cases {
		c := r.c
		if nonSmooth[c.Op] || nonSmoothCases[c.ID] {
			continue
		}
		err := gradcheck(c)
		if err == errSkip {
			continue
		}
		s := stats[c.Op]
		if err != nil {
			s[1]++
			if fails[c.Op] < 2 {
				t.Errorf("%s: %v", c.ID, err)
			}
			fails[c.Op]++
		} else {
			s[0]++
		}
		stats[c.Op] = s
	}
	printGradTable("f64 gradcheck", stats)
}

var errSkip = fmt.Errorf("skip")

func gradcheck(c *goldenCase) error {
	ins, wrt, err := inputsFor(c, true)
	if err != nil {
		return err
	}
	cots := cotangentsOf(c)
	for k, ct := range cots {
		if ct != nil && ct.DType() == dtype.F32 {
			cots[k] = tensor.Apply1("convert", []*tensor.Tensor{ct}, op.Attrs{"dtype": dtype.F64})
		}
	}
	attrs, err := convertAttrs(op.MustLookup(c.Op), c.Attrs)
	if err != nil {
		return err
	}
	// f(x) returns the outputs that have a cotangent, flattened, evaluated
	// without recording; cv holds their cotangents. As in
	// torch.autograd.gradcheck, the numerical Jacobian is built from
	// per-element output differences, so a large output elsewhere does not
	// swamp a small perturbation (sum_k <out_k, cot_k> would).
	var evalErr error
	var cv []float64
	f := func(in []*tensor.Tensor) []float64 {
		var s []float64
		cv = cv[:0]
		tensor.NoGrad(func() {
			evalErr = tensor.Catch(func() {
				outs := tensor.Apply(c.Op, in, attrs)
				for k, o := range outs {
					if k >= len(cots) || cots[k] == nil {
						continue
					}
					if o.DType() != dtype.F64 {
						panic(errSkipPanic{})
					}
					s = append(s, o.Float64s()...)
					cv = append(cv, cots[k].Float64s()...)
				}
			})
		})
		return s
	}
	var skip bool
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(errSkipPanic); ok {
					skip = true
					return
				}
				panic(r)
			}
		}()
		f(ins)
	}()
	if skip {
		return errSkip
	}
	if evalErr != nil {
		return evalErr
	}
	grads, err := gradOf(c, ins, wrt, cots)
	if err != nil {
		return err
	}
	const eps = 1e-6
	for k, i := range wrt {
		x := ins[i]
		base := x.Float64s()
		shape := x.Shape()
		var g []float64
		if grads[k] != nil {
			g = grads[k].Float64s()
		} else {
			g = make([]float64, len(base))
		}
		for j := range base {
			// The step actually taken: at large magnitudes x±eps rounds,
			// and where it rounds back to x no finite difference exists.
			step := (base[j] + eps) - (base[j] - eps)
			if step == 0 || math.IsInf(step, 0) || math.IsNaN(step) {
				continue
			}
			pert := func(d float64) []float64 {
				v := append([]float64(nil), base...)
				v[j] += d
				in2 := append([]*tensor.Tensor(nil), ins...)
				in2[i] = tensor.FromSlice(tensor.MustDevice("cpu"), v, shape...)
				return f(in2)
			}
			hi, lo := pert(eps), pert(-eps)
			if evalErr != nil {
				return evalErr
			}
			if len(hi) != len(cv) || len(lo) != len(cv) {
				return fmt.Errorf("input %d element %d: %d outputs with cotangents, %d cotangents", i, j, len(hi), len(cv))
			}
			num := 0.0
			for m := range cv {
				if hi[m] != lo[m] { // unchanged outputs (also ±inf) contribute nothing
					num += cv[m] * (hi[m] - lo[m])
				}
			}
			num /= step
			if math.Abs(num-g[j]) > 1e-5+1e-3*math.Abs(num) {
				return fmt.Errorf("input %d element %d: analytical %v, numerical %v", i, j, g[j], num)
			}
		}
	}
	return nil
}

type errSkipPanic struct{}

func printGradTable(title string, stats map[string][2]int) {
	ops := make([]string, 0, len(stats))
	fail := 0
	for o, s := range stats {
		ops = append(ops, o)
		fail += s[1]
	}
	sort.Strings(ops)
	if testing.Verbose() || os.Getenv("GOTPU_COVERAGE") != "" {
		var sb strings.Builder
		fmt.Fprintf(&sb, "%s: %d ops\n", title, len(ops))
		for _, o := range ops {
			fmt.Fprintf(&sb, "  %-34s %d/%d\n", o, stats[o][0], stats[o][0]+stats[o][1])
		}
		fmt.Print(sb.String())
		return
	}
	fmt.Printf("%s: %d ops, %d failing cases\n", title, len(ops), fail)
}
