//go:build !unix

package sample

// cpuNanos is not measured on this system.
func cpuNanos() int64 { return 0 }
