package op

import (
	"slices"
	"testing"

	"github.com/gotpu/gotpu/dtype"
)

func TestPromotedDTypes(t *testing.T) {
	m := func(dt dtype.DType, shape ...int) Meta { return Meta{Shape: shape, DType: dt} }
	w := func(dt dtype.DType) Meta { return Meta{Shape: []int{}, DType: dt, Wrapped: true} }
	cases := []struct {
		name   string
		op     string
		in     []Meta
		attrs  Attrs
		def    dtype.DType
		want   []dtype.DType
		common dtype.DType
	}{
		{"add f32 tensor, wrapped int", "add", []Meta{m(dtype.F32, 2), w(dtype.I64)}, nil, dtype.F32, []dtype.DType{dtype.F32, dtype.F32}, dtype.F32},
		{"add i32 tensor, wrapped float", "add", []Meta{m(dtype.I32, 2), w(dtype.F64)}, nil, dtype.F32, []dtype.DType{dtype.F32, dtype.F32}, dtype.F32},
		{"add i32 tensor, wrapped float, default f64", "add", []Meta{m(dtype.I32, 2), w(dtype.F64)}, nil, dtype.F64, []dtype.DType{dtype.F64, dtype.F64}, dtype.F64},
		{"add f16 tensor, 0-d f32", "add", []Meta{m(dtype.F16, 2), m(dtype.F32)}, nil, dtype.F32, []dtype.DType{dtype.F16, dtype.F16}, dtype.F16},
		{"add i32 tensor, 0-d f64", "add", []Meta{m(dtype.I32, 2), m(dtype.F64)}, nil, dtype.F32, []dtype.DType{dtype.F64, dtype.F64}, dtype.F64},
		{"mul bf16, f16", "mul", []Meta{m(dtype.BF16, 2), m(dtype.F16, 2)}, nil, dtype.F32, []dtype.DType{dtype.F32, dtype.F32}, dtype.F32},
		{"exp int to float", "exp", []Meta{m(dtype.I64, 3)}, nil, dtype.F32, []dtype.DType{dtype.F32}, dtype.F32},
		{"true div ints", "div", []Meta{m(dtype.I64, 3), m(dtype.I32, 3)}, Attrs{"rounding_mode": ""}, dtype.F32, []dtype.DType{dtype.F32, dtype.F32}, dtype.F32},
		{"floor div ints stays int", "div", []Meta{m(dtype.I64, 3), m(dtype.I32, 3)}, Attrs{"rounding_mode": "floor"}, dtype.F32, []dtype.DType{dtype.I64, dtype.I64}, dtype.I64},
		{"clamp int tensor, float bound", "clamp", []Meta{m(dtype.I32, 3)}, Attrs{"min": 0.5, "max": nil}, dtype.F32, []dtype.DType{dtype.F32}, dtype.F32},
		{"clamp int tensor, int bound", "clamp", []Meta{m(dtype.I32, 3)}, Attrs{"min": int64(0), "max": nil}, dtype.F32, []dtype.DType{dtype.I32}, dtype.I32},
		{"where keeps condition", "where", []Meta{m(dtype.Bool, 3), m(dtype.F32, 3), w(dtype.I64)}, nil, dtype.F32, []dtype.DType{dtype.Bool, dtype.F32, dtype.F32}, dtype.F32},
		{"no promotion keeps dtypes", "reshape", []Meta{m(dtype.I8, 4)}, Attrs{"shape": []int{2, 2}}, dtype.F32, []dtype.DType{dtype.I8}, dtype.Invalid},
		{"absent optional input", "linear", []Meta{m(dtype.F32, 2, 3), m(dtype.F32, 4, 3), {}}, nil, dtype.F32, []dtype.DType{dtype.F32, dtype.F32, dtype.Invalid}, dtype.Invalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := MustLookup(c.op)
			a, err := d.Normalize(c.attrs)
			if err != nil {
				t.Fatal(err)
			}
			got, common := PromotedDTypes(d, c.in, a, c.def)
			if !slices.Equal(got, c.want) || common != c.common {
				t.Errorf("PromotedDTypes(%s) = %v, %v; want %v, %v", c.op, got, common, c.want, c.common)
			}
		})
	}
}
