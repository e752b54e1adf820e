package train

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gotpu/gotpu/dist"
)

// TestFSDPHelperRank is not a test: it is one rank of the jobs the FSDP
// tests start (GOTPU_TRAIN_FSDP_HELPER holds the MNIST directory); it
// prints its Result as JSON. GOTPU_TRAIN_FSDP_CKPT sets the checkpoint
// directory, GOTPU_TRAIN_FSDP_MAX the step limit, GOTPU_TRAIN_FSDP_RESUME
// resumes.
func TestFSDPHelperRank(t *testing.T) {
	dir := os.Getenv("GOTPU_TRAIN_FSDP_HELPER")
	if dir == "" {
		return
	}
	c := ddpTestConfig(dir)
	c.FSDP = true
	c.CheckpointDir = os.Getenv("GOTPU_TRAIN_FSDP_CKPT")
	c.MaxSteps, _ = strconv.Atoi(os.Getenv("GOTPU_TRAIN_FSDP_MAX"))
	c.Resume = os.Getenv("GOTPU_TRAIN_FSDP_RESUME") == "1"
	res, err := RunMNIST(context.Background(), c, nil)
	if err != nil {
		fmt.Println("ERROR:", err)
		os.Exit(3)
	}
	b, _ := json.Marshal(map[string]any{"losses": res.Losses, "test_loss": res.TestLoss, "world_size": res.WorldSize, "resumed_from_step": res.ResumedFromStep})
	fmt.Println("RESULT " + string(b))
}

type helperResult struct {
	Losses          []float64 `json:"losses"`
	TestLoss        float64   `json:"test_loss"`
	WorldSize       int       `json:"world_size"`
	ResumedFromStep int       `json:"resumed_from_step"`
}

// runFSDPRanks runs n ranks of TestFSDPHelperRank with env added and
// returns each rank's result.
func runFSDPRanks(t *testing.T, dir string, n int, env ...string) []helperResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	srv, err := dist.ListenStore(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	outs := make([]bytes.Buffer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestFSDPHelperRank$")
		cmd.Env = append(os.Environ(), "GOTPU_TRAIN_FSDP_HELPER="+dir, fmt.Sprintf("RANK=%d", r), fmt.Sprintf("WORLD_SIZE=%d", n),
			fmt.Sprintf("LOCAL_RANK=%d", r), fmt.Sprintf("LOCAL_WORLD_SIZE=%d", n), "GOTPU_STORE_ADDR="+srv.Addr(),
			fmt.Sprintf("GOTPU_RUN_ID=%s-%d-%d", t.Name(), os.Getpid(), n))
		cmd.Env = append(cmd.Env, env...)
		cmd.Stdout, cmd.Stderr = &outs[r], &outs[r]
		wg.Add(1)
		go func() { defer wg.Done(); errs[r] = cmd.Run() }()
	}
	wg.Wait()
	res := make([]helperResult, n)
	for r := range n {
		line := outs[r].String()
		i := strings.Index(line, "RESULT ")
		if errs[r] != nil || i < 0 {
			t.Fatalf("rank %d: %v\n%s", r, errs[r], line)
		}
		if err := json.Unmarshal([]byte(strings.SplitN(line[i+7:], "\n", 2)[0]), &res[r]); err != nil {
			t.Fatal(err)
		}
	}
	return res
}

func maxDiff(a, b []float64) float64 {
	worst := 0.0
	for i := range min(len(a), len(b)) {
		worst = math.Max(worst, math.Abs(a[i]-b[i]))
	}
	return worst
}

// TestRunMNISTFSDP trains with --fsdp on 2 processes and on one process
// over the whole batches: per-step losses and the test loss agree within
// 1e-5. Then a 2-rank run stops at step 4 with a sharded checkpoint, and
// resuming it on 1 rank and (without -short) on 4 ranks gives the
// uninterrupted run's remaining losses.
func TestRunMNISTFSDP(t *testing.T) {
	dir := mnistDir(t)
	single, err := RunMNIST(context.Background(), ddpTestConfig(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	for r, got := range runFSDPRanks(t, dir, 2) {
		worst := math.Max(maxDiff(got.Losses, single.Losses), math.Abs(got.TestLoss-single.TestLoss))
		t.Logf("rank %d: largest loss difference from one process %.2g", r, worst)
		if got.WorldSize != 2 || len(got.Losses) != len(single.Losses) || worst > 1e-5 {
			t.Fatalf("rank %d: world %d, losses %v (test %v); one process %v (test %v)", r, got.WorldSize, got.Losses, got.TestLoss, single.Losses, single.TestLoss)
		}
	}
	const stop = 4
	resumeOn := []int{1, 4} // 4 divides the batch of 32: equal local batches
	if testing.Short() {
		resumeOn = resumeOn[:1] // dist's tests reshard onto 4 ranks in -short runs
	}
	for _, n := range resumeOn {
		ck := t.TempDir()
		runFSDPRanks(t, dir, 2, "GOTPU_TRAIN_FSDP_CKPT="+ck, "GOTPU_TRAIN_FSDP_MAX="+strconv.Itoa(stop))
		for r, got := range runFSDPRanks(t, dir, n, "GOTPU_TRAIN_FSDP_CKPT="+ck, "GOTPU_TRAIN_FSDP_RESUME=1") {
			want := single.Losses[stop:]
			worst := math.Max(maxDiff(got.Losses, want), math.Abs(got.TestLoss-single.TestLoss))
			t.Logf("resumed on %d ranks, rank %d: largest loss difference %.2g", n, r, worst)
			if got.ResumedFromStep != stop || len(got.Losses) != len(want) || worst > 1e-5 {
				t.Fatalf("resumed on %d ranks, rank %d: from step %d, losses %v (test %v); want from %d, %v (test %v)",
					n, r, got.ResumedFromStep, got.Losses, got.TestLoss, stop, want, single.TestLoss)
			}
		}
	}
}
