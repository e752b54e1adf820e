package device

import (
	"context"

	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

// CompileOptions are the options a whole-program compile depends on. They
// are part of the compile-cache key.
type CompileOptions struct {
	// Precision is the default matmul/convolution precision for nodes whose
	// own "precision" attribute is empty ("highest", "high" or "medium";
	// empty means the device default).
	Precision string
	// Threads bounds the parallelism of the program (0: the backend's
	// default, usually GOMAXPROCS).
	Threads int
}

// RunOptions are per-call inputs of a Program that are not tensors.
type RunOptions struct {
	// Dynamic holds this run's values of dynamic attributes
	// (op.Def.DynamicAttrs: a random op's seed and offset, an optimizer
	// step's lr and step count): one entry per node of the compiled graph
	// that has dynamic attributes, in node order, each with exactly those
	// attributes. A composite node's values apply to the nodes its
	// decomposition produces (lower with these attributes substituted).
	// Nil keeps the values recorded in the graph. One compiled program so
	// draws fresh random numbers and takes a new learning rate every step.
	Dynamic []op.Attrs
	// Donate lends parameter buffers to the program's outputs (buffer
	// donation, as XLA's): Donate[i] = k, k >= 0, says the caller will not
	// read parameter i's buffer after Run and will keep whatever output k
	// is, so the program may compute output k in that buffer and return
	// in[i].Buf itself as output k (the caller must then not free it as an
	// old buffer). It is how an in-place update (an optimizer step writing
	// its weights) avoids copying each parameter into a fresh output first.
	// -1, or an index past the slice, lends nothing. A program may ignore
	// it. If Run fails, the contents of lent buffers are unspecified.
	Donate []int
}

// Donated reports the output parameter i is lent to (o.Donate[i]), or -1.
func (o RunOptions) Donated(i int) int {
	if i < len(o.Donate) {
		return o.Donate[i]
	}
	return -1
}

// ProgramStats describes a compiled program.
type ProgramStats struct {
	// Nodes is the number of IR nodes compiled (after lowering).
	Nodes int `json:"nodes"`
	// Kernels is the number of kernels a Run launches (fused groups count
	// once).
	Kernels int `json:"kernels"`
	// Fused is the number of IR nodes folded into fused kernels or GEMM
	// epilogues.
	Fused int `json:"fused"`
	// PeakBytes is the planned peak of intermediate memory, in bytes
	// (outputs included, parameters excluded).
	PeakBytes int64 `json:"peak_bytes"`
}

// Program is a compiled IR graph, ready to run on one device.
type Program interface {
	// Run executes the program on device index. in holds one operand per
	// graph parameter, in order, with the parameter's dtype and shape;
	// layouts may be strided and have offsets. It returns one freshly
	// allocated, contiguous buffer per graph output (owned by the caller,
	// released with the backend's Free); an output that is a parameter, or a
	// value output twice, is returned as a copy, so no returned buffer
	// aliases an input or another output. Inputs are never written.
	Run(ctx context.Context, index int, in []Operand, opts RunOptions) ([]Buffer, error)
	// Marshal serializes the program (everything compile decided, including
	// any autotuning choices) for LoadProgram, in this or another process.
	Marshal() ([]byte, error)
	// Stats describes the program.
	Stats() ProgramStats
}

// Compiler is implemented by backends that compile whole IR graphs into
// programs (the Fused eager mode and compile.Fn use it). Backends without
// it run graphs node by node through Launch (package device/interp).
type Compiler interface {
	// CompileProgram compiles g (verified, static shapes) for device index.
	CompileProgram(ctx context.Context, index int, g *ir.Graph, opts CompileOptions) (Program, error)
	// LoadProgram deserializes what Program.Marshal wrote. Data from another
	// format or version is an error wrapping ErrProgramFormat.
	LoadProgram(index int, data []byte) (Program, error)
	// ProgramFormat names the serialized format and its version (for
	// example "cpu-plan/1"); it is part of the compile-cache key.
	ProgramFormat() string
}
