//go:build pjrt

package pjrt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrDeviceBusy is returned when another process holds an accelerator
// device: as on TPUs, one process owns each device (docs/architecture.md,
// "PJRT and XLA").
var ErrDeviceBusy = errors.New("pjrt: device in use by another process")

// lockDir is where the per-device host locks live.
var lockDir = os.TempDir()

// deviceLock takes the exclusive host lock of device index of plugin name
// (a file gotpu-<name>-<index>.lock holding the owner's pid) and returns
// the function that releases it. A lock held by another process (or by
// another open in this one) is an error wrapping ErrDeviceBusy that names
// the holder's pid.
func deviceLock(name string, index int) (func(), error) {
	path := filepath.Join(lockDir, fmt.Sprintf("gotpu-%s-%d.lock", name, index))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pjrt: lock for %s:%d: %w", name, index, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		pid := strings.TrimSpace(string(holder))
		if pid == "" {
			pid = "unknown"
		}
		return nil, fmt.Errorf("%w: %s:%d is held by process %s (lock %s)", ErrDeviceBusy, name, index, pid, path)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() {
		_ = f.Truncate(0)
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}

// lockDevices takes the host locks of an accelerator plugin's devices
// (every plugin but XLA's CPU one, whose "devices" are this host's cores).
func lockDevices(name string, n int) (func(), error) {
	if name == "xla" {
		return func() {}, nil
	}
	var rel []func()
	release := func() {
		for _, r := range rel {
			r()
		}
	}
	for i := range n {
		r, err := deviceLock(name, i)
		if err != nil {
			release()
			return nil, err
		}
		rel = append(rel, r)
	}
	return release, nil
}
