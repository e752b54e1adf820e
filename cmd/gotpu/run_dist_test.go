package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gotpu/gotpu/dist"
	"github.com/gotpu/gotpu/dtype"
	"github.com/gotpu/gotpu/tensor"
)

// TestRunHelperRank is not a test: it is a rank of the jobs that
// TestLaunchDistJob starts through the launcher (GOTPU_RUN_HELPER names
// what it does); without that variable it returns at once.
func TestRunHelperRank(t *testing.T) {
	role := os.Getenv("GOTPU_RUN_HELPER")
	if role == "" {
		return
	}
	ctx := context.Background()
	g, err := dist.Init(ctx, dist.Options{Timeout: 20 * time.Second})
	if err != nil {
		fmt.Println("init:", err)
		os.Exit(2)
	}
	defer g.Close()
	if role == "die" && g.Rank() == 1 {
		os.Exit(9)
	}
	x := tensor.Full(tensor.MustDevice("cpu"), dtype.F32, float64(g.Rank()+1), 4)
	if err := g.AllReduce(ctx, x, dist.Sum); err != nil {
		fmt.Println("all_reduce:", err)
		os.Exit(3)
	}
	fmt.Printf("sum=%v world=%d\n", x.Float64s()[0], g.Size())
}

func TestLaunchDistJob(t *testing.T) {
	tests := []struct {
		role       string
		wantCode   int
		wantFailed int
		wantOut    []string
	}{
		{"allreduce", 0, -1, []string{"[0] sum=6 world=3", "[1] sum=6 world=3", "[2] sum=6 world=3"}},
		{"die", 9, 1, nil},
	}
	for _, tc := range tests {
		t.Run(tc.role, func(t *testing.T) {
			c := launchConfig{NProcPerNode: 3, NNodes: 1, MasterAddr: "127.0.0.1", Grace: 2 * time.Second,
				Program:  []string{os.Args[0], "-test.run=^TestRunHelperRank$"},
				ExtraEnv: []string{"GOTPU_RUN_HELPER=" + tc.role}}
			var out, errb syncBuffer
			start := time.Now()
			rep, err := launch(context.Background(), c, &out, &errb, nil)
			if err != nil {
				t.Fatal(err)
			}
			// A peer (rank 0 or 2) that saw rank 1 die and exited at once
			// can be reaped in the same instant; either is a true report as
			// long as rank 1's own exit is recorded.
			peerFirst := tc.role == "die" && (rep.FailedRank == 0 || rep.FailedRank == 2) && rep.ExitCode == 3 && len(rep.Ranks) == 3 && rep.Ranks[1].ExitCode == 9
			if (rep.ExitCode != tc.wantCode || rep.FailedRank != tc.wantFailed) && !peerFirst {
				t.Fatalf("report %+v, want exit %d from rank %d\nstdout:\n%s\nstderr:\n%s", rep, tc.wantCode, tc.wantFailed, out.String(), errb.String())
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out.String(), w+"\n") {
					t.Errorf("stdout lacks %q:\n%s", w, out.String())
				}
			}
			if d := time.Since(start); d > 15*time.Second {
				t.Errorf("the job took %v", d)
			}
		})
	}
}
