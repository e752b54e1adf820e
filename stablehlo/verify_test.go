package stablehlo

import (
	"errors"
	"strings"
	"testing"
)

const okProgram = `module @ok {
  func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<3xf32>) -> (tensor<2xf32>, tensor<2x3xi1>) {
    %0 = "stablehlo.broadcast_in_dim"(%arg1) {broadcast_dimensions = array<i64: 1>} : (tensor<3xf32>) -> tensor<2x3xf32>
    %1 = "stablehlo.add"(%arg0, %0) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %2 = "stablehlo.constant"() {value = dense<0.0e+00> : tensor<f32>} : () -> tensor<f32>
    %3 = "stablehlo.reduce"(%1, %2) ({
      ^bb0(%4: tensor<f32>, %5: tensor<f32>):
      %6 = "stablehlo.add"(%4, %5) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%6) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %7:2 = "stablehlo.sort"(%1, %1) ({
      ^bb0(%8: tensor<f32>, %9: tensor<f32>, %10: tensor<f32>, %11: tensor<f32>):
      %12 = "stablehlo.compare"(%8, %9) {comparison_direction = #stablehlo<comparison_direction LT>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      "stablehlo.return"(%12) : (tensor<i1>) -> ()
    }) {dimension = 1 : i64, is_stable = true} : (tensor<2x3xf32>, tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
    %13 = "stablehlo.compare"(%7#0, %7#1) {comparison_direction = #stablehlo<comparison_direction EQ>} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    "func.return"(%3, %13) : (tensor<2xf32>, tensor<2x3xi1>) -> ()
  }
}
`

func TestVerifyAccepts(t *testing.T) {
	if err := Verify(okProgram); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyRejects breaks okProgram in one place per case; Verify must
// reject each with an error mentioning want.
func TestVerifyRejects(t *testing.T) {
	cases := []struct {
		name, old, new, want string
	}{
		{"use before def", `"stablehlo.add"(%arg0, %0)`, `"stablehlo.add"(%arg0, %2)`, "undefined value %2"},
		{"undefined value", `"stablehlo.add"(%arg0, %0)`, `"stablehlo.add"(%arg0, %99)`, "undefined value %99"},
		{"defined twice", `%2 = "stablehlo.constant"`, `%1 = "stablehlo.constant"`, "defined twice"},
		{"type mismatch at use", `(%arg0, %0) : (tensor<2x3xf32>, tensor<2x3xf32>)`, `(%arg0, %0) : (tensor<2x3xf32>, tensor<2x3xf64>)`, "used as tensor<2x3xf64>"},
		{"unknown op", `"stablehlo.add"(%arg0, %0)`, `"stablehlo.plus"(%arg0, %0)`, "unknown op"},
		{"bad return type", `"func.return"(%3, %13) : (tensor<2xf32>, tensor<2x3xi1>)`, `"func.return"(%13, %3) : (tensor<2x3xi1>, tensor<2xf32>)`, "signature says"},
		{"bad return count", `"func.return"(%3, %13) : (tensor<2xf32>, tensor<2x3xi1>)`, `"func.return"(%3) : (tensor<2xf32>)`, "signature says"},
		{"missing return", "    \"func.return\"(%3, %13) : (tensor<2xf32>, tensor<2x3xi1>) -> ()\n", "", "does not end with func.return"},
		{"region value escapes", `(%7#0, %7#1)`, `(%7#0, %8)`, "undefined value %8"},
		{"region without return", "      \"stablehlo.return\"(%6) : (tensor<f32>) -> ()\n", "", "does not end with stablehlo.return"},
		{"return outside region", `%13 = "stablehlo.compare"`, `"stablehlo.return"(%1) : (tensor<2x3xf32>) -> ()
    %13 = "stablehlo.compare"`, "outside its parent"},
		{"bad type", `tensor<3xf32>) -> tensor<2x3xf32>`, `tensor<3xf33>) -> tensor<2x3xf32>`, "unknown element type"},
		{"result count", `%7:2 = "stablehlo.sort"`, `%7:3 = "stablehlo.sort"`, "defines 3 results"},
		{"multi-result used whole", `(%7#0, %7#1)`, `(%7, %7#1)`, "undefined value %7"},
		{"elementwise shape", `%1 = "stablehlo.add"(%arg0, %0) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>`, `%1 = "stablehlo.add"(%arg0, %arg0) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<3x2xf32>`, "one type"},
		{"broadcast dims", `broadcast_dimensions = array<i64: 1>`, `broadcast_dimensions = array<i64: 0>`, "cannot broadcast"},
		{"reduce shape", `(tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>`, `(tensor<2x3xf32>, tensor<f32>) -> tensor<3xf32>`, "reducing"},
		{"constant type", `dense<0.0e+00> : tensor<f32>`, `dense<0.0e+00> : tensor<f64>`, "does not have the result type"},
		{"pretty form", `"stablehlo.add"(%arg0, %0) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>`, `stablehlo.add %arg0, %0 : tensor<2x3xf32>`, "generic form"},
		{"trailing text", "}\n}\n", "}\n}\njunk", "after the module"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(okProgram, c.old) {
				t.Fatalf("test bug: %q not in the program", c.old)
			}
			bad := strings.Replace(okProgram, c.old, c.new, 1)
			err := Verify(bad)
			if err == nil {
				t.Fatalf("Verify accepted:\n%s", bad)
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q, want ErrInvalid mentioning %q", err, c.want)
			}
		})
	}
}

// FuzzVerify checks that Verify never panics on arbitrary input.
func FuzzVerify(f *testing.F) {
	f.Add(okProgram)
	f.Add("module {}")
	f.Add(`module { func.func @main() { "func.return"() : () -> () } }`)
	f.Fuzz(func(t *testing.T, s string) {
		_ = Verify(s)
	})
}
