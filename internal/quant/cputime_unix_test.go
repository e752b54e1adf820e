//go:build unix

package quant

import "golang.org/x/sys/unix"

// processCPU returns the process's CPU time in seconds (benchmarks on a
// shared machine report throughput per CPU second too), or -1.
func processCPU() float64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts) != nil {
		return -1
	}
	return float64(ts.Sec) + float64(ts.Nsec)/1e9
}
