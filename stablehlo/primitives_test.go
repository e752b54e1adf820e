package stablehlo

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/ir"
	"github.com/gotpu/gotpu/op"
)

func m(dt dtype.DType, shape ...int) op.Meta {
	if shape == nil {
		shape = []int{}
	}
	return op.Meta{Shape: shape, DType: dt}
}

// primCase is a one-op program: the op applied to parameters (nil entries
// of in are absent optional inputs) with attrs.
type primCase struct {
	name  string // case name; op is name up to '/'
	op    string
	in    []*op.Meta
	attrs op.Attrs
}

func p(ms ...op.Meta) []*op.Meta {
	out := make([]*op.Meta, len(ms))
	for i := range ms {
		out[i] = &ms[i]
	}
	return out
}

var (
	f32  = dtype.F32
	i64  = dtype.I64
	i32  = dtype.I32
	bl   = dtype.Bool
	u8   = dtype.U8
	bf16 = dtype.BF16
)

// primCases has at least one case per primitive and view op, with
// representative shapes and dtypes.
var primCases = []primCase{
	{name: "abs", in: p(m(f32, 2, 3))},
	{name: "abs/i32", op: "abs", in: p(m(i32, 4))},
	{name: "abs/u8", op: "abs", in: p(m(u8, 4))},
	{name: "adaptive_avg_pool2d", in: p(m(f32, 2, 3, 7, 5)), attrs: op.Attrs{"output_size": []int{3, 2}}},
	{name: "adaptive_max_pool2d", in: p(m(f32, 3, 7, 5)), attrs: op.Attrs{"output_size": []int{3, 2}}},
	{name: "add", in: p(m(f32, 2, 3), m(f32, 3)), attrs: op.Attrs{"alpha": 2.0}},
	{name: "add/bool", op: "add", in: p(m(bl, 3), m(bl, 3))},
	{name: "argmax", in: p(m(f32, 2, 5)), attrs: op.Attrs{"dim": 1, "keepdim": true}},
	{name: "argmax/flat", op: "argmax", in: p(m(i32, 2, 5))},
	{name: "argmin", in: p(m(bf16, 4, 3)), attrs: op.Attrs{"dim": 0}},
	{name: "as_strided", in: p(m(f32, 4, 4)), attrs: op.Attrs{"shape": []int{3, 2}, "strides": []int{4, 1}, "offset": 2}},
	{name: "as_strided_scatter", in: p(m(f32, 3, 4), m(f32, 2, 2)), attrs: op.Attrs{"shape": []int{2, 2}, "strides": []int{4, 1}, "offset": 1}},
	{name: "atan2", in: p(m(f32, 3), m(f32, 3))},
	{name: "bitwise_and", in: p(m(i32, 3), m(i32, 3))},
	{name: "bitwise_and/bool", op: "bitwise_and", in: p(m(bl, 3), m(bl, 3))},
	{name: "bitwise_left_shift", in: p(m(i64, 3), m(i64, 3))},
	{name: "bitwise_not", in: p(m(u8, 3))},
	{name: "bitwise_or", in: p(m(i8(), 3), m(i8(), 3))},
	{name: "bitwise_right_shift", in: p(m(i32, 3), m(i32, 3))},
	{name: "bitwise_right_shift/u8", op: "bitwise_right_shift", in: p(m(u8, 3), m(u8, 3))},
	{name: "bitwise_xor", in: p(m(i64, 2, 2), m(i64, 2))},
	{name: "cat", in: p(m(f32, 2, 3), m(f32, 4, 3), m(f32, 0)), attrs: op.Attrs{"dim": 0}},
	{name: "ceil", in: p(m(f32, 3))},
	{name: "ceil/int", op: "ceil", in: p(m(i64, 3))},
	{name: "convert", in: p(m(f32, 3)), attrs: op.Attrs{"dtype": i32}},
	{name: "convert/bool", op: "convert", in: p(m(f32, 3)), attrs: op.Attrs{"dtype": bl}},
	{name: "convert/from_bool", op: "convert", in: p(m(bl, 3)), attrs: op.Attrs{"dtype": bf16}},
	{name: "convolution", in: p(m(f32, 2, 4, 9, 8), m(f32, 6, 2, 3, 3), m(f32, 6)), attrs: op.Attrs{"stride": []int{2, 1}, "padding": []int{1, 0}, "dilation": []int{1, 2}, "groups": 2, "precision": "highest"}},
	{name: "convolution/1d_nobias", op: "convolution", in: []*op.Meta{&[]op.Meta{m(f32, 1, 3, 10)}[0], &[]op.Meta{m(f32, 5, 3, 4)}[0], nil}, attrs: op.Attrs{"padding": []int{1}, "padding_high": []int{2}}},
	{name: "convolution/transposed", op: "convolution", in: p(m(f32, 2, 4, 5, 5), m(f32, 4, 3, 3, 3), m(f32, 6)), attrs: op.Attrs{"transposed": true, "stride": []int{2}, "padding": []int{1}, "output_padding": []int{1}, "groups": 2}},
	{name: "copy", in: p(m(f32, 2))},
	{name: "cos", in: p(m(f32, 3))},
	{name: "cummax", in: p(m(f32, 2, 5)), attrs: op.Attrs{"dim": 1}},
	{name: "cummin", in: p(m(i32, 5, 2)), attrs: op.Attrs{"dim": 0}},
	{name: "cumulative", in: p(m(f32, 2, 5)), attrs: op.Attrs{"kind": "sum", "dim": 1}},
	{name: "cumulative/prod_i64", op: "cumulative", in: p(m(i64, 6)), attrs: op.Attrs{"kind": "prod", "dim": 0}},
	{name: "diagonal", in: p(m(f32, 3, 4, 5)), attrs: op.Attrs{"offset": 1, "dim1": 0, "dim2": 2}},
	{name: "div", in: p(m(f32, 3), m(f32, 3))},
	{name: "div/floor_f32", op: "div", in: p(m(f32, 3), m(f32, 3)), attrs: op.Attrs{"rounding_mode": "floor"}},
	{name: "div/trunc_f32", op: "div", in: p(m(f32, 3), m(f32, 3)), attrs: op.Attrs{"rounding_mode": "trunc"}},
	{name: "div/floor_i64", op: "div", in: p(m(i64, 3), m(i64, 3)), attrs: op.Attrs{"rounding_mode": "floor"}},
	{name: "div/trunc_i32", op: "div", in: p(m(i32, 3), m(i32, 3)), attrs: op.Attrs{"rounding_mode": "trunc"}},
	{name: "dot_general", in: p(m(f32, 2, 3, 4), m(f32, 2, 4, 5)), attrs: op.Attrs{"lhs_batch": []int{0}, "rhs_batch": []int{0}, "lhs_contract": []int{2}, "rhs_contract": []int{1}, "precision": "high"}},
	{name: "dot_general/medium", op: "dot_general", in: p(m(bf16, 3, 4), m(bf16, 5, 4)), attrs: op.Attrs{"lhs_contract": []int{1}, "rhs_contract": []int{1}, "precision": "medium"}},
	{name: "eq", in: p(m(f32, 3), m(f32, 3))},
	{name: "erf", in: p(m(f32, 3))},
	{name: "erfc", in: p(m(f32, 3))},
	{name: "erfinv", in: p(m(f32, 3))},
	{name: "exp", in: p(m(f32, 3))},
	{name: "expand", in: p(m(f32, 3, 1)), attrs: op.Attrs{"shape": []int{2, 3, 4}}},
	{name: "expm1", in: p(m(f32, 3))},
	{name: "flatten", in: p(m(f32, 2, 3, 4)), attrs: op.Attrs{"start_dim": 1, "end_dim": 2}},
	{name: "flip", in: p(m(f32, 2, 3)), attrs: op.Attrs{"dims": []int{-1}}},
	{name: "floor", in: p(m(f32, 3))},
	{name: "fmod", in: p(m(f32, 3), m(f32, 3))},
	{name: "fmod/i32", op: "fmod", in: p(m(i32, 3), m(i32, 3))},
	{name: "full", attrs: op.Attrs{"shape": []int{2, 3}, "value": 1.5, "dtype": f32}},
	{name: "full/bool", op: "full", attrs: op.Attrs{"shape": []int{2}, "value": true}},
	{name: "gather", in: p(m(f32, 3, 4), m(i64, 2, 4)), attrs: op.Attrs{"dim": 0}},
	{name: "ge", in: p(m(i64, 3), m(i64, 3))},
	{name: "gt", in: p(m(u8, 3), m(u8, 3))},
	{name: "index", in: p(m(f32, 3, 4, 5), m(i64, 2), m(i64, 2)), attrs: nil},
	{name: "index/none_between", op: "index", in: []*op.Meta{&[]op.Meta{m(f32, 3, 4, 5)}[0], &[]op.Meta{m(i64, 2)}[0], nil, &[]op.Meta{m(i32, 2)}[0]}},
	{name: "index/none_first", op: "index", in: []*op.Meta{&[]op.Meta{m(f32, 3, 4, 5)}[0], nil, &[]op.Meta{m(i64, 2, 2)}[0]}},
	{name: "index_put", in: p(m(f32, 3, 4), m(f32, 2, 4), m(i64, 2)), attrs: op.Attrs{"accumulate": true}},
	{name: "index_put/mask", op: "index_put", in: p(m(f32, 3, 4), m(f32), m(bl, 3, 4))},
	{name: "iota", attrs: op.Attrs{"shape": []int{2, 3}, "dim": 1, "dtype": i64}},
	{name: "iota/f32", op: "iota", attrs: op.Attrs{"shape": []int{4}, "dim": 0, "dtype": f32}},
	{name: "le", in: p(m(f32, 3), m(f32, 3))},
	{name: "log", in: p(m(f32, 3))},
	{name: "log1p", in: p(m(f32, 3))},
	{name: "lt", in: p(m(bl, 3), m(bl, 3))},
	{name: "masked_scatter", in: p(m(f32, 2, 3), m(bl, 3), m(f32, 4))},
	{name: "masked_select", in: p(m(f32, 2, 3), m(bl, 2, 3)), attrs: op.Attrs{"count": 4}},
	{name: "max_pool2d_with_indices", in: p(m(f32, 1, 2, 6, 6)), attrs: op.Attrs{"kernel_size": []int{3, 3}, "stride": []int{2, 2}, "padding": []int{1, 1}, "ceil_mode": true}},
	{name: "maximum", in: p(m(f32, 3), m(f32, 3))},
	{name: "minimum", in: p(m(bl, 3), m(bl, 3))},
	{name: "movedim", in: p(m(f32, 2, 3, 4)), attrs: op.Attrs{"source": []int{0}, "destination": []int{2}}},
	{name: "mul", in: p(m(f32, 3), m(f32, 2, 3))},
	{name: "narrow", in: p(m(f32, 5, 3)), attrs: op.Attrs{"dim": 0, "start": -3, "length": 2}},
	{name: "ne", in: p(m(f32, 3), m(f32, 3))},
	{name: "neg", in: p(m(i32, 3))},
	{name: "nonzero", in: p(m(f32, 2, 3)), attrs: op.Attrs{"count": 3}},
	{name: "pad_nd", in: p(m(f32, 2, 3)), attrs: op.Attrs{"low": []int{1, -1}, "high": []int{0, 2}, "interior": []int{1, 0}, "value": 2.0}},
	{name: "permute", in: p(m(f32, 2, 3, 4)), attrs: op.Attrs{"dims": []int{2, 0, 1}}},
	{name: "pow", in: p(m(f32, 3), m(f32, 3))},
	{name: "pow/i64", op: "pow", in: p(m(i64, 3), m(i64, 3))},
	{name: "random_bits", attrs: op.Attrs{"shape": []int{2, 3}, "dtype": i64, "lane": 1, "seed": 42, "offset": 7}},
	{name: "random_bits/i32_period", op: "random_bits", attrs: op.Attrs{"shape": []int{2, 6}, "dtype": i32, "lane": 3, "stream": 1, "period": 4, "seed": 1 << 40, "offset": 0}},
	{name: "reduce", in: p(m(f32, 2, 3, 4)), attrs: op.Attrs{"kind": "sum", "dims": []int{0, 2}, "keepdim": true}},
	{name: "reduce/max_all", op: "reduce", in: p(m(i32, 2, 3)), attrs: op.Attrs{"kind": "max"}},
	{name: "reduce/prod_bool", op: "reduce", in: p(m(bl, 4)), attrs: op.Attrs{"kind": "prod", "dims": []int{0}}},
	{name: "reduce_window", in: p(m(f32, 1, 1, 5, 5)), attrs: op.Attrs{"kind": "max", "window": []int{1, 1, 2, 2}, "strides": []int{1, 1, 2, 2}, "padding_high": []int{0, 0, 1, 1}}},
	{name: "reduce_window/sum", op: "reduce_window", in: p(m(f32, 6)), attrs: op.Attrs{"kind": "sum", "window": []int{3}, "dilation": []int{2}}},
	{name: "repeat_interleave", in: []*op.Meta{&[]op.Meta{m(f32, 2, 3)}[0], nil}, attrs: op.Attrs{"repeats": 2, "dim": 1}},
	{name: "repeat_interleave/tensor", op: "repeat_interleave", in: p(m(f32, 3, 2), m(i64, 3)), attrs: op.Attrs{"dim": 0, "output_size": 5}},
	{name: "reshape", in: p(m(f32, 2, 3)), attrs: op.Attrs{"shape": []int{3, -1}}},
	{name: "round_nearest_even", in: p(m(f32, 3))},
	{name: "rsqrt", in: p(m(f32, 3))},
	{name: "scatter", in: p(m(f32, 3, 4), m(i64, 2, 3), m(f32, 2, 4)), attrs: op.Attrs{"dim": 1}},
	{name: "scatter/value", op: "scatter", in: []*op.Meta{&[]op.Meta{m(f32, 3, 4)}[0], &[]op.Meta{m(i64, 2, 3)}[0], nil}, attrs: op.Attrs{"dim": 0, "value": 5.0}},
	{name: "scatter_reduce", in: p(m(f32, 3, 4), m(i64, 2, 4), m(f32, 2, 4)), attrs: op.Attrs{"dim": 0, "reduce": "amax", "include_self": false}},
	{name: "scatter_reduce/mean_int", op: "scatter_reduce", in: p(m(i64, 5), m(i64, 3), m(i64, 3)), attrs: op.Attrs{"dim": 0, "reduce": "mean", "include_self": true}},
	{name: "select", in: p(m(f32, 3, 4)), attrs: op.Attrs{"dim": 1, "index": -1}},
	{name: "sigmoid", in: p(m(f32, 3))},
	{name: "sign", in: p(m(f32, 3))},
	{name: "sign/u8", op: "sign", in: p(m(u8, 3))},
	{name: "signbit", in: p(m(bf16, 3))},
	{name: "signbit/i64", op: "signbit", in: p(m(i64, 3))},
	{name: "sin", in: p(m(f32, 3))},
	{name: "slice", in: p(m(f32, 4, 10)), attrs: op.Attrs{"dim": 1, "start": 1, "end": 100, "step": 3}},
	{name: "sort", in: p(m(f32, 2, 5)), attrs: op.Attrs{"dim": 1, "descending": true}},
	{name: "sort/i32", op: "sort", in: p(m(i32, 5)), attrs: op.Attrs{"dim": 0}},
	{name: "sqrt", in: p(m(f32, 3))},
	{name: "squeeze", in: p(m(f32, 2, 1, 3)), attrs: op.Attrs{"dims": []int{1}}},
	{name: "sub", in: p(m(i64, 3), m(i64, 3)), attrs: op.Attrs{"alpha": int64(3)}},
	{name: "t", in: p(m(f32, 2, 3))},
	{name: "tan", in: p(m(f32, 3))},
	{name: "tanh", in: p(m(f32, 3))},
	{name: "transpose", in: p(m(f32, 2, 3, 4)), attrs: op.Attrs{"dim0": 0, "dim1": -1}},
	{name: "unflatten", in: p(m(f32, 6, 2)), attrs: op.Attrs{"dim": 0, "sizes": []int{2, -1}}},
	{name: "unsqueeze", in: p(m(f32, 3)), attrs: op.Attrs{"dim": -1}},
	{name: "view", in: p(m(f32, 2, 6)), attrs: op.Attrs{"shape": []int{3, 4}}},
	{name: "where", in: p(m(bl, 2, 3), m(f32, 3), m(f32, 2, 1))},
}

func i8() dtype.DType { return dtype.I8 }

func (c primCase) opName() string {
	if c.op != "" {
		return c.op
	}
	return c.name
}

func (c primCase) trace() (*ir.Graph, error) {
	var params []op.Meta
	for _, mm := range c.in {
		if mm != nil {
			params = append(params, *mm)
		}
	}
	return ir.Trace(params, func(b op.Builder, ps []op.Value) []op.Value {
		in := make([]op.Value, len(c.in))
		k := 0
		for i, mm := range c.in {
			if mm != nil {
				in[i] = ps[k]
				k++
			}
		}
		return b.Call(c.opName(), in, c.attrs)
	})
}

// TestEveryPrimitiveExports traces a one-op program per case, exports it and
// verifies the text; every primitive and view op must have a case.
func TestEveryPrimitiveExports(t *testing.T) {
	covered := map[string]bool{}
	dump := os.Getenv("STABLEHLO_DUMP")
	for _, c := range primCases {
		covered[c.opName()] = true
		t.Run(c.name, func(t *testing.T) {
			g, err := c.trace()
			if err != nil {
				t.Fatalf("trace: %v", err)
			}
			text, err := Export(g, c.name)
			if err != nil {
				t.Fatalf("Export: %v", err)
			}
			if err := Verify(text); err != nil {
				t.Fatalf("Verify: %v\n%s", err, text)
			}
			if dump != "" {
				f := filepath.Join(dump, symbol(c.name)+".mlir")
				if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	for _, d := range op.All() {
		if d.Kind == op.Composite {
			continue
		}
		if d.StableHLO == nil {
			t.Errorf("%s (%s) has no StableHLO emitter", d.Name, d.Kind)
		}
		if len(d.Inplace) > 0 {
			// The tracer refuses in-place ops; their emitters must say
			// clearly that there is no functional form.
			if d.StableHLO != nil {
				if _, err := d.StableHLO(nil, nil, nil, nil); !errors.Is(err, op.ErrHLOUnsupported) {
					t.Errorf("in-place %s: emitter returned %v, want ErrHLOUnsupported", d.Name, err)
				}
			}
			continue
		}
		if !covered[d.Name] {
			t.Errorf("%s (%s) has no export test case", d.Name, d.Kind)
		}
	}
}

// TestUnsupported checks the clear errors for what StableHLO cannot express.
func TestUnsupported(t *testing.T) {
	cases := []struct {
		name string
		fn   func() error
	}{
		{"copy_", func() error {
			_, err := op.MustLookup("copy_").StableHLO(nil, nil, nil, nil)
			return err
		}},
		{"composite", func() error {
			g, err := ir.Trace([]op.Meta{m(f32, 2, 3)}, func(b op.Builder, ps []op.Value) []op.Value {
				return b.Call("softmax", ps, op.Attrs{"dim": 1})
			})
			if err != nil {
				return err
			}
			_, err = Export(g, "x")
			return err
		}},
		{"index_put two masks", func() error {
			g, err := ir.Trace([]op.Meta{m(f32, 3, 4), m(f32, 2), m(bl, 3, 4)}, func(b op.Builder, ps []op.Value) []op.Value {
				return b.Call("index_put", ps, nil)
			})
			if err != nil {
				return err
			}
			_, err = Export(g, "x")
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.fn()
			if !errors.Is(err, op.ErrHLOUnsupported) {
				t.Fatalf("got %v, want an error wrapping ErrHLOUnsupported", err)
			}
		})
	}
}
