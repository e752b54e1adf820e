package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gotpu/gotpu/internal/mpiraw"
)

func TestParseSizes(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		err  string
	}{
		{"1KB,16MB,1024", []int{1024, 16 << 20, 1024}, ""},
		{"2k, 1M ,1G", []int{2048, 1 << 20, 1 << 30}, ""},
		{"64B,10", []int{64, 8}, ""},
		{"x", nil, "bad size"},
		{"2", nil, "bad size"},
	}
	for _, tc := range tests {
		got, err := parseSizes(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseSizes(%q) err = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("parseSizes(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestBusBWAndIters(t *testing.T) {
	tests := []struct {
		size  int
		us    float64
		n     int
		bw    float64
		iters int
	}{
		{1 << 20, 1000, 2, float64(1<<20) / 1e-3 / 1e9, 256},
		{1 << 20, 1000, 4, float64(1<<20) / 1e-3 * 1.5 / 1e9, 256},
		{1024, 10, 2, 1024 / 10e-6 / 1e9, 1000},
		{256 << 20, 1e5, 2, float64(256<<20) / 0.1 / 1e9, 5},
	}
	for _, tc := range tests {
		if got := busBW(tc.size, tc.us, tc.n); math.Abs(got-tc.bw) > 1e-9*tc.bw {
			t.Errorf("busBW(%d, %v, %d) = %v, want %v", tc.size, tc.us, tc.n, got, tc.bw)
		}
		if got := allreduceIters(tc.size); got != tc.iters {
			t.Errorf("allreduceIters(%d) = %d, want %d", tc.size, got, tc.iters)
		}
	}
}

func TestFillRatios(t *testing.T) {
	rep := &allreduceReport{NProc: 2, Engine: "mpi", Ratios: map[string]float64{}, Results: []allreduceResult{
		{Impl: "gotpu-mpi", SizeBytes: 1024, MedianUS: 2},
		{Impl: "mpi-raw", SizeBytes: 1024, MedianUS: 1},
		{Impl: "mpi4py", SizeBytes: 1024, MedianUS: 4},
		{Impl: "gotpu-mpi", SizeBytes: 4096, MedianUS: 10},
		{Impl: "mpi4py", SizeBytes: 4096, MedianUS: 5},
	}}
	fillRatios(rep, "mpi4py", []int{1024, 4096})
	want := map[string]float64{"1024": 2, "4096": 0.5}
	for k, v := range want {
		if math.Abs(rep.Ratios[k]-v) > 1e-12 {
			t.Errorf("ratios[%s] = %v, want %v", k, rep.Ratios[k], v)
		}
	}
	if len(rep.RawRatios) != 1 || math.Abs(rep.RawRatios["1024"]-0.5) > 1e-12 {
		t.Errorf("raw_ratios = %v, want {1024: 0.5} (no raw result at 4096)", rep.RawRatios)
	}
	if bw := rep.Results[0].BusBWGBps; math.Abs(bw-busBW(1024, 2, 2)) > 1e-12 {
		t.Errorf("bus bandwidth %v, want %v", bw, busBW(1024, 2, 2))
	}
	shm := &allreduceReport{NProc: 2, Engine: "shm", Ratios: map[string]float64{}, Results: []allreduceResult{
		{Impl: "gotpu-shm", SizeBytes: 1024, MedianUS: 1}, {Impl: "torch-gloo", SizeBytes: 1024, MedianUS: 3},
	}}
	fillRatios(shm, "torch-gloo", []int{1024})
	if math.Abs(shm.Ratios["1024"]-3) > 1e-12 || shm.RawRatios != nil {
		t.Errorf("shm: ratios %v raw %v, want {1024: 3} and none", shm.Ratios, shm.RawRatios)
	}
}

// TestAllreduceWorkerRank is not a test: it is a rank of the mpirun job
// that TestBenchAllreduceMPIRaw starts (GOTPU_BENCH_WORKER=mpi); without
// that variable it returns at once.
func TestAllreduceWorkerRank(t *testing.T) {
	if os.Getenv("GOTPU_BENCH_WORKER") != "mpi" {
		return
	}
	if err := allreduceWorker(context.Background(), os.Stdout, "mpi", []int{1024, 64 << 10}, 3); err != nil {
		fmt.Println("worker:", err)
		os.Exit(3)
	}
}

// TestBenchAllreduceMPIRaw: under mpirun, a gotpu_mpi build's ranks time
// the mpi engine and raw MPI_Allreduce, alternating.
func TestBenchAllreduceMPIRaw(t *testing.T) {
	if !mpiraw.Built {
		t.Skip("needs -tags gotpu_mpi (CI runs it so)")
	}
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Fatal("mpirun not found: tools/mpi/install.sh installs Open MPI")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append(mpirunArgs(2), "-x", "GOTPU_BENCH_WORKER=mpi", os.Args[0], "-test.run=^TestAllreduceWorkerRank$")
	out, err := exec.CommandContext(ctx, mpirun, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("mpirun: %v\n%s", err, out)
	}
	var res []allreduceResult
	if err := json.Unmarshal(lastJSONLine(out), &res); err != nil {
		t.Fatalf("worker output: %v\n%s", err, out)
	}
	got := map[string]bool{}
	for _, r := range res {
		if r.MedianUS <= 0 || r.Iters != allreduceIters(r.SizeBytes) {
			t.Errorf("result %+v: want a positive time and %d iterations", r, allreduceIters(r.SizeBytes))
		}
		got[fmt.Sprintf("%s/%d", r.Impl, r.SizeBytes)] = true
	}
	for _, k := range []string{"gotpu-mpi/1024", "mpi-raw/1024", "gotpu-mpi/65536", "mpi-raw/65536"} {
		if !got[k] {
			t.Errorf("no %s result in %s", k, out)
		}
	}
}
