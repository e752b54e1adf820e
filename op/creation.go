package op

import (
	"fmt"
	"math"
	"slices"

	"github.com/gotpu/gotpu/dtype"
)

// Creation and random ops. Primitives: full, iota and random_bits; the rest
// (zeros, ones, arange, linspace, eye, tril, triu, rand, randn, randint,
// normal, uniform, bernoulli, multinomial, randperm) are composites over
// them and other groups' ops. Ops without tensor inputs run on the device
// the caller names (tensor.ApplyOn); inside a decomposition, on the device of
// the op being decomposed.
//
// Random numbers: random_bits is a counter-based Philox4x32-10 generator.
// Element i of a draw with attributes (seed, offset) is the Philox block of
// counter (offset + i, stream) under key seed, so results depend only on the
// seed, the offset and the element's index — never on the device, the mode
// or how a kernel splits its work. The runtime reserves one counter per
// output element (tensor.Generator), so offsets count Philox blocks.

// Random-op attributes filled by the runtime from a Generator.
var randomAttrs = []AttrSpec{
	{Name: "seed", Type: AttrInt, Optional: true},
	{Name: "offset", Type: AttrInt, Optional: true},
}

// UniformDigits is the number of random mantissa bits a uniform draw of
// dtype d uses (as PyTorch: the dtype's significand digits), so that every
// value k*2^-digits is exact in d and below 1.
func UniformDigits(d dtype.DType) int {
	switch d {
	case dtype.F64:
		return 53
	case dtype.F16:
		return 11
	case dtype.BF16:
		return 8
	}
	return 24
}

// ScalarDType is the dtype PyTorch gives a Python number when it alone sets
// a new tensor's dtype: bool, i64, or (for floats) f32, the default float.
// The typed API substitutes tensor.DefaultDType for floats before calling.
func ScalarDType(v any) dtype.DType {
	switch v.(type) {
	case bool:
		return dtype.Bool
	case int64, int:
		return dtype.I64
	}
	return dtype.F32
}

func scalarFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	case int:
		return float64(x)
	case bool:
		if x {
			return 1
		}
	}
	return 0
}

func isFloatScalar(v any) bool { _, ok := v.(float64); return ok }

// ScalarFits returns an error, as PyTorch's checked scalar conversion does,
// when v cannot be converted to d without overflow: an integer outside d's
// range (unsigned types accept negatives down to -max, which wrap), or a
// finite float beyond d's largest finite value. Bool targets accept anything.
func ScalarFits(name string, v any, d dtype.DType) error {
	var lo, hi float64
	switch d {
	case dtype.U8:
		lo, hi = -255, 255
	case dtype.I8:
		lo, hi = math.MinInt8, math.MaxInt8
	case dtype.I16:
		lo, hi = math.MinInt16, math.MaxInt16
	case dtype.I32:
		lo, hi = math.MinInt32, math.MaxInt32
	case dtype.I64:
		lo, hi = math.MinInt64, math.MaxInt64
	case dtype.F16:
		lo, hi = -65504, 65504
	case dtype.BF16:
		lo, hi = -3.3895313892515355e38, 3.3895313892515355e38
	case dtype.F32:
		lo, hi = -math.MaxFloat32, math.MaxFloat32
	default:
		return nil
	}
	f := scalarFloat(v)
	if _, isF := v.(float64); isF && d == dtype.U8 {
		lo = 0 // PyTorch lets only integers wrap into unsigned types
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		if d.IsFloat() {
			return nil
		}
	} else if _, ok := v.(int64); ok && d == dtype.I64 {
		return nil
	} else if f >= lo && f <= hi {
		return nil
	}
	return fmt.Errorf("%s: value cannot be converted to type %s without overflow", name, d.TorchName())
}

// CheckShape returns an error naming op for a negative dimension.
func CheckShape(name string, shape []int) error {
	for _, d := range shape {
		if d < 0 {
			return fmt.Errorf("%s: Trying to create tensor with negative dimension %d: %v", name, d, shape)
		}
	}
	return nil
}

func shapeRule(name string, dt func(a Attrs) dtype.DType) InferFunc {
	return func(in []Meta, a Attrs) ([]Meta, error) {
		shape := a.Ints("shape")
		if err := CheckShape(name, shape); err != nil {
			return nil, err
		}
		return []Meta{{Shape: slices.Clone(shape), DType: dt(a)}}, nil
	}
}

// dtypeOr returns attribute "dtype" or def when it is absent.
func dtypeOr(a Attrs, def dtype.DType) dtype.DType {
	if d := a.DType("dtype"); d != dtype.Invalid {
		return d
	}
	return def
}

// likeRule is the shape rule of *_like ops: input's shape, dtype attr or
// input's dtype.
func likeRule(in []Meta, a Attrs) ([]Meta, error) {
	return []Meta{{Shape: slices.Clone(in[0].Shape), DType: dtypeOr(a, in[0].DType)}}, nil
}

func optDType() AttrSpec { return AttrSpec{Name: "dtype", Type: AttrDType, Optional: true} }

// ArangeLen returns the number of elements of arange(start, end, step)
// (ceil((end-start)/step)) or an error with PyTorch's message.
func ArangeLen(start, end, step float64) (int, error) {
	if step == 0 {
		return 0, fmt.Errorf("arange: step must be nonzero")
	}
	if math.IsNaN(start) || math.IsNaN(end) || math.IsInf(start, 0) || math.IsInf(end, 0) {
		return 0, fmt.Errorf("arange: unsupported range: %v -> %v", start, end)
	}
	if (step > 0 && end < start) || (step < 0 && end > start) {
		return 0, fmt.Errorf("arange: upper bound and larger bound inconsistent with step sign")
	}
	n := math.Ceil((end - start) / step)
	if n > math.MaxInt32*64 {
		return 0, fmt.Errorf("arange: invalid size, possible overflow?")
	}
	return int(n), nil
}

func arangeDType(a Attrs) dtype.DType {
	if d := a.DType("dtype"); d != dtype.Invalid {
		return d
	}
	if isFloatScalar(a["start"]) || isFloatScalar(a["end"]) || isFloatScalar(a["step"]) {
		return dtype.F32
	}
	return dtype.I64
}

// tri builds the tril/triu decomposition: keep x where (col - row) compares
// with diagonal, else 0.
func tri(name, cmp string) DecomposeFunc {
	return func(b Builder, in []Value, a Attrs) []Value {
		x := in[0]
		m := b.Meta(x)
		r := len(m.Shape)
		rc := []int{m.Shape[r-2], m.Shape[r-1]}
		row := Call1(b, "iota", Attrs{"shape": rc, "dim": 0, "dtype": dtype.I64})
		col := Call1(b, "iota", Attrs{"shape": rc, "dim": 1, "dtype": dtype.I64})
		diff := Call1(b, "sub", nil, col, row)
		mask := Call1(b, cmp, nil, diff, b.Scalar(int64(a.Int("diagonal")), diff))
		zero := Call1(b, "full", Attrs{"shape": []int{}, "value": false, "dtype": m.DType})
		return []Value{Call1(b, "where", nil, mask, x, zero)}
	}
}

func triInfer(name string) InferFunc {
	return func(in []Meta, a Attrs) ([]Meta, error) {
		if len(in[0].Shape) < 2 {
			return nil, fmt.Errorf("%s: input tensor must have at least 2 dimensions", name)
		}
		return []Meta{{Shape: slices.Clone(in[0].Shape), DType: in[0].DType}}, nil
	}
}

// uniformBits decomposes a uniform [0, 1) draw of dtype dt: the low
// UniformDigits(dt) bits of random_bits, scaled by 2^-digits (exact).
func uniformBits(b Builder, shape []int, dt dtype.DType, a Attrs, lane int) Value {
	digits := UniformDigits(dt)
	bits := Call1(b, "random_bits", Attrs{"shape": shape, "dtype": dtype.I64, "lane": lane,
		"seed": a["seed"], "offset": a["offset"]})
	m := Call1(b, "bitwise_and", nil, bits, b.Scalar(int64(1)<<digits-1, bits))
	f := Call1(b, "convert", Attrs{"dtype": dt}, m)
	return Call1(b, "mul", nil, f, b.Scalar(math.Ldexp(1, -digits), f))
}

// randnF64 decomposes Box–Muller in f64 over lanes 0 and 1 of each counter:
// sqrt(-2 log(1-u1)) * cos(2π u2).
func randnF64(b Builder, shape []int, a Attrs) Value {
	u1 := uniformBits(b, shape, dtype.F64, a, 0)
	u2 := uniformBits(b, shape, dtype.F64, a, 1)
	one := Call1(b, "sub", nil, b.Scalar(1.0, u1), u1)
	r := Call1(b, "sqrt", nil, Call1(b, "mul", nil, Call1(b, "log", nil, one), b.Scalar(-2.0, u1)))
	c := Call1(b, "cos", nil, Call1(b, "mul", nil, u2, b.Scalar(2*math.Pi, u2)))
	return Call1(b, "mul", nil, r, c)
}

// MultinomialCheck validates multinomial's shapes and num_samples.
func MultinomialCheck(in Meta, n int, replacement bool) error {
	r := len(in.Shape)
	if r != 1 && r != 2 {
		return fmt.Errorf("multinomial: prob_dist must be 1 or 2 dim, got %d", r)
	}
	if n <= 0 {
		return fmt.Errorf("multinomial: cannot sample n_sample <= 0 samples")
	}
	cats := in.Shape[r-1]
	if !replacement && n > cats {
		return fmt.Errorf("multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement")
	}
	if cats == 0 {
		return fmt.Errorf("multinomial: number of categories cannot be zero")
	}
	return nil
}

func init() {
	Register(&Def{
		Name: "full", Kind: Primitive, Group: "creation",
		Doc:   "Returns a tensor of the given shape filled with value (torch.full); without dtype, bool, i64 or the default float by the value's kind.",
		Attrs: []AttrSpec{{Name: "shape", Type: AttrInts}, {Name: "value", Type: AttrScalar}, optDType()},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			dt := dtypeOr(a, ScalarDType(a["value"]))
			if err := ScalarFits("full", a["value"], dt); err != nil {
				return nil, err
			}
			return shapeRule("full", func(Attrs) dtype.DType { return dt })(in, a)
		},
	})
	Register(&Def{
		Name: "iota", Kind: Primitive, Group: "creation",
		Doc:   "Returns a tensor of the given shape whose elements equal their index along dim (StableHLO iota).",
		Attrs: []AttrSpec{{Name: "shape", Type: AttrInts}, {Name: "dim", Type: AttrInt, Default: 0}, {Name: "dtype", Type: AttrDType, Default: dtype.I64}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			shape := a.Ints("shape")
			if err := CheckShape("iota", shape); err != nil {
				return nil, err
			}
			if len(shape) > 0 {
				if _, err := NormAxis("iota", a.Int("dim"), len(shape)); err != nil {
					return nil, err
				}
			}
			return []Meta{{Shape: slices.Clone(shape), DType: a.DType("dtype")}}, nil
		},
	})
	Register(&Def{
		Name: "random_bits", Kind: Primitive, Group: "random", Random: true,
		Doc: "Returns random bits from Philox4x32-10 keyed by seed: element i is lane `lane` of the block at counter (offset+i, stream) (i32: one 32-bit word of 4, i64: two words of 4); with period p > 0 element (r, k) of the last dim uses counter (offset + r*p + k%p, stream + k/p).",
		Attrs: append([]AttrSpec{{Name: "shape", Type: AttrInts}, {Name: "dtype", Type: AttrDType, Default: dtype.I64},
			{Name: "lane", Type: AttrInt, Default: 0}, {Name: "stream", Type: AttrInt, Default: 0},
			{Name: "period", Type: AttrInt, Default: 0}}, randomAttrs...),
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			shape := a.Ints("shape")
			if err := CheckShape("random_bits", shape); err != nil {
				return nil, err
			}
			dt := a.DType("dtype")
			lanes := 0
			switch dt {
			case dtype.I32:
				lanes = 4
			case dtype.I64:
				lanes = 2
			default:
				return nil, fmt.Errorf("random_bits: dtype must be i32 or i64, got %s", dt)
			}
			if l := a.Int("lane"); l < 0 || l >= lanes {
				return nil, fmt.Errorf("random_bits: lane %d out of range for %s (0..%d)", l, dt, lanes-1)
			}
			if a.Int("period") < 0 || a.Int("stream") < 0 {
				return nil, fmt.Errorf("random_bits: period and stream must be >= 0")
			}
			return []Meta{{Shape: slices.Clone(shape), DType: dt}}, nil
		},
	})

	// Constant composites.
	fullOf := func(name string, v any, doc string) {
		Register(&Def{
			Name: name, Kind: Composite, Group: "creation", Doc: doc,
			Attrs: []AttrSpec{{Name: "shape", Type: AttrInts}, optDType()},
			Infer: shapeRule(name, func(a Attrs) dtype.DType { return dtypeOr(a, dtype.F32) }),
			Decompose: func(b Builder, in []Value, a Attrs) []Value {
				return []Value{Call1(b, "full", Attrs{"shape": a.Ints("shape"), "value": v, "dtype": dtypeOr(a, dtype.F32)})}
			},
		})
	}
	fullOf("zeros", int64(0), "Returns a tensor of zeros (torch.zeros; dtype defaults to the default float).")
	fullOf("ones", int64(1), "Returns a tensor of ones (torch.ones; dtype defaults to the default float).")
	fullOf("empty", int64(0), "Returns an uninitialised tensor (torch.empty); gotpu fills it with zeros so results are deterministic.")
	likeOf := func(name string, v any, doc string) {
		Register(&Def{
			Name: name, Kind: Composite, Group: "creation", Doc: doc,
			Inputs: []string{"input"},
			Attrs:  []AttrSpec{optDType()},
			Infer:  likeRule,
			Decompose: func(b Builder, in []Value, a Attrs) []Value {
				m := b.Meta(in[0])
				return []Value{Call1(b, "full", Attrs{"shape": m.Shape, "value": v, "dtype": dtypeOr(a, m.DType)})}
			},
		})
	}
	likeOf("zeros_like", int64(0), "Returns zeros with input's shape, and its dtype unless dtype is given (torch.zeros_like).")
	likeOf("ones_like", int64(1), "Returns ones with input's shape, and its dtype unless dtype is given (torch.ones_like).")
	likeOf("empty_like", int64(0), "Returns an uninitialised tensor like input (torch.empty_like); gotpu fills it with zeros.")
	Register(&Def{
		Name: "full_like", Kind: Composite, Group: "creation",
		Doc:    "Returns a tensor with input's shape (and dtype unless given) filled with value (torch.full_like).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "value", Type: AttrScalar}, optDType()},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if err := ScalarFits("full_like", a["value"], dtypeOr(a, in[0].DType)); err != nil {
				return nil, err
			}
			return likeRule(in, a)
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			m := b.Meta(in[0])
			return []Value{Call1(b, "full", Attrs{"shape": m.Shape, "value": a["value"], "dtype": dtypeOr(a, m.DType)})}
		},
	})

	Register(&Def{
		Name: "arange", Kind: Composite, Group: "creation",
		Doc: "Returns start, start+step, ... up to but excluding end, ceil((end-start)/step) values (torch.arange); without dtype, i64 if all scalars are integers else the default float.",
		Attrs: []AttrSpec{{Name: "start", Type: AttrScalar, Default: int64(0)}, {Name: "end", Type: AttrScalar},
			{Name: "step", Type: AttrScalar, Default: int64(1)}, optDType()},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			n, err := ArangeLen(scalarFloat(a["start"]), scalarFloat(a["end"]), scalarFloat(a["step"]))
			if err != nil {
				return nil, err
			}
			return []Meta{{Shape: []int{n}, DType: arangeDType(a)}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			n, _ := ArangeLen(scalarFloat(a["start"]), scalarFloat(a["end"]), scalarFloat(a["step"]))
			dt := arangeDType(a)
			acc := dtype.F64
			if !isFloatScalar(a["start"]) && !isFloatScalar(a["step"]) && !dt.IsFloat() {
				acc = dtype.I64
			}
			i := Call1(b, "iota", Attrs{"shape": []int{n}, "dim": 0, "dtype": acc})
			v := Call1(b, "add", nil, Call1(b, "mul", nil, i, b.Scalar(a["step"], i)), b.Scalar(a["start"], i))
			return []Value{Call1(b, "convert", Attrs{"dtype": dt}, v)}
		},
	})
	Register(&Def{
		Name: "linspace", Kind: Composite, Group: "creation",
		Doc: "Returns steps values evenly spaced from start to end inclusive (torch.linspace), computed from start for the first half and from end for the second, as PyTorch does.",
		Attrs: []AttrSpec{{Name: "start", Type: AttrScalar}, {Name: "end", Type: AttrScalar},
			{Name: "steps", Type: AttrInt}, optDType()},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if a.Int("steps") < 0 {
				return nil, fmt.Errorf("linspace: number of steps must be non-negative")
			}
			return []Meta{{Shape: []int{a.Int("steps")}, DType: dtypeOr(a, dtype.F32)}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			n := a.Int("steps")
			dt := dtypeOr(a, dtype.F32)
			if n <= 1 {
				return []Value{Call1(b, "full", Attrs{"shape": []int{n}, "value": a["start"], "dtype": dt})}
			}
			// The step is computed in dt for floats and in f64 for integers.
			st := dt
			if !dt.IsFloat() {
				st = dtype.F64
			}
			start := Call1(b, "full", Attrs{"shape": []int{}, "value": a["start"], "dtype": dt})
			end := Call1(b, "full", Attrs{"shape": []int{}, "value": a["end"], "dtype": dt})
			startS := Call1(b, "convert", Attrs{"dtype": st}, start)
			endS := Call1(b, "convert", Attrs{"dtype": st}, end)
			step := Call1(b, "div", nil, Call1(b, "sub", nil, endS, startS), Call1(b, "full", Attrs{"shape": []int{}, "value": int64(n - 1), "dtype": st}))
			idx := Call1(b, "iota", Attrs{"shape": []int{n}, "dim": 0, "dtype": st})
			rev := Call1(b, "iota", Attrs{"shape": []int{n}, "dim": 0, "dtype": dtype.I64})
			rev = Call1(b, "convert", Attrs{"dtype": st}, Call1(b, "sub", nil, b.Scalar(int64(n-1), rev), rev))
			lo := Call1(b, "add", nil, startS, Call1(b, "mul", nil, step, idx))
			hi := Call1(b, "sub", nil, endS, Call1(b, "mul", nil, step, rev))
			half := Call1(b, "lt", nil, idx, b.Scalar(int64(n/2), idx))
			return []Value{Call1(b, "convert", Attrs{"dtype": dt}, Call1(b, "where", nil, half, lo, hi))}
		},
	})
	Register(&Def{
		Name: "eye", Kind: Composite, Group: "creation",
		Doc:   "Returns an n×m matrix with ones on the diagonal (torch.eye; m defaults to n; dtype to the default float).",
		Attrs: []AttrSpec{{Name: "n", Type: AttrInt}, {Name: "m", Type: AttrInt, Default: -1}, optDType()},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			n, m := a.Int("n"), a.Int("m")
			if m == -1 {
				m = n
			}
			if n < 0 || m < 0 {
				return nil, fmt.Errorf("eye: n and m must be greater or equal to 0, got %d and %d", n, m)
			}
			return []Meta{{Shape: []int{n, m}, DType: dtypeOr(a, dtype.F32)}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			n, m := a.Int("n"), a.Int("m")
			if m == -1 {
				m = n
			}
			row := Call1(b, "iota", Attrs{"shape": []int{n, m}, "dim": 0})
			col := Call1(b, "iota", Attrs{"shape": []int{n, m}, "dim": 1})
			return []Value{Call1(b, "convert", Attrs{"dtype": dtypeOr(a, dtype.F32)}, Call1(b, "eq", nil, row, col))}
		},
	})
	Register(&Def{
		Name: "tril", Kind: Composite, Group: "creation",
		Doc:    "Returns the lower triangle of the last two dims (col - row <= diagonal), other elements 0 (torch.tril).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "diagonal", Type: AttrInt, Default: 0}},
		Infer:  triInfer("tril"), Decompose: tri("tril", "le"),
	})
	Register(&Def{
		Name: "triu", Kind: Composite, Group: "creation",
		Doc:    "Returns the upper triangle of the last two dims (col - row >= diagonal), other elements 0 (torch.triu).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "diagonal", Type: AttrInt, Default: 0}},
		Infer:  triInfer("triu"), Decompose: tri("triu", "ge"),
	})

	// Random composites.
	floatShape := func(name string) InferFunc {
		return func(in []Meta, a Attrs) ([]Meta, error) {
			dt := dtypeOr(a, dtype.F32)
			if !dt.IsFloat() {
				return nil, fmt.Errorf("%s: \"%s\" not implemented for '%s'", name, name, dt)
			}
			return shapeRule(name, func(Attrs) dtype.DType { return dt })(in, a)
		}
	}
	shapeAttrs := func(extra ...AttrSpec) []AttrSpec {
		out := append([]AttrSpec{{Name: "shape", Type: AttrInts}}, extra...)
		return append(out, randomAttrs...)
	}
	Register(&Def{
		Name: "rand", Kind: Composite, Group: "random", Random: true,
		Doc:   "Returns uniform samples in [0, 1) (torch.rand): the low d bits of each counter's random word times 2^-d, d the dtype's significand digits.",
		Attrs: shapeAttrs(optDType()),
		Infer: floatShape("rand"),
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			return []Value{uniformBits(b, a.Ints("shape"), dtypeOr(a, dtype.F32), a, 0)}
		},
	})
	Register(&Def{
		Name: "uniform", Kind: Composite, Group: "random", Random: true,
		Doc:   "Returns uniform samples in [low, high) (Tensor.uniform_): low + rand*(high-low).",
		Attrs: shapeAttrs(AttrSpec{Name: "low", Type: AttrFloat, Default: 0.0}, AttrSpec{Name: "high", Type: AttrFloat, Default: 1.0}, optDType()),
		Infer: floatShape("uniform"),
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			u := uniformBits(b, a.Ints("shape"), dtypeOr(a, dtype.F32), a, 0)
			lo, hi := a.Float("low"), a.Float("high")
			return []Value{Call1(b, "add", nil, Call1(b, "mul", nil, u, b.Scalar(hi-lo, u)), b.Scalar(lo, u))}
		},
	})
	Register(&Def{
		Name: "randn", Kind: Composite, Group: "random", Random: true,
		Doc:   "Returns standard normal samples (torch.randn) by Box–Muller in f64 from two 53-bit uniforms per counter, rounded once to dtype.",
		Attrs: shapeAttrs(optDType()),
		Infer: floatShape("randn"),
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			z := randnF64(b, a.Ints("shape"), a)
			return []Value{Call1(b, "convert", Attrs{"dtype": dtypeOr(a, dtype.F32)}, z)}
		},
	})
	Register(&Def{
		Name: "normal", Kind: Composite, Group: "random", Random: true,
		Doc:   "Returns normal samples with the given mean and std (torch.normal with float mean/std): mean + std*randn, in f64, rounded once.",
		Attrs: shapeAttrs(AttrSpec{Name: "mean", Type: AttrFloat, Default: 0.0}, AttrSpec{Name: "std", Type: AttrFloat, Default: 1.0}, optDType()),
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if s := a.Float("std"); s < 0 || math.IsNaN(s) {
				return nil, fmt.Errorf("normal: expects std >= 0.0, but found std %v", s)
			}
			return floatShape("normal")(in, a)
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			z := randnF64(b, a.Ints("shape"), a)
			z = Call1(b, "add", nil, Call1(b, "mul", nil, z, b.Scalar(a.Float("std"), z)), b.Scalar(a.Float("mean"), z))
			return []Value{Call1(b, "convert", Attrs{"dtype": dtypeOr(a, dtype.F32)}, z)}
		},
	})
	Register(&Def{
		Name: "randint", Kind: Composite, Group: "random", Random: true,
		Doc: "Returns integers uniform in [low, high) (torch.randint): low + (63 random bits mod (high-low)); dtype defaults to i64.",
		Attrs: shapeAttrs(AttrSpec{Name: "low", Type: AttrInt, Default: 0}, AttrSpec{Name: "high", Type: AttrInt},
			AttrSpec{Name: "dtype", Type: AttrDType, Default: dtype.I64}),
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if lo, hi := a.Int("low"), a.Int("high"); lo >= hi {
				return nil, fmt.Errorf("randint: random_ expects 'from' to be less than 'to', but got from=%d >= to=%d", lo, hi)
			}
			return shapeRule("randint", func(a Attrs) dtype.DType { return a.DType("dtype") })(in, a)
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			bits := Call1(b, "random_bits", Attrs{"shape": a.Ints("shape"), "dtype": dtype.I64, "seed": a["seed"], "offset": a["offset"]})
			v := Call1(b, "bitwise_and", nil, bits, b.Scalar(int64(math.MaxInt64), bits))
			lo, hi := int64(a.Int("low")), int64(a.Int("high"))
			v = Call1(b, "remainder", nil, v, b.Scalar(hi-lo, v))
			v = Call1(b, "add", nil, v, b.Scalar(lo, v))
			return []Value{Call1(b, "convert", Attrs{"dtype": a.DType("dtype")}, v)}
		},
	})
	Register(&Def{
		Name: "bernoulli", Kind: Composite, Group: "random", Random: true,
		Doc:    "Returns 1 with probability p and 0 otherwise, in input's dtype (torch.bernoulli: p is input itself, or the scalar attribute p when given): 1 where a 53-bit uniform is < p.",
		Inputs: []string{"input"},
		Attrs:  append([]AttrSpec{{Name: "p", Type: AttrFloat, Optional: true}}, randomAttrs...),
		DTypes: SetFloats,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if a.Has("p") {
				if p := a.Float("p"); !(p >= 0 && p <= 1) {
					return nil, fmt.Errorf("bernoulli: bernoulli_ expects p to be in [0, 1], but got p=%v", p)
				}
			}
			return []Meta{{Shape: slices.Clone(in[0].Shape), DType: in[0].DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			m := b.Meta(in[0])
			u := uniformBits(b, m.Shape, dtype.F64, a, 0)
			var p Value
			if a.Has("p") {
				p = b.Scalar(a.Float("p"), u)
			} else {
				p = Call1(b, "convert", Attrs{"dtype": dtype.F64}, in[0])
			}
			return []Value{Call1(b, "convert", Attrs{"dtype": m.DType}, Call1(b, "lt", nil, u, p))}
		},
	})
	Register(&Def{
		Name: "multinomial", Kind: Composite, Group: "random", Random: true,
		Doc:    "Samples num_samples category indices per row of input's (unnormalised) probabilities (torch.multinomial): with replacement by inverse CDF of a 53-bit uniform; without, the num_samples smallest exponential keys -log(u)/p (Gumbel top-k).",
		Inputs: []string{"input"},
		Attrs:  append([]AttrSpec{{Name: "num_samples", Type: AttrInt}, {Name: "replacement", Type: AttrBool, Default: false}}, randomAttrs...),
		DTypes: SetFloats,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			n := a.Int("num_samples")
			if err := MultinomialCheck(in[0], n, a.Bool("replacement")); err != nil {
				return nil, err
			}
			shape := slices.Clone(in[0].Shape)
			shape[len(shape)-1] = n
			return []Meta{{Shape: shape, DType: dtype.I64}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			x := in[0]
			m := b.Meta(x)
			r := len(m.Shape)
			ns := a.Int("num_samples")
			p := Call1(b, "convert", Attrs{"dtype": dtype.F64}, x)
			if a.Bool("replacement") {
				oshape := slices.Clone(m.Shape)
				oshape[r-1] = ns
				cdf := Call1(b, "cumsum", Attrs{"dim": -1}, p)
				total := Call1(b, "slice", Attrs{"dim": r - 1, "start": m.Shape[r-1] - 1}, cdf)
				u := Call1(b, "mul", nil, uniformBits(b, oshape, dtype.F64, a, 0), total)
				cu := Call1(b, "unsqueeze", Attrs{"dim": -2}, cdf)
				uu := Call1(b, "unsqueeze", Attrs{"dim": -1}, u)
				return []Value{Call1(b, "sum", Attrs{"dims": []int{-1}}, Call1(b, "le", nil, cu, uu))}
			}
			bits := Call1(b, "random_bits", Attrs{"shape": m.Shape, "dtype": dtype.I64, "period": ns, "stream": 1,
				"seed": a["seed"], "offset": a["offset"]})
			u := Call1(b, "convert", Attrs{"dtype": dtype.F64}, Call1(b, "bitwise_and", nil, bits, b.Scalar(int64(1)<<53-1, bits)))
			u = Call1(b, "mul", nil, u, b.Scalar(math.Ldexp(1, -53), u))
			e := Call1(b, "neg", nil, Call1(b, "log", nil, Call1(b, "sub", nil, b.Scalar(1.0, u), u)))
			keys := Call1(b, "div", nil, e, p)
			idx := Call1(b, "argsort", Attrs{"dim": -1, "stable": true}, keys)
			return []Value{Call1(b, "slice", Attrs{"dim": r - 1, "end": ns}, idx)}
		},
	})
	Register(&Def{
		Name: "randperm", Kind: Composite, Group: "random", Random: true,
		Doc:   "Returns a random permutation of 0..n-1 (torch.randperm): a stable argsort of 64-bit random keys; dtype defaults to i64.",
		Attrs: append([]AttrSpec{{Name: "n", Type: AttrInt}, {Name: "dtype", Type: AttrDType, Default: dtype.I64}}, randomAttrs...),
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if a.Int("n") < 0 {
				return nil, fmt.Errorf("randperm: n must be non-negative, got %d", a.Int("n"))
			}
			return []Meta{{Shape: []int{a.Int("n")}, DType: a.DType("dtype")}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			keys := Call1(b, "random_bits", Attrs{"shape": []int{a.Int("n")}, "dtype": dtype.I64, "seed": a["seed"], "offset": a["offset"]})
			idx := Call1(b, "argsort", Attrs{"dim": 0, "stable": true}, keys)
			return []Value{Call1(b, "convert", Attrs{"dtype": a.DType("dtype")}, idx)}
		},
	})
}
