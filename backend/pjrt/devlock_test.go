//go:build pjrt

package pjrt

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestXLADeviceLockExclusive: the host lock of an accelerator device is
// exclusive, a second taker gets ErrDeviceBusy naming the holder's pid,
// and it is free again after release. (flock locks per open file, so a
// second open in this process stands for a second process.)
func TestXLADeviceLockExclusive(t *testing.T) {
	prev := lockDir
	lockDir = t.TempDir()
	defer func() { lockDir = prev }()
	release, err := deviceLock("tpu", 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = deviceLock("tpu", 0)
	if !errors.Is(err, ErrDeviceBusy) || !strings.Contains(err.Error(), "process "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second lock of tpu:0: %v", err)
	}
	if r, err := deviceLock("tpu", 1); err != nil {
		t.Fatalf("tpu:1 is another device: %v", err)
	} else {
		r()
	}
	release()
	r, err := deviceLock("tpu", 0)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	r()
	if r, err := lockDevices("xla", 4); err != nil {
		t.Fatalf("xla (host cores) takes no lock: %v", err)
	} else {
		r()
	}
}
