package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gotpu/gotpu/train"
)

// syncBuffer is a bytes.Buffer safe for the launcher's writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLaunch(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name       string
		cfg        launchConfig
		script     string
		wantCode   int
		wantFailed int
		restarts   int
		wantOut    []string // lines that must appear in stdout
		maxDur     time.Duration
	}{
		{name: "env-and-prefix", cfg: launchConfig{NProcPerNode: 3},
			script:  `echo "r=$RANK w=$WORLD_SIZE l=$LOCAL_RANK lw=$LOCAL_WORLD_SIZE store=${GOTPU_STORE_ADDR:+yes}"`,
			wantOut: []string{"[0] r=0 w=3 l=0 lw=3 store=yes", "[1] r=1 w=3 l=1 lw=3 store=yes", "[2] r=2 w=3 l=2 lw=3 store=yes"}, wantFailed: -1},
		{name: "threads-per-rank", cfg: launchConfig{NProcPerNode: 2, ThreadsPerRank: 3},
			script: `echo "g=$GOMAXPROCS"`, wantOut: []string{"[0] g=3", "[1] g=3"}, wantFailed: -1},
		{name: "multi-node-ranks", cfg: launchConfig{NProcPerNode: 2, NNodes: 2, NodeRank: 1, MasterPort: 29999, StorePort: 1},
			script:  `echo "r=$RANK w=$WORLD_SIZE g=$GROUP_RANK p=$MASTER_PORT"`,
			wantOut: []string{"[2] r=2 w=4 g=1 p=29999", "[3] r=3 w=4 g=1 p=29999"}, wantFailed: -1},
		{name: "failure-tears-down", cfg: launchConfig{NProcPerNode: 2, Grace: time.Second},
			script:   `if [ "$RANK" = 1 ]; then exit 7; fi; sleep 30`,
			wantCode: 7, wantFailed: 1, maxDur: 10 * time.Second},
		{name: "term-ignored-then-killed", cfg: launchConfig{NProcPerNode: 2, Grace: 300 * time.Millisecond},
			script:   `trap "" TERM; if [ "$RANK" = 0 ]; then exit 3; fi; sleep 30`,
			wantCode: 3, wantFailed: 0, maxDur: 10 * time.Second},
		{name: "restart-then-succeed", cfg: launchConfig{NProcPerNode: 2, MaxRestarts: 2},
			script:   `echo "attempt $TORCHELASTIC_RESTART_COUNT"; if [ "$RANK" = 1 ] && [ "$TORCHELASTIC_RESTART_COUNT" -lt 1 ]; then exit 5; fi`,
			restarts: 1, wantFailed: -1, wantOut: []string{"[0] attempt 1", "[1] attempt 1"}},
		{name: "restarts-exhausted", cfg: launchConfig{NProcPerNode: 1, MaxRestarts: 1},
			script:   `echo "attempt $TORCHELASTIC_RESTART_COUNT"; exit 4`,
			wantCode: 4, restarts: 1, wantFailed: 0, wantOut: []string{"[0] attempt 0", "[0] attempt 1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			if c.NNodes == 0 {
				c.NNodes = 1
			}
			c.MasterAddr = "127.0.0.1"
			c.Program = []string{"/bin/sh", "-c", tc.script}
			_ = dir
			var out, errb syncBuffer
			start := time.Now()
			rep, err := launch(context.Background(), c, &out, &errb, nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.ExitCode != tc.wantCode || rep.FailedRank != tc.wantFailed || rep.Restarts != tc.restarts {
				t.Fatalf("report %+v, want exit %d failed rank %d restarts %d\nstdout:\n%s\nstderr:\n%s", rep, tc.wantCode, tc.wantFailed, tc.restarts, out.String(), errb.String())
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			sort.Strings(lines)
			for _, w := range tc.wantOut {
				if !strings.Contains(out.String(), w+"\n") {
					t.Errorf("stdout lacks %q:\n%s", w, out.String())
				}
			}
			if tc.maxDur > 0 && time.Since(start) > tc.maxDur {
				t.Errorf("took %v, want under %v", time.Since(start), tc.maxDur)
			}
		})
	}
}

func TestLaunchForwardsSignals(t *testing.T) {
	dir := t.TempDir()
	c := launchConfig{NProcPerNode: 2, NNodes: 1, MasterAddr: "127.0.0.1", Grace: 5 * time.Second,
		Program: []string{"/bin/sh", "-c", `trap 'echo "got TERM"; exit 0' TERM; touch ` + dir + `/ready$RANK; while :; do sleep 0.05; done`}}
	sigs := make(chan os.Signal, 1)
	var out, errb syncBuffer
	done := make(chan runReport)
	go func() {
		rep, err := launch(context.Background(), c, &out, &errb, sigs)
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	for {
		m, _ := filepath.Glob(filepath.Join(dir, "ready*"))
		if len(m) == 2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	sigs <- syscall.SIGTERM
	select {
	case rep := <-done:
		if rep.Signal != "terminated" || rep.ExitCode != 128+15 || rep.Restarts != 0 {
			t.Fatalf("report %+v", rep)
		}
		for _, w := range []string{"[0] got TERM", "[1] got TERM"} {
			if !strings.Contains(out.String(), w) {
				t.Errorf("stdout lacks %q:\n%s", w, out.String())
			}
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the job did not stop after SIGTERM")
	}
}

func TestDistEnv(t *testing.T) {
	tests := []struct {
		args []string
		want string
		err  string
	}{
		{[]string{"dist", "env", "--nproc-per-node", "4"}, "export LOCAL_WORLD_SIZE=4\nexport MASTER_ADDR=127.0.0.1\n", ""},
		{[]string{"dist", "env", "--nproc-per-node", "2", "--nnodes", "2", "--node-rank", "1", "--local-rank", "1"}, "export RANK=3\nexport WORLD_SIZE=4\n", ""},
		{[]string{"dist", "env", "--nproc-per-node", "2", "--local-rank", "2"}, "", "--local-rank"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			cmd := newDistCmd()
			cmd.SetOut(&out)
			cmd.SetArgs(tc.args[1:])
			err := cmd.Execute()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Fatalf("output:\n%s\nwant to contain:\n%s", out.String(), tc.want)
			}
		})
	}
	var out bytes.Buffer
	cmd := newDistCmd()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"env", "--json", "--nproc-per-node", "2", "--master-port", "1234"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if err := json.Unmarshal(out.Bytes(), &m); err != nil || m["MASTER_PORT"] != "1234" || m["WORLD_SIZE"] != "2" {
		t.Fatalf("json %s: %v %v", out.String(), m, err)
	}
}

func TestAutoResume(t *testing.T) {
	tests := []struct {
		name    string
		restart string
		dir     string
		resume  bool
		exists  bool
		want    bool
	}{
		{"restarted-with-checkpoint", "1", "ck", false, true, true},
		{"first-attempt", "0", "ck", false, true, false},
		{"no-launcher", "", "ck", false, true, false},
		{"no-checkpoint-yet", "2", "ck", false, false, false},
		{"no-checkpoint-dir", "1", "", false, true, false},
		{"already-resuming", "1", "ck", true, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := train.Config{CheckpointDir: tc.dir, Resume: tc.resume}
			getenv := func(k string) string {
				if k == "TORCHELASTIC_RESTART_COUNT" {
					return tc.restart
				}
				return ""
			}
			var asked string
			got := autoResume(c, getenv, func(p string) bool { asked = p; return tc.exists })
			if got != tc.want {
				t.Fatalf("autoResume = %v, want %v", got, tc.want)
			}
			if got && asked != filepath.Join("ck", train.CheckpointFile) {
				t.Fatalf("looked for %q", asked)
			}
		})
	}
}

func TestThreadsPerRank(t *testing.T) {
	tests := []struct {
		set         string
		ncpu, nproc int
		want        int
	}{
		{"", 2, 2, 1},
		{"", 16, 4, 4},
		{"", 2, 3, 1},
		{"", 8, 1, 0},
		{"3", 16, 4, 0},
	}
	for _, tc := range tests {
		got := threadsPerRank(func(k string) string {
			if k == "GOMAXPROCS" {
				return tc.set
			}
			return ""
		}, tc.ncpu, tc.nproc)
		if got != tc.want {
			t.Errorf("threadsPerRank(GOMAXPROCS=%q, %d cpus, %d ranks) = %d, want %d", tc.set, tc.ncpu, tc.nproc, got, tc.want)
		}
	}
}
