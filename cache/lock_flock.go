//go:build linux || darwin || freebsd || openbsd || netbsd || dragonfly

package cache

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// tryLockFile takes an exclusive flock on path without blocking. The lock
// dies with its process, so a crashed compiler never blocks others. After
// locking it checks that path still names the locked file (a concurrent
// `cache clear` may have removed it), and retries if not.
func tryLockFile(path string) (unlockFunc, error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("cache: lock %s: %w", path, err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) || errors.Is(err, unix.EAGAIN) {
				return nil, errLocked
			}
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return nil, fmt.Errorf("cache: flock %s: %w", path, err)
		}
		held, err1 := f.Stat()
		named, err2 := os.Stat(path)
		if err1 != nil || err2 != nil || !os.SameFile(held, named) {
			f.Close() // releases the flock
			continue
		}
		return func() error {
			uerr := unix.Flock(int(f.Fd()), unix.LOCK_UN)
			cerr := f.Close()
			if err := errors.Join(uerr, cerr); err != nil {
				return fmt.Errorf("cache: unlock %s: %w", path, err)
			}
			return nil
		}, nil
	}
}
