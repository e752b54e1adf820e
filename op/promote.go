package op

import "github.com/gotpu/gotpu/dtype"

// WrappedScalarDType returns the dtype of a Go scalar wrapped as a 0-d tensor
// (like a Python number): f64 for floats, i64 for integers, bool for bools;
// Invalid for any other type.
func WrappedScalarDType(v any) dtype.DType {
	switch v.(type) {
	case float64, float32:
		return dtype.F64
	case int64, int, int32:
		return dtype.I64
	case bool:
		return dtype.Bool
	}
	return dtype.Invalid
}

// PromotedDTypes applies d's type promotion (PyTorch's torch.result_type,
// Def.PromoteWith, PromoteToFloat) to inputs described by in, with attrs a
// already normalized. An absent optional input has a zero Meta (DType
// Invalid). It returns, for every input, the dtype that input must have
// when the op runs (Invalid for an absent input; an input's own dtype when
// it does not take part in promotion) and the common dtype of the promoted
// inputs (Invalid when d does not promote). A caller converts each present
// input whose dtype differs from its target, and materialises each wrapped
// Go scalar at its target dtype. The eager runtime and the IR tracer both
// call it, so the promotion rule is written once.
func PromotedDTypes(d *Def, in []Meta, a Attrs, defaultFloat dtype.DType) (targets []dtype.DType, common dtype.DType) {
	p := d.Promote
	var extra []any
	if d.PromoteWith != nil {
		p, extra = d.PromoteWith(a)
	}
	if p != NoPromotion {
		var buf [4]dtype.Operand
		ops := buf[:0]
		for i, m := range in {
			if m.DType != dtype.Invalid && d.Promoted(i) {
				ops = append(ops, dtype.Operand{DType: m.DType, Dim: len(m.Shape), Wrapped: m.Wrapped})
			}
		}
		for _, v := range extra {
			if v != nil {
				ops = append(ops, dtype.Operand{DType: WrappedScalarDType(v), Wrapped: true})
			}
		}
		if len(ops) > 0 {
			common = dtype.ResultType(defaultFloat, ops...)
			if p == PromoteToFloat && !common.IsFloat() {
				common = defaultFloat
			}
		}
	}
	targets = make([]dtype.DType, len(in))
	for i, m := range in {
		targets[i] = m.DType
		if m.DType != dtype.Invalid && common != dtype.Invalid && d.Promoted(i) {
			targets[i] = common
		}
	}
	return targets, common
}
