package cache

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var lockImpls = []struct {
	name string
	try  func(string) (unlockFunc, error)
}{
	{"platform", tryLockFile},
	{"portable", tryExclLock},
}

func TestLockExclusive(t *testing.T) {
	for _, impl := range lockImpls {
		t.Run(impl.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "k.lock")
			u, err := impl.try(p)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := impl.try(p); !errors.Is(err, errLocked) {
				t.Fatalf("second lock: %v, want errLocked", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			if _, err := lockWith(ctx, p, impl.try); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("waiting on a held lock: %v, want DeadlineExceeded", err)
			}
			if err := u(); err != nil {
				t.Fatal(err)
			}
			u2, err := lockWith(context.Background(), p, impl.try)
			if err != nil {
				t.Fatalf("after unlock: %v", err)
			}
			u2()
		})
	}
}

// Goroutines contending through the lock never overlap.
func TestLockMutualExclusion(t *testing.T) {
	for _, impl := range lockImpls {
		t.Run(impl.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "k.lock")
			var inside, overlaps atomic.Int32
			var wg sync.WaitGroup
			for i := 0; i < 8; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := 0; j < 5; j++ {
						u, err := lockWith(context.Background(), p, impl.try)
						if err != nil {
							t.Error(err)
							return
						}
						if inside.Add(1) > 1 {
							overlaps.Add(1)
						}
						time.Sleep(100 * time.Microsecond)
						inside.Add(-1)
						if err := u(); err != nil {
							t.Error(err)
						}
					}
				}()
			}
			wg.Wait()
			if overlaps.Load() != 0 {
				t.Fatalf("%d overlapping critical sections", overlaps.Load())
			}
		})
	}
}

func TestLockMissingDirectory(t *testing.T) {
	for _, impl := range lockImpls {
		if _, err := impl.try(filepath.Join(t.TempDir(), "no", "such", "k.lock")); err == nil || errors.Is(err, errLocked) {
			t.Fatalf("%s: lock in a missing directory: %v", impl.name, err)
		}
	}
}
