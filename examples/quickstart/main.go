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
	fmt.Println("x.T (a view) =", x.T())

	y := x.Matmul(w)
	fmt.Println("x @ w =", y)
	fmt.Println("softmax(x @ w, dim=-1) =", y.Softmax(-1))
	fmt.Println("gelu(x) =", x.Gelu())
	fmt.Println("sum(x, dim=0) =", x.Sum([]int{0}, false))
	fmt.Println("x * 2.5 (Go scalars promote like Python numbers) =", x.MulScalar(2.5))
	fmt.Println("every op by its op-table name:", tensor.Apply1("logsumexp", []*tensor.Tensor{x}, op.Attrs{"dims": []int{1}}))

	// Autograd: gradients of a scalar loss with respect to leaves.
	wg := w.Detach().SetRequiresGrad(true)
	loss := x.Matmul(wg).Gelu().Sum(nil, false)
	loss.Backward()
	fmt.Println("d loss / d w =", wg.Grad())

	// A shape error is a panic naming the op and shapes; Catch makes it an error.
	err = tensor.Catch(func() { x.Matmul(x) })
	fmt.Println("caught:", err)

	m := tensor.Zeros(gotpu.MustDevice("meta"), x.DType(), 4096, 4096)
	big := m.Matmul(m)
	fmt.Println("on meta, shapes only:", big)
}
