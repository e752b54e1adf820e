package dist

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		n, parts int
		want     []int
	}{
		{8, 2, []int{4, 4}},
		{9, 2, []int{5, 4}},
		{7, 3, []int{3, 2, 2}},
		{2, 3, []int{1, 1, 0}},
		{0, 2, []int{0, 0}},
	}
	for _, tc := range tests {
		got := Split(tc.n, tc.parts)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("Split(%d, %d) = %v, want %v", tc.n, tc.parts, got, tc.want)
		}
		off := Offsets(got)
		for i := 1; i < len(got); i++ {
			if off[i] != off[i-1]+got[i-1] {
				t.Errorf("Offsets(%v) = %v", got, off)
			}
		}
	}
}

// randMat is a deterministic random f32 matrix, the same on every rank.
func randMat(seed uint64, rows, cols int) *tensor.Tensor {
	r := rand.New(rand.NewPCG(seed, 7))
	v := make([]float32, rows*cols)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return tensor.FromSlice(cpu, v, rows, cols)
}

func closeTo(what string, got, want *tensor.Tensor) error {
	if fmt.Sprint(got.Shape()) != fmt.Sprint(want.Shape()) {
		return fmt.Errorf("%s: shape %v, want %v", what, got.Shape(), want.Shape())
	}
	return same(what, got.Float64s(), want.Float64s(), 1e-5)
}

// roleTP checks the tensor-parallel layers against the unsharded ones,
// with even and uneven shares (and an empty one where a size is smaller
// than the group).
func roleTP(ctx context.Context, g *Group) error {
	type dims struct{ out, in, vocab int }
	for _, d := range []dims{{8, 6, 12}, {7, 10, 11}, {5, 3, 2}} {
		w := randMat(1, d.out, d.in)
		b := randMat(2, 1, d.out).Reshape(d.out)
		x := randMat(3, 4, d.in).Reshape(2, 2, d.in)
		want := tensor.Linear(x, w, b)

		col, err := NewColumnParallelLinear(g, w, b, nil, true)
		if err != nil {
			return err
		}
		got, err := col.Forward(ctx, x)
		if err != nil {
			return err
		}
		if err := closeTo(fmt.Sprintf("column-parallel %v gathered", d), got, want); err != nil {
			return err
		}
		col.GatherOutput = false
		part, err := col.Forward(ctx, x)
		if err != nil {
			return err
		}
		off, n := Offsets(col.Sizes)[g.Rank()], col.Sizes[g.Rank()]
		if err := closeTo(fmt.Sprintf("column-parallel %v slice", d), part, want.Narrow(-1, off, n)); err != nil {
			return err
		}

		row, err := NewRowParallelLinear(g, w, b, nil, false)
		if err != nil {
			return err
		}
		got, err = row.Forward(ctx, x)
		if err != nil {
			return err
		}
		if err := closeTo(fmt.Sprintf("row-parallel %v", d), got, want); err != nil {
			return err
		}

		// Column then row (an MLP): the slice goes straight into the row
		// layer, one all-reduce in all.
		w2 := randMat(4, d.in, d.out)
		col2, err := NewColumnParallelLinear(g, w, b, nil, false)
		if err != nil {
			return err
		}
		row2, err := NewRowParallelLinear(g, w2, nil, col2.Sizes, true)
		if err != nil {
			return err
		}
		h, err := col2.Forward(ctx, x)
		if err != nil {
			return err
		}
		got, err = row2.Forward(ctx, h.Relu())
		if err != nil {
			return err
		}
		if err := closeTo(fmt.Sprintf("column·row %v", d), got, tensor.Linear(want.Relu(), w2, nil)); err != nil {
			return err
		}

		table := randMat(5, d.vocab, d.in)
		ids := make([]int64, 2*d.vocab)
		for i := range ids {
			ids[i] = int64((i * 5) % d.vocab)
		}
		idt := tensor.FromSlice(cpu, ids, 2, d.vocab)
		emb, err := NewVocabParallelEmbedding(g, table, nil)
		if err != nil {
			return err
		}
		got, err = emb.Forward(ctx, idt)
		if err != nil {
			return err
		}
		// One rank contributes each row: exact.
		if err := same(fmt.Sprintf("vocab-parallel embedding %v", d), got.Float64s(), tensor.Embedding(table, idt).Float64s(), 0); err != nil {
			return err
		}
	}
	// Shares that do not add up are an error, on every rank alike.
	if _, err := NewColumnParallelLinear(g, randMat(1, 4, 4), nil, make([]int, g.Size()), false); err == nil || !strings.Contains(err.Error(), "sum to 0, not 4") {
		return fmt.Errorf("bad shares: err = %v", err)
	}
	// bf16 activations through the all-reduce.
	w := randMat(6, 6, 8).ToDType(dtype.BF16)
	x := randMat(7, 3, 8).ToDType(dtype.BF16)
	row, err := NewRowParallelLinear(g, w, nil, nil, false)
	if err != nil {
		return err
	}
	got, err := row.Forward(ctx, x)
	if err != nil {
		return err
	}
	if got.DType() != dtype.BF16 {
		return fmt.Errorf("row-parallel bf16: dtype %s", got.DType())
	}
	return same("row-parallel bf16", got.Float64s(), tensor.Linear(x, w, nil).Float64s(), 2e-2)
}

func TestTensorParallelLayers(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			expectOK(t, spawn(t, n, "tp", 60*time.Second, nil))
		})
	}
}

// gradOf returns t's gradient, or an error naming what has none.
func gradOf(what string, t *tensor.Tensor) (*tensor.Tensor, error) {
	if t.Grad() == nil {
		return nil, fmt.Errorf("%s has no gradient", what)
	}
	return t.Grad(), nil
}

// roleTPGrad trains through the tensor-parallel layers: a column-parallel
// then a row-parallel Linear (with the slices passed between them, and
// with the column output gathered and the row input split), and a
// vocab-parallel embedding. Every rank's parameter gradients must equal
// its shard of the unsharded model's, and a replicated input's gradient
// the whole one.
func roleTPGrad(ctx context.Context, g *Group) error {
	const in, hidden, out, vocab, dim = 6, 7, 5, 11, 4
	w1, b1 := randMat(11, hidden, in), randMat(12, 1, hidden).Reshape(hidden)
	w2, b2 := randMat(13, out, hidden), randMat(14, 1, out).Reshape(out)
	r := randMat(15, 4, out)
	x0 := randMat(16, 4, in)
	leaf := func(t *tensor.Tensor) *tensor.Tensor { return t.Clone().SetRequiresGrad(true) }

	// The unsharded reference.
	fw1, fb1, fw2, fb2, fx := leaf(w1), leaf(b1), leaf(w2), leaf(b2), leaf(x0)
	y := tensor.Linear(tensor.Linear(fx, fw1, fb1).Relu(), fw2, fb2)
	y.Mul(r).Sum(nil, false).Backward()

	rank := g.Rank()
	hs := Split(hidden, g.Size())
	off, n := Offsets(hs)[rank], hs[rank]
	for _, parallelIO := range []bool{true, false} {
		col, err := NewColumnParallelLinear(g, w1, leaf(b1), nil, !parallelIO)
		if err != nil {
			return err
		}
		row, err := NewRowParallelLinear(g, w2, leaf(b2), nil, parallelIO)
		if err != nil {
			return err
		}
		x := leaf(x0)
		h, err := col.Forward(ctx, x)
		if err != nil {
			return err
		}
		yt, err := row.Forward(ctx, h.Relu())
		if err != nil {
			return err
		}
		if err := closeTo("tensor-parallel output", yt, y); err != nil {
			return err
		}
		if err := tensor.Catch(func() { yt.Mul(r).Sum(nil, false).Backward() }); err != nil {
			return err
		}
		checks := []struct {
			what      string
			got, want *tensor.Tensor
		}{
			{"column weight", col.Weight, fw1.Grad().Narrow(0, off, n)},
			{"column bias", col.Bias, fb1.Grad().Narrow(0, off, n)},
			{"row weight", row.Weight, fw2.Grad().Narrow(1, off, n)},
			{"row bias", row.Bias, fb2.Grad()},
			{"input", x, fx.Grad()},
		}
		for _, c := range checks {
			gr, err := gradOf(c.what, c.got)
			if err != nil {
				return err
			}
			if err := closeTo(fmt.Sprintf("%s gradient (parallel io %v)", c.what, parallelIO), gr, c.want.Contiguous()); err != nil {
				return err
			}
		}
	}

	// The embedding: its rows' gradients land on the rank that holds them.
	table := randMat(17, vocab, dim)
	ids := tensor.FromSlice(cpu, []int64{3, 10, 0, 3, 7, 5}, 2, 3)
	re := randMat(18, 6, dim).Reshape(2, 3, dim)
	full := leaf(table)
	tensor.Embedding(full, ids).Mul(re).Sum(nil, false).Backward()
	emb, err := NewVocabParallelEmbedding(g, table, nil)
	if err != nil {
		return err
	}
	e, err := emb.Forward(ctx, ids)
	if err != nil {
		return err
	}
	if err := tensor.Catch(func() { e.Mul(re).Sum(nil, false).Backward() }); err != nil {
		return err
	}
	if emb.Weight.Size(0) > 0 {
		gr, err := gradOf("embedding", emb.Weight)
		if err != nil {
			return err
		}
		if err := closeTo("embedding gradient", gr, full.Grad().Narrow(0, emb.Start, emb.Weight.Size(0)).Contiguous()); err != nil {
			return err
		}
	}
	fmt.Println("OK")
	return nil
}

// TestTensorParallelBackward runs roleTPGrad on 2 and 3 ranks (3: uneven
// hidden shares).
func TestTensorParallelBackward(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			expectOK(t, spawn(t, n, "tpgrad", 60*time.Second, nil))
		})
	}
}
