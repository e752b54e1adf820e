//go:build pjrt

package pjrt_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/gotpu/gotpu/backend/pjrt"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

func readAll(t *testing.T, be *pjrt.Backend, b device.Buffer) []byte {
	t.Helper()
	out := make([]byte, b.Size())
	if err := be.Read(0, b, 0, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestXLACompileProgram(t *testing.T) {
	be := xla(t)
	f32 := dtype.F32
	params := []op.Meta{{Shape: []int{2, 5}, DType: f32}, {Shape: []int{5}, DType: f32}, {Shape: []int{5}, DType: f32}}
	g, err := ir.Trace(params, func(b op.Builder, p []op.Value) []op.Value {
		y := op.Call1(b, "layer_norm", op.Attrs{"normalized_shape": []int{5}, "eps": 1e-5}, p[0], p[1], p[2])
		return []op.Value{y, p[0], y}
	})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := be.CompileProgram(context.Background(), 0, g, device.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := prog.Stats(); st.Nodes == 0 || st.Kernels != 1 {
		t.Errorf("stats %+v", st)
	}
	in := inputs(params)
	// x is passed as a transposed view of a [5,2] buffer.
	xt := make([]byte, len(in[0]))
	for i := 0; i < 2; i++ {
		for j := 0; j < 5; j++ {
			copy(xt[(j*2+i)*4:(j*2+i)*4+4], in[0][(i*5+j)*4:(i*5+j)*4+4])
		}
	}
	x := operand(t, be, f32, []int{5, 2}, xt)
	x.Layout = op.Layout{Shape: []int{2, 5}, Strides: []int{1, 2}}
	ops := []device.Operand{x, operand(t, be, f32, []int{5}, in[1]), operand(t, be, f32, []int{5}, in[2])}
	outs, err := prog.Run(context.Background(), 0, ops, device.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 3 {
		t.Fatalf("%d outputs", len(outs))
	}
	want := goldenReference(t, "layer_norm", params, in)[0]
	y := readAll(t, be, outs[0])
	for k := 0; k < 10; k++ {
		if g, w := dtype.Float64At(f32, y, k), dtype.Float64At(f32, want, k); g-w > 1e-5 || w-g > 1e-5 {
			t.Fatalf("y[%d] = %v, cpu %v", k, g, w)
		}
	}
	if !bytes.Equal(readAll(t, be, outs[1]), in[0]) {
		t.Errorf("parameter output is not x")
	}
	if !bytes.Equal(readAll(t, be, outs[2]), y) {
		t.Errorf("repeated output differs")
	}
	// Outputs are independent buffers: freeing one leaves the other.
	be.Free(0, outs[0])
	if !bytes.Equal(readAll(t, be, outs[2]), y) {
		t.Errorf("repeated output changed after freeing its twin")
	}
	if _, err := prog.Run(context.Background(), 0, ops[:2], device.RunOptions{}); err == nil {
		t.Errorf("run with too few operands succeeded")
	}

	data, err := prog.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := be.LoadProgram(0, data)
	if err != nil {
		t.Fatal(err)
	}
	louts, err := loaded.Run(context.Background(), 0, ops, device.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readAll(t, be, louts[0]), y) {
		t.Errorf("loaded program gives different results")
	}
	bad := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"garbage", []byte("not a program at all")},
		{"truncated", data[:40]},
		{"other format", bytes.Replace(data, []byte(be.ProgramFormat()), []byte("pjrt/0:xla:cpu:old"), 1)},
		{"corrupt executable", append(append([]byte(nil), data[:len(data)-len(data)/2]...), bytes.Repeat([]byte{0x5a}, len(data)/2)...)},
	}
	for _, tc := range bad {
		if _, err := be.LoadProgram(0, tc.data); !errors.Is(err, device.ErrProgramFormat) {
			t.Errorf("%s: LoadProgram error %v, want ErrProgramFormat", tc.name, err)
		}
	}
}

func TestXLAProgramDynamicSeeds(t *testing.T) {
	be := xla(t)
	g, err := ir.Trace(nil, func(b op.Builder, p []op.Value) []op.Value {
		return []op.Value{op.Call1(b, "rand", op.Attrs{"shape": []int{6}, "seed": int64(1), "offset": int64(0)})}
	})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := be.CompileProgram(context.Background(), 0, g, device.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(dyn []op.Attrs) []byte {
		outs, err := prog.Run(context.Background(), 0, nil, device.RunOptions{Dynamic: dyn})
		if err != nil {
			t.Fatal(err)
		}
		return readAll(t, be, outs[0])
	}
	s1 := run(nil)
	s2 := run([]op.Attrs{{"seed": int64(2), "offset": int64(0)}})
	if bytes.Equal(s1, s2) {
		t.Errorf("seed 2 draws the same numbers as seed 1")
	}
	if !bytes.Equal(run([]op.Attrs{{"seed": int64(1), "offset": int64(0)}}), s1) {
		t.Errorf("seed 1 through Dynamic differs from the compiled seed")
	}
	// Every device draws the same numbers from the same seed.
	var cpu []byte
	if err := tensor.Catch(func() {
		cpu = tensor.ApplyOn(tensor.MustDevice("cpu"), "rand", nil, op.Attrs{"shape": []int{6}, "seed": int64(2), "offset": int64(0)})[0].Bytes()
	}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cpu, s2) {
		t.Errorf("xla rand(seed 2) %v, cpu %v", s2, cpu)
	}
	if _, err := prog.Run(context.Background(), 0, nil, device.RunOptions{Dynamic: []op.Attrs{{}, {}}}); err == nil {
		t.Errorf("Dynamic with the wrong number of entries succeeded")
	}
}

func TestXLAProgramPrecision(t *testing.T) {
	be := xla(t)
	params := []op.Meta{{Shape: []int{4, 33}, DType: dtype.F32}, {Shape: []int{33, 5}, DType: dtype.F32}}
	g, err := ir.Trace(params, func(b op.Builder, p []op.Value) []op.Value {
		return []op.Value{op.Call1(b, "matmul", nil, p[0], p[1])}
	})
	if err != nil {
		t.Fatal(err)
	}
	in := inputs(params)
	for _, prec := range []string{"highest", "high", "medium"} {
		t.Run(prec, func(t *testing.T) {
			prog, err := be.CompileProgram(context.Background(), 0, g, device.CompileOptions{Precision: prec})
			if err != nil {
				t.Fatal(err)
			}
			ops := []device.Operand{operand(t, be, dtype.F32, params[0].Shape, in[0]), operand(t, be, dtype.F32, params[1].Shape, in[1])}
			outs, err := prog.Run(context.Background(), 0, ops, device.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := f32s(readAll(t, be, outs[0]))
			var want []float32
			if err := tensor.Catch(func() {
				cpu := tensor.MustDevice("cpu")
				x := tensor.FromBytes(cpu, dtype.F32, params[0].Shape, in[0])
				y := tensor.FromBytes(cpu, dtype.F32, params[1].Shape, in[1])
				want = f32s(tensor.Apply1("matmul", []*tensor.Tensor{x, y}, op.Attrs{"precision": prec}).Bytes())
			}); err != nil {
				t.Fatal(err)
			}
			for k := range want {
				if d := float64(got[k] - want[k]); d > 2e-6 || d < -2e-6 {
					t.Fatalf("[%d]: xla %v, cpu %s %v", k, got[k], prec, want[k])
				}
			}
		})
	}
}
