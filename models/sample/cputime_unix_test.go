//go:build unix

package sample

import "syscall"

// cpuNanos returns the CPU time (user + system) this process has used, so
// benchmarks can report it next to wall time on a shared, loaded machine.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
