package cpu

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
)

// Kernels of the creation and random groups: the primitives full, iota and
// random_bits, and direct kernels for composites (arange, linspace, eye,
// tril, triu and the random ops) that compute exactly what their
// decompositions compute.

func init() {
	RegisterKernel(op.Full, Kernel{Run: fullKernel})
	RegisterKernel(op.Iota, Kernel{Run: iotaKernel})
	RegisterKernel(op.RandomBits, Kernel{Run: randomBitsKernel})
	RegisterKernel(op.Arange, Kernel{Run: arangeKernel})
	RegisterKernel(op.Linspace, Kernel{Run: linspaceKernel})
	RegisterKernel(op.Eye, Kernel{Run: eyeKernel})
	RegisterKernel(op.Tril, Kernel{Run: func(c *Call) error { return triKernel(c, true) }})
	RegisterKernel(op.Triu, Kernel{Run: func(c *Call) error { return triKernel(c, false) }})
	RegisterKernel(op.Rand, Kernel{Run: uniformKernel})
	RegisterKernel(op.Uniform, Kernel{Run: uniformKernel})
	RegisterKernel(op.Randn, Kernel{Run: normalKernel})
	RegisterKernel(op.Normal, Kernel{Run: normalKernel})
	RegisterKernel(op.Randint, Kernel{Run: randintKernel})
	RegisterKernel(op.Bernoulli, Kernel{DTypes: op.SetFloats, Run: bernoulliKernel})
	RegisterKernel(op.Multinomial, Kernel{DTypes: op.SetFloats, Run: multinomialKernel})
	RegisterKernel(op.Randperm, Kernel{Run: randpermKernel})
}

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC 2011): a counter-based generator; the block of a 128-bit counter
// under a 64-bit key is four 32-bit random words.
const (
	philoxM0 = 0xD2511F53
	philoxM1 = 0xCD9E8D57
	philoxW0 = 0x9E3779B9
	philoxW1 = 0xBB67AE85
)

// Philox returns the Philox4x32-10 block of counter ctr under key.
func Philox(ctr [4]uint32, key [2]uint32) [4]uint32 {
	c, k0, k1 := ctr, key[0], key[1]
	for r := 0; r < 10; r++ {
		if r > 0 {
			k0 += philoxW0
			k1 += philoxW1
		}
		hi0, lo0 := bits.Mul32(philoxM0, c[0])
		hi1, lo1 := bits.Mul32(philoxM1, c[2])
		c = [4]uint32{hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0}
	}
	return c
}

// block returns the Philox block for gotpu's counter (lo, hi) under seed.
func block(seed, lo, hi uint64) [4]uint32 {
	return Philox([4]uint32{uint32(lo), uint32(lo >> 32), uint32(hi), uint32(hi >> 32)},
		[2]uint32{uint32(seed), uint32(seed >> 32)})
}

// bits64 returns 64-bit lane l (0 or 1) of the block.
func bits64(b [4]uint32, l int) uint64 { return uint64(b[2*l]) | uint64(b[2*l+1])<<32 }

// rng holds a random op's seed and first counter.
type rng struct{ seed, offset uint64 }

func rngOf(c *Call) rng {
	return rng{seed: uint64(attrInt64(c.Attrs["seed"])), offset: uint64(attrInt64(c.Attrs["offset"]))}
}

func attrInt64(v any) int64 {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int64:
		return x
	}
	return 0
}

// u53 returns lane l of counter (offset+i, 0) as a uniform f64 in [0, 1)
// from its low 53 bits (exactly what random_bits & (2^53-1) * 2^-53 gives).
func (r rng) u53(i int, l int) float64 {
	return float64(bits64(block(r.seed, r.offset+uint64(i), 0), l)&(1<<53-1)) * 0x1p-53
}

// rounder returns the function that rounds an f64 to dtype d's precision
// (f64 -> f32 -> narrow for bf16/f16, as the elementwise kernels do).
func rounder(d dtype.DType) func(float64) float64 {
	switch d {
	case dtype.F32:
		return func(x float64) float64 { return float64(float32(x)) }
	case dtype.BF16:
		return func(x float64) float64 { return float64(dtype.BF16FromF32(float32(x)).F32()) }
	case dtype.F16:
		return func(x float64) float64 { return float64(dtype.F16FromF32(float32(x)).F32()) }
	}
	return func(x float64) float64 { return x }
}

// fillFloat writes f(i) for every element i of output 0, converting an f64
// to the output dtype as convert does.
func fillFloat(c *Call, f func(i int) float64) {
	out := c.Out[0]
	ob := c.OutB[0]
	store := storer(out.DType)
	n := op.Numel(out.Shape)
	parallelFor(n, n*8, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			store(ob, out.Offset+i, value{f: f(i)})
		}
	})
}

// fillInt writes f(i) for every element i of output 0, converting an i64
// to the output dtype as convert does (wrapping).
func fillInt(c *Call, f func(i int) int64) {
	out := c.Out[0]
	ob := c.OutB[0]
	store := storer(out.DType)
	n := op.Numel(out.Shape)
	parallelFor(n, n*8, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			store(ob, out.Offset+i, value{i: f(i), isInt: true})
		}
	})
}

func fullKernel(c *Call) error {
	out := c.Out[0]
	n := op.Numel(out.Shape)
	if n == 0 {
		return nil
	}
	es := out.DType.Size()
	one := make([]byte, es)
	switch v := c.Attrs["value"].(type) {
	case float64:
		dtype.PutFloat64(out.DType, one, 0, v)
	case int64:
		if out.DType.IsFloat() {
			dtype.PutFloat64(out.DType, one, 0, float64(v))
		} else if out.DType == dtype.Bool {
			dtype.PutFloat64(out.DType, one, 0, float64(b2i(v != 0)))
		} else {
			dtype.PutInt64(out.DType, one, 0, v)
		}
	case bool:
		dtype.PutFloat64(out.DType, one, 0, float64(b2i(v)))
	default:
		return fmt.Errorf("full: value %v (%T) is not a scalar", v, v)
	}
	dst := c.OutB[0][out.Offset*es : (out.Offset+n)*es]
	copy(dst, one)
	for k := es; k < len(dst); k *= 2 {
		copy(dst[k:], dst[:k])
	}
	return nil
}

func iotaKernel(c *Call) error {
	out := c.Out[0]
	shape := out.Shape
	if len(shape) == 0 {
		fillInt(c, func(int) int64 { return 0 })
		return nil
	}
	ax, err := op.NormAxis("iota", c.Attrs.Int("dim"), len(shape))
	if err != nil {
		return err
	}
	inner := op.Numel(shape[ax+1:])
	size := shape[ax]
	if inner == 0 || size == 0 {
		return nil
	}
	fillInt(c, func(i int) int64 { return int64((i / inner) % size) })
	return nil
}

func randomBitsKernel(c *Call) error {
	r := rngOf(c)
	out := c.Out[0]
	lane, stream, period := c.Attrs.Int("lane"), uint64(c.Attrs.Int("stream")), c.Attrs.Int("period")
	n := op.Numel(out.Shape)
	last := 1
	if len(out.Shape) > 0 {
		last = out.Shape[len(out.Shape)-1]
	}
	ctr := func(i int) (lo, hi uint64) {
		if period <= 0 || last == 0 {
			return r.offset + uint64(i), stream
		}
		row, k := i/last, i%last
		return r.offset + uint64(row*period+k%period), stream + uint64(k/period)
	}
	switch out.DType {
	case dtype.I64:
		dst := as[int64](c.OutB[0])[out.Offset:]
		parallelFor(n, n*64, func(a, b int) {
			for i := a; i < b; i++ {
				lo, hi := ctr(i)
				dst[i] = int64(bits64(block(r.seed, lo, hi), lane))
			}
		})
	case dtype.I32:
		dst := as[int32](c.OutB[0])[out.Offset:]
		parallelFor(n, n*64, func(a, b int) {
			for i := a; i < b; i++ {
				lo, hi := ctr(i)
				dst[i] = int32(block(r.seed, lo, hi)[lane])
			}
		})
	default:
		return fmt.Errorf("random_bits: dtype %s is not i32 or i64", out.DType)
	}
	return nil
}

func isFloatAttr(v any) bool { _, ok := v.(float64); return ok }

func scalarF(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	case int:
		return float64(x)
	case bool:
		return float64(b2i(x))
	}
	return 0
}

func scalarI(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int:
		return int64(x)
	case bool:
		return b2i(x)
	case float64:
		return int64(x)
	}
	return 0
}

// arangeKernel computes start + i*step in i64 when everything is integral,
// else in f64, then converts, as the decomposition does.
func arangeKernel(c *Call) error {
	a := c.Attrs
	dt := c.Out[0].DType
	if !isFloatAttr(a["start"]) && !isFloatAttr(a["step"]) && !dt.IsFloat() {
		start, step := scalarI(a["start"]), scalarI(a["step"])
		fillInt(c, func(i int) int64 { return int64(i)*step + start })
		return nil
	}
	start, step := scalarF(a["start"]), scalarF(a["step"])
	fillFloat(c, func(i int) float64 { return float64(float64(i)*step) + start })
	return nil
}

// LinspaceVectorWidth is the SIMD width (in elements of 32 bits) of the
// PyTorch CPU build whose linspace values the f32/f64 kernel reproduces:
// PyTorch computes the first 2*width-element blocks as vectors from a
// per-vector base, the rest one by one.
var LinspaceVectorWidth = 8

// linspaceKernel reproduces PyTorch's symmetric linspace bit for bit: the
// first half from start (start + step*i), the second from end
// (end - step*(steps-1-i)). For f32, f64 and integers (step in f64) PyTorch's
// compiled kernel fuses each multiply-add; bf16 and f16 round every
// operation.
func linspaceKernel(c *Call) error {
	a := c.Attrs
	dt := c.Out[0].DType
	n := a.Int("steps")
	// start and end are first converted to dt (as full does).
	conv := func(v any) float64 {
		b := make([]byte, dt.Size())
		if x, ok := v.(float64); ok {
			dtype.PutFloat64(dt, b, 0, x)
		} else {
			dtype.PutInt64(dt, b, 0, scalarI(v))
		}
		return dtype.Float64At(dt, b, 0)
	}
	start, end := conv(a["start"]), conv(a["end"])
	if n <= 1 {
		fillFloat(c, func(int) float64 { return start })
		return nil
	}
	half := n / 2
	rnd := rounder(dt)
	if dt == dtype.BF16 || dt == dtype.F16 {
		step := rnd(rnd(end-start) / float64(n-1))
		fillFloat(c, func(i int) float64 {
			if i < half {
				return rnd(start + rnd(step*rnd(float64(i))))
			}
			return rnd(end - rnd(step*rnd(float64(n-1-i))))
		})
		return nil
	}
	if !dt.IsFloat() {
		rnd = func(x float64) float64 { return x }
	}
	step := rnd(rnd(end-start) / float64(n-1))
	fma := func(x, y, z float64) float64 { return rnd(math.FMA(x, y, z)) }
	at := func(i int) float64 {
		if i < half {
			return fma(step, float64(i), start)
		}
		return fma(-step, float64(n-1-i), end)
	}
	vs := 0
	switch dt {
	case dtype.F32:
		vs = LinspaceVectorWidth
	case dtype.F64:
		vs = LinspaceVectorWidth / 2
	}
	vecEnd := 0
	if vs > 0 {
		vecEnd = n / (2 * vs) * (2 * vs)
	}
	fillFloat(c, func(i int) float64 {
		if i >= vecEnd {
			return at(i)
		}
		base := i / vs * vs
		return rnd(at(base) + rnd(float64(i-base)*step))
	})
	return nil
}

func eyeKernel(c *Call) error {
	m := c.Out[0].Shape[1]
	fillInt(c, func(i int) int64 {
		if m > 0 && i/m == i%m {
			return 1
		}
		return 0
	})
	return nil
}

// triKernel copies the input and zeroes the elements outside the triangle.
func triKernel(c *Call, lower bool) error {
	in, out := c.In[0], c.Out[0]
	castLoop(c.kernels(), in, c.InB[0], out, c.OutB[0])
	r := len(out.Shape)
	rows, cols := out.Shape[r-2], out.Shape[r-1]
	if rows == 0 || cols == 0 {
		return nil
	}
	diag := c.Attrs.Int("diagonal")
	es := out.DType.Size()
	ob := c.OutB[0]
	mats := op.Numel(out.Shape[:r-2])
	parallelFor(mats*rows, mats*rows*cols, func(lo, hi int) {
		for mr := lo; mr < hi; mr++ {
			i := mr % rows
			base := (out.Offset + mr*cols) * es
			for j := 0; j < cols; j++ {
				d := j - i
				if (lower && d > diag) || (!lower && d < diag) {
					clear(ob[base+j*es : base+(j+1)*es])
				}
			}
		}
	})
	return nil
}

// uniformKernel: rand and uniform. u = (bits & (2^d-1)) * 2^-d in dtype
// (exact), then for uniform round(round(u*round(high-low)) + round(low)).
func uniformKernel(c *Call) error {
	r := rngOf(c)
	dt := c.Out[0].DType
	digits := op.UniformDigits(dt)
	mask := uint64(1)<<digits - 1
	scale := math.Ldexp(1, -digits)
	rnd := rounder(dt)
	affine := c.Launch.Op == op.Uniform
	var width, low float64
	if affine {
		width, low = rnd(c.Attrs.Float("high")-c.Attrs.Float("low")), rnd(c.Attrs.Float("low"))
	}
	fillFloat(c, func(i int) float64 {
		u := float64(bits64(block(r.seed, r.offset+uint64(i), 0), 0)&mask) * scale
		if affine {
			return rnd(rnd(u*width) + low)
		}
		return u
	})
	return nil
}

// boxMuller returns sqrt(-2 log(1-u1)) * cos(2π u2) for counter i, with the
// same f64 operations as the decomposition.
func (r rng) boxMuller(i int) float64 {
	b := block(r.seed, r.offset+uint64(i), 0)
	u1 := float64(bits64(b, 0)&(1<<53-1)) * 0x1p-53
	u2 := float64(bits64(b, 1)&(1<<53-1)) * 0x1p-53
	rad := math.Sqrt(float64(math.Log(1-u1) * -2))
	return rad * math.Cos(float64(u2*(2*math.Pi)))
}

func normalKernel(c *Call) error {
	r := rngOf(c)
	if c.Launch.Op == op.Normal {
		mean, std := c.Attrs.Float("mean"), c.Attrs.Float("std")
		fillFloat(c, func(i int) float64 { return float64(r.boxMuller(i)*std) + mean })
		return nil
	}
	fillFloat(c, r.boxMuller)
	return nil
}

func randintKernel(c *Call) error {
	r := rngOf(c)
	lo, hi := int64(c.Attrs.Int("low")), int64(c.Attrs.Int("high"))
	span := hi - lo
	if span <= 0 {
		return fmt.Errorf("randint: random_ expects 'from' to be less than 'to', but got from=%d >= to=%d", lo, hi)
	}
	fillInt(c, func(i int) int64 {
		v := int64(bits64(block(r.seed, r.offset+uint64(i), 0), 0) & math.MaxInt64)
		return v%span + lo
	})
	return nil
}

func bernoulliKernel(c *Call) error {
	r := rngOf(c)
	in := c.In[0]
	var probs []float64
	if !c.Attrs.Has("p") {
		probs = gatherFloat64(in, c.InB[0])
		for i, p := range probs {
			if !(p >= 0 && p <= 1) {
				return fmt.Errorf("bernoulli: expected 0 <= p <= 1, but got p=%v at index %d", p, i)
			}
		}
	}
	p := 0.0
	if c.Attrs.Has("p") {
		p = c.Attrs.Float("p")
	}
	fillFloat(c, func(i int) float64 {
		q := p
		if probs != nil {
			q = probs[i]
		}
		if r.u53(i, 0) < q {
			return 1
		}
		return 0
	})
	return nil
}

// gatherFloat64 reads a strided operand into a row-major []float64.
func gatherFloat64(o device.Operand, b []byte) []float64 {
	n := op.Numel(o.Shape)
	out := make([]float64, n)
	if n == 0 {
		return out
	}
	shape := o.Shape
	idx := make([]int, len(shape))
	for k := 0; k < n; k++ {
		off := o.Offset
		for d := range shape {
			off += idx[d] * o.Strides[d]
		}
		out[k] = dtype.Float64At(o.DType, b, off)
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return out
}

func multinomialKernel(c *Call) error {
	r := rngOf(c)
	in, out := c.In[0], c.Out[0]
	probs := gatherFloat64(in, c.InB[0])
	cats := in.Shape[len(in.Shape)-1]
	ns := c.Attrs.Int("num_samples")
	rows := len(probs) / cats
	repl := c.Attrs.Bool("replacement")
	dst := as[int64](c.OutB[0])[out.Offset:]
	for row := 0; row < rows; row++ {
		p := probs[row*cats : (row+1)*cats]
		nonzero := 0
		for k, v := range p {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return fmt.Errorf("multinomial: probability tensor contains either `inf`, `nan` or element < 0 (row %d, category %d: %v)", row, k, v)
			}
			if v > 0 {
				nonzero++
			}
		}
		if nonzero == 0 {
			return fmt.Errorf("multinomial: invalid multinomial distribution (sum of probabilities <= 0) in row %d", row)
		}
		if !repl && nonzero < ns {
			return fmt.Errorf("multinomial: invalid multinomial distribution (with replacement=False, not enough non-negative category to sample): row %d has %d, num_samples is %d", row, nonzero, ns)
		}
		if repl {
			cdf := make([]float64, cats)
			s := 0.0
			for k, v := range p {
				s += v
				cdf[k] = s
			}
			for j := 0; j < ns; j++ {
				u := r.u53(row*ns+j, 0) * s
				cnt := 0
				for _, v := range cdf {
					if v <= u {
						cnt++
					}
				}
				dst[row*ns+j] = int64(cnt)
			}
			continue
		}
		type kv struct {
			key float64
			idx int
		}
		keys := make([]kv, cats)
		for k := range p {
			blk := block(r.seed, r.offset+uint64(row*ns+k%ns), 1+uint64(k/ns))
			u := float64(bits64(blk, 0)&(1<<53-1)) * 0x1p-53
			keys[k] = kv{-math.Log(1-u) / p[k], k}
		}
		slices.SortStableFunc(keys, func(a, b kv) int { return cmpNaNLast(a.key, b.key) })
		for j := 0; j < ns; j++ {
			dst[row*ns+j] = int64(keys[j].idx)
		}
	}
	return nil
}

// cmpNaNLast orders floats ascending with NaN largest (as sort does).
func cmpNaNLast(a, b float64) int {
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	}
	return cmp.Compare(a, b)
}

func randpermKernel(c *Call) error {
	r := rngOf(c)
	n := c.Attrs.Int("n")
	type kv struct {
		key int64
		idx int
	}
	keys := make([]kv, n)
	for i := range keys {
		keys[i] = kv{int64(bits64(block(r.seed, r.offset+uint64(i), 0), 0)), i}
	}
	slices.SortStableFunc(keys, func(a, b kv) int { return cmp.Compare(a.key, b.key) })
	fillInt(c, func(i int) int64 { return int64(keys[i].idx) })
	return nil
}
