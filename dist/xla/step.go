//go:build pjrt

package xla

import (
	"bytes"
	"fmt"

	"github.com/gotpu/gotpu/backend/pjrt"
	"github.com/gotpu/gotpu/compile"
	"github.com/gotpu/gotpu/device"
	"github.com/gotpu/gotpu/tensor"
)

// Options configure Compile.
type Options struct {
	// Mesh is the device grid the step is partitioned over.
	Mesh pjrt.Mesh
	// In and Out are the shardings of the step's inputs and results, in
	// order; missing or nil entries are replicated. A training step
	// returning updated weights gives each the sharding of its input so
	// that the weights stay where they are split.
	In, Out []pjrt.Sharding
	// Form picks the annotation and partitioner: pjrt.GSPMD (mhlo.sharding)
	// or pjrt.Shardy (sdy.sharding).
	Form pjrt.ShardingForm
}

// Step is a traced function compiled as one SPMD program.
type Step struct {
	x    *pjrt.ShardedExecutable
	mlir string
	dev  device.Device
}

// Compile traces fn on example inputs (their shapes and dtypes fix the
// program's; their values are not used), exports it as StableHLO and
// compiles it partitioned over o.Mesh on client c.
func Compile(c *pjrt.Client, fn *compile.Function, o Options, example ...*tensor.Tensor) (*Step, error) {
	if len(example) == 0 {
		return nil, fmt.Errorf("xla: compile: no example inputs")
	}
	var buf bytes.Buffer
	if err := compile.ExportStableHLO(&buf, fn, example...); err != nil {
		return nil, fmt.Errorf("xla: compile: %w", err)
	}
	x, err := c.CompileSharded(buf.String(), o.Mesh, o.In, o.Out, o.Form)
	if err != nil {
		return nil, fmt.Errorf("xla: compile: %w", err)
	}
	return &Step{x: x, mlir: buf.String(), dev: example[0].Device()}, nil
}

// Program returns the step's StableHLO module before annotation.
func (s *Step) Program() string { return s.mlir }

// Sharded returns the compiled program, for runs that keep arrays on the
// devices between steps (pjrt.ShardedExecutable.Put and RunResident).
func (s *Step) Sharded() *pjrt.ShardedExecutable { return s.x }

// Close releases the compiled program.
func (s *Step) Close() error { return s.x.Close() }

// Run runs the step on global input tensors: each is split into its
// devices' shards, the partitions run together, and the results come back
// as global tensors on the device of the example inputs. The values
// travel through the host at every call (Sharded().RunResident keeps
// them on the devices).
func (s *Step) Run(in ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	args := make([]pjrt.Array, len(in))
	if err := tensor.Catch(func() {
		for i, t := range in {
			args[i] = pjrt.Array{DType: t.DType(), Shape: t.Shape(), Data: t.Bytes()}
		}
	}); err != nil {
		return nil, fmt.Errorf("xla: run: reading the inputs: %w", err)
	}
	res, err := s.x.Run(args...)
	if err != nil {
		return nil, fmt.Errorf("xla: run: %w", err)
	}
	out := make([]*tensor.Tensor, len(res))
	if err := tensor.Catch(func() {
		for i, a := range res {
			out[i] = tensor.FromBytes(s.dev, a.DType, a.Shape, a.Data)
		}
	}); err != nil {
		return nil, fmt.Errorf("xla: run: writing the results: %w", err)
	}
	return out, nil
}
