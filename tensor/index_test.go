package tensor_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

// The golden conformance suite checks every index op's values against
// PyTorch; these tests cover the typed API around it: sync-point ops that
// size their output from values, in-place variants, view aliasing and the
// error paths.

var ixCPU = tensor.MustDevice("cpu")

func ixF32(data []float32, shape ...int) *tensor.Tensor {
	return tensor.FromSlice(ixCPU, data, shape...)
}
func ixI64(data []int64, shape ...int) *tensor.Tensor { return tensor.FromSlice(ixCPU, data, shape...) }
func ixBools(data []bool, shape ...int) *tensor.Tensor {
	return tensor.FromSlice(ixCPU, data, shape...)
}

func TestIndexDataDependent(t *testing.T) {
	x := ixF32([]float32{0, 1, 2, 0, 0, 5}, 2, 3)
	mask := ixBools([]bool{true, false, true, false, true, true}, 2, 3)
	tests := []struct {
		name  string
		got   func() *tensor.Tensor
		shape []int
		want  []float64
	}{
		{"nonzero", func() *tensor.Tensor { return x.Nonzero() }, []int{3, 2}, []float64{0, 1, 0, 2, 1, 2}},
		{"nonzero 0-d", func() *tensor.Tensor { return ixF32([]float32{3}).Reshape().Nonzero() }, []int{1, 0}, nil},
		{"masked_select", func() *tensor.Tensor { return x.MaskedSelect(mask) }, []int{4}, []float64{0, 2, 0, 5}},
		{"masked_select broadcast", func() *tensor.Tensor { return x.MaskedSelect(ixBools([]bool{false, true, true}, 3)) }, []int{4}, []float64{1, 2, 0, 5}},
		{"index mask", func() *tensor.Tensor { return x.Index(mask) }, []int{4}, []float64{0, 2, 0, 5}},
		{"index row mask", func() *tensor.Tensor { return x.Index(ixBools([]bool{false, true}, 2)) }, []int{1, 3}, []float64{0, 0, 5}},
		{"index mixed", func() *tensor.Tensor { return x.Index(nil, ixI64([]int64{-1, 0}, 2)) }, []int{2, 2}, []float64{2, 0, 5, 0}},
		{"repeat_interleave one count", func() *tensor.Tensor { return x.RepeatInterleaveTensor(ixI64([]int64{2}, 1)) }, []int{12}, []float64{0, 0, 1, 1, 2, 2, 0, 0, 0, 0, 5, 5}},
		{"nonzero tuple", func() *tensor.Tensor { return x.NonzeroTuple()[1] }, []int{3}, []float64{1, 2, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got *tensor.Tensor
			if err := tensor.Catch(func() { got = tc.got() }); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Shape(), tc.shape) {
				t.Fatalf("shape %v, want %v", got.Shape(), tc.shape)
			}
			if tc.want != nil && !slices.Equal(got.Float64s(), tc.want) {
				t.Fatalf("got %v, want %v", got.Float64s(), tc.want)
			}
		})
	}
	// repeat_interleave with per-row counts: row 0 dropped, row 1 twice.
	r := x.RepeatInterleaveTensor(ixI64([]int64{0, 2}, 2), 0)
	if want := []float64{0, 0, 5, 0, 0, 5}; !slices.Equal(r.Float64s(), want) || !slices.Equal(r.Shape(), []int{2, 3}) {
		t.Fatalf("repeat_interleave rows: %v %v", r.Shape(), r.Float64s())
	}
}

func TestIndexMetaDataDependent(t *testing.T) {
	meta := tensor.MustDevice("meta")
	x := tensor.FromSlice(meta, []float32{1, 0, 2})
	m := tensor.FromSlice(meta, []bool{true, false, true})
	for name, f := range map[string]func(){
		"nonzero":           func() { x.Nonzero() },
		"masked_select":     func() { x.MaskedSelect(m) },
		"index mask":        func() { x.Index(m) },
		"repeat_interleave": func() { x.RepeatInterleaveTensor(tensor.FromSlice(meta, []int64{1, 2, 3})) },
	} {
		err := tensor.Catch(f)
		if err == nil || !strings.Contains(err.Error(), "data-dependent output shape is not supported on meta") {
			t.Errorf("%s on meta: got %v", name, err)
		}
	}
	// Shape-only ops work on meta.
	if s := x.Reshape(3, 1).Expand(3, 4).Flip(0).Shape(); !slices.Equal(s, []int{3, 4}) {
		t.Errorf("meta shape %v", s)
	}
}

func TestIndexInPlace(t *testing.T) {
	tests := []struct {
		name string
		f    func(x *tensor.Tensor) *tensor.Tensor
		want []float64
	}{
		{"index_put_", func(x *tensor.Tensor) *tensor.Tensor {
			return x.IndexPutInPlace([]*tensor.Tensor{ixI64([]int64{0, 0, 3}, 3)}, ixF32([]float32{1, 2, 3}, 3), true)
		}, []float64{3, 0, 0, 3}},
		{"index_put_ mask scalar", func(x *tensor.Tensor) *tensor.Tensor {
			return x.IndexPutInPlace([]*tensor.Tensor{ixBools([]bool{true, false, false, true}, 4)}, tensor.Scalar(7.5), false)
		}, []float64{7.5, 0, 0, 7.5}},
		{"masked_fill_", func(x *tensor.Tensor) *tensor.Tensor {
			return x.MaskedFillInPlace(ixBools([]bool{false, true, true, false}, 4), -1)
		}, []float64{0, -1, -1, 0}},
		{"scatter_", func(x *tensor.Tensor) *tensor.Tensor {
			return x.ScatterInPlace(0, ixI64([]int64{3, 1}, 2), ixF32([]float32{5, 6}, 2))
		}, []float64{0, 6, 0, 5}},
		{"scatter_ value", func(x *tensor.Tensor) *tensor.Tensor { return x.ScatterValueInPlace(0, ixI64([]int64{2}, 1), 9) }, []float64{0, 0, 9, 0}},
		{"index_add_", func(x *tensor.Tensor) *tensor.Tensor {
			return x.IndexAddInPlace(0, ixI64([]int64{1, 1}, 2), ixF32([]float32{2, 3}, 2))
		}, []float64{0, 5, 0, 0}},
		{"index_copy_", func(x *tensor.Tensor) *tensor.Tensor {
			return x.IndexCopyInPlace(0, ixI64([]int64{2, 0}, 2), ixF32([]float32{2, 3}, 2))
		}, []float64{3, 0, 2, 0}},
		{"index_fill_", func(x *tensor.Tensor) *tensor.Tensor { return x.IndexFillInPlace(0, ixI64([]int64{-1}, 1), 4) }, []float64{0, 0, 0, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := ixF32(make([]float32, 4), 4)
			v := x.Version()
			var res *tensor.Tensor
			if err := tensor.Catch(func() { res = tc.f(x) }); err != nil {
				t.Fatal(err)
			}
			if res != x {
				t.Fatal("in-place op did not return its receiver")
			}
			if x.Version() == v {
				t.Fatal("version counter not bumped")
			}
			if !slices.Equal(x.Float64s(), tc.want) {
				t.Fatalf("got %v, want %v", x.Float64s(), tc.want)
			}
		})
	}
	// A float result cannot be written into an integer tensor.
	xi := ixI64([]int64{1, 2}, 2)
	err := tensor.Catch(func() { xi.IndexPutInPlace([]*tensor.Tensor{ixI64([]int64{0}, 1)}, ixF32([]float32{1.5}, 1), false) })
	if err == nil {
		t.Fatal("index_put_ with a float source into int64 succeeded")
	}
	// The in-place write goes through views into the base storage.
	base := ixF32(make([]float32, 6), 2, 3)
	base.Select(0, 1).MaskedFillInPlace(ixBools([]bool{true, false, true}, 3), 1)
	if want := []float64{0, 0, 0, 1, 0, 1}; !slices.Equal(base.Float64s(), want) {
		t.Fatalf("masked_fill_ through a view: %v", base.Float64s())
	}
}

func TestIndexViews(t *testing.T) {
	x := ixF32([]float32{0, 1, 2, 3, 4, 5}, 2, 3)
	views := map[string]*tensor.Tensor{
		"transpose": x.Transpose(0, 1), "t": x.T(), "narrow": x.Narrow(1, 1, 2), "squeeze": x.Unsqueeze(0).Squeeze(),
		"flatten": x.Flatten(0, -1), "unflatten": x.Unflatten(1, 3, 1), "view": x.View(3, 2), "movedim": x.Movedim([]int{0}, []int{1}),
		"select": x.Select(1, -1), "slice": x.Slice(1, 0, 3, 2), "split": x.Split(2, 1)[1], "chunk": x.Chunk(2, 0)[1],
		"unbind": x.Unbind(1)[2], "expand": x.Unsqueeze(0).Expand(4, -1, -1), "diagonal": x.Diagonal(0, 0, 1),
	}
	for name, v := range views {
		if !v.SharesStorage(x) {
			t.Errorf("%s: does not share storage", name)
		}
	}
	if x.Clone().SharesStorage(x) || x.T().Contiguous().SharesStorage(x) || !x.Contiguous().SharesStorage(x) {
		t.Error("Clone/Contiguous aliasing is wrong")
	}
	if got := x.T().Contiguous().Float64s(); !slices.Equal(got, []float64{0, 3, 1, 4, 2, 5}) {
		t.Errorf("T().Contiguous() = %v", got)
	}
	// view refuses what reshape copies.
	if err := tensor.Catch(func() { x.T().View(6) }); err == nil || !strings.Contains(err.Error(), "view size is not compatible") {
		t.Errorf("view of a transposed tensor: %v", err)
	}
	if r := x.T().Reshape(6); r.SharesStorage(x) || !slices.Equal(r.Float64s(), []float64{0, 3, 1, 4, 2, 5}) {
		t.Errorf("reshape of a transposed tensor: %v", r.Float64s())
	}
}

func TestIndexErrors(t *testing.T) {
	x := ixF32([]float32{0, 1, 2, 3, 4, 5}, 2, 3)
	tests := []struct {
		name, want string
		f          func()
	}{
		{"gather", "gather: index 3 is out of bounds for dimension 1 with size 3", func() { x.Gather(1, ixI64([]int64{0, 3}, 1, 2)) }},
		{"index_select", "index_select: index -1 is out of bounds for dimension 0 with size 2", func() { x.IndexSelect(0, ixI64([]int64{-1}, 1)) }},
		{"index", "index 5 is out of bounds for dimension 1 with size 3", func() { x.Index(nil, ixI64([]int64{5}, 1)) }},
		{"take", "index -7 is out of bounds for dimension 0 with size 6", func() { x.Take(ixI64([]int64{-7}, 1)) }},
		{"scatter_add", "index 2 is out of bounds for dimension 0 with size 2", func() { x.ScatterAdd(0, ixI64([]int64{2}, 1, 1), x) }},
		{"cat", "Sizes of tensors must match except in dimension 0", func() { tensor.Cat([]*tensor.Tensor{x, x.T()}, 0) }},
		{"pad mode", "unsupported padding mode", func() { tensor.Pad(x, []int{1, 1}, "wrap", 0) }},
		{"take_along_dim dims", "at most one dim", func() { x.TakeAlongDim(ixI64([]int64{0}, 1, 1), 0, 1) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tensor.Catch(tc.f)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestIndexAPIValues(t *testing.T) {
	x := ixF32([]float32{0, 1, 2, 3, 4, 5}, 2, 3)
	tests := []struct {
		name  string
		got   *tensor.Tensor
		shape []int
		want  []float64
	}{
		{"cat", tensor.Cat([]*tensor.Tensor{x, x.Narrow(0, 0, 1)}, 0), []int{3, 3}, []float64{0, 1, 2, 3, 4, 5, 0, 1, 2}},
		{"stack promotes", tensor.Stack([]*tensor.Tensor{ixI64([]int64{1, 2}, 2), ixF32([]float32{0.5, 1}, 2)}, 1), []int{2, 2}, []float64{1, 0.5, 2, 1}},
		{"pad reflect", tensor.Pad(ixF32([]float32{1, 2, 3}, 1, 3), []int{2, 1}, "reflect", 0), []int{1, 6}, []float64{3, 2, 1, 2, 3, 2}},
		{"pad constant crop", tensor.Pad(x, []int{-1, 1}, "", 9), []int{2, 3}, []float64{1, 2, 9, 4, 5, 9}},
		{"pad_nd interior", ixF32([]float32{1, 2}, 2).PadND([]int{1}, []int{0}, []int{1}, 0), []int{4}, []float64{0, 1, 0, 2}},
		{"roll", x.Roll([]int{1}, []int{1}), []int{2, 3}, []float64{2, 0, 1, 5, 3, 4}},
		{"diag", ixF32([]float32{1, 2}, 2).Diag(1), []int{3, 3}, []float64{0, 1, 0, 0, 0, 2, 0, 0, 0}},
		{"repeat", ixF32([]float32{1, 2}, 2).Repeat(2, 2), []int{2, 4}, []float64{1, 2, 1, 2, 1, 2, 1, 2}},
		{"tile", ixF32([]float32{1, 2}, 2).Tile(2), []int{4}, []float64{1, 2, 1, 2}},
		{"repeat_interleave", ixF32([]float32{1, 2}, 2).RepeatInterleave(2), []int{4}, []float64{1, 1, 2, 2}},
		{"take_along_dim", x.TakeAlongDim(ixI64([]int64{2, 0}, 2, 1), 1), []int{2, 1}, []float64{2, 3}},
		{"take_along_dim flat", x.TakeAlongDim(ixI64([]int64{5, 0}, 2)), []int{2}, []float64{5, 0}},
		{"scatter_reduce amax", ixF32([]float32{0, 0}, 2).ScatterReduce(0, ixI64([]int64{1, 1, 0}, 3), ixF32([]float32{3, 7, -1}, 3), "amax", false), []int{2}, []float64{-1, 7}},
		{"index_add alpha", ixF32([]float32{1, 1}, 2).IndexAddAlpha(0, ixI64([]int64{1}, 1), ixF32([]float32{2}, 1), 3), []int{2}, []float64{1, 7}},
		{"masked_fill tensor value", x.MaskedFill(ixBools([]bool{true, false, false}, 3), ixF32([]float32{-2}).Reshape()), []int{2, 3}, []float64{-2, 1, 2, -2, 4, 5}},
		{"masked_scatter", x.MaskedScatter(ixBools([]bool{false, true, false}, 3), ixF32([]float32{8, 9}, 2)), []int{2, 3}, []float64{0, 8, 2, 3, 9, 5}},
	}
	for _, tc := range tests {
		if !slices.Equal(tc.got.Shape(), tc.shape) || !slices.Equal(tc.got.Float64s(), tc.want) {
			t.Errorf("%s: got %v %v, want %v %v", tc.name, tc.got.Shape(), tc.got.Float64s(), tc.shape, tc.want)
		}
	}
	if tensor.Stack([]*tensor.Tensor{ixI64([]int64{1}, 1), ixF32([]float32{1}, 1)}, 0).DType() != dtype.F32 {
		t.Error("stack did not promote to f32")
	}
}

func TestIndexDebugModeNamesSite(t *testing.T) {
	prev := tensor.SetMode(tensor.Debug)
	defer tensor.SetMode(prev)
	x := ixF32([]float32{1, 2, 3}, 3)
	err := tensor.Catch(func() { x.Gather(0, ixI64([]int64{3}, 1)) })
	if err == nil || !strings.Contains(err.Error(), "index 3 is out of bounds for dimension 0 with size 3") || !strings.Contains(err.Error(), "index_test.go:") {
		t.Fatalf("debug-mode gather error: %v", err)
	}
}

// TestIndexIdentities cross-checks ops that must agree on random strided
// inputs: advanced indexing with one index tensor vs index_select, take vs
// flatten+index_select (after wrapping negatives), scatter of a gather at
// a permutation vs the input, and pad vs pad_nd.
func TestIndexIdentities(t *testing.T) {
	rng := uint64(12345)
	next := func(n int) int {
		rng ^= rng << 13
		rng ^= rng >> 7
		rng ^= rng << 17
		return int(rng % uint64(n))
	}
	for iter := 0; iter < 20; iter++ {
		a, b, c := 1+next(4), 1+next(5), 2+next(3)
		data := make([]float32, a*b*c)
		for i := range data {
			data[i] = float32(next(1000)) - 500
		}
		// A permuted (non-contiguous) view of shape [b, a, c].
		x := ixF32(data, a, b, c).Transpose(0, 1)
		m := 1 + next(6)
		idx := make([]int64, m)
		neg := make([]int64, m)
		for i := range idx {
			idx[i] = int64(next(a))
			neg[i] = idx[i] - int64(a*next(2)) // some negative aliases
		}
		sel := x.IndexSelect(1, ixI64(idx, m))
		adv := x.Index(nil, ixI64(neg, m))
		if !slices.Equal(sel.Float64s(), adv.Float64s()) || !slices.Equal(sel.Shape(), adv.Shape()) {
			t.Fatalf("iter %d: index vs index_select differ", iter)
		}
		n := x.Numel()
		flat := make([]int64, m)
		wrapped := make([]int64, m)
		for i := range flat {
			flat[i] = int64(next(2*n) - n)
			wrapped[i] = (flat[i] + int64(n)) % int64(n)
		}
		tk := x.Take(ixI64(flat, m))
		ref := x.Flatten(0, -1).IndexSelect(0, ixI64(wrapped, m))
		if !slices.Equal(tk.Float64s(), ref.Float64s()) {
			t.Fatalf("iter %d: take vs flatten+index_select differ", iter)
		}
		// Gathering x along dim 0 at a permutation and scattering back
		// restores x.
		perm := make([]int64, b*a*c)
		for j := 0; j < a; j++ {
			for k := 0; k < c; k++ {
				for i := 0; i < b; i++ {
					perm[(i*a+j)*c+k] = int64((i + j + k) % b)
				}
			}
		}
		pi := ixI64(perm, b, a, c)
		back := x.Clone().ScatterInPlace(0, pi, x.Gather(0, pi))
		if !slices.Equal(back.Float64s(), x.Float64s()) {
			t.Fatalf("iter %d: scatter(gather) is not the identity", iter)
		}
		l, h := next(3)-1, next(3)-1
		p1 := tensor.Pad(x, []int{l, h}, "constant", 2)
		p2 := x.PadND([]int{0, 0, l}, []int{0, 0, h}, nil, 2)
		if !slices.Equal(p1.Float64s(), p2.Float64s()) || !slices.Equal(p1.Shape(), p2.Shape()) {
			t.Fatalf("iter %d: pad vs pad_nd differ", iter)
		}
	}
}
