package tensor_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

// Tests of the reduce group beyond the golden cases: tensors large enough to
// take the kernels' parallel paths, long rows (accuracy), stability of sort
// on many ties, the direct softmax kernels against their decomposition, and
// the typed API.

var cpuDev = tensor.MustDevice("cpu")

func randF32(r *rand.Rand, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(r.NormFloat64())
	}
	return out
}

// refReduce reduces a row-major [rows, cols] matrix along axis with f.
func refReduce(x []float32, rows, cols, axis int, init float64, f func(acc, v float64) float64) []float64 {
	n := cols
	if axis == 1 {
		n = rows
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = init
	}
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			k := j
			if axis == 1 {
				k = i
			}
			out[k] = f(out[k], float64(x[i*cols+j]))
		}
	}
	return out
}

func TestReduceLargeParallel(t *testing.T) {
	const rows, cols = 301, 257 // 77k elements: above the parallel threshold
	r := rand.New(rand.NewPCG(1, 2))
	data := randF32(r, rows*cols)
	x := tensor.FromSlice(cpuDev, data, rows, cols)
	xt := tensor.Apply1("permute", []*tensor.Tensor{x}, op.Attrs{"dims": []int{1, 0}})
	sum := func(a, v float64) float64 { return a + v }
	mx := func(a, v float64) float64 { return math.Max(a, v) }
	cases := []struct {
		name string
		got  *tensor.Tensor
		want []float64
		tol  float64
	}{
		{"sum dim0", x.Sum([]int{0}, false), refReduce(data, rows, cols, 0, 0, sum), 1e-6},
		{"sum dim1", x.Sum([]int{1}, false), refReduce(data, rows, cols, 1, 0, sum), 1e-6},
		{"sum transposed dim1", xt.Sum([]int{1}, false), refReduce(data, rows, cols, 0, 0, sum), 1e-6},
		{"amax dim0", x.Amax([]int{0}, false), refReduce(data, rows, cols, 0, math.Inf(-1), mx), 0},
		{"amax transposed dim0", xt.Amax([]int{0}, false), refReduce(data, rows, cols, 1, math.Inf(-1), mx), 0},
		{"sum all", x.SumAll(), []float64{sumAll(data)}, 1e-5},
	}
	for _, c := range cases {
		got := c.got.Float64s()
		if len(got) != len(c.want) {
			t.Fatalf("%s: %d results, want %d", c.name, len(got), len(c.want))
		}
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > c.tol*(1+math.Abs(c.want[i])) {
				t.Fatalf("%s[%d] = %v, want %v", c.name, i, got[i], c.want[i])
			}
		}
	}
	// argmax along both axes against the reference.
	am := x.Argmax(1, false).Int64s()
	for i := 0; i < rows; i++ {
		row := data[i*cols : (i+1)*cols]
		best := 0
		for j, v := range row {
			if v > row[best] {
				best = j
			}
		}
		if am[i] != int64(best) {
			t.Fatalf("argmax row %d = %d, want %d", i, am[i], best)
		}
	}
	flat := x.ArgmaxAll().Int64s()[0]
	if data[flat] != slices.Max(data) {
		t.Fatalf("argmax of all = %d (%v), max is %v", flat, data[flat], slices.Max(data))
	}
}

func sumAll(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v)
	}
	return s
}

func TestLongRowAccuracy(t *testing.T) {
	const n = 1 << 20
	data := make([]float32, n)
	for i := range data {
		data[i] = 0.1
	}
	x := tensor.FromSlice(cpuDev, data)
	want := float64(float32(0.1)) * n
	if got := x.SumAll().Item(); math.Abs(got-want) > 1e-7*want {
		t.Errorf("sum of 2^20 x 0.1f = %v, want %v", got, want)
	}
	if got := x.MeanAll().Item(); math.Abs(got-float64(float32(0.1))) > 1e-7 {
		t.Errorf("mean = %v", got)
	}
	// cumsum accumulates f32 in f64, as PyTorch's CPU kernel: the last
	// partial sum is the correctly rounded total.
	cs := x.Cumsum(0).Float64s()
	if got := cs[n-1]; got != float64(float32(want)) {
		t.Errorf("cumsum last = %v, want %v", got, float64(float32(want)))
	}
	ones := make([]dtype.BFloat16, 1000)
	for i := range ones {
		ones[i] = dtype.BF16FromF32(1)
	}
	// bf16 cumsum accumulates in f32 and rounds each output: 257 is not a
	// bf16, so element 256 rounds to 256, but the running sum stays exact.
	b := tensor.FromSlice(cpuDev, ones).Cumsum(0).Float64s()
	if b[999] != 1000 || b[256] != 256 {
		t.Errorf("bf16 cumsum [256]=%v [999]=%v, want 256 and 1000", b[256], b[999])
	}
}

func TestSortStableManyTies(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const n = 5000
	vals := make([]int32, n)
	for i := range vals {
		vals[i] = int32(r.IntN(7))
	}
	x := tensor.FromSlice(cpuDev, vals)
	for _, desc := range []bool{false, true} {
		v, idx := x.Sort(0, desc)
		sv, si := v.Int64s(), idx.Int64s()
		for i := 1; i < n; i++ {
			if (!desc && sv[i] < sv[i-1]) || (desc && sv[i] > sv[i-1]) {
				t.Fatalf("desc=%v: not sorted at %d", desc, i)
			}
			if sv[i] == sv[i-1] && si[i] < si[i-1] {
				t.Fatalf("desc=%v: not stable at %d (indices %d, %d)", desc, i, si[i-1], si[i])
			}
		}
		for i := range sv {
			if int64(vals[si[i]]) != sv[i] {
				t.Fatalf("index %d does not point at its value", i)
			}
		}
	}
	// Floats: NaN sorts last ascending, first descending.
	f := tensor.FromSlice(cpuDev, []float32{2, float32(math.NaN()), -1, float32(math.Inf(1)), float32(math.NaN()), 0})
	v, i := f.Sort(0, false)
	if got := fmtF(v.Float64s()); got != "-1 0 2 +Inf NaN NaN" {
		t.Errorf("ascending: %s", got)
	}
	if got := i.Int64s(); !slices.Equal(got, []int64{2, 5, 0, 3, 1, 4}) {
		t.Errorf("ascending indices: %v", got)
	}
	v, _ = f.Sort(0, true)
	if got := fmtF(v.Float64s()); got != "NaN NaN +Inf 2 0 -1" {
		t.Errorf("descending: %s", got)
	}
}

func fmtF(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatFloat(x, 'g', -1, 64)
	}
	return strings.Join(s, " ")
}

func TestSoftmaxDirectMatchesDecomposition(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const rows, cols = 64, 513 // parallel path of the direct kernel
	data := randF32(r, rows*cols)
	for i := range data {
		data[i] *= 10
	}
	x := tensor.FromSlice(cpuDev, data, rows, cols)
	for _, dim := range []int{0, 1} {
		direct := []*tensor.Tensor{x.Softmax(dim), x.LogSoftmax(dim)}
		prev := tensor.SetForceDecompose(true)
		dec := []*tensor.Tensor{x.Softmax(dim), x.LogSoftmax(dim)}
		tensor.SetForceDecompose(prev)
		for k := range direct {
			a, b := direct[k].Float64s(), dec[k].Float64s()
			for i := range a {
				if math.Abs(a[i]-b[i]) > 1e-5+2e-6*math.Abs(b[i]) {
					t.Fatalf("dim %d op %d [%d]: direct %v, decomposed %v", dim, k, i, a[i], b[i])
				}
			}
		}
		// Rows of softmax sum to one.
		s := direct[0].Sum([]int{dim}, false).Float64s()
		for i, v := range s {
			if math.Abs(v-1) > 1e-5 {
				t.Fatalf("dim %d: softmax sums to %v at %d", dim, v, i)
			}
		}
	}
}

func TestReduceAPI(t *testing.T) {
	x := tensor.FromSlice(cpuDev, []float32{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8}, 3, 4)
	v, i := x.MaxDim(1, false)
	if !slices.Equal(v.Float32s(), []float32{4, 9, 8}) || !slices.Equal(i.Int64s(), []int64{2, 1, 3}) {
		t.Errorf("MaxDim = %v %v", v.Float32s(), i.Int64s())
	}
	v, i = x.MinDim(0, true)
	if !slices.Equal(v.Shape(), []int{1, 4}) || !slices.Equal(i.Int64s(), []int64{0, 0, 1, 0}) {
		t.Errorf("MinDim = %v %v", v.Shape(), i.Int64s())
	}
	tv, ti := tensor.Topk(x, 2, -1, true, true)
	if !slices.Equal(tv.Float32s(), []float32{4, 3, 9, 6, 8, 5}) || !slices.Equal(ti.Int64s(), []int64{2, 0, 1, 3, 3, 0}) {
		t.Errorf("Topk = %v %v", tv.Float32s(), ti.Int64s())
	}
	lo, hi := x.Aminmax()
	if lo.Item() != 1 || hi.Item() != 9 {
		t.Errorf("Aminmax = %v %v", lo.Item(), hi.Item())
	}
	if got := x.Sum(nil, false).Item(); got != 52 {
		t.Errorf("Sum(nil) = %v", got)
	}
	if got := x.SumAs(dtype.F64, []int{0, 1}, true); got.DType() != dtype.F64 || !slices.Equal(got.Shape(), []int{1, 1}) {
		t.Errorf("SumAs = %s%v", got.DType(), got.Shape())
	}
	if got := x.CountNonzero().Int64s(); got[0] != 12 {
		t.Errorf("CountNonzero = %v", got)
	}
	vr, mu := x.VarMean([]int{1}, 0, false)
	if math.Abs(vr.Float64s()[0]-1.6875) > 1e-6 || mu.Float64s()[0] != 2.25 {
		t.Errorf("VarMean row 0 = %v %v", vr.Float64s()[0], mu.Float64s()[0])
	}
	if got := x.Norm(math.Inf(1), nil, false).Item(); got != 9 {
		t.Errorf("Norm(inf) = %v", got)
	}
	ints := tensor.FromSlice(cpuDev, []int32{1, 2, 3})
	if got := ints.Sum(nil, false); got.DType() != dtype.I64 {
		t.Errorf("sum of i32 is %s, want i64", got.DType())
	}
	if got := ints.Cumprod(0).Int64s(); !slices.Equal(got, []int64{1, 2, 6}) {
		t.Errorf("Cumprod = %v", got)
	}
	if got := ints.All(nil, false); got.DType() != dtype.Bool || got.Item() != 1 {
		t.Errorf("All = %s %v", got.DType(), got.Item())
	}
}

func TestReduceErrors(t *testing.T) {
	ints := tensor.FromSlice(cpuDev, []int64{1, 2, 3})
	empty := tensor.FromSlice(cpuDev, []float32{}, 0, 3)
	x := tensor.FromSlice(cpuDev, []float32{1, 2, 3, 4}, 2, 2)
	cases := []struct {
		name string
		f    func()
		want string
	}{
		{"mean of ints", func() { ints.MeanAll() }, "could not infer output dtype"},
		{"amax of empty dim", func() { empty.Amax([]int{0}, false) }, "Expected reduction dim 0 to have non-zero size"},
		{"max of empty", func() { empty.Max() }, "numel() == 0"},
		{"bad dim", func() { x.Sum([]int{2}, false) }, "dimension out of range"},
		{"repeated dim", func() { x.Sum([]int{0, -2}, false) }, "multiple times"},
		{"topk k too big", func() { x.Topk(3, 1, true, true) }, "selected index k out of range"},
		{"var of ints", func() { ints.Var(nil, 1, false) }, "std and var only support floating point"},
		{"softmax of ints", func() { ints.Softmax(0) }, "softmax"},
	}
	for _, c := range cases {
		err := tensor.Catch(c.f)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// BenchmarkReduce measures the plain-Go reduce kernels on 1M-element f32
// tensors (go test ./tensor/ -run XXX -bench Reduce).
func BenchmarkReduce(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	x := tensor.FromSlice(cpuDev, randF32(r, 1<<20), 1024, 1024)
	cases := []struct {
		name string
		f    func() *tensor.Tensor
	}{
		{"sum_all", func() *tensor.Tensor { return x.SumAll() }},
		{"sum_dim1", func() *tensor.Tensor { return x.Sum([]int{1}, false) }},
		{"sum_dim0", func() *tensor.Tensor { return x.Sum([]int{0}, false) }},
		{"amax_dim1", func() *tensor.Tensor { return x.Amax([]int{1}, false) }},
		{"argmax_dim1", func() *tensor.Tensor { return x.Argmax(1, false) }},
		{"softmax_dim1", func() *tensor.Tensor { return x.Softmax(1) }},
		{"cumsum_dim1", func() *tensor.Tensor { return x.Cumsum(1) }},
		{"sort_dim1", func() *tensor.Tensor { v, _ := x.Sort(1, false); return v }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(4 << 20)
			for b.Loop() {
				c.f()
			}
		})
	}
}

// TestReduceOddLayouts covers layouts the golden cases do not: broadcast
// (stride 0) and overlapping as_strided views.
func TestReduceOddLayouts(t *testing.T) {
	base := tensor.FromSlice(cpuDev, []float32{1, 2, 3, 4})
	exp := tensor.Apply1("expand", []*tensor.Tensor{tensor.Apply1("reshape", []*tensor.Tensor{base}, op.Attrs{"shape": []int{1, 4}})}, op.Attrs{"shape": []int{3, 4}})
	// Overlapping rows: [[1 2 3] [2 3 4]].
	ov := tensor.Apply1("as_strided", []*tensor.Tensor{base}, op.Attrs{"shape": []int{2, 3}, "strides": []int{1, 1}})
	cases := []struct {
		name string
		got  *tensor.Tensor
		want []float64
	}{
		{"expand sum dim0", exp.Sum([]int{0}, false), []float64{3, 6, 9, 12}},
		{"expand sum dim1", exp.Sum([]int{1}, false), []float64{10, 10, 10}},
		{"expand amax all", exp.Amax(nil, false), []float64{4}},
		{"expand cumsum dim0", exp.Cumsum(0), []float64{1, 2, 3, 4, 2, 4, 6, 8, 3, 6, 9, 12}},
		{"overlap sum dim0", ov.Sum([]int{0}, false), []float64{3, 5, 7}},
		{"overlap prod dim1", ov.Prod([]int{1}, false), []float64{6, 24}},
		{"overlap argmin dim0", ov.Argmin(0, false), []float64{0, 0, 0}},
		{"overlap sort desc dim0", func() *tensor.Tensor { v, _ := ov.Sort(0, true); return v }(), []float64{2, 3, 4, 1, 2, 3}},
		{"overlap softmax dim0", ov.Softmax(0), []float64{
			1 / (1 + math.E), 1 / (1 + math.E), 1 / (1 + math.E),
			math.E / (1 + math.E), math.E / (1 + math.E), math.E / (1 + math.E)}},
	}
	for _, c := range cases {
		got := c.got.Float64s()
		if len(got) != len(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-6 {
				t.Errorf("%s: %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
}
