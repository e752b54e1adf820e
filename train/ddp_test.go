package train

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gotpu/gotpu/dist"
)

func ddpTestConfig(dir string) Config {
	return Config{Model: "mlp", Epochs: 1, BatchSize: 32, DataDir: dir, TrainLimit: 320, TestLimit: 200, Seed: 3}
}

// TestDDPHelperRank is not a test: it is one rank of the job that
// TestRunMNISTDDPMatchesSingleProcess starts (GOTPU_TRAIN_DDP_HELPER set);
// it prints its Result's losses as JSON.
func TestDDPHelperRank(t *testing.T) {
	dir := os.Getenv("GOTPU_TRAIN_DDP_HELPER")
	if dir == "" {
		return
	}
	c := ddpTestConfig(dir)
	c.DDP = true
	res, err := RunMNIST(context.Background(), c, nil)
	if err != nil {
		fmt.Println("ERROR:", err)
		os.Exit(3)
	}
	b, _ := json.Marshal(map[string]any{"losses": res.Losses, "test_loss": res.TestLoss, "world_size": res.WorldSize})
	fmt.Println("RESULT " + string(b))
}

// TestRunMNISTDDPMatchesSingleProcess trains with --ddp on 2 processes
// (each half of every batch) and on one process over the whole batches:
// the per-step losses and the test loss agree within 1e-5 (measured:
// about 1e-7).
func TestRunMNISTDDPMatchesSingleProcess(t *testing.T) {
	dir := mnistDir(t)
	single, err := RunMNIST(context.Background(), ddpTestConfig(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, err := dist.ListenStore(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const n = 2
	outs := make([]bytes.Buffer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDDPHelperRank$")
		cmd.Env = append(os.Environ(), "GOTPU_TRAIN_DDP_HELPER="+dir, fmt.Sprintf("RANK=%d", r), fmt.Sprintf("WORLD_SIZE=%d", n),
			fmt.Sprintf("LOCAL_RANK=%d", r), fmt.Sprintf("LOCAL_WORLD_SIZE=%d", n), "GOTPU_STORE_ADDR="+srv.Addr(), "GOTPU_RUN_ID="+t.Name())
		cmd.Stdout, cmd.Stderr = &outs[r], &outs[r]
		wg.Add(1)
		go func() { defer wg.Done(); errs[r] = cmd.Run() }()
	}
	wg.Wait()
	for r := range n {
		if errs[r] != nil {
			t.Fatalf("rank %d: %v\n%s", r, errs[r], outs[r].String())
		}
		var got struct {
			Losses    []float64 `json:"losses"`
			TestLoss  float64   `json:"test_loss"`
			WorldSize int       `json:"world_size"`
		}
		line := outs[r].String()
		i := strings.Index(line, "RESULT ")
		if i < 0 {
			t.Fatalf("rank %d printed no result:\n%s", r, line)
		}
		if err := json.Unmarshal([]byte(strings.SplitN(line[i+7:], "\n", 2)[0]), &got); err != nil {
			t.Fatal(err)
		}
		if got.WorldSize != n || len(got.Losses) != len(single.Losses) {
			t.Fatalf("rank %d: world %d, %d steps; want %d, %d", r, got.WorldSize, len(got.Losses), n, len(single.Losses))
		}
		worst := 0.0
		for s := range got.Losses {
			worst = math.Max(worst, math.Abs(got.Losses[s]-single.Losses[s]))
		}
		worst = math.Max(worst, math.Abs(got.TestLoss-single.TestLoss))
		t.Logf("rank %d: largest loss difference from one process %.2g", r, worst)
		if worst > 1e-5 {
			t.Fatalf("rank %d: losses %v (test %v) differ from one process's %v (test %v)", r, got.Losses, got.TestLoss, single.Losses, single.TestLoss)
		}
	}
}
