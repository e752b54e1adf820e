package tensor_test

import (
	"math"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

var (
	crCPU = device.Device{Type: "cpu"}
	crTD  = device.Device{Type: "testdev"}
)

func TestCreationValues(t *testing.T) {
	tests := []struct {
		name  string
		got   func() *tensor.Tensor
		dt    dtype.DType
		shape []int
		want  []float64
	}{
		{"zeros", func() *tensor.Tensor { return tensor.Zeros(crCPU, dtype.Invalid, 2, 2) }, dtype.F32, []int{2, 2}, []float64{0, 0, 0, 0}},
		{"ones-i32", func() *tensor.Tensor { return tensor.Ones(crCPU, dtype.I32, 3) }, dtype.I32, []int{3}, []float64{1, 1, 1}},
		{"full-int-infers-i64", func() *tensor.Tensor { return tensor.Full(crCPU, dtype.Invalid, 7, 2) }, dtype.I64, []int{2}, []float64{7, 7}},
		{"full-bool", func() *tensor.Tensor { return tensor.Full(crCPU, dtype.Invalid, true) }, dtype.Bool, []int{}, []float64{1}},
		{"full-u8-wraps", func() *tensor.Tensor { return tensor.Full(crCPU, dtype.U8, -1, 2) }, dtype.U8, []int{2}, []float64{255, 255}},
		{"arange-int", func() *tensor.Tensor { return tensor.Arange(crCPU, 1, 10, 3, dtype.Invalid) }, dtype.I64, []int{3}, []float64{1, 4, 7}},
		{"arange-float", func() *tensor.Tensor { return tensor.Arange(crCPU, 0, 1, 0.25, dtype.Invalid) }, dtype.F32, []int{4}, []float64{0, 0.25, 0.5, 0.75}},
		{"arange-neg", func() *tensor.Tensor { return tensor.Arange(crCPU, 5, 0, -2, dtype.Invalid) }, dtype.I64, []int{3}, []float64{5, 3, 1}},
		{"linspace", func() *tensor.Tensor { return tensor.Linspace(crCPU, 0, 1, 5, dtype.F64) }, dtype.F64, []int{5}, []float64{0, 0.25, 0.5, 0.75, 1}},
		{"eye", func() *tensor.Tensor { return tensor.Eye(crCPU, 2, 3, dtype.I64) }, dtype.I64, []int{2, 3}, []float64{1, 0, 0, 0, 1, 0}},
		{"iota-dim1", func() *tensor.Tensor { return tensor.Iota(crCPU, dtype.Invalid, 1, 2, 3) }, dtype.I64, []int{2, 3}, []float64{0, 1, 2, 0, 1, 2}},
		{"tril", func() *tensor.Tensor { return tensor.Ones(crCPU, dtype.F32, 3, 3).Tril(0) }, dtype.F32, []int{3, 3}, []float64{1, 0, 0, 1, 1, 0, 1, 1, 1}},
		{"triu-1", func() *tensor.Tensor { return tensor.Ones(crCPU, dtype.Bool, 2, 3).Triu(1) }, dtype.Bool, []int{2, 3}, []float64{0, 1, 1, 0, 0, 1}},
		{"fill_", func() *tensor.Tensor { return tensor.Zeros(crCPU, dtype.I32, 2).FillInPlace(2.7) }, dtype.I32, []int{2}, []float64{2, 2}},
		{"zero_", func() *tensor.Tensor { return tensor.Ones(crCPU, dtype.F64, 3).ZeroInPlace() }, dtype.F64, []int{3}, []float64{0, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.got()
			if g.DType() != tc.dt || !slices.Equal(g.Shape(), tc.shape) {
				t.Fatalf("got %s%v, want %s%v", g.DType(), g.Shape(), tc.dt, tc.shape)
			}
			if got := g.Float64s(); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCreationOnDevice checks that inputless ops run on the device asked for.
func TestCreationOnDevice(t *testing.T) {
	for _, mode := range []tensor.Mode{tensor.Strict, tensor.Debug} {
		prev := tensor.SetMode(mode)
		z := tensor.Arange(crTD, 0, 6, 1, dtype.F32)
		if z.Device() != crTD {
			t.Errorf("%v: arange on %v, want %v", mode, z.Device(), crTD)
		}
		e := tensor.Eye(crTD, 3, -1, dtype.Invalid) // composite: decomposed or direct, still on testdev
		if e.Device() != crTD {
			t.Errorf("%v: eye on %v", mode, e.Device())
		}
		if got := tensor.Zeros(crTD, dtype.F32, 2, 3).Device(); got != crTD {
			t.Errorf("%v: zeros (decomposed into full) on %v", mode, got)
		}
		if got := tensor.Randn(crTD, dtype.F32, 4).Device(); got != crTD {
			t.Errorf("%v: randn on %v", mode, got)
		}
		tensor.SetMode(prev)
	}
}

func TestCreationErrors(t *testing.T) {
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"negative-dim", func() { tensor.Zeros(crCPU, dtype.F32, 2, -1) }, "negative dimension -1"},
		{"arange-step0", func() { tensor.Arange(crCPU, 0, 1, 0, dtype.Invalid) }, "step must be nonzero"},
		{"arange-sign", func() { tensor.Arange(crCPU, 0, 5, -1, dtype.Invalid) }, "inconsistent with step sign"},
		{"randint-empty", func() { tensor.RandInt(crCPU, 3, 3, dtype.Invalid, 2) }, "from=3 >= to=3"},
		{"tril-1d", func() { tensor.Ones(crCPU, dtype.F32, 3).Tril(0) }, "at least 2 dimensions"},
		{"multinomial-too-many", func() { tensor.Ones(crCPU, dtype.F32, 3).Multinomial(4, false) }, "without replacement"},
		{"multinomial-negative", func() {
			tensor.FromSlice(crCPU, []float32{1, -1, 2}).Multinomial(1, true).Bytes()
		}, "element < 0"},
		{"bernoulli-p", func() { tensor.FromSlice(crCPU, []float32{0.5, 2}).Bernoulli().Bytes() }, "p=2 at index 1"},
		{"uniform-int", func() { tensor.Zeros(crCPU, dtype.I32, 2).UniformInPlace(0, 1) }, "not implemented for 'i32'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tensor.Catch(tc.f)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

type crRandomCase struct {
	name string
	f    func(g *tensor.Generator, dev string) *tensor.Tensor
}

func crRandomCases() []crRandomCase {
	d := tensor.MustDevice
	probs := func(dev string) *tensor.Tensor {
		return tensor.FromSlice(d(dev), []float32{0.1, 0, 0.5, 0.4, 1, 2, 3, 4}, 2, 4)
	}
	return []crRandomCase{
		{"rand-f32", func(g *tensor.Generator, dev string) *tensor.Tensor {
			return tensor.RandGen(g, d(dev), dtype.F32, 5, 7)
		}},
		{"rand-bf16", func(g *tensor.Generator, dev string) *tensor.Tensor { return tensor.RandGen(g, d(dev), dtype.BF16, 9) }},
		{"randn-f64", func(g *tensor.Generator, dev string) *tensor.Tensor { return tensor.RandnGen(g, d(dev), dtype.F64, 33) }},
		{"randn-f16", func(g *tensor.Generator, dev string) *tensor.Tensor {
			return tensor.RandnGen(g, d(dev), dtype.F16, 3, 3)
		}},
		{"normal", func(g *tensor.Generator, dev string) *tensor.Tensor {
			return tensor.NormalGen(g, d(dev), 3, 2, dtype.F32, 17)
		}},
		{"uniform", func(g *tensor.Generator, dev string) *tensor.Tensor {
			return tensor.UniformGen(g, d(dev), -2, 5, dtype.F64, 17)
		}},
		{"randint", func(g *tensor.Generator, dev string) *tensor.Tensor {
			return tensor.RandIntGen(g, d(dev), -3, 1000, dtype.I32, 4, 4)
		}},
		{"randperm", func(g *tensor.Generator, dev string) *tensor.Tensor {
			return tensor.RandpermGen(g, d(dev), 50, dtype.Invalid)
		}},
		{"bernoulli", func(g *tensor.Generator, dev string) *tensor.Tensor {
			return tensor.FromSlice(d(dev), []float64{0, 0.3, 0.5, 0.9, 1, 0.2}).BernoulliGen(g)
		}},
		{"multinomial-repl", func(g *tensor.Generator, dev string) *tensor.Tensor {
			return probs(dev).MultinomialGen(g, 6, true)
		}},
		{"multinomial-norepl", func(g *tensor.Generator, dev string) *tensor.Tensor {
			return probs(dev).MultinomialGen(g, 3, false)
		}},
		{"random_bits", func(g *tensor.Generator, dev string) *tensor.Tensor {
			return tensor.ApplyOn(d(dev), "random_bits", nil, tensor.WithGenerator(g, op.Attrs{"shape": []int{3, 5}, "dtype": dtype.I32, "lane": 3}, 15))[0]
		}},
	}
}

// TestRandomReproducible: the same seed gives the same numbers on cpu and
// testdev, in Strict and Debug mode; a generator's draws advance; two
// generators are independent of each other's use.
func TestRandomReproducible(t *testing.T) {
	for _, rc := range crRandomCases() {
		t.Run(rc.name, func(t *testing.T) {
			var ref []byte
			for _, mode := range []tensor.Mode{tensor.Strict, tensor.Debug} {
				prev := tensor.SetMode(mode)
				for _, dev := range []string{"cpu", "testdev"} {
					g := tensor.NewGenerator(1234)
					first := rc.f(g, dev).Bytes()
					second := rc.f(g, dev).Bytes()
					if ref == nil {
						ref = first
					} else if !slices.Equal(ref, first) {
						t.Errorf("%v/%s: draw differs from cpu/strict", mode, dev)
					}
					if len(first) > 8 && slices.Equal(first, second) {
						t.Errorf("%v/%s: second draw repeats the first", mode, dev)
					}
				}
				tensor.SetMode(prev)
			}
			// Independent generators: drawing from h does not change g's stream.
			g1, g2, h := tensor.NewGenerator(99), tensor.NewGenerator(99), tensor.NewGenerator(99)
			a := rc.f(g1, "cpu").Bytes()
			rc.f(h, "cpu")
			b := rc.f(g2, "cpu").Bytes()
			if !slices.Equal(a, b) {
				t.Errorf("generator streams interfere")
			}
		})
	}
}

func TestManualSeed(t *testing.T) {
	tensor.ManualSeed(7)
	a := tensor.Randn(crCPU, dtype.F32, 100).Float64s()
	b := tensor.Rand(crCPU, dtype.F32, 10).Float64s()
	tensor.ManualSeed(7)
	a2 := tensor.Randn(crTD, dtype.F32, 100).Float64s()
	b2 := tensor.Rand(crTD, dtype.F32, 10).Float64s()
	if !slices.Equal(a, a2) || !slices.Equal(b, b2) {
		t.Fatal("ManualSeed does not reproduce the default generator's draws")
	}
	tensor.ManualSeed(8)
	if c := tensor.Randn(crCPU, dtype.F32, 100).Float64s(); slices.Equal(a, c) {
		t.Fatal("different seeds give the same numbers")
	}
	// State/SetState round-trips.
	g := tensor.NewGenerator(5)
	tensor.RandGen(g, crCPU, dtype.F32, 3)
	s, o := g.State()
	x := tensor.RandGen(g, crCPU, dtype.F32, 8).Float64s()
	g.SetState(s, o)
	if y := tensor.RandGen(g, crCPU, dtype.F32, 8).Float64s(); !slices.Equal(x, y) {
		t.Fatal("SetState does not restore the stream")
	}
}

func crMeanVar(v []float64) (float64, float64) {
	m := 0.0
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	s := 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return m, s / float64(len(v)-1)
}

// TestRandomStatistics checks moments of 1e5 samples against their
// distributions (bounds of about 6 standard errors).
func TestRandomStatistics(t *testing.T) {
	const n = 100000
	g := tensor.NewGenerator(2024)
	se := 1 / math.Sqrt(n)
	tests := []struct {
		name           string
		v              []float64
		mean, variance float64
		lo, hi         float64
	}{
		{"rand-f32", tensor.RandGen(g, crCPU, dtype.F32, n).Float64s(), 0.5, 1.0 / 12, 0, 1},
		{"rand-f64", tensor.RandGen(g, crCPU, dtype.F64, n).Float64s(), 0.5, 1.0 / 12, 0, 1},
		{"rand-bf16", tensor.RandGen(g, crCPU, dtype.BF16, n).Float64s(), 0.5 - 1.0/512, 1.0 / 12, 0, 1},
		{"uniform", tensor.UniformGen(g, crCPU, -1, 3, dtype.F32, n).Float64s(), 1, 16.0 / 12, -1, 3},
		{"randn", tensor.RandnGen(g, crCPU, dtype.F32, n).Float64s(), 0, 1, math.Inf(-1), math.Inf(1)},
		{"normal", tensor.NormalGen(g, crCPU, 5, 0.5, dtype.F64, n).Float64s(), 5, 0.25, math.Inf(-1), math.Inf(1)},
		{"randint", tensor.RandIntGen(g, crCPU, -5, 5, dtype.Invalid, n).Float64s(), -0.5, (100.0 - 1) / 12, -5, 4},
		{"bernoulli", tensor.Full(crCPU, dtype.F32, 0.3, n).BernoulliGen(g).Float64s(), 0.3, 0.21, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, v := crMeanVar(tc.v)
			sd := math.Sqrt(tc.variance)
			if math.Abs(m-tc.mean) > 6*sd*se {
				t.Errorf("mean %v, want %v ± %v", m, tc.mean, 6*sd*se)
			}
			// The variance of a sample variance is about 2σ⁴/n for normal
			// data; allow 10% for the others' heavier or lighter tails.
			if math.Abs(v-tc.variance) > 0.02*tc.variance+6*math.Sqrt(2/float64(n))*tc.variance {
				t.Errorf("variance %v, want %v", v, tc.variance)
			}
			for i, x := range tc.v {
				if x < tc.lo || x > tc.hi || (tc.hi == 1 && tc.name != "bernoulli" && x == 1) {
					t.Fatalf("sample %d = %v outside [%v, %v)", i, x, tc.lo, tc.hi)
				}
			}
		})
	}
	// Normal tail mass: P(|z| > 2) = 0.0455.
	z := tensor.RandnGen(g, crCPU, dtype.F64, n).Float64s()
	tail := 0
	for _, x := range z {
		if math.Abs(x) > 2 {
			tail++
		}
	}
	if f := float64(tail) / n; math.Abs(f-0.0455) > 0.004 {
		t.Errorf("randn: P(|z|>2) = %v, want 0.0455", f)
	}
}

func TestMultinomialFrequencies(t *testing.T) {
	g := tensor.NewGenerator(11)
	w := []float64{1, 0, 2, 7}
	x := tensor.FromSlice(crCPU, w)
	const n = 50000
	s := x.MultinomialGen(g, n, true).Int64s()
	cnt := make([]float64, len(w))
	for _, k := range s {
		cnt[k]++
	}
	for k, c := range cnt {
		p := w[k] / 10
		if f := c / n; math.Abs(f-p) > 6*math.Sqrt(p*(1-p)/n)+1e-12 {
			t.Errorf("category %d: frequency %v, want %v", k, f, p)
		}
	}
	// Without replacement: samples in a row are distinct, never a zero
	// category, and the first pick follows the weights.
	rows := 4000
	data := make([]float64, 0, rows*4)
	for r := 0; r < rows; r++ {
		data = append(data, w...)
	}
	s = tensor.FromSlice(crCPU, data, rows, 4).MultinomialGen(g, 3, false).Int64s()
	first := make([]float64, 4)
	for r := 0; r < rows; r++ {
		row := s[3*r : 3*r+3]
		if row[0] == row[1] || row[0] == row[2] || row[1] == row[2] || slices.Contains(row, 1) {
			t.Fatalf("row %d: %v repeats or picks the zero-weight category", r, row)
		}
		first[row[0]]++
	}
	for k, c := range first {
		p := w[k] / 10
		if f := c / float64(rows); math.Abs(f-p) > 6*math.Sqrt(p*(1-p)/float64(rows))+1e-12 {
			t.Errorf("first draw category %d: frequency %v, want %v", k, f, p)
		}
	}
}

func TestRandpermIsPermutation(t *testing.T) {
	g := tensor.NewGenerator(3)
	for _, n := range []int{0, 1, 2, 10, 1000} {
		p := tensor.RandpermGen(g, crCPU, n, dtype.Invalid).Int64s()
		s := slices.Clone(p)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		for i, v := range s {
			if v != int64(i) {
				t.Fatalf("randperm(%d) = %v is not a permutation", n, p)
			}
		}
		if n == 1000 {
			fixed := 0
			for i, v := range p {
				if v == int64(i) {
					fixed++
				}
			}
			if fixed > 10 {
				t.Errorf("randperm(1000) has %d fixed points (expected about 1)", fixed)
			}
		}
	}
}

// TestRandomDecomposition checks the random ops' direct CPU kernels against
// their decompositions (bit for bit) when the ops they decompose into exist.
func TestRandomDecomposition(t *testing.T) {
	for _, rc := range crRandomCases() {
		t.Run(rc.name, func(t *testing.T) {
			direct := rc.f(tensor.NewGenerator(77), "cpu").Bytes()
			prev := tensor.SetForceDecompose(true)
			defer tensor.SetForceDecompose(prev)
			var dec []byte
			err := tensor.Catch(func() { dec = rc.f(tensor.NewGenerator(77), "cpu").Bytes() })
			if err != nil {
				if strings.Contains(err.Error(), "unknown op") {
					t.Skipf("decomposition needs an op not yet in the table: %v", err)
				}
				t.Fatal(err)
			}
			if !slices.Equal(direct, dec) {
				t.Fatalf("direct kernel and decomposition differ")
			}
		})
	}
}

// TestLinspaceBitExact replays the golden linspace cases (PyTorch's values)
// on the direct CPU kernel with zero tolerance: PyTorch's symmetric formula,
// fused multiply-adds and 8-wide vector blocks are reproduced exactly.
func TestLinspaceBitExact(t *testing.T) {
	zero := 0.0
	n := 0
	for _, g := range loadGolden(t) {
		for i := range g.Cases {
			c := g.Cases[i]
			if c.Op != "linspace" || c.Error != nil {
				continue
			}
			c.RTol, c.ATol, c.Compare = &zero, &zero, "exact"
			if err := runCase(&c, runConfig{name: "cpu/strict", dev: crCPU}, map[string][][]byte{}); err != nil {
				t.Errorf("%s: %v", c.ID, err)
			}
			n++
		}
	}
	if n < 50 {
		t.Fatalf("only %d linspace golden cases", n)
	}
}

// A negative dimension is an error even when the element count matches
// (shape [-1, -1] has "1 element").
func TestFromBytesRejectsNegativeDims(t *testing.T) {
	cpu := tensor.MustDevice("cpu")
	for _, shape := range [][]int{{-1, -1}, {-2, 0}} {
		n := 1
		for _, d := range shape {
			n *= d
		}
		err := tensor.Catch(func() { tensor.FromSlice(cpu, make([]float32, n), shape...) })
		if err == nil || !strings.Contains(err.Error(), "negative") {
			t.Errorf("shape %v: err %v", shape, err)
		}
	}
}
