package compile_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/compile"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

// TestExportFoldsTraceConstants: Go scalars a traced function uses (here
// a learning rate, and the ones its ops make inside, such as Mean's
// divisor and Square's 2) become constants of the exported module, not
// parameters its caller could not fill: @main takes the inputs alone.
func TestExportFoldsTraceConstants(t *testing.T) {
	g := tensor.NewGenerator(3)
	x := tensor.RandnGen(g, cpu, dtype.F32, 4, 3)
	w := tensor.RandnGen(g, cpu, dtype.F32, 3, 2)
	w.SetRequiresGrad(true)
	fn := compile.Fn(func(in ...*tensor.Tensor) []*tensor.Tensor {
		loss := in[0].Matmul(in[1]).Square().Mean(nil, false)
		gw := tensor.Grad([]*tensor.Tensor{loss}, []*tensor.Tensor{tensor.OnesLike(loss)}, in[1:], false)[0]
		return []*tensor.Tensor{loss, in[1].Sub(gw.MulScalar(0.25))}
	}, compile.Name("folded"))
	var buf bytes.Buffer
	if err := compile.ExportStableHLO(&buf, fn, x, w); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	if !strings.Contains(text, "func.func @main(%arg0: tensor<4x3xf32>, %arg1: tensor<3x2xf32>) ->") {
		t.Fatalf("@main does not take exactly the two inputs:\n%s", text)
	}
	if !strings.Contains(text, "dense<2.500000e-01>") && !strings.Contains(text, "dense<2.5e-01>") {
		t.Errorf("the learning rate 0.25 is not a constant of the module:\n%s", text)
	}
}
