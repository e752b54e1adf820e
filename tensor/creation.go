package tensor

import (
	"fmt"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// Creation and random functions (torch.full, zeros, arange, rand, randn, ...).
// A dtype argument of dtype.Invalid means PyTorch's default: the default
// float dtype (SetDefaultDType) for float results, i64 for integer results.
// Random functions draw from the default generator (ManualSeed); the *Gen
// variants draw from g. Every device and mode draws the same numbers for the
// same seed and sequence of calls.

func shapeAttr(shape []int) []int {
	if shape == nil {
		return []int{}
	}
	return append([]int(nil), shape...)
}

func floatOr(dt dtype.DType) dtype.DType {
	if dt == dtype.Invalid {
		return DefaultDType()
	}
	return dt
}

// scalarAttr normalises a Go number for a scalar attribute (float64, int64
// or bool); anything else panics with an *Error naming op.
func scalarAttr(opname string, v any) any {
	switch x := v.(type) {
	case float64, int64, bool:
		return x
	case float32:
		return float64(x)
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case int16:
		return int64(x)
	case int8:
		return int64(x)
	case uint8:
		return int64(x)
	case uint32:
		return int64(x)
	}
	panic(&Error{Op: opname, Msg: fmt.Sprintf("unsupported scalar type %T", v)})
}

// Full returns a tensor of shape on dev filled with value (torch.full). With
// dt Invalid the dtype follows value: bool, i64, or the default float.
func Full(dev device.Device, dt dtype.DType, value any, shape ...int) *Tensor {
	v := scalarAttr("full", value)
	if dt == dtype.Invalid {
		dt = op.ScalarDType(v)
		if dt == dtype.F32 {
			dt = DefaultDType()
		}
	}
	return ApplyOn(dev, "full", nil, op.Attrs{"shape": shapeAttr(shape), "value": v, "dtype": dt})[0]
}

// Zeros returns a tensor of zeros (torch.zeros); dt Invalid means the default float.
func Zeros(dev device.Device, dt dtype.DType, shape ...int) *Tensor {
	return ApplyOn(dev, "zeros", nil, op.Attrs{"shape": shapeAttr(shape), "dtype": floatOr(dt)})[0]
}

// Ones returns a tensor of ones (torch.ones); dt Invalid means the default float.
func Ones(dev device.Device, dt dtype.DType, shape ...int) *Tensor {
	return ApplyOn(dev, "ones", nil, op.Attrs{"shape": shapeAttr(shape), "dtype": floatOr(dt)})[0]
}

// Empty returns a new tensor (torch.empty). Unlike PyTorch its elements are
// zero, so programs stay deterministic.
func Empty(dev device.Device, dt dtype.DType, shape ...int) *Tensor {
	return ApplyOn(dev, "empty", nil, op.Attrs{"shape": shapeAttr(shape), "dtype": floatOr(dt)})[0]
}

func likeAttrs(dt dtype.DType) op.Attrs {
	if dt == dtype.Invalid {
		return op.Attrs{}
	}
	return op.Attrs{"dtype": dt}
}

// ZerosLike returns zeros with t's shape and device, and t's dtype unless dt
// is given (torch.zeros_like).
func ZerosLike(t *Tensor, dt ...dtype.DType) *Tensor {
	return Apply1("zeros_like", []*Tensor{t}, likeAttrs(optDT(dt)))
}

// OnesLike returns ones with t's shape and device, and t's dtype unless dt is
// given (torch.ones_like).
func OnesLike(t *Tensor, dt ...dtype.DType) *Tensor {
	return Apply1("ones_like", []*Tensor{t}, likeAttrs(optDT(dt)))
}

// EmptyLike returns a tensor like t (torch.empty_like); its elements are zero.
func EmptyLike(t *Tensor, dt ...dtype.DType) *Tensor {
	return Apply1("empty_like", []*Tensor{t}, likeAttrs(optDT(dt)))
}

// FullLike returns a tensor with t's shape and device filled with value, in
// t's dtype unless dt is given (torch.full_like).
func FullLike(t *Tensor, value any, dt ...dtype.DType) *Tensor {
	a := likeAttrs(optDT(dt))
	a["value"] = scalarAttr("full_like", value)
	return Apply1("full_like", []*Tensor{t}, a)
}

func optDT(dt []dtype.DType) dtype.DType {
	if len(dt) > 0 {
		return dt[0]
	}
	return dtype.Invalid
}

// Iota returns a tensor of shape whose elements equal their index along dim
// (StableHLO iota); dt Invalid means i64.
func Iota(dev device.Device, dt dtype.DType, dim int, shape ...int) *Tensor {
	if dt == dtype.Invalid {
		dt = dtype.I64
	}
	return ApplyOn(dev, "iota", nil, op.Attrs{"shape": shapeAttr(shape), "dim": dim, "dtype": dt})[0]
}

// Arange returns start, start+step, ... below end (torch.arange): a 1-d
// tensor of ceil((end-start)/step) elements. Start, end and step are Go
// numbers; with dt Invalid the dtype is i64 if all are integers, else the
// default float.
func Arange(dev device.Device, start, end, step any, dt dtype.DType) *Tensor {
	a := op.Attrs{"start": scalarAttr("arange", start), "end": scalarAttr("arange", end), "step": scalarAttr("arange", step)}
	if dt == dtype.Invalid {
		dt = dtype.I64
		for _, k := range []string{"start", "end", "step"} {
			if _, ok := a[k].(float64); ok {
				dt = DefaultDType()
			}
		}
	}
	a["dtype"] = dt
	return ApplyOn(dev, "arange", nil, a)[0]
}

// Linspace returns steps values evenly spaced from start to end inclusive
// (torch.linspace, bit-exact for f32); dt Invalid means the default float.
func Linspace(dev device.Device, start, end any, steps int, dt dtype.DType) *Tensor {
	return ApplyOn(dev, "linspace", nil, op.Attrs{"start": scalarAttr("linspace", start), "end": scalarAttr("linspace", end),
		"steps": steps, "dtype": floatOr(dt)})[0]
}

// Eye returns an n×m matrix with ones on the main diagonal (torch.eye); m < 0
// means n, dt Invalid the default float.
func Eye(dev device.Device, n, m int, dt dtype.DType) *Tensor {
	if m < 0 {
		m = n
	}
	return ApplyOn(dev, "eye", nil, op.Attrs{"n": n, "m": m, "dtype": floatOr(dt)})[0]
}

// copyInto writes res into t in place (copy_) and returns t.
func (t *Tensor) copyInto(opname string, res *Tensor) *Tensor {
	if !op.CanCast(res.dt, t.dt) {
		errorf(opname, []*Tensor{t, res}, "result type %s can't be cast to the desired output type %s", res.dt, t.dt)
	}
	Apply("copy_", []*Tensor{t, res}, nil)
	return t
}

// FillInPlace sets every element of t to value (Tensor.fill_), converting
// it to t's dtype as PyTorch does, and returns t.
func (t *Tensor) FillInPlace(value any) *Tensor {
	return t.copyInto("fill_", FullLike(t, value))
}

// ZeroInPlace sets every element of t to zero (Tensor.zero_) and returns t.
func (t *Tensor) ZeroInPlace() *Tensor { return t.copyInto("zero_", ZerosLike(t)) }

// Random functions.

// randomOn runs a random op on dev, drawing counters from g (the default
// generator when g is nil).
func randomOn(g *Generator, dev device.Device, name string, in []*Tensor, a op.Attrs, numel int) *Tensor {
	if g != nil {
		a = WithGenerator(g, a, numel)
	}
	return ApplyOn(dev, name, in, a)[0]
}

func floatRandom(g *Generator, dev device.Device, name string, dt dtype.DType, shape []int, a op.Attrs) *Tensor {
	a["shape"] = shapeAttr(shape)
	a["dtype"] = floatOr(dt)
	return randomOn(g, dev, name, nil, a, op.Numel(shape))
}

// Rand returns samples uniform in [0, 1) (torch.rand); dt Invalid means the
// default float.
func Rand(dev device.Device, dt dtype.DType, shape ...int) *Tensor {
	return floatRandom(nil, dev, "rand", dt, shape, op.Attrs{})
}

// RandGen is Rand drawing from g.
func RandGen(g *Generator, dev device.Device, dt dtype.DType, shape ...int) *Tensor {
	return floatRandom(g, dev, "rand", dt, shape, op.Attrs{})
}

// Randn returns standard normal samples (torch.randn).
func Randn(dev device.Device, dt dtype.DType, shape ...int) *Tensor {
	return floatRandom(nil, dev, "randn", dt, shape, op.Attrs{})
}

// RandnGen is Randn drawing from g.
func RandnGen(g *Generator, dev device.Device, dt dtype.DType, shape ...int) *Tensor {
	return floatRandom(g, dev, "randn", dt, shape, op.Attrs{})
}

// Uniform returns samples uniform in [low, high) (Tensor.uniform_ on a new tensor).
func Uniform(dev device.Device, low, high float64, dt dtype.DType, shape ...int) *Tensor {
	return floatRandom(nil, dev, "uniform", dt, shape, op.Attrs{"low": low, "high": high})
}

// UniformGen is Uniform drawing from g.
func UniformGen(g *Generator, dev device.Device, low, high float64, dt dtype.DType, shape ...int) *Tensor {
	return floatRandom(g, dev, "uniform", dt, shape, op.Attrs{"low": low, "high": high})
}

// Normal returns samples from N(mean, std²) (torch.normal with float mean and std).
func Normal(dev device.Device, mean, std float64, dt dtype.DType, shape ...int) *Tensor {
	return floatRandom(nil, dev, "normal", dt, shape, op.Attrs{"mean": mean, "std": std})
}

// NormalGen is Normal drawing from g.
func NormalGen(g *Generator, dev device.Device, mean, std float64, dt dtype.DType, shape ...int) *Tensor {
	return floatRandom(g, dev, "normal", dt, shape, op.Attrs{"mean": mean, "std": std})
}

// RandInt returns integers uniform in [low, high) (torch.randint); dt
// Invalid means i64.
func RandInt(dev device.Device, low, high int, dt dtype.DType, shape ...int) *Tensor {
	return RandIntGen(nil, dev, low, high, dt, shape...)
}

// RandIntGen is RandInt drawing from g (nil: the default generator).
func RandIntGen(g *Generator, dev device.Device, low, high int, dt dtype.DType, shape ...int) *Tensor {
	if dt == dtype.Invalid {
		dt = dtype.I64
	}
	a := op.Attrs{"shape": shapeAttr(shape), "low": low, "high": high, "dtype": dt}
	return randomOn(g, dev, "randint", nil, a, op.Numel(shape))
}

// Randperm returns a random permutation of 0..n-1 (torch.randperm); dt
// Invalid means i64.
func Randperm(dev device.Device, n int, dt dtype.DType) *Tensor { return RandpermGen(nil, dev, n, dt) }

// RandpermGen is Randperm drawing from g (nil: the default generator).
func RandpermGen(g *Generator, dev device.Device, n int, dt dtype.DType) *Tensor {
	if dt == dtype.Invalid {
		dt = dtype.I64
	}
	return randomOn(g, dev, "randperm", nil, op.Attrs{"n": n, "dtype": dt}, n)
}

// Bernoulli returns 1 with probability t[i] and 0 otherwise, in t's dtype
// (torch.bernoulli(t)).
func (t *Tensor) Bernoulli() *Tensor { return t.BernoulliGen(nil) }

// BernoulliGen is Bernoulli drawing from g (nil: the default generator).
func (t *Tensor) BernoulliGen(g *Generator) *Tensor {
	return randomOn(g, t.devOrCPU(), "bernoulli", []*Tensor{t}, op.Attrs{}, t.Numel())
}

// BernoulliP returns a tensor like t of 1 with probability p and 0 otherwise
// (torch.bernoulli(t, p)).
func (t *Tensor) BernoulliP(p float64) *Tensor {
	return randomOn(nil, t.devOrCPU(), "bernoulli", []*Tensor{t}, op.Attrs{"p": p}, t.Numel())
}

// BernoulliInPlace fills t with 1 with probability p and 0 otherwise
// (Tensor.bernoulli_(p)) and returns t.
func (t *Tensor) BernoulliInPlace(p float64) *Tensor {
	return t.copyInto("bernoulli_", t.BernoulliP(p))
}

// UniformInPlace fills t with samples uniform in [low, high) (Tensor.uniform_) and returns t.
func (t *Tensor) UniformInPlace(low, high float64) *Tensor {
	return t.copyInto("uniform_", Uniform(t.devOrCPU(), low, high, t.dt, t.l.Shape...))
}

// NormalInPlace fills t with samples from N(mean, std²) (Tensor.normal_) and returns t.
func (t *Tensor) NormalInPlace(mean, std float64) *Tensor {
	return t.copyInto("normal_", Normal(t.devOrCPU(), mean, std, t.dt, t.l.Shape...))
}

// Multinomial samples numSamples category indices from each row of t's
// non-negative weights (torch.multinomial); t is 1-d or 2-d.
func (t *Tensor) Multinomial(numSamples int, replacement bool) *Tensor {
	return t.MultinomialGen(nil, numSamples, replacement)
}

// MultinomialGen is Multinomial drawing from g (nil: the default generator).
func (t *Tensor) MultinomialGen(g *Generator, numSamples int, replacement bool) *Tensor {
	rows := 1
	if t.Dim() == 2 {
		rows = t.l.Shape[0]
	}
	return randomOn(g, t.devOrCPU(), "multinomial", []*Tensor{t}, op.Attrs{"num_samples": numSamples, "replacement": replacement}, rows*max(numSamples, 0))
}

// devOrCPU returns t's device (cpu for a wrapped scalar).
func (t *Tensor) devOrCPU() device.Device {
	if t.st == nil {
		return device.Device{Type: "cpu"}
	}
	return t.st.dev
}
