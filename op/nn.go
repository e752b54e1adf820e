package op

import (
	"fmt"
	"math"
	"slices"

	"github.com/gotpu/gotpu/dtype"
)

// nn functional ops (torch.nn.functional): normalisations, dropout,
// embedding, one_hot, losses, attention and interpolation. All are
// composites over other groups' ops; layer_norm and dropout also have direct
// CPU kernels that the conformance suite checks against these
// decompositions. Half-precision inputs are normalised in f32 and rounded
// once, as PyTorch's CPU kernels do.

// nnCall is Call1 with the inputs last, for brevity.
func nnCall(b Builder, name string, a Attrs, in ...Value) Value { return Call1(b, name, a, in...) }

// nnOpmath converts bf16/f16 to f32 (the dtype PyTorch computes them in).
func nnOpmath(b Builder, x Value) Value {
	if d := b.Meta(x).DType; d == dtype.BF16 || d == dtype.F16 {
		return nnCall(b, "convert", Attrs{"dtype": dtype.F32}, x)
	}
	return x
}

func nnConvert(b Builder, x Value, d dtype.DType) Value {
	if b.Meta(x).DType == d {
		return x
	}
	return nnCall(b, "convert", Attrs{"dtype": d}, x)
}

func nnReshape(b Builder, x Value, shape []int) Value {
	return nnCall(b, "reshape", Attrs{"shape": slices.Clone(shape)}, x)
}

// nnReduce applies a loss reduction: "none", "mean" or "sum".
func nnReduce(b Builder, loss Value, reduction string) Value {
	switch reduction {
	case "sum":
		return nnCall(b, "sum", Attrs{"dims": []int{}}, loss)
	case "mean":
		return nnCall(b, "mean", Attrs{"dims": []int{}}, loss)
	}
	return loss
}

func nnReductionAttr() AttrSpec {
	return AttrSpec{Name: "reduction", Type: AttrString, Default: "mean"}
}

func nnCheckReduction(name string, r string, extra ...string) error {
	if r == "none" || r == "mean" || r == "sum" || slices.Contains(extra, r) {
		return nil
	}
	return fmt.Errorf("%s: %s is not a valid value for reduction", name, r)
}

// nnReducedMeta is the output meta of a loss with the given elementwise shape.
func nnReducedMeta(shape []int, dt dtype.DType, reduction string) []Meta {
	if reduction == "none" {
		return []Meta{{Shape: slices.Clone(shape), DType: dt}}
	}
	return []Meta{{Shape: []int{}, DType: dt}}
}

// CheckNormalizedShape validates layer_norm/rms_norm shapes.
func CheckNormalizedShape(name string, in []Meta, ns []int) error {
	x := in[0]
	if len(ns) == 0 {
		return fmt.Errorf("%s: Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got normalized_shape = []", name)
	}
	r := len(x.Shape)
	if r < len(ns) || !slices.Equal(x.Shape[r-len(ns):], ns) {
		return fmt.Errorf("%s: Given normalized_shape=%v, expected input with shape [*, %v], but got input of size%v", name, ns, nnJoin(ns), x.Shape)
	}
	for i, w := range in[1:] {
		if w.DType != dtype.Invalid && !slices.Equal(w.Shape, ns) {
			return fmt.Errorf("%s: Expected %s to be of same shape as normalized_shape, but got %s of shape %v and normalized_shape = %v",
				name, []string{"weight", "bias"}[i], []string{"weight", "bias"}[i], w.Shape, ns)
		}
	}
	return nil
}

func nnJoin(s []int) string {
	out := ""
	for i, d := range s {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprint(d)
	}
	return out
}

func nnLastDims(r, k int) []int {
	d := make([]int, k)
	for i := range d {
		d[i] = r - k + i
	}
	return d
}

// nnNormalize returns (x - mean) * rsqrt(var + eps) over dims (biased var),
// computed in x's opmath dtype.
func nnNormalize(b Builder, x Value, dims []int, eps float64) Value {
	mean := nnCall(b, "mean", Attrs{"dims": dims, "keepdim": true}, x)
	xc := nnCall(b, "sub", nil, x, mean)
	v := nnCall(b, "mean", Attrs{"dims": dims, "keepdim": true}, nnCall(b, "mul", nil, xc, xc))
	rstd := nnCall(b, "rsqrt", nil, nnCall(b, "add", nil, v, b.Scalar(eps, v)))
	return nnCall(b, "mul", nil, xc, rstd)
}

// nnAffine multiplies by w and adds bias (either may be nil), reshaped to
// shape for broadcasting.
func nnAffine(b Builder, y, w, bias Value, shape []int) Value {
	if w != nil {
		y = nnCall(b, "mul", nil, y, nnReshape(b, nnOpmath(b, w), shape))
	}
	if bias != nil {
		y = nnCall(b, "add", nil, y, nnReshape(b, nnOpmath(b, bias), shape))
	}
	return y
}

// nnChannelShape is [C, 1, ..., 1] for an input of rank r (channels at dim 1).
func nnChannelShape(c, r int) []int {
	s := []int{c}
	for i := 2; i < r; i++ {
		s = append(s, 1)
	}
	return s
}

func nnSameAsInput(in []Meta, a Attrs) ([]Meta, error) {
	return []Meta{{Shape: slices.Clone(in[0].Shape), DType: in[0].DType}}, nil
}

func init() {
	nnRegisterNorms()
	nnRegisterMisc()
	nnRegisterLosses()
	nnRegisterAttention()
	nnRegisterPagedAttention()
}

func nnRegisterNorms() {
	Register(&Def{
		Name: "layer_norm", Kind: Composite, Group: "nn",
		Doc:     "Normalises over the trailing normalized_shape dims: (x - mean) / sqrt(var + eps) * weight + bias, biased variance (F.layer_norm).",
		Inputs:  []string{"input", "weight?", "bias?"},
		Attrs:   []AttrSpec{{Name: "normalized_shape", Type: AttrInts}, {Name: "eps", Type: AttrFloat, Default: 1e-5}},
		Promote: PromoteCommon, DTypes: SetFloats, NeedsContiguous: true,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if err := CheckNormalizedShape("layer_norm", in, a.Ints("normalized_shape")); err != nil {
				return nil, err
			}
			return nnSameAsInput(in, a)
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			m := b.Meta(in[0])
			ns := a.Ints("normalized_shape")
			y := nnNormalize(b, nnOpmath(b, in[0]), nnLastDims(len(m.Shape), len(ns)), a.Float("eps"))
			return []Value{nnConvert(b, nnAffine(b, y, in[1], in[2], ns), m.DType)}
		},
	})
	Register(&Def{
		Name: "rms_norm", Kind: Composite, Group: "nn",
		Doc:     "x * rsqrt(mean(x²) + eps) * weight over the trailing normalized_shape dims (F.rms_norm); eps defaults to the dtype's machine epsilon.",
		Inputs:  []string{"input", "weight?"},
		Attrs:   []AttrSpec{{Name: "normalized_shape", Type: AttrInts}, {Name: "eps", Type: AttrFloat, Optional: true}},
		Promote: PromoteCommon, DTypes: SetFloats,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if err := CheckNormalizedShape("rms_norm", in, a.Ints("normalized_shape")); err != nil {
				return nil, err
			}
			return nnSameAsInput(in, a)
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			m := b.Meta(in[0])
			ns := a.Ints("normalized_shape")
			eps := nnMachineEps(m.DType)
			if a.Has("eps") {
				eps = a.Float("eps")
			}
			x := nnOpmath(b, in[0])
			ms := nnCall(b, "mean", Attrs{"dims": nnLastDims(len(m.Shape), len(ns)), "keepdim": true}, nnCall(b, "mul", nil, x, x))
			y := nnCall(b, "mul", nil, x, nnCall(b, "rsqrt", nil, nnCall(b, "add", nil, ms, b.Scalar(eps, ms))))
			return []Value{nnConvert(b, nnAffine(b, y, in[1], nil, ns), m.DType)}
		},
	})
	Register(&Def{
		Name: "group_norm", Kind: Composite, Group: "nn",
		Doc:     "Normalises each of num_groups channel groups of an [N, C, *] input over its channels and spatial dims, then applies per-channel weight and bias (F.group_norm).",
		Inputs:  []string{"input", "weight?", "bias?"},
		Attrs:   []AttrSpec{{Name: "num_groups", Type: AttrInt}, {Name: "eps", Type: AttrFloat, Default: 1e-5}},
		Promote: PromoteCommon, DTypes: SetFloats,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			x := in[0]
			if len(x.Shape) < 2 {
				return nil, fmt.Errorf("group_norm: Expected at least 2 dimensions for input tensor but received %d", len(x.Shape))
			}
			c, g := x.Shape[1], a.Int("num_groups")
			if g <= 0 || c%g != 0 {
				return nil, fmt.Errorf("group_norm: Expected number of channels in input to be divisible by num_groups, but got input of shape %v and num_groups=%d", x.Shape, g)
			}
			for i, w := range in[1:] {
				if w.DType != dtype.Invalid && !slices.Equal(w.Shape, []int{c}) {
					return nil, fmt.Errorf("group_norm: Expected %s to be a vector of size equal to the number of channels in input, but got %s of shape %v and input of shape %v",
						[]string{"weight", "bias"}[i], []string{"weight", "bias"}[i], w.Shape, x.Shape)
				}
			}
			return nnSameAsInput(in, a)
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			m := b.Meta(in[0])
			n, g := m.Shape[0], a.Int("num_groups")
			x := nnReshape(b, nnOpmath(b, in[0]), []int{n, g, -1})
			if Numel(m.Shape) == 0 {
				x = nnReshape(b, nnOpmath(b, in[0]), []int{n, g, Numel(m.Shape[1:]) / max(g, 1)})
			}
			y := nnReshape(b, nnNormalize(b, x, []int{2}, a.Float("eps")), m.Shape)
			y = nnAffine(b, y, in[1], in[2], nnChannelShape(m.Shape[1], len(m.Shape)))
			return []Value{nnConvert(b, y, m.DType)}
		},
	})
	Register(&Def{
		Name: "batch_norm", Kind: Composite, Group: "nn",
		Doc: "Normalises an [N, C, *] input per channel: with training (or without running stats) by the batch's mean and biased variance, else by running_mean and running_var; then weight and bias (F.batch_norm). " +
			"The running statistics are updated by the typed API (tensor.BatchNorm), not by this functional op.",
		Inputs: []string{"input", "running_mean?", "running_var?", "weight?", "bias?"},
		Attrs: []AttrSpec{{Name: "training", Type: AttrBool, Default: false}, {Name: "momentum", Type: AttrFloat, Default: 0.1},
			{Name: "eps", Type: AttrFloat, Default: 1e-5}},
		DTypes: SetFloats,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			x := in[0]
			if len(x.Shape) < 2 {
				return nil, fmt.Errorf("batch_norm: Expected at least 2 dimensions for input tensor but received %d", len(x.Shape))
			}
			c := x.Shape[1]
			for i, w := range in[1:] {
				if w.DType != dtype.Invalid && !slices.Equal(w.Shape, []int{c}) {
					return nil, fmt.Errorf("batch_norm: %s should contain %d elements not %d", []string{"running_mean", "running_var", "weight", "bias"}[i], c, Numel(w.Shape))
				}
			}
			if (in[1].DType == dtype.Invalid) != (in[2].DType == dtype.Invalid) {
				return nil, fmt.Errorf("batch_norm: running_mean and running_var must be given together")
			}
			if a.Bool("training") || in[1].DType == dtype.Invalid {
				if n := Numel(x.Shape) / max(c, 1); n <= 1 && c > 0 {
					return nil, fmt.Errorf("batch_norm: Expected more than 1 value per channel when training, got input size %v", x.Shape)
				}
			}
			return nnSameAsInput(in, a)
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			m := b.Meta(in[0])
			r := len(m.Shape)
			cs := nnChannelShape(m.Shape[1], r)
			x := nnOpmath(b, in[0])
			var y Value
			if a.Bool("training") || in[1] == nil {
				dims := []int{0}
				for i := 2; i < r; i++ {
					dims = append(dims, i)
				}
				y = nnNormalize(b, x, dims, a.Float("eps"))
			} else {
				mean := nnReshape(b, nnOpmath(b, in[1]), cs)
				v := nnReshape(b, nnOpmath(b, in[2]), cs)
				rstd := nnCall(b, "rsqrt", nil, nnCall(b, "add", nil, v, b.Scalar(a.Float("eps"), v)))
				y = nnCall(b, "mul", nil, nnCall(b, "sub", nil, x, mean), rstd)
			}
			return []Value{nnConvert(b, nnAffine(b, y, in[3], in[4], cs), m.DType)}
		},
	})
}

// nnMachineEps is torch.finfo(d).eps.
func nnMachineEps(d dtype.DType) float64 {
	switch d {
	case dtype.F64:
		return math.Ldexp(1, -52)
	case dtype.F16:
		return math.Ldexp(1, -10)
	case dtype.BF16:
		return math.Ldexp(1, -7)
	}
	return math.Ldexp(1, -23)
}

func nnRegisterMisc() {
	Register(&Def{
		Name: "dropout", Kind: Composite, Group: "nn", Random: true,
		Doc:    "In training, zeroes each element with probability p and scales the rest by 1/(1-p) (F.dropout): keep where a 53-bit uniform < 1-p; out = input * (keep / (1-p)) in input's dtype. Without training, a copy.",
		Inputs: []string{"input"},
		Attrs:  append([]AttrSpec{{Name: "p", Type: AttrFloat, Default: 0.5}, {Name: "train", Type: AttrBool, Default: true}}, randomAttrs...),
		DTypes: SetFloats,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if p := a.Float("p"); !(p >= 0 && p <= 1) {
				return nil, fmt.Errorf("dropout: dropout probability has to be between 0 and 1, but got %v", p)
			}
			return nnSameAsInput(in, a)
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			x := in[0]
			m := b.Meta(x)
			p := a.Float("p")
			switch {
			case !a.Bool("train") || p == 0:
				return []Value{nnCall(b, "copy", nil, x)}
			case p == 1:
				return []Value{nnCall(b, "mul", nil, x, b.Scalar(0.0, x))}
			}
			u := uniformBits(b, m.Shape, dtype.F64, a, 0)
			keep := nnConvert(b, nnCall(b, "lt", nil, u, b.Scalar(1-p, u)), m.DType)
			noise := nnCall(b, "div", nil, keep, b.Scalar(1-p, keep))
			return []Value{nnCall(b, "mul", nil, x, noise)}
		},
	})
	Register(&Def{
		Name: "embedding", Kind: Composite, Group: "nn",
		Doc:    "Looks up rows of weight [num_embeddings, dim] by integer indices of any shape: output shape indices.shape + [dim] (F.embedding; padding_idx only affects gradients); an index out of range is an error naming the index and the bound.",
		Inputs: []string{"weight", "indices"},
		Attrs:  []AttrSpec{{Name: "padding_idx", Type: AttrInt, Optional: true}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			w, idx := in[0], in[1]
			if len(w.Shape) != 2 {
				return nil, fmt.Errorf("embedding: 'weight' must be 2-D, got shape %v", w.Shape)
			}
			if idx.DType != dtype.I64 && idx.DType != dtype.I32 {
				return nil, fmt.Errorf("embedding: Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got %s instead", idx.DType.TorchName())
			}
			if a.Has("padding_idx") {
				if p := a.Int("padding_idx"); p < -w.Shape[0] || p >= w.Shape[0] {
					return nil, fmt.Errorf("embedding: Padding_idx must be within num_embeddings")
				}
			}
			return []Meta{{Shape: append(slices.Clone(idx.Shape), w.Shape[1]), DType: w.DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			w, idx := in[0], in[1]
			wm, im := b.Meta(w), b.Meta(idx)
			flat := nnReshape(b, idx, []int{-1})
			if Numel(im.Shape) == 0 {
				flat = nnReshape(b, idx, []int{0})
			}
			rows := nnCall(b, "index_select", Attrs{"dim": 0}, w, flat)
			return []Value{nnReshape(b, rows, append(slices.Clone(im.Shape), wm.Shape[1]))}
		},
	})
	Register(&Def{
		Name: "one_hot", Kind: Composite, Group: "nn",
		Doc:    "Returns i64 one-hot rows of length num_classes for integer class indices (F.one_hot; classes outside [0, num_classes) give all-zero rows, PyTorch raises).",
		Inputs: []string{"input"},
		Attrs:  []AttrSpec{{Name: "num_classes", Type: AttrInt}},
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if in[0].DType != dtype.I64 {
				return nil, fmt.Errorf("one_hot: one_hot is only applicable to index tensor (int64), got %s", in[0].DType)
			}
			if a.Int("num_classes") < 0 {
				return nil, fmt.Errorf("one_hot: num_classes must be non-negative here (the typed API infers -1 from the data), got %d", a.Int("num_classes"))
			}
			return []Meta{{Shape: append(slices.Clone(in[0].Shape), a.Int("num_classes")), DType: dtype.I64}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			c := a.Int("num_classes")
			cls := nnCall(b, "iota", Attrs{"shape": []int{c}, "dim": 0, "dtype": dtype.I64})
			x := nnCall(b, "unsqueeze", Attrs{"dim": -1}, in[0])
			return []Value{nnConvert(b, nnCall(b, "eq", nil, x, cls), dtype.I64)}
		},
	})
	Register(&Def{
		Name: "interpolate", Kind: Composite, Group: "nn",
		Doc: "Resizes the two spatial dims of an [N, C, H, W] input to size or by scale_factor (F.interpolate, modes nearest and bilinear with align_corners); " +
			"with scale_factor the source index uses 1/scale_factor, as PyTorch without recompute_scale_factor.",
		Inputs: []string{"input"},
		Attrs: []AttrSpec{{Name: "size", Type: AttrInts, Optional: true}, {Name: "scale_factor", Type: AttrFloats, Optional: true},
			{Name: "mode", Type: AttrString, Default: "nearest"}, {Name: "align_corners", Type: AttrBool, Default: false}},
		DTypes: SetFloats,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			oh, ow, _, _, err := nnInterpSize(in[0], a)
			if err != nil {
				return nil, err
			}
			s := slices.Clone(in[0].Shape)
			s[2], s[3] = oh, ow
			return []Meta{{Shape: s, DType: in[0].DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			m := b.Meta(in[0])
			oh, ow, sh, sw, _ := nnInterpSize(m, a)
			x := nnOpmath(b, in[0])
			if a.String("mode") == "nearest" {
				x = nnCall(b, "index_select", Attrs{"dim": 2}, x, nnNearestIndex(b, m.Shape[2], oh, sh))
				x = nnCall(b, "index_select", Attrs{"dim": 3}, x, nnNearestIndex(b, m.Shape[3], ow, sw))
				return []Value{nnConvert(b, x, m.DType)}
			}
			ac := a.Bool("align_corners")
			x = nnLinearAlong(b, x, 2, m.Shape[2], oh, sh, ac, []int{oh, 1})
			x = nnLinearAlong(b, x, 3, m.Shape[3], ow, sw, ac, []int{ow})
			return []Value{nnConvert(b, x, m.DType)}
		},
	})
}

// nnInterpSize resolves interpolate's output size and the per-dim source
// scales (in/out, or 1/scale_factor when a scale factor is given).
func nnInterpSize(x Meta, a Attrs) (oh, ow int, sh, sw float64, err error) {
	if len(x.Shape) != 4 {
		return 0, 0, 0, 0, fmt.Errorf("interpolate: only 4-d input [N, C, H, W] is supported, got %v", x.Shape)
	}
	if m := a.String("mode"); m != "nearest" && m != "bilinear" {
		return 0, 0, 0, 0, fmt.Errorf("interpolate: mode %q is not supported (nearest, bilinear)", m)
	}
	if a.String("mode") == "nearest" && a.Bool("align_corners") {
		return 0, 0, 0, 0, fmt.Errorf("interpolate: align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear")
	}
	h, w := x.Shape[2], x.Shape[3]
	size, sf := a.Ints("size"), a.Floats("scale_factor")
	switch {
	case size != nil && sf != nil:
		return 0, 0, 0, 0, fmt.Errorf("interpolate: only one of size or scale_factor should be defined")
	case size != nil:
		if len(size) == 1 {
			size = []int{size[0], size[0]}
		}
		if len(size) != 2 || size[0] <= 0 || size[1] <= 0 {
			return 0, 0, 0, 0, fmt.Errorf("interpolate: size %v must be two positive sizes", size)
		}
		oh, ow = size[0], size[1]
		sh, sw = float64(h)/float64(oh), float64(w)/float64(ow)
	case sf != nil:
		if len(sf) == 1 {
			sf = []float64{sf[0], sf[0]}
		}
		if len(sf) != 2 || !(sf[0] > 0) || !(sf[1] > 0) {
			return 0, 0, 0, 0, fmt.Errorf("interpolate: scale_factor %v must be two positive factors", sf)
		}
		oh, ow = int(math.Floor(float64(h)*sf[0])), int(math.Floor(float64(w)*sf[1]))
		sh, sw = 1/sf[0], 1/sf[1]
	default:
		return 0, 0, 0, 0, fmt.Errorf("interpolate: either size or scale_factor should be defined")
	}
	if oh <= 0 || ow <= 0 {
		return 0, 0, 0, 0, fmt.Errorf("interpolate: output size %dx%d is empty", oh, ow)
	}
	return oh, ow, sh, sw, nil
}

// nnNearestIndex is min(floor(dst * scale), in-1), computed in f32 as PyTorch.
func nnNearestIndex(b Builder, in, out int, scale float64) Value {
	d := nnCall(b, "iota", Attrs{"shape": []int{out}, "dim": 0, "dtype": dtype.F32})
	src := nnCall(b, "floor", nil, nnCall(b, "mul", nil, d, b.Scalar(float64(float32(scale)), d)))
	idx := nnCall(b, "convert", Attrs{"dtype": dtype.I64}, src)
	return nnCall(b, "clamp", Attrs{"max": int64(in - 1)}, idx)
}

// nnLinearAlong linearly interpolates x along dim from in to out samples.
func nnLinearAlong(b Builder, x Value, dim, in, out int, scale float64, alignCorners bool, wshape []int) Value {
	dt := b.Meta(x).DType
	d := nnCall(b, "iota", Attrs{"shape": []int{out}, "dim": 0, "dtype": dt})
	var src Value
	if alignCorners {
		r := 0.0
		if out > 1 {
			r = float64(in-1) / float64(out-1)
		}
		src = nnCall(b, "mul", nil, d, b.Scalar(r, d))
	} else {
		src = nnCall(b, "sub", nil, nnCall(b, "mul", nil, nnCall(b, "add", nil, d, b.Scalar(0.5, d)), b.Scalar(scale, d)), b.Scalar(0.5, d))
		src = nnCall(b, "clamp", Attrs{"min": 0.0}, src)
	}
	i0 := nnCall(b, "clamp", Attrs{"max": int64(in - 1)}, nnCall(b, "convert", Attrs{"dtype": dtype.I64}, nnCall(b, "floor", nil, src)))
	i1 := nnCall(b, "clamp", Attrs{"max": int64(in - 1)}, nnCall(b, "add", nil, i0, b.Scalar(int64(1), i0)))
	l1 := nnCall(b, "sub", nil, src, nnConvert(b, i0, dt))
	l0 := nnCall(b, "sub", nil, b.Scalar(1.0, l1), l1)
	lo := nnCall(b, "index_select", Attrs{"dim": dim}, x, i0)
	hi := nnCall(b, "index_select", Attrs{"dim": dim}, x, i1)
	return nnCall(b, "add", nil, nnCall(b, "mul", nil, lo, nnReshape(b, l0, wshape)), nnCall(b, "mul", nil, hi, nnReshape(b, l1, wshape)))
}

func nnRegisterLosses() {
	pointwise := func(name, doc string, extra []AttrSpec, f func(b Builder, x, y Value, a Attrs) Value) {
		Register(&Def{
			Name: name, Kind: Composite, Group: "nn", Doc: doc,
			Inputs:  []string{"input", "target"},
			Attrs:   append([]AttrSpec{nnReductionAttr()}, extra...),
			Promote: PromoteCommon, DTypes: SetFloats,
			Infer: func(in []Meta, a Attrs) ([]Meta, error) {
				if err := nnCheckReduction(name, a.String("reduction")); err != nil {
					return nil, err
				}
				s, err := BroadcastShapes(name, in[0].Shape, in[1].Shape)
				if err != nil {
					return nil, err
				}
				return nnReducedMeta(s, in[0].DType, a.String("reduction")), nil
			},
			Decompose: func(b Builder, in []Value, a Attrs) []Value {
				return []Value{nnReduce(b, f(b, in[0], in[1], a), a.String("reduction"))}
			},
		})
	}
	pointwise("mse_loss", "Mean squared error (input - target)² with reduction none|mean|sum (F.mse_loss).", nil,
		func(b Builder, x, y Value, a Attrs) Value {
			d := nnCall(b, "sub", nil, x, y)
			return nnCall(b, "mul", nil, d, d)
		})
	pointwise("l1_loss", "Mean absolute error |input - target| with reduction none|mean|sum (F.l1_loss).", nil,
		func(b Builder, x, y Value, a Attrs) Value { return nnCall(b, "abs", nil, nnCall(b, "sub", nil, x, y)) })
	pointwise("smooth_l1_loss", "0.5 d²/beta where d = |input - target| < beta, else d - 0.5 beta (F.smooth_l1_loss; beta 0 is l1).",
		[]AttrSpec{{Name: "beta", Type: AttrFloat, Default: 1.0}},
		func(b Builder, x, y Value, a Attrs) Value {
			d := nnCall(b, "abs", nil, nnCall(b, "sub", nil, x, y))
			beta := a.Float("beta")
			if beta == 0 {
				return d
			}
			q := nnCall(b, "div", nil, nnCall(b, "mul", nil, nnCall(b, "mul", nil, d, d), b.Scalar(0.5, d)), b.Scalar(beta, d))
			l := nnCall(b, "sub", nil, d, b.Scalar(0.5*beta, d))
			return nnCall(b, "where", nil, nnCall(b, "lt", nil, d, b.Scalar(beta, d)), q, l)
		})
	pointwise("huber_loss", "0.5 d² where d = |input - target| < delta, else delta (d - 0.5 delta) (F.huber_loss).",
		[]AttrSpec{{Name: "delta", Type: AttrFloat, Default: 1.0}},
		func(b Builder, x, y Value, a Attrs) Value {
			d := nnCall(b, "abs", nil, nnCall(b, "sub", nil, x, y))
			delta := a.Float("delta")
			q := nnCall(b, "mul", nil, nnCall(b, "mul", nil, d, d), b.Scalar(0.5, d))
			l := nnCall(b, "mul", nil, nnCall(b, "sub", nil, d, b.Scalar(0.5*delta, d)), b.Scalar(delta, d))
			return nnCall(b, "where", nil, nnCall(b, "lt", nil, d, b.Scalar(delta, d)), q, l)
		})

	weighted := func(name, doc string, inputs []string, f func(b Builder, in []Value, a Attrs) Value) {
		Register(&Def{
			Name: name, Kind: Composite, Group: "nn", Doc: doc,
			Inputs: inputs, Attrs: []AttrSpec{nnReductionAttr()},
			Promote: PromoteCommon, DTypes: SetFloats,
			Infer: func(in []Meta, a Attrs) ([]Meta, error) {
				if err := nnCheckReduction(name, a.String("reduction")); err != nil {
					return nil, err
				}
				if !slices.Equal(in[0].Shape, in[1].Shape) {
					return nil, fmt.Errorf("%s: Using a target size (%v) that is different to the input size (%v) is deprecated. Please ensure they have the same size.", name, in[1].Shape, in[0].Shape)
				}
				for _, w := range in[2:] {
					if w.DType != dtype.Invalid {
						if _, err := BroadcastShapes(name, in[0].Shape, w.Shape); err != nil {
							return nil, err
						}
					}
				}
				return nnReducedMeta(in[0].Shape, in[0].DType, a.String("reduction")), nil
			},
			Decompose: func(b Builder, in []Value, a Attrs) []Value {
				return []Value{nnReduce(b, f(b, in, a), a.String("reduction"))}
			},
		})
	}
	weighted("binary_cross_entropy", "-(target log(input) + (1 - target) log(1 - input)) * weight, each log clamped to >= -100 (F.binary_cross_entropy).",
		[]string{"input", "target", "weight?"}, func(b Builder, in []Value, a Attrs) Value {
			x, t := in[0], in[1]
			lx := nnCall(b, "clamp", Attrs{"min": -100.0}, nnCall(b, "log", nil, x))
			l1x := nnCall(b, "clamp", Attrs{"min": -100.0}, nnCall(b, "log", nil, nnCall(b, "sub", nil, b.Scalar(1.0, x), x)))
			omt := nnCall(b, "sub", nil, b.Scalar(1.0, t), t)
			loss := nnCall(b, "neg", nil, nnCall(b, "add", nil, nnCall(b, "mul", nil, t, lx), nnCall(b, "mul", nil, omt, l1x)))
			if in[2] != nil {
				loss = nnCall(b, "mul", nil, loss, in[2])
			}
			return loss
		})
	weighted("binary_cross_entropy_with_logits", "Sigmoid plus binary cross-entropy in the numerically stable form (1 - t) x + lw (log(exp(-m) + exp(-x - m)) + m), m = max(-x, 0), lw = 1 + (pos_weight - 1) t (F.binary_cross_entropy_with_logits).",
		[]string{"input", "target", "weight?", "pos_weight?"}, func(b Builder, in []Value, a Attrs) Value {
			x, t := in[0], in[1]
			mx := nnCall(b, "clamp", Attrs{"min": 0.0}, nnCall(b, "neg", nil, x))
			lse := nnCall(b, "log", nil, nnCall(b, "add", nil, nnCall(b, "exp", nil, nnCall(b, "neg", nil, mx)),
				nnCall(b, "exp", nil, nnCall(b, "sub", nil, nnCall(b, "neg", nil, x), mx))))
			omt := nnCall(b, "sub", nil, b.Scalar(1.0, t), t)
			var loss Value
			if in[3] != nil {
				lw := nnCall(b, "add", nil, nnCall(b, "mul", nil, nnCall(b, "sub", nil, in[3], b.Scalar(1.0, in[3])), t), b.Scalar(1.0, t))
				loss = nnCall(b, "add", nil, nnCall(b, "mul", nil, omt, x), nnCall(b, "mul", nil, lw, nnCall(b, "add", nil, lse, mx)))
			} else {
				loss = nnCall(b, "add", nil, nnCall(b, "add", nil, nnCall(b, "mul", nil, omt, x), mx), lse)
			}
			if in[2] != nil {
				loss = nnCall(b, "mul", nil, loss, in[2])
			}
			return loss
		})
	Register(&Def{
		Name: "kl_div", Kind: Composite, Group: "nn",
		Doc:     "Kullback–Leibler divergence of log-probabilities input from target: target (log target - input), 0 where target is 0; exp(t) (t - input) with log_target (F.kl_div; reductions none|mean|sum|batchmean).",
		Inputs:  []string{"input", "target"},
		Attrs:   []AttrSpec{nnReductionAttr(), {Name: "log_target", Type: AttrBool, Default: false}},
		Promote: PromoteCommon, DTypes: SetFloats,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if err := nnCheckReduction("kl_div", a.String("reduction"), "batchmean"); err != nil {
				return nil, err
			}
			s, err := BroadcastShapes("kl_div", in[0].Shape, in[1].Shape)
			if err != nil {
				return nil, err
			}
			return nnReducedMeta(s, in[0].DType, a.String("reduction")), nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			x, t := in[0], in[1]
			var loss Value
			if a.Bool("log_target") {
				loss = nnCall(b, "mul", nil, nnCall(b, "exp", nil, t), nnCall(b, "sub", nil, t, x))
			} else {
				tlogt := nnCall(b, "where", nil, nnCall(b, "eq", nil, t, b.Scalar(0.0, t)), b.Scalar(0.0, t), nnCall(b, "mul", nil, t, nnCall(b, "log", nil, t)))
				loss = nnCall(b, "sub", nil, tlogt, nnCall(b, "mul", nil, t, x))
			}
			if a.String("reduction") == "batchmean" {
				s := nnCall(b, "sum", Attrs{"dims": []int{}}, loss)
				if sh := b.Meta(loss).Shape; len(sh) > 0 {
					return []Value{nnCall(b, "div", nil, s, b.Scalar(float64(sh[0]), s))}
				}
				return []Value{s}
			}
			return []Value{nnReduce(b, loss, a.String("reduction"))}
		},
	})

	nllAttrs := func(extra ...AttrSpec) []AttrSpec {
		return append([]AttrSpec{nnReductionAttr(), {Name: "ignore_index", Type: AttrInt, Default: -100}}, extra...)
	}
	Register(&Def{
		Name: "nll_loss", Kind: Composite, Group: "nn",
		Doc:    "Negative log-likelihood of class-index targets from log-probabilities [N, C, d...] (or [C]), with class weights and ignore_index; mean divides by the summed weights of the non-ignored targets (F.nll_loss).",
		Inputs: []string{"input", "target", "weight?"},
		Attrs:  nllAttrs(),
		DTypes: SetFloats,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if err := nnCheckReduction("nll_loss", a.String("reduction")); err != nil {
				return nil, err
			}
			ns, err := nnNllShape("nll_loss", in)
			if err != nil {
				return nil, err
			}
			return nnReducedMeta(ns, in[0].DType, a.String("reduction")), nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			return []Value{nnNll(b, in[0], in[1], in[2], a.Int("ignore_index"), a.String("reduction"))}
		},
	})
	Register(&Def{
		Name: "cross_entropy", Kind: Composite, Group: "nn",
		Doc:    "Cross-entropy of logits [N, C, d...] (or [C]) against class indices or class probabilities (same shape as input), with class weights, ignore_index and label_smoothing (F.cross_entropy).",
		Inputs: []string{"input", "target", "weight?"},
		Attrs:  nllAttrs(AttrSpec{Name: "label_smoothing", Type: AttrFloat, Default: 0.0}),
		DTypes: SetFloats,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if err := nnCheckReduction("cross_entropy", a.String("reduction")); err != nil {
				return nil, err
			}
			if ls := a.Float("label_smoothing"); ls < 0 || ls > 1 {
				return nil, fmt.Errorf("cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: %v", ls)
			}
			x, t := in[0], in[1]
			if t.DType.IsFloat() {
				if !slices.Equal(x.Shape, t.Shape) {
					return nil, fmt.Errorf("cross_entropy: Expected input batch_size and target batch_size to match; probability targets must have the input's shape %v, got %v", x.Shape, t.Shape)
				}
				if t.DType != x.DType {
					return nil, fmt.Errorf("cross_entropy: Expected floating point type for target with class probabilities, got %s (input is %s)", t.DType, x.DType)
				}
				ns := slices.Clone(x.Shape)
				if len(ns) > 1 {
					ns = append(ns[:1], ns[2:]...)
				} else {
					ns = []int{}
				}
				if w := in[2]; w.DType != dtype.Invalid && (len(w.Shape) != 1 || w.Shape[0] != x.Shape[min(1, len(x.Shape)-1)]) {
					return nil, fmt.Errorf("cross_entropy: weight tensor should be defined either for all classes or no classes but got weight tensor of shape: %v", w.Shape)
				}
				return nnReducedMeta(ns, x.DType, a.String("reduction")), nil
			}
			ns, err := nnNllShape("cross_entropy", in)
			if err != nil {
				return nil, err
			}
			return nnReducedMeta(ns, x.DType, a.String("reduction")), nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			x, t, w := in[0], in[1], in[2]
			xm := b.Meta(x)
			cdim := min(1, len(xm.Shape)-1)
			c := xm.Shape[cdim]
			ls := a.Float("label_smoothing")
			red := a.String("reduction")
			logp := nnCall(b, "log_softmax", Attrs{"dim": cdim}, x)
			ws := nnChannelShape(c, len(xm.Shape))
			if cdim == 0 {
				ws = []int{c}
			}
			if b.Meta(t).DType.IsFloat() {
				if ls > 0 {
					t = nnCall(b, "add", nil, nnCall(b, "mul", nil, t, b.Scalar(1-ls, t)), b.Scalar(ls/float64(c), t))
				}
				prod := nnCall(b, "mul", nil, logp, t)
				if w != nil {
					prod = nnCall(b, "mul", nil, prod, nnReshape(b, w, ws))
				}
				loss := nnCall(b, "neg", nil, nnCall(b, "sum", Attrs{"dims": []int{cdim}}, prod))
				if red == "mean" && len(xm.Shape) > 1 {
					n := Numel(xm.Shape) / max(c, 1)
					s := nnCall(b, "sum", Attrs{"dims": []int{}}, loss)
					return []Value{nnCall(b, "div", nil, s, b.Scalar(float64(n), s))}
				}
				return []Value{nnReduce(b, loss, red)}
			}
			ig := a.Int("ignore_index")
			l := nnNll(b, logp, t, w, ig, red)
			if ls == 0 {
				return []Value{l}
			}
			// Label smoothing with class indices: (1-ls)*nll + ls/C * smooth,
			// smooth = -sum_c(logp_c * w_c), 0 at ignored targets.
			sp := logp
			if w != nil {
				sp = nnCall(b, "mul", nil, sp, nnReshape(b, w, ws))
			}
			smooth := nnCall(b, "neg", nil, nnCall(b, "sum", Attrs{"dims": []int{cdim}}, sp))
			keep := nnCall(b, "ne", nil, t, b.Scalar(int64(ig), t))
			smooth = nnCall(b, "where", nil, keep, smooth, b.Scalar(0.0, smooth))
			switch red {
			case "sum":
				smooth = nnCall(b, "sum", Attrs{"dims": []int{}}, smooth)
			case "mean":
				var den Value
				if w != nil {
					den = nnCall(b, "sum", Attrs{"dims": []int{}}, nnTargetWeights(b, t, w, ig))
				} else {
					den = nnCall(b, "sum", Attrs{"dims": []int{}}, keep)
				}
				s := nnCall(b, "sum", Attrs{"dims": []int{}}, smooth)
				smooth = nnCall(b, "div", nil, s, nnConvert(b, den, b.Meta(s).DType))
			}
			return []Value{nnCall(b, "add", nil, nnCall(b, "mul", nil, l, b.Scalar(1-ls, l)), nnCall(b, "mul", nil, smooth, b.Scalar(ls/float64(c), smooth)))}
		},
	})
}

// nnNllShape checks nll_loss/cross_entropy class-index shapes and returns the
// unreduced loss shape.
func nnNllShape(name string, in []Meta) ([]int, error) {
	x, t := in[0], in[1]
	if t.DType != dtype.I64 && t.DType != dtype.I32 && t.DType != dtype.U8 && t.DType != dtype.I16 && t.DType != dtype.I8 {
		return nil, fmt.Errorf("%s: expected scalar type Long but found %s for the target", name, t.DType.TorchName())
	}
	r := len(x.Shape)
	if r == 0 {
		return nil, fmt.Errorf("%s: input tensor should be 1D or more, got 0-d", name)
	}
	var want []int
	if r == 1 {
		want = []int{}
	} else {
		want = append([]int{x.Shape[0]}, x.Shape[2:]...)
	}
	if !slices.Equal(t.Shape, want) {
		if r >= 2 && (len(t.Shape) == 0 || t.Shape[0] != x.Shape[0]) {
			return nil, fmt.Errorf("%s: Expected input batch_size (%d) to match target batch_size (%d).", name, x.Shape[0], nnFirstOr(t.Shape))
		}
		return nil, fmt.Errorf("%s: expected target of shape %v for input of shape %v, got %v", name, want, x.Shape, t.Shape)
	}
	c := x.Shape[min(1, r-1)]
	if w := in[2]; w.DType != dtype.Invalid && (len(w.Shape) != 1 || w.Shape[0] != c) {
		return nil, fmt.Errorf("%s: weight tensor should be defined either for all %d classes or no classes but got weight tensor of shape: %v", name, c, w.Shape)
	}
	return want, nil
}

func nnFirstOr(s []int) int {
	if len(s) == 0 {
		return 0
	}
	return s[0]
}

// nnTargetWeights returns weight[target] (1 without weights) with 0 at
// ignored targets, in the weight's (or f32) dtype... as a float tensor.
func nnTargetWeights(b Builder, t, w Value, ignore int) Value {
	keep := nnCall(b, "ne", nil, t, b.Scalar(int64(ignore), t))
	safe := nnCall(b, "where", nil, keep, t, b.Scalar(int64(0), t))
	tm := b.Meta(t)
	flat := nnReshape(b, safe, []int{Numel(tm.Shape)})
	wt := nnReshape(b, nnCall(b, "index_select", Attrs{"dim": 0}, w, flat), tm.Shape)
	return nnCall(b, "mul", nil, wt, nnConvert(b, keep, b.Meta(w).DType))
}

// nnNll computes nll_loss of log-probabilities x against class indices t.
func nnNll(b Builder, x, t, w Value, ignore int, reduction string) Value {
	xm, tm := b.Meta(x), b.Meta(t)
	cdim := min(1, len(xm.Shape)-1)
	keep := nnCall(b, "ne", nil, t, b.Scalar(int64(ignore), t))
	safe := nnConvert(b, nnCall(b, "where", nil, keep, t, b.Scalar(int64(0), t)), dtype.I64)
	picked := nnCall(b, "gather", Attrs{"dim": cdim}, x, nnCall(b, "unsqueeze", Attrs{"dim": cdim}, safe))
	picked = nnReshape(b, picked, tm.Shape)
	var wt Value
	if w != nil {
		wt = nnTargetWeights(b, t, w, ignore)
	} else {
		wt = nnConvert(b, keep, xm.DType)
	}
	loss := nnCall(b, "neg", nil, nnCall(b, "mul", nil, picked, wt))
	switch reduction {
	case "sum":
		return nnCall(b, "sum", Attrs{"dims": []int{}}, loss)
	case "mean":
		s := nnCall(b, "sum", Attrs{"dims": []int{}}, loss)
		return nnCall(b, "div", nil, s, nnCall(b, "sum", Attrs{"dims": []int{}}, wt))
	}
	return loss
}

func nnRegisterAttention() {
	Register(&Def{
		Name: "scaled_dot_product_attention", Kind: Composite, Group: "nn", Random: true, MatmulInside: true,
		DrawsWhen: func(a Attrs) bool { return a.Float("dropout_p") > 0 },
		Doc: "softmax(q kᵀ * scale + mask) v over [..., L, E] queries and [..., S, E] keys (F.scaled_dot_product_attention): attn_mask bool (true attends) or float (added); is_causal masks j > i; " +
			"scale defaults to 1/sqrt(E); enable_gqa repeats k and v heads (dim -3) to q's; dropout_p drops attention weights (counters per output element, see random_bits period).",
		Inputs: []string{"query", "key", "value", "attn_mask?"},
		Attrs: append([]AttrSpec{{Name: "dropout_p", Type: AttrFloat, Default: 0.0}, {Name: "is_causal", Type: AttrBool, Default: false},
			{Name: "scale", Type: AttrFloat, Optional: true}, {Name: "enable_gqa", Type: AttrBool, Default: false}}, randomAttrs...),
		Promote: PromoteCommon, PromoteArgs: []int{0, 1, 2}, DTypes: SetFloats,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			q, k, v := in[0], in[1], in[2]
			if len(q.Shape) < 2 || len(k.Shape) < 2 || len(v.Shape) < 2 {
				return nil, fmt.Errorf("scaled_dot_product_attention: query, key and value must have at least 2 dims, got %v, %v, %v", q.Shape, k.Shape, v.Shape)
			}
			rq, rk, rv := len(q.Shape), len(k.Shape), len(v.Shape)
			if q.Shape[rq-1] != k.Shape[rk-1] || k.Shape[rk-2] != v.Shape[rv-2] {
				return nil, fmt.Errorf("scaled_dot_product_attention: shapes query %v, key %v, value %v do not fit [..., L, E], [..., S, E], [..., S, Ev]", q.Shape, k.Shape, v.Shape)
			}
			kb, vb := nnSdpaHeads(a, q.Shape, k.Shape), nnSdpaHeads(a, q.Shape, v.Shape)
			if kb == nil || vb == nil {
				return nil, fmt.Errorf("scaled_dot_product_attention: number of heads in key/value (%v, %v) must divide the number of heads in query %v (with enable_gqa)", k.Shape, v.Shape, q.Shape)
			}
			batch, err := BroadcastShapes("scaled_dot_product_attention", q.Shape[:rq-2], kb[:len(kb)-2], vb[:len(vb)-2])
			if err != nil {
				return nil, err
			}
			if p := a.Float("dropout_p"); p < 0 || p > 1 {
				return nil, fmt.Errorf("scaled_dot_product_attention: dropout_p must be in [0, 1], got %v", p)
			}
			l, s := q.Shape[rq-2], k.Shape[rk-2]
			if m := in[3]; m.DType != dtype.Invalid {
				if m.DType != dtype.Bool && !m.DType.IsFloat() {
					return nil, fmt.Errorf("scaled_dot_product_attention: attn_mask must be bool or float, got %s", m.DType)
				}
				if _, err := BroadcastShapes("scaled_dot_product_attention", m.Shape, append(slices.Clone(batch), l, s)); err != nil {
					return nil, err
				}
			}
			return []Meta{{Shape: append(batch, l, v.Shape[rv-1]), DType: q.DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			q, k, v, mask := in[0], in[1], in[2], in[3]
			qm := b.Meta(q)
			rq := len(qm.Shape)
			e := qm.Shape[rq-1]
			if a.Bool("enable_gqa") && rq >= 3 {
				k, v = nnGqaRepeat(b, k, qm.Shape[rq-3]), nnGqaRepeat(b, v, qm.Shape[rq-3])
			}
			scale := 1 / math.Sqrt(float64(e))
			if a.Has("scale") {
				scale = a.Float("scale")
			}
			km := b.Meta(k)
			s := nnCall(b, "matmul", nil, q, nnCall(b, "transpose", Attrs{"dim0": -2, "dim1": -1}, k))
			s = nnCall(b, "mul", nil, s, b.Scalar(scale, s))
			l, sk := qm.Shape[rq-2], km.Shape[len(km.Shape)-2]
			neginf := b.Scalar(math.Inf(-1), s)
			if a.Bool("is_causal") {
				causal := nnCall(b, "tril", Attrs{"diagonal": 0}, nnCall(b, "full", Attrs{"shape": []int{l, sk}, "value": true, "dtype": dtype.Bool}))
				s = nnCall(b, "where", nil, causal, s, neginf)
			}
			if mask != nil {
				if b.Meta(mask).DType == dtype.Bool {
					s = nnCall(b, "where", nil, mask, s, neginf)
				} else {
					s = nnCall(b, "add", nil, s, mask)
				}
			}
			p := nnCall(b, "softmax", Attrs{"dim": -1}, s)
			if dp := a.Float("dropout_p"); dp > 0 {
				pm := b.Meta(p)
				ev := b.Meta(v).Shape[len(b.Meta(v).Shape)-1]
				if dp == 1 {
					p = nnCall(b, "mul", nil, p, b.Scalar(0.0, p))
				} else {
					bits := nnCall(b, "random_bits", Attrs{"shape": pm.Shape, "dtype": dtype.I64, "period": max(ev, 1), "seed": a["seed"], "offset": a["offset"]})
					u := nnCall(b, "convert", Attrs{"dtype": dtype.F64}, nnCall(b, "bitwise_and", nil, bits, b.Scalar(int64(1)<<53-1, bits)))
					u = nnCall(b, "mul", nil, u, b.Scalar(math.Ldexp(1, -53), u))
					keep := nnConvert(b, nnCall(b, "lt", nil, u, b.Scalar(1-dp, u)), pm.DType)
					p = nnCall(b, "mul", nil, p, nnCall(b, "div", nil, keep, b.Scalar(1-dp, keep)))
				}
			}
			return []Value{nnCall(b, "matmul", nil, p, v)}
		},
	})
}

// nnRegisterPagedAttention declares paged_attention: attention whose keys
// and values live in a pool of fixed-size blocks, read through per-sequence
// block tables (vLLM's PagedAttention).
func nnRegisterPagedAttention() {
	Register(&Def{
		Name: "paged_attention", Kind: Composite, Group: "nn", MatmulInside: true,
		Doc: "Returns attention of query [B, H, T, E] over keys and values kept in blocks (vLLM's PagedAttention): " +
			"key_cache [N, P, Hkv, E] and value_cache [N, P, Hkv, Ev] hold N blocks of P slots; row b of block_table [B, M] (integer, values in [0, N)) " +
			"names the blocks of sequence b in order, so its key j is key_cache[block_table[b, j/P], j%P]; " +
			"equals scaled_dot_product_attention(query, K, V, attn_mask, scale, enable_gqa) with K, V the gathered [B, Hkv, M·P, E] tensors; " +
			"attn_mask is bool (true attends) or float (added), broadcast to [B, H, T, M·P]; Hkv must divide H; scale defaults to 1/sqrt(E).",
		Inputs:  []string{"query", "key_cache", "value_cache", "block_table", "attn_mask?"},
		Attrs:   []AttrSpec{{Name: "scale", Type: AttrFloat, Optional: true}},
		Promote: PromoteCommon, PromoteArgs: []int{0, 1, 2}, DTypes: SetFloats,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			q, k, v, t := in[0], in[1], in[2], in[3]
			if len(q.Shape) != 4 || len(k.Shape) != 4 || len(v.Shape) != 4 {
				return nil, fmt.Errorf("paged_attention: query [B, H, T, E], key_cache [N, P, Hkv, E] and value_cache [N, P, Hkv, Ev] must have 4 dims, got %v, %v, %v", q.Shape, k.Shape, v.Shape)
			}
			if !slices.Equal(k.Shape[:3], v.Shape[:3]) || k.Shape[3] != q.Shape[3] {
				return nil, fmt.Errorf("paged_attention: shapes query %v, key_cache %v, value_cache %v do not fit [B, H, T, E], [N, P, Hkv, E], [N, P, Hkv, Ev]", q.Shape, k.Shape, v.Shape)
			}
			if hkv := k.Shape[2]; hkv == 0 || q.Shape[1]%hkv != 0 {
				return nil, fmt.Errorf("paged_attention: the cache's %d key/value heads must divide the query's %d heads", k.Shape[2], q.Shape[1])
			}
			if !t.DType.IsInt() || len(t.Shape) != 2 || t.Shape[0] != q.Shape[0] {
				return nil, fmt.Errorf("paged_attention: block_table must be an integer [B, M] tensor with B = %d, got %s %v", q.Shape[0], t.DType, t.Shape)
			}
			s := t.Shape[1] * k.Shape[1]
			if m := in[4]; m.DType != dtype.Invalid {
				if m.DType != dtype.Bool && !m.DType.IsFloat() {
					return nil, fmt.Errorf("paged_attention: attn_mask must be bool or float, got %s", m.DType)
				}
				if _, err := BroadcastShapes("paged_attention", m.Shape, []int{q.Shape[0], q.Shape[1], q.Shape[2], s}); err != nil {
					return nil, err
				}
			}
			return []Meta{{Shape: []int{q.Shape[0], q.Shape[1], q.Shape[2], v.Shape[3]}, DType: q.DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			q, kc, vc, t, mask := in[0], in[1], in[2], in[3], in[4]
			qm, km, tm := b.Meta(q), b.Meta(kc), b.Meta(t)
			nb, m := tm.Shape[0], tm.Shape[1]
			idx := nnReshape(b, t, []int{nb * m})
			gather := func(c Value) Value {
				cm := b.Meta(c)
				x := nnCall(b, "index_select", Attrs{"dim": 0}, c, idx) // [B·M, P, Hkv, E]
				x = nnReshape(b, x, []int{nb, m * cm.Shape[1], cm.Shape[2], cm.Shape[3]})
				return nnCall(b, "transpose", Attrs{"dim0": 1, "dim1": 2}, x) // [B, Hkv, M·P, E]
			}
			sa := Attrs{"enable_gqa": km.Shape[2] != qm.Shape[1]}
			if a.Has("scale") {
				sa["scale"] = a.Float("scale")
			}
			return b.Call("scaled_dot_product_attention", []Value{q, gather(kc), gather(vc), mask}, sa)
		},
	})
}

// nnSdpaHeads returns k's shape with its head dim (-3) repeated to q's when
// enable_gqa is set (nil if the heads do not divide).
func nnSdpaHeads(a Attrs, q, k []int) []int {
	k = slices.Clone(k)
	if !a.Bool("enable_gqa") || len(q) < 3 || len(k) < 3 {
		return k
	}
	hq, hk := q[len(q)-3], k[len(k)-3]
	if hk == 0 || hq%hk != 0 {
		return nil
	}
	k[len(k)-3] = hq
	return k
}

// nnGqaRepeat repeats each head of x (dim -3) to reach hq heads.
func nnGqaRepeat(b Builder, x Value, hq int) Value {
	m := b.Meta(x)
	r := len(m.Shape)
	hk := m.Shape[r-3]
	if hk == hq {
		return x
	}
	return b.Call("repeat_interleave", []Value{x, nil}, Attrs{"repeats": hq / hk, "dim": r - 3})[0]
}
