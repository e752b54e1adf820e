package nninit

import (
	"errors"
	"math"
	"testing"

	_ "github.com/gotpu/gotpu/backend/cpu"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

var cpu = tensor.MustDevice("cpu")

func moments(v []float64) (mean, std, lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range v {
		mean += x
		lo = math.Min(lo, x)
		hi = math.Max(hi, x)
	}
	mean /= float64(len(v))
	for _, x := range v {
		std += (x - mean) * (x - mean)
	}
	std = math.Sqrt(std / float64(len(v)-1))
	return
}

// param returns a zero f32 leaf that requires grad, as a module's weight.
func param(shape ...int) *tensor.Tensor {
	return tensor.Zeros(cpu, dtype.F32, shape...).SetRequiresGrad(true)
}

func TestDistributions(t *testing.T) {
	g := tensor.NewGenerator(7)
	// 64x48x3x3 weight: fan_in 432, fan_out 576; 27648 samples.
	shape := []int{64, 48, 3, 3}
	const fi, fo = 48 * 9, 64 * 9
	kBound := math.Sqrt(3) * math.Sqrt(2/(1+5.0)) / math.Sqrt(fi) // a=√5: torch's Linear/Conv default
	cases := []struct {
		name    string
		fill    func(*tensor.Tensor)
		uniform bool    // U(lo, hi) with the given bounds
		lo, hi  float64 // uniform bounds, or truncation bounds for normals
		mean    float64
		std     float64
	}{
		{"uniform", func(w *tensor.Tensor) { Uniform(w, -0.5, 1.5, g) }, true, -0.5, 1.5, 0.5, 2 / math.Sqrt(12)},
		{"normal", func(w *tensor.Tensor) { Normal(w, 1, 0.2, g) }, false, math.Inf(-1), math.Inf(1), 1, 0.2},
		{"xavier_uniform", func(w *tensor.Tensor) { XavierUniform(w, 2, g) }, true,
			-2 * math.Sqrt(6.0/(fi+fo)), 2 * math.Sqrt(6.0/(fi+fo)), 0, 2 * math.Sqrt(2.0/(fi+fo))},
		{"xavier_normal", func(w *tensor.Tensor) { XavierNormal(w, 1, g) }, false, math.Inf(-1), math.Inf(1), 0, math.Sqrt(2.0 / (fi + fo))},
		{"kaiming_uniform_default", func(w *tensor.Tensor) { KaimingUniform(w, math.Sqrt(5), FanIn, "leaky_relu", g) }, true,
			-kBound, kBound, 0, kBound / math.Sqrt(3)},
		{"kaiming_uniform_relu_fan_out", func(w *tensor.Tensor) { KaimingUniform(w, 0, FanOut, "relu", g) }, true,
			-math.Sqrt(6.0 / fo), math.Sqrt(6.0 / fo), 0, math.Sqrt(2.0 / fo)},
		{"kaiming_normal", func(w *tensor.Tensor) { KaimingNormal(w, 0, "", "", g) }, false, math.Inf(-1), math.Inf(1), 0, math.Sqrt(2.0 / fi)},
		{"trunc_normal_default", func(w *tensor.Tensor) { TruncNormal(w, 0, 1, -2, 2, g) }, false, -2, 2, 0, 0.8796},
		{"trunc_normal_shifted", func(w *tensor.Tensor) { TruncNormal(w, 0, 0.02, -0.04, 0.04, g) }, false, -0.04, 0.04, 0, 0.02 * 0.8796},
		{"trunc_normal_one_sided", func(w *tensor.Tensor) { TruncNormal(w, 0, 1, 0, 10, g) }, false, 0, 10, math.Sqrt(2 / math.Pi), math.Sqrt(1 - 2/math.Pi)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := param(shape...)
			c.fill(w)
			if !w.RequiresGrad() || !w.IsLeaf() {
				t.Fatal("init changed the parameter's autograd state")
			}
			v := w.Float64s()
			mean, std, lo, hi := moments(v)
			n := float64(len(v))
			if lo < c.lo || hi > c.hi {
				t.Fatalf("range [%v, %v] outside [%v, %v]", lo, hi, c.lo, c.hi)
			}
			if c.uniform {
				// With 27648 draws the extremes sit within 0.1% of the bounds.
				span := c.hi - c.lo
				if lo > c.lo+span*1e-3 || hi < c.hi-span*1e-3 {
					t.Fatalf("range [%v, %v] does not reach [%v, %v]", lo, hi, c.lo, c.hi)
				}
			}
			if math.Abs(mean-c.mean) > 5*c.std/math.Sqrt(n) {
				t.Fatalf("mean %v, want %v ± %v", mean, c.mean, 5*c.std/math.Sqrt(n))
			}
			if math.Abs(std/c.std-1) > 0.03 {
				t.Fatalf("std %v, want %v", std, c.std)
			}
		})
	}
}

func TestDeterministicWithGenerator(t *testing.T) {
	a, b := param(5, 7), param(5, 7)
	KaimingUniform(a, math.Sqrt(5), FanIn, "leaky_relu", tensor.NewGenerator(3))
	KaimingUniform(b, math.Sqrt(5), FanIn, "leaky_relu", tensor.NewGenerator(3))
	va, vb := a.Float64s(), b.Float64s()
	for i := range va {
		if va[i] != vb[i] {
			t.Fatalf("same seed gave different values at %d: %v vs %v", i, va[i], vb[i])
		}
	}
	c := param(5, 7)
	KaimingUniform(c, math.Sqrt(5), FanIn, "leaky_relu", tensor.NewGenerator(4))
	if c.Float64s()[0] == va[0] {
		t.Fatal("a different seed gave the same first value")
	}
}

func TestDeterministicFills(t *testing.T) {
	w := param(3, 4)
	Constant(w, 2.5)
	for _, v := range w.Float64s() {
		if v != 2.5 {
			t.Fatalf("constant: %v", w.Float64s())
		}
	}
	Zeros(w)
	if _, _, lo, hi := moments(w.Float64s()); lo != 0 || hi != 0 {
		t.Fatal("zeros")
	}
	Ones(w)
	if _, _, lo, hi := moments(w.Float64s()); lo != 1 || hi != 1 {
		t.Fatal("ones")
	}
	Eye(w)
	want := []float64{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0}
	for i, v := range w.Float64s() {
		if v != want[i] {
			t.Fatalf("eye: %v", w.Float64s())
		}
	}
	// dirac_ on a [4, 2, 3] conv1d weight with 2 groups: out channel g*2+k
	// copies input k at the kernel centre.
	d := param(4, 2, 3)
	Dirac(d, 2)
	got := d.Float64s()
	for o := 0; o < 4; o++ {
		for i := 0; i < 2; i++ {
			for k := 0; k < 3; k++ {
				w := 0.0
				if o%2 == i && k == 1 {
					w = 1
				}
				if got[o*6+i*3+k] != w {
					t.Fatalf("dirac[%d,%d,%d] = %v, want %v", o, i, k, got[o*6+i*3+k], w)
				}
			}
		}
	}
}

func TestOrthogonal(t *testing.T) {
	for _, shape := range [][]int{{6, 6}, {8, 3}, {3, 8}, {4, 2, 3}} {
		w := param(shape...)
		Orthogonal(w, 2, tensor.NewGenerator(11))
		rows := shape[0]
		cols := w.Numel() / rows
		v := w.Float64s()
		// The smaller side's vectors are orthonormal (times gain²).
		n, m := rows, cols
		at := func(i, j int) float64 { return v[i*cols+j] }
		if rows > cols {
			n, m = cols, rows
			at = func(i, j int) float64 { return v[j*cols+i] }
		}
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				dot := 0.0
				for k := 0; k < m; k++ {
					dot += at(i, k) * at(j, k)
				}
				want := 0.0
				if i == j {
					want = 4
				}
				if math.Abs(dot-want) > 1e-5 {
					t.Fatalf("%v: <q%d, q%d> = %v, want %v", shape, i, j, dot, want)
				}
			}
		}
	}
}

func TestFansAndGain(t *testing.T) {
	fanCases := []struct {
		shape   []int
		in, out int
	}{{[]int{10, 4}, 4, 10}, {[]int{8, 3, 5}, 15, 40}, {[]int{16, 2, 3, 3}, 18, 144}}
	for _, c := range fanCases {
		fi, fo := Fans(tensor.Zeros(cpu, dtype.F32, c.shape...))
		if fi != c.in || fo != c.out {
			t.Errorf("fans %v = %d, %d; want %d, %d", c.shape, fi, fo, c.in, c.out)
		}
	}
	gainCases := []struct {
		name  string
		param []float64
		want  float64
	}{
		{"linear", nil, 1}, {"conv2d", nil, 1}, {"sigmoid", nil, 1}, {"tanh", nil, 5.0 / 3},
		{"relu", nil, math.Sqrt2}, {"leaky_relu", nil, math.Sqrt(2 / (1 + 1e-4))},
		{"leaky_relu", []float64{math.Sqrt(5)}, math.Sqrt(1.0 / 3)}, {"selu", nil, 0.75},
	}
	for _, c := range gainCases {
		if got := CalculateGain(c.name, c.param...); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("gain %s%v = %v, want %v", c.name, c.param, got, c.want)
		}
	}
}

func TestInvalidArguments(t *testing.T) {
	cases := []struct {
		name string
		f    func()
	}{
		{"gain", func() { CalculateGain("swish") }},
		{"fans_1d", func() { XavierUniform(param(5), 1, nil) }},
		{"mode", func() { KaimingNormal(param(5, 5), 0, "fan_avg", "relu", nil) }},
		{"eye_3d", func() { Eye(param(2, 2, 2)) }},
		{"dirac_2d", func() { Dirac(param(2, 2), 1) }},
		{"orthogonal_1d", func() { Orthogonal(param(4), 1, nil) }},
		{"uniform_int", func() { Uniform(tensor.Zeros(cpu, dtype.I64, 3), 0, 1, nil) }},
		{"trunc_bounds", func() { TruncNormal(param(3), 0, 1, 2, -2, nil) }},
	}
	for _, c := range cases {
		err := tensor.Catch(c.f)
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: got %v, want ErrInvalidArgument", c.name, err)
		}
	}
}
