//go:build pjrt

package pjrt_test

import (
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/gotpu/gotpu/backend/pjrt"
)

// cpuClient returns a client of XLA's CPU plugin with n devices in this
// process (create option cpu_device_count), shared by the tests.
var (
	clientsMu sync.Mutex
	clients   = map[int]*pjrt.Client{}
)

func cpuClient(t testing.TB, n int) *pjrt.Client {
	t.Helper()
	clientsMu.Lock()
	defer clientsMu.Unlock()
	if c, ok := clients[n]; ok {
		return c
	}
	c, err := pjrt.NewClient(pjrt.ClientOptions{Create: map[string]any{"cpu_device_count": n}})
	if err != nil {
		if os.Getenv("GOTPU_PJRT_REQUIRE") == "1" {
			t.Fatalf("xla client with %d devices: %v", n, err)
		}
		t.Skipf("xla plugin not available: %v", err)
	}
	clients[n] = c
	return c
}

func TestXLAClientDeviceCount(t *testing.T) {
	c := cpuClient(t, 4)
	devs := c.Devices()
	if len(devs) != 4 {
		t.Fatalf("cpu_device_count=4 gave %d devices: %+v", len(devs), devs)
	}
	for i, d := range devs {
		if d.ID != i {
			t.Errorf("device %d has id %d", i, d.ID)
		}
	}
	_, err := pjrt.NewClient(pjrt.ClientOptions{Create: map[string]any{"cpu_device_count": struct{}{}}})
	if err == nil {
		t.Fatal("an option of an unsupported type was accepted")
	}
}

// sumRegion is an all_reduce / reduce_scatter body adding two f32 scalars.
const sumRegion = `({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%s) : (tensor<f32>) -> ()
    })`

// TestXLAReplicaCollectives runs one program on 4 replicas (4 CPU devices)
// whose collectives name replica ids, and checks every device's results
// against the host: all_reduce over all four, all_gather within pairs,
// reduce_scatter over all four.
func TestXLAReplicaCollectives(t *testing.T) {
	c := cpuClient(t, 4)
	prog := `module @collectives {
  func.func @main(%arg0: tensor<4xf32>) -> (tensor<4xf32>, tensor<8xf32>, tensor<1xf32>) {
    %0 = "stablehlo.all_reduce"(%arg0) ` + sumRegion + ` {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<4xf32>) -> tensor<4xf32>
    %1 = "stablehlo.all_gather"(%arg0) {all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (tensor<4xf32>) -> tensor<8xf32>
    %2 = "stablehlo.reduce_scatter"(%arg0) ` + sumRegion + ` {scatter_dimension = 0 : i64, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<4xf32>) -> tensor<1xf32>
    "func.return"(%0, %1, %2) : (tensor<4xf32>, tensor<8xf32>, tensor<1xf32>) -> ()
  }
}
`
	x, err := c.Compile(prog, pjrt.BuildOptions{NumReplicas: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if got := x.Devices(); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("executable devices %v, want [0 1 2 3]", got)
	}
	in := make([][]float32, 4)
	args := make([][]pjrt.Array, 4)
	for r := range in {
		for i := range 4 {
			in[r] = append(in[r], float32(10*r+i)+0.5)
		}
		args[r] = []pjrt.Array{pjrt.F32Array(in[r], 4)}
	}
	res, err := x.Execute(args)
	if err != nil {
		t.Fatal(err)
	}
	sum := make([]float32, 4)
	for r := range in {
		for i, v := range in[r] {
			sum[i] += v
		}
	}
	for r := range 4 {
		if got := res[r][0].F32s(); !slices.Equal(got, sum) {
			t.Errorf("replica %d all_reduce = %v, want %v", r, got, sum)
		}
		pair := r &^ 1
		if got, want := res[r][1].F32s(), slices.Concat(in[pair], in[pair+1]); !slices.Equal(got, want) {
			t.Errorf("replica %d all_gather = %v, want %v", r, got, want)
		}
		if got := res[r][2]; !slices.Equal(got.Shape, []int{1}) || got.F32s()[0] != sum[r] {
			t.Errorf("replica %d reduce_scatter = %v%v, want [%v]", r, got.Shape, got.F32s(), sum[r])
		}
	}
}

// TestXLAPartitionCollectives runs 4 partitions of one program on a
// permuted device assignment: partition_id says which piece each device
// runs, and a cross-partition all_reduce (channel_handle, groups of
// global device ids, which are partition ids with one replica) sums within
// pairs of partitions. Arguments and results are "{manual}": each
// partition's values are its own, the partitioner leaves them alone.
func TestXLAPartitionCollectives(t *testing.T) {
	c := cpuClient(t, 4)
	prog := `module @partitions {
  func.func @main(%arg0: tensor<2xf32> {mhlo.sharding = "{manual}"}) -> (tensor<i32> {mhlo.sharding = "{manual}"}, tensor<2xf32> {mhlo.sharding = "{manual}"}) {
    %p = "stablehlo.partition_id"() : () -> tensor<ui32>
    %0 = "stablehlo.convert"(%p) : (tensor<ui32>) -> tensor<i32>
    %1 = "stablehlo.all_reduce"(%arg0) ` + sumRegion + ` {channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, use_global_device_ids} : (tensor<2xf32>) -> tensor<2xf32>
    "func.return"(%0, %1) : (tensor<i32>, tensor<2xf32>) -> ()
  }
}
`
	assign := []int{2, 0, 3, 1} // partition p runs on device assign[p]
	x, err := c.Compile(prog, pjrt.BuildOptions{NumPartitions: 4, DeviceAssignment: [][]int{assign}, SPMD: true})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	devs := x.Devices()
	if len(devs) != 4 {
		t.Fatalf("executable devices %v", devs)
	}
	partOf := map[int]int{}
	for p, d := range assign {
		partOf[d] = p
	}
	args := make([][]pjrt.Array, 4)
	for i, d := range devs {
		p := partOf[d]
		args[i] = []pjrt.Array{pjrt.F32Array([]float32{float32(p), float32(100 * p)}, 2)}
	}
	res, err := x.Execute(args)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range devs {
		p := partOf[d]
		id := res[i][0]
		if len(id.Data) != 4 || int(id.Data[0]) != p {
			t.Errorf("device %d: partition_id %v, want %d", d, id.Data, p)
		}
		q := p ^ 1
		want := []float32{float32(p + q), float32(100 * (p + q))}
		if got := res[i][1].F32s(); !slices.Equal(got, want) {
			t.Errorf("device %d (partition %d): all_reduce = %v, want %v", d, p, got, want)
		}
	}
	if _, err := x.Execute(args[:3]); err == nil {
		t.Error("Execute with 3 argument lists for 4 devices succeeded")
	}

}

// TestXLAReplicasTimesPartitions compiles for 2 replicas x 2 partitions on
// an explicit device assignment and checks that each device runs the
// (replica, partition) the assignment gives it — the order of
// DeviceAssignmentProto, computation (partition) major, and of Execute's
// lists — and that a cross-replica all_reduce sums over the replicas of
// each partition.
func TestXLAReplicasTimesPartitions(t *testing.T) {
	c := cpuClient(t, 4)
	prog := `module @grid {
  func.func @main(%arg0: tensor<f32> {mhlo.sharding = "{manual}"}) -> (tensor<i32> {mhlo.sharding = "{manual}"}, tensor<i32> {mhlo.sharding = "{manual}"}, tensor<f32> {mhlo.sharding = "{manual}"}) {
    %r = "stablehlo.replica_id"() : () -> tensor<ui32>
    %p = "stablehlo.partition_id"() : () -> tensor<ui32>
    %0 = "stablehlo.convert"(%r) : (tensor<ui32>) -> tensor<i32>
    %1 = "stablehlo.convert"(%p) : (tensor<ui32>) -> tensor<i32>
    %2 = "stablehlo.all_reduce"(%arg0) ` + sumRegion + ` {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<f32>) -> tensor<f32>
    "func.return"(%0, %1, %2) : (tensor<i32>, tensor<i32>, tensor<f32>) -> ()
  }
}
`
	da := [][]int{{3, 1}, {0, 2}} // replica r, partition p on device da[r][p]
	x, err := c.Compile(prog, pjrt.BuildOptions{NumReplicas: 2, NumPartitions: 2, DeviceAssignment: da, SPMD: true})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	where := map[int][2]int{}
	for r, row := range da {
		for p, d := range row {
			where[d] = [2]int{r, p}
		}
	}
	devs := x.Devices()
	args := make([][]pjrt.Array, len(devs))
	for i, d := range devs {
		rp := where[d]
		args[i] = []pjrt.Array{pjrt.F32Array([]float32{float32(1 + rp[0] + 10*rp[1])})}
	}
	res, err := x.Execute(args)
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 4 {
		t.Fatalf("executable devices %v", devs)
	}
	for i, d := range devs {
		rp := where[d]
		r, p := int(res[i][0].Data[0]), int(res[i][1].Data[0])
		if r != rp[0] || p != rp[1] {
			t.Errorf("device %d runs replica %d partition %d, assigned %v", d, r, p, rp)
		}
		// Replicas 0 and 1 of partition p hold 1+10p and 2+10p.
		if got, want := res[i][2].F32s()[0], float32(3+20*rp[1]); got != want {
			t.Errorf("device %d: all_reduce over replicas = %v, want %v", d, got, want)
		}
	}
	for _, bad := range [][][]int{{{0, 1}, {1, 2}}, {{0, 1}}, {{0}, {1}}} {
		if _, err := c.Compile(prog, pjrt.BuildOptions{NumReplicas: 2, NumPartitions: 2, DeviceAssignment: bad, SPMD: true}); err == nil {
			t.Errorf("device assignment %v was accepted", bad)
		}
	}
}
