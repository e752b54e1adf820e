package cache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// errLocked is returned by a non-blocking lock attempt on a held lock.
var errLocked = errors.New("cache: lock is held")

// unlockFunc releases a lock taken by lockFile or tryLockFile.
type unlockFunc func() error

// waitPoll sleeps for the current backoff or until ctx is done, and
// returns the next backoff (doubling up to 50ms).
func waitPoll(ctx context.Context, d time.Duration) (time.Duration, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return d, ctx.Err()
	case <-t.C:
	}
	if d *= 2; d > 50*time.Millisecond {
		d = 50 * time.Millisecond
	}
	return d, nil
}

// lockWith takes a lock with the non-blocking attempt try, polling with
// backoff until it succeeds, ctx is done, or try fails for another reason.
func lockWith(ctx context.Context, path string, try func(string) (unlockFunc, error)) (unlockFunc, error) {
	d := time.Millisecond
	for {
		u, err := try(path)
		if err == nil {
			return u, nil
		}
		if !errors.Is(err, errLocked) {
			return nil, err
		}
		if d, err = waitPoll(ctx, d); err != nil {
			return nil, fmt.Errorf("cache: waiting for lock %s: %w", path, err)
		}
	}
}

// staleExclLock is how old an exclusive-create lock file must be before a
// waiter assumes its holder died and removes it (portable fallback only;
// flock locks die with their process).
const staleExclLock = 30 * time.Minute

// tryExclLock is the portable lock: the lock is held by whoever created
// path with O_EXCL. It cannot detect a crashed holder, so a lock file older
// than staleExclLock is removed. It is used where flock is unavailable and
// is tested on every platform.
func tryExclLock(path string) (unlockFunc, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("cache: lock %s: %w", path, err)
		}
		if fi, serr := os.Stat(path); serr == nil && time.Since(fi.ModTime()) > staleExclLock {
			_ = os.Remove(path)
		}
		return nil, errLocked
	}
	_, _ = f.WriteString(strconv.Itoa(os.Getpid()) + "\n")
	if err := f.Close(); err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("cache: lock %s: %w", path, err)
	}
	return func() error {
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("cache: unlock %s: %w", path, err)
		}
		return nil
	}, nil
}

// lockFile takes the per-key lock at path, waiting (polling) while another
// process or goroutine holds it; it gives up when ctx is done.
func lockFile(ctx context.Context, path string) (unlockFunc, error) {
	return lockWith(ctx, path, tryLockFile)
}
