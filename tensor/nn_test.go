package tensor_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

// TestBatchNormRunningStats: training mode updates running_mean and
// running_var in place with momentum and the unbiased batch variance.
func TestBatchNormRunningStats(t *testing.T) {
	x := []float32{1, 2, 3, 4, 0, -1, 7, 5, 2, 2, 9, 1} // [4, 3]
	rm := tensor.Zeros(crCPU, dtype.F32, 3)
	rv := tensor.Ones(crCPU, dtype.F32, 3)
	v0 := rm.Version()
	tensor.BatchNorm(tensor.FromSlice(crCPU, x, 4, 3), tensor.BatchNormOpts{RunningMean: rm, RunningVar: rv, Training: true, Momentum: 0.2})
	if rm.Version() == v0 {
		t.Error("running_mean version counter did not move")
	}
	for c := 0; c < 3; c++ {
		col := []float64{float64(x[c]), float64(x[3+c]), float64(x[6+c]), float64(x[9+c])}
		m, v := crMeanVar(col) // unbiased
		if got := rm.Float64s()[c]; math.Abs(got-0.2*m) > 1e-5 {
			t.Errorf("running_mean[%d] = %v, want %v", c, got, 0.2*m)
		}
		if got := rv.Float64s()[c]; math.Abs(got-(0.8+0.2*v)) > 1e-5 {
			t.Errorf("running_var[%d] = %v, want %v", c, got, 0.8+0.2*v)
		}
	}
	// Eval mode leaves them alone.
	before := rm.Float64s()
	tensor.BatchNorm(tensor.FromSlice(crCPU, x, 4, 3), tensor.BatchNormOpts{RunningMean: rm, RunningVar: rv})
	if !slices.Equal(before, rm.Float64s()) {
		t.Error("eval-mode batch_norm changed running_mean")
	}
}

func TestDropout(t *testing.T) {
	const n = 100000
	x := tensor.Full(crCPU, dtype.F32, 2.0, n)
	g := tensor.NewGenerator(5)
	y := tensor.DropoutGen(g, x, 0.25, true).Float64s()
	zeros := 0
	for i, v := range y {
		switch v {
		case 0:
			zeros++
		case float64(float32(2 * float32(1/float32(0.75)))):
		default:
			t.Fatalf("y[%d] = %v, want 0 or 2/(1-p)", i, v)
		}
	}
	if f := float64(zeros) / n; math.Abs(f-0.25) > 6*math.Sqrt(0.25*0.75/n) {
		t.Errorf("dropped fraction %v, want 0.25", f)
	}
	if got := tensor.Dropout(x, 0.5, false).Float64s(); !slices.Equal(got, x.Float64s()) {
		t.Error("dropout with train=false is not the identity")
	}
	// Same seed: same mask on cpu and testdev, direct kernel and decomposition.
	small := tensor.Randn(crCPU, dtype.F32, 7, 9)
	ref := tensor.DropoutGen(tensor.NewGenerator(9), small, 0.4, true).Bytes()
	if got := tensor.DropoutGen(tensor.NewGenerator(9), small.To(crTD), 0.4, true).Bytes(); !slices.Equal(ref, got) {
		t.Error("dropout differs between cpu and testdev")
	}
	prev := tensor.SetForceDecompose(true)
	got := tensor.DropoutGen(tensor.NewGenerator(9), small, 0.4, true).Bytes()
	tensor.SetForceDecompose(prev)
	if !slices.Equal(ref, got) {
		t.Error("dropout kernel differs from its decomposition")
	}
}

// TestEmbeddingOutOfRange: a bad index is an error naming it and the bound
// (never a Go panic), on cpu and testdev, Strict and Debug.
func TestEmbeddingOutOfRange(t *testing.T) {
	for _, mode := range []tensor.Mode{tensor.Strict, tensor.Debug} {
		prev := tensor.SetMode(mode)
		for _, dev := range []string{"cpu", "testdev"} {
			d := tensor.MustDevice(dev)
			w := tensor.Randn(d, dtype.F32, 5, 3)
			err := tensor.Catch(func() {
				tensor.Embedding(w, tensor.FromSlice(d, []int64{0, 7, 1})).Bytes()
			})
			if err == nil || !strings.Contains(err.Error(), "index 7 is out of bounds for dimension 0 with size 5") {
				t.Errorf("%v/%s: got %v", mode, dev, err)
			}
		}
		tensor.SetMode(prev)
	}
}

func TestOneHotInfersClasses(t *testing.T) {
	got := tensor.OneHot(tensor.FromSlice(crCPU, []int64{2, 0}), -1)
	if !slices.Equal(got.Shape(), []int{2, 3}) || !slices.Equal(got.Float64s(), []float64{0, 0, 1, 1, 0, 0}) {
		t.Fatalf("OneHot = %v %v", got.Shape(), got.Float64s())
	}
}

// TestLayerNormKernelVsDecomposition on a row longer than the golden cases.
func TestLayerNormKernelVsDecomposition(t *testing.T) {
	g := tensor.NewGenerator(1)
	for _, dt := range []dtype.DType{dtype.F32, dtype.F64, dtype.BF16} {
		x := tensor.NormalGen(g, crCPU, 3, 2, dt, 16, 300)
		w := tensor.RandnGen(g, crCPU, dt, 300)
		b := tensor.RandnGen(g, crCPU, dt, 300)
		direct := tensor.LayerNorm(x, []int{300}, w, b, 1e-5).Float64s()
		prev := tensor.SetForceDecompose(true)
		dec := tensor.LayerNorm(x, []int{300}, w, b, 1e-5).Float64s()
		tensor.SetForceDecompose(prev)
		tol := map[dtype.DType]float64{dtype.F32: 1e-5, dtype.F64: 1e-12, dtype.BF16: 3e-2}[dt]
		for i := range direct {
			if math.Abs(direct[i]-dec[i]) > tol*(1+math.Abs(dec[i])) {
				t.Fatalf("%s: [%d] kernel %v, decomposition %v", dt, i, direct[i], dec[i])
			}
		}
	}
}

func TestSDPADropout(t *testing.T) {
	g := tensor.NewGenerator(3)
	q := tensor.RandnGen(g, crCPU, dtype.F32, 2, 4, 5)
	k := tensor.RandnGen(g, crCPU, dtype.F32, 2, 6, 5)
	v := tensor.RandnGen(g, crCPU, dtype.F32, 2, 6, 3)
	plain := tensor.ScaledDotProductAttention(q, k, v, tensor.SDPAOpts{}).Bytes()
	zero := tensor.ScaledDotProductAttention(q, k, v, tensor.SDPAOpts{Generator: tensor.NewGenerator(1)}).Bytes()
	if !slices.Equal(plain, zero) {
		t.Error("dropout_p = 0 changes the result")
	}
	a := tensor.ScaledDotProductAttention(q, k, v, tensor.SDPAOpts{DropoutP: 0.5, Generator: tensor.NewGenerator(8)}).Bytes()
	b := tensor.ScaledDotProductAttention(q.To(crTD), k.To(crTD), v.To(crTD), tensor.SDPAOpts{DropoutP: 0.5, Generator: tensor.NewGenerator(8)}).Bytes()
	if !slices.Equal(a, b) {
		t.Error("attention dropout differs between cpu and testdev for the same seed")
	}
	if slices.Equal(a, plain) {
		t.Error("attention dropout 0.5 changed nothing")
	}
}
