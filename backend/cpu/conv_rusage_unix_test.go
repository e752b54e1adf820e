//go:build unix

package cpu

import (
	"syscall"
	"time"
)

// convCPUTime is the process's user+system CPU time: on a shared machine
// it separates a kernel's cost from the time other processes took the
// cores.
func convCPUTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
