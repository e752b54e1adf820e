package dist

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestStore(t *testing.T) {
	ctx := context.Background()
	srv, err := ListenStore(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, err := DialStore(ctx, srv.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tests := []struct {
		name string
		run  func() (string, error)
		want string
		err  string
	}{
		{"set-get", func() (string, error) {
			if err := c.Set(ctx, "a", []byte("1")); err != nil {
				return "", err
			}
			v, err := c.Get(ctx, "a", time.Second)
			return string(v), err
		}, "1", ""},
		{"get-timeout", func() (string, error) {
			_, err := c.Get(ctx, "nope", 50*time.Millisecond)
			return "", err
		}, "", `get "nope": key not set within 50ms`},
		{"wait-names-missing", func() (string, error) {
			return "", c.Wait(ctx, []string{"a", "x", "y"}, 50*time.Millisecond)
		}, "", "keys x, y not set"},
		{"add", func() (string, error) {
			c.Add(ctx, "n", 2)
			n, err := c.Add(ctx, "n", 3)
			return strings.TrimSpace(strings.Repeat("5", int(n/5))), err
		}, "5", ""},
		{"cas-absent", func() (string, error) {
			v, err := c.CompareSet(ctx, "k", nil, []byte("v1"))
			return string(v), err
		}, "v1", ""},
		{"cas-mismatch", func() (string, error) {
			v, err := c.CompareSet(ctx, "k", []byte("zz"), []byte("v2"))
			return string(v), err
		}, "v1", ""},
		{"cas-match", func() (string, error) {
			v, err := c.CompareSet(ctx, "k", []byte("v1"), []byte("v2"))
			return string(v), err
		}, "v2", ""},
		{"add-not-int", func() (string, error) {
			_, err := c.Add(ctx, "k", 1)
			return "", err
		}, "", "not an integer"},
		{"ctx-cancel", func() (string, error) {
			cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
			defer cancel()
			_, err := c.Get(cctx, "never", time.Minute)
			if !errors.Is(err, context.DeadlineExceeded) {
				return "", errors.New("not a context error: " + err.Error())
			}
			return "", err
		}, "", "deadline exceeded"},
		{"after-cancel-reconnects", func() (string, error) {
			v, err := c.Get(ctx, "a", time.Second)
			return string(v), err
		}, "1", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.run()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestStoreWaitWakesOnSet(t *testing.T) {
	ctx := context.Background()
	srv, err := ListenStore(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := DialStore(ctx, srv.Addr(), time.Second)
			if err != nil {
				errs[i] = err
				return
			}
			defer c.Close()
			if _, err := c.Add(ctx, "count", 1); err != nil {
				errs[i] = err
				return
			}
			errs[i] = c.Wait(ctx, []string{"go"}, 5*time.Second)
		}()
	}
	c, _ := DialStore(ctx, srv.Addr(), time.Second)
	defer c.Close()
	for {
		n, _ := c.Add(ctx, "count", 0)
		if n == 4 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	c.Set(ctx, "go", []byte{1})
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("waiters woke after %v", d)
	}
}

func TestRemoveStaleSegments(t *testing.T) {
	dir := t.TempDir()
	// A pid above the kernel's pid_max (4194304) cannot be alive.
	tests := []struct {
		name string
		keep bool
	}{
		{"gotpu-dist-99999999-0-abc", false},
		{"gotpu-dist-99999999-1-abc.tmp", false},
		{fmt.Sprintf("gotpu-dist-%d-0-abc", os.Getpid()), true},
		{"gotpu-dist-1-0-abc", true}, // pid 1 is alive
		{"gotpu-dist-x-0-abc", true},
		{"other-file", true},
	}
	for _, tc := range tests {
		if err := os.WriteFile(filepath.Join(dir, tc.name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removeStale(dir)
	for _, tc := range tests {
		_, err := os.Stat(filepath.Join(dir, tc.name))
		if kept := err == nil; kept != tc.keep {
			t.Errorf("%s: kept %v, want %v", tc.name, kept, tc.keep)
		}
	}
}
