package compile_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/gotpu/gotpu/compile"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

// attnPool is a function of a [2, T, 8] sequence with a variable length T:
// self-attention (softmax over keys, weights times values), layer_norm
// over features, a mean over the sequence, a max over the sequence, and
// the gradient of the loss with respect to a weight.
func attnPool(wq, wk *tensor.Tensor) func(in ...*tensor.Tensor) []*tensor.Tensor {
	return func(in ...*tensor.Tensor) []*tensor.Tensor {
		x := in[0]
		q, k := x.Matmul(wq), x.Matmul(wk)
		att := tensor.Softmax(q.Matmul(k.Transpose(1, 2)).Mul(tensor.Scalar(0.35)), -1)
		h := tensor.LayerNorm(att.Matmul(x), []int{8}, nil, nil, 1e-5).Add(x)
		pooled := h.Mean([]int{1}, false)
		peak := h.Amax([]int{1}, false)
		loss := pooled.Mul(pooled).Sum(nil, false).Add(peak.Sum(nil, false))
		g := tensor.Grad([]*tensor.Tensor{loss}, []*tensor.Tensor{tensor.Scalar(1.0).To(x.Device())}, []*tensor.Tensor{wq}, false)
		return []*tensor.Tensor{h, pooled, loss, g[0]}
	}
}

// TestBoundedDimsCompileOnce: 20 different sequence lengths under one
// declared bound compile one program, and every result matches Strict.
func TestBoundedDimsCompileOnce(t *testing.T) {
	g := tensor.NewGenerator(9)
	wq := tensor.RandnGen(g, cpu, dtype.F32, 8, 8)
	wk := tensor.RandnGen(g, cpu, dtype.F32, 8, 8)
	wq.SetRequiresGrad(true)
	f := attnPool(wq, wk)
	fn := compile.Fn(f, compile.Bound(0, 1, 24), compile.Name("attn-pool"))
	for T := 1; T <= 20; T++ {
		x := tensor.RandnGen(g, cpu, dtype.F32, 2, T, 8)
		want := f(x)
		got, err := fn.Call(x)
		if err != nil {
			t.Fatalf("T=%d: %v", T, err)
		}
		for i := range want {
			if gs, ws := got[i].Shape(), want[i].Shape(); !slices.Equal(gs, ws) {
				t.Fatalf("T=%d output %d: shape %v, want %v", T, i, gs, ws)
			}
			gv, wv := got[i].Float64s(), want[i].Float64s()
			for k := range wv {
				if math.Abs(gv[k]-wv[k]) > 1e-4*(1+math.Abs(wv[k])) {
					t.Fatalf("T=%d output %d[%d]: %v, want %v", T, i, k, gv[k], wv[k])
				}
			}
		}
	}
	if st := fn.Stats(); st.Programs != 1 || st.Calls != 20 {
		t.Fatalf("stats %+v: want 1 program for 20 lengths", st)
	}
}

// TestBoundedDimUnsupportedOp: an op that would read the padding is an
// error, not a wrong result.
func TestBoundedDimUnsupportedOp(t *testing.T) {
	fn := compile.Fn(func(in ...*tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{in[0].Reshape(-1)} // merges the padded dim
	}, compile.Bound(0, 1, 8))
	_, err := fn.Call(tensor.Ones(cpu, dtype.F32, 2, 5))
	if !errors.Is(err, tensor.ErrBoundedDim) {
		t.Fatalf("got %v, want ErrBoundedDim", err)
	}
	if _, err := fn.Call(tensor.Ones(cpu, dtype.F32, 2, 9)); err == nil {
		t.Fatal("a length above the bound must be an error")
	}
}
