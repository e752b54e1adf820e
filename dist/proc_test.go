package dist

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Subprocess tests: the test binary re-executes itself as the ranks of a
// job (GOTPU_DIST_ROLE names what each rank runs, in roles_test.go); the
// test process serves the rendezvous store, so any rank may die.

func TestMain(m *testing.M) {
	if role := os.Getenv("GOTPU_DIST_ROLE"); role != "" {
		os.Exit(runRole(role))
	}
	os.Exit(m.Run())
}

type rankResult struct {
	rank int
	code int
	out  string
	dur  time.Duration
}

var runCounter int

// spawn runs n ranks of role and returns their results; extra(r) adds
// environment variables for rank r.
func spawn(t *testing.T, n int, role string, limit time.Duration, extra func(r int) []string) []rankResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	srv, err := ListenStore(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	_, port, _ := splitHostPort(srv.Addr())
	runCounter++
	res := make([]rankResult, n)
	var wg sync.WaitGroup
	for r := range n {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(),
			"GOTPU_DIST_ROLE="+role,
			"RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(n),
			"LOCAL_RANK="+strconv.Itoa(r), "LOCAL_WORLD_SIZE="+strconv.Itoa(n),
			"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+port, "GOTPU_STORE_SERVED=1",
			fmt.Sprintf("GOTPU_RUN_ID=%s-%d-%d", t.Name(), os.Getpid(), runCounter))
		if extra != nil {
			cmd.Env = append(cmd.Env, extra(r)...)
		}
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := cmd.Wait()
			code := 0
			if err != nil {
				code = -1
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				}
			}
			res[r] = rankResult{rank: r, code: code, out: buf.String(), dur: time.Since(start)}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		for _, r := range res {
			t.Logf("rank %d (exit %d after %v):\n%s", r.rank, r.code, r.dur, r.out)
		}
		t.Fatalf("job %s did not finish within %v (a hang)", role, limit)
	}
	return res
}

func splitHostPort(a string) (string, string, error) {
	for i := len(a) - 1; i >= 0; i-- {
		if a[i] == ':' {
			return a[:i], a[i+1:], nil
		}
	}
	return a, "", fmt.Errorf("no port in %q", a)
}

// expectOK reports every rank that did not exit 0 printing OK.
func expectOK(t *testing.T, res []rankResult) {
	t.Helper()
	for _, r := range res {
		if r.code != 0 || !strings.Contains(r.out, "OK") {
			t.Errorf("rank %d exit %d:\n%s", r.rank, r.code, r.out)
		}
	}
}
