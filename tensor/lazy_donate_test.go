package tensor_test

import (
	"slices"
	"testing"

	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/tensor"
)

// TestDonatedBuffers: in the Fused mode and in traced programs, a tensor
// updated in place in full keeps its own buffer (lent to the program:
// device.RunOptions.Donate), with the values of the run that copies it;
// a partially updated one, and one whose old value is still needed, get
// the same values.
func TestDonatedBuffers(t *testing.T) {
	dev := tensor.MustDevice("cpu")
	type prog func(w, x *tensor.Tensor) []*tensor.Tensor
	cases := []struct {
		name     string
		f        prog
		keepsBuf bool // w's buffer survives (donated)
	}{
		{"whole update", func(w, x *tensor.Tensor) []*tensor.Tensor {
			w.SubInPlace(x.Mul(tensor.Scalar(0.5)))
			return []*tensor.Tensor{w.Sum(nil, false)}
		}, true},
		{"old value kept", func(w, x *tensor.Tensor) []*tensor.Tensor {
			old := w.Mul(tensor.Scalar(2))
			w.AddInPlace(x)
			return []*tensor.Tensor{old, w.Sum(nil, false)}
		}, true},
		{"partial update", func(w, x *tensor.Tensor) []*tensor.Tensor {
			w.Narrow(0, 1, 2).AddInPlace(x.Narrow(0, 0, 2))
			return []*tensor.Tensor{w.Sum(nil, false)}
		}, false},
		{"two updates", func(w, x *tensor.Tensor) []*tensor.Tensor {
			w.AddInPlace(x)
			w.MulInPlace(x)
			return []*tensor.Tensor{w.Sum(nil, false)}
		}, true},
	}
	run := func(mode string, donate bool, f prog) (vals [][]float32, kept bool) {
		prev := tensor.SetDonateBuffers(donate)
		defer tensor.SetDonateBuffers(prev)
		w, x := randT(dev, 1, 4, 5), randT(dev, 2, 4, 5)
		before := tensor.BufferOf(w)
		var outs []*tensor.Tensor
		switch mode {
		case "fused":
			pm := tensor.SetMode(tensor.Fused)
			outs = f(w, x)
			if err := tensor.Sync(dev); err != nil {
				t.Fatal(err)
			}
			tensor.SetMode(pm)
		case "traced":
			tr, syms := tensor.BeginTrace(dev, []*tensor.Tensor{x})
			tg := tr.End(f(w, syms[0]))
			p, err := tensor.CompileGraph(t.Context(), dev, backendFor(t, dev), tg.Graph, device.CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			outs = tg.Run(p, tensor.ProgramInfo{})
		default:
			outs = f(w, x)
		}
		for _, o := range append(outs, w) {
			vals = append(vals, o.Float32s())
		}
		return vals, tensor.BufferOf(w) == before
	}
	for _, tc := range cases {
		want, _ := run("strict", false, tc.f)
		for _, mode := range []string{"fused", "traced"} {
			for _, donate := range []bool{false, true} {
				got, kept := run(mode, donate, tc.f)
				for i := range want {
					if !slices.Equal(got[i], want[i]) {
						t.Errorf("%s %s donate=%v: output %d = %v, want %v", tc.name, mode, donate, i, got[i], want[i])
					}
				}
				if wantKept := donate && tc.keepsBuf; kept != wantKept {
					t.Errorf("%s %s donate=%v: w kept its buffer: %v, want %v", tc.name, mode, donate, kept, wantKept)
				}
			}
		}
	}
}
