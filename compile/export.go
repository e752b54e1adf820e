package compile

import (
	"fmt"
	"io"

	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/stablehlo"
	"github.com/gotpu/gotpu/tensor"
)

// ExportStableHLO traces fn on in and writes the program as a StableHLO
// module in MLIR text (the program a PJRT backend compiles): composites are
// lowered to primitives, unused nodes dropped, run-time attributes (seeds,
// learning rates) written with the values of this trace, and the text is
// checked by stablehlo.Verify before it is written. Forward and Backward
// may both be in fn (an optimizer's in-place step has no StableHLO form
// yet and is an error naming the op).
//
// Nothing runs: tensors the trace creates (gradients set on parameters
// included) are unusable afterwards, so export from a model that is not
// being trained, or call ZeroGrad after.
func ExportStableHLO(w io.Writer, fn *Function, in ...*tensor.Tensor) error {
	g, err := fn.tracedGraph(in)
	if err != nil {
		return err
	}
	low, err := ir.Lower(g)
	if err != nil {
		return fmt.Errorf("compile: export %s: %w", fn.opts.name, err)
	}
	low = ir.CSE(ir.DCE(low))
	text, err := stablehlo.Export(low, fn.opts.name)
	if err != nil {
		return fmt.Errorf("compile: export %s: %w", fn.opts.name, err)
	}
	if err := stablehlo.Verify(text); err != nil {
		return fmt.Errorf("compile: export %s: the emitted module does not verify: %w", fn.opts.name, err)
	}
	if _, err := io.WriteString(w, text); err != nil {
		return fmt.Errorf("compile: export %s: %w", fn.opts.name, err)
	}
	return nil
}
