package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestGenerateTPHelperRank is not a test: it is a rank of the jobs that
// TestGenerateTensorParallel starts through the launcher; it runs gotpu
// with the arguments in GOTPU_TP_HELPER_ARGS (JSON) and exits.
func TestGenerateTPHelperRank(t *testing.T) {
	raw := os.Getenv("GOTPU_TP_HELPER_ARGS")
	if raw == "" {
		return
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		fmt.Println("args:", err)
		os.Exit(2)
	}
	rootCmd.SetArgs(args)
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "gotpu:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// launchGotpu runs gotpu args as the n ranks of a job started by the
// launcher and returns the job's stdout and stderr.
func launchGotpu(t *testing.T, n int, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	raw, _ := json.Marshal(args)
	c := launchConfig{NProcPerNode: n, NNodes: 1, MasterAddr: "127.0.0.1", Grace: 2 * time.Second,
		Program:  []string{os.Args[0], "-test.run=^TestGenerateTPHelperRank$"},
		ExtraEnv: []string{"GOTPU_TP_HELPER_ARGS=" + string(raw)}}
	var out, errb syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := launch(ctx, c, &out, &errb, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), rep.ExitCode
}

// TestGenerateTensorParallel runs gotpu generate --tp 2 under the launcher
// on the tiny Llama: rank 0 alone prints, and the tokens are one
// process's.
func TestGenerateTensorParallel(t *testing.T) {
	ref := readTinyRef(t)
	args := []string{"generate", "--model", tinyLlama, "--ids", idList(ref.InputIDs[0]), "--max-new-tokens", "12", "--json"}
	one, err := runCmd(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	var want generateOutput
	if err := json.Unmarshal([]byte(one), &want); err != nil {
		t.Fatal(err)
	}
	if want.TP != 1 {
		t.Errorf("one process: tp = %d, want 1", want.TP)
	}
	stdout, stderr, code := launchGotpu(t, 2, append(args, "--tp", "2")...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "[0] ") {
		t.Fatalf("want one line from rank 0, got:\n%s", stdout)
	}
	var got generateOutput
	if err := json.Unmarshal([]byte(strings.TrimPrefix(lines[0], "[0] ")), &got); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.IDs) != fmt.Sprint(want.IDs) || got.TP != 2 {
		t.Errorf("--tp 2: ids %v tp %d, one process: ids %v", got.IDs, got.TP, want.IDs)
	}
	if fmt.Sprint(want.IDs) != fmt.Sprint(ref.Greedy[:len(want.IDs)]) {
		t.Errorf("one process: ids %v, transformers %v", want.IDs, ref.Greedy)
	}
}

func TestGenerateTensorParallelErrors(t *testing.T) {
	tests := []struct {
		name  string
		ranks int
		args  []string
		want  string
	}{
		{"no job", 0, []string{"--tp", "2"}, "no job to join"},
		{"compiled", 0, []string{"--tp", "2", "--mode", "compiled"}, "strict or debug"},
		{"zero", 0, []string{"--tp", "0"}, "--tp 0"},
		{"job size", 2, []string{"--tp", "3"}, "job of 2 ranks"},
		{"kv heads", 3, []string{"--tp", "3"}, "at most 2 ranks"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"generate", "--model", tinyLlama, "--ids", "5,6", "--max-new-tokens", "2"}, tc.args...)
			if tc.ranks == 0 {
				t.Setenv("WORLD_SIZE", "")
				_, err := runCmd(t, args...)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want one containing %q", err, tc.want)
				}
				return
			}
			stdout, stderr, code := launchGotpu(t, tc.ranks, args...)
			if code == 0 || !strings.Contains(stdout+stderr, tc.want) {
				t.Fatalf("exit %d, want a failure containing %q\nstdout:\n%s\nstderr:\n%s", code, tc.want, stdout, stderr)
			}
		})
	}
}
