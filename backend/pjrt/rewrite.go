//go:build pjrt

package pjrt

import (
	"fmt"
	"slices"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// Launch-time rewrites: where XLA's arithmetic differs from gotpu's
// contract (PyTorch's), the one-node graph computes the op another way.
// Each rewrite returns handled=false when it does not apply.
//
//   - convert from a float to u8, i8 or i16 goes through i64: XLA saturates
//     out-of-range values, PyTorch (and the cpu backend) truncate to an
//     integer and wrap (-4.0 -> 252 in u8).
//   - dot_general and convolution: the device default precision ("") is
//     the device's DefaultPrecision, emitted explicitly (XLA:GPU's own
//     default is TF32); on f32 with precision "medium" or "high", XLA:CPU
//     ignores precision_config (computes in f32) and XLA:GPU reads them as
//     TF32 passes, while gotpu's contract is one bf16 pass (inputs rounded
//     to bf16, exact products, f32 sums) or three (hi*hi + hi*lo + lo*hi),
//     which the graph spells out (a TPU's precision_config means exactly
//     that, so there the attribute goes through).
//   - index_put's values in another dtype than the input (the runtime's
//     wrapped Go scalar, which a graph parameter cannot be) are converted
//     to the input's dtype, as PyTorch casts them.
//   - erf on f32/f16/bf16 is ±1 for |x| >= 4, where the correctly rounded
//     result is ±1: XLA's approximation saturates at ±0.99999982, so
//     gelu(-inf) came out -inf*1.8e-7 = -inf instead of PyTorch's NaN.
//   - sums and products (reduce, reduce_window, adaptive_avg_pool2d) on
//     f16/bf16 accumulate in f32 and round once (XLA accumulates in the
//     narrow type; PyTorch's reductions and pooling accumulate in f32).
func rewrite(g *ir.Graph, d *op.Def, a op.Attrs, ins []*ir.Value, outs []op.Meta, pol precisionPolicy) ([]*ir.Value, bool, error) {
	switch d {
	case op.Convert:
		return rewriteConvert(g, a, ins, outs)
	case op.DotGeneral, op.Convolution:
		p, _ := a["precision"].(string)
		changed := false
		if p == "" && pol.def != "" {
			// The device default is a precision of gotpu's, never the
			// plugin's own: XLA:GPU's DEFAULT is TF32, where PyTorch (and
			// gotpu's "highest") multiply f32 in f32.
			a = maps(a)
			a["precision"] = pol.def
			changed = true
		}
		if !pol.native {
			res, handled, err := rewritePrecision(g, d, a, ins, outs)
			if handled || err != nil {
				return res, handled, err
			}
		}
		if changed {
			return g.AddNode(d, a, ins, cloneMetas(outs)).Out, true, nil
		}
		return nil, false, nil
	case op.Erf:
		return rewriteErf(g, ins, outs)
	case op.IndexPut:
		return rewriteIndexPut(g, d, a, ins, outs)
	case op.ReduceWindow, op.Reduce, op.AdaptiveAvgPool2d:
		return rewriteNarrowSum(g, d, a, ins, outs)
	}
	return nil, false, nil
}

// precisionPolicy is how a device treats the precision attribute of
// dot_general and convolution: def replaces the empty "device default"
// (its DefaultPrecision), and native says the plugin's precision_config
// already has gotpu's meaning (a TPU: DEFAULT is one bf16 pass, HIGH
// three), so medium and high need no emulation there.
type precisionPolicy struct {
	def    string
	native bool
}

// cloneMetas copies ms with fresh shapes.
func cloneMetas(ms []op.Meta) []op.Meta {
	out := make([]op.Meta, len(ms))
	for i, m := range ms {
		out[i] = op.Meta{Shape: slices.Clone(m.Shape), DType: m.DType}
		if out[i].Shape == nil {
			out[i].Shape = []int{}
		}
	}
	return out
}

func rewriteConvert(g *ir.Graph, a op.Attrs, ins []*ir.Value, outs []op.Meta) ([]*ir.Value, bool, error) {
	to := outs[0].DType
	if ins[0] == nil || !ins[0].Meta.DType.IsFloat() || (to != dtype.U8 && to != dtype.I8 && to != dtype.I16) {
		return nil, false, nil
	}
	v, err := convertTo(g, ins[0], dtype.I64)
	if err != nil {
		return nil, false, err
	}
	v, err = convertTo(g, v, to)
	return []*ir.Value{v}, true, err
}

func addNode(g *ir.Graph, name string, a op.Attrs, in []*ir.Value, out op.Meta) (*ir.Value, error) {
	d, ok := op.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("pjrt: op %s missing from the op table", name)
	}
	na, err := d.Normalize(a)
	if err != nil {
		return nil, fmt.Errorf("pjrt: %s: %w", name, err)
	}
	return g.AddNode(d, na, in, []op.Meta{out}).Out[0], nil
}

// bf16Round returns v (f32) rounded to bf16 and back.
func bf16Round(g *ir.Graph, v *ir.Value) (*ir.Value, error) {
	h, err := convertTo(g, v, dtype.BF16)
	if err != nil {
		return nil, err
	}
	return convertTo(g, h, dtype.F32)
}

func rewritePrecision(g *ir.Graph, d *op.Def, a op.Attrs, ins []*ir.Value, outs []op.Meta) ([]*ir.Value, bool, error) {
	p, _ := a["precision"].(string)
	if (p != op.PrecisionMedium && p != op.PrecisionHigh) || ins[0] == nil || ins[0].Meta.DType != dtype.F32 {
		return nil, false, nil
	}
	na := make(op.Attrs, len(a))
	for k, v := range a {
		na[k] = v
	}
	na["precision"] = op.PrecisionHighest
	call := func(x, y *ir.Value, rest []*ir.Value) *ir.Value {
		in := append([]*ir.Value{x, y}, rest...)
		return g.AddNode(d, na, in, []op.Meta{{Shape: slices.Clone(outs[0].Shape), DType: outs[0].DType}}).Out[0]
	}
	xh, err := bf16Round(g, ins[0])
	if err != nil {
		return nil, false, err
	}
	yh, err := bf16Round(g, ins[1])
	if err != nil {
		return nil, false, err
	}
	rest := ins[2:]
	if p == op.PrecisionMedium {
		return []*ir.Value{call(xh, yh, rest)}, true, nil
	}
	sub := func(x, y *ir.Value) (*ir.Value, error) {
		return addNode(g, "sub", nil, []*ir.Value{x, y}, op.Meta{Shape: slices.Clone(x.Meta.Shape), DType: x.Meta.DType})
	}
	xr, err := sub(ins[0], xh)
	if err != nil {
		return nil, false, err
	}
	yr, err := sub(ins[1], yh)
	if err != nil {
		return nil, false, err
	}
	xl, err := bf16Round(g, xr)
	if err != nil {
		return nil, false, err
	}
	yl, err := bf16Round(g, yr)
	if err != nil {
		return nil, false, err
	}
	none := make([]*ir.Value, len(rest)) // the bias (convolution) is added once
	// Small terms first, as a fused three-pass kernel accumulates them.
	s := call(xl, yh, none)
	m := outs[0]
	t, err := addNode(g, "add", nil, []*ir.Value{s, call(xh, yl, none)}, m)
	if err != nil {
		return nil, false, err
	}
	r, err := addNode(g, "add", nil, []*ir.Value{t, call(xh, yh, rest)}, m)
	return []*ir.Value{r}, true, err
}

func rewriteNarrowSum(g *ir.Graph, d *op.Def, a op.Attrs, ins []*ir.Value, outs []op.Meta) ([]*ir.Value, bool, error) {
	dt := outs[0].DType
	k, _ := a["kind"].(string)
	if (d != op.AdaptiveAvgPool2d && k != "sum" && k != "prod") || (dt != dtype.F16 && dt != dtype.BF16) {
		return nil, false, nil
	}
	x, err := convertTo(g, ins[0], dtype.F32)
	if err != nil {
		return nil, false, err
	}
	y := g.AddNode(d, a, []*ir.Value{x}, []op.Meta{{Shape: slices.Clone(outs[0].Shape), DType: dtype.F32}}).Out[0]
	y, err = convertTo(g, y, dt)
	return []*ir.Value{y}, true, err
}

func rewriteErf(g *ir.Graph, ins []*ir.Value, outs []op.Meta) ([]*ir.Value, bool, error) {
	x := ins[0]
	dt := x.Meta.DType
	if dt != dtype.F32 && dt != dtype.F16 && dt != dtype.BF16 {
		return nil, false, nil
	}
	m := op.Meta{Shape: slices.Clone(x.Meta.Shape), DType: dt}
	raw := make([]byte, dt.Size())
	dtype.PutFloat64(dt, raw, 0, 4)
	four := g.AddConst(op.Meta{Shape: []int{}, DType: dt}, raw)
	ax, err := addNode(g, "abs", nil, []*ir.Value{x}, m)
	if err != nil {
		return nil, false, err
	}
	big, err := addNode(g, "ge", nil, []*ir.Value{ax, four}, op.Meta{Shape: slices.Clone(m.Shape), DType: dtype.Bool})
	if err != nil {
		return nil, false, err
	}
	sg, err := addNode(g, "sign", nil, []*ir.Value{x}, m)
	if err != nil {
		return nil, false, err
	}
	e, err := addNode(g, "erf", nil, []*ir.Value{x}, m)
	if err != nil {
		return nil, false, err
	}
	r, err := addNode(g, "where", nil, []*ir.Value{big, sg, e}, outs[0])
	return []*ir.Value{r}, true, err
}

func rewriteIndexPut(g *ir.Graph, d *op.Def, a op.Attrs, ins []*ir.Value, outs []op.Meta) ([]*ir.Value, bool, error) {
	if len(ins) < 2 || ins[0] == nil || ins[1] == nil || ins[1].Meta.DType == ins[0].Meta.DType {
		return nil, false, nil
	}
	v, err := convertTo(g, ins[1], ins[0].Meta.DType)
	if err != nil {
		return nil, false, err
	}
	in := slices.Clone(ins)
	in[1] = v
	return g.AddNode(d, a, in, outs).Out, true, nil
}
