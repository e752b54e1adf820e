//go:build pjrt

package pjrt

/*
#include "capi.h"
*/
import "C"

import (
	"fmt"
	"math"
	"slices"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// The optimizer steps (op/optim.go: adam_step, sgd_step) are in-place
// primitives without a StableHLO emitter: their op.Def has none because an
// emitter only sees attributes, and the attributes that change at every
// training step (lr, step: op.Def.Dynamic) would then be compile-time
// constants, a new XLA executable per step. This backend lowers them itself,
// to a functional update whose outputs are the new values of the in-place
// inputs (the executor writes them back, as for copy_), and takes its
// scalars, the per-step ones the kernels derive from lr and step (Adam's
// 1 - lr*weight_decay, -lr/bias_correction1 and sqrt(bias_correction2),
// SGD's -lr) and the hyper-parameters, as one f64 vector parameter appended
// after the program's own parameters. The scalars are computed on the host
// exactly as backend/cpu computes them (in float64 from the Python-float
// formulas, then rounded to the kernel's arithmetic type), so one
// executable serves every step.
//
// The arithmetic follows backend/cpu/optim.go op for op, rounding to the
// tensor dtype after each op (bf16 and f16 compute in f32 and round to
// their dtype where the cpu kernels do), with cpu's FMAs where it has them
// and its rounded products where it rounds (see optimBuilder.mul and fma):
// the golden PyTorch cases match bit for bit but one f64 case, where
// XLA:CPU contracts a different multiply into an FMA.

// paramLowered reports whether d is an optimizer step this backend lowers
// with its dynamic scalars as program inputs.
func paramLowered(d *op.Def) bool {
	return d != nil && (d == op.AdamStep || d == op.SgdStep)
}

// The scalars of each optimizer step in the scalar vector, in order. All of
// them are run-time inputs, not just those that change every step: XLA's
// simplifier reorders products with constants (x*c*y becomes x*y*c), which
// would undo the product roundings mul keeps.
const (
	adamDecay = iota // 1 - lr*weight_decay
	adamNegSS        // -lr/bias_correction1
	adamBC2S         // sqrt(bias_correction2)
	adamOne          // 1 (see optimBuilder.mul)
	adamWD
	adamB1
	adamOmB1
	adamB2
	adamOmB2
	adamEps
	adamScalars
)

const (
	sgdNegLR = iota
	sgdOne
	sgdWD
	sgdMom
	sgdOmD // 1 - dampening
	sgdScalars
)

// optimScalarCount is the number of scalars of op name.
func optimScalarCount(name string) int {
	if name == "adam_step" {
		return adamScalars
	}
	return sgdScalars
}

// optimSlot is one optimizer step of a program: where its scalars start in
// the scalar vector, which RunOptions.Dynamic entry holds its lr and step,
// and the attributes (as traced) the scalars are computed from.
type optimSlot struct {
	Dyn   int                `json:"dyn"`
	Op    string             `json:"op"`
	DType dtype.DType        `json:"dtype"`
	Off   int                `json:"off"`
	Attrs map[string]float64 `json:"attrs"`
}

// newOptimSlot records node attributes a (normalized) of op d on tensors of
// dtype dt.
func newOptimSlot(d *op.Def, a op.Attrs, dt dtype.DType, dyn, off int) optimSlot {
	s := optimSlot{Dyn: dyn, Op: d.Name, DType: dt, Off: off, Attrs: map[string]float64{}}
	for _, k := range []string{"lr", "step", "beta1", "beta2", "weight_decay", "eps", "momentum", "dampening"} {
		if v, ok := a[k]; ok {
			s.Attrs[k] = attrNum(v)
		}
	}
	return s
}

// attrNum returns a numeric attribute value as a float64.
func attrNum(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case float32:
		return float64(x)
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case int32:
		return float64(x)
	case bool:
		if x {
			return 1
		}
	}
	return 0
}

// scalars writes the slot's per-step scalars into dst[s.Off:], with lr and
// step from dyn where it has them (else the traced values). Each value is
// exactly the one the cpu kernel uses, so the in-graph conversion from f64
// to the arithmetic type is exact.
func (s optimSlot) scalars(dst []float64, dyn map[string]any) error {
	lr, step := s.Attrs["lr"], s.Attrs["step"]
	if v, ok := dyn["lr"]; ok {
		lr = attrNum(v)
	}
	if v, ok := dyn["step"]; ok {
		step = attrNum(v)
	}
	var r, f32 func(float64) float64
	switch s.DType {
	case dtype.F64:
		r = func(v float64) float64 { return v }
		f32 = r
	case dtype.F32:
		r = func(v float64) float64 { return float64(float32(v)) }
		f32 = r
	case dtype.BF16:
		r = func(v float64) float64 { return float64(dtype.RoundBF16(float32(v))) }
		f32 = func(v float64) float64 { return float64(float32(v)) }
	case dtype.F16:
		r = func(v float64) float64 { return float64(dtype.RoundF16(float32(v))) }
		f32 = func(v float64) float64 { return float64(float32(v)) }
	default:
		return fmt.Errorf("pjrt: %s: unsupported dtype %s", s.Op, s.DType)
	}
	x := dst[s.Off : s.Off+optimScalarCount(s.Op)]
	switch s.Op {
	case "adam_step":
		if step < 1 {
			return fmt.Errorf("pjrt: adam_step: step must be >= 1, got %v", step)
		}
		b1, b2, wd := s.Attrs["beta1"], s.Attrs["beta2"], s.Attrs["weight_decay"]
		bc1, bc2 := op.AdamBiasCorrections(b1, b2, int(step))
		x[adamDecay] = r(1 - lr*wd)
		x[adamNegSS] = f32(-(lr / bc1)) // addcdiv's value: float32 for 16-bit dtypes
		x[adamBC2S] = r(math.Sqrt(bc2))
		x[adamOne] = 1
		x[adamWD] = r(wd)
		x[adamB1] = r(b1)
		x[adamOmB1] = r(1 - b1)
		x[adamB2] = r(b2)
		x[adamOmB2] = f32(1 - b2) // addcmul's value: float32 for 16-bit dtypes
		x[adamEps] = r(s.Attrs["eps"])
	case "sgd_step":
		x[sgdNegLR] = r(-lr)
		x[sgdOne] = 1
		x[sgdWD] = r(s.Attrs["weight_decay"])
		x[sgdMom] = r(s.Attrs["momentum"])
		x[sgdOmD] = r(1 - s.Attrs["dampening"])
	default:
		return fmt.Errorf("pjrt: %s is not an optimizer step", s.Op)
	}
	return nil
}

// optimScalarValues returns the scalar vector for slots of n scalars and
// the run's dynamic values (nil: the traced values).
func optimScalarValues(slots []optimSlot, n int, dyn []op.Attrs) ([]byte, error) {
	vals := make([]float64, n)
	for _, s := range slots {
		var d map[string]any
		if dyn != nil {
			if s.Dyn < 0 || s.Dyn >= len(dyn) {
				return nil, fmt.Errorf("pjrt: RunOptions.Dynamic has %d entries, %s needs entry %d", len(dyn), s.Op, s.Dyn)
			}
			d = dyn[s.Dyn]
		}
		if err := s.scalars(vals, d); err != nil {
			return nil, err
		}
	}
	raw := make([]byte, 8*n)
	for i, v := range vals {
		dtype.PutFloat64(dtype.F64, raw, i, v)
	}
	return raw, nil
}

// optimBuilder appends elementwise arithmetic on values of one shape in
// the arithmetic type ct (the tensor dtype, or f32 for 16-bit dtypes,
// which round to dt after each op).
type optimBuilder struct {
	g     *ir.Graph
	shape []int
	dt    dtype.DType
	ct    dtype.DType
	one   *ir.Value // 1, a run-time input (see mul)
	err   error
}

func (b *optimBuilder) narrow() bool { return b.dt != b.ct }

func (b *optimBuilder) node(name string, in ...*ir.Value) *ir.Value {
	if b.err != nil {
		return nil
	}
	v, err := addNode(b.g, name, op.Attrs{}, in, op.Meta{Shape: slices.Clone(b.shape), DType: b.ct})
	b.err = err
	return v
}

func (b *optimBuilder) conv(v *ir.Value, dt dtype.DType) *ir.Value {
	if b.err != nil || v.Meta.DType == dt {
		return v
	}
	v, b.err = convertTo(b.g, v, dt)
	return v
}

// load converts a tensor input to the arithmetic type.
func (b *optimBuilder) load(v *ir.Value) *ir.Value { return b.conv(v, b.ct) }

// store converts a result to the tensor dtype.
func (b *optimBuilder) store(v *ir.Value) *ir.Value { return b.conv(v, b.dt) }

// r rounds v to the tensor dtype (a no-op for f32 and f64).
func (b *optimBuilder) r(v *ir.Value) *ir.Value {
	if !b.narrow() {
		return v
	}
	return b.conv(b.conv(v, b.dt), b.ct)
}

// mul is x*y rounded to the arithmetic type, as a product PyTorch's
// sequence rounds before adding it. XLA:CPU's code generator contracts a
// multiply feeding an add into an FMA, which skips that rounding; a second
// multiply by one, a run-time input the compiler cannot fold, makes the
// contracted multiply that one, which is exact.
func (b *optimBuilder) mul(x, y *ir.Value) *ir.Value {
	return b.node("mul", b.node("mul", x, y), b.one)
}
func (b *optimBuilder) add(x, y *ir.Value) *ir.Value { return b.node("add", x, y) }

// axpy is PyTorch's add(y, x, alpha=a): y + a*x (an FMA on cpu for f32,
// f64 and bf16; f16 rounds a*x first).
func (b *optimBuilder) axpy(x, a, y *ir.Value) *ir.Value {
	if b.dt == dtype.F16 {
		return b.r(b.add(b.r(b.mul(x, a)), y))
	}
	return b.r(b.fma(x, a, y))
}

// fma is x*y + z rounded once, as the cpu kernels' FMA. StableHLO has no
// fused multiply-add, so f32 computes it in f64: the product is exact there
// and the sum rounds twice (f64, then f32), which differs from one rounding
// only when the f64 sum lies exactly halfway between two f32s without
// being exact (vanishingly rare; cpu's vec.FMA corrects that case). f64 has
// no wider type: its x*y + z is left to XLA:CPU's code generator, which
// contracts it into an FMA (though when z is itself a product it may
// contract that one instead).
func (b *optimBuilder) fma(x, y, z *ir.Value) *ir.Value {
	if b.ct != dtype.F32 || b.err != nil {
		return b.add(b.node("mul", x, y), z)
	}
	w := func(v *ir.Value) *ir.Value { return b.conv(v, dtype.F64) }
	m := op.Meta{Shape: slices.Clone(b.shape), DType: dtype.F64}
	var prod, sum *ir.Value
	if prod, b.err = addNode(b.g, "mul", op.Attrs{}, []*ir.Value{w(x), w(y)}, m); b.err != nil {
		return nil
	}
	if sum, b.err = addNode(b.g, "add", op.Attrs{}, []*ir.Value{prod, w(z)}, m); b.err != nil {
		return nil
	}
	return b.conv(sum, dtype.F32)
}

// optimGraph appends the functional update of optimizer step d (attributes
// a, normalized; inputs in, nil where absent) to g, with its per-step
// scalars read from the f64 vector sv starting at off. It returns the new
// values of the present in-place inputs, in d.Inplace order (the node's
// outputs).
func optimGraph(g *ir.Graph, d *op.Def, a op.Attrs, in []*ir.Value, sv *ir.Value, off int) ([]*ir.Value, error) {
	if !paramLowered(d) || len(in) != len(d.Inputs) || in[0] == nil || in[1] == nil {
		return nil, fmt.Errorf("pjrt: %s: malformed optimizer step", d.Name)
	}
	dt := in[0].Meta.DType
	ct := dt
	switch dt {
	case dtype.F32, dtype.F64:
	case dtype.BF16, dtype.F16:
		ct = dtype.F32
	default:
		return nil, fmt.Errorf("pjrt: %s: unsupported dtype %s", d.Name, dt)
	}
	b := &optimBuilder{g: g, shape: slices.Clone(in[0].Meta.Shape), dt: dt, ct: ct}
	scalar := func(k int) *ir.Value {
		if b.err != nil {
			return nil
		}
		v, err := addView(g, "select", op.Attrs{"dim": 0, "index": off + k}, sv, op.Meta{Shape: []int{}, DType: dtype.F64})
		if err != nil {
			b.err = err
			return nil
		}
		return b.conv(v, ct)
	}
	if d == op.AdamStep {
		b.one = scalar(adamOne)
	} else {
		b.one = scalar(sgdOne)
	}
	var outs []*ir.Value
	switch d {
	case op.AdamStep:
		decoupled, ams := a.Bool("decoupled"), a.Bool("amsgrad")
		wd := a.Float("weight_decay")
		decay, negss, bc2s := scalar(adamDecay), scalar(adamNegSS), scalar(adamBC2S)
		p, gr, m, v := b.load(in[0]), b.load(in[1]), b.load(in[2]), b.load(in[3])
		if decoupled {
			p = b.r(b.mul(p, decay))
		} else if wd != 0 {
			gr = b.axpy(p, scalar(adamWD), gr)
		}
		m = b.axpy(gr, scalar(adamOmB1), b.r(b.mul(m, scalar(adamB1))))
		// addcmul(v*beta2, grad, grad, value=1-beta2): value in f32 for
		// 16-bit dtypes.
		v = b.r(b.fma(b.mul(scalar(adamOmB2), gr), gr, b.r(b.mul(v, scalar(adamB2)))))
		vv := v
		var mx *ir.Value
		if ams {
			if in[4] == nil {
				return nil, fmt.Errorf("pjrt: adam_step: amsgrad needs max_exp_avg_sq")
			}
			mx = b.node("maximum", b.load(in[4]), v)
			vv = mx
		}
		den := b.r(b.add(b.r(b.node("div", b.r(b.node("sqrt", vv)), bc2s)), scalar(adamEps)))
		p = b.add(p, b.node("div", b.mul(negss, m), den))
		outs = []*ir.Value{b.store(p), b.store(m), b.store(v)}
		if in[4] != nil {
			if mx == nil {
				return nil, fmt.Errorf("pjrt: adam_step: max_exp_avg_sq given without amsgrad")
			}
			outs = append(outs, b.store(mx))
		}
	case op.SgdStep:
		wd, mom := a.Float("weight_decay"), a.Float("momentum")
		neglr := scalar(sgdNegLR)
		p, dv := b.load(in[0]), b.load(in[1])
		if wd != 0 {
			dv = b.axpy(p, scalar(sgdWD), dv)
		}
		var buf *ir.Value
		if mom != 0 {
			if in[2] == nil {
				return nil, fmt.Errorf("pjrt: sgd_step: momentum needs momentum_buffer")
			}
			buf = dv
			if !a.Bool("first") {
				buf = b.axpy(dv, scalar(sgdOmD), b.r(b.mul(b.load(in[2]), scalar(sgdMom))))
			}
			if a.Bool("nesterov") {
				dv = b.axpy(buf, scalar(sgdMom), dv)
			} else {
				dv = buf
			}
		}
		p = b.axpy(dv, neglr, p)
		outs = []*ir.Value{b.store(p)}
		if in[2] != nil {
			if buf == nil {
				return nil, fmt.Errorf("pjrt: sgd_step: momentum_buffer given with momentum 0")
			}
			outs = append(outs, b.store(buf))
		}
	}
	if b.err != nil {
		return nil, fmt.Errorf("pjrt: %s: %w", d.Name, b.err)
	}
	return outs, nil
}

// launchOptim runs one optimizer step eagerly: the functional update over
// flat parameters and the scalar vector, compiled once per signature (lr
// and step are not part of it), with each result stored back into its
// in-place input. Called with b.mu held.
func (b *Backend) launchOptim(index int, l *device.Launch) error {
	d := l.Op
	if len(l.In) != len(d.Inputs) || l.In[0].Buf == nil || l.In[1].Buf == nil {
		return fmt.Errorf("%s: %s needs param and grad", b.p.Name, d.Name)
	}
	na, err := d.Normalize(l.Attrs)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", b.p.Name, d.Name, err)
	}
	ins := make([]op.Meta, len(l.In))
	for i, in := range l.In {
		if in.Buf != nil {
			ins[i] = op.Meta{Shape: slices.Clone(in.Shape), DType: in.DType}
		}
	}
	if _, err := d.Infer(ins, na); err != nil {
		return fmt.Errorf("%s: %w", b.p.Name, err)
	}
	args, sizes, err := b.flatInputs(index, l.In, d.Name)
	if err != nil {
		return err
	}
	slot := newOptimSlot(d, na, l.In[0].DType, -1, 0)
	ns := optimScalarCount(d.Name)
	raw, err := optimScalarValues([]optimSlot{slot}, ns, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", b.p.Name, err)
	}
	// The signature leaves out lr and step, which are inputs.
	static := maps(na)
	for _, k := range d.Dynamic {
		delete(static, k)
	}
	sl := *l
	sl.Attrs = static
	lkey := launchKey(&sl, sizes)
	x, ok := b.execs[b.launchKeys[lkey]]
	if !ok {
		g := ir.New()
		vals := make([]*ir.Value, len(l.In))
		var params []op.Meta
		for i, in := range l.In {
			if in.Buf == nil {
				continue
			}
			v, err := flatParam(g, in.DType, sizes[i], in.Layout)
			if err != nil {
				return fmt.Errorf("%s: %s input %d: %w", b.p.Name, d.Name, i, err)
			}
			vals[i] = v
			params = append(params, op.Meta{Shape: []int{sizes[i]}, DType: in.DType})
		}
		sv := g.Param(op.Meta{Shape: []int{ns}, DType: dtype.F64})
		params = append(params, sv.Meta)
		res, err := optimGraph(g, d, na, vals, sv, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", b.p.Name, err)
		}
		var outs []*ir.Value
		var outMeta []op.Meta
		for _, v := range res {
			f, err := flatten(g, v)
			if err != nil {
				return err
			}
			if f.IsParam() || slices.Contains(outs, f) {
				f = g.AddNode(op.Copy, op.Attrs{}, []*ir.Value{f}, []op.Meta{f.Meta}).Out[0]
			}
			outs = append(outs, f)
			outMeta = append(outMeta, op.Meta{Shape: slices.Clone(v.Meta.Shape), DType: v.Meta.DType})
		}
		g.SetOutputs(outs...)
		var fp string
		if x, fp, err = b.cached(g, d.Name, params, outMeta); err != nil {
			return fmt.Errorf("%s: %s: %w", b.p.Name, d.Name, err)
		}
		if len(b.launchKeys) >= 4*MaxEagerExecutables {
			clear(b.launchKeys)
		}
		b.launchKeys[lkey] = fp
	}
	sv, err := b.upload(index, raw, dtype.F64, []int{ns})
	if err != nil {
		return fmt.Errorf("%s: %s scalars: %w", b.p.Name, d.Name, err)
	}
	defer func() { _ = perr(b.p.api, "destroy", C.gp_buffer_destroy(b.p.api, sv)) }()
	res, err := b.run(index, x, append(args, sv))
	if err != nil {
		return fmt.Errorf("%s: %s: %w", b.p.Name, d.Name, err)
	}
	// Results are the present in-place inputs' new values, in Inplace order.
	var targets []device.Operand
	for _, i := range d.Inplace {
		if l.In[i].Buf != nil {
			targets = append(targets, l.In[i])
		}
	}
	if len(targets) != len(res) {
		for _, pj := range res {
			_ = perr(b.p.api, "destroy", C.gp_buffer_destroy(b.p.api, pj))
		}
		return fmt.Errorf("%s: %s: %d results for %d in-place inputs", b.p.Name, d.Name, len(res), len(targets))
	}
	return b.storeAll(index, targets, res, d.Name)
}
