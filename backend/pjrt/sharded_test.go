//go:build pjrt

package pjrt_test

import (
	"math"
	"slices"
	"testing"

	"github.com/gotpu/gotpu/backend/pjrt"
	"github.com/gotpu/gotpu/dtype"
)

func TestXLAShardingGSPMDText(t *testing.T) {
	m1 := pjrt.Mesh{Axes: []string{"d"}, Shape: []int{4}}
	m2 := pjrt.Mesh{Axes: []string{"data", "model"}, Shape: []int{2, 2}}
	cases := []struct {
		m    pjrt.Mesh
		s    pjrt.Sharding
		rank int
		want string
	}{
		{m1, nil, 2, "{replicated}"},
		{m1, pjrt.Sharding{"d"}, 2, "{devices=[4,1]0,1,2,3}"},
		{m1, pjrt.Sharding{"", "d"}, 2, "{devices=[1,4]0,1,2,3}"},
		{m2, pjrt.Sharding{"data", "model"}, 2, "{devices=[2,2]0,1,2,3}"},
		{m2, pjrt.Sharding{"model", "data"}, 2, "{devices=[2,2]0,2,1,3}"},
		// Split along data only: replicas over model are the last tile dim.
		{m2, pjrt.Sharding{"data"}, 2, "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}"},
		// Split along model only: tile m holds positions (0,m) and (1,m).
		{m2, pjrt.Sharding{"model"}, 1, "{devices=[2,2]0,2,1,3 last_tile_dim_replicate}"},
	}
	for _, c := range cases {
		got, err := c.s.GSPMD(c.m, c.rank)
		if err != nil || got != c.want {
			t.Errorf("%q over %v rank %d: %q, %v; want %q", []string(c.s), c.m.Shape, c.rank, got, err, c.want)
		}
	}
	if got, _ := (pjrt.Sharding{"data", ""}).Shardy(m2, 2); got != `#sdy.sharding<@mesh, [{"data"}, {}]>` {
		t.Errorf("shardy attribute %q", got)
	}
}

func TestXLAShardingSplitJoin(t *testing.T) {
	m := pjrt.Mesh{Axes: []string{"data", "model"}, Shape: []int{2, 2}}
	v := make([]float32, 4*6)
	for i := range v {
		v[i] = float32(i)
	}
	a := pjrt.F32Array(v, 4, 6)
	for _, s := range []pjrt.Sharding{nil, {"data"}, {"", "model"}, {"data", "model"}, {"model", "data"}} {
		shards, err := s.Split(m, a)
		if err != nil {
			t.Fatal(err)
		}
		j, err := s.Join(m, a.Shape, shards)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(j.Data, a.Data) {
			t.Errorf("%q: join(split(a)) differs from a", []string(s))
		}
	}
	sh, err := pjrt.Sharding{"model", "data"}.Split(m, a)
	if err != nil {
		t.Fatal(err)
	}
	// Partition 1 = (data 0, model 1): rows 2..3, columns 0..2.
	if got := sh[1].F32s(); !slices.Equal(got, []float32{12, 13, 14, 18, 19, 20}) || !slices.Equal(sh[1].Shape, []int{2, 3}) {
		t.Errorf("shard 1 of [model data] = %v%v", sh[1].Shape, got)
	}
	if _, err := (pjrt.Sharding{"", "data", ""}).Split(m, a); err == nil {
		t.Error("a sharding longer than the rank was accepted")
	}
	if _, err := (pjrt.Sharding{"data"}).Split(pjrt.Mesh{Axes: []string{"data"}, Shape: []int{3}}, a); err == nil {
		t.Error("4 rows split over 3 devices was accepted")
	}
}

// matmulProgram is y = x·w, s = sum(y) for global shapes x[8,4], w[4,6].
const matmulProgram = `module @matmul {
  func.func @main(%arg0: tensor<8x4xf32>, %arg1: tensor<4x6xf32>) -> (tensor<8x6xf32>, tensor<f32>) {
    %0 = "stablehlo.dot_general"(%arg0, %arg1) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>} : (tensor<8x4xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
    %1 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %2 = "stablehlo.reduce"(%0, %1) ` + sumRegion + ` {dimensions = array<i64: 0, 1>} : (tensor<8x6xf32>, tensor<f32>) -> tensor<f32>
    "func.return"(%0, %2) : (tensor<8x6xf32>, tensor<f32>) -> ()
  }
}
`

// TestXLASPMDPartitioner: a program written for global shapes, annotated
// with shardings in both forms the plugin accepts (GSPMD's mhlo.sharding
// and Shardy's sdy.sharding), is partitioned by XLA over 4 CPU devices;
// each device gets its shards and the joined results equal the host's.
func TestXLASPMDPartitioner(t *testing.T) {
	c := cpuClient(t, 4)
	x := make([]float32, 8*4)
	w := make([]float32, 4*6)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	for i := range w {
		w[i] = float32(i%5) * 0.5
	}
	y := make([]float32, 8*6)
	var sum float32
	for i := range 8 {
		for j := range 6 {
			for k := range 4 {
				y[i*6+j] += x[i*4+k] * w[k*6+j]
			}
			sum += y[i*6+j]
		}
	}
	meshes := []struct {
		name    string
		m       pjrt.Mesh
		in, out []pjrt.Sharding
	}{
		{"rows", pjrt.Mesh{Axes: []string{"d"}, Shape: []int{4}}, []pjrt.Sharding{{"d"}, nil}, []pjrt.Sharding{{"d"}, nil}},
		{"2x2", pjrt.Mesh{Axes: []string{"data", "model"}, Shape: []int{2, 2}, Devices: []int{3, 2, 1, 0}},
			[]pjrt.Sharding{{"data"}, {"", "model"}}, []pjrt.Sharding{{"data", "model"}, nil}},
	}
	for _, form := range []pjrt.ShardingForm{pjrt.GSPMD, pjrt.Shardy} {
		for _, mc := range meshes {
			t.Run(form.String()+"/"+mc.name, func(t *testing.T) {
				s, err := c.CompileSharded(matmulProgram, mc.m, mc.in, mc.out, form)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				res, err := s.Run(pjrt.F32Array(x, 8, 4), pjrt.F32Array(w, 4, 6))
				if err != nil {
					t.Fatal(err)
				}
				if got := res[0].F32s(); !slices.Equal(got, y) {
					t.Errorf("y = %v, want %v", got, y)
				}
				if got := res[1]; got.DType != dtype.F32 || math.Abs(float64(got.F32s()[0]-sum)) > 1e-4 {
					t.Errorf("sum = %v, want %v", got.F32s(), sum)
				}
			})
		}
	}
}
