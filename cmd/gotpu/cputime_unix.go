//go:build unix

package main

import "syscall"

// processCPUSeconds returns the user plus system CPU time of the whole
// process (every thread), or -1 where it cannot be read.
func processCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}
