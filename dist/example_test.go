package dist_test

import (
	"context"
	"fmt"

	_ "github.com/gotpu/gotpu/backend/cpu"
	"github.com/gotpu/gotpu/dist"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

// A program started by `gotpu run --nproc-per-node N` (or torchrun) joins
// the job with Init and all-reduces a tensor in place. Here the
// environment is given explicitly: a world of one process.
func ExampleInit() {
	ctx := context.Background()
	env := dist.Env{WorldSize: 1, LocalWorldSize: 1, MasterAddr: "127.0.0.1", MasterPort: dist.DefaultMasterPort}
	g, err := dist.Init(ctx, dist.Options{Env: &env})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()
	x := tensor.Full(tensor.MustDevice("cpu"), dtype.F32, float64(g.Rank()+1), 3)
	w := g.AllReduceAsync(ctx, x, dist.Sum) // returns at once
	if err := w.Wait(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(g.Size(), x.Float64s())
	// Output: 1 [1 1 1]
}
