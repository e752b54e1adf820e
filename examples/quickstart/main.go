// Command quickstart is gotpu's first example: tensors on a device, PyTorch's
// ops and printing, views that share storage, the meta device for shapes
// only, and a programming error turned into an error with tensor.Catch.
//
//	go run ./examples/quickstart [-device cpu]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gotpu/gotpu"
	"github.com/gotpu/gotpu/op"
	"github.com/gotpu/gotpu/tensor"
)

func main() {
	devName := flag.String("device", "cpu", "device to run on (cpu, meta, ...)")
	flag.Parse()
	dev, err := gotpu.Device(*devName)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
	tensor.ManualSeed(0)

	x := tensor.FromSlice(dev, []float32{1, 2, 3, 4, 5, 6}, 2, 3)
	w := tensor.FromSlice(dev, []float32{0.5, -1, 0.25, 2, 1, 0}, 3, 2)
	fmt.Println("x =", x)
	fmt.Println("x.T (a view) =", tensor.Apply1("permute", []*tensor.Tensor{x}, op.Attrs{"dims": []int{1, 0}}))

	y := tensor.Apply1("matmul", []*tensor.Tensor{x, w}, nil)
	fmt.Println("x @ w =", y)
	fmt.Println("softmax(x @ w, dim=-1) =", tensor.Apply1("softmax", []*tensor.Tensor{y}, op.Attrs{"dim": -1}))
	fmt.Println("gelu(x) =", tensor.Apply1("gelu", []*tensor.Tensor{x}, nil))
	fmt.Println("sum(x, dim=0) =", tensor.Apply1("sum", []*tensor.Tensor{x}, op.Attrs{"dims": []int{0}}))
	fmt.Println("x * 2.5 (Go scalars promote like Python numbers) =", tensor.Apply1("mul", []*tensor.Tensor{x, tensor.Scalar(2.5)}, nil))

	// A shape error is a panic naming the op and shapes; Catch makes it an error.
	err = tensor.Catch(func() { tensor.Apply1("matmul", []*tensor.Tensor{x, x}, nil) })
	fmt.Println("caught:", err)

	m := tensor.FromBytes(gotpu.MustDevice("meta"), x.DType(), []int{4096, 4096}, nil)
	big := tensor.Apply1("matmul", []*tensor.Tensor{m, m}, nil)
	fmt.Println("on meta, shapes only:", big)
}
