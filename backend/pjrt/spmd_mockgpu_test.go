//go:build pjrt

package pjrt_test

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gotpu/gotpu/backend/pjrt"
	"github.com/gotpu/gotpu/compile"
	"github.com/gotpu/gotpu/dist"
)

// TestSPMDMockGPUTopology is the GPU check of the SPMD path with XLA:GPU's
// mock-NCCL topology: one physical GPU stands in for the devices of
// GOTPU_PJRT_MOCK_GPU_TOPOLOGY ("partitions x hosts x gpus", e.g. 1x1x4;
// the plugin file comes from GOTPU_PJRT_PLUGIN=xla=.../xla_cuda_plugin.so).
// The MLP training step, sharded data-parallel over every mock device,
// must compile with its gradient all-reduce and execute; mock collectives
// move no data, so the values are logged, not compared. Skipped without
// the variable (CI has no GPU; the CPU plugin has no mock topology).
func TestSPMDMockGPUTopology(t *testing.T) {
	topo := os.Getenv("GOTPU_PJRT_MOCK_GPU_TOPOLOGY")
	if topo == "" {
		t.Skip("GOTPU_PJRT_MOCK_GPU_TOPOLOGY not set (a GPU check)")
	}
	want := 1
	var dims []int
	for _, f := range strings.Split(topo, "x") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			t.Fatalf("GOTPU_PJRT_MOCK_GPU_TOPOLOGY=%q is not AxBxC", topo)
		}
		want *= n
		dims = append(dims, n)
	}
	// The plugin wants num_nodes equal to the topology's hosts (and the
	// local GPUs per host equal to the machine's), this process node 0,
	// and the key-value store a multi-node client exchanges its topology
	// through (dist's TCP store, as a multi-process job would use).
	opts := map[string]any{"enable_mock_nccl": true, "mock_gpu_topology": topo}
	if len(dims) == 3 && dims[1] > 1 {
		opts["num_nodes"] = dims[0] * dims[1]
		opts["node_id"] = 0
	}
	ctx := context.Background()
	srv, err := dist.ListenStore(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	kv, err := dist.DialStore(ctx, srv.Addr(), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer kv.Close()
	c, err := pjrt.NewClient(pjrt.ClientOptions{Create: opts, KV: kv})
	if err != nil {
		t.Fatalf("client with mock topology %s: %v", topo, err)
	}
	devs := c.Devices()
	t.Logf("mock topology %s: %d devices: %+v", topo, len(devs), devs)
	if len(devs) < want {
		// Seen on an H200 with jax-cuda13-pjrt 0.11.2: the client comes up
		// (num_nodes = the topology's hosts, the key-value callbacks on an
		// in-process store) but addresses only its own GPU; the other mock
		// hosts' devices belong to processes that would run their shards.
		// Running one partition per process needs the global device list
		// in Compile's device assignment, which Client does not take yet.
		t.Skipf("mock topology %s: %d addressable device(s) of %d; one process runs only its own partition (not supported yet)", topo, len(devs), want)
	}
	if len(devs) != want {
		t.Fatalf("mock topology %s gave %d devices, want %d", topo, len(devs), want)
	}
	in := mlpInputs()
	if in[0].Shape()[0]%want != 0 {
		t.Skipf("batch %d does not split over %d devices", in[0].Shape()[0], want)
	}
	var buf bytes.Buffer
	if err := compile.ExportStableHLO(&buf, compile.Fn(mlpStep, compile.Name("mlp_sgd_step")), in...); err != nil {
		t.Fatal(err)
	}
	args := make([]pjrt.Array, len(in))
	for i, x := range in {
		args[i] = pjrt.Array{DType: x.DType(), Shape: x.Shape(), Data: x.Bytes()}
	}
	dp := pjrt.Sharding{"data"}
	s, err := c.CompileSharded(buf.String(), pjrt.Mesh{Axes: []string{"data"}, Shape: []int{want}}, []pjrt.Sharding{dp, dp}, nil, pjrt.GSPMD)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := collectives(t, s.Executable()); n == 0 {
		t.Error("the data-parallel program has no all-reduce")
	}
	got, err := s.Run(args...)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(mlpStep(in...)) {
		t.Fatalf("%d outputs", len(got))
	}
	eager := mlpStep(in...)
	for i := range got {
		if len(got[i].F32s()) != eager[i].Numel() {
			t.Errorf("output %d: %d values, want %d", i, len(got[i].F32s()), eager[i].Numel())
		}
		t.Logf("output %d: max |mock - eager| %g (mock collectives move no data)", i, maxDiff(got[i].F32s(), eager[i].Float32s()))
	}
}
