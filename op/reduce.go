package op

import (
	"fmt"
	"math"
	"slices"

	"github.com/gotpu/gotpu/dtype"
)

// Reductions, scans, sorts and the ops built from them (PyTorch's sum, mean,
// max, argmax, var, norm, logsumexp, softmax, cumsum, sort, topk, ...).
//
// The primitives are few and close to StableHLO:
//   - reduce: reduce over axes with kind "sum", "prod", "max" or "min" (the
//     result keeps the input dtype; sum/prod on bool are or/and; an empty
//     reduction yields the identity: 0, 1, the lowest or the highest value);
//   - argmax, argmin: index of the first maximum/minimum (NaN wins);
//   - cumulative: inclusive scan along one axis, kind "sum" or "prod";
//   - sort: stable sort along one axis returning values and indices.
//
// Everything else decomposes into those and elementwise ops.

// Reduction kinds of the reduce and cumulative primitives.
const (
	ReduceSum  = "sum"
	ReduceProd = "prod"
	ReduceMax  = "max"
	ReduceMin  = "min"
)

// reduceTorchName is PyTorch's scalar-type name used in its error messages.
func reduceTorchName(d dtype.DType) string {
	switch d {
	case dtype.Bool:
		return "Bool"
	case dtype.U8:
		return "Byte"
	case dtype.I8:
		return "Char"
	case dtype.I16:
		return "Short"
	case dtype.I32:
		return "Int"
	case dtype.I64:
		return "Long"
	case dtype.F16:
		return "Half"
	case dtype.BF16:
		return "BFloat16"
	case dtype.F32:
		return "Float"
	case dtype.F64:
		return "Double"
	}
	return d.String()
}

var (
	reduceAttrDims    = AttrSpec{Name: "dims", Type: AttrInts, Default: []int{}}
	reduceAttrKeepdim = AttrSpec{Name: "keepdim", Type: AttrBool, Default: false}
	reduceAttrDType   = AttrSpec{Name: "dtype", Type: AttrDType, Optional: true}
)

// reduceMeta is the output of reducing in over a's "dims" with "keepdim".
func reduceMeta(name string, in Meta, a Attrs, dt dtype.DType) (Meta, []bool, error) {
	red, err := ReduceAxes(name, a.Ints("dims"), len(in.Shape))
	if err != nil {
		return Meta{}, nil, err
	}
	keep := false
	if a.Has("keepdim") {
		keep = a.Bool("keepdim")
	}
	return Meta{Shape: ReducedShape(in.Shape, red, keep), DType: dt}, red, nil
}

// ReducedCount returns the number of elements each output element of a
// reduction over red combines.
func ReducedCount(shape []int, red []bool) int {
	n := 1
	for i, d := range shape {
		if red[i] {
			n *= d
		}
	}
	return n
}

// reduceCheckNonEmpty reports PyTorch's error for an identity-less reduction (max,
// amin, ...) over an empty dimension.
func reduceCheckNonEmpty(name string, shape []int, red []bool) error {
	for i, d := range shape {
		if red[i] && d == 0 {
			return fmt.Errorf("%s(): Expected reduction dim %d to have non-zero size.", name, i)
		}
	}
	return nil
}

// reduceAccumDType is the dtype sum/prod/cumsum produce: the dtype attribute if
// given, else i64 for integers and bool, else the input dtype.
func reduceAccumDType(in dtype.DType, a Attrs) dtype.DType {
	if d := a.DType("dtype"); d != dtype.Invalid {
		return d
	}
	if !in.IsFloat() {
		return dtype.I64
	}
	return in
}

// reduceComputeDType is the dtype a composite computes in: f32 for the half types
// (as PyTorch's CPU kernels accumulate), the dtype itself otherwise.
func reduceComputeDType(d dtype.DType) dtype.DType {
	if d == dtype.F16 || d == dtype.BF16 {
		return dtype.F32
	}
	return d
}

// reduceConvert returns v converted to dt (v itself if it already has dt).
func reduceConvert(b Builder, v Value, dt dtype.DType) Value {
	if b.Meta(v).DType == dt {
		return v
	}
	return Call1(b, "convert", Attrs{"dtype": dt}, v)
}

// reduceCall calls the reduce primitive.
func reduceCall(b Builder, kind string, x Value, dims []int, keepdim bool) Value {
	return Call1(b, "reduce", Attrs{"kind": kind, "dims": dims, "keepdim": keepdim}, x)
}

// reduceReshape views v with shape.
func reduceReshape(b Builder, v Value, shape []int) Value {
	if slices.Equal(b.Meta(v).Shape, shape) {
		return v
	}
	return Call1(b, "reshape", Attrs{"shape": slices.Clone(shape)}, v)
}

// reduceOptDim returns the optional "dim" attribute as dims for reduce (nil: all).
func reduceOptDim(a Attrs) []int {
	if !a.Has("dim") {
		return []int{}
	}
	return []int{a.Int("dim")}
}

func init() {
	Register(&Def{
		Name: "reduce", Kind: Primitive, Group: "reduce",
		Doc: "Reduces over dims (empty: all) with kind sum, prod, max or min, keeping the input dtype " +
			"(StableHLO reduce); empty reductions give the identity, max/min propagate NaN.",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "kind", Type: AttrString}, reduceAttrDims, reduceAttrKeepdim},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			switch k := a.String("kind"); k {
			case ReduceSum, ReduceProd, ReduceMax, ReduceMin:
			default:
				return nil, fmt.Errorf("reduce: unknown kind %q (want sum, prod, max or min)", k)
			}
			m, _, err := reduceMeta("reduce", in[0], a, in[0].DType)
			return []Meta{m}, err
		},
	})

	for _, k := range []string{"sum", "prod"} {
		kind := k
		Register(&Def{
			Name: kind, Kind: Composite, Group: "reduce",
			Doc: map[string]string{
				"sum":  "Returns the sum over dims (empty: all); integers and bool sum to int64 unless dtype is given (torch.sum).",
				"prod": "Returns the product over dims (empty: all); integers and bool multiply in int64 unless dtype is given (torch.prod).",
			}[kind],
			Inputs: []string{"input"},
			Attrs:  []AttrSpec{reduceAttrDims, reduceAttrKeepdim, reduceAttrDType},
			Infer: func(in []Meta, a Attrs) ([]Meta, error) {
				m, _, err := reduceMeta(kind, in[0], a, reduceAccumDType(in[0].DType, a))
				return []Meta{m}, err
			},
			Decompose: func(b Builder, in []Value, a Attrs) []Value {
				x := reduceConvert(b, in[0], reduceAccumDType(b.Meta(in[0]).DType, a))
				return []Value{reduceCall(b, kind, x, a.Ints("dims"), a.Bool("keepdim"))}
			},
		})
	}

	Register(&Def{
		Name: "mean", Kind: Composite, Group: "reduce",
		Doc:    "Returns the arithmetic mean over dims (empty: all); needs a floating input or dtype (torch.mean).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{reduceAttrDims, reduceAttrKeepdim, reduceAttrDType},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			dt := in[0].DType
			if d := a.DType("dtype"); d != dtype.Invalid {
				if !d.IsFloat() {
					return nil, fmt.Errorf("mean(): could not infer output dtype. Optional dtype must be either a floating point or complex dtype. Got: %s", reduceTorchName(d))
				}
				dt = d
			} else if !dt.IsFloat() {
				return nil, fmt.Errorf("mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: %s", reduceTorchName(dt))
			}
			m, _, err := reduceMeta("mean", in[0], a, dt)
			return []Meta{m}, err
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			m := b.Meta(in[0])
			red, _ := ReduceAxes("mean", a.Ints("dims"), len(m.Shape))
			s := Call1(b, "sum", a, in[0])
			n := ReducedCount(m.Shape, red)
			return []Value{Call1(b, "div", nil, s, b.Scalar(float64(n), s))}
		},
	})

	for _, k := range []string{"amax", "amin"} {
		name := k
		kind := map[string]string{"amax": ReduceMax, "amin": ReduceMin}[name]
		Register(&Def{
			Name: name, Kind: Composite, Group: "reduce",
			Doc:    fmt.Sprintf("Returns the %simum over dims (empty: all), propagating NaN; an empty reduced dim is an error (torch.%s).", kind, name),
			Inputs: []string{"input"},
			Attrs:  []AttrSpec{reduceAttrDims, reduceAttrKeepdim},
			Infer: func(in []Meta, a Attrs) ([]Meta, error) {
				m, red, err := reduceMeta(name, in[0], a, in[0].DType)
				if err != nil {
					return nil, err
				}
				if err := reduceCheckNonEmpty(name, in[0].Shape, red); err != nil {
					return nil, err
				}
				return []Meta{m}, nil
			},
			Decompose: func(b Builder, in []Value, a Attrs) []Value {
				return []Value{reduceCall(b, kind, in[0], a.Ints("dims"), a.Bool("keepdim"))}
			},
		})
	}

	for _, k := range []string{"max", "min"} {
		name := k
		amax := "a" + name
		Register(&Def{
			Name: name, Kind: Composite, Group: "reduce",
			Doc:    fmt.Sprintf("Returns the %simum of all elements as a 0-d tensor, propagating NaN (torch.%s without dim).", name, name),
			Inputs: []string{"input"},
			Infer: func(in []Meta, a Attrs) ([]Meta, error) {
				if in[0].Numel() == 0 {
					return nil, fmt.Errorf("%s(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.", name)
				}
				return []Meta{{Shape: []int{}, DType: in[0].DType}}, nil
			},
			Decompose: func(b Builder, in []Value, a Attrs) []Value {
				return []Value{Call1(b, amax, Attrs{"dims": []int{}}, in[0])}
			},
		})
		arg := "arg" + name
		Register(&Def{
			Name: name + "_dim", Kind: Composite, Group: "reduce",
			Doc:    fmt.Sprintf("Returns the %simum along dim and the index of its first occurrence (NaN wins) as (values, indices) (torch.%s with dim).", name, name),
			Inputs: []string{"input"},
			Attrs:  []AttrSpec{{Name: "dim", Type: AttrInt}, reduceAttrKeepdim},
			Infer: func(in []Meta, a Attrs) ([]Meta, error) {
				ra := Attrs{"dims": []int{a.Int("dim")}, "keepdim": a.Bool("keepdim")}
				m, red, err := reduceMeta(name, in[0], ra, in[0].DType)
				if err != nil {
					return nil, err
				}
				if err := reduceCheckNonEmpty(name, in[0].Shape, red); err != nil {
					return nil, err
				}
				return []Meta{m, {Shape: m.Shape, DType: dtype.I64}}, nil
			},
			Decompose: func(b Builder, in []Value, a Attrs) []Value {
				dim, keep := a.Int("dim"), a.Bool("keepdim")
				v := Call1(b, amax, Attrs{"dims": []int{dim}, "keepdim": keep}, in[0])
				x := in[0]
				if b.Meta(x).DType == dtype.Bool {
					x = reduceConvert(b, x, dtype.U8)
				}
				i := Call1(b, arg, Attrs{"dim": dim, "keepdim": keep}, x)
				return []Value{v, i}
			},
		})
		Register(&Def{
			Name: arg, Kind: Primitive, Group: "reduce",
			Doc: fmt.Sprintf("Returns the index (int64) of the first %simum along dim, or in the flattened input when dim is absent; "+
				"NaN counts as the %simum (torch.%s).", name, name, arg),
			Inputs: []string{"input"},
			Attrs:  []AttrSpec{{Name: "dim", Type: AttrInt, Optional: true}, reduceAttrKeepdim},
			DTypes: SetNumeric,
			Infer: func(in []Meta, a Attrs) ([]Meta, error) {
				if !a.Has("dim") {
					if in[0].Numel() == 0 {
						return nil, fmt.Errorf("%s(): Expected reduction dim to be specified for input.numel() == 0.", arg)
					}
					shape := []int{}
					if a.Bool("keepdim") {
						shape = make([]int, len(in[0].Shape))
						for i := range shape {
							shape[i] = 1
						}
					}
					return []Meta{{Shape: shape, DType: dtype.I64}}, nil
				}
				ra := Attrs{"dims": []int{a.Int("dim")}, "keepdim": a.Bool("keepdim")}
				m, red, err := reduceMeta(arg, in[0], ra, dtype.I64)
				if err != nil {
					return nil, err
				}
				if err := reduceCheckNonEmpty(arg, in[0].Shape, red); err != nil {
					return nil, err
				}
				return []Meta{m}, nil
			},
		})
	}

	Register(&Def{
		Name: "aminmax", Kind: Composite, Group: "reduce",
		Doc:    "Returns the minimum and maximum over dim (absent: all) as (min, max) (torch.aminmax).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "dim", Type: AttrInt, Optional: true}, reduceAttrKeepdim},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			m, red, err := reduceMeta("aminmax", in[0], Attrs{"dims": reduceOptDim(a), "keepdim": a.Bool("keepdim")}, in[0].DType)
			if err != nil {
				return nil, err
			}
			if err := reduceCheckNonEmpty("aminmax", in[0].Shape, red); err != nil {
				return nil, err
			}
			return []Meta{m, m}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			ra := Attrs{"dims": reduceOptDim(a), "keepdim": a.Bool("keepdim")}
			return []Value{Call1(b, "amin", ra, in[0]), Call1(b, "amax", ra, in[0])}
		},
	})

	// all / any reduce to bool (uint8 stays uint8, as PyTorch).
	for _, k := range []string{"all", "any"} {
		name := k
		kind := map[string]string{"all": ReduceMin, "any": ReduceMax}[name]
		Register(&Def{
			Name: name, Kind: Composite, Group: "reduce",
			Doc: map[string]string{
				"all": "Reports whether every element over dims (empty: all) is nonzero; bool result (uint8 for uint8 input) (torch.all).",
				"any": "Reports whether any element over dims (empty: all) is nonzero; bool result (uint8 for uint8 input) (torch.any).",
			}[name],
			Inputs: []string{"input"},
			Attrs:  []AttrSpec{reduceAttrDims, reduceAttrKeepdim},
			Infer: func(in []Meta, a Attrs) ([]Meta, error) {
				dt := dtype.Bool
				if in[0].DType == dtype.U8 {
					dt = dtype.U8
				}
				m, _, err := reduceMeta(name, in[0], a, dt)
				return []Meta{m}, err
			},
			Decompose: func(b Builder, in []Value, a Attrs) []Value {
				x := in[0]
				dt := b.Meta(x).DType
				if dt != dtype.Bool {
					x = Call1(b, "ne", nil, x, b.Scalar(int64(0), x))
				}
				r := reduceCall(b, kind, x, a.Ints("dims"), a.Bool("keepdim"))
				if dt == dtype.U8 {
					r = reduceConvert(b, r, dtype.U8)
				}
				return []Value{r}
			},
		})
	}

	Register(&Def{
		Name: "count_nonzero", Kind: Composite, Group: "reduce",
		Doc:    "Returns the number of nonzero elements over dims (empty: all) as int64 (torch.count_nonzero).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{reduceAttrDims},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			m, _, err := reduceMeta("count_nonzero", in[0], a, dtype.I64)
			return []Meta{m}, err
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			x := in[0]
			if b.Meta(x).DType != dtype.Bool {
				x = Call1(b, "ne", nil, x, b.Scalar(int64(0), x))
			}
			return []Value{Call1(b, "sum", Attrs{"dims": a.Ints("dims")}, x)}
		},
	})

	registerReduceMoments()
	registerReduceNorms()
	registerReduceScans()
	registerReduceSorts()
}

// Variance and standard deviation.
func registerReduceMoments() {
	attrs := []AttrSpec{reduceAttrDims, {Name: "correction", Type: AttrFloat, Default: 1.0}, reduceAttrKeepdim}
	inferVar := func(name string, nout int) InferFunc {
		return func(in []Meta, a Attrs) ([]Meta, error) {
			if !in[0].DType.IsFloat() {
				return nil, fmt.Errorf("%s: std and var only support floating point and complex dtypes", name)
			}
			m, _, err := reduceMeta(name, in[0], a, in[0].DType)
			if err != nil {
				return nil, err
			}
			out := []Meta{m}
			if nout == 2 {
				out = append(out, m)
			}
			return out, nil
		}
	}
	// variance returns var (in the input dtype) and the mean (keepdim as asked).
	variance := func(b Builder, x Value, a Attrs) (v, mean Value) {
		m := b.Meta(x)
		red, _ := ReduceAxes("var", a.Ints("dims"), len(m.Shape))
		n := ReducedCount(m.Shape, red)
		dims, keep := a.Ints("dims"), a.Bool("keepdim")
		xc := reduceConvert(b, x, reduceComputeDType(m.DType))
		mu := Call1(b, "mean", Attrs{"dims": dims, "keepdim": true}, xc)
		d := Call1(b, "sub", nil, xc, mu)
		ss := Call1(b, "sum", Attrs{"dims": dims, "keepdim": keep}, Call1(b, "mul", nil, d, d))
		v = Call1(b, "div", nil, ss, b.Scalar(math.Max(0, float64(n)-a.Float("correction")), ss))
		mean = reduceReshape(b, mu, b.Meta(v).Shape)
		return reduceConvert(b, v, m.DType), reduceConvert(b, mean, m.DType)
	}
	Register(&Def{
		Name: "var", Kind: Composite, Group: "reduce",
		Doc:    "Returns the variance over dims (empty: all) with the given correction (1: unbiased) (torch.var).",
		Inputs: []string{"input"}, Attrs: attrs,
		Infer: inferVar("var", 1),
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			v, _ := variance(b, in[0], a)
			return []Value{v}
		},
	})
	Register(&Def{
		Name: "std", Kind: Composite, Group: "reduce",
		Doc:    "Returns the standard deviation over dims (empty: all) with the given correction (1: unbiased) (torch.std).",
		Inputs: []string{"input"}, Attrs: attrs,
		Infer: inferVar("std", 1),
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			return []Value{Call1(b, "sqrt", nil, Call1(b, "var", a, in[0]))}
		},
	})
	Register(&Def{
		Name: "var_mean", Kind: Composite, Group: "reduce",
		Doc:    "Returns the variance and mean over dims as (var, mean) (torch.var_mean).",
		Inputs: []string{"input"}, Attrs: attrs,
		Infer: inferVar("var_mean", 2),
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			v, m := variance(b, in[0], a)
			return []Value{v, m}
		},
	})
	Register(&Def{
		Name: "std_mean", Kind: Composite, Group: "reduce",
		Doc:    "Returns the standard deviation and mean over dims as (std, mean) (torch.std_mean).",
		Inputs: []string{"input"}, Attrs: attrs,
		Infer: inferVar("std_mean", 2),
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			r := b.Call("var_mean", in, a)
			return []Value{Call1(b, "sqrt", nil, r[0]), r[1]}
		},
	})
}

// Norms, logsumexp, softmax.
func registerReduceNorms() {
	Register(&Def{
		Name: "norm", Kind: Composite, Group: "reduce",
		Doc: "Returns the p-norm over dims (empty: all): p = 2 (also Frobenius), 1, inf (max |x|), -inf (min |x|), " +
			"0 (count of nonzeros) or any other float (sum |x|^p)^(1/p); dtype converts the input first (torch.norm).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "p", Type: AttrFloat, Default: 2.0}, reduceAttrDims, reduceAttrKeepdim, reduceAttrDType},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			dt := in[0].DType
			if d := a.DType("dtype"); d != dtype.Invalid {
				if !d.IsFloat() {
					return nil, fmt.Errorf("norm(): the desired output dtype should be either floating point or complex. Got %s instead.", reduceTorchName(d))
				}
				dt = d
			} else if !dt.IsFloat() {
				return nil, fmt.Errorf("norm(): input dtype should be either floating point or complex. Got %s instead.", reduceTorchName(dt))
			}
			m, _, err := reduceMeta("norm", in[0], a, dt)
			return []Meta{m}, err
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			x := in[0]
			m := b.Meta(x)
			dt := m.DType
			if d := a.DType("dtype"); d != dtype.Invalid {
				dt = d
			}
			red, _ := ReduceAxes("norm", a.Ints("dims"), len(m.Shape))
			n := ReducedCount(m.Shape, red)
			x = reduceConvert(b, x, reduceComputeDType(dt))
			p := a.Float("p")
			ra := Attrs{"dims": a.Ints("dims"), "keepdim": a.Bool("keepdim")}
			var r Value
			switch {
			case n == 0 || p == 1:
				// Every norm of an empty set is 0, as torch.norm gives.
				r = Call1(b, "sum", ra, Call1(b, "abs", nil, x))
			case p == 2:
				r = Call1(b, "sqrt", nil, Call1(b, "sum", ra, Call1(b, "mul", nil, x, x)))
			case math.IsInf(p, 1):
				r = Call1(b, "amax", ra, Call1(b, "abs", nil, x))
			case math.IsInf(p, -1):
				r = Call1(b, "amin", ra, Call1(b, "abs", nil, x))
			case p == 0:
				nz := Call1(b, "ne", nil, x, b.Scalar(int64(0), x))
				r = Call1(b, "sum", ra.With("dtype", b.Meta(x).DType), nz)
			default:
				pw := Call1(b, "pow", nil, Call1(b, "abs", nil, x), b.Scalar(p, x))
				s := Call1(b, "sum", ra, pw)
				r = Call1(b, "pow", nil, s, b.Scalar(1/p, s))
			}
			return []Value{reduceConvert(b, r, dt)}
		},
	})

	Register(&Def{
		Name: "logsumexp", Kind: Composite, Group: "reduce",
		Doc: "Returns log(sum(exp(x))) over dims (empty: all), computed stably; rows of -inf give -inf " +
			"and integers promote to the default float (torch.logsumexp).",
		Inputs:  []string{"input"},
		Attrs:   []AttrSpec{reduceAttrDims, reduceAttrKeepdim},
		Promote: PromoteToFloat,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			m, _, err := reduceMeta("logsumexp", in[0], a, in[0].DType)
			return []Meta{m}, err
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			// As PyTorch: subtract the max (taken as 0 where it is infinite),
			// sum the exps, take the log and add the max back.
			x := in[0]
			dims, keep := a.Ints("dims"), a.Bool("keepdim")
			if b.Meta(x).Numel() == 0 {
				s := Call1(b, "sum", Attrs{"dims": dims, "keepdim": keep}, Call1(b, "exp", nil, x))
				return []Value{Call1(b, "log", nil, s)}
			}
			mx := Call1(b, "amax", Attrs{"dims": dims, "keepdim": true}, x)
			isInf := Call1(b, "eq", nil, Call1(b, "abs", nil, mx), b.Scalar(math.Inf(1), mx))
			mx = Call1(b, "where", nil, isInf, b.Scalar(0.0, mx), mx)
			e := Call1(b, "exp", nil, Call1(b, "sub", nil, x, mx))
			s := Call1(b, "log", nil, Call1(b, "sum", Attrs{"dims": dims, "keepdim": keep}, e))
			return []Value{Call1(b, "add", nil, s, reduceReshape(b, mx, b.Meta(s).Shape))}
		},
	})

	for _, k := range []string{"softmax", "log_softmax"} {
		name := k
		Register(&Def{
			Name: name, Kind: Composite, Group: "reduce",
			Doc: map[string]string{
				"softmax":     "Returns softmax, exp(x - max) / sum(exp(x - max)) along dim; dtype converts the input first (torch.softmax).",
				"log_softmax": "Returns log-softmax, x - max - log(sum(exp(x - max))) along dim; dtype converts the input first (torch.log_softmax).",
			}[name],
			Inputs: []string{"input"},
			Attrs:  []AttrSpec{{Name: "dim", Type: AttrInt}, reduceAttrDType},
			Infer: func(in []Meta, a Attrs) ([]Meta, error) {
				dt := in[0].DType
				if d := a.DType("dtype"); d != dtype.Invalid {
					dt = d
				}
				if !dt.IsFloat() {
					return nil, fmt.Errorf("%s(): not implemented for '%s' (needs a floating point input or dtype)", name, reduceTorchName(dt))
				}
				if _, err := NormAxis(name, a.Int("dim"), len(in[0].Shape)); err != nil {
					return nil, err
				}
				return []Meta{{Shape: in[0].Shape, DType: dt}}, nil
			},
			Decompose: func(b Builder, in []Value, a Attrs) []Value {
				x := in[0]
				dt := b.Meta(x).DType
				if d := a.DType("dtype"); d != dtype.Invalid {
					dt = d
				}
				x = reduceConvert(b, x, reduceComputeDType(dt))
				dims := []int{a.Int("dim")}
				// The reduce primitive, not amax: an empty lane has no max and
				// needs none.
				mx := reduceCall(b, ReduceMax, x, dims, true)
				sh := Call1(b, "sub", nil, x, mx)
				s := Call1(b, "sum", Attrs{"dims": dims, "keepdim": true}, Call1(b, "exp", nil, sh))
				var r Value
				if name == "softmax" {
					r = Call1(b, "div", nil, Call1(b, "exp", nil, sh), s)
				} else {
					r = Call1(b, "sub", nil, sh, Call1(b, "log", nil, s))
				}
				return []Value{reduceConvert(b, r, dt)}
			},
		})
	}
}

// Cumulative sums and products.
func registerReduceScans() {
	Register(&Def{
		Name: "cumulative", Kind: Primitive, Group: "reduce",
		Doc: "Inclusive scan along dim with kind sum or prod, keeping the dtype (accumulating f32 in f64 " +
			"and f16/bf16 in f32, as PyTorch's CPU cumsum).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "kind", Type: AttrString}, {Name: "dim", Type: AttrInt}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if k := a.String("kind"); k != ReduceSum && k != ReduceProd {
				return nil, fmt.Errorf("cumulative: unknown kind %q (want sum or prod)", k)
			}
			if _, err := NormAxis("cumulative", a.Int("dim"), len(in[0].Shape)); err != nil {
				return nil, err
			}
			return []Meta{{Shape: in[0].Shape, DType: in[0].DType}}, nil
		},
	})
	for _, k := range []string{"cummax", "cummin"} {
		name := k
		Register(&Def{
			Name: name, Kind: Primitive, Group: "reduce",
			Doc: fmt.Sprintf("Returns the running %simum along dim and the index where it was last attained (ties and NaN "+
				"take the later index; NaN propagates) as (values, indices) (torch.%s).", name[3:], name),
			Inputs: []string{"input"},
			Attrs:  []AttrSpec{{Name: "dim", Type: AttrInt}},
			Infer: func(in []Meta, a Attrs) ([]Meta, error) {
				if _, err := NormAxis(name, a.Int("dim"), len(in[0].Shape)); err != nil {
					return nil, err
				}
				return []Meta{{Shape: in[0].Shape, DType: in[0].DType}, {Shape: in[0].Shape, DType: dtype.I64}}, nil
			},
		})
	}
	for _, k := range []string{"cumsum", "cumprod"} {
		name := k
		kind := map[string]string{"cumsum": ReduceSum, "cumprod": ReduceProd}[name]
		Register(&Def{
			Name: name, Kind: Composite, Group: "reduce",
			Doc:    fmt.Sprintf("Returns the cumulative %s along dim; integers and bool give int64 unless dtype is given (torch.%s).", map[string]string{"sum": "sum", "prod": "product"}[kind], name),
			Inputs: []string{"input"},
			Attrs:  []AttrSpec{{Name: "dim", Type: AttrInt}, reduceAttrDType},
			Infer: func(in []Meta, a Attrs) ([]Meta, error) {
				if _, err := NormAxis(name, a.Int("dim"), len(in[0].Shape)); err != nil {
					return nil, err
				}
				return []Meta{{Shape: in[0].Shape, DType: reduceAccumDType(in[0].DType, a)}}, nil
			},
			Decompose: func(b Builder, in []Value, a Attrs) []Value {
				x := reduceConvert(b, in[0], reduceAccumDType(b.Meta(in[0]).DType, a))
				return []Value{Call1(b, "cumulative", Attrs{"kind": kind, "dim": a.Int("dim")}, x)}
			},
		})
	}
}

// Sorting and selection.
func registerReduceSorts() {
	sortAttrs := []AttrSpec{{Name: "dim", Type: AttrInt, Default: -1}, {Name: "descending", Type: AttrBool, Default: false},
		{Name: "stable", Type: AttrBool, Default: false}}
	Register(&Def{
		Name: "sort", Kind: Primitive, Group: "reduce",
		Doc: "Sorts along dim, returning (values, indices); the sort is always stable and NaN sorts as the " +
			"largest value (torch.sort).",
		Inputs: []string{"input"},
		Attrs:  sortAttrs,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if _, err := NormAxis("sort", a.Int("dim"), len(in[0].Shape)); err != nil {
				return nil, err
			}
			return []Meta{{Shape: in[0].Shape, DType: in[0].DType}, {Shape: in[0].Shape, DType: dtype.I64}}, nil
		},
	})
	Register(&Def{
		Name: "median_dim", Kind: Composite, Group: "reduce",
		Doc: "Returns the lower median along dim and its index as (values, indices); a lane holding NaN gives NaN " +
			"and the index of its first NaN (torch.median with dim).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "dim", Type: AttrInt}, reduceAttrKeepdim},
		DTypes: SetNumeric,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			ra := Attrs{"dims": []int{a.Int("dim")}, "keepdim": a.Bool("keepdim")}
			m, red, err := reduceMeta("median", in[0], ra, in[0].DType)
			if err != nil {
				return nil, err
			}
			if err := reduceCheckNonEmpty("median", in[0].Shape, red); err != nil {
				return nil, err
			}
			return []Meta{m, {Shape: m.Shape, DType: dtype.I64}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			x := in[0]
			m := b.Meta(x)
			dim, keep := a.Int("dim"), a.Bool("keepdim")
			red, _ := ReduceAxes("median", []int{dim}, len(m.Shape))
			outShape := ReducedShape(m.Shape, red, keep)
			if len(m.Shape) == 0 {
				x, dim = reduceReshape(b, x, []int{1}), 0
			}
			ax, _ := NormAxis("median", dim, len(b.Meta(x).Shape))
			n := b.Meta(x).Shape[ax]
			sorted := b.Call("sort", []Value{x}, Attrs{"dim": ax, "stable": true})
			sel := Attrs{"dim": ax, "index": (n - 1) / 2}
			v, i := Call1(b, "select", sel, sorted[0]), Call1(b, "select", sel, sorted[1])
			if m.DType.IsFloat() {
				isNaN := Call1(b, "ne", nil, x, x)
				anyNaN := Call1(b, "any", Attrs{"dims": []int{ax}}, isNaN)
				first := Call1(b, "argmax", Attrs{"dim": ax}, reduceConvert(b, isNaN, dtype.U8))
				v = Call1(b, "where", nil, anyNaN, b.Scalar(math.NaN(), v), v)
				i = Call1(b, "where", nil, anyNaN, first, i)
			}
			return []Value{reduceReshape(b, v, outShape), reduceReshape(b, i, outShape)}
		},
	})
	Register(&Def{
		Name: "median", Kind: Composite, Group: "reduce",
		Doc:    "Returns the lower median of all elements as a 0-d tensor; NaN if any element is NaN or the input is empty (torch.median).",
		Inputs: []string{"input"},
		DTypes: SetNumeric,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if in[0].Numel() == 0 && !in[0].DType.IsFloat() {
				return nil, fmt.Errorf("median(): cannot compute the median of an empty %s tensor", reduceTorchName(in[0].DType))
			}
			return []Meta{{Shape: []int{}, DType: in[0].DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			x := in[0]
			if b.Meta(x).Numel() == 0 {
				return []Value{Call1(b, "mean", nil, x)} // 0/0: NaN, as PyTorch
			}
			x = reduceReshape(b, x, []int{b.Meta(x).Numel()})
			return []Value{b.Call("median_dim", []Value{x}, Attrs{"dim": 0})[0]}
		},
	})
	Register(&Def{
		Name: "argsort", Kind: Composite, Group: "reduce",
		Doc:    "Returns the indices that sort the input along dim (torch.argsort).",
		Inputs: []string{"input"},
		Attrs:  sortAttrs,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if _, err := NormAxis("argsort", a.Int("dim"), len(in[0].Shape)); err != nil {
				return nil, err
			}
			return []Meta{{Shape: in[0].Shape, DType: dtype.I64}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			return []Value{b.Call("sort", in, a)[1]}
		},
	})
	Register(&Def{
		Name: "topk", Kind: Composite, Group: "reduce",
		Doc: "Returns the k largest (or smallest) elements along dim and their indices as (values, indices), " +
			"in sorted order (torch.topk; sorted=false returns them sorted too).",
		Inputs: []string{"input"},
		Attrs: []AttrSpec{{Name: "k", Type: AttrInt}, {Name: "dim", Type: AttrInt, Default: -1},
			{Name: "largest", Type: AttrBool, Default: true}, {Name: "sorted", Type: AttrBool, Default: true}},
		DTypes: SetNumeric,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			ax, err := NormAxis("topk", a.Int("dim"), len(in[0].Shape))
			if err != nil {
				return nil, err
			}
			shape := slices.Clone(in[0].Shape)
			size := 1
			if len(shape) > 0 {
				size = shape[ax]
			}
			k := a.Int("k")
			if k < 0 || k > size {
				return nil, fmt.Errorf("topk(): selected index k out of range (k = %d, dimension size %d)", k, size)
			}
			if len(shape) > 0 {
				shape[ax] = k
			}
			return []Meta{{Shape: shape, DType: in[0].DType}, {Shape: shape, DType: dtype.I64}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			dim := a.Int("dim")
			r := b.Call("sort", in, Attrs{"dim": dim, "descending": a.Bool("largest"), "stable": true})
			if len(b.Meta(in[0]).Shape) == 0 {
				return r
			}
			sa := Attrs{"dim": dim, "start": 0, "end": a.Int("k")}
			return []Value{Call1(b, "slice", sa, r[0]), Call1(b, "slice", sa, r[1])}
		},
	})
}
