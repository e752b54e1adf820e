package cache

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The multi-process tests re-execute this test binary; the child runs
// TestHelperProcess with these variables set.
const (
	envChild     = "GOTPU_CACHE_TEST_CHILD"      // "race" or "hang"
	envCountFile = "GOTPU_CACHE_TEST_COUNT_FILE" // one line appended per compile
	envGoFile    = "GOTPU_CACHE_TEST_GO_FILE"    // children start when it exists
)

// TestHelperProcess is not a test: it is the child process of
// TestTwoProcessesCompileOnce and TestCrashedCompilerReleasesLock.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(envChild)
	if mode == "" {
		t.Skip("helper process for the multi-process tests")
	}
	if err := runChild(mode); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

func runChild(mode string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(os.Getenv(envGoFile)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("start signal never came")
		}
		time.Sleep(time.Millisecond)
	}
	opts, err := OptionsFromEnv() // GOTPU_CACHE_DIR from the parent
	if err != nil {
		return err
	}
	c, err := New(context.Background(), opts)
	if err != nil {
		return err
	}
	defer c.Close()
	p, src, err := c.Get(context.Background(), baseKey(), func(ctx context.Context) ([]byte, error) {
		f, err := os.OpenFile(os.Getenv(envCountFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(f, "compile by %d\n", os.Getpid())
		f.Close()
		if mode == "hang" {
			time.Sleep(time.Hour) // killed by the parent while holding the lock
		}
		time.Sleep(300 * time.Millisecond) // a slow compile: the others must wait
		return []byte(fmt.Sprintf("exe by %d", os.Getpid())), nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("src=%s payload=%s\n", src, p)
	return nil
}

// startChildren starts n children of the given mode sharing dir.
func startChildren(t *testing.T, mode string, n int, dir, count, goFile string) []*exec.Cmd {
	t.Helper()
	var cmds []*exec.Cmd
	for i := 0; i < n; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), envChild+"="+mode, EnvDir+"="+dir, EnvRemote+"=", EnvMode+"=",
			envCountFile+"="+count, envGoFile+"="+goFile)
		cmd.Stdout, cmd.Stderr = new(bytes.Buffer), new(bytes.Buffer)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				cmd.Process.Kill()
				cmd.Wait()
			}
		})
		cmds = append(cmds, cmd)
	}
	return cmds
}

func compileLines(t *testing.T, count string) []string {
	b, err := os.ReadFile(count)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(b), "compile by ", "pid:"))
}

// Three processes start together on an empty shared directory: exactly one
// compiles, the others wait for its lock and read its entry.
func TestTwoProcessesCompileOnce(t *testing.T) {
	tmp := t.TempDir()
	dir, count, goFile := filepath.Join(tmp, "cache"), filepath.Join(tmp, "count"), filepath.Join(tmp, "go")
	cmds := startChildren(t, "race", 3, dir, count, goFile)
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var compiled, fromDisk int
	payloads := map[string]bool{}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child failed: %v\nstdout: %s\nstderr: %s", err, cmd.Stdout, cmd.Stderr)
		}
		out := cmd.Stdout.(*bytes.Buffer).String()
		switch {
		case strings.Contains(out, "src=compiled"):
			compiled++
		case strings.Contains(out, "src=disk"):
			fromDisk++
		default:
			t.Fatalf("child output %q", out)
		}
		payloads[out[strings.Index(out, "payload="):]] = true
	}
	if lines := compileLines(t, count); len(lines) != 1 || compiled != 1 || fromDisk != 2 || len(payloads) != 1 {
		t.Fatalf("compiles %v; %d children compiled, %d read the disk tier, %d distinct payloads; want 1, 1, 2, 1",
			lines, compiled, fromDisk, len(payloads))
	}
}

// A process killed while compiling (holding the key's lock) does not block
// the others: the lock dies with it, and the next process compiles.
func TestCrashedCompilerReleasesLock(t *testing.T) {
	if _, err := tryLockFile(filepath.Join(t.TempDir(), "probe")); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	dir, count, goFile := filepath.Join(tmp, "cache"), filepath.Join(tmp, "count"), filepath.Join(tmp, "go")
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	hang := startChildren(t, "hang", 1, dir, count, goFile)[0]
	deadline := time.Now().Add(10 * time.Second)
	for len(compileLines(t, count)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("hanging child never compiled: %s", hang.Stderr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// It holds the lock: an in-process Get waits, and gives up on its context.
	c, _ := newTestCache(t, Options{Dir: dir})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, _, err := c.Get(ctx, baseKey(), (&counter{payload: []byte("too early")}).compile)
	cancel()
	if err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("Get while another process holds the lock: %v, want a deadline error", err)
	}
	hang.Process.Kill()
	hang.Wait()
	p, src, err := c.Get(context.Background(), baseKey(), (&counter{payload: []byte("after crash")}).compile)
	if err != nil || src != SourceCompiled || string(p) != "after crash" {
		t.Fatalf("after the holder died: %q, %v, %v", p, src, err)
	}
}
