package dist

import (
	"context"
	"fmt"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/nn"
	"github.com/gotpu/gotpu/tensor"
)

// Tensor parallelism (Megatron-LM's layers): a layer's weight is split over
// the ranks of a group and each rank multiplies by its part.
//
//   - ColumnParallelLinear splits the output features: each rank computes
//     its slice of y = x·Wᵀ + b from the whole input, and with
//     GatherOutput the slices are all-gathered into the whole y.
//   - RowParallelLinear splits the input features: each rank multiplies its
//     slice of x by its columns of W, the partial products are all-reduced
//     (summed) and the bias is added once.
//   - VocabParallelEmbedding splits the rows (the vocabulary) of an
//     embedding table: each rank looks up the ids it holds, zeros the rest,
//     and the rows are all-reduced.
//
// Splits may be uneven (Split gives the first ranks one more). The
// collectives are the group's host collectives, run eagerly between ops:
// the layers run in Strict or Debug mode, not inside a compiled program.
//
// The layers train: their collectives are tensor.Functions with
// Megatron-LM's conjugate backward (copyToParallel: identity forward,
// all-reduce of the gradient; reduceFromParallel: all-reduce forward,
// identity backward; gatherFromParallel: all-gather forward, this rank's
// slice of the gradient backward; splitToParallel: this rank's slice
// forward, all-gather backward), so every rank's parameters get the
// gradient of its own shard and a replicated input gets the whole
// gradient on every rank. The backward collectives run in the order
// Backward visits the nodes, the same on every rank for the same model.
// A collective that fails in backward panics with a *tensor.Error
// (Backward has no error result); run Backward under tensor.Catch.

// Split cuts n items into parts contiguous shares as even as possible:
// the first n%parts shares get one item more. It returns each share's
// size; a share may be empty when n < parts.
func Split(n, parts int) []int {
	sizes := make([]int, parts)
	for i := range sizes {
		sizes[i] = n / parts
		if i < n%parts {
			sizes[i]++
		}
	}
	return sizes
}

// Offsets returns the start of each share of sizes (prefix sums).
func Offsets(sizes []int) []int {
	off := make([]int, len(sizes))
	for i := 1; i < len(sizes); i++ {
		off[i] = off[i-1] + sizes[i-1]
	}
	return off
}

// checkSizes checks that sizes has one share per rank of g summing to n.
func checkSizes(what string, g *Group, sizes []int, n int) error {
	if len(sizes) != g.Size() {
		return fmt.Errorf("dist: %s: %d shares for a group of %d ranks", what, len(sizes), g.Size())
	}
	sum := 0
	for r, s := range sizes {
		if s < 0 {
			return fmt.Errorf("dist: %s: share %d of rank %d is negative", what, s, r)
		}
		sum += s
	}
	if sum != n {
		return fmt.Errorf("dist: %s: shares %v sum to %d, not %d", what, sizes, sum, n)
	}
	return nil
}

// AllReduceSum returns the sum of x over the ranks of g (every rank gets
// the same bits). x is not changed; the result is a new contiguous tensor
// of x's shape and dtype.
func AllReduceSum(ctx context.Context, g *Group, x *tensor.Tensor) (*tensor.Tensor, error) {
	var y *tensor.Tensor
	tensor.NoGrad(func() { y = x.Clone() })
	if g.Size() == 1 {
		return y, nil
	}
	if err := g.AllReduce(ctx, y, Sum); err != nil {
		return nil, err
	}
	return y, nil
}

// AllGatherLastDim concatenates every rank's x along the last dimension,
// rank after rank. The ranks' x have the same shape except the last
// dimension, which is sizes[r] on rank r (uneven shares are padded for
// the exchange and cut back).
func AllGatherLastDim(ctx context.Context, g *Group, x *tensor.Tensor, sizes []int) (*tensor.Tensor, error) {
	if len(sizes) != g.Size() {
		return nil, fmt.Errorf("dist: all_gather along the last dim: %d shares for a group of %d ranks", len(sizes), g.Size())
	}
	if x.Dim() == 0 || x.Size(-1) != sizes[g.Rank()] {
		return nil, fmt.Errorf("dist: all_gather along the last dim: this rank's %s should end in %d", describe(x), sizes[g.Rank()])
	}
	if g.Size() == 1 {
		return x, nil
	}
	width := 0
	for _, s := range sizes {
		width = max(width, s)
	}
	var out *tensor.Tensor
	var gerr error
	err := tensor.Catch(func() {
		tensor.NoGrad(func() {
			local := x
			if pad := width - x.Size(-1); pad > 0 {
				shape := x.Shape()
				shape[len(shape)-1] = pad
				local = tensor.Cat([]*tensor.Tensor{x, tensor.Zeros(x.Device(), x.DType(), shape...)}, -1)
			}
			local = local.Contiguous()
			shape := append([]int{g.Size()}, local.Shape()...)
			all := tensor.Empty(x.Device(), x.DType(), shape...)
			if gerr = g.AllGatherInto(ctx, all, local); gerr != nil {
				return
			}
			parts := make([]*tensor.Tensor, 0, g.Size())
			for r, s := range sizes {
				if s > 0 {
					parts = append(parts, all.Select(0, r).Narrow(-1, 0, s))
				}
			}
			out = tensor.Cat(parts, -1)
		})
	})
	if err != nil {
		return nil, fmt.Errorf("dist: all_gather along the last dim: %w", err)
	}
	return out, gerr
}

// ColumnParallelLinear is a Linear whose output features are split over
// a group: this rank holds rows [Offset, Offset+Size) of the [out, in]
// weight (and of the bias).
type ColumnParallelLinear struct {
	nn.Base
	Group        *Group
	Weight, Bias *tensor.Tensor // this rank's rows [sizes[rank], in], [sizes[rank]]
	// Sizes are the ranks' shares of the output features.
	Sizes []int
	// GatherOutput all-gathers the ranks' outputs into the whole output;
	// without it Forward returns this rank's slice (for a following
	// RowParallelLinear).
	GatherOutput bool
}

// NewColumnParallelLinear takes this rank's share of the whole weight w
// [out, in] and bias b [out] (nil: none), split by sizes (nil: Split(out,
// g.Size())). Every rank passes the same whole tensors; the shares are
// copied, so w and b may be dropped afterwards.
func NewColumnParallelLinear(g *Group, w, b *tensor.Tensor, sizes []int, gather bool) (*ColumnParallelLinear, error) {
	if w.Dim() != 2 {
		return nil, fmt.Errorf("dist: column-parallel linear: weight %s is not a matrix", describe(w))
	}
	out := w.Size(0)
	if sizes == nil {
		sizes = Split(out, g.Size())
	}
	if err := checkSizes("column-parallel linear", g, sizes, out); err != nil {
		return nil, err
	}
	off, n := Offsets(sizes)[g.Rank()], sizes[g.Rank()]
	m := &ColumnParallelLinear{Group: g, Sizes: sizes, GatherOutput: gather}
	tensor.NoGrad(func() {
		m.Weight = w.Narrow(0, off, n).Contiguous()
		if b != nil {
			m.Bias = b.Narrow(0, off, n).Contiguous()
		}
	})
	m.RegisterParameter("weight", m.Weight)
	if m.Bias != nil {
		m.RegisterParameter("bias", m.Bias)
	}
	return m, nil
}

// Forward returns this rank's slice of x·Wᵀ + b [..., sizes[rank]], or
// with GatherOutput the whole product [..., out].
func (m *ColumnParallelLinear) Forward(ctx context.Context, x *tensor.Tensor) (*tensor.Tensor, error) {
	var y *tensor.Tensor
	if err := tensor.Catch(func() { y = tensor.Linear(copyToParallel(ctx, m.Group, x), m.Weight, m.Bias) }); err != nil {
		return nil, fmt.Errorf("dist: column-parallel linear: %w", err)
	}
	if !m.GatherOutput {
		return y, nil
	}
	return gatherFromParallel(ctx, m.Group, y, m.Sizes)
}

// RowParallelLinear is a Linear whose input features are split over a
// group: this rank holds columns [Offset, Offset+Size) of the [out, in]
// weight; the partial products are summed over the group and the whole
// bias added once.
type RowParallelLinear struct {
	nn.Base
	Group  *Group
	Weight *tensor.Tensor // this rank's columns [out, sizes[rank]]
	Bias   *tensor.Tensor // the whole bias [out] or nil
	// Sizes are the ranks' shares of the input features.
	Sizes []int
	// InputIsParallel says Forward gets this rank's slice of the input
	// (a ColumnParallelLinear's output); otherwise it gets the whole input
	// and takes its slice.
	InputIsParallel bool
}

// NewRowParallelLinear takes this rank's share of the whole weight w
// [out, in], split by sizes over the input features (nil: Split(in,
// g.Size())); b [out] (nil: none) is kept whole.
func NewRowParallelLinear(g *Group, w, b *tensor.Tensor, sizes []int, inputIsParallel bool) (*RowParallelLinear, error) {
	if w.Dim() != 2 {
		return nil, fmt.Errorf("dist: row-parallel linear: weight %s is not a matrix", describe(w))
	}
	in := w.Size(1)
	if sizes == nil {
		sizes = Split(in, g.Size())
	}
	if err := checkSizes("row-parallel linear", g, sizes, in); err != nil {
		return nil, err
	}
	off, n := Offsets(sizes)[g.Rank()], sizes[g.Rank()]
	m := &RowParallelLinear{Group: g, Sizes: sizes, Bias: b, InputIsParallel: inputIsParallel}
	tensor.NoGrad(func() { m.Weight = w.Narrow(1, off, n).Contiguous() })
	m.RegisterParameter("weight", m.Weight)
	if b != nil {
		m.RegisterParameter("bias", b)
	}
	return m, nil
}

// Forward returns x·Wᵀ + b [..., out], the same on every rank.
func (m *RowParallelLinear) Forward(ctx context.Context, x *tensor.Tensor) (*tensor.Tensor, error) {
	var y *tensor.Tensor
	err := tensor.Catch(func() {
		if !m.InputIsParallel {
			x = splitToParallel(ctx, m.Group, x, m.Sizes)
		}
		y = tensor.Linear(x, m.Weight, nil)
	})
	if err != nil {
		return nil, fmt.Errorf("dist: row-parallel linear: %w", err)
	}
	if y, err = reduceFromParallel(ctx, m.Group, y); err != nil {
		return nil, err
	}
	if m.Bias != nil {
		if err := tensor.Catch(func() { y = y.Add(m.Bias) }); err != nil {
			return nil, fmt.Errorf("dist: row-parallel linear: %w", err)
		}
	}
	return y, nil
}

// VocabParallelEmbedding is an embedding table whose rows (token ids) are
// split over a group: this rank holds rows [Start, Start+Weight.Size(0)).
type VocabParallelEmbedding struct {
	nn.Base
	Group  *Group
	Weight *tensor.Tensor // this rank's rows [sizes[rank], dim]
	// Start is the first id this rank holds; Sizes the ranks' shares.
	Start int
	Sizes []int
}

// NewVocabParallelEmbedding takes this rank's rows of the whole table w
// [vocab, dim], split by sizes (nil: Split(vocab, g.Size())).
func NewVocabParallelEmbedding(g *Group, w *tensor.Tensor, sizes []int) (*VocabParallelEmbedding, error) {
	if w.Dim() != 2 {
		return nil, fmt.Errorf("dist: vocab-parallel embedding: table %s is not a matrix", describe(w))
	}
	if sizes == nil {
		sizes = Split(w.Size(0), g.Size())
	}
	if err := checkSizes("vocab-parallel embedding", g, sizes, w.Size(0)); err != nil {
		return nil, err
	}
	m := &VocabParallelEmbedding{Group: g, Sizes: sizes, Start: Offsets(sizes)[g.Rank()]}
	tensor.NoGrad(func() { m.Weight = w.Narrow(0, m.Start, sizes[g.Rank()]).Contiguous() })
	m.RegisterParameter("weight", m.Weight)
	return m, nil
}

// Forward returns the rows of ids [...] (integer ids of the whole
// vocabulary) as [..., dim], the same on every rank.
func (m *VocabParallelEmbedding) Forward(ctx context.Context, ids *tensor.Tensor) (*tensor.Tensor, error) {
	return EmbedVocabParallel(ctx, m.Group, m.Weight, m.Start, ids)
}

// EmbedVocabParallel looks up ids in a table split by rows over g, of
// which this rank holds rows [start, start+w.Size(0)) as w: each rank
// takes the rows it holds, zeros for the others, and the results are
// summed over the group (exactly: one rank contributes each row).
func EmbedVocabParallel(ctx context.Context, g *Group, w *tensor.Tensor, start int, ids *tensor.Tensor) (*tensor.Tensor, error) {
	var e *tensor.Tensor
	err := tensor.Catch(func() {
		n := w.Size(0)
		var local, in *tensor.Tensor
		tensor.NoGrad(func() {
			local = ids.ToDType(dtype.I64).SubScalar(start)
			in = local.GeScalar(0).LogicalAnd(local.LtScalar(n))
			local = tensor.Where(in, local, tensor.ZerosLike(local))
		})
		if n == 0 {
			e = tensor.Zeros(w.Device(), w.DType(), append(ids.Shape(), w.Size(1))...)
			return
		}
		// Recorded (w's gradient gets the rows this rank holds); the ids'
		// arithmetic above is not.
		e = tensor.Embedding(w, local).MaskedFill(in.LogicalNot().Unsqueeze(-1), 0)
	})
	if err != nil {
		return nil, fmt.Errorf("dist: vocab-parallel embedding: %w", err)
	}
	return reduceFromParallel(ctx, g, e)
}

// copyToParallel is x going into a tensor-parallel region: the identity,
// whose backward sums the ranks' gradients (each rank's part of the
// region used x; x's whole gradient is the sum).
func copyToParallel(ctx context.Context, g *Group, x *tensor.Tensor) *tensor.Tensor {
	if g.Size() == 1 {
		return x
	}
	y, err := tpFunction("tp_copy_to_parallel", x, func() (*tensor.Tensor, error) { return x, nil },
		func(gr *tensor.Tensor) (*tensor.Tensor, error) { return AllReduceSum(ctx, g, gr) })
	mustTP("tp_copy_to_parallel", err)
	return y
}

// reduceFromParallel sums the ranks' partial results; its backward is the
// identity (every rank's part contributed to the sum once).
func reduceFromParallel(ctx context.Context, g *Group, y *tensor.Tensor) (*tensor.Tensor, error) {
	if g.Size() == 1 {
		return y, nil
	}
	return tpFunction("tp_reduce_from_parallel", y, func() (*tensor.Tensor, error) { return AllReduceSum(ctx, g, y) },
		func(gr *tensor.Tensor) (*tensor.Tensor, error) { return gr, nil })
}

// gatherFromParallel concatenates the ranks' last-dim slices; its backward
// keeps this rank's slice of the gradient.
func gatherFromParallel(ctx context.Context, g *Group, y *tensor.Tensor, sizes []int) (*tensor.Tensor, error) {
	if g.Size() == 1 {
		return y, nil
	}
	off, n := Offsets(sizes)[g.Rank()], sizes[g.Rank()]
	return tpFunction("tp_gather_from_parallel", y, func() (*tensor.Tensor, error) { return AllGatherLastDim(ctx, g, y, sizes) },
		func(gr *tensor.Tensor) (*tensor.Tensor, error) { return gr.Narrow(-1, off, n).Contiguous(), nil })
}

// splitToParallel is this rank's last-dim slice of a replicated x; its
// backward all-gathers the ranks' slices of the gradient, so that x's
// gradient is whole on every rank.
func splitToParallel(ctx context.Context, g *Group, x *tensor.Tensor, sizes []int) *tensor.Tensor {
	off, n := Offsets(sizes)[g.Rank()], sizes[g.Rank()]
	if g.Size() == 1 {
		return x.Narrow(-1, off, n)
	}
	y, err := tpFunction("tp_split_to_parallel", x, func() (*tensor.Tensor, error) { return x.Narrow(-1, off, n), nil },
		func(gr *tensor.Tensor) (*tensor.Tensor, error) {
			return AllGatherLastDim(ctx, g, gr.Contiguous(), sizes)
		})
	mustTP("tp_split_to_parallel", err)
	return y
}

// tpFunction is tensor.Function for one tensor in and out with a
// collective in forward or backward: forward's error is returned, and
// backward's panics (mustTP: Backward has no error result).
func tpFunction(name string, x *tensor.Tensor, fwd func() (*tensor.Tensor, error), bwd func(g *tensor.Tensor) (*tensor.Tensor, error)) (*tensor.Tensor, error) {
	var ferr error
	var out []*tensor.Tensor
	err := tensor.Catch(func() {
		out = tensor.Function(name, []*tensor.Tensor{x}, func() []*tensor.Tensor {
			y, err := fwd()
			if err != nil {
				ferr = err
				return []*tensor.Tensor{x} // discarded
			}
			return []*tensor.Tensor{y}
		}, func(gr []*tensor.Tensor) []*tensor.Tensor {
			d, err := bwd(gr[0])
			mustTP(name+" backward", err)
			return []*tensor.Tensor{d}
		})
	})
	if ferr != nil {
		return nil, ferr
	}
	if err != nil {
		return nil, fmt.Errorf("dist: %s: %w", name, err)
	}
	return out[0], nil
}

// mustTP panics with a tensor error for a collective that failed inside
// backward (Backward has no error result; its caller's tensor.Catch
// returns it).
func mustTP(what string, err error) {
	if err != nil {
		panic(&tensor.Error{Op: what, Msg: err.Error(), Err: err})
	}
}
