//go:build unix

package constrain

import "syscall"

// cpuNow is the process's user+system CPU time in nanoseconds (benchmarks
// report it beside wall time: the shared machines inflate wall time).
func cpuNow() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
