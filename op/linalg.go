package op

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gotpu/gotpu/dtype"
)

// Linear algebra: the dot_general primitive (StableHLO's batched
// contraction with a precision) and the PyTorch matrix products built on it.

// Matmul precisions, as torch.set_float32_matmul_precision and StableHLO's
// DEFAULT / HIGH / HIGHEST. The empty string means the device default.
const (
	PrecisionDefault = ""
	PrecisionHighest = "highest" // full f32 (f64 for f64) accumulation
	PrecisionHigh    = "high"    // three bf16 passes: hi*hi + hi*lo + lo*hi, sums in f32
	PrecisionMedium  = "medium"  // one bf16 pass: inputs rounded to bf16, exact products, sums in f32
)

// On the CPU at level avx512bf16 the bf16 passes (and bf16 tensors'
// products with more than one row and column) run on VDPBF16PS: the same
// f32 FMA chain over k, but denormal bf16 inputs read as zero and denormal
// partial sums flush to zero (backend/cpu/linalg.go). At level amx they
// run on the AMX tiles: per chunk of 32 k steps, two f32 chains (even and
// odd steps) summed and added to the accumulator, with the same denormal
// rules — deterministic, but not the k-ordered chain (backend/cpu/amx.go).

// CheckPrecision returns an error unless p is a known matmul precision.
func CheckPrecision(name, p string) error {
	switch p {
	case PrecisionDefault, PrecisionHighest, PrecisionHigh, PrecisionMedium:
		return nil
	}
	return fmt.Errorf("%s: unknown precision %q (want \"highest\", \"high\", \"medium\" or \"\" for the device default)", name, p)
}

// laTorchType is PyTorch's C++ scalar type name, used in error messages
// that PyTorch users recognise ("expected scalar type Float but found Double").
func laTorchType(d dtype.DType) string {
	switch d {
	case dtype.F32:
		return "Float"
	case dtype.F64:
		return "Double"
	case dtype.F16:
		return "Half"
	case dtype.BF16:
		return "BFloat16"
	case dtype.I64:
		return "Long"
	case dtype.I32:
		return "Int"
	case dtype.I16:
		return "Short"
	case dtype.I8:
		return "Char"
	case dtype.U8:
		return "Byte"
	case dtype.Bool:
		return "Bool"
	}
	return d.String()
}

// laSameDType returns PyTorch's error for matrix products of different dtypes.
func laSameDType(name string, ms ...Meta) error {
	var first dtype.DType
	for _, m := range ms {
		if m.DType == dtype.Invalid {
			continue
		}
		if first == dtype.Invalid {
			first = m.DType
			continue
		}
		if m.DType != first {
			return fmt.Errorf("%s: expected scalar type %s but found %s", name, laTorchType(first), laTorchType(m.DType))
		}
	}
	return nil
}

// DotDims is a resolved dot_general: the batch and contracting axes of both
// operands (non-negative, in order) and their free axes (in order). The
// result's axes are the batch axes, then lhs free, then rhs free.
type DotDims struct {
	LhsBatch, RhsBatch, LhsContract, RhsContract []int
	LhsFree, RhsFree                             []int
	Shape                                        []int // result shape
}

// ResolveDotGeneral checks a dot_general's dimension numbers against the
// operand shapes and returns the resolved axes and the result shape.
func ResolveDotGeneral(lshape, rshape []int, lb, rb, lc, rc []int) (DotDims, error) {
	const name = "dot_general"
	var d DotDims
	if len(lb) != len(rb) {
		return d, fmt.Errorf("%s: lhs has %d batch dimensions %v, rhs %d %v", name, len(lb), lb, len(rb), rb)
	}
	if len(lc) != len(rc) {
		return d, fmt.Errorf("%s: lhs has %d contracting dimensions %v, rhs %d %v", name, len(lc), lc, len(rc), rc)
	}
	norm := func(side string, axes []int, rank int, used []bool) ([]int, error) {
		out := make([]int, len(axes))
		for i, ax := range axes {
			if ax < -rank || ax >= rank {
				return nil, fmt.Errorf("%s: %s dimension %d out of range for rank %d", name, side, ax, rank)
			}
			if ax < 0 {
				ax += rank
			}
			if used[ax] {
				return nil, fmt.Errorf("%s: %s dimension %d used twice", name, side, ax)
			}
			used[ax] = true
			out[i] = ax
		}
		return out, nil
	}
	lu, ru := make([]bool, len(lshape)), make([]bool, len(rshape))
	var err error
	if d.LhsBatch, err = norm("lhs batch", lb, len(lshape), lu); err != nil {
		return d, err
	}
	if d.RhsBatch, err = norm("rhs batch", rb, len(rshape), ru); err != nil {
		return d, err
	}
	if d.LhsContract, err = norm("lhs contracting", lc, len(lshape), lu); err != nil {
		return d, err
	}
	if d.RhsContract, err = norm("rhs contracting", rc, len(rshape), ru); err != nil {
		return d, err
	}
	for i := range d.LhsBatch {
		if a, b := lshape[d.LhsBatch[i]], rshape[d.RhsBatch[i]]; a != b {
			return d, fmt.Errorf("%s: batch dimension sizes differ: lhs dim %d has size %d, rhs dim %d has size %d (shapes %v and %v)", name, d.LhsBatch[i], a, d.RhsBatch[i], b, lshape, rshape)
		}
		d.Shape = append(d.Shape, lshape[d.LhsBatch[i]])
	}
	for i := range d.LhsContract {
		if a, b := lshape[d.LhsContract[i]], rshape[d.RhsContract[i]]; a != b {
			return d, fmt.Errorf("%s: contracting dimension sizes differ: lhs dim %d has size %d, rhs dim %d has size %d (shapes %v and %v)", name, d.LhsContract[i], a, d.RhsContract[i], b, lshape, rshape)
		}
	}
	d.LhsFree, d.RhsFree = []int{}, []int{}
	for i, u := range lu {
		if !u {
			d.LhsFree = append(d.LhsFree, i)
			d.Shape = append(d.Shape, lshape[i])
		}
	}
	for i, u := range ru {
		if !u {
			d.RhsFree = append(d.RhsFree, i)
			d.Shape = append(d.Shape, rshape[i])
		}
	}
	if d.Shape == nil {
		d.Shape = []int{}
	}
	return d, nil
}

var laPrecisionAttr = AttrSpec{Name: "precision", Type: AttrString, Default: PrecisionDefault}

func laScalarAttr(name string) AttrSpec {
	return AttrSpec{Name: name, Type: AttrScalar, Default: int64(1)}
}

// laDimsX renders a 2-d shape as PyTorch does in mm errors: "2x3".
func laDimsX(s []int) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return strings.Join(parts, "x")
}

func laMMShapeError(name string, a, b []int) error {
	return fmt.Errorf("%s: mat1 and mat2 shapes cannot be multiplied (%s and %s)", name, laDimsX(a), laDimsX(b))
}

// laDot applies dot_general through b.
func laDot(b Builder, x, y Value, lb, rb, lc, rc []int, prec any) Value {
	return Call1(b, "dot_general", Attrs{"lhs_batch": lb, "rhs_batch": rb, "lhs_contract": lc, "rhs_contract": rc, "precision": prec}, x, y)
}

func laReshape(b Builder, x Value, shape []int) Value {
	if slices.Equal(b.Meta(x).Shape, shape) {
		return x
	}
	return Call1(b, "reshape", Attrs{"shape": slices.Clone(shape)}, x)
}

func laExpand(b Builder, x Value, shape []int) Value {
	if slices.Equal(b.Meta(x).Shape, shape) {
		return x
	}
	return Call1(b, "expand", Attrs{"shape": slices.Clone(shape)}, x)
}

func laPermute(b Builder, x Value, perm []int) Value {
	ident := true
	for i, p := range perm {
		if p != i {
			ident = false
		}
	}
	if ident {
		return x
	}
	return Call1(b, "permute", Attrs{"dims": slices.Clone(perm)}, x)
}

func laIota(lo, hi int) []int {
	out := make([]int, 0, hi-lo)
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}

// laMatmulShape is torch.matmul's shape rule with PyTorch's error messages.
func laMatmulShape(name string, a, b []int) ([]int, error) {
	da, db := len(a), len(b)
	switch {
	case da == 0 || db == 0:
		return nil, fmt.Errorf("%s: both arguments to matmul need to be at least 1D, but they are %dD and %dD", name, da, db)
	case da == 1 && db == 1:
		if a[0] != b[0] {
			return nil, fmt.Errorf("%s: inconsistent tensor size, expected tensor [%d] and src [%d] to have the same number of elements, but got %d and %d elements respectively", name, a[0], b[0], a[0], b[0])
		}
		return []int{}, nil
	case da == 2 && db == 1:
		if a[1] != b[0] {
			return nil, fmt.Errorf("%s: size mismatch, got %d, %dx%d,%d", name, a[0], a[0], a[1], b[0])
		}
		return []int{a[0]}, nil
	case da == 1 && db == 2:
		if a[0] != b[0] {
			return nil, laMMShapeError(name, []int{1, a[0]}, b)
		}
		return []int{b[1]}, nil
	case da == 2 && db == 2:
		if a[1] != b[0] {
			return nil, laMMShapeError(name, a, b)
		}
		return []int{a[0], b[1]}, nil
	case da >= 3 && db <= 2:
		k := a[da-1]
		rows := Numel(a[:da-1])
		mb := b
		if db == 1 {
			mb = []int{b[0], 1}
		}
		if k != mb[0] {
			return nil, laMMShapeError(name, []int{rows, k}, mb)
		}
		out := slices.Clone(a[:da-1])
		if db == 2 {
			out = append(out, b[1])
		}
		return out, nil
	}
	// Batched: broadcast the batch dimensions.
	xa, xb := a, b
	if da == 1 {
		xa = []int{1, a[0]}
	}
	if db == 1 {
		xb = []int{b[0], 1}
	}
	ba, bb := xa[:len(xa)-2], xb[:len(xb)-2]
	batch, err := laBroadcast(name, ba, bb)
	if err != nil {
		return nil, err
	}
	n, k, k2, m := xa[len(xa)-2], xa[len(xa)-1], xb[len(xb)-2], xb[len(xb)-1]
	if k != k2 {
		nb := Numel(batch)
		return nil, fmt.Errorf("%s: Expected size for first two dimensions of batch2 tensor to be: [%d, %d] but got: [%d, %d].", name, nb, k, nb, k2)
	}
	out := slices.Clone(batch)
	if da > 1 {
		out = append(out, n)
	}
	if db > 1 {
		out = append(out, m)
	}
	return out, nil
}

// laBroadcast broadcasts two shapes with PyTorch's infer_size message.
func laBroadcast(name string, a, b []int) ([]int, error) {
	n := max(len(a), len(b))
	out := make([]int, n)
	for i := n - 1; i >= 0; i-- {
		da, db := 1, 1
		if j := i - (n - len(a)); j >= 0 {
			da = a[j]
		}
		if j := i - (n - len(b)); j >= 0 {
			db = b[j]
		}
		switch {
		case da == db || db == 1:
			out[i] = da
		case da == 1:
			out[i] = db
		default:
			return nil, fmt.Errorf("%s: The size of tensor a (%d) must match the size of tensor b (%d) at non-singleton dimension %d", name, da, db, i)
		}
	}
	return out, nil
}

// laMatmul expresses torch.matmul with dot_general, reshape, expand
// and permute.
func laMatmul(b Builder, x, y Value, prec any) Value {
	a, c := b.Meta(x).Shape, b.Meta(y).Shape
	da, db := len(a), len(c)
	switch {
	case da <= 2 && db <= 2, da >= 3 && db <= 2:
		// Contract x's last axis with y's first; batch axes of x are free.
		return laDot(b, x, y, []int{}, []int{}, []int{da - 1}, []int{0}, prec)
	case da == 1:
		// x[k] @ y[..., k, m] -> y[..., m].
		return laDot(b, x, y, []int{}, []int{}, []int{0}, []int{db - 2}, prec)
	}
	xs, ys := x, y
	if db == 1 {
		ys = laReshape(b, y, []int{c[0], 1})
	}
	am, cm := b.Meta(xs).Shape, b.Meta(ys).Shape
	batch, _ := laBroadcast("matmul", am[:len(am)-2], cm[:len(cm)-2])
	nb := len(batch)
	xs = laExpand(b, xs, append(slices.Clone(batch), am[len(am)-2:]...))
	ys = laExpand(b, ys, append(slices.Clone(batch), cm[len(cm)-2:]...))
	bd := laIota(0, nb)
	out := laDot(b, xs, ys, bd, bd, []int{nb + 1}, []int{nb}, prec)
	if db == 1 {
		s := b.Meta(out).Shape
		out = laReshape(b, out, s[:len(s)-1])
	}
	return out
}

// laScale multiplies x by the scalar attribute v unless it is 1. Integer
// tensors take integer scalars (PyTorch casts alpha and beta to the dtype).
func laScale(b Builder, x Value, v any) Value {
	if laIsOne(v) {
		return x
	}
	if !b.Meta(x).DType.IsFloat() {
		if f, ok := v.(float64); ok {
			v = int64(f)
		}
	}
	return Call1(b, "mul", nil, x, b.Scalar(v, x))
}

func laIsOne(v any) bool {
	switch x := v.(type) {
	case int64:
		return x == 1
	case float64:
		return x == 1
	case bool:
		return x
	}
	return false
}

func laIsZero(v any) bool {
	switch x := v.(type) {
	case int64:
		return x == 0
	case float64:
		return x == 0
	case bool:
		return !x
	}
	return false
}

// laAddScaled returns beta*input + alpha*prod with PyTorch's addmm rules:
// beta == 0 ignores input (NaN and Inf in it do not propagate).
func laAddScaled(b Builder, input, prod Value, a Attrs) Value {
	out := laScale(b, prod, a["alpha"])
	if laIsZero(a["beta"]) {
		return out
	}
	in := laScale(b, input, a["beta"])
	return Call1(b, "add", nil, in, out)
}

func laBroadcastsTo(name string, in, to []int) error {
	if _, ok := (Layout{Shape: in, Strides: make([]int, len(in))}).BroadcastTo(to); !ok {
		return fmt.Errorf("%s: The expanded size of the tensor (%v) must match the existing size (%v): input of shape %v does not broadcast to %v", name, to, in, in, to)
	}
	return nil
}

func init() {
	Register(&Def{
		Name: "dot_general", Kind: Primitive, Group: "linalg",
		Doc:    "Batched tensor contraction (StableHLO dot_general): result axes are the batch axes, then lhs free axes, then rhs free axes; precision selects highest/high/medium (bf16 passes) for f32.",
		Inputs: []string{"lhs", "rhs"},
		Attrs: []AttrSpec{
			{Name: "lhs_batch", Type: AttrInts, Default: []int{}}, {Name: "rhs_batch", Type: AttrInts, Default: []int{}},
			{Name: "lhs_contract", Type: AttrInts, Default: []int{}}, {Name: "rhs_contract", Type: AttrInts, Default: []int{}},
			laPrecisionAttr,
		},
		DTypes: SetNumeric,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if err := laSameDType("dot_general", in...); err != nil {
				return nil, err
			}
			if err := CheckPrecision("dot_general", a.String("precision")); err != nil {
				return nil, err
			}
			d, err := ResolveDotGeneral(in[0].Shape, in[1].Shape, a.Ints("lhs_batch"), a.Ints("rhs_batch"), a.Ints("lhs_contract"), a.Ints("rhs_contract"))
			if err != nil {
				return nil, err
			}
			return []Meta{{Shape: d.Shape, DType: in[0].DType}}, nil
		},
	})
	Register(&Def{
		Name: "matmul", Kind: Composite, Group: "linalg",
		Doc:    "Returns the matrix product with torch.matmul semantics: 1-d operands are vectors, batch dimensions broadcast.",
		Inputs: []string{"input", "other"},
		Attrs:  []AttrSpec{laPrecisionAttr},
		DTypes: SetNumeric,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if err := laSameDType("matmul", in...); err != nil {
				return nil, err
			}
			s, err := laMatmulShape("matmul", in[0].Shape, in[1].Shape)
			if err != nil {
				return nil, err
			}
			return []Meta{{Shape: s, DType: in[0].DType}}, CheckPrecision("matmul", a.String("precision"))
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			return []Value{laMatmul(b, in[0], in[1], a["precision"])}
		},
	})
	Register(&Def{
		Name: "mm", Kind: Composite, Group: "linalg",
		Doc:    "Returns the product of two 2-d matrices (torch.mm).",
		Inputs: []string{"input", "mat2"},
		Attrs:  []AttrSpec{laPrecisionAttr},
		DTypes: SetNumeric,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			return laMMInfer("mm", in[0], in[1])
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			return []Value{laDot(b, in[0], in[1], []int{}, []int{}, []int{1}, []int{0}, a["precision"])}
		},
	})
	Register(&Def{
		Name: "bmm", Kind: Composite, Group: "linalg",
		Doc:    "Returns the batched product of 3-d tensors [b,n,k] x [b,k,m] (torch.bmm).",
		Inputs: []string{"input", "mat2"},
		Attrs:  []AttrSpec{laPrecisionAttr},
		DTypes: SetNumeric,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			return laBMMInfer("bmm", in[0], in[1])
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			return []Value{laDot(b, in[0], in[1], []int{0}, []int{0}, []int{2}, []int{1}, a["precision"])}
		},
	})
	Register(&Def{
		Name: "addmm", Kind: Composite, Group: "linalg",
		Doc:    "Returns beta*input + alpha*(mat1 @ mat2) for 2-d mat1, mat2; input broadcasts (torch.addmm).",
		Inputs: []string{"input", "mat1", "mat2"},
		Attrs:  []AttrSpec{laScalarAttr("beta"), laScalarAttr("alpha"), laPrecisionAttr},
		DTypes: SetNumeric,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if err := laSameDType("addmm", in...); err != nil {
				return nil, err
			}
			out, err := laMMInfer("addmm", in[1], in[2])
			if err != nil {
				return nil, err
			}
			return out, laBroadcastsTo("addmm", in[0].Shape, out[0].Shape)
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			p := laDot(b, in[1], in[2], []int{}, []int{}, []int{1}, []int{0}, a["precision"])
			return []Value{laAddScaled(b, in[0], p, a)}
		},
	})
	Register(&Def{
		Name: "baddbmm", Kind: Composite, Group: "linalg",
		Doc:    "Returns beta*input + alpha*bmm(batch1, batch2); input broadcasts (torch.baddbmm).",
		Inputs: []string{"input", "batch1", "batch2"},
		Attrs:  []AttrSpec{laScalarAttr("beta"), laScalarAttr("alpha"), laPrecisionAttr},
		DTypes: SetNumeric,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if err := laSameDType("baddbmm", in...); err != nil {
				return nil, err
			}
			out, err := laBMMInfer("baddbmm", in[1], in[2])
			if err != nil {
				return nil, err
			}
			return out, laBroadcastsTo("baddbmm", in[0].Shape, out[0].Shape)
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			p := laDot(b, in[1], in[2], []int{0}, []int{0}, []int{2}, []int{1}, a["precision"])
			return []Value{laAddScaled(b, in[0], p, a)}
		},
	})
	Register(&Def{
		Name: "linear", Kind: Composite, Group: "linalg",
		Doc:    "Returns input @ weight.T + bias (torch.nn.functional.linear); weight is [out, in] or [in].",
		Inputs: []string{"input", "weight", "bias?"},
		Attrs:  []AttrSpec{laPrecisionAttr},
		DTypes: SetNumeric,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if err := laSameDType("linear", in...); err != nil {
				return nil, err
			}
			w := in[1].Shape
			if len(w) > 2 || len(w) == 0 {
				return nil, fmt.Errorf("linear: weight must be 1-D or 2-D, got %d-D", len(w))
			}
			wt := w
			if len(w) == 2 {
				wt = []int{w[1], w[0]}
			}
			x := in[0].Shape
			s, err := laMatmulShape("linear", x, wt)
			if err != nil && len(x) >= 1 && len(w) == 2 && x[len(x)-1] != w[1] {
				err = laMMShapeError("linear", []int{Numel(x[:len(x)-1]), x[len(x)-1]}, wt)
			}
			if err != nil {
				return nil, err
			}
			if in[2].DType != dtype.Invalid {
				if err := laBroadcastsTo("linear", in[2].Shape, s); err != nil {
					return nil, err
				}
			}
			return []Meta{{Shape: s, DType: in[0].DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			x, w := in[0], in[1]
			xs := b.Meta(x).Shape
			wc := 0
			if len(b.Meta(w).Shape) == 2 {
				wc = 1
			}
			out := laDot(b, x, w, []int{}, []int{}, []int{len(xs) - 1}, []int{wc}, a["precision"])
			if in[2] != nil {
				out = Call1(b, "add", nil, out, in[2])
			}
			return []Value{out}
		},
	})
	vecDot := func(name, doc string) {
		Register(&Def{
			Name: name, Kind: Composite, Group: "linalg",
			Doc:    doc,
			Inputs: []string{"input", "other"},
			Attrs:  []AttrSpec{laPrecisionAttr},
			DTypes: SetNumeric,
			Infer: func(in []Meta, a Attrs) ([]Meta, error) {
				x, y := in[0].Shape, in[1].Shape
				if len(x) != 1 || len(y) != 1 {
					return nil, fmt.Errorf("%s: 1D tensors expected, but got %dD and %dD tensors", name, len(x), len(y))
				}
				if x[0] != y[0] {
					return nil, fmt.Errorf("%s: inconsistent tensor size, expected tensor [%d] and src [%d] to have the same number of elements, but got %d and %d elements respectively", name, x[0], y[0], x[0], y[0])
				}
				if err := laSameDType(name, in...); err != nil {
					return nil, err
				}
				return []Meta{{Shape: []int{}, DType: in[0].DType}}, nil
			},
			Decompose: func(b Builder, in []Value, a Attrs) []Value {
				return []Value{laDot(b, in[0], in[1], []int{}, []int{}, []int{0}, []int{0}, a["precision"])}
			},
		})
	}
	vecDot("dot", "Returns the inner product of two 1-d tensors as a 0-d tensor (torch.dot).")
	vecDot("vdot", "Returns the inner product of two 1-d tensors, conjugating the first (torch.vdot; real dtypes only, so equal to dot).")
	Register(&Def{
		Name: "outer", Kind: Composite, Group: "linalg",
		Doc:     "Returns the outer product of two 1-d tensors (torch.outer), with type promotion.",
		Inputs:  []string{"input", "vec2"},
		Promote: PromoteCommon,
		DTypes:  SetAll,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			x, y := in[0].Shape, in[1].Shape
			if len(x) != 1 {
				return nil, fmt.Errorf("outer: Expected 1-D argument self, but got %d-D", len(x))
			}
			if len(y) != 1 {
				return nil, fmt.Errorf("outer: Expected 1-D argument vec2, but got %d-D", len(y))
			}
			return []Meta{{Shape: []int{x[0], y[0]}, DType: in[0].DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			x := b.Meta(in[0]).Shape
			return []Value{Call1(b, "mul", nil, laReshape(b, in[0], []int{x[0], 1}), in[1])}
		},
	})
	Register(&Def{
		Name: "tensordot", Kind: Composite, Group: "linalg",
		Doc:    "Contracts dims_a of a with dims_b of b (torch.tensordot); result is a's free axes then b's.",
		Inputs: []string{"a", "b"},
		Attrs:  []AttrSpec{{Name: "dims_a", Type: AttrInts}, {Name: "dims_b", Type: AttrInts}, laPrecisionAttr},
		DTypes: SetNumeric,
		Infer: func(in []Meta, a Attrs) ([]Meta, error) {
			if err := laSameDType("tensordot", in...); err != nil {
				return nil, err
			}
			da, db := a.Ints("dims_a"), a.Ints("dims_b")
			if len(da) != len(db) {
				return nil, fmt.Errorf("tensordot: both dimension lists should have same length, got %v and %v", da, db)
			}
			for i := range da {
				ra, rb := len(in[0].Shape), len(in[1].Shape)
				if da[i] < -ra || da[i] >= ra || db[i] < -rb || db[i] >= rb {
					break // ResolveDotGeneral reports it
				}
				x, y := in[0].Shape[(da[i]+ra)%ra], in[1].Shape[(db[i]+rb)%rb]
				if x != y {
					return nil, fmt.Errorf("tensordot: contracted dimensions need to match, but first has size %d in dim %d and second has size %d in dim %d", x, da[i], y, db[i])
				}
			}
			d, err := ResolveDotGeneral(in[0].Shape, in[1].Shape, nil, nil, da, db)
			if err != nil {
				return nil, err
			}
			return []Meta{{Shape: d.Shape, DType: in[0].DType}}, nil
		},
		Decompose: func(b Builder, in []Value, a Attrs) []Value {
			return []Value{laDot(b, in[0], in[1], []int{}, []int{}, a.Ints("dims_a"), a.Ints("dims_b"), a["precision"])}
		},
	})
}

func laMMInfer(name string, x, y Meta) ([]Meta, error) {
	if len(x.Shape) != 2 {
		return nil, fmt.Errorf("%s: self must be a matrix", name)
	}
	if len(y.Shape) != 2 {
		return nil, fmt.Errorf("%s: mat2 must be a matrix", name)
	}
	if x.Shape[1] != y.Shape[0] {
		return nil, laMMShapeError(name, x.Shape, y.Shape)
	}
	if err := laSameDType(name, x, y); err != nil {
		return nil, err
	}
	return []Meta{{Shape: []int{x.Shape[0], y.Shape[1]}, DType: x.DType}}, nil
}

func laBMMInfer(name string, x, y Meta) ([]Meta, error) {
	if len(x.Shape) != 3 {
		return nil, fmt.Errorf("%s: batch1 must be a 3D tensor", name)
	}
	if len(y.Shape) != 3 {
		return nil, fmt.Errorf("%s: batch2 must be a 3D tensor", name)
	}
	if y.Shape[0] != x.Shape[0] || y.Shape[1] != x.Shape[2] {
		return nil, fmt.Errorf("%s: Expected size for first two dimensions of batch2 tensor to be: [%d, %d] but got: [%d, %d].", name, x.Shape[0], x.Shape[2], y.Shape[0], y.Shape[1])
	}
	if err := laSameDType(name, x, y); err != nil {
		return nil, err
	}
	return []Meta{{Shape: []int{x.Shape[0], x.Shape[1], y.Shape[2]}, DType: x.DType}}, nil
}
