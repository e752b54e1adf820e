package main

import "golang.org/x/sys/unix"

// threadCPUSeconds returns the CPU time of the calling OS thread
// (CLOCK_THREAD_CPUTIME_ID, nanosecond resolution; getrusage's thread
// times advance in scheduler ticks), or -1 where it cannot be read.
func threadCPUSeconds() float64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return -1
	}
	return float64(ts.Sec) + float64(ts.Nsec)/1e9
}
